package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

// guaranteeShape builds the pool a test acts on: a plain pool, a sub-pool, a sub-pool of a
// sub-pool, and the same with priority levels, so each promise is checked at every depth.
// top is the pool at the root, stopped and waited for when the test ends; the pools above
// p have room for more than p's own limit, so that p's limit is the one that binds.
type guaranteeShape struct {
	name string
	make func(t *testing.T, n int, opts ...crew.Option) (p, top *crew.Pool)
}

var guaranteeShapes = []guaranteeShape{
	{"Pool", func(t *testing.T, n int, opts ...crew.Option) (*crew.Pool, *crew.Pool) {
		p := crew.New(n, opts...)
		t.Cleanup(p.StopAndWait)
		return p, p
	}},
	{"Sub", func(t *testing.T, n int, opts ...crew.Option) (*crew.Pool, *crew.Pool) {
		top := crew.New(n + 2)
		t.Cleanup(top.StopAndWait)
		return top.Sub(n, opts...), top
	}},
	{"SubSub", func(t *testing.T, n int, opts ...crew.Option) (*crew.Pool, *crew.Pool) {
		top := crew.New(n + 2)
		t.Cleanup(top.StopAndWait)
		return top.Sub(n+1).Sub(n, opts...), top
	}},
	{"SubSubPriority", func(t *testing.T, n int, opts ...crew.Option) (*crew.Pool, *crew.Pool) {
		top := crew.New(n + 2)
		t.Cleanup(top.StopAndWait)
		mid := top.Sub(n+1, crew.WithPriority(2))
		return mid.Sub(n, append([]crew.Option{crew.WithPriority(-1)}, opts...)...), top
	}},
}

// forEachShape runs test as a parallel subtest on each of guaranteeShapes.
func forEachShape(t *testing.T, n int, opts []crew.Option, test func(t *testing.T, p, top *crew.Pool)) {
	t.Helper()
	for _, s := range guaranteeShapes {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			p, top := s.make(t, n, opts...)
			test(t, p, top)
		})
	}
}

// holdN submits n tasks to p that block until the returned release is called, and returns
// once all n run. release is also called when the test ends.
func holdN(t *testing.T, p *crew.Pool, n int) (release func()) {
	t.Helper()
	started := make(chan struct{}, n)
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	for range n {
		if err := p.Submit(func() { started <- struct{}{}; <-gate }); err != nil {
			t.Fatalf("Submit of a holding task = %v", err)
		}
	}
	for range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("holding tasks did not start")
		}
	}
	return release
}

// "After Stop, they return ErrStopped and the task never runs." and "Go, Group.Go,
// Results.Go on a stopped pool: the function never runs and Wait returns ErrStopped at
// once." Checked with == (the sentinel itself) for every door, at every depth, and for a
// sub-pool whose parent (not itself) was stopped: "Stopping the parent stops its
// sub-pools."
func TestAdvGuaranteeStoppedRefusesEveryDoor(t *testing.T) {
	for _, stopTop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopTop=%v", stopTop), func(t *testing.T) {
			forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
				if stopTop {
					top.Stop()
				} else {
					p.Stop()
				}
				if !p.Stopped() {
					t.Fatal("Stopped() = false after Stop")
				}
				var ran atomic.Int32
				task := func() { ran.Add(1) }
				if err := p.Submit(task); err != crew.ErrStopped {
					t.Errorf("Submit = %v, want ErrStopped", err)
				}
				if p.TrySubmit(task) {
					t.Error("TrySubmit = true on a stopped pool")
				}
				if err := p.SubmitContext(context.Background(), task); err != crew.ErrStopped {
					t.Errorf("SubmitContext = %v, want ErrStopped", err)
				}
				if err := p.SubmitN(1, task); err != crew.ErrStopped {
					t.Errorf("SubmitN = %v, want ErrStopped", err)
				}
				if p.TrySubmitN(1, task) {
					t.Error("TrySubmitN = true on a stopped pool")
				}
				if err := p.SubmitNContext(context.Background(), 1, task); err != crew.ErrStopped {
					t.Errorf("SubmitNContext = %v, want ErrStopped", err)
				}
				f := crew.Go(p, func() (int, error) { ran.Add(1); return 1, nil })
				select {
				case <-f.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("Go's future on a stopped pool not done")
				}
				if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
					t.Errorf("Go's Wait = %v, want ErrStopped", err)
				}
				fc := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
				if _, err := fc.Wait(); !errors.Is(err, crew.ErrStopped) {
					t.Errorf("GoContext's Wait = %v, want ErrStopped", err)
				}
				g, _ := p.Group(context.Background())
				g.Go(func(context.Context) error { ran.Add(1); return nil })
				if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
					t.Errorf("Group.Wait = %v, want ErrStopped", err)
				}
				ga, _ := p.GroupAll(context.Background())
				ga.Go(func(context.Context) error { ran.Add(1); return nil })
				if err := returnsWithin(t, "GroupAll.Wait", ga.Wait); !errors.Is(err, crew.ErrStopped) {
					t.Errorf("GroupAll.Wait = %v, want ErrStopped", err)
				}
				g2, _ := p.Group(context.Background())
				if g2.TryGo(func(context.Context) error { ran.Add(1); return nil }) {
					t.Error("Group.TryGo = true on a stopped pool")
				}
				r, _ := crew.NewResults[int](context.Background(), p)
				r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
				var rerr error
				awaitReturn(t, "Results.Wait", goRun(func() { _, rerr = r.Wait() }))
				if !errors.Is(rerr, crew.ErrStopped) {
					t.Errorf("Results.Wait = %v, want ErrStopped", rerr)
				}
				_, merr := crew.Map(context.Background(), p, []int{1, 2}, func(context.Context, int) (int, error) { ran.Add(1); return 0, nil })
				if !errors.Is(merr, crew.ErrStopped) {
					t.Errorf("Map = %v, want ErrStopped", merr)
				}
				n := 0
				for _, err := range crew.MapSeq(context.Background(), p, func(yield func(int) bool) { yield(1) }, func(context.Context, int) (int, error) { ran.Add(1); return 0, nil }) {
					n++
					if !errors.Is(err, crew.ErrStopped) {
						t.Errorf("MapSeq yielded %v, want ErrStopped", err)
					}
				}
				if n != 1 {
					t.Errorf("MapSeq on a stopped pool yielded %d times, want once", n)
				}
				k := crew.NewKeyed[int](p)
				if err := k.Submit(1, task); err != crew.ErrStopped {
					t.Errorf("Keyed.Submit = %v, want ErrStopped", err)
				}
				if k.TrySubmit(1, task) {
					t.Error("Keyed.TrySubmit = true on a stopped pool")
				}
				p.Wait()
				k.Wait()
				if ran.Load() != 0 {
					t.Fatalf("%d refused functions ran", ran.Load())
				}
				// "ErrStopped, ErrTooHeavy, ErrNilTask count in neither."
				if s := p.Stats(); s.Rejected != 0 || s.Canceled != 0 || s.Accepted != 0 {
					t.Fatalf("Stats = %+v, want refusals on a stopped pool counted in neither Rejected nor Canceled", s)
				}
			})
		})
	}
}

// "A nil task is rejected with ErrNilTask." and "ErrStopped, ErrTooHeavy, ErrNilTask count
// in neither [Rejected nor Canceled]." "Weighted: ErrTooHeavy when n exceeds the smallest
// limit on the sub-pool's path; n < 1 panics with a message naming the call."
func TestAdvGuaranteeNilTaskAndTooHeavyExactErrors(t *testing.T) {
	forEachShape(t, 3, nil, func(t *testing.T, p, top *crew.Pool) {
		if err := p.Submit(nil); err != crew.ErrNilTask {
			t.Errorf("Submit(nil) = %v, want ErrNilTask", err)
		}
		if err := p.SubmitContext(context.Background(), nil); err != crew.ErrNilTask {
			t.Errorf("SubmitContext(nil) = %v, want ErrNilTask", err)
		}
		if err := p.SubmitN(1, nil); err != crew.ErrNilTask {
			t.Errorf("SubmitN(1, nil) = %v, want ErrNilTask", err)
		}
		if p.TrySubmit(nil) {
			t.Error("TrySubmit(nil) = true")
		}
		if err := p.SubmitN(4, func() {}); err != crew.ErrTooHeavy {
			t.Errorf("SubmitN(4) on a limit of 3 = %v, want ErrTooHeavy", err)
		}
		if err := p.SubmitNContext(context.Background(), 4, func() {}); err != crew.ErrTooHeavy {
			t.Errorf("SubmitNContext(4) on a limit of 3 = %v, want ErrTooHeavy", err)
		}
		if s := p.Stats(); s.Rejected != 0 || s.Canceled != 0 || s.Accepted != 0 {
			t.Fatalf("Stats = %+v, want ErrNilTask/ErrTooHeavy counted nowhere", s)
		}
		for _, n := range []int{0, -1} {
			func() {
				defer func() {
					v := recover()
					if v == nil || !strings.Contains(fmt.Sprint(v), "SubmitN") {
						t.Errorf("SubmitN(%d) panicked with %v, want a message naming SubmitN", n, v)
					}
				}()
				_ = p.SubmitN(n, func() {})
			}()
		}
		if err := p.SubmitN(3, func() {}); err != nil {
			t.Fatalf("SubmitN(3) on a limit of 3 = %v", err)
		}
		p.Wait()
	})
}

// "ErrTooHeavy when n exceeds the smallest limit on the sub-pool's path": the sub-pool's own
// limit is larger than its parent's here, and its grandparent's is the smallest.
func TestAdvGuaranteeTooHeavySmallestLimitOnPath(t *testing.T) {
	top := crew.New(2)
	defer top.StopAndWait()
	mid := top.Sub(5)
	leaf := mid.Sub(8)
	if err := leaf.SubmitN(3, func() {}); err != crew.ErrTooHeavy {
		t.Fatalf("SubmitN(3) under a grandparent of 2 = %v, want ErrTooHeavy", err)
	}
	if leaf.TrySubmitN(3, func() {}) {
		t.Fatal("TrySubmitN(3) under a grandparent of 2 = true")
	}
	var ran atomic.Bool
	if err := leaf.SubmitN(2, func() { ran.Store(true) }); err != nil {
		t.Fatalf("SubmitN(2) = %v", err)
	}
	leaf.Wait()
	if !ran.Load() {
		t.Fatal("the task of weight 2 did not run")
	}
	// After the top shrinks to 1, weight 2 is too heavy on the leaf.
	top.Resize(1)
	if err := leaf.SubmitN(2, func() {}); err != crew.ErrTooHeavy {
		t.Fatalf("SubmitN(2) after the top shrank to 1 = %v, want ErrTooHeavy", err)
	}
}

