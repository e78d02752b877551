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

func TestSubPoolSharesParentLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	p := crew.New(limit)
	subs := []*crew.Pool{p.Sub(2), p.Sub(10), p.Sub(10).Sub(10)}
	var h highWater
	task := func() {
		h.enter()
		time.Sleep(20 * time.Microsecond)
		h.exit()
	}
	var n atomic.Int32
	for range 300 {
		for _, pool := range append(subs, p) {
			if err := pool.Submit(func() { task(); n.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range subs {
		s.Wait()
	}
	p.StopAndWait()
	if got := n.Load(); got != 1200 {
		t.Fatalf("%d of 1200 tasks ran", got)
	}
	if m := h.high.Load(); m > limit {
		t.Fatalf("parent and sub-pools ran %d tasks at once, limit %d", m, limit)
	}
}

func TestSubPoolLimitHolds(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	sub := p.Sub(2)
	var h highWater
	for range 500 {
		sub.Submit(func() {
			h.enter()
			time.Sleep(20 * time.Microsecond)
			h.exit()
		})
	}
	sub.StopAndWait()
	p.StopAndWait()
	if m := h.high.Load(); m > 2 {
		t.Fatalf("sub-pool ran %d tasks at once, limit 2", m)
	}
}

// TestSubPoolQueueIsUnbounded: a sub-pool accepts every task however many wait, even under
// a parent whose bounded, non-blocking queue is full.
func TestSubPoolQueueIsUnbounded(t *testing.T) {
	t.Parallel()
	const n = 1000
	p := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking())
	release := holdWorkers(t, plainPool{p}, 1, 1)
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("parent Submit on its full queue = %v, want ErrQueueFull", err)
	}
	sub := p.Sub(1)
	ran := acceptsAll(t, plainPool{sub}, n)
	release()
	p.StopAndWait()
	if got := ran.Load(); got != 2*n {
		t.Fatalf("%d of %d sub-pool tasks ran", got, 2*n)
	}
}

// TestSubPoolTasksWaitingForTheParentCountAsWaiting: a sub-pool's tasks whose workers wait in
// the parent's queue, all the parent's workers being busy, count as waiting in the sub-pool's
// Stats, never as running, and the parent counts the sub-pool's workers it holds as waiting.
func TestSubPoolTasksWaitingForTheParentCountAsWaiting(t *testing.T) {
	t.Parallel()
	const n = 3
	p := crew.New(1)
	release := holdWorkers(t, plainPool{p}, 1, 0)
	sub := p.Sub(n)
	var ran atomic.Int32
	for range n {
		if err := sub.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	s, ps := sub.Stats(), p.Stats()
	if s.Running != 0 || s.Waiting != n || s.Idle != 0 || ran.Load() != 0 {
		t.Fatalf("sub-pool Stats = %+v with %d tasks run, want its %d tasks waiting", s, ran.Load(), n)
	}
	if ps.Waiting < 1 || ps.Waiting > n {
		t.Fatalf("parent Stats = %+v, want the sub-pool's forwarded workers waiting in its queue", ps)
	}
	release()
	p.StopAndWait()
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d sub-pool tasks ran", got, n)
	}
}

// TestStopAndWaitWaitsForSubPoolTasks: a pool's StopAndWait returns only after every task its
// sub-pools accepted has finished, those accepted while Stop ran included, and the pool's
// counters are final by then. TestExitedWaitsForHeldSubPoolsForward (internal/worker) makes
// the late case happen every time.
func TestStopAndWaitWaitsForSubPoolTasks(t *testing.T) {
	t.Parallel()
	for round := range 300 {
		p := crew.New(2, crew.WithIdleTimeout(0))
		sub := p.Sub(2)
		var ran, accepted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 20 {
					if sub.Submit(func() { ran.Add(1) }) == nil {
						accepted.Add(1)
					}
				}
			}()
		}
		close(start)
		p.StopAndWait()
		ranBefore, s := ran.Load(), p.Stats()
		wg.Wait()
		if got, want := ranBefore, accepted.Load(); got != want {
			t.Fatalf("round %d: %d sub-pool tasks had run when StopAndWait returned, %d accepted",
				round, got, want)
		}
		if s.Running != 0 || s.Completed != s.Accepted {
			t.Fatalf("round %d: stats after StopAndWait: %+v", round, s)
		}
	}
}

