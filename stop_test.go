package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"go.uber.org/goleak"
)

// subTree gives p width sub-pools, each width sub-pools of its own, depth levels deep, and
// returns them all, parents before their sub-pools.
func subTree(p *crew.Pool, width, depth int) []*crew.Pool {
	if depth == 0 {
		return nil
	}
	var all []*crew.Pool
	for range width {
		s := p.Sub(1)
		all = append(all, s)
		all = append(all, subTree(s, width, depth-1)...)
	}
	return all
}

// refusesTasks fails t unless every pool in ps refuses a task with ErrStopped.
func refusesTasks(t *testing.T, what string, ps []*crew.Pool) {
	t.Helper()
	for i, s := range ps {
		if err := s.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("%s: Submit to sub-pool %d = %v, want ErrStopped", what, i, err)
		}
	}
}

// TestStopReturnsAfterSubPoolsAreStopped proves [crew.Pool.Stop]'s "when any Stop call
// returns, also one concurrent with another, the pool and every sub-pool refuse tasks": Stop
// is called on the root by several goroutines at once, or by some while the root's
// WithContext context ends, or while sub-pools are stopped themselves; each caller checks,
// as soon as its Stop returns, that every sub-pool below refuses.
func TestStopReturnsAfterSubPoolsAreStopped(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{"concurrent Stops", "Stop while the context ends", "Stops of sub-pools and root"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			for round := range 100 {
				ctx, cancel := context.WithCancel(context.Background())
				p := crew.New(2, crew.WithContext(ctx))
				tree := subTree(p, 2, 2)
				together(3, 1, func(c, _ int) {
					switch {
					case c == 0 && shape == "Stop while the context ends":
						cancel()
					case c > 0 && shape == "Stops of sub-pools and root":
						// Sub-pool c-1 and its sub-pools (the next two) refuse once it
						// has stopped; the root's Stop below stops all.
						s := tree[(c-1)*3]
						s.Stop()
						refusesTasks(t, fmt.Sprintf("round %d, after a sub-pool's Stop", round), tree[(c-1)*3:c*3])
					default:
						p.Stop()
						refusesTasks(t, fmt.Sprintf("round %d, after the root's Stop", round), tree)
					}
				})
				cancel()
				p.StopAndWait()
			}
		})
	}
}

// TestSubPoolsRefuseOnceTheRootContextHasEnded proves [crew.WithContext]'s "a submit to the
// pool or to any of its sub-pools made after ctx has ended returns ErrStopped": at once, not
// only once the hook that stops the pool has run.
func TestSubPoolsRefuseOnceTheRootContextHasEnded(t *testing.T) {
	t.Parallel()
	for round := range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		p := crew.New(2, crew.WithContext(ctx))
		tree := subTree(p, 2, 2)
		cancel()
		// From the deepest sub-pool up, so that no submit to a parent has stopped it first.
		for i := len(tree) - 1; i >= 0; i-- {
			refusesTasks(t, fmt.Sprintf("round %d", round), tree[i:i+1])
		}
		if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("round %d: Submit to the root = %v, want ErrStopped", round, err)
		}
		p.StopAndWait()
	}
}

// TestNewWithEndedContextReturnsAStoppedPool proves [crew.WithContext]'s "a pool built with a
// ctx that has already ended is stopped when New returns", for New and NewFunc, without a data
// race between New and the hook that stops the pool; and that a pool whose context ends while
// New runs refuses tasks once the context has ended.
func TestNewWithEndedContextReturnsAStoppedPool(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for round := range 100 {
		ctx := ended
		if round%2 == 1 { // the context ends while New runs
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(context.Background())
			go cancel()
		}
		p := crew.New(2, crew.WithContext(ctx))
		f := crew.NewFunc(2, func(int) { t.Error("a call ran on a stopped pool") }, crew.WithContext(ctx))
		<-ctx.Done()
		refusesEverySubmit(t, p, f, func() { t.Error("a task ran on a stopped pool") })
		refusesTasks(t, fmt.Sprintf("round %d", round), []*crew.Pool{p.Sub(1)})
		p.StopAndWait()
		f.StopAndWait()
	}
}