// "A nil pointer or nil interface passed to Invoke is an argument like any other, not a nil
// task."
func TestAdvGuaranteeInvokeNilArgument(t *testing.T) {
	var got atomic.Int32
	pp := crew.NewFunc(1, func(v *int) {
		if v == nil {
			got.Add(1)
		}
	})
	defer pp.StopAndWait()
	pi := crew.NewFunc(1, func(v any) {
		if v == nil {
			got.Add(1)
		}
	})
	defer pi.StopAndWait()
	pf := crew.NewFunc(1, func(v func()) {
		if v == nil {
			got.Add(1)
		}
	})
	defer pf.StopAndWait()
	if err := pp.Invoke(nil); err != nil {
		t.Fatalf("Invoke(nil *int) = %v", err)
	}
	if !pi.TryInvoke(nil) {
		if err := pi.Invoke(nil); err != nil {
			t.Fatalf("Invoke(nil any) = %v", err)
		}
	}
	if err := pf.InvokeContext(context.Background(), nil); err != nil {
		t.Fatalf("InvokeContext(nil func()) = %v", err)
	}
	pp.Wait()
	pi.Wait()
	pf.Wait()
	if got.Load() != 3 {
		t.Fatalf("fn got a nil argument %d times, want 3", got.Load())
	}
}

// "WithQueueSize(n): n accepted tasks may wait for a worker; with every worker busy, the
// n+1-th blocks (or is rejected with WithNonBlocking)." and "Rejected counts at least every
// ErrQueueFull/false from a full queue", "every refused submit counts in exactly one of
// Rejected ... and Canceled".
func TestAdvGuaranteeQueueSizeExactBound(t *testing.T) {
	const workers, queued = 2, 3
	forEachShape(t, workers, []crew.Option{crew.WithQueueSize(queued), crew.WithNonBlocking()}, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, workers)
		for i := range queued {
			if err := p.Submit(func() {}); err != nil {
				t.Fatalf("submit %d of %d into the queue = %v", i+1, queued, err)
			}
		}
		if err := p.Submit(func() {}); err != crew.ErrQueueFull {
			t.Fatalf("the n+1-th Submit = %v, want ErrQueueFull", err)
		}
		if p.TrySubmit(func() {}) {
			t.Fatal("TrySubmit on a full queue = true")
		}
		if err := p.SubmitContext(context.Background(), func() {}); err != crew.ErrQueueFull {
			t.Fatalf("SubmitContext on a full queue = %v, want ErrQueueFull", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.SubmitContext(ctx, func() {}); !errors.Is(err, context.Canceled) {
			t.Fatalf("SubmitContext with a done ctx = %v, want context.Canceled", err)
		}
		s := p.Stats()
		if s.Rejected != 3 || s.Canceled != 1 {
			t.Fatalf("Stats = %+v, want Rejected 3 and Canceled 1", s)
		}
		if s.Waiting != queued || s.Running != workers || s.Accepted != workers+queued {
			t.Fatalf("Stats = %+v, want Waiting %d, Running %d, Accepted %d", s, queued, workers, workers+queued)
		}
		release()
		p.Wait()
		s = p.Stats()
		if s.Completed != workers+queued || s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("Stats after Wait = %+v", s)
		}
	})
}

// "WithQueueSize(n): ... the n+1-th blocks" and "Stop while submitters are blocked on a full
// queue: they return promptly with ErrStopped." and the sub-pool form: the parent's Stop
// reaches a submitter blocked on a sub-pool's full queue.
func TestAdvGuaranteeBlockedSubmitterStopped(t *testing.T) {
	for _, stopTop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopTop=%v", stopTop), func(t *testing.T) {
			forEachShape(t, 1, []crew.Option{crew.WithQueueSize(1)}, func(t *testing.T, p, top *crew.Pool) {
				release := holdN(t, p, 1)
				var ran atomic.Int32
				if err := p.Submit(func() { ran.Add(1) }); err != nil {
					t.Fatal(err)
				}
				var err error
				done := goRun(func() { err = p.Submit(func() { ran.Add(100) }) })
				stillBlocked(t, "the n+1-th Submit", done)
				if stopTop {
					top.Stop()
				} else {
					p.Stop()
				}
				awaitReturn(t, "blocked Submit after Stop", done)
				if err != crew.ErrStopped {
					t.Fatalf("blocked Submit after Stop = %v, want ErrStopped", err)
				}
				release()
				top.StopAndWait()
				if ran.Load() != 1 {
					t.Fatalf("ran = %d, want the accepted task once and the refused one never", ran.Load())
				}
			})
		})
	}
}

// "StopNow stops accepting before it empties the queue: a submitter blocked on a full queue
// when it is called gets ErrStopped, never a nil whose task is then handed back."
func TestAdvGuaranteeStopNowBlockedSubmitter(t *testing.T) {
	for _, stopTop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopTop=%v", stopTop), func(t *testing.T) {
			forEachShape(t, 1, []crew.Option{crew.WithQueueSize(1)}, func(t *testing.T, p, top *crew.Pool) {
				release := holdN(t, p, 1)
				queuedTask := func() {}
				if err := p.Submit(queuedTask); err != nil {
					t.Fatal(err)
				}
				const blocked = 4
				errs := make([]error, blocked)
				var wg sync.WaitGroup
				for i := range blocked {
					wg.Add(1)
					go func() { defer wg.Done(); errs[i] = p.Submit(func() {}) }()
				}
				waitFor(t, "submitters to block", func() bool { return crew.BlockedSubmitters(p) == blocked })
				var back []func()
				if stopTop {
					back = top.StopNow()
				} else {
					back = p.StopNow()
				}
				awaitReturn(t, "blocked submitters", goRun(wg.Wait))
				for i, err := range errs {
					if err != crew.ErrStopped {
						t.Errorf("blocked submitter %d = %v, want ErrStopped", i, err)
					}
				}
				if len(back) != 1 {
					t.Fatalf("StopNow handed back %d tasks, want the 1 queued", len(back))
				}
				release()
				top.StopAndWait()
				s := p.Stats()
				if s.Returned != 1 || s.Accepted != 2 || s.Completed != 1 {
					t.Fatalf("Stats = %+v, want Accepted 2 = Completed 1 + Returned 1", s)
				}
			})
		})
	}
}

// "StopNow returns plain tasks only, in the order they would have started (a parent's
// includes its sub-pools' and keyed tasks)" and the doc: "the pool's queue in its order,
// where a sub-pool's worker waiting there stands for the task it carries, then the queues of
// its sub-pools, a parent's before its sub-pools'". The sub-pool of a sub-pool submitted
// first: its worker, carried by the sub-pool's worker, waits at the head of top's queue with
// subsub0.
func TestAdvGuaranteeStopNowOrderAcrossDepths(t *testing.T) {
	top := crew.New(1)
	t.Cleanup(top.StopAndWait)
	release := holdN(t, top, 1)
	sub := top.Sub(1)
	subsub := sub.Sub(1)
	var order []string
	mk := func(name string) func() { return func() { order = append(order, name) } }
	for i := range 3 {
		must(t, subsub.Submit(mk(fmt.Sprintf("subsub%d", i))))
		must(t, sub.Submit(mk(fmt.Sprintf("sub%d", i))))
		must(t, top.Submit(mk(fmt.Sprintf("top%d", i))))
	}
	back := top.StopNow()
	if len(back) != 9 {
		t.Fatalf("StopNow handed back %d tasks, want 9", len(back))
	}
	for _, f := range back {
		f()
	}
	want := []string{"subsub0", "top0", "top1", "top2", "sub0", "sub1", "sub2", "subsub1", "subsub2"}
	if !slices.Equal(order, want) {
		t.Fatalf("StopNow order %v, want %v", order, want)
	}
	release()
	top.StopAndWait()
	// top counts the sub-pool's worker that waited in its queue as one more task, taken out
	// with its own three (Pool.Sub: a parent counts a sub-pool's worker as one task).
	if s := top.Stats(); s.Returned != 4 || s.Accepted != s.Completed+s.Returned {
		t.Fatalf("top Stats = %+v, want Returned 4: its own three and the sub-pool's worker", s)
	}
	if s := sub.Stats(); s.Returned != 4 || s.Accepted != 4 {
		t.Fatalf("sub Stats = %+v, want Accepted 4 = Returned 4: its own three and subsub's worker", s)
	}
	if s := subsub.Stats(); s.Returned != 3 || s.Accepted != 3 {
		t.Fatalf("subsub Stats = %+v, want Accepted 3 = Returned 3", s)
	}
}

// "All methods are safe for concurrent use; a second Stop is a no-op, never a panic." and
// for every method after Stop/StopNow/StopAndWait/Shutdown: none panics or hangs, and none
// lets a task run.
func TestAdvGuaranteeEveryMethodAfterEveryStop(t *testing.T) {
	stops := []struct {
		name string
		stop func(p *crew.Pool)
	}{
		{"Stop", (*crew.Pool).Stop},
		{"StopAndWait", (*crew.Pool).StopAndWait},
		{"StopNow", func(p *crew.Pool) { p.StopNow() }},
		{"Shutdown", func(p *crew.Pool) { _ = p.Shutdown(context.Background()) }},
		{"ShutdownDone", func(p *crew.Pool) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = p.Shutdown(ctx)
		}},
	}
	for _, st := range stops {
		t.Run(st.name, func(t *testing.T) {
			forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
				st.stop(p)
				var ran atomic.Int32
				done := goRun(func() {
					for _, s2 := range stops {
						s2.stop(p)
					}
					p.Pause()
					p.Resume()
					if err := p.PauseAndWait(context.Background()); err != nil {
						t.Errorf("PauseAndWait on a stopped idle pool = %v", err)
					}
					p.Resume()
					p.Resize(3)
					p.SetRateLimit(10, 1)
					p.Wait()
					_ = p.Stats()
					if err := p.Submit(func() { ran.Add(1) }); err != crew.ErrStopped {
						t.Errorf("Submit after %s = %v", st.name, err)
					}
					if back := p.StopNow(); len(back) != 0 {
						t.Errorf("StopNow on a stopped idle pool handed back %d", len(back))
					}
					sub := p.Sub(1)
					if !sub.Stopped() {
						t.Error("a sub-pool made on a stopped pool accepts tasks")
					}
					if err := sub.Submit(func() { ran.Add(1) }); err != crew.ErrStopped {
						t.Errorf("Submit on a sub-pool of a stopped pool = %v, want ErrStopped", err)
					}
					sub.StopAndWait()
				})
				awaitReturn(t, "methods after "+st.name, done)
				if ran.Load() != 0 {
					t.Fatalf("%d tasks ran after %s", ran.Load(), st.name)
				}
			})
		})
	}
}

