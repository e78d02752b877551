package crew_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// The operations FuzzPoolOperations decodes from its input, one byte each (plus an argument
// byte for some).
const (
	opTrySubmit = iota // TrySubmit a task that blocks until the next release
	opSubmit           // Submit (on a non-blocking pool: rejects when full) a blocking task
	opSubmitCtx        // SubmitContext with a context that has already ended
	opGrow             // Resize to a larger limit while tasks are blocked
	opRelease          // let every blocked task finish, Wait, then Resize to any limit
	opStop             // Stop
	opStats            // check Stats against the model, once the pool settles
	opNil              // Submit(nil)
	opCount
)

// poolModel is the obviously correct model a pool is compared with: while tasks are held
// blocked, a pool with limit max and queue bound q holds at most max+q of them (any number if
// the queue is unbounded); a stopped pool accepts nothing; every accepted task runs once.
type poolModel struct {
	max, queue int
	pending    int // accepted and held blocked
	stopped    bool
	accepted   int
}

func (m *poolModel) accepts() bool {
	return !m.stopped && (m.queue == 0 || m.pending < m.max+m.queue)
}

// FuzzPoolOperations runs random sequences of operations against a pool and against
// poolModel, and checks after each that the pool accepted and rejected exactly what the model
// did, that it settles to the state the model predicts, and at the end that every accepted
// task ran exactly once, no rejected one ran, and nothing is left running.
func FuzzPoolOperations(f *testing.F) {
	f.Add(byte(2), byte(3), []byte{opTrySubmit, opTrySubmit, opTrySubmit, opTrySubmit, opTrySubmit, opTrySubmit, opStats, opRelease, 1})
	f.Add(byte(1), byte(0), []byte{opSubmit, opSubmit, opStats, opGrow, 3, opStats, opRelease, 0, opStop, opSubmit})
	f.Add(byte(3), byte(1), []byte{opSubmit, opSubmit, opSubmit, opSubmit, opSubmit, opStats, opStop, opTrySubmit, opRelease, 2})
	f.Add(byte(1), byte(1), []byte{opSubmitCtx, opNil, opTrySubmit, opTrySubmit, opTrySubmit, opGrow, 1, opTrySubmit, opStats})
	f.Add(byte(4), byte(2), []byte{opStop, opStop, opTrySubmit, opRelease, 5, opStats})
	f.Fuzz(func(t *testing.T, maxByte, queueByte byte, ops []byte) {
		runFuzzOps(t, maxByte, queueByte, ops)
	})
}

// runFuzzOps is the body of FuzzPoolOperations.
func runFuzzOps(t *testing.T, maxByte, queueByte byte, ops []byte) {
	{
		if len(ops) > 200 {
			ops = ops[:200]
		}
		m := &poolModel{max: 1 + int(maxByte%6), queue: int(queueByte % 5)}
		opts := []crew.Option{crew.WithIdleTimeout(time.Duration(maxByte%3) * time.Millisecond)}
		if m.queue > 0 {
			// Bounded pools reject instead of blocking, so the sequence never waits on itself.
			opts = append(opts, crew.WithQueueSize(m.queue), crew.WithNonBlocking())
		}
		p := crew.New(m.max, opts...)
		gate := make(chan struct{})
		var gateMu sync.Mutex
		var ran atomic.Int64
		var runs []*atomic.Int32 // one per task offered, accepted or not
		var acceptedIDs []bool
		task := func(count *atomic.Int32) func() {
			gateMu.Lock()
			g := gate
			gateMu.Unlock()
			return func() {
				count.Add(1)
				ran.Add(1)
				<-g
			}
		}
		offer := func(submit func(func()) bool) {
			id := len(runs)
			count := new(atomic.Int32)
			runs = append(runs, count)
			want := m.accepts()
			got := submit(task(count))
			acceptedIDs = append(acceptedIDs, got)
			if got != want {
				t.Fatalf("op %d: pool accepted=%v, model says %v (model %+v)", id, got, want, *m)
			}
			if got {
				m.pending++
				m.accepted++
			}
		}
		release := func() {
			gateMu.Lock()
			close(gate)
			gate = make(chan struct{})
			gateMu.Unlock()
			p.Wait()
			m.pending = 0
		}
		for i := 0; i < len(ops); i++ {
			switch ops[i] % opCount {
			case opTrySubmit:
				offer(p.TrySubmit)
			case opSubmit:
				offer(func(fn func()) bool {
					err := p.Submit(fn)
					if err != nil && !errors.Is(err, crew.ErrQueueFull) && !errors.Is(err, crew.ErrStopped) {
						t.Fatalf("Submit: unexpected error %v", err)
					}
					return err == nil
				})
			case opSubmitCtx:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if err := p.SubmitContext(ctx, func() { t.Error("task of an ended context ran") }); err == nil {
					t.Fatal("SubmitContext with an ended context accepted the task")
				}
			case opGrow:
				if i+1 < len(ops) {
					i++
					m.max += int(ops[i] % 4)
					p.Resize(m.max)
				}
			case opRelease:
				release()
				if i+1 < len(ops) {
					i++
					m.max = 1 + int(ops[i]%6)
					p.Resize(m.max) // nothing runs: a shrink returns at once
				}
			case opStop:
				p.Stop()
				m.stopped = true
			case opStats:
				// Once the pool settles, the held tasks fill the workers first.
				wantRunning := min(m.pending, m.max)
				deadline := time.Now().Add(3 * time.Second)
				for {
					s := p.Stats()
					if s.Running == wantRunning && s.Waiting == m.pending-wantRunning &&
						s.Submitted == uint64(m.accepted) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("Stats = %+v, model: %d running, %d waiting, %d submitted",
							s, wantRunning, m.pending-wantRunning, m.accepted)
					}
					time.Sleep(100 * time.Microsecond)
				}
			case opNil:
				if err := p.Submit(nil); !errors.Is(err, crew.ErrNilTask) {
					t.Fatalf("Submit(nil) = %v", err)
				}
			}
		}
		release()
		p.StopAndWait()
		for id, r := range runs {
			want := int32(0)
			if acceptedIDs[id] {
				want = 1
			}
			if got := r.Load(); got != want {
				t.Fatalf("task %d (accepted=%v) ran %d times", id, acceptedIDs[id], got)
			}
		}
		s := p.Stats()
		if s.Submitted != uint64(m.accepted) || s.Completed != s.Submitted || s.Running != 0 || s.Idle != 0 {
			t.Fatalf("final Stats = %+v, model accepted %d", s, m.accepted)
		}
	}
}
