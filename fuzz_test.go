package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/crewgo/crew"
)

// fuzzPool is what the fuzz test drives: a Pool, or a FuncPool[func()] whose fn calls its
// argument, so one model covers Submit and Invoke.
type fuzzPool interface {
	submit(func()) error
	try(func()) bool
	submitContext(context.Context, func()) error
	removed() uint64
	Wait()
	Stop()
	StopAndWait()
	StopNow() []func()
	Pause()
	Resume()
	PauseAndWait(context.Context) error
	SetRateLimit(float64, int)
	Resize(int)
	Stats() crew.Stats
}

type plainPool struct{ *crew.Pool }

func (p plainPool) submit(f func()) error { return p.Submit(f) }
func (p plainPool) try(f func()) bool     { return p.TrySubmit(f) }
func (p plainPool) submitContext(ctx context.Context, f func()) error {
	return p.SubmitContext(ctx, f)
}
func (p plainPool) removed() uint64 { return crew.Removed(p.Pool) }

type invokePool struct{ *crew.FuncPool[func()] }

func (p invokePool) submit(f func()) error { return p.Invoke(f) }
func (p invokePool) try(f func()) bool     { return p.TryInvoke(f) }
func (p invokePool) submitContext(ctx context.Context, f func()) error {
	return p.InvokeContext(ctx, f)
}
func (p invokePool) removed() uint64 { return crew.RemovedFunc(p.FuncPool) }

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
	opPause
	opResume
	opPauseAndWait // arg%3: a context already ended, one that ends in 1 ms, or none while the running tasks finish
	opStopNow
	opSetRate    // arg%4: no limit, or limits fast enough to keep an input short
	opSubmitN    // SubmitN (arg even) or TrySubmitN (odd) of weight 1+arg/2%(limit+1), on a Pool
	opSubmitFrom // a task that submits into its own pool when it starts
	opGo         // Go of a function held at its gate, on a Pool
	opCancel     // Future.Cancel of the arg-th future made: true exactly when the model has it queued
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

// fuzzState is where the model says a fuzzed task is.
type fuzzState int

const (
	stRefused   fuzzState = iota // never accepted
	stQueued                     // accepted, waiting
	stRunning                    // started, held at its gate
	stRan                        // ran to its end
	stDiscarded                  // dropped by DiscardOldest
	stReturned                   // taken out by StopNow
	stCanceled                   // Future.Cancel took it: its place stays queued until reached
	stDoomed                     // a group function queued when its group failed: skipped when reached
)

// fuzzTask is one task FuzzPoolOperations made, with what the model says of it and what
// it saw when it ran.
type fuzzTask struct {
	id      uintptr // funcID of its func
	weight  int
	inline  bool // CallerRuns runs it on its submitter: unheld, not against the limit
	group   bool // a Group function: dropped or taken out, it fails its group instead
	end     taskEnd
	release chan struct{} // closed: it may end (nil: it does not wait)
	let     bool          // release is closed
	state   fuzzState
	runs    atomic.Int32
	early   atomic.Bool       // it started while the pool was known to be paused
	future  *crew.Future[int] // opGo's
	gid     int               // opGroup's: the step that made its group
}

// funcID tells the func values a discard handler or StopNow hands back apart: the closure
// each fuzzed task is made of is allocated once, so its address names it.
func funcID(f func()) uintptr { return *(*uintptr)(unsafe.Pointer(&f)) }

// weightGauge is limitGauge for weighted tasks: the worst excess of the running weight over
// the limit, where a task heavier than the limit may run only alone.
type weightGauge struct {
	limit, running, high atomic.Int64
}

func (g *weightGauge) enter(w int64) {
	before := g.limit.Load()
	cur := g.running.Add(w)
	lim := max(before, g.limit.Load())
	if excess := cur - lim; excess > 0 && cur != w {
		for {
			h := g.high.Load()
			if excess <= h || g.high.CompareAndSwap(h, excess) {
				break
			}
		}
	}
}

func (g *weightGauge) leave(w int64) { g.running.Add(-w) }

// fuzzModel is the obviously correct pool: with every task held at its gate, the tasks start
// in the order they were accepted while the running weights fit the limit (a task heavier
// than the limit alone) and the pool is not paused; a submit that finds tasks queued, no
// room or a pause queues if the queue has room, and otherwise the overflow policy decides.
type fuzzModel struct {
	limit, queueSize int
	policy           crew.Overflow
	stopped, paused  bool
	queue, running   []*fuzzTask
	weight           int // of the running tasks
	accepted         uint64
	refused          uint64 // Stats.Rejected
	canceled         uint64 // Stats.Canceled
	discarded        uint64 // Stats.Discarded
	removed          uint64 // taken out by StopNow
	callerRan        uint64 // Stats.CallerRan
	skipped          uint64 // Stats.Skipped: canceled futures whose place was reached
}

func (m *fuzzModel) fits(w int) bool { return m.weight == 0 || m.weight+w <= m.limit }