// "Calling Stop, Stats, TrySubmit or growing Resize from inside a task never deadlocks." At
// every depth, with a limit of 1 (the task holds the only slot).
func TestAdvGuaranteeCallsFromInsideTask(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		var inner atomic.Int32
		done := make(chan struct{})
		must(t, p.Submit(func() {
			defer close(done)
			_ = p.Stats()
			_ = top.Stats()
			if !p.TrySubmit(func() { inner.Add(1) }) {
				t.Error("TrySubmit from a task refused")
			}
			p.Resize(2)
			p.Pause()
			p.Resume()
			p.SetRateLimit(1000, 10)
			p.Stop()
			p.Stop()
		}))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a task calling Stats/TrySubmit/Resize/Stop did not return")
		}
		top.StopAndWait()
		if inner.Load() != 1 {
			t.Fatalf("the task TrySubmit accepted ran %d times, want once", inner.Load())
		}
	})
}

// "PanicError.Error() includes the panic value; its Stack (and the stack given to the panic
// handler) includes the frame that panicked."
func TestAdvGuaranteePanicValueAndFrame(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		f := crew.Go(p, advGuaranteePanicsInGo)
		_, err := f.Wait()
		var pe *crew.PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("Go's Wait = %v, want a *PanicError", err)
		}
		if !strings.Contains(pe.Error(), "advGuaranteeValue-7319") {
			t.Errorf("PanicError.Error() = %q, want it to include the value", pe.Error())
		}
		if !strings.Contains(string(pe.Stack), "advGuaranteePanicsInGo") {
			t.Errorf("PanicError.Stack lacks the panicking frame:\n%s", pe.Stack)
		}
		g, _ := p.Group(context.Background())
		g.Go(func(context.Context) error { advGuaranteePanicsPlain(); return nil })
		if err := g.Wait(); !errors.As(err, &pe) || !strings.Contains(string(pe.Stack), "advGuaranteePanicsPlain") {
			t.Errorf("Group.Wait = %v, want a *PanicError whose stack has the panicking frame", err)
		}
		// An error value: Unwrap gives it.
		sentinel := errors.New("sentinel-5521")
		f2 := crew.Go(p, func() (int, error) { panic(sentinel) })
		if _, err := f2.Wait(); !errors.Is(err, sentinel) {
			t.Errorf("a panic with an error value: Wait = %v, want errors.Is the value", err)
		}
	})
	// The panic handler's stack, on a sub-pool of a sub-pool: by default its parent's handler.
	var stack atomic.Value
	var value atomic.Value
	top := crew.New(2, crew.WithPanicHandler(func(v any, s []byte) { value.Store(fmt.Sprint(v)); stack.Store(string(s)) }))
	defer top.StopAndWait()
	leaf := top.Sub(1).Sub(1)
	must(t, leaf.Submit(advGuaranteePanicsPlain))
	leaf.Wait()
	top.Wait()
	if s, _ := stack.Load().(string); !strings.Contains(s, "advGuaranteePanicsPlain") {
		t.Errorf("the handler's stack lacks the panicking frame:\n%s", s)
	}
	if v, _ := value.Load().(string); !strings.Contains(v, "advGuaranteeValue-7319") {
		t.Errorf("the handler got %q, want the panic value", v)
	}
	if s := leaf.Stats(); s.Panicked != 1 || s.Completed != 0 || s.Accepted != 1 {
		t.Errorf("leaf Stats = %+v, want Panicked 1", s)
	}
}

//go:noinline
func advGuaranteePanicsInGo() (int, error) { panic("advGuaranteeValue-7319") }

//go:noinline
func advGuaranteePanicsPlain() { panic("advGuaranteeValue-7319") }

// "func (p *FuncPool[T]) Invoke(arg T) error // zero allocations per call in steady state"
func TestAdvGuaranteeInvokeZeroAllocs(t *testing.T) {
	if racetest.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	var n atomic.Int64
	p := crew.NewFunc(2, func(v int) { n.Add(int64(v)) })
	defer p.StopAndWait()
	for range 1000 {
		_ = p.Invoke(1)
	}
	p.Wait()
	allocs := testing.AllocsPerRun(2000, func() {
		if err := p.Invoke(1); err != nil {
			t.Fatal(err)
		}
	})
	p.Wait()
	if allocs != 0 {
		t.Fatalf("Invoke allocates %.2f per call in steady state, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(2000, func() { _ = p.TryInvoke(1) })
	p.Wait()
	if allocs != 0 {
		t.Fatalf("TryInvoke allocates %.2f per call in steady state, want 0", allocs)
	}
}

// "No task starts after Pause returns", "a parent's Pause holds its sub-pools' starts",
// "submits on a paused pool are accepted; Wait waits for paused work", "Pause is
// idempotent; PauseAndWait whose ctx ends returns ctx.Err() and stays paused", and the
// Stats doc: "a sub-pool held back by its parent's pause reports false".
func TestAdvGuaranteePauseHoldsEveryDepth(t *testing.T) {
	forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, 1)
		top.Pause()
		top.Pause()
		if !top.Stats().Paused {
			t.Fatal("top Stats.Paused = false after Pause")
		}
		if p != top && p.Stats().Paused {
			t.Fatal("a sub-pool held by its parent's pause reports Paused")
		}
		var ran atomic.Int32
		for range 3 {
			if err := p.Submit(func() { ran.Add(1) }); err != nil {
				t.Fatalf("Submit on a paused pool = %v, want accepted", err)
			}
		}
		f := crew.Go(p, func() (int, error) { ran.Add(1); return 0, nil })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := top.PauseAndWait(ctx); err != context.Canceled {
			t.Fatalf("PauseAndWait with an ended ctx while a task runs = %v, want context.Canceled", err)
		}
		release()
		waitFor(t, "the held task to end", func() bool { return p.Stats().Running == 0 })
		waitDone := goRun(p.Wait)
		stillBlocked(t, "Wait on paused work", waitDone)
		if ran.Load() != 0 {
			t.Fatalf("%d tasks started on a paused pool", ran.Load())
		}
		if !top.Stats().Paused {
			t.Fatal("a PauseAndWait whose ctx ended left the pool unpaused")
		}
		if s := p.Stats(); s.Waiting != 4 || s.Running != 0 {
			t.Fatalf("Stats = %+v, want 4 Waiting on a paused pool", s)
		}
		top.Resume()
		awaitReturn(t, "Wait after Resume", waitDone)
		if _, err := f.Wait(); err != nil || ran.Load() != 4 {
			t.Fatalf("after Resume: future %v, ran %d, want 4", err, ran.Load())
		}
	})
}

// "Stop, StopAndWait and Shutdown resume (exactly once holds)": a paused backlog, at every
// depth, runs once each of them is called on the paused pool.
func TestAdvGuaranteeStopResumesPausedBacklog(t *testing.T) {
	stops := []struct {
		name string
		stop func(p *crew.Pool)
	}{
		{"Stop", func(p *crew.Pool) { p.Stop(); p.Wait() }},
		{"StopAndWait", (*crew.Pool).StopAndWait},
		{"Shutdown", func(p *crew.Pool) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				panic(err)
			}
		}},
	}
	for _, st := range stops {
		t.Run(st.name, func(t *testing.T) {
			forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
				p.Pause()
				var ran atomic.Int32
				for range 5 {
					must(t, p.Submit(func() { ran.Add(1) }))
				}
				awaitReturn(t, st.name+" of a paused pool", goRun(func() { st.stop(p) }))
				if ran.Load() != 5 {
					t.Fatalf("%s of a paused pool: %d of 5 tasks ran", st.name, ran.Load())
				}
				if s := p.Stats(); s.Completed != 5 || s.Paused {
					t.Fatalf("Stats = %+v", s)
				}
			})
		})
	}
}

// "Priorities: when a worker takes a task, no task of a higher level is waiting; FIFO within
// a level"; "WithPriority holds at every start, also after Resume and with a parent of any
// size"; "the parent's own tasks and a Sub without WithPriority are level 0"; levels may be
// negative. One worker, so the starts form one sequence.
func TestAdvGuaranteePriorityOrderAfterResume(t *testing.T) {
	for _, nested := range []bool{false, true} {
		t.Run(fmt.Sprintf("nested=%v", nested), func(t *testing.T) {
			top := crew.New(1)
			t.Cleanup(top.StopAndWait)
			mk := func(level int) *crew.Pool {
				s := top.Sub(1, crew.WithPriority(level))
				if nested {
					return s.Sub(1)
				}
				return s
			}
			hi, mid, plain, lo := mk(5), mk(1), top.Sub(1), mk(-3)
			var mu sync.Mutex
			var order []string
			rec := func(name string) func() {
				return func() { mu.Lock(); order = append(order, name); mu.Unlock() }
			}
			top.Pause()
			for i := range 3 {
				must(t, lo.Submit(rec(fmt.Sprint("lo", i))))
				must(t, top.Submit(rec(fmt.Sprint("own", i))))
				must(t, plain.Submit(rec(fmt.Sprint("plain", i))))
				must(t, mid.Submit(rec(fmt.Sprint("mid", i))))
				must(t, hi.Submit(rec(fmt.Sprint("hi", i))))
			}
			top.Resume()
			top.Wait()
			hi.Wait()
			mid.Wait()
			plain.Wait()
			lo.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(order) != 15 {
				t.Fatalf("%d tasks ran, want 15: %v", len(order), order)
			}
			level := func(name string) int {
				switch {
				case strings.HasPrefix(name, "hi"):
					return 5
				case strings.HasPrefix(name, "mid"):
					return 1
				case strings.HasPrefix(name, "lo"):
					return -3
				}
				return 0
			}
			for i := 1; i < len(order); i++ {
				if level(order[i]) > level(order[i-1]) {
					t.Fatalf("start order %v: %s started after %s of a lower level", order, order[i], order[i-1])
				}
			}
			last := map[string]int{}
			for _, name := range order {
				k, n := name[:len(name)-1], int(name[len(name)-1]-'0')
				if prev, ok := last[k]; ok && prev > n {
					t.Fatalf("start order %v: %s not FIFO", order, k)
				}
				last[k] = n
			}
		})
	}
}

