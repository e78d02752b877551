package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// fuzzPool is what the fuzz test drives: a Pool, or a FuncPool[func()] whose fn calls its
// argument, so one model covers Submit and Invoke.
type fuzzPool interface {
	submit(func()) error
	try(func()) bool
	submitContext(context.Context, func()) error
	Wait()
	Stop()
	StopAndWait()
	Resize(int)
	Stats() crew.Stats
}

type plainPool struct{ *crew.Pool }

func (p plainPool) submit(f func()) error { return p.Submit(f) }
func (p plainPool) try(f func()) bool     { return p.TrySubmit(f) }
func (p plainPool) submitContext(ctx context.Context, f func()) error {
	return p.SubmitContext(ctx, f)
}

type invokePool struct{ *crew.FuncPool[func()] }

func (p invokePool) submit(f func()) error { return p.Invoke(f) }
func (p invokePool) try(f func()) bool     { return p.TryInvoke(f) }
func (p invokePool) submitContext(ctx context.Context, f func()) error {
	return p.InvokeContext(ctx, f)
}

// poolModel is the obviously correct pool: with every task held at a gate, a task starts if
// fewer than limit run, else waits if the queue has room, else is refused.
type poolModel struct {
	limit, queueSize int
	nonBlocking      bool
	stopped          bool
	running, waiting int
	submitted, done  uint64
	refused          uint64 // Stats.Rejected: a full queue
	canceled         uint64 // Stats.Canceled: the submitter's context ended first
}

// offer decides a submit's fate: "run", "queue", or "full".
func (m *poolModel) offer() string {
	switch {
	case m.running < m.limit:
		return "run"
	case m.queueSize == 0 || m.waiting < m.queueSize:
		return "queue"
	default:
		return "full"
	}
}

func (m *poolModel) accept() {
	m.submitted++
	if m.offer() == "run" {
		m.running++
	} else {
		m.waiting++
	}
}

// The operations, one per input byte: the byte modulo fuzzOps picks the operation, the
// byte divided by fuzzOps its argument.
const (
	opSubmit = iota
	opTrySubmit
	opSubmitCanceled // SubmitContext with a context that already ended
	opSubmitTimeout  // SubmitContext with a context that ends while it waits
	opSubmitPanic
	opResize
	opWait
	opStop
	opStats
	opSubmitNil
	opSubmitPanicNil // a task that calls panic(nil)
	opSubmitGoexit   // a task that calls runtime.Goexit
	opGroup          // Group.Go of 1 to 3 functions while two goroutines wait on the group
	fuzzOps
)

// taskEnd is how a fuzzed task ends once its gate opens.
type taskEnd int

const (
	endReturn   taskEnd = iota
	endPanic            // panic with a value
	endPanicNil         // panic(nil): a panic, also under GODEBUG=panicnil=1
	endGoexit           // runtime.Goexit: completed, not panicked
)

// endOf returns how a task submitted by op ends.
func endOf(op int) taskEnd {
	switch op {
	case opSubmitPanic:
		return endPanic
	case opSubmitPanicNil:
		return endPanicNil
	case opSubmitGoexit:
		return endGoexit
	}
	return endReturn
}

// end ends a task as e says.
func (e taskEnd) end() {
	switch e {
	case endPanic:
		panic("fuzz: planned panic")
	case endPanicNil:
		panic(nil)
	case endGoexit:
		runtime.Goexit()
	}
}

// panics reports whether a task that ends so counts as panicked.
func (e taskEnd) panics() bool { return e == endPanic || e == endPanicNil }

// roomFor reports whether n more tasks would all start or wait in the queue.
func (m *poolModel) roomFor(n int) bool {
	free := max(m.limit-m.running, 0)
	return m.queueSize == 0 || n-min(n, free) <= m.queueSize-m.waiting
}