// offer decides the fate of a submit of weight w: "run", "queue", or "full".
func (m *fuzzModel) offer(w int) string {
	switch {
	case !m.paused && len(m.queue) == 0 && m.fits(w):
		return "run"
	case m.queueSize == 0 || len(m.queue) < m.queueSize:
		return "queue"
	default:
		return "full"
	}
}

func (m *fuzzModel) start(t *fuzzTask) {
	t.state = stRunning
	m.running = append(m.running, t)
	m.weight += t.weight
}

func (m *fuzzModel) accept(t *fuzzTask) {
	m.accepted++
	if m.offer(t.weight) == "run" {
		m.start(t)
	} else {
		t.state = stQueued
		m.queue = append(m.queue, t)
	}
}

// dispatch starts what may start, in queue order. The place of a canceled future is dropped
// when a worker could take it, counted as skipped.
func (m *fuzzModel) dispatch() {
	for !m.paused && len(m.queue) > 0 && m.fits(m.queue[0].weight) {
		t := m.queue[0]
		m.queue = m.queue[1:]
		if t.state == stCanceled || t.state == stDoomed {
			m.skipped++
			continue
		}
		m.start(t)
	}
}

// finishRunning ends the running tasks, let go, and starts what may start after them.
func (m *fuzzModel) finishRunning() {
	for _, t := range m.running {
		t.state = stRan
	}
	m.running, m.weight = nil, 0
	m.dispatch()
}

// drain ends every task accepted: they have all been let go and the pool is not paused.
func (m *fuzzModel) drain() {
	m.dispatch()
	for len(m.running) > 0 {
		m.finishRunning()
	}
}

// roomFor reports whether n more tasks of weight 1 would all start or wait in the queue.
func (m *fuzzModel) roomFor(n int) bool {
	free := 0
	if !m.paused && len(m.queue) == 0 {
		free = max(m.limit-m.weight, 0)
	}
	return m.queueSize == 0 || n-min(n, free) <= m.queueSize-len(m.queue)
}

// fuzzRates are the rate limits the fuzzers set, from none to one start per 50 µs with a
// burst of 2.
var fuzzRates = []struct {
	perSecond float64
	burst     int
}{{math.Inf(1), 1}, {1e9, 1}, {2e4, 2}, {1e6, 8}}