// "after a parent's shrinking Resize returns, no task of any sub-pool starts while the
// parent runs its new limit or more."
func TestAdvGuaranteeShrinkHoldsSubSubStarts(t *testing.T) {
	top := crew.New(4)
	t.Cleanup(top.StopAndWait)
	leaf := top.Sub(4).Sub(4, crew.WithPriority(1))
	var running atomic.Int32
	var over atomic.Int32
	gate := make(chan struct{})
	started := make(chan struct{}, 4)
	for range 4 {
		must(t, top.Submit(func() {
			running.Add(1)
			started <- struct{}{}
			<-gate
			running.Add(-1)
		}))
	}
	for range 4 {
		<-started
	}
	for range 8 {
		must(t, leaf.Submit(func() {
			if running.Add(1) > 2 {
				over.Add(1)
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
		}))
	}
	top.Resize(2)
	if s := top.Stats(); s.MaxWorkers != 2 {
		t.Fatalf("Stats.MaxWorkers = %d after Resize(2)", s.MaxWorkers)
	}
	close(gate)
	leaf.Wait()
	top.Wait()
	if over.Load() != 0 {
		t.Fatalf("%d sub-sub-pool tasks started while the parent ran its new limit of 2 or more", over.Load())
	}
}

// "Growing starts queued tasks without a new submit." At every depth, the growth being of p
// itself.
func TestAdvGuaranteeGrowStartsQueued(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, 1)
		started := make(chan struct{}, 1)
		must(t, p.Submit(func() { started <- struct{}{} }))
		time.Sleep(20 * time.Millisecond)
		if len(started) != 0 {
			t.Fatal("a task started past a held limit of 1")
		}
		p.Resize(2)
		if p.Stats().MaxWorkers != 2 {
			t.Fatalf("MaxWorkers = %d after Resize(2)", p.Stats().MaxWorkers)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("growing Resize did not start the queued task")
		}
		release()
	})
}

// "Every task counts once in Accepted and ends in exactly one of Completed, Panicked,
// Discarded, Returned or Skipped; once a pool is idle, Accepted equals their sum." Every
// ending at once, at every depth.
func TestAdvGuaranteeAcceptedEqualsEndings(t *testing.T) {
	forEachShape(t, 1, []crew.Option{crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest),
		crew.WithPanicHandler(func(any, []byte) {})}, func(t *testing.T, p, top *crew.Pool) {
		must(t, p.Submit(func() {}))
		must(t, p.Submit(func() { panic("x") }))
		p.Wait()
		release := holdN(t, p, 1)
		dead, cancel := context.WithCancel(context.Background())
		fSkip := crew.GoContext(dead, p, func(context.Context) (int, error) { return 0, nil })
		fCancel := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 0, nil })
		must(t, p.Submit(func() {}))
		cancel()
		if !fCancel.Cancel() {
			t.Fatal("Cancel of a queued future = false")
		}
		must(t, p.Submit(func() {})) // drops the oldest: fSkip's function
		must(t, p.Submit(func() {})) // drops fCancel's place, or the plain task
		back := p.StopNow()
		release()
		top.StopAndWait()
		s := p.Stats()
		sum := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
		if s.Accepted != sum || s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("idle Stats = %+v: Accepted %d, sum of endings %d (handed back %d)", s, s.Accepted, sum, len(back))
		}
		if s.Completed != 2 || s.Panicked != 1 || s.Discarded == 0 {
			t.Fatalf("Stats = %+v", s)
		}
		if _, err := fSkip.Wait(); err == nil {
			t.Fatal("a dropped future's Wait = nil")
		}
	})
}

// "Future.Cancel ... true: it had not started and never will; Wait returns
// context.Canceled"; "A canceled future counts in Skipped"; a second Cancel reports false;
// "a Cancel racing with the start is decided once".
func TestAdvGuaranteeFutureCancelExact(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, 1)
		var ran atomic.Bool
		f := crew.Go(p, func() (int, error) { ran.Store(true); return 1, nil })
		if !f.Cancel() {
			t.Fatal("Cancel of a queued future = false")
		}
		if f.Cancel() {
			t.Fatal("a second Cancel = true")
		}
		select {
		case <-f.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a canceled future's Done not closed at once")
		}
		if _, err := f.Wait(); err != context.Canceled {
			t.Fatalf("Wait of a canceled future = %v, want context.Canceled", err)
		}
		release()
		p.Wait()
		if ran.Load() {
			t.Fatal("a canceled future's function ran")
		}
		if s := p.Stats(); s.Skipped != 1 || s.Completed != 1 || s.Accepted != 2 {
			t.Fatalf("Stats = %+v, want the canceled future in Skipped", s)
		}
		// Racing with the start.
		n := 200
		if testing.Short() {
			n = 50
		}
		for i := range n {
			var ran atomic.Int32
			f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return i, nil })
			if i%2 == 0 {
				runtime.Gosched()
			}
			c := f.Cancel()
			v, err := f.Wait()
			p.Wait()
			if c && (ran.Load() != 0 || err != context.Canceled) {
				t.Fatalf("Cancel = true but ran %d, Wait err %v", ran.Load(), err)
			}
			if !c && (ran.Load() != 1 || err != nil || v != i) {
				t.Fatalf("Cancel = false but ran %d, Wait = %v, %v", ran.Load(), v, err)
			}
		}
	})
}

// "a function given with a context ... whose context has ended before a worker takes it
// never runs; it is counted in Stats.Skipped, gets no Started or Finished hook, and its
// future, group or map sees context.Cause of that context."
func TestAdvGuaranteeSkippedSeesCause(t *testing.T) {
	cause := errors.New("advGuaranteeCause")
	for _, shape := range guaranteeShapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			var started, finished atomic.Int32
			hooks := crew.WithHooks(crew.Hooks{
				Started:  func(crew.TaskInfo) { started.Add(1) },
				Finished: func(crew.TaskInfo) { finished.Add(1) },
			})
			p, _ := shape.make(t, 1, hooks)
			release := holdN(t, p, 1)
			ctx, cancel := context.WithCancelCause(context.Background())
			var ran atomic.Int32
			fn := func(context.Context) (int, error) { ran.Add(1); return 0, nil }
			f1 := crew.GoContext(ctx, p, fn)
			g, _ := p.GroupAll(ctx)
			g.Go(func(context.Context) error { ran.Add(1); return nil })
			r, _ := crew.NewResults[int](ctx, p)
			r.Go(fn)
			mapErr := make(chan error, 1)
			go func() {
				_, err := crew.Map(ctx, p, []int{1}, func(c context.Context, _ int) (int, error) { return fn(c) })
				mapErr <- err
			}()
			waitFor(t, "the functions to queue", func() bool { return p.Stats().Waiting == 4 })
			cancel(cause)
			release()
			if _, err := f1.Wait(); err != cause {
				t.Errorf("GoContext Wait = %v, want the cause", err)
			}
			if err := g.Wait(); !errors.Is(err, cause) {
				t.Errorf("GroupAll Wait = %v, want the cause", err)
			}
			if _, err := r.Wait(); !errors.Is(err, cause) {
				t.Errorf("Results Wait = %v, want the cause", err)
			}
			select {
			case err := <-mapErr:
				if !errors.Is(err, cause) {
					t.Errorf("Map = %v, want the cause", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Map did not return")
			}
			p.Wait()
			if ran.Load() != 0 {
				t.Fatalf("%d skipped functions ran", ran.Load())
			}
			if s := p.Stats(); s.Skipped != 4 || s.Accepted != 5 || s.Completed != 1 {
				t.Fatalf("Stats = %+v, want Skipped 4, Completed 1", s)
			}
			if started.Load() != 1 || finished.Load() != 1 {
				t.Fatalf("hooks: Started %d, Finished %d; want only the held task's", started.Load(), finished.Load())
			}
		})
	}
}

// "A parent's Running and Waiting include its sub-pools' tasks." (Details the contract
// relies on.) Pool.Sub's doc argues the difference for Waiting: a parent's Running includes
// its sub-pools' running tasks, but its Waiting counts a sub-pool with tasks queued as the one
// worker it waits with in the parent's queue; a tree's backlog is the sum of its pools'
// Waiting.
func TestAdvGuaranteeParentCountsSubPoolTasks(t *testing.T) {
	top := crew.New(1)
	t.Cleanup(top.StopAndWait)
	sub := top.Sub(1)
	leaf := sub.Sub(1)
	release := holdN(t, leaf, 1)
	for range 3 {
		must(t, leaf.Submit(func() {}))
	}
	for range 2 {
		must(t, sub.Submit(func() {}))
	}
	ls, ss, ts := leaf.Stats(), sub.Stats(), top.Stats()
	if ls.Running != 1 || ss.Running != 1 || ts.Running != 1 {
		t.Fatalf("Running: leaf %d, sub %d, top %d; want 1 each (the leaf's task)", ls.Running, ss.Running, ts.Running)
	}
	if ls.Waiting != 3 || ss.Waiting != 2 || ts.Waiting != 0 {
		t.Fatalf("Waiting: leaf %d, sub %d, top %d; want 3, 2, 0 (each pool's own queue)", ls.Waiting, ss.Waiting, ts.Waiting)
	}
	release()
	top.StopAndWait()
	for name, s := range map[string]crew.Stats{"leaf": leaf.Stats(), "sub": sub.Stats(), "top": top.Stats()} {
		if s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("%s after StopAndWait: %+v", name, s)
		}
	}
}

