package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Pool.Pause: once Pause has returned, no task starts, even one handed to a waking worker
// just before, until Resume. A task starts when a worker takes it (Stats counts it in Running
// from then); its function's first line may run a moment later, after Pause has returned, so
// the test counts starts with a snapshot taken while paused: every function that ever runs
// before Resume is one of the Running or Completed tasks of that snapshot.
func TestNoTaskStartsAfterPauseReturns(t *testing.T) {
	for round := range 20 {
		p := crew.New(4)
		var ran, accepted atomic.Int64
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-release
				for range 200 {
					if p.Submit(func() { ran.Add(1) }) == nil {
						accepted.Add(1)
					}
				}
			}()
		}
		close(release)
		p.Pause()
		s := p.Stats()
		started := int64(s.Running) + int64(s.Completed)
		wg.Wait()
		// Tasks running when Pause returned may still finish; none may begin.
		if err := p.PauseAndWait(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // a wrong start would have its chance
		if n := ran.Load(); n > started {
			t.Fatalf("round %d: %d functions ran, but only %d tasks had started when Pause returned", round, n, started)
		}
		after := p.Stats()
		if !after.Paused {
			t.Fatal("Stats.Paused = false while paused")
		}
		if after.Running != 0 || int64(after.Completed) != ran.Load() || int64(after.Waiting) != accepted.Load()-ran.Load() {
			t.Fatalf("round %d: paused and idle: %+v, ran %d of %d accepted", round, after, ran.Load(), accepted.Load())
		}
		p.Resume()
		p.StopAndWait()
		if ran.Load() != accepted.Load() {
			t.Fatalf("ran %d of %d accepted", ran.Load(), accepted.Load())
		}
	}
}

func TestPausedPoolAcceptsAndResumeRunsInOrder(t *testing.T) {
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		pp := p.(pauser)
		pp.Pause()
		pp.Pause() // idempotent
		var mu sync.Mutex
		var order []int
		for i := range 10 {
			if err := p.submit(func() { mu.Lock(); order = append(order, i); mu.Unlock() }); err != nil {
				t.Fatal(err)
			}
		}
		if s := p.Stats(); s.Waiting != 10 || s.Running != 0 || !s.Paused {
			t.Fatalf("Stats while paused = %+v, want 10 waiting, none running", s)
		}
		waited := goRun(p.Wait)
		stillBlocked(t, "Wait on a paused backlog", waited)
		pp.Resume()
		awaitReturn(t, "Wait after Resume", waited)
		for i, v := range order {
			if v != i {
				t.Fatalf("order = %v, want FIFO", order)
			}
		}
		if p.Stats().Paused {
			t.Fatal("Stats.Paused after Resume")
		}
		p.StopAndWait()
	})
}

// pauser is what Pool and FuncPool share for pausing, reached through the test adapters.
type pauser interface {
	Pause()
	Resume()
	PauseAndWait(ctx context.Context) error
}

func (p plainPool) Pause()                                  { p.Pool.Pause() }
func (p plainPool) Resume()                                 { p.Pool.Resume() }
func (p plainPool) PauseAndWait(ctx context.Context) error  { return p.Pool.PauseAndWait(ctx) }
func (p invokePool) Pause()                                 { p.FuncPool.Pause() }
func (p invokePool) Resume()                                { p.FuncPool.Resume() }
func (p invokePool) PauseAndWait(ctx context.Context) error { return p.FuncPool.PauseAndWait(ctx) }

func TestPauseAndWaitWaitsForRunningTasks(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	task, started, release := blocker()
	p.Submit(task)
	p.Submit(task)
	<-started
	<-started
	done := goRun(func() {
		if err := p.PauseAndWait(context.Background()); err != nil {
			t.Error(err)
		}
	})
	stillBlocked(t, "PauseAndWait with tasks running", done)
	close(release)
	awaitReturn(t, "PauseAndWait", done)
	if s := p.Stats(); s.Running != 0 {
		t.Fatalf("Running = %d after PauseAndWait", s.Running)
	}
	p.Resume()
}

func TestPauseAndWaitWhoseContextEndsStaysPaused(t *testing.T) {
	p := crew.New(1)
	task, started, release := blocker()
	p.Submit(task)
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.PauseAndWait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("PauseAndWait with an ended context = %v, want context.Canceled", err)
	}
	ran := make(chan struct{})
	p.Submit(func() { close(ran) })
	close(release)
	stillBlocked(t, "a task of a pool paused by a PauseAndWait that gave up", ran)
	if !p.Stats().Paused {
		t.Fatal("not paused after PauseAndWait gave up")
	}
	p.StopAndWait() // resumes: the task runs
	<-ran
}