// TestShutdownOfExitedPoolWithEndedContextReturnsNil proves [crew.Pool.Shutdown]'s "It returns
// nil whenever the pool has exited, even if ctx has ended too", as net/http.Server.Shutdown
// does, for Pool and FuncPool.
func TestShutdownOfExitedPoolWithEndedContextReturnsNil(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	forEachKind(t, 2, nil, func(t *testing.T, p testPool) {
		if err := p.submit(func() {}); err != nil {
			t.Fatal(err)
		}
		p.StopAndWait()
		for i := range 100 {
			if err := p.Shutdown(ended); err != nil {
				t.Fatalf("Shutdown %d of an exited pool with an ended context = %v, want nil", i, err)
			}
		}
	})
}

// TestShutdownWithNilContextPanicsBeforeStopping: Shutdown(nil) fails as clearly as
// SubmitContext(nil), and leaves the pool running.
func TestShutdownWithNilContextPanicsBeforeStopping(t *testing.T) {
	t.Parallel()
	forEachKind(t, 2, nil, func(t *testing.T, p testPool) {
		defer p.StopAndWait()
		func() {
			defer func() {
				const want = "crew: Shutdown: ctx must not be nil"
				if got := recover(); got != want {
					t.Fatalf("Shutdown(nil) panicked with %v, want %q", got, want)
				}
			}()
			//lint:ignore SA1012 a nil context is the bad input under test
			p.Shutdown(nil)
		}()
		ran := make(chan struct{})
		if err := p.submit(func() { close(ran) }); err != nil {
			t.Fatalf("Submit after Shutdown(nil) = %v, want the pool still running", err)
		}
		<-ran
	})
}

// TestSubWithContextStopsTheSubPoolAlone proves [crew.Pool.Sub]'s WithContext option as
// [crew.WithContext] states it, for a sub-pool: once its own context has ended (before Sub,
// or later), the sub-pool and its own sub-pools refuse tasks at once, while its parent and
// its sibling still accept them.
func TestSubWithContextStopsTheSubPoolAlone(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for round := range 50 {
		p := crew.New(2)
		sibling := p.Sub(1)
		ctx := ended
		var cancel context.CancelFunc = func() {}
		if round%2 == 1 { // the context ends after Sub
			ctx, cancel = context.WithCancel(context.Background())
		}
		sub := p.Sub(1, crew.WithContext(ctx))
		below := sub.Sub(1)
		cancel()
		refusesTasks(t, fmt.Sprintf("round %d: the sub-pool and its own", round), []*crew.Pool{below, sub})
		for _, s := range []*crew.Pool{p, sibling} {
			if err := s.Submit(func() {}); err != nil {
				t.Fatalf("round %d: Submit to the parent or the sibling = %v, want nil", round, err)
			}
		}
		p.StopAndWait()
	}
}

func TestSubmitAfterStopReturnsErrStopped(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	f := crew.NewFunc(2, func(int) { t.Error("call ran after Stop") })
	p.Stop()
	f.Stop()
	ran := false
	refusesEverySubmit(t, p, f, func() { ran = true })
	p.StopAndWait()
	f.StopAndWait()
	if ran {
		t.Error("task ran after Stop")
	}
}

func TestStopReleasesBlockedSubmitters(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	task, started, release := blocker()
	p.Submit(task)
	<-started
	p.Submit(task)
	const blocked = 8
	errs := make(chan error, blocked)
	for range blocked {
		go func() { errs <- p.Submit(func() { t.Error("refused task ran") }) }()
	}
	waitFor(t, "submitters to block", func() bool { return crew.BlockedSubmitters(p) == blocked })
	p.Stop()
	for range blocked {
		if err := <-errs; !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("blocked Submit = %v, want ErrStopped", err)
		}
	}
	close(release)
	p.StopAndWait()
	if s := p.Stats(); s.Completed != 2 {
		t.Fatalf("Completed = %d, want the 2 accepted tasks", s.Completed)
	}
}