// "Shutdown(ctx), when ctx ends before the pool has drained: queued functions with a context
// are skipped, and the contexts crew passed to running functions are canceled with cause
// ErrStopped; Shutdown returns ctx.Err() as now. Plain tasks still run." At every depth,
// the Shutdown being the top's.
func TestAdvGuaranteeShutdownGivesUp(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		running := make(chan struct{})
		var runningCause error
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			close(running)
			<-ctx.Done()
			runningCause = context.Cause(ctx)
			return 0, ctx.Err()
		})
		<-running
		var queuedRan, plainRan atomic.Int32
		fq := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { queuedRan.Add(1); return 0, nil })
		g, _ := p.Group(context.Background())
		g.Go(func(context.Context) error { queuedRan.Add(1); return nil })
		must(t, p.Submit(func() { plainRan.Add(1) }))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := top.Shutdown(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
		}
		if _, err := fq.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("a queued future after a giving-up Shutdown = %v, want ErrStopped", err)
		}
		if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("a queued group after a giving-up Shutdown = %v, want ErrStopped", err)
		}
		if _, err := f.Wait(); err == nil {
			t.Error("the running function's Wait = nil")
		}
		if !errors.Is(runningCause, crew.ErrStopped) {
			t.Errorf("the running function's context cause = %v, want ErrStopped", runningCause)
		}
		top.StopAndWait()
		if queuedRan.Load() != 0 || plainRan.Load() != 1 {
			t.Fatalf("after Shutdown gave up: %d queued functions ran (want 0), plain task ran %d (want 1)", queuedRan.Load(), plainRan.Load())
		}
		if s := p.Stats(); s.Skipped != 2 || s.Completed != 2 || s.Accepted != 4 {
			t.Fatalf("Stats = %+v, want Skipped 2, Completed 2", s)
		}
	})
}

// "WithTaskTimeout(d) gives every context crew passes to a function a deadline d after that
// function's start (the cause says so)." A sub-pool has its parent's task timeout.
func TestAdvGuaranteeTaskTimeoutCause(t *testing.T) {
	top := crew.New(2, crew.WithTaskTimeout(20*time.Millisecond))
	t.Cleanup(top.StopAndWait)
	leaf := top.Sub(1).Sub(1, crew.WithPriority(1))
	for _, p := range []*crew.Pool{top, leaf} {
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			dl, ok := ctx.Deadline()
			if !ok {
				return 0, errors.New("no deadline")
			}
			if d := dl.Sub(start); d > 20*time.Millisecond {
				return 0, fmt.Errorf("deadline %v after the start, want at most 20ms", d)
			}
			<-ctx.Done()
			c := context.Cause(ctx)
			if !errors.Is(c, crew.ErrTaskTimeout) || !errors.Is(c, context.DeadlineExceeded) {
				return 0, fmt.Errorf("cause %v", c)
			}
			if !strings.Contains(c.Error(), "20ms") {
				return 0, fmt.Errorf("cause %q does not name the timeout", c)
			}
			return 1, nil
		})
		if v, err := f.Wait(); err != nil || v != 1 {
			t.Fatalf("GoContext under WithTaskTimeout: %v, %v", v, err)
		}
	}
}

// "Several WithHooks options all apply, in the order given; none replaces another." and
// "Hooks see every task of the pool whatever the door it came through ... Keyed (one
// Queued/Started/Finished per keyed task, not per turn)". On a sub-pool of a sub-pool.
func TestAdvGuaranteeHooksEveryDoorInOrder(t *testing.T) {
	var mu sync.Mutex
	var seq []string
	var queued, started, finished atomic.Int32
	h := func(name string) crew.Hooks {
		return crew.Hooks{
			Queued: func(crew.TaskInfo) {
				if name == "a" {
					queued.Add(1)
				}
				mu.Lock()
				seq = append(seq, name)
				mu.Unlock()
			},
			Started: func(crew.TaskInfo) {
				if name == "a" {
					started.Add(1)
				}
			},
			Finished: func(crew.TaskInfo) {
				if name == "a" {
					finished.Add(1)
				}
			},
		}
	}
	top := crew.New(3)
	t.Cleanup(top.StopAndWait)
	p := top.Sub(3).Sub(2, crew.WithHooks(h("a")), crew.WithHooks(h("b")), crew.WithHooks(h("c")))
	ctx := context.Background()
	must(t, p.Submit(func() {}))
	must(t, p.SubmitN(2, func() {}))
	_, _ = crew.Go(p, func() (int, error) { return 0, nil }).Wait()
	_, _ = crew.GoContext(ctx, p, func(context.Context) (int, error) { return 0, nil }).Wait()
	g, _ := p.Group(ctx)
	g.Go(func(context.Context) error { return nil })
	_ = g.Wait()
	r, _ := crew.NewResults[int](ctx, p)
	r.Go(func(context.Context) (int, error) { return 0, nil })
	_, _ = r.Wait()
	_, _ = crew.Map(ctx, p, []int{1, 2}, func(context.Context, int) (int, error) { return 0, nil })
	_ = crew.ForEach(ctx, p, func(yield func(int) bool) { yield(1) }, func(context.Context, int) error { return nil })
	for range crew.MapSeq(ctx, p, func(yield func(int) bool) { yield(1) }, func(context.Context, int) (int, error) { return 0, nil }) {
	}
	k := crew.NewKeyed[int](p)
	for range 4 {
		must(t, k.Submit(7, func() {}))
	}
	k.Wait()
	p.Wait()
	const want = 2 + 1 + 1 + 1 + 1 + 2 + 1 + 1 + 4
	if queued.Load() != want || started.Load() != want || finished.Load() != want {
		t.Fatalf("hooks saw Queued %d, Started %d, Finished %d; want %d each", queued.Load(), started.Load(), finished.Load(), want)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i+2 < len(seq); i += 3 {
		if seq[i] != "a" || seq[i+1] != "b" || seq[i+2] != "c" {
			t.Fatalf("Queued hooks called in order %v, want a, b, c for each task", seq)
		}
	}
	if len(seq) != 3*want {
		t.Fatalf("%d Queued calls over 3 options, want %d", len(seq), 3*want)
	}
}

// Keyed.Stats: "the keyed tasks themselves: Accepted, Waiting, Running, Completed, ... per
// task, not per turn", and Keyed: "tasks with one key run one at a time, in the order their
// submits took effect", here across a parent's Pause/Resume, on a sub-pool of a sub-pool.
func TestAdvGuaranteeKeyedStatsAndOrderAcrossPause(t *testing.T) {
	top := crew.New(3)
	t.Cleanup(top.StopAndWait)
	p := top.Sub(3, crew.WithPriority(1)).Sub(3)
	k := crew.NewKeyed[string](p)
	top.Pause()
	var mu sync.Mutex
	got := map[string][]int{}
	var inKey [2]atomic.Int32
	var overlap atomic.Bool
	keys := []string{"a", "b"}
	for i := range 10 {
		for ki, key := range keys {
			must(t, k.Submit(key, func() {
				if inKey[ki].Add(1) != 1 {
					overlap.Store(true)
				}
				mu.Lock()
				got[key] = append(got[key], i)
				mu.Unlock()
				inKey[ki].Add(-1)
			}))
		}
	}
	// "MaxWorkers and Paused are the pool's": p's, which its parent's pause does not mark.
	if s := k.Stats(); s.Accepted != 20 || s.Waiting != 20 || s.Running != 0 || s.Paused != p.Stats().Paused || s.MaxWorkers != 3 {
		t.Fatalf("Keyed Stats on a paused pool = %+v, want Accepted 20 = Waiting 20", s)
	}
	top.Resume()
	k.Wait()
	if overlap.Load() {
		t.Fatal("two tasks of one key ran at once")
	}
	for _, key := range keys {
		for i, v := range got[key] {
			if v != i {
				t.Fatalf("key %s ran in order %v", key, got[key])
			}
		}
	}
	if s := k.Stats(); s.Accepted != 20 || s.Completed != 20 || s.Waiting != 0 || s.Running != 0 {
		t.Fatalf("Keyed Stats after Wait = %+v, want Accepted 20 = Completed 20", s)
	}
}

// The package doc: "Misuse panics at the call, with a message that names it: every method of
// a nil *Pool or *FuncPool ("crew: Submit: nil *Pool"), and every call that takes a context
// when given a nil one ("crew: Map: ctx must not be nil")".
func TestAdvGuaranteeNilReceiverAndNilContextMessages(t *testing.T) {
	var p *crew.Pool
	var fp *crew.FuncPool[int]
	calls := []struct {
		name string
		call func()
	}{
		{"Submit", func() { _ = p.Submit(func() {}) }},
		{"TrySubmit", func() { p.TrySubmit(func() {}) }},
		{"Wait", func() { p.Wait() }},
		{"Stop", func() { p.Stop() }},
		{"StopAndWait", func() { p.StopAndWait() }},
		{"StopNow", func() { p.StopNow() }},
		{"Stats", func() { p.Stats() }},
		{"Resize", func() { p.Resize(2) }},
		{"Pause", func() { p.Pause() }},
		{"Resume", func() { p.Resume() }},
		{"Sub", func() { p.Sub(1) }},
		{"Invoke", func() { _ = fp.Invoke(1) }},
		{"TryInvoke", func() { fp.TryInvoke(1) }},
		{"Stats", func() { fp.Stats() }},
		{"StopNow", func() { fp.StopNow() }},
	}
	for _, c := range calls {
		func() {
			defer func() {
				v := recover()
				msg := fmt.Sprint(v)
				if v == nil || !strings.HasPrefix(msg, "crew: "+c.name+":") || !strings.Contains(msg, "nil *") {
					t.Errorf("%s on a nil receiver panicked with %q, want \"crew: %s: nil *...\"", c.name, msg, c.name)
				}
			}()
			c.call()
		}()
	}
	pool := crew.New(1)
	defer pool.StopAndWait()
	var nilCtx context.Context
	ctxCalls := []struct {
		name string
		call func()
	}{
		{"Map", func() {
			_, _ = crew.Map(nilCtx, pool, []int{1}, func(context.Context, int) (int, error) { return 0, nil })
		}},
		{"SubmitContext", func() { _ = pool.SubmitContext(nilCtx, func() {}) }},
		{"Shutdown", func() { _ = pool.Shutdown(nilCtx) }},
		{"GoContext", func() { crew.GoContext(nilCtx, pool, func(context.Context) (int, error) { return 0, nil }) }},
	}
	for _, c := range ctxCalls {
		func() {
			defer func() {
				v := recover()
				msg := fmt.Sprint(v)
				if v == nil || !strings.Contains(msg, c.name) || !strings.Contains(msg, "ctx") {
					t.Errorf("%s with a nil ctx panicked with %q, want a message naming %s and ctx", c.name, msg, c.name)
				}
			}()
			c.call()
		}()
	}
	if pool.Stopped() {
		t.Fatal("Shutdown(nil) stopped the pool; the doc says it then stops nothing")
	}
}

// "TrySubmit never runs inline and never drops another task: false on a full queue,
// whatever the policy." At every depth, for CallerRuns and DiscardOldest.
func TestAdvGuaranteeTrySubmitNeverInlineNeverDrops(t *testing.T) {
	for _, o := range []crew.Overflow{crew.CallerRuns, crew.DiscardOldest, crew.Block, crew.Reject} {
		t.Run(fmt.Sprint(o), func(t *testing.T) {
			forEachShape(t, 1, []crew.Option{crew.WithQueueSize(1), crew.WithOverflow(o)}, func(t *testing.T, p, top *crew.Pool) {
				release := holdN(t, p, 1)
				var queuedRan, tryRan atomic.Int32
				must(t, p.Submit(func() { queuedRan.Add(1) }))
				if p.TrySubmit(func() { tryRan.Add(1) }) {
					t.Fatal("TrySubmit on a full queue = true")
				}
				if tryRan.Load() != 0 {
					t.Fatal("TrySubmit ran its task inline")
				}
				s := p.Stats()
				if s.Rejected != 1 || s.Discarded != 0 || s.CallerRan != 0 || s.Waiting != 1 {
					t.Fatalf("Stats = %+v, want Rejected 1, nothing dropped or run inline", s)
				}
				release()
				p.Wait()
				if queuedRan.Load() != 1 || tryRan.Load() != 0 {
					t.Fatalf("queued ran %d (want 1), refused ran %d (want 0)", queuedRan.Load(), tryRan.Load())
				}
			})
		})
	}
}

// "A caller-run task counts in Accepted, Completed/Panicked and CallerRan", "such tasks do
// not count against MaxWorkers".
func TestAdvGuaranteeCallerRunsCounts(t *testing.T) {
	forEachShape(t, 1, []crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
		crew.WithPanicHandler(func(any, []byte) {})}, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, 1)
		must(t, p.Submit(func() {}))
		var onCaller atomic.Bool
		must(t, p.Submit(func() { onCaller.Store(true) }))
		if !onCaller.Load() {
			t.Fatal("CallerRuns Submit returned before running its task")
		}
		must(t, p.Submit(func() { panic("on the caller") }))
		s := p.Stats()
		if s.CallerRan != 2 || s.Accepted != 4 || s.Completed != 1 || s.Panicked != 1 || s.Running != 1 {
			t.Fatalf("Stats = %+v, want CallerRan 2, Accepted 4, Completed 1, Panicked 1, Running 1", s)
		}
		release()
		p.Wait()
		s = p.Stats()
		if s.Accepted != s.Completed+s.Panicked || s.Completed != 3 {
			t.Fatalf("Stats = %+v", s)
		}
	})
}