// FuzzPoolOperations runs a sequence of operations decoded from the input against a pool
// and against poolModel, and fails at the first difference in what was accepted, started,
// queued, refused or counted. Tasks hold at a gate until the next Wait (or a shrinking Resize
// that must let them finish), so the pool's state between operations is exact; then they
// return, panic (with a value or with nil) or call runtime.Goexit. A group on the pool calls
// Go while two goroutines wait on it, and again after those Waits returned. At the end:
// every accepted task ran exactly once, no refused task ran, every panic reached the handler,
// every Wait on the group returned, and nothing is left running.
func FuzzPoolOperations(f *testing.F) {
	// The first two bytes choose the pool: workers, queue size, non-blocking, Pool or
	// FuncPool. Seeds are the edge cases worth keeping.
	f.Add([]byte{0, 0})                                                   // nothing
	f.Add([]byte{0, 1, opSubmit, opSubmit, opTrySubmit, opStats, opWait}) // one worker, queue of 1, full
	f.Add([]byte{0, 0x81, opSubmit, opSubmit, opSubmit, opSubmit, opStats})
	f.Add([]byte{3, 2, opSubmit, opSubmit, opSubmit, opSubmit, opSubmit, opSubmit, opSubmitTimeout, opStats})
	f.Add([]byte{3, 0, opSubmit, opSubmit, opSubmit, opSubmit, opResize, opStats, opWait, opStats})                // shrink to 1 under load
	f.Add([]byte{0, 0, opSubmit, opSubmit, opSubmit, 5*fuzzOps + opResize, opStats, opWait})                       // grow starts queued tasks
	f.Add([]byte{1, 0, opSubmit, opSubmitPanic, opSubmit, opStop, opSubmit, opTrySubmit, opStats, opWait, opStop}) // stop with queued tasks, second stop
	f.Add([]byte{0, 0x40, opSubmitCanceled, opSubmitNil, opSubmitPanic, opSubmitPanic, opWait, opStats})
	f.Add([]byte{1, 0x41, opSubmit, opSubmit, opSubmit, opSubmit, opSubmit, opStats, opStop, opResize, opWait})
	f.Add([]byte{0, 0x80, opSubmitPanicNil, opSubmitGoexit, opSubmit, opStats, opWait, opSubmitGoexit, opStats}) // panic(nil) and Goexit, one worker
	f.Add([]byte{1, 0, opSubmitGoexit, opSubmitPanicNil, opSubmitGoexit, opSubmitPanicNil, opResize, opStats, opWait})
	f.Add([]byte{2, 1, 2*fuzzOps + opGroup, opGroup, opStats, opWait, opGroup, opSubmit, opStats, opWait, opStop, opGroup}) // Go concurrent with Wait, Go after Wait, Go after Stop
	f.Add([]byte{0, 0, opGroup, opGroup, opSubmitPanicNil, opGroup, opStats, opStop, opWait})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		if len(in) > 200 {
			in = in[:200]
		}
		m := &poolModel{limit: 1 + int(in[0]%4), queueSize: int(in[1] % 4), nonBlocking: in[1]&0x40 != 0}
		var handled atomic.Uint64
		opts := []crew.Option{
			crew.WithIdleTimeout(0),
			crew.WithQueueSize(m.queueSize),
			crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		}
		if m.nonBlocking {
			opts = append(opts, crew.WithNonBlocking())
		}
		var p fuzzPool
		if in[1]&0x80 != 0 {
			p = invokePool{crew.NewFunc(m.limit, func(f func()) { f() }, opts...)}
		} else {
			p = plainPool{crew.New(m.limit, opts...)}
		}
		gate := make(chan struct{})
		release := func() {
			close(gate)
			gate = make(chan struct{})
		}
		defer func() { release(); p.StopAndWait() }()

		var runs []*atomic.Int32
		var accepted []bool
		newTask := func(end taskEnd) func() {
			n := new(atomic.Int32)
			runs = append(runs, n)
			accepted = append(accepted, false)
			g := gate
			return func() {
				n.Add(1)
				<-g
				end.end()
			}
		}
		// The group of opGroup, made by the first, and the Wait calls on it not yet checked.
		var group *crew.Group
		groupStopped := false // a Go found the pool stopped: that is the group's error
		var waiters []<-chan error
		// waited checks that every Wait on the group has returned, with no error but the
		// ErrStopped of a Go after Stop. Every function the group started has finished.
		waited := func(step int) {
			t.Helper()
			for _, w := range waiters {
				select {
				case err := <-w:
					if err != nil && !(groupStopped && errors.Is(err, crew.ErrStopped)) {
						t.Fatalf("step %d: Group.Wait = %v", step, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("step %d: Group.Wait has not returned 10 s after its functions finished", step)
				}
			}
			waiters = waiters[:0]
		}
		// drained moves the model past a Wait: every accepted task has finished.
		drained := func() {
			m.running, m.waiting = 0, 0
		}
		settle := func(step int, op string) {
			t.Helper()
			deadline := time.Now().Add(5 * time.Second)
			for {
				s := p.Stats()
				if s.Running == m.running && s.Waiting == m.waiting {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("step %d (%s): pool settled at Running %d Waiting %d, model %d and %d",
						step, op, s.Running, s.Waiting, m.running, m.waiting)
				}
				time.Sleep(50 * time.Microsecond)
			}
		}
		var panicsAccepted uint64

		for step, b := range in[2:] {
			op, arg := int(b%fuzzOps), int(b/fuzzOps)
			name := fmt.Sprint("op ", op)
			switch op {
			case opSubmit, opSubmitPanic, opSubmitPanicNil, opSubmitGoexit:
				fate := m.offer()
				if !m.stopped && fate == "full" && !m.nonBlocking {
					// A Submit that would block is the stress suite's business.
					continue
				}
				task := newTask(endOf(op))
				err := p.submit(task)
				switch {
				case m.stopped:
					if !errors.Is(err, crew.ErrStopped) {
						t.Fatalf("step %d: submit after Stop = %v, want ErrStopped", step, err)
					}
				case fate == "full":
					if !errors.Is(err, crew.ErrQueueFull) {
						t.Fatalf("step %d: submit to a full non-blocking queue = %v, want ErrQueueFull", step, err)
					}
					m.refused++
				default:
					if err != nil {
						t.Fatalf("step %d: submit with room (%s) = %v, want nil", step, fate, err)
					}
					accepted[len(accepted)-1] = true
					m.accept()
					if endOf(op).panics() {
						panicsAccepted++
					}
				}
			case opTrySubmit:
				fate := m.offer()
				ok := p.try(newTask(endReturn))
				want := !m.stopped && fate != "full"
				if ok != want {
					t.Fatalf("step %d: TrySubmit = %v, model says %v (%s, stopped %v)", step, ok, want, fate, m.stopped)
				}
				if ok {
					accepted[len(accepted)-1] = true
					m.accept()
				} else if !m.stopped {
					m.refused++
				}
			case opSubmitCanceled:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if err := p.submitContext(ctx, newTask(endReturn)); !errors.Is(err, context.Canceled) {
					t.Fatalf("step %d: SubmitContext with an ended context = %v, want context.Canceled", step, err)
				}
				m.canceled++
			case opSubmitTimeout:
				fate := m.offer()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				err := p.submitContext(ctx, newTask(endReturn))
				cancel()
				switch {
				case m.stopped:
					if !errors.Is(err, crew.ErrStopped) && !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("step %d: SubmitContext after Stop = %v", step, err)
					}
					if errors.Is(err, context.DeadlineExceeded) {
						m.canceled++
					}
				case fate == "full" && m.nonBlocking:
					if !errors.Is(err, crew.ErrQueueFull) {
						t.Fatalf("step %d: SubmitContext, full non-blocking queue = %v, want ErrQueueFull", step, err)
					}
					m.refused++
				case fate == "full":
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("step %d: SubmitContext, full queue = %v, want DeadlineExceeded", step, err)
					}
					m.canceled++
				case err == nil:
					accepted[len(accepted)-1] = true
					m.accept()
				default:
					// The deadline may pass before the call even looks at the queue; then
					// nothing was accepted.
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("step %d: SubmitContext with room = %v", step, err)
					}
					m.canceled++
				}
			case opResize:
				n := 1 + arg%6
				name = fmt.Sprint("Resize ", n)
				resized := make(chan struct{})
				go func() { p.Resize(n); close(resized) }()
				// Resize returns at once, even below the tasks running: they finish, and
				// none starts until fewer than n run.
				select {
				case <-resized:
				case <-time.After(10 * time.Second):
					t.Fatalf("step %d: Resize(%d) did not return", step, n)
				}
				m.limit = n
				move := min(m.limit-m.running, m.waiting)
				if move > 0 {
					m.running += move
					m.waiting -= move
				}
			case opWait:
				release()
				p.Wait()
				m.done += uint64(m.running + m.waiting)
				drained()
				waited(step)
			case opStop:
				p.Stop()
				m.stopped = true
			case opStats:
				settle(step, name)
				s := p.Stats()
				if s.MaxWorkers != m.limit || s.Accepted != m.submitted || s.Rejected != m.refused ||
					s.Canceled != m.canceled || s.Running != m.running || s.Waiting != m.waiting ||
					s.Completed+s.Panicked > s.Accepted || s.Completed+s.Panicked < m.done {
					t.Fatalf("step %d: Stats %+v, model %+v", step, s, m)
				}
			case opSubmitNil:
				if _, isFunc := p.(invokePool); isFunc {
					continue // a FuncPool takes a nil func as an argument like any other
				}
				want := crew.ErrNilTask
				if err := p.submit(nil); !errors.Is(err, want) {
					t.Fatalf("step %d: Submit(nil) = %v, want ErrNilTask", step, err)
				}
			case opGroup:
				pp, ok := p.(plainPool)
				n := 1 + arg%3
				// The group's functions are tasks like the others, held at the gate, so the
				// model holds; Go blocks on a full queue, so only n that fit are offered.
				if !ok || !m.stopped && !m.roomFor(n) {
					continue
				}
				if group == nil {
					group, _ = pp.Group(context.Background())
				}
				g := group
				for range 2 {
					w := make(chan error, 1)
					go func() { w <- g.Wait() }()
					waiters = append(waiters, w)
				}
				for range n {
					task := newTask(endReturn)
					g.Go(func(context.Context) error { task(); return nil })
					if m.stopped {
						groupStopped = true
						continue
					}
					accepted[len(accepted)-1] = true
					m.accept()
				}
			}
			settle(step, name)
		}

		release()
		p.StopAndWait()
		waited(len(in))
		for i := range runs {
			n := runs[i].Load()
			if accepted[i] && n != 1 {
				t.Fatalf("accepted task %d ran %d times, want once", i, n)
			}
			if !accepted[i] && n != 0 {
				t.Fatalf("refused task %d ran %d times, want never", i, n)
			}
		}
		s := p.Stats()
		if s.Accepted != m.submitted || s.Completed+s.Panicked != s.Accepted || s.Panicked != panicsAccepted ||
			handled.Load() != s.Panicked || s.Running != 0 || s.Waiting != 0 || s.Idle != 0 {
			t.Fatalf("final Stats %+v, model submitted %d panicked %d, handler saw %d",
				s, m.submitted, panicsAccepted, handled.Load())
		}
	})
}