func TestStopRunsAcceptedTasks(t *testing.T) {
	t.Parallel()
	const n = 1000
	p := crew.New(1)
	var ran atomic.Int32
	task, started, release := blocker()
	p.Submit(task)
	<-started
	for range n {
		p.Submit(func() { ran.Add(1) })
	}
	p.Stop() // returns at once, with the tasks still queued
	if s := p.Stats(); s.Waiting != n {
		t.Fatalf("Stats after Stop = %+v, want %d waiting", s, n)
	}
	close(release)
	p.StopAndWait()
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d accepted tasks ran after Stop", got, n)
	}
}

func TestStopAndWaitLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := crew.New(16, crew.WithMinWorkers(4))
	sub := p.Sub(3)
	for range 1000 {
		p.Submit(func() {})
		sub.Submit(func() {})
	}
	p.StopAndWait()
}

// TestSecondStopIsNoop: a second Stop, StopAndWait or Shutdown changes nothing: the pool
// still refuses tasks, the tasks queued before the first Stop still run, and Stats stays as
// it was.
func TestSecondStopIsNoop(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		const queued = 10
		release := holdWorkers(t, p, 1, 0)
		var ran atomic.Int32
		for range queued {
			if err := p.submit(func() { ran.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
		p.Stop()
		stopped := p.Stats()
		p.Stop()
		if s := p.Stats(); s != stopped {
			t.Fatalf("Stats after the second Stop = %+v, after the first %+v", s, stopped)
		}
		if err := p.submit(func() { t.Error("task ran after Stop") }); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("submit after the second Stop = %v, want ErrStopped", err)
		}
		release()
		p.StopAndWait()
		done := p.Stats()
		p.StopAndWait()
		p.Stop()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown after StopAndWait = %v", err)
		}
		if s := p.Stats(); s != done {
			t.Fatalf("Stats after a second StopAndWait, Stop and Shutdown = %+v, after the first StopAndWait %+v", s, done)
		}
		if got := ran.Load(); got != queued || done.Completed != queued+1 {
			t.Fatalf("%d of %d queued tasks ran; stats %+v", got, queued, done)
		}
	})
}

// TestShutdownReturnsContextErrorWhenTasksOutlastIt: Pool's and FuncPool's Shutdown return
// ctx.Err() when ctx ends before the accepted tasks have finished, and those still run.
func TestShutdownReturnsContextErrorWhenTasksOutlastIt(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 1, 0)
		var after atomic.Bool
		if err := p.submit(func() { after.Store(true) }); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
		}
		if after.Load() {
			t.Fatal("the queued task ran while the worker was held")
		}
		release()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown = %v", err)
		}
		if !after.Load() {
			t.Fatal("the queued task did not run after Shutdown gave up")
		}
	})
}

func TestWithContextStopsPool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p := crew.New(1, crew.WithContext(ctx))
	task, started, release := blocker()
	p.Submit(task)
	<-started
	var ran atomic.Bool
	p.Submit(func() { ran.Store(true) })
	cancel()
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after the pool's context ended = %v, want ErrStopped", err)
	}
	close(release)
	p.StopAndWait()
	if !ran.Load() {
		t.Fatal("a task accepted before the context ended did not run")
	}
}

// TestStopAndWaitLeavesNoWithContextHookRunning: the context of a pool with sub-pools ends
// and StopAndWait is called at once. The hook that context.AfterFunc started to stop the pool
// and its sub-pools is a goroutine of the pool: once StopAndWait has returned, it must have
// returned too.
func TestStopAndWaitLeavesNoWithContextHookRunning(t *testing.T) {
	buf := make([]byte, 1<<20)
	hookRunning := func() bool {
		n := runtime.Stack(buf, true)
		return bytes.Contains(buf[:n], []byte("crew.(*Pool).halt"))
	}
	for round := range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		p := crew.New(2, crew.WithContext(ctx))
		for range 50 {
			p.Sub(1).Sub(1)
		}
		cancel()
		p.StopAndWait()
		if hookRunning() {
			t.Fatalf("round %d: the WithContext hook still ran after StopAndWait returned", round)
		}
	}
}