// "Rate: the bucket starts full; a parent's limit counts its sub-pools' starts." "A
// throttled task waits in the queue, never on a worker".
func TestAdvGuaranteeRateBucketStartsFullAcrossDepths(t *testing.T) {
	top := crew.New(4, crew.WithRateLimit(0.01, 2))
	t.Cleanup(top.StopAndWait)
	leaf := top.Sub(4).Sub(4)
	var ran atomic.Int32
	for range 3 {
		must(t, leaf.Submit(func() { ran.Add(1) }))
	}
	waitFor(t, "the burst of 2 to start", func() bool { return ran.Load() == 2 })
	time.Sleep(30 * time.Millisecond)
	if ran.Load() != 2 {
		t.Fatalf("%d sub-sub-pool tasks started under a parent's burst of 2", ran.Load())
	}
	if s := top.Stats(); s.Running != 0 {
		t.Fatalf("top Stats = %+v: a throttled task holds a worker", s)
	}
	top.SetRateLimit(math.Inf(1), 0)
	leaf.Wait()
	if ran.Load() != 3 {
		t.Fatalf("ran %d after the limit was removed", ran.Load())
	}
}

// "Running is the number of tasks running at the snapshot (0 once Wait has returned with
// nothing queued)".
func TestAdvGuaranteeRunningZeroAfterWait(t *testing.T) {
	forEachShape(t, 3, nil, func(t *testing.T, p, top *crew.Pool) {
		for range 5 {
			n := 200
			if testing.Short() {
				n = 50
			}
			for range n {
				_ = p.Submit(func() {})
			}
			p.Wait()
			if s := p.Stats(); s.Running != 0 || s.Waiting != 0 {
				t.Fatalf("Stats after Wait = %+v, want Running 0 and Waiting 0", s)
			}
		}
	})
}

// "A group whose first error canceled its context therefore runs none of its functions
// still queued"; GroupAll's context "is not canceled by an error".
func TestAdvGuaranteeGroupErrorSkipsQueued(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		boom := errors.New("boom")
		for _, all := range []bool{false, true} {
			var g *crew.Group
			if all {
				g, _ = p.GroupAll(context.Background())
			} else {
				g, _ = p.Group(context.Background())
			}
			gate := make(chan struct{})
			started := make(chan struct{})
			g.Go(func(context.Context) error { close(started); <-gate; return boom })
			<-started
			var later atomic.Int32
			for range 3 {
				g.Go(func(context.Context) error { later.Add(1); return nil })
			}
			close(gate)
			err := g.Wait()
			if !errors.Is(err, boom) {
				t.Fatalf("Wait = %v, want boom", err)
			}
			if all && later.Load() != 3 {
				t.Fatalf("GroupAll ran %d of 3 functions after an error", later.Load())
			}
			if !all && later.Load() != 0 {
				t.Fatalf("Group ran %d queued functions after its first error canceled its context", later.Load())
			}
		}
	})
}

// "On a stopped pool or an ended ctx it [MapSeq] yields (zero, ErrStopped) / (zero,
// ctx.Err()) once." Also MapSeqUnordered.
func TestAdvGuaranteeMapSeqEndedContextOnce(t *testing.T) {
	forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var pulled, ran atomic.Int32
		in := func(yield func(int) bool) {
			for i := range 5 {
				pulled.Add(1)
				if !yield(i) {
					return
				}
			}
		}
		fn := func(context.Context, int) (int, error) { ran.Add(1); return 7, nil }
		for name, seq := range map[string]func() func(func(int, error) bool){
			"MapSeq":          func() func(func(int, error) bool) { return crew.MapSeq(ctx, p, in, fn) },
			"MapSeqUnordered": func() func(func(int, error) bool) { return crew.MapSeqUnordered(ctx, p, in, fn) },
		} {
			n := 0
			for v, err := range seq() {
				n++
				if v != 0 || err != context.Canceled {
					t.Errorf("%s on an ended ctx yielded (%v, %v), want (0, context.Canceled)", name, v, err)
				}
			}
			if n != 1 {
				t.Errorf("%s on an ended ctx yielded %d times, want once", name, n)
			}
		}
		if ran.Load() != 0 {
			t.Fatalf("%d functions ran on an ended ctx", ran.Load())
		}
	})
}

// Stop's doc: "when any Stop call returns, also one concurrent with another, the pool and
// every sub-pool refuse tasks." Two Stops of the top race; each checks, once it returns,
// that the deepest sub-pool refuses.
func TestAdvGuaranteeConcurrentStopReachesEverySubPool(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 30
	}
	for range n {
		top := crew.New(2)
		mids := []*crew.Pool{top.Sub(1), top.Sub(2, crew.WithPriority(1))}
		leaves := []*crew.Pool{mids[0].Sub(1), mids[1].Sub(1), mids[1].Sub(2)}
		var ran atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				top.Stop()
				for _, l := range leaves {
					if err := l.Submit(func() { ran.Add(1) }); err != crew.ErrStopped {
						t.Errorf("a leaf's Submit after a Stop of the top returned = %v, want ErrStopped", err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		top.StopAndWait()
		if ran.Load() != 0 {
			t.Fatalf("%d tasks ran after Stop returned", ran.Load())
		}
	}
}

// "No task starts after Pause returns": not a growing Resize, a new rate limit, a sub-pool's
// own Resize or Resume, nor a submit, starts one while the top is paused.
func TestAdvGuaranteePauseHoldsAgainstResizeAndRate(t *testing.T) {
	top := crew.New(1)
	t.Cleanup(top.StopAndWait)
	mid := top.Sub(1, crew.WithPriority(1))
	leaf := mid.Sub(1)
	release := holdN(t, leaf, 1)
	top.Pause()
	var ran atomic.Int32
	for _, p := range []*crew.Pool{top, mid, leaf} {
		for range 2 {
			must(t, p.Submit(func() { ran.Add(1) }))
		}
	}
	release()
	waitFor(t, "the held task to end", func() bool { return top.Stats().Running == 0 })
	top.Resize(8)
	mid.Resize(8)
	leaf.Resize(8)
	mid.Resume()
	leaf.Resume()
	top.SetRateLimit(math.Inf(1), 0)
	leaf.Pause()
	leaf.Resume()
	must(t, leaf.Submit(func() { ran.Add(1) }))
	time.Sleep(30 * time.Millisecond)
	if ran.Load() != 0 {
		t.Fatalf("%d tasks started while the top was paused", ran.Load())
	}
	top.Resume()
	top.Wait()
	mid.Wait()
	leaf.Wait()
	if ran.Load() != 7 {
		t.Fatalf("ran %d of 7 after Resume", ran.Load())
	}
}

// "a worker never takes a lower-level task while a higher-level one that may start waits",
// with a parent of 2 workers: a low task checks, when it starts, that no high task waits.
func TestAdvGuaranteePriorityAtEveryStartWideParent(t *testing.T) {
	top := crew.New(2)
	t.Cleanup(top.StopAndWait)
	hi := top.Sub(2, crew.WithPriority(1))
	lo := top.Sub(2, crew.WithPriority(-1)).Sub(2)
	var bad atomic.Int32
	for round := range 3 {
		top.Pause()
		for range 8 {
			must(t, lo.Submit(func() {
				if hs := hi.Stats(); hs.Waiting != 0 {
					if bad.Add(1) == 1 {
						t.Logf("a low task started with hi %+v, top %+v", hs, top.Stats())
					}
				}
			}))
		}
		for range 8 {
			must(t, hi.Submit(func() { time.Sleep(100 * time.Microsecond) }))
		}
		top.Resume()
		lo.Wait()
		hi.Wait()
		if bad.Load() != 0 {
			t.Fatalf("round %d: %d low tasks started while a high one waited", round, bad.Load())
		}
	}
}

// Shutdown's doc: "Shutdown returns nil whenever the pool has exited, even if ctx has ended
// too (a pool stopped and drained earlier, say)."
func TestAdvGuaranteeShutdownNilOnceExited(t *testing.T) {
	forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
		must(t, p.Submit(func() {}))
		p.StopAndWait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown with an ended ctx of an exited pool = %v, want nil", err)
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("a second Shutdown = %v, want nil", err)
		}
	})
}

