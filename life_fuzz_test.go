package crew_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// FuzzTaskLife runs generated sequences of the operations that claim a queued function
// (Future.Cancel, the end of its context, a wait that runs it itself, StopNow) among those
// that move tasks (Pause, Resume, Resize, the workers), on a pool and a sub-pool, and checks
// what the claims promise: every future ends once, either run once or never run; Cancel true
// means never run; each accepted task is counted once, in Completed, Skipped or Returned, as
// its future's outcome says; nothing hangs.
func FuzzTaskLife(f *testing.F) {
	f.Add([]byte{0, 0, 2, 4})                            // GoContext twice, Cancel, release
	f.Add([]byte{5, 0, 1, 0, 3, 2, 6, 4})                // pause, submits, end a context, Cancel, resume
	f.Add([]byte{7, 7, 4, 7, 4})                         // nested fork/join
	f.Add([]byte{0, 16, 0, 2, 8, 4})                     // StopNow with a canceled future queued
	f.Add([]byte{9, 0, 0, 0, 3, 19, 2, 4, 7, 12, 4})     // Resize, sub-pool
	f.Add([]byte{5, 7, 17, 3, 2, 6, 4, 4, 23, 10, 2, 4}) // a nested wait across a pause
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 40 {
			ops = ops[:40]
		}
		p := crew.New(2)
		sub := p.Sub(1)
		errEnded := errors.New("its context ended")
		var mu sync.Mutex
		gate := make(chan struct{})
		release := func() {
			mu.Lock()
			close(gate)
			gate = make(chan struct{})
			mu.Unlock()
		}
		held := func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return gate }
		type rec struct {
			f        *crew.Future[int]
			cancel   context.CancelCauseFunc
			runs     *atomic.Int32
			canceled bool          // Cancel reported true
			ended    bool          // its context was ended
			refused  bool          // made after StopNow: never accepted
			nested   *atomic.Int32 // children that ran
			forks    bool          // made by op 7: it forks two children
		}
		var recs []*rec
		stoppedNow := false
		pick := func(x byte) *rec {
			if len(recs) == 0 {
				return nil
			}
			return recs[int(x)%len(recs)]
		}
		for i, op := range ops {
			pool := p
			if op&16 != 0 {
				pool = sub
			}
			switch op % 10 {
			case 0, 7: // GoContext, held at the gate; 7: it forks two children and joins them
				ctx, cancel := context.WithCancelCause(context.Background())
				r := &rec{cancel: cancel, runs: new(atomic.Int32), nested: new(atomic.Int32), refused: stoppedNow}
				nested := op%10 == 7
				r.forks = nested
				r.f = crew.GoContext(ctx, pool, func(ctx context.Context) (int, error) {
					r.runs.Add(1)
					<-held()
					if !nested {
						return 1, nil
					}
					g, _ := pool.Group(ctx)
					for range 2 {
						g.Go(func(context.Context) error { r.nested.Add(1); return nil })
					}
					return 1, g.Wait()
				})
				recs = append(recs, r)
			case 1: // Go, held at the gate
				r := &rec{runs: new(atomic.Int32), nested: new(atomic.Int32), refused: stoppedNow}
				r.f = crew.Go(pool, func() (int, error) { r.runs.Add(1); <-held(); return 1, nil })
				recs = append(recs, r)
			case 2: // Cancel
				if r := pick(ops[(i+1)%len(ops)]); r != nil && r.f.Cancel() {
					if r.canceled {
						t.Fatalf("op %d: Cancel reported true twice", i)
					}
					r.canceled = true
				}
			case 3: // the end of a future's context
				if r := pick(ops[(i+1)%len(ops)]); r != nil && r.cancel != nil {
					r.cancel(errEnded)
					r.ended = true
				}
			case 4:
				release()
			case 5:
				pool.Pause()
			case 6:
				pool.Resume()
			case 8:
				for _, fn := range p.StopNow() {
					t.Fatalf("op %d: StopNow returned a plain task %p: none was submitted", i, fn)
				}
				stoppedNow = true
			case 9:
				pool.Resize(1 + int(op/10)%3)
			}
		}
		// Let everything end: resume, open the gate for good, wait for every future.
		p.Resume()
		sub.Resume()
		mu.Lock()
		close(gate)
		gate = make(chan struct{})
		close(gate)
		mu.Unlock()
		for i, r := range recs {
			select {
			case <-r.f.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("future %d has not ended 10 s after everything was let go: stats %+v, sub %+v", i, p.Stats(), sub.Stats())
			}
		}
		p.StopAndWait()
		var skipped, children uint64 // futures skipped; children of nested ones that never ran
		for i, r := range recs {
			v, err := r.f.Wait()
			n, k := r.runs.Load(), r.nested.Load()
			what := fmt.Sprintf("future %d (canceled %v, context ended %v, StopNow %v)", i, r.canceled, r.ended, stoppedNow)
			switch {
			case n > 1:
				t.Fatalf("%s ran %d times", what, n)
			case r.canceled && (n != 0 || !errors.Is(err, context.Canceled)):
				t.Fatalf("%s: Cancel reported true, yet it ran %d times and Wait = %v", what, n, err)
			case n == 1 && v != 1:
				t.Fatalf("%s ran, yet Wait = %d, %v", what, v, err)
			case k > 2 || (!r.forks && k != 0) || (r.forks && err == nil && n == 1 && k != 2):
				t.Fatalf("%s: %d of its children ran, Wait = %v", what, k, err)
			case n == 1:
				// A nested one's children are skipped if its context ended, or taken out by
				// StopNow; its Wait then says so. Others return nil.
				if err != nil && !(errors.Is(err, errEnded) && r.ended) && !(errors.Is(err, crew.ErrStopped) && stoppedNow) {
					t.Fatalf("%s ran, yet Wait = %v", what, err)
				}
				if err != nil {
					children += uint64(2 - k)
				}
			case r.canceled, errors.Is(err, errEnded) && r.ended:
				skipped++
			case errors.Is(err, crew.ErrStopped) && stoppedNow:
				// taken out by StopNow, or refused after it
			default:
				t.Fatalf("%s never ran, and Wait = %d, %v", what, v, err)
			}
		}
		ps, ss := p.Stats(), sub.Stats()
		idleIdentity(t, "pool", ps)
		idleIdentity(t, "sub-pool", ss)
		got := ps.Skipped + ss.Skipped
		if (!stoppedNow && got != skipped+children) || got < skipped || got > skipped+children {
			t.Fatalf("Skipped %d + %d, want %d futures and up to %d children (all of them without StopNow)",
				ps.Skipped, ss.Skipped, skipped, children)
		}
	})
}