// Pool.Stop: Stop, StopAndWait and Shutdown resume a paused pool and its sub-pools, so every
// accepted task runs exactly once.
func TestStopResumesPausedPool(t *testing.T) {
	for _, how := range []string{"Stop", "StopAndWait", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			p := crew.New(2)
			sub := p.Sub(1)
			p.Pause()
			sub.Pause()
			var ran atomic.Int64
			for range 5 {
				p.Submit(func() { ran.Add(1) })
				sub.Submit(func() { ran.Add(1) })
			}
			switch how {
			case "Stop":
				p.Stop()
				p.Wait()
				sub.Wait()
				p.StopAndWait()
			case "StopAndWait":
				p.StopAndWait()
			case "Shutdown":
				if err := p.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if ran.Load() != 10 {
				t.Fatalf("ran %d of 10", ran.Load())
			}
		})
	}
}

// Pool.Pause: no task of p's sub-pools starts either, even on a sub-pool worker already
// running.
func TestParentPauseHoldsSubPoolTasks(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	sub := p.Sub(1)
	firstStarted, releaseFirst := make(chan struct{}), make(chan struct{})
	sub.Submit(func() { close(firstStarted); <-releaseFirst })
	<-firstStarted
	var ran atomic.Int64
	for range 3 {
		sub.Submit(func() { ran.Add(1) })
	}
	p.Pause()
	close(releaseFirst) // the sub-pool's worker is running: it must not take the next
	if err := p.PauseAndWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d sub-pool tasks ran while the parent was paused", n)
	}
	p.Resume()
	sub.Wait()
	if n := ran.Load(); n != 3 {
		t.Fatalf("ran %d of 3 after Resume", n)
	}
}

// Pool.Pause on a sub-pool: its worker already waiting in the parent's queue does not start
// its task once Pause has returned.
func TestSubPoolPauseHoldsWorkerWaitingInParentQueue(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0)
	sub := p.Sub(2)
	ran := make(chan struct{})
	sub.Submit(func() { close(ran) })
	sub.Pause()
	release()
	p.Wait()
	select {
	case <-ran:
		t.Fatal("a paused sub-pool's task ran")
	default:
	}
	if s := sub.Stats(); s.Waiting != 1 || s.Running != 0 {
		t.Fatalf("sub-pool stats = %+v, want its task waiting", s)
	}
	sub.Resume()
	awaitReturn(t, "the sub-pool's task after Resume", ran)
}

func TestPauseResumeFromTaskDoesNotDeadlock(t *testing.T) {
	p := crew.New(2)
	done := make(chan struct{})
	p.Submit(func() {
		p.Pause()
		p.Resume()
		close(done)
	})
	awaitReturn(t, "Pause and Resume from a task", done)
	p.StopAndWait()
}