// Future.Cancel's doc: a canceled function is "counted in Stats.Skipped then (never in
// Returned: StopNow hands back only what would still run)"; and Cancel "reports false if
// the function ... was never accepted".
func TestAdvGuaranteeCancelThenStopNowSkippedNotReturned(t *testing.T) {
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, 1)
		f := crew.Go(p, func() (int, error) { return 1, nil })
		if !f.Cancel() {
			t.Fatal("Cancel of a queued future = false")
		}
		must(t, p.Submit(func() {}))
		back := p.StopNow()
		if len(back) != 1 {
			t.Fatalf("StopNow handed back %d, want the 1 plain task", len(back))
		}
		release()
		top.StopAndWait()
		if s := p.Stats(); s.Skipped != 1 || s.Returned != 1 || s.Accepted != 3 || s.Completed != 1 {
			t.Fatalf("Stats = %+v, want Skipped 1 (the canceled one), Returned 1", s)
		}
		if _, err := f.Wait(); err != context.Canceled {
			t.Fatalf("Wait = %v, want context.Canceled", err)
		}
		g := crew.Go(p, func() (int, error) { return 1, nil })
		if g.Cancel() {
			t.Fatal("Cancel of a future never accepted (stopped pool) = true")
		}
	})
}

// WithContext: "the pool stops (as Stop) when ctx ends", and "a submit after the pool's
// context ended returns ErrStopped", for a sub-pool given its own context and for the
// sub-pools of a top whose context ended.
func TestAdvGuaranteeWithContextStopsTree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	top := crew.New(2, crew.WithContext(ctx))
	t.Cleanup(top.StopAndWait)
	subCtx, subCancel := context.WithCancel(context.Background())
	sub := top.Sub(1, crew.WithContext(subCtx))
	leaf := sub.Sub(1)
	sibling := top.Sub(1).Sub(1)
	subCancel()
	waitFor(t, "the sub-pool to stop", sub.Stopped)
	if err := leaf.Submit(func() {}); err != crew.ErrStopped {
		t.Fatalf("a leaf under a sub-pool whose context ended: Submit = %v, want ErrStopped", err)
	}
	var ran atomic.Int32
	if err := sibling.Submit(func() { ran.Add(1) }); err != nil {
		t.Fatalf("a sibling's Submit after a sub-pool stopped = %v", err)
	}
	sibling.Wait()
	if ran.Load() != 1 || top.Stopped() {
		t.Fatalf("ran %d, top stopped %v: stopping a sub-pool must leave the parent and siblings working", ran.Load(), top.Stopped())
	}
	cancel()
	waitFor(t, "the top to stop", top.Stopped)
	if err := sibling.Submit(func() {}); err != crew.ErrStopped {
		t.Fatalf("after the top's context ended: Submit = %v, want ErrStopped", err)
	}
}

// "A panicking hook never stops its task from running exactly once"; "a panicking hook goes
// to the panic handler"; "A panic in a sub-pool's task goes to the sub-pool's handler, by
// default its parent's."
func TestAdvGuaranteePanickingHooksOnSubSub(t *testing.T) {
	var handled atomic.Int32
	top := crew.New(2, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	t.Cleanup(top.StopAndWait)
	boom := func(crew.TaskInfo) { panic("hook") }
	leaf := top.Sub(2).Sub(1, crew.WithHooks(crew.Hooks{Queued: boom, Started: boom, Finished: boom}))
	var ran atomic.Int32
	for range 3 {
		must(t, leaf.Submit(func() { ran.Add(1) }))
	}
	f := crew.Go(leaf, func() (int, error) { ran.Add(1); return 5, nil })
	if v, err := f.Wait(); v != 5 || err != nil {
		t.Fatalf("a future under panicking hooks: %v, %v", v, err)
	}
	leaf.Wait()
	if ran.Load() != 4 {
		t.Fatalf("ran %d of 4 under panicking hooks", ran.Load())
	}
	if handled.Load() != 12 {
		t.Fatalf("the parent's panic handler got %d hook panics, want 12 (3 hooks x 4 tasks)", handled.Load())
	}
	if s := leaf.Stats(); s.Completed != 4 || s.Panicked != 0 {
		t.Fatalf("leaf Stats = %+v, want Completed 4", s)
	}
}

// Stats.Idle: "A sub-pool's workers are its parent's, so a sub-pool reports none." And the
// snapshot rule "Running never exceeds MaxWorkers" for a sub-pool at rest.
func TestAdvGuaranteeSubPoolReportsNoIdle(t *testing.T) {
	top := crew.New(3, crew.WithMinWorkers(2))
	t.Cleanup(top.StopAndWait)
	leaf := top.Sub(2).Sub(2)
	for range 10 {
		must(t, leaf.Submit(func() {}))
	}
	leaf.Wait()
	top.Wait() // the sub-pools' workers are top's tasks, which may still be returning
	if s := leaf.Stats(); s.Idle != 0 {
		t.Fatalf("leaf Stats = %+v, want Idle 0", s)
	}
	if s := top.Stats(); s.Idle < 2 {
		t.Fatalf("top Stats = %+v, want at least its 2 minimum workers idle", s)
	}
}

// "Results.Wait() ([]R, error) // results in submission order" and "Map keeps the input
// order", on a sub-pool of a sub-pool with a priority and a pause in the middle.
func TestAdvGuaranteeResultsOrderAcrossPause(t *testing.T) {
	top := crew.New(3)
	t.Cleanup(top.StopAndWait)
	p := top.Sub(3, crew.WithPriority(2)).Sub(3)
	r, _ := crew.NewResults[int](context.Background(), p)
	for i := range 20 {
		if i == 10 {
			top.Pause()
		}
		r.Go(func(context.Context) (int, error) {
			if i%3 == 0 {
				time.Sleep(time.Millisecond)
			}
			return i, nil
		})
	}
	top.Resume()
	got, err := r.Wait()
	if err != nil || len(got) != 20 {
		t.Fatalf("Results.Wait = %v, %v", got, err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("Results out of submission order: %v", got)
		}
	}
	in := make([]int, 30)
	for i := range in {
		in[i] = i
	}
	out, err := crew.Map(context.Background(), p, in, func(_ context.Context, v int) (int, error) { return v * 2, nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if v != 2*i {
			t.Fatalf("Map out of input order: %v", out)
		}
	}
}

// "Weighted: the weights of running tasks never sum above MaxWorkers (for a sub-pool, above
// either limit); starts stay FIFO, so a heavy task at the head is not overtaken." On a
// sub-pool of a sub-pool whose parent's limit is the smaller.
func TestAdvGuaranteeHeavyHeadNotOvertaken(t *testing.T) {
	top := crew.New(4)
	t.Cleanup(top.StopAndWait)
	leaf := top.Sub(3).Sub(5, crew.WithPriority(1))
	release := holdN(t, leaf, 2)
	var mu sync.Mutex
	var order []string
	must(t, leaf.SubmitN(3, func() { mu.Lock(); order = append(order, "heavy"); mu.Unlock() }))
	must(t, leaf.Submit(func() { mu.Lock(); order = append(order, "light"); mu.Unlock() }))
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	early := len(order)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("%v started while 2 of the path's 3 slots were held: the heavy head was overtaken", order)
	}
	release()
	leaf.Wait()
	if len(order) != 2 || order[0] != "heavy" {
		t.Fatalf("start order %v, want the heavy task first", order)
	}
}

// Happens-before: Future.Wait ("The return of the function synchronizes before the return
// of Wait"), Pool.Wait ("until every accepted task has finished"), Keyed ("the return of one
// synchronizes before the next starts"), Results and Group. Plain variables, checked by
// -race, on a sub-pool of a sub-pool with a priority, across a Pause and Resume.
func TestAdvGuaranteeHappensBefore(t *testing.T) {
	top := crew.New(4)
	t.Cleanup(top.StopAndWait)
	p := top.Sub(4, crew.WithPriority(1)).Sub(3)
	top.Pause()
	var a, b, c int
	f := crew.Go(p, func() (int, error) { a = 1; return 0, nil })
	must(t, p.Submit(func() { b = 2 }))
	k := crew.NewKeyed[int](p)
	for i := range 20 {
		must(t, k.Submit(1, func() { c += i }))
	}
	g, _ := p.Group(context.Background())
	var d int
	g.Go(func(context.Context) error { d = 4; return nil })
	top.Resume()
	_, _ = f.Wait()
	if a != 1 {
		t.Fatal("a")
	}
	p.Wait()
	if b != 2 {
		t.Fatal("b")
	}
	k.Wait()
	if c != 190 {
		t.Fatalf("keyed sum %d, want 190", c)
	}
	_ = g.Wait()
	if d != 4 {
		t.Fatal("d")
	}
}

// "Under load, a snapshot never shows Completed+Panicked > Submitted, a counter going
// backwards, or Running > MaxWorkers." On a sub-pool of a sub-pool, with pauses of its
// parent and growing Resizes (a shrinking one is the documented exception).
func TestAdvGuaranteeSnapshotsUnderLoad(t *testing.T) {
	top := crew.New(4, crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(top.StopAndWait)
	p := top.Sub(3, crew.WithPriority(1)).Sub(2)
	n := 2000
	if testing.Short() || racetest.Enabled {
		n = 400
	}
	stop := make(chan struct{})
	var bad atomic.Value
	reader := goRun(func() {
		var prev crew.Stats
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := p.Stats()
			switch {
			case s.Completed+s.Panicked > s.Accepted:
				bad.Store(fmt.Sprintf("Completed+Panicked > Accepted: %+v", s))
			case s.Running > s.MaxWorkers:
				bad.Store(fmt.Sprintf("Running > MaxWorkers: %+v", s))
			case s.Accepted < prev.Accepted || s.Completed < prev.Completed || s.Panicked < prev.Panicked || s.Rejected < prev.Rejected:
				bad.Store(fmt.Sprintf("a counter went backwards: %+v after %+v", s, prev))
			case s.Running < 0 || s.Waiting < 0:
				bad.Store(fmt.Sprintf("negative: %+v", s))
			}
			prev = s
		}
	})
	together(2, n/2, func(c, i int) {
		switch {
		case i%97 == 0 && c == 0:
			top.Pause()
			runtime.Gosched()
			top.Resume()
		case i%89 == 0 && c == 1:
			p.Resize(2 + i%3)
		}
		if i%13 == 0 {
			_ = p.Submit(func() { panic("x") })
		} else {
			_ = p.Submit(func() {})
		}
	})
	p.Wait()
	close(stop)
	<-reader
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	if s := p.Stats(); s.Accepted != s.Completed+s.Panicked || s.Accepted != uint64(n) {
		t.Fatalf("idle Stats = %+v, want Accepted %d = Completed + Panicked", s, n)
	}
}

// Pause's doc: "a bounded queue fills, and then the overflow policy applies, but CallerRuns
// waits for Resume before it runs a task on its submitter".
func TestAdvGuaranteeCallerRunsWaitsForResume(t *testing.T) {
	forEachShape(t, 1, []crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns)}, func(t *testing.T, p, top *crew.Pool) {
		top.Pause()
		filled := 0
		for p.TrySubmit(func() {}) { // TrySubmit never runs a task inline
			if filled++; filled > 10 {
				t.Fatal("TrySubmit accepted more than 10 tasks into a queue of 1")
			}
		}
		var ran atomic.Bool
		var err error
		done := goRun(func() { err = p.Submit(func() { ran.Store(true) }) })
		stillBlocked(t, "a CallerRuns submit on a paused pool", done)
		if ran.Load() {
			t.Fatal("CallerRuns ran a task on its submitter while the pool was paused")
		}
		top.Resume()
		awaitReturn(t, "the CallerRuns submit after Resume", done)
		if err != nil || !ran.Load() {
			t.Fatalf("after Resume: err %v, ran %v", err, ran.Load())
		}
		p.Wait()
	})
}