// FuzzPoolOperations runs a sequence of operations decoded from the input against a pool
// and against fuzzModel, and fails at the first difference in what was accepted, started,
// queued, refused, dropped, handed back or counted. Tasks hold at a gate of their own until
// the operation that lets them go (Wait, a shrinking Resize, PauseAndWait), so the pool's
// state between operations is exact; then they return, panic (with a value or with nil) or
// call runtime.Goexit. The pool has an overflow policy, a discard handler that records what
// it gets, may be paused, resumed, stopped now, rate limited, and given weighted tasks and
// tasks that submit into it. A group on the pool calls Go while two goroutines wait on it.
// Throughout: every accepted task ends in exactly one of ran (exactly once), dropped (to the
// handler, or failing its group) and taken out by StopNow (returned in queue order, or
// failing its group); no refused task runs; no task starts while the pool is paused; the
// running weights never exceed the limit; every Stats snapshot of the quiescent pool has
// Accepted = Completed + Panicked + Running + Waiting + Discarded + taken out; and at the end
// every panic reached the handler and nothing is left running.
func FuzzPoolOperations(f *testing.F) {
	// The first two bytes choose the pool: in[0]%4+1 workers, in[0]>>2&3 the overflow
	// policy and 0x10 WithLatencyHistograms; in[1]%4 the queue size, 0x40 WithNonBlocking,
	// 0x80 FuncPool. Seeds are the edge cases worth keeping.
	const (
		block         = 0
		reject        = 1 << 2
		callerRuns    = 2 << 2
		discardOldest = 3 << 2
		funcPool      = 0x80
		observed      = 0x10
	)
	f.Add([]byte{0, 0}) // nothing
	// Observed: each path that queues, gives back, drops or takes out a task keeps its time.
	f.Add([]byte{observed | discardOldest, 2, opSubmit, opGo, opSubmit, opCancel, opSubmit, opSubmit, opStats, opWait})
	f.Add([]byte{observed | 1, 0, opSubmit, opPause, opSubmit, opGo, opSubmit, opStats, opResume, opStats, opWait})
	f.Add([]byte{observed | callerRuns | 1, 1, opSubmit, opSubmit, opSubmitPanic, opSubmit, opStats, opWait})
	f.Add([]byte{observed, 0x82, opSubmit, opSubmit, opSubmit, opStopNow, opSubmit, opStats, opWait})
	f.Add([]byte{observed | 3, 0, opSubmitGoexit, opSubmitPanicNil, opSubmit, opResize, opSubmit, opStats, opWait})
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
	// Pause: submits queue, Wait waits for them, Resume starts them in order.
	f.Add([]byte{1, 0, opSubmit, opPause, opSubmit, opSubmit, opStats, opWait, opStats, opPause, opSubmit, opResume, opStats})
	f.Add([]byte{1, 0x80, opPause, opPause, opSubmitPanic, opSubmit, opResume, opResume, opStats, opWait})
	// PauseAndWait with an ended context, a short one, and one the running tasks end before.
	f.Add([]byte{2, 0, opSubmit, opSubmit, opPauseAndWait, fuzzOps + opPauseAndWait, opSubmit, 2*fuzzOps + opPauseAndWait, opStats, opResume, opWait})
	f.Add([]byte{0, 0x80, opPauseAndWait, opSubmit, 2*fuzzOps + opPauseAndWait, opStats, opStop, opStats}) // nothing running, then Stop resumes
	// StopNow: of a queue, while paused, after Stop, twice.
	f.Add([]byte{0, 0, opSubmit, opSubmit, opSubmitPanic, opSubmit, opStopNow, opStats, opSubmit, opWait, opStopNow})
	f.Add([]byte{1, 0x80, opSubmit, opPause, opSubmit, opSubmit, opSubmitGoexit, opStopNow, opStats, opResume, opWait})
	f.Add([]byte{0, 2, opSubmit, opSubmit, opStop, opStopNow, opStats, opWait})
	f.Add([]byte{1, 0, opGroup, opGroup, opPause, 2*fuzzOps + opGroup, opStopNow, opStats, opWait}) // group functions fail with ErrStopped
	// Pause then Stop resumes, and every accepted task runs.
	f.Add([]byte{1, 1, opSubmit, opPause, opSubmit, opSubmit, opStop, opStats, opWait, opStats})
	f.Add([]byte{0, 0x80, opPause, opSubmitPanicNil, opSubmit, opStop, opWait, opResume, opStats})
	// Rate limits: starts wait in the queue for tokens, never refuse.
	f.Add([]byte{3, 0, 2*fuzzOps + opSetRate, opSubmit, opSubmit, opSubmit, opSubmit, opStats, opWait, 3*fuzzOps + opSetRate, opSubmit, opSetRate, opWait})
	f.Add([]byte{1, 0x81, fuzzOps + opSetRate, opSubmit, opSubmit, opSubmit, opPause, opStats, opResume, opWait, opStats})
	// Overflow policies with a full queue.
	f.Add([]byte{reject, 1, opSubmit, opSubmit, opSubmit, opSubmitTimeout, opStats, opWait})
	f.Add([]byte{callerRuns, 1, opSubmit, opSubmit, opSubmit, opSubmitPanic, opSubmitPanicNil, opSubmitGoexit, opSubmitTimeout, opStats, opWait, opStats})
	f.Add([]byte{callerRuns | 1, 0x81, opSubmit, opSubmit, opSubmit, opSubmitPanic, opTrySubmit, opStats, opWait})
	f.Add([]byte{discardOldest, 2, opSubmit, opSubmit, opSubmit, opSubmit, opSubmitPanic, opSubmit, opStats, opWait, opStats})
	f.Add([]byte{discardOldest | 1, 0x81, opSubmit, opSubmit, opSubmit, opSubmit, opSubmitTimeout, opStats, opStopNow, opStats})
	f.Add([]byte{discardOldest, 2, opSubmit, opGroup, 2*fuzzOps + opGroup, opSubmit, opSubmit, opStats, opWait}) // dropped group functions fail the group
	f.Add([]byte{discardOldest, 1, opPause, opSubmit, opSubmit, opSubmit, opStats, opResume, opWait})            // paused full queue drops
	f.Add([]byte{callerRuns, 1, opPause, opSubmit, opSubmit, opSubmit, opStats, opStop, opWait})                 // paused full queue: the caller waits
	// A task that submits into its own full pool: on the caller, dropped, refused, queued.
	f.Add([]byte{callerRuns, 1, opSubmit, opSubmit, opSubmitFrom, opStats, opWait})
	f.Add([]byte{callerRuns, 0x81, opSubmitFrom, opStats, opSubmitFrom, opSubmitFrom, opStats, opWait})
	f.Add([]byte{discardOldest | 1, 1, opSubmit, opSubmitFrom, opStats, opWait})
	f.Add([]byte{block | 1, 1, opSubmit, opSubmitFrom, opSubmitFrom, opStats, opWait})
	f.Add([]byte{reject, 0x80, opSubmitFrom, opStats, opStopNow, opWait})
	// Weights: FIFO with a heavy task at the head, too heavy, shrink below a queued weight.
	f.Add([]byte{3, 0, 6*fuzzOps + opSubmitN, 2*fuzzOps + opSubmitN, opSubmit, 4*fuzzOps + opSubmitN, opStats, opWait})
	f.Add([]byte{1, 0, opSubmit, 2*fuzzOps + opSubmitN, 3*fuzzOps + opSubmitN, 5*fuzzOps + opSubmitN, opSubmit, opStats, opWait})
	f.Add([]byte{3, 0, opSubmit, 6*fuzzOps + opSubmitN, opSubmit, opResize, opStats, opWait, opStats})
	f.Add([]byte{discardOldest | 3, 1, opSubmit, 6*fuzzOps + opSubmitN, opSubmit, opStats, opStopNow})
	f.Add([]byte{callerRuns | 2, 1, 4*fuzzOps + opSubmitN, 2*fuzzOps + opSubmitN, 4*fuzzOps + opSubmitN, 5*fuzzOps + opSubmitN, opStats, opWait})
	// Futures canceled while queued: reached by a worker, by StopNow, by DiscardOldest, across
	// a pause; a Cancel of one running or done.
	f.Add([]byte{0, 0, opSubmit, opGo, opGo, 1*fuzzOps + opCancel, opStats, opWait, opCancel, opStats})
	f.Add([]byte{1, 0, opSubmit, opSubmit, opGo, opGo, opCancel, opStats, opStopNow, opStats, opWait})
	f.Add([]byte{discardOldest, 2, opSubmit, opGo, opSubmit, opCancel, opSubmit, opSubmit, opStats, opWait})
	f.Add([]byte{1, 0, opPause, opGo, opGo, opGo, 2*fuzzOps + opCancel, opStats, opResume, opStats, opWait})
	f.Add([]byte{callerRuns, 1, opSubmit, opGo, opGo, opCancel, 1*fuzzOps + opCancel, opStats, opWait})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		if len(in) > 200 {
			in = in[:200]
		}
		m := &fuzzModel{limit: 1 + int(in[0]%4), queueSize: int(in[1] % 4), policy: crew.Overflow(in[0] >> 2 & 3)}
		var handled atomic.Uint64
		var dropMu sync.Mutex
		var drops []uintptr
		opts := []crew.Option{
			crew.WithIdleTimeout(0),
			crew.WithQueueSize(m.queueSize),
			crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
			crew.WithOverflow(m.policy),
			crew.WithDiscardHandler(func(v any) {
				f, _ := v.(func())
				dropMu.Lock()
				drops = append(drops, funcID(f))
				dropMu.Unlock()
			}),
		}
		if in[1]&0x40 != 0 {
			opts = append(opts, crew.WithNonBlocking())
			m.policy = crew.Reject
		}
		if in[0]&observed != 0 {
			opts = append(opts, crew.WithLatencyHistograms())
		}
		var p fuzzPool
		if in[1]&0x80 != 0 {
			p = invokePool{crew.NewFunc(m.limit, func(f func()) { f() }, opts...)}
		} else {
			p = plainPool{crew.New(m.limit, opts...)}
		}
		gauge := &weightGauge{}
		gauge.limit.Store(int64(m.limit))
		var paused atomic.Bool // set once Pause has returned, cleared before what resumes

		var tasks []*fuzzTask
		var wantDrops []uintptr
		// newTask makes a task of weight w that waits for its release unless it runs inline.
		newTask := func(w int, inline bool, end taskEnd) (*fuzzTask, func()) {
			rec := &fuzzTask{weight: w, inline: inline, end: end}
			var release chan struct{}
			if !inline {
				release = make(chan struct{})
			}
			rec.release = release
			tasks = append(tasks, rec)
			fn := func() {
				rec.runs.Add(1)
				if paused.Load() && !inline {
					rec.early.Store(true)
				}
				if !inline {
					gauge.enter(int64(w))
					defer gauge.leave(int64(w))
					<-release
				}
				end.end()
			}
			rec.id = funcID(fn)
			return rec, fn
		}
		let := func(ts []*fuzzTask) {
			for _, rec := range ts {
				if rec.release != nil && !rec.let {
					close(rec.release)
					rec.let = true
				}
			}
		}
		letAll := func() { let(tasks) }
		finished := false
		defer func() {
			if finished {
				return
			}
			// A check failed: leave nothing running for the next input if the pool can.
			letAll()
			paused.Store(false)
			select {
			case <-goRun(p.StopAndWait):
			case <-time.After(10 * time.Second):
			}
		}()

		// The Wait calls on the groups of opGroup not yet checked.
		var groupErrs []error // what its Wait may return besides nil
		var waiters []<-chan error
		waited := func(step int) {
			t.Helper()
			for _, w := range waiters {
				select {
				case err := <-w:
					if err != nil && !slices.ContainsFunc(groupErrs, func(e error) bool { return errors.Is(err, e) }) {
						t.Fatalf("step %d: Group.Wait = %v, want nil or one of %v", step, err, groupErrs)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("step %d: Group.Wait has not returned 10 s after its functions ended", step)
				}
			}
			waiters = waiters[:0]
		}
		// drop moves the oldest queued task to dropped, as DiscardOldest does.
		drop := func() {
			// The places of canceled futures at the head go first, uncounted as drops: if
			// that makes room, nothing is dropped.
			for len(m.queue) > 0 && m.queue[0].state == stCanceled {
				m.queue = m.queue[1:]
				m.skipped++
			}
			if len(m.queue) < m.queueSize {
				return
			}
			old := m.queue[0]
			m.queue = m.queue[1:]
			old.state = stDiscarded
			m.discarded++
			if old.gid != 0 {
				// Its group fails, which ends the group's context: the group's functions
				// still queued are skipped when a worker reaches them.
				for _, rec := range m.queue {
					if rec.gid == old.gid && rec.state == stQueued {
						rec.state = stDoomed
					}
				}
			}
			if old.group {
				groupErrs = append(groupErrs, crew.ErrDiscarded)
			} else {
				wantDrops = append(wantDrops, old.id)
			}
		}
		// landed records a submit that returned nil: under CallerRuns its task ran on the
		// caller, exactly once; under DiscardOldest, with the queue full, it went in behind
		// the oldest, which was dropped; otherwise it was accepted.
		landed := func(step int, rec *fuzzTask, fate string) {
			t.Helper()
			switch {
			case rec.inline:
				if n := rec.runs.Load(); n != 1 {
					t.Fatalf("step %d: CallerRuns returned with its task run %d times, want once", step, n)
				}
				rec.state = stRan
				m.accepted++
				m.callerRan++
			case fate == "full": // DiscardOldest
				drop()
				m.accept(rec)
				m.dispatch()
			default:
				m.accept(rec)
			}
		}
		checkDrops := func(step int) {
			t.Helper()
			dropMu.Lock()
			defer dropMu.Unlock()
			if !slices.Equal(drops, wantDrops) {
				t.Fatalf("step %d: the discard handler got %v, want the oldest queued %v", step, drops, wantDrops)
			}
		}
		// settle waits until the pool shows the model's Running and Waiting and every task the
		// model says started has; a queued task that started fails at once.
		settle := func(step int, op string) {
			t.Helper()
			deadline := time.Now().Add(5 * time.Second)
			for {
				s := p.Stats()
				ok := s.Running == len(m.running) && s.Waiting == len(m.queue)
				for i, rec := range tasks {
					n := rec.runs.Load()
					switch {
					case rec.state == stQueued && n != 0:
						t.Fatalf("step %d (%s): task %d started, the model has it queued (limit %d, weight %d, paused %v)",
							step, op, i, m.limit, m.weight, m.paused)
					case rec.state == stRunning && n != 1:
						ok = false
					}
				}
				if ok {
					gauge.limit.Store(int64(m.limit))
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("step %d (%s): pool settled at Running %d Waiting %d, model %d and %d",
						step, op, s.Running, s.Waiting, len(m.running), len(m.queue))
				}
				time.Sleep(50 * time.Microsecond)
			}
		}
		checkStats := func(step int) {
			t.Helper()
			s := p.Stats()
			removed := p.removed()
			if s.MaxWorkers != m.limit || s.Accepted != m.accepted || s.Rejected != m.refused ||
				s.Canceled != m.canceled || s.Running != len(m.running) || s.Waiting != len(m.queue) ||
				s.Discarded != m.discarded || s.CallerRan != m.callerRan || s.Paused != m.paused ||
				removed != m.removed || s.Skipped != m.skipped {
				t.Fatalf("step %d: Stats %+v (taken out %d), model %+v", step, s, removed, m)
			}
			if s.Accepted != s.Completed+s.Panicked+uint64(s.Running+s.Waiting)+s.Discarded+removed+s.Skipped {
				t.Fatalf("step %d: Stats %+v with %d taken out do not add up to Accepted", step, s, removed)
			}
		}
		// submitOne submits a task of weight w by Submit (how 0), SubmitN (1),
		// SubmitContext with a 5 ms deadline (2) or Go (3), and follows it in the model.
		submitOne := func(step, how, w int, end taskEnd) {
			t.Helper()
			pp, isPool := p.(plainPool)
			if (how == 1 || how == 3) && !isPool {
				return
			}
			if w > m.limit {
				_, fn := newTask(w, false, end)
				if err := pp.SubmitN(w, fn); !errors.Is(err, crew.ErrTooHeavy) {
					t.Fatalf("step %d: SubmitN(%d) with limit %d = %v, want ErrTooHeavy", step, w, m.limit, err)
				}
				return
			}
			fate := m.offer(w)
			// CallerRuns runs nothing on the caller while paused: it waits for Resume.
			blocks := m.policy == crew.Block || (m.policy == crew.CallerRuns && m.paused)
			if !m.stopped && fate == "full" && blocks && how != 2 {
				return // a Submit that would block is the stress suite's business
			}
			inline := !m.stopped && fate == "full" && m.policy == crew.CallerRuns && !m.paused
			if inline && end == endGoexit {
				end = endReturn // Goexit on the caller would end the fuzzer's goroutine
			}
			rec, fn := newTask(w, inline, end)
			var err error
			switch how {
			case 0:
				err = p.submit(fn)
			case 1:
				err = pp.SubmitN(w, fn)
			case 3:
				rec.group = true // dropped or taken out, it fails its future rather than going back
				rec.future = crew.Go(pp.Pool, func() (int, error) { fn(); return 0, nil })
				select {
				case <-rec.future.Done(): // refused, or run on the caller
					_, err = rec.future.Wait()
				default:
				}
			default:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				err = p.submitContext(ctx, fn)
				cancel()
			}
			switch {
			case m.stopped:
				if !errors.Is(err, crew.ErrStopped) && !(how == 2 && errors.Is(err, context.DeadlineExceeded)) {
					t.Fatalf("step %d: submit after Stop = %v, want ErrStopped", step, err)
				}
				if err != crew.ErrStopped && errors.Is(err, context.DeadlineExceeded) {
					m.canceled++
				}
			case how == 2 && errors.Is(err, context.DeadlineExceeded):
				// The deadline may pass before the call even looks at the queue; then
				// nothing was accepted.
				m.canceled++
			case fate == "full" && m.policy == crew.Reject:
				if !errors.Is(err, crew.ErrQueueFull) {
					t.Fatalf("step %d: submit to a full queue under Reject = %v, want ErrQueueFull", step, err)
				}
				m.refused++
			case err != nil:
				t.Fatalf("step %d: submit (%s, policy %d, how %d) = %v, want nil", step, fate, m.policy, how, err)
			default:
				landed(step, rec, fate)
			}
			checkDrops(step)
		}
		// tried is submitOne's non-blocking form: TrySubmit, or TrySubmitN for how 1.
		tried := func(step, how, w int) {
			t.Helper()
			pp, isPool := p.(plainPool)
			if how == 1 && !isPool {
				return
			}
			fate := m.offer(w)
			rec, fn := newTask(w, false, endReturn)
			var ok bool
			if how == 1 {
				ok = pp.TrySubmitN(w, fn)
			} else {
				ok = p.try(fn)
			}
			want := !m.stopped && fate != "full" && w <= m.limit
			if ok != want {
				t.Fatalf("step %d: TrySubmit(N) of weight %d = %v, model says %v (%s, stopped %v)", step, w, ok, want, fate, m.stopped)
			}
			switch {
			case ok:
				m.accept(rec)
			case !m.stopped && w <= m.limit:
				m.refused++
			}
			checkDrops(step)
		}

		for step, b := range in[2:] {
			op, arg := int(b%fuzzOps), int(b/fuzzOps)
			name := fmt.Sprint("op ", op)
			switch op {
			case opSubmit, opSubmitPanic, opSubmitPanicNil, opSubmitGoexit:
				submitOne(step, 0, 1, endOf(op))
			case opTrySubmit:
				tried(step, 0, 1)
			case opGo:
				submitOne(step, 3, 1, endReturn)
			case opCancel:
				var fs []*fuzzTask
				for _, rec := range tasks {
					if rec.future != nil {
						fs = append(fs, rec)
					}
				}
				if len(fs) == 0 {
					continue
				}
				rec := fs[arg%len(fs)]
				want := rec.state == stQueued
				if got := rec.future.Cancel(); got != want {
					t.Fatalf("step %d: Cancel of a future in state %d = %v, want %v", step, rec.state, got, want)
				}
				if want {
					rec.state = stCanceled
					if _, err := rec.future.Wait(); !errors.Is(err, context.Canceled) {
						t.Fatalf("step %d: Wait of a canceled future = %v", step, err)
					}
				}
			case opSubmitN:
				w := 1 + arg/2%(m.limit+1)
				if arg%2 == 0 {
					submitOne(step, 1, w, endReturn)
				} else {
					tried(step, 1, w)
				}
			case opSubmitCanceled:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, fn := newTask(1, false, endReturn)
				if err := p.submitContext(ctx, fn); !errors.Is(err, context.Canceled) {
					t.Fatalf("step %d: SubmitContext with an ended context = %v, want context.Canceled", step, err)
				}
				m.canceled++
			case opSubmitTimeout:
				submitOne(step, 2, 1, endReturn)
			case opResize:
				n := 1 + arg%6
				name = fmt.Sprint("Resize ", n)
				gauge.limit.Store(int64(max(m.limit, n)))
				// Resize returns at once, even below the tasks running: they go on, and
				// none starts until the running weight leaves room.
				awaitReturn(t, fmt.Sprintf("step %d: Resize(%d)", step, n), goRun(func() { p.Resize(n) }))
				gauge.limit.Store(int64(n))
				m.limit = n
				m.dispatch()
			case opWait:
				letAll()
				done := goRun(p.Wait)
				if m.paused && len(m.queue) > 0 {
					// Wait waits for paused work: until Resume, it has not returned.
					m.finishRunning()
					settle(step, "Wait while paused")
					select {
					case <-done:
						t.Fatalf("step %d: Wait returned with %d tasks queued on a paused pool", step, len(m.queue))
					default:
					}
					paused.Store(false)
					p.Resume()
					m.paused = false
				}
				awaitReturn(t, fmt.Sprintf("step %d: Wait", step), done)
				m.drain()
				waited(step)
			case opStop:
				paused.Store(false)
				p.Stop()
				m.stopped, m.paused = true, false
				m.dispatch()
			case opStats:
				settle(step, name)
				checkStats(step)
			case opSubmitNil:
				if _, isFunc := p.(invokePool); isFunc {
					continue // a FuncPool takes a nil func as an argument like any other
				}
				if err := p.submit(nil); !errors.Is(err, crew.ErrNilTask) {
					t.Fatalf("step %d: Submit(nil) = %v, want ErrNilTask", step, err)
				}
			case opGroup:
				pp, ok := p.(plainPool)
				n := 1 + arg%3
				// The group's functions are tasks like the others, held at their gates, so
				// the model holds; Go may block, run inline or drop on a full queue, so only
				// n that fit are offered.
				if !ok || !m.stopped && !m.roomFor(n) {
					continue
				}
				// A group per step: a Wait ends its group (functions given after it are
				// skipped), so the Waits start once the functions are given.
				g, _ := pp.Group(context.Background())
				for range n {
					rec, fn := newTask(1, false, endReturn)
					rec.group = true
					rec.gid = step + 1
					g.Go(func(context.Context) error { fn(); return nil })
					if m.stopped {
						groupErrs = append(groupErrs, crew.ErrStopped)
						continue
					}
					m.accept(rec)
					// Under a rate limit the function may wait a moment in the queue for a
					// token: the next one is given once it has started, as the model has it,
					// or it could find a bounded queue full.
					settle(step, name)
				}
				for range 2 {
					w := make(chan error, 1)
					go func() { w <- g.Wait() }()
					waiters = append(waiters, w)
				}
			case opPause:
				p.Pause()
				if !m.stopped { // a stopped pool still runs its backlog
					paused.Store(true)
					m.paused = true
				}
			case opResume:
				paused.Store(false)
				p.Resume()
				m.paused = false
				m.dispatch()
			case opPauseAndWait:
				var err error
				var want error
				switch arg % 3 {
				case 0:
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					err = p.PauseAndWait(ctx)
					want = context.Canceled
				case 1:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					err = p.PauseAndWait(ctx)
					cancel()
					want = context.DeadlineExceeded
				default:
					p.Pause()
					paused.Store(!m.stopped)
					done := goRun(func() { err = p.PauseAndWait(context.Background()) })
					if m.stopped {
						// Pause did nothing: PauseAndWait waits for the backlog too.
						letAll()
						awaitReturn(t, fmt.Sprintf("step %d: PauseAndWait on a stopped pool", step), done)
						m.drain()
						break
					}
					if len(m.running) > 0 {
						select {
						case <-done:
							t.Fatalf("step %d: PauseAndWait returned with %d tasks running", step, len(m.running))
						default:
						}
						let(m.running)
					}
					awaitReturn(t, fmt.Sprintf("step %d: PauseAndWait", step), done)
					m.paused = !m.stopped
					m.finishRunning()
				}
				paused.Store(!m.stopped)
				if len(m.running) == 0 {
					want = nil
				}
				if !errors.Is(err, want) || err != nil && want == nil {
					t.Fatalf("step %d: PauseAndWait (%d running) = %v, want %v", step, len(m.running), err, want)
				}
				m.paused = !m.stopped
			case opStopNow:
				got := p.StopNow()
				paused.Store(false)
				var want []uintptr
				for _, rec := range m.queue {
					if rec.state == stCanceled {
						m.skipped++ // a canceled future's place: counted once, as skipped
						continue
					}
					rec.state = stReturned
					m.removed++
					if rec.group {
						groupErrs = append(groupErrs, crew.ErrStopped)
						continue
					}
					want = append(want, rec.id)
				}
				ids := make([]uintptr, len(got))
				for i, f := range got {
					ids[i] = funcID(f)
				}
				if !slices.Equal(ids, want) {
					t.Fatalf("step %d: StopNow returned %v, want the queued plain tasks in order %v", step, ids, want)
				}
				m.queue = nil
				m.stopped, m.paused = true, false
			case opSetRate:
				r := fuzzRates[arg%len(fuzzRates)]
				p.SetRateLimit(r.perSecond, r.burst)
			case opSubmitFrom:
				if m.stopped || m.offer(1) != "run" {
					continue
				}
				outer, outerFn := newTask(1, false, endReturn)
				m.accept(outer)
				// What the inner submit finds once the outer task runs.
				fate := m.offer(1)
				useTry := fate == "full" && m.policy == crew.Block
				inline := fate == "full" && m.policy == crew.CallerRuns
				inner, innerFn := newTask(1, inline, endReturn)
				res := make(chan error, 1)
				err := p.submit(func() {
					if useTry {
						if p.try(innerFn) {
							res <- nil
						} else {
							res <- crew.ErrQueueFull
						}
					} else {
						res <- p.submit(innerFn)
					}
					outerFn()
				})
				if err != nil {
					t.Fatalf("step %d: submit of a task that submits = %v", step, err)
				}
				var innerErr error
				select {
				case innerErr = <-res:
				case <-time.After(10 * time.Second):
					t.Fatalf("step %d: a submit from a task into its own pool has not returned after 10 s", step)
				}
				switch {
				case fate == "full" && (m.policy == crew.Reject || useTry):
					if !errors.Is(innerErr, crew.ErrQueueFull) {
						t.Fatalf("step %d: submit from a task into its full pool = %v, want ErrQueueFull", step, innerErr)
					}
					m.refused++
				case innerErr != nil:
					t.Fatalf("step %d: submit from a task (%s, policy %d) = %v, want nil", step, fate, m.policy, innerErr)
				default:
					landed(step, inner, fate)
				}
				checkDrops(step)
			}
			settle(step, name)
			if len(m.running) == 0 && len(m.queue) == 0 {
				idleIdentity(t, fmt.Sprintf("step %d (%s), idle", step, name), p.Stats())
			}
		}

		letAll()
		paused.Store(false)
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		idleIdentity(t, "after StopAndWait", p.Stats())
		m.paused = false
		m.dispatch()
		m.drain()
		waited(len(in))
		checkDrops(len(in))
		finished = true
		var ran, panics uint64
		for i, rec := range tasks {
			n := rec.runs.Load()
			switch {
			case rec.state == stRan && n != 1:
				t.Fatalf("accepted task %d ran %d times, want once", i, n)
			case rec.state == stCanceled && n != 0:
				t.Fatalf("canceled future %d ran %d times, want never", i, n)
			case rec.state != stRan && n != 0:
				t.Fatalf("task %d (state %d: refused, queued, running, ran, dropped, taken out) ran %d times, want never", i, rec.state, n)
			case rec.early.Load():
				t.Fatalf("task %d started after Pause returned and before Resume", i)
			}
			if rec.state == stRan {
				ran++
				if rec.end.panics() {
					panics++
				}
			}
		}
		if h := gauge.high.Load(); h > 0 {
			t.Fatalf("the running weights exceeded the limit by %d", h)
		}
		s := p.Stats()
		if s.Accepted != m.accepted || s.Completed+s.Panicked != ran || s.Panicked != panics ||
			handled.Load() != s.Panicked || s.Running != 0 || s.Waiting != 0 || s.Idle != 0 ||
			s.Discarded != m.discarded || s.CallerRan != m.callerRan || p.removed() != m.removed || s.Paused ||
			s.Skipped != m.skipped {
			t.Fatalf("final Stats %+v (taken out %d), model %+v, ran %d panicked %d, handler saw %d",
				s, p.removed(), m, ran, panics, handled.Load())
		}
		// Observed, every task that ran was timed once: its wait when it started, its run when
		// it ended, whichever path queued, removed, gave back or reordered it.
		if in[0]&observed != 0 && (s.WaitTime.Count != ran || s.RunTime.Count != ran) {
			t.Fatalf("histograms counted %d waits and %d runs of %d tasks that ran", s.WaitTime.Count, s.RunTime.Count, ran)
		}
	})
}