// TestShutdownWaitsForSubPoolTasks: a pool's Shutdown waits for its sub-pools' accepted tasks:
// it returns ctx.Err() if ctx ends while one runs, and nil once they have all finished.
func TestShutdownWaitsForSubPoolTasks(t *testing.T) {
	t.Parallel()
	const n = 10
	p := crew.New(2)
	sub := p.Sub(1)
	release := holdWorkers(t, plainPool{sub}, 1, 0)
	var ran atomic.Int32
	for range n {
		if err := sub.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("parent Shutdown with a sub-pool task running = %v, want context.DeadlineExceeded", err)
	}
	release()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d sub-pool tasks had run when Shutdown returned", got, n)
	}
}

func TestStoppingSubPoolLeavesParentWorking(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	a, b := p.Sub(1), p.Sub(1)
	a.StopAndWait()
	if err := a.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("stopped sub-pool Submit = %v", err)
	}
	var n atomic.Int32
	if err := p.Submit(func() { n.Add(1) }); err != nil {
		t.Fatalf("parent Submit = %v", err)
	}
	if err := b.Submit(func() { n.Add(1) }); err != nil {
		t.Fatalf("sibling Submit = %v", err)
	}
	b.Wait()
	p.StopAndWait()
	if n.Load() != 2 {
		t.Fatalf("%d of 2 tasks ran", n.Load())
	}
}

func TestStoppingParentStopsSubPools(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	sub := p.Sub(1)
	task, started, release := blocker()
	p.Submit(task)
	<-started
	var ran atomic.Int32
	for range 10 {
		sub.Submit(func() { ran.Add(1) }) // accepted: must still run
	}
	p.Stop()
	if err := sub.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("sub-pool Submit after parent Stop = %v", err)
	}
	if s := p.Sub(1); !errors.Is(s.Submit(func() {}), crew.ErrStopped) {
		t.Fatal("Sub of a stopped pool accepts tasks")
	}
	close(release)
	p.StopAndWait()
	sub.StopAndWait()
	if ran.Load() != 10 {
		t.Fatalf("%d of 10 accepted sub-pool tasks ran", ran.Load())
	}
}

// TestParentCountsSubPoolWorkersAndSeesOnlyItsOwnTasks: a sub-pool's worker counts in the
// parent's Stats as one task, however many of the sub-pool's tasks it runs, while the
// parent's hooks and histograms see only the parent's own tasks, and the sub-pool's counters
// and histograms count each of its tasks.
func TestParentCountsSubPoolWorkersAndSeesOnlyItsOwnTasks(t *testing.T) {
	var started atomic.Int64
	p := crew.New(1, crew.WithLatencyHistograms(), crew.WithHooks(crew.Hooks{
		Started: func(crew.TaskInfo) { started.Add(1) },
	}))
	sub := p.Sub(1, crew.WithLatencyHistograms())
	p.Pause()
	var ran atomic.Int64
	for range 5 {
		if err := sub.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(func() { ran.Add(1) }); err != nil {
		t.Fatal(err)
	}
	// One worker of the sub-pool waits in p's queue for the oldest of the five, beside p's
	// own task.
	if s := p.Stats(); s.Waiting != 2 || s.Accepted != 2 {
		t.Fatalf("paused parent: want 2 accepted and waiting (a worker of the sub-pool and its own task), got %+v", s)
	}
	if s := sub.Stats(); s.Waiting != 5 || s.Accepted != 5 {
		t.Fatalf("paused sub-pool: want its 5 tasks accepted and waiting, got %+v", s)
	}
	// The worker runs the sub-pool's tasks one at a time: one of p's tasks running.
	release := make(chan struct{})
	if err := sub.Submit(func() { <-release; ran.Add(1) }); err != nil {
		t.Fatal(err)
	}
	p.Resume()
	awaitStats(t, sub, "the sub-pool's 5 tasks to complete and its sixth to run", func(s crew.Stats) bool {
		return s.Running == 1 && s.Completed == 5
	})
	if s := p.Stats(); s.Running != 1 {
		t.Fatalf("a sub-pool's task running: want 1 task of the parent running, got %+v", s)
	}
	close(release)
	p.StopAndWait()
	if ran.Load() != 7 {
		t.Fatalf("%d of 7 tasks ran", ran.Load())
	}
	s := p.Stats()
	if s.Accepted != 2 || s.Completed != 2 || s.WaitTime.Count != 1 || s.RunTime.Count != 1 || started.Load() != 1 {
		t.Fatalf("parent: want 2 tasks counted (one the sub-pool's worker that ran all 6), 1 seen by hooks and histograms; got %+v, Started %d times",
			s, started.Load())
	}
	if s := sub.Stats(); s.Accepted != 6 || s.Completed != 6 || s.WaitTime.Count != 6 || s.RunTime.Count != 6 {
		t.Fatalf("sub-pool: want its 6 tasks counted and timed, got %+v", s)
	}
}