// "DiscardOldest: accept it and drop the task that has waited longest"; "The discard handler
// runs on the submitter with no lock held"; a dropped future fails with ErrDiscarded;
// "Each such task is counted in Stats".
func TestAdvGuaranteeDiscardOldestExact(t *testing.T) {
	for _, shape := range guaranteeShapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			var got []any
			var p *crew.Pool
			handler := crew.WithDiscardHandler(func(v any) {
				got = append(got, v)
				_ = p.Stats() // no lock held
				p.TrySubmit(func() {})
			})
			p, _ = shape.make(t, 1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), handler)
			release := holdN(t, p, 1)
			var ran atomic.Int32
			f := crew.Go(p, func() (int, error) { ran.Add(100); return 1, nil })
			first := func() { ran.Add(10) }
			must(t, p.Submit(first))
			must(t, p.Submit(func() { ran.Add(1) })) // drops the future's function
			must(t, p.Submit(func() { ran.Add(1) })) // drops first
			if _, err := f.Wait(); !errors.Is(err, crew.ErrDiscarded) {
				t.Fatalf("a dropped future's Wait = %v, want ErrDiscarded", err)
			}
			if len(got) != 1 {
				t.Fatalf("the discard handler got %d values, want 1 (the plain task; the future fails instead)", len(got))
			}
			if _, ok := got[0].(func()); !ok {
				t.Fatalf("the discard handler got a %T, want func()", got[0])
			}
			release()
			p.Wait()
			if ran.Load() != 2 {
				t.Fatalf("ran = %d, want only the two kept tasks", ran.Load())
			}
			if s := p.Stats(); s.Discarded != 2 || s.Accepted != 5 || s.Completed != 3 {
				t.Fatalf("Stats = %+v, want Discarded 2, Completed 3", s)
			}
		})
	}
}

// "nested fork/join of any depth completes on New(1), also with WithQueueSize(1), and the
// limit still holds": a tree walk of groups made from the context crew gave each function,
// on New(1) itself and on a sub-pool of a sub-pool of New(1).
func TestAdvGuaranteeNestedForkJoinOnOne(t *testing.T) {
	for _, depth := range []int{0, 2} {
		t.Run(fmt.Sprint("depth", depth), func(t *testing.T) {
			top := crew.New(1, crew.WithQueueSize(1))
			t.Cleanup(top.StopAndWait)
			p := top
			for range depth {
				p = p.Sub(1, crew.WithQueueSize(1), crew.WithPriority(1))
			}
			var visited atomic.Int32
			var walk func(ctx context.Context, level int) error
			walk = func(ctx context.Context, level int) error {
				visited.Add(1)
				if level == 0 {
					return nil
				}
				g, _ := p.Group(ctx)
				for range 2 {
					g.Go(func(ctx context.Context) error { return walk(ctx, level-1) })
				}
				return g.Wait()
			}
			g, _ := p.Group(context.Background())
			g.Go(func(ctx context.Context) error { return walk(ctx, 5) })
			var err error
			awaitReturn(t, "a nested fork/join on a limit of 1", goRun(func() { err = g.Wait() }))
			if err != nil {
				t.Fatal(err)
			}
			if visited.Load() != 63 {
				t.Fatalf("visited %d nodes, want 63", visited.Load())
			}
			if s := top.Stats(); s.Running > 1 || s.MaxWorkers != 1 {
				t.Fatalf("top Stats = %+v", s)
			}
		})
	}
}

// "StopNow returns plain tasks only ... (a parent's includes its sub-pools' and keyed
// tasks)" and Keyed.Stats: "Returned those Pool.StopNow took out and handed back";
// "Once k is idle, Accepted equals Completed + Panicked + Discarded + Returned."
func TestAdvGuaranteeStopNowTakesKeyedTasksOfSubSub(t *testing.T) {
	top := crew.New(1)
	t.Cleanup(top.StopAndWait)
	leaf := top.Sub(1).Sub(1)
	k := crew.NewKeyed[int](leaf)
	release := holdN(t, top, 1)
	var ran atomic.Int32
	for i := range 6 {
		must(t, k.Submit(i%2, func() { ran.Add(1) }))
	}
	back := top.StopNow()
	release()
	top.StopAndWait()
	k.Wait()
	s := k.Stats()
	if int(s.Returned) != len(back) || s.Accepted != 6 || s.Accepted != s.Completed+s.Panicked+s.Discarded+s.Returned {
		t.Fatalf("Keyed Stats = %+v with %d handed back, %d ran", s, len(back), ran.Load())
	}
	if len(back)+int(ran.Load()) != 6 || len(back) != 6 {
		t.Fatalf("StopNow handed back %d keyed tasks and %d ran; want all 6 handed back (none had started)", len(back), ran.Load())
	}
}

// MapSeq: "at most W values are pulled and not yet yielded (W = the pool's limit when the
// call starts)" on a sub-pool of a sub-pool, with a slow consumer.
func TestAdvGuaranteeMapSeqPullBound(t *testing.T) {
	forEachShape(t, 3, nil, func(t *testing.T, p, top *crew.Pool) {
		var pulled, yielded, worst atomic.Int32
		in := func(yield func(int) bool) {
			for i := range 40 {
				if d := pulled.Add(1) - yielded.Load(); d > worst.Load() {
					worst.Store(d)
				}
				if !yield(i) {
					return
				}
			}
		}
		i := 0
		for v, err := range crew.MapSeq(context.Background(), p, in, func(_ context.Context, v int) (int, error) { return v, nil }) {
			if err != nil || v != i {
				t.Fatalf("MapSeq yielded (%v, %v) at %d", v, err, i)
			}
			i++
			yielded.Add(1)
			if i%7 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		if i != 40 {
			t.Fatalf("MapSeq yielded %d of 40", i)
		}
		if worst.Load() > 3 {
			t.Fatalf("%d values pulled and not yet yielded, want at most W = 3", worst.Load())
		}
	})
}

// Shutdown's doc: it skips "the functions given with a context (...on the pool or its
// sub-pools) still queued", here called on a middle pool: the leaf's queued functions are
// skipped, and a sibling of the middle pool keeps working.
func TestAdvGuaranteeShutdownOfMiddlePool(t *testing.T) {
	top := crew.New(2)
	t.Cleanup(top.StopAndWait)
	mid := top.Sub(1)
	leaf := mid.Sub(1, crew.WithPriority(1))
	sibling := top.Sub(1)
	running := make(chan struct{})
	var cause error
	f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
		close(running)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return 0, nil
	})
	<-running
	var ran atomic.Int32
	fq := crew.GoContext(context.Background(), leaf, func(context.Context) (int, error) { ran.Add(1); return 0, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := mid.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if _, err := fq.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("a queued leaf function after the middle pool's Shutdown gave up: %v, want ErrStopped", err)
	}
	_, _ = f.Wait()
	if !errors.Is(cause, crew.ErrStopped) {
		t.Fatalf("the running leaf function's cause = %v, want ErrStopped", cause)
	}
	if err := sibling.Submit(func() { ran.Add(10) }); err != nil {
		t.Fatalf("a sibling's Submit = %v", err)
	}
	sibling.Wait()
	if ran.Load() != 10 || top.Stopped() {
		t.Fatalf("ran %d, top stopped %v", ran.Load(), top.Stopped())
	}
}

// "StopNow is how a paused backlog is abandoned", across depths: a paused top's StopNow
// hands back every task queued below it, and none runs; and "After Stop it still removes
// what is queued": each accepted task then either ran or was handed back, never both.
func TestAdvGuaranteeStopNowAbandonsPausedBacklog(t *testing.T) {
	forEachShape(t, 2, nil, func(t *testing.T, p, top *crew.Pool) {
		top.Pause()
		var ran atomic.Int32
		for range 6 {
			must(t, p.Submit(func() { ran.Add(1) }))
		}
		back := top.StopNow()
		top.StopAndWait()
		if len(back) != 6 || ran.Load() != 0 {
			t.Fatalf("a paused top's StopNow handed back %d of 6, %d ran", len(back), ran.Load())
		}
		if s := p.Stats(); s.Returned != 6 || s.Accepted != 6 || s.Waiting != 0 {
			t.Fatalf("Stats = %+v, want Returned 6", s)
		}
	})
	forEachShape(t, 1, nil, func(t *testing.T, p, top *crew.Pool) {
		release := holdN(t, p, 1)
		var ran atomic.Int32
		for range 6 {
			must(t, p.Submit(func() { ran.Add(1) }))
		}
		top.Stop()
		back := top.StopNow()
		release()
		top.StopAndWait()
		if len(back) != 6 || ran.Load() != 0 {
			t.Fatalf("StopNow after Stop handed back %d of 6, %d ran", len(back), ran.Load())
		}
	})
}