// TestFuzzFindingDiscardOldestStartsATaskThatNowFits proves [crew.DiscardOldest] with
// [crew.Pool.SubmitN]: when the task dropped was a heavy one at the head of the queue, the
// light task that takes its place starts at once if it fits, rather than when a running task
// returns.
func TestFuzzFindingDiscardOldestStartsATaskThatNowFits(t *testing.T) {
	p := crew.New(4, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithIdleTimeout(0))
	release := make(chan struct{})
	defer func() { close(release); p.StopAndWait() }()
	running := make(chan struct{})
	if err := p.Submit(func() { close(running); <-release }); err != nil {
		t.Fatal(err)
	}
	<-running
	if err := p.SubmitN(4, func() { t.Error("the dropped task ran") }); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	if err := p.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("the task that took the dropped one's place has not started, with 1 of 4 slots used: %+v", p.Stats())
	}
}

// TestFuzzFindingWeightedCallerRunsKeepsTheLimit proves that a weighted task that
// [crew.CallerRuns] runs on its submitter leaves the limit as it was: it holds its slots
// beyond the first while it runs and gives back just those, so no heavier task starts
// beside it than the limit allows.
func TestFuzzFindingWeightedCallerRunsKeepsTheLimit(t *testing.T) {
	p := crew.New(3, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	release := make(chan struct{})
	defer func() { close(release); p.StopAndWait() }()
	if err := p.SubmitN(3, func() { <-release }); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := p.SubmitN(2, func() { started <- struct{}{}; <-release }); err != nil { // queued
		t.Fatal(err)
	}
	if err := p.SubmitN(3, func() {}); err != nil { // full queue: runs here
		t.Fatal(err)
	}
	// Give a wrong start the chance to happen, then look.
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
		select {
		case <-started:
			t.Fatalf("a task of weight 2 started beside one of weight 3 on a pool of 3: %+v", p.Stats())
		default:
			runtime.Gosched()
		}
	}
}

// TestFuzzFindingPauseAfterStopLeavesTheBacklogToRun proves that [crew.Pool.Pause] on a
// stopped pool does not strand its queued tasks: StopAndWait returns after running them.
func TestFuzzFindingPauseAfterStopLeavesTheBacklogToRun(t *testing.T) {
	p := crew.New(1)
	release := make(chan struct{})
	if err := p.Submit(func() { <-release }); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	if err := p.Submit(func() { ran.Store(true) }); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	p.Pause()
	close(release)
	awaitReturn(t, "StopAndWait after Stop and Pause", goRun(p.StopAndWait))
	if !ran.Load() || p.Stats().Paused {
		t.Fatalf("after StopAndWait: queued task ran %v, Stats %+v", ran.Load(), p.Stats())
	}
}