// TestPauseAndWaitOfASubPoolDoesNotWaitForItsWorkerInTheParentsQueue: a sub-pool's task whose
// worker waits in the parent's queue, the parent being busy or paused, does not run (Stats:
// Running 0, Waiting 1), so the sub-pool's PauseAndWait returns at once; the task starts
// only after the sub-pool's Resume, once the parent lets its worker start.
func TestPauseAndWaitOfASubPoolDoesNotWaitForItsWorkerInTheParentsQueue(t *testing.T) {
	for _, parentPaused := range []bool{false, true} {
		parent := crew.New(1)
		release := func() {}
		if parentPaused {
			parent.Pause()
		} else {
			release = holdWorkers(t, plainPool{parent}, 1, 0)
		}
		sub := parent.Sub(1)
		ran := make(chan struct{})
		must(t, sub.Submit(func() { close(ran) }))
		if s := sub.Stats(); s.Running != 0 || s.Waiting != 1 {
			t.Fatalf("parent paused %v: sub-pool's Stats %+v, want Running 0 and Waiting 1", parentPaused, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := sub.PauseAndWait(ctx); err != nil {
			t.Fatalf("parent paused %v: the sub-pool's PauseAndWait with none of its tasks running = %v, want nil at once",
				parentPaused, err)
		}
		cancel()
		release()
		parent.Resume()
		select {
		case <-ran:
			t.Fatalf("parent paused %v: the paused sub-pool's task ran", parentPaused)
		case <-time.After(20 * time.Millisecond):
		}
		sub.Resume()
		awaitReturn(t, "the sub-pool's task after its Resume", ran)
		parent.StopAndWait()
	}
}

// TestPauseAndWaitOfASubPoolWaitsForItsRunningTask: the sub-pool's task that has begun counts,
// whatever waits in the parent's queue beside it.
func TestPauseAndWaitOfASubPoolWaitsForItsRunningTask(t *testing.T) {
	parent := crew.New(2)
	defer parent.StopAndWait()
	sub := parent.Sub(2)
	started, release := make(chan struct{}), make(chan struct{})
	must(t, sub.Submit(func() { close(started); <-release }))
	<-started
	parent.Pause()
	must(t, sub.Submit(func() {})) // its worker waits in the paused parent's queue
	done := goRun(func() {
		if err := sub.PauseAndWait(context.Background()); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-done:
		t.Fatal("the sub-pool's PauseAndWait returned while its task ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	awaitReturn(t, "the sub-pool's PauseAndWait once its task returned", done)
	sub.Resume()
	parent.Resume()
}

// PauseAndWait, as Wait, does not wait for a task its submitter runs under CallerRuns: the
// doc says so, and a caller-run task that blocks must not hang it.
func TestPauseAndWaitDoesNotWaitForACallerRunTask(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	hold, held := make(chan struct{}), make(chan struct{})
	if err := p.Submit(func() { close(held); <-hold }); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "the worker's task to start", held)
	if err := p.Submit(func() {}); err != nil { // fills the queue
		t.Fatal(err)
	}
	inline, release := make(chan struct{}), make(chan struct{})
	submitted := goRun(func() {
		if err := p.Submit(func() { close(inline); <-release }); err != nil {
			t.Error(err)
		}
	})
	awaitReturn(t, "the caller-run task to start", inline)
	close(hold)
	if err := returnsWithin(t, "PauseAndWait", func() error { return p.PauseAndWait(context.Background()) }); err != nil {
		t.Fatalf("PauseAndWait = %v, want nil while only a caller-run task runs", err)
	}
	close(release)
	awaitReturn(t, "the caller-run submit", submitted)
	p.Resume()
	p.Wait()
	if s := p.Stats(); s.CallerRan != 1 || s.Completed != 3 {
		t.Fatalf("CallerRan %d, Completed %d; want 1 and 3", s.CallerRan, s.Completed)
	}
}

// Pool.Pause: a task handed to a worker that has not yet begun it, a new worker or a parked
// one woken for it, is given back by that worker when it finds the pool paused, and starts
// after Resume; the same for a sub-pool's task when the sub-pool or its parent is paused.
// With one processor the woken worker runs only once the submitter blocks, after it has
// paused the pool; should the submitter be preempted first and the task run before Pause, the
// round proves nothing and is made again.
func TestPauseGivesBackATaskAWorkerHasNotBegun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		name   string
		parked bool // a worker parked by an earlier task is woken, rather than a new one started
		sub    bool // the task is a sub-pool's
		parent bool // the parent is paused rather than the sub-pool
	}{
		{name: "new worker"},
		{name: "parked worker", parked: true},
		{name: "sub-pool paused", sub: true},
		{name: "sub-pool, parent paused", sub: true, parent: true},
		{name: "sub-pool, parked worker, parent paused", sub: true, parked: true, parent: true},
	} {
		for attempt := 0; ; attempt++ {
			if attempt == 20 {
				t.Fatalf("%s: the task ran before Pause in every attempt", c.name)
			}
			if pauseGivesBack(t, c.name, c.parked, c.sub, c.parent) {
				break
			}
		}
	}
}

// pauseGivesBack is one round of TestPauseGivesBackATaskAWorkerHasNotBegun. It reports false
// if the task ran before Pause returned, which leaves the round without meaning.
func pauseGivesBack(t *testing.T, name string, parked, sub, parent bool) bool {
	t.Helper()
	root := crew.New(2)
	defer root.StopAndWait()
	p, paused := root, root
	if sub {
		p = root.Sub(1)
		if !parent {
			paused = p
		}
	}
	if parked {
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
		p.Wait()
		waitFor(t, name+": a parked worker", func() bool { return root.Stats().Idle > 0 })
	}
	var ran, late, pausedYet atomic.Int64
	if err := p.Submit(func() {
		late.Add(pausedYet.Load())
		ran.Add(1)
	}); err != nil {
		t.Fatal(err)
	}
	paused.Pause()
	pausedYet.Store(1)
	time.Sleep(5 * time.Millisecond) // the worker has its chance to run the task
	if late.Load() != 0 {
		t.Errorf("%s: the task ran after Pause returned", name)
	}
	if ran.Load() != 0 && late.Load() == 0 {
		return false // it ran before Pause
	}
	if s := p.Stats(); s.Running != 0 || s.Waiting != 1 {
		t.Errorf("%s: paused with the task given back: %+v, want it waiting", name, s)
	}
	paused.Resume()
	p.Wait()
	if ran.Load() != 1 {
		t.Errorf("%s: the task ran %d times after Resume, want 1", name, ran.Load())
	}
	return true
}
