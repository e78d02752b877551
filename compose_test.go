package crew_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestPauseStormWithPrioritisedSubPoolsLosesNoTask proves that every task accepted by a pool
// and its prioritised sub-pools runs, and that StopAndWait returns, while another goroutine
// pauses and resumes the pool without a break.
func TestPauseStormWithPrioritisedSubPoolsLosesNoTask(t *testing.T) {
	for _, level := range []int{1, -1} {
		p := crew.New(4, crew.WithQueueSize(32))
		subs := []*crew.Pool{p, p.Sub(2), p.Sub(3, crew.WithPriority(level))}
		subs = append(subs, subs[2].Sub(2))
		var accepted, ran atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 4 {
			j := 0
			repeatUntil(&wg, stop, func() {
				if subs[(i+j)%len(subs)].Submit(func() { ran.Add(1) }) == nil {
					accepted.Add(1)
				}
				j++
			})
		}
		repeatUntil(&wg, stop, func() { p.Pause(); p.Resume() })
		time.Sleep(100 * time.Millisecond)
		p.Stop()
		close(stop)
		wg.Wait()
		awaitReturn(t, "StopAndWait after a pause storm", goRun(p.StopAndWait))
		if a, r := accepted.Load(), ran.Load(); a != r {
			t.Fatalf("level %d: %d tasks accepted, %d ran", level, a, r)
		}
	}
}

// TestChainOfSubPoolsDrainsAfterResizeAndPauseStorms proves that a chain of sub-pools resized
// at every level while one of them is paused and resumed runs every accepted task and stops.
func TestChainOfSubPoolsDrainsAfterResizeAndPauseStorms(t *testing.T) {
	root := crew.New(4, crew.WithIdleTimeout(0), crew.WithMinWorkers(1))
	a := root.Sub(3)
	b := a.Sub(2)
	c := b.Sub(1)
	pools := []*crew.Pool{root, a, b, c}
	var accepted, ran atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	storm := func(f func(r *rand.Rand)) {
		r := rand.New(rand.NewPCG(1, 2))
		repeatUntil(&wg, stop, func() { f(r) })
	}
	for _, q := range pools {
		storm(func(r *rand.Rand) { q.Resize(1 + r.IntN(4)) })
		storm(func(r *rand.Rand) {
			if q.Submit(func() { ran.Add(1) }) == nil {
				accepted.Add(1)
			}
		})
	}
	storm(func(*rand.Rand) { b.Pause(); b.Resume() })
	time.Sleep(100 * time.Millisecond)
	root.Stop()
	close(stop)
	wg.Wait()
	awaitReturn(t, "StopAndWait after resize and pause storms", goRun(root.StopAndWait))
	if a, r := accepted.Load(), ran.Load(); a != r {
		t.Fatalf("%d tasks accepted, %d ran", a, r)
	}
}

// TestParentShrinkBoundsSubPools proves that once a parent's shrinking Resize has returned,
// no task of a sub-pool starts while the parent runs its new limit or more.
func TestParentShrinkBoundsSubPools(t *testing.T) {
	p := crew.New(8)
	defer p.StopAndWait()
	sub := p.Sub(8)
	var shrunk atomic.Bool
	var running, over atomic.Int64
	gate := make(chan struct{})
	for range 200 {
		must(t, sub.Submit(func() {
			n := running.Add(1)
			if shrunk.Load() && n > 2 {
				over.Store(n)
			}
			<-gate
			running.Add(-1)
		}))
	}
	waitFor(t, "8 sub-pool tasks running", func() bool { return running.Load() == 8 })
	p.Resize(2)
	// Every task that starts from now on must find at most 2 running, itself included; the
	// 8 already running finish first.
	shrunk.Store(true)
	for i := 0; i < 200; i++ {
		gate <- struct{}{}
	}
	p.Wait()
	if n := over.Load(); n != 0 {
		t.Fatalf("a sub-pool task started with %d running after the parent shrank to 2", n)
	}
}

// TestPriorityHoldsAcrossResume proves that after a parent's Resume, a higher-level
// sub-pool's task starts before a lower-level one queued earlier, whatever the parent's size.
func TestPriorityHoldsAcrossResume(t *testing.T) {
	for _, size := range []int{1, 2, 8} {
		for range 50 {
			p := crew.New(size)
			low := p.Sub(1)
			high := p.Sub(1, crew.WithPriority(1))
			// Every worker but one is busy, so the two tasks compete for one slot.
			var releases []chan struct{}
			for range size - 1 {
				task, started, release := blocker()
				must(t, p.Submit(task))
				<-started
				releases = append(releases, release)
			}
			p.Pause()
			var mu sync.Mutex
			var order []string
			record := func(s string) func() {
				return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
			}
			must(t, low.Submit(record("low")))
			must(t, high.Submit(record("high")))
			p.Resume()
			low.Wait()
			high.Wait()
			for _, r := range releases {
				close(r)
			}
			p.StopAndWait()
			if len(order) != 2 || order[0] != "high" {
				t.Fatalf("parent of %d: after Resume the tasks started in the order %v", size, order)
			}
		}
	}
}

// TestSubPoolTasksStartFirstInFirstOut proves that a sub-pool's tasks start in the order they
// were accepted, also when the sub-pool's limit is above its parent's.
func TestSubPoolTasksStartFirstInFirstOut(t *testing.T) {
	for _, limit := range []int{1, 2, 8} {
		p := crew.New(1)
		sub := p.Sub(limit)
		task, started, release := blocker()
		must(t, p.Submit(task))
		<-started
		var mu sync.Mutex
		var order []int
		for i := range 8 {
			must(t, sub.Submit(func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}))
		}
		close(release)
		p.StopAndWait()
		if !slices.IsSorted(order) || len(order) != 8 {
			t.Fatalf("sub-pool of %d on a parent of 1: tasks started in the order %v", limit, order)
		}
	}
}

// TestStatsCountEachTaskOnceWhilePausing proves that every snapshot of a pool being paused and
// resumed counts each accepted, unfinished task once, in Running or in Waiting: a task given
// back by a pause is never in both, nor in neither.
func TestStatsCountEachTaskOnceWhilePausing(t *testing.T) {
	p := crew.New(4)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		repeatUntil(&wg, stop, func() { _ = p.Submit(func() {}) })
	}
	repeatUntil(&wg, stop, func() { p.Pause(); p.Resume() })
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		s := p.Stats()
		open := s.Accepted - s.Completed - s.Panicked - s.Discarded - s.Returned - s.Skipped
		if uint64(s.Running+s.Waiting) != open || s.Running > s.MaxWorkers {
			close(stop)
			wg.Wait()
			p.StopAndWait()
			t.Fatalf("Stats = %+v: Running+Waiting should be the %d tasks accepted and not ended", s, open)
		}
	}
	close(stop)
	wg.Wait()
	p.StopAndWait()
}

// TestIdleCountsEveryWorkerNotRunningATask proves that once Wait has returned, every live
// worker is counted in Idle, also one that has not parked yet.
func TestIdleCountsEveryWorkerNotRunningATask(t *testing.T) {
	const n = 6
	for range 20 {
		p := crew.New(n, crew.WithIdleTimeout(time.Hour))
		release := make(chan struct{})
		var started sync.WaitGroup
		started.Add(n)
		for range n {
			must(t, p.Submit(func() { started.Done(); <-release }))
		}
		started.Wait()
		close(release)
		p.Wait()
		if s := p.Stats(); s.Running != 0 || s.Idle != n {
			p.StopAndWait()
			t.Fatalf("after Wait, Stats = %+v, want Running 0 and all %d workers idle", s, n)
		}
		p.StopAndWait()
	}
}

// TestSubPoolShrinkHoldsForTasksWaitingInTheParent proves that a sub-pool's shrinking Resize
// holds for its tasks whose workers were already waiting in the parent's queue.
func TestSubPoolShrinkHoldsForTasksWaitingInTheParent(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	hold, held, freeParent := blocker()
	must(t, p.Submit(hold))
	<-held
	sub := p.Sub(3)
	first, started, freeFirst := blocker()
	var h highWater
	task := func() { h.enter(); h.exit() }
	must(t, sub.Submit(func() { h.enter(); first(); h.exit() }))
	<-started
	must(t, sub.Submit(task))
	must(t, sub.Submit(task))
	// The sub-pool's second worker waits in the parent's queue, behind the held worker.
	awaitStats(t, p, "a sub-pool worker waiting in the parent", func(s crew.Stats) bool { return s.Waiting == 1 })
	sub.Resize(1)
	close(freeParent)
	time.Sleep(10 * time.Millisecond) // room for a wrong start to happen
	close(freeFirst)
	sub.Wait()
	if got := h.high.Load(); got > 1 {
		t.Fatalf("%d tasks of a sub-pool resized to 1 ran at once", got)
	}
}

// TestRateLimitedSubPoolServesItsSubPool proves that a sub-pool of a rate-limited sub-pool
// and the rate-limited sub-pool itself share the starts the rate allows, rather than the
// sub-pool of it getting one per pass through the backlog.
func TestRateLimitedSubPoolServesItsSubPool(t *testing.T) {
	root := crew.New(4)
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithRateLimit(1000, 1))
	subsub := sub.Sub(1)
	var ranSub, ranSubSub atomic.Int64
	for range 1000 {
		must(t, sub.Submit(func() { ranSub.Add(1) }))
		must(t, subsub.Submit(func() { ranSubSub.Add(1) }))
	}
	waitFor(t, "200 tasks to run", func() bool { return ranSub.Load()+ranSubSub.Load() >= 200 })
	s, ss := ranSub.Load(), ranSubSub.Load()
	sub.StopNow()
	subsub.StopNow()
	if ss*4 < s || s*4 < ss {
		t.Fatalf("of %d starts the rate-limited sub-pool ran %d tasks and its sub-pool %d, want each at least a quarter of the other", s+ss, s, ss)
	}
}

// TestStressPriorityAcrossPauseAndResume proves, over many rounds on parents of 1, 2 and 8
// workers with one worker free, that after a Resume every task of a higher-level sub-pool
// starts before any of a lower level queued with it, and that each level starts its own tasks
// first in, first out, whatever the sub-pools' limits.
func TestStressPriorityAcrossPauseAndResume(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 2, 8} {
		for round := range rounds {
			p := crew.New(size)
			limits := []int{1 + r.IntN(3), 1 + r.IntN(3), 1 + r.IntN(3)}
			levels := []*crew.Pool{p.Sub(limits[0]), p.Sub(limits[1], crew.WithPriority(1)), p.Sub(limits[2], crew.WithPriority(2))}
			var releases []chan struct{}
			for range size - 1 {
				task, started, release := blocker()
				must(t, p.Submit(task))
				<-started
				releases = append(releases, release)
			}
			p.Pause()
			var mu sync.Mutex
			var order [][2]int // level, index within the level
			counts := make([]int, len(levels))
			for range 2 + r.IntN(12) {
				l := r.IntN(len(levels))
				i := counts[l]
				counts[l]++
				must(t, levels[l].Submit(func() { mu.Lock(); order = append(order, [2]int{l, i}); mu.Unlock() }))
			}
			p.Resume()
			for _, q := range levels {
				q.Wait()
			}
			for _, rel := range releases {
				close(rel)
			}
			p.StopAndWait()
			next := make([]int, len(levels))
			for k, o := range order {
				if k > 0 && o[0] > order[k-1][0] {
					t.Fatalf("parent of %d, round %d, limits %v: a level-%d task started after a level-%d one: %v", size, round, limits, o[0], order[k-1][0], order)
				}
				if o[1] != next[o[0]] {
					t.Fatalf("parent of %d, round %d, limits %v: level %d started its tasks out of order: %v", size, round, limits, o[0], order)
				}
				next[o[0]]++
			}
		}
	}
}

// TestHistogramsCountEachTaskOnceAmidEveryFeature: with WithLatencyHistograms and hooks on a
// pool, a prioritised sub-pool, a sub-pool of it and a Keyed on the sub-pool, while
// submitters (tasks that return, panic, panic(nil) and call runtime.Goexit) run beside a
// pause storm, a shrinking and growing Resize and a StopNow of the innermost sub-pool: every
// task ends once, in Completed, Panicked or Returned, every pool's histograms count as many
// waits as runs, and the innermost pool's count every task of its that ran, once.
func TestHistogramsCountEachTaskOnceAmidEveryFeature(t *testing.T) {
	t.Parallel()
	var handled, started, finished atomic.Int64
	opts := func(more ...crew.Option) []crew.Option {
		return append([]crew.Option{
			crew.WithLatencyHistograms(),
			crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
			crew.WithHooks(crew.Hooks{
				Started:  func(crew.TaskInfo) { started.Add(1) },
				Finished: func(crew.TaskInfo) { finished.Add(1) },
			}),
		}, more...)
	}
	root := crew.New(3, opts(crew.WithQueueSize(64))...)
	high := root.Sub(2, opts(crew.WithPriority(1))...)
	inner := high.Sub(2, opts()...)
	keyed := crew.NewKeyed[int](high)
	pools := []*crew.Pool{root, high, inner}
	tasks := []func(){
		func() {},
		func() { panic("planned") },
		func() { panic(nil) },
		runtime.Goexit,
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, q := range pools {
		n := 0
		repeatUntil(&wg, stop, func() {
			_ = q.Submit(tasks[(i+n)%len(tasks)])
			n++
		})
	}
	k := 0
	repeatUntil(&wg, stop, func() { _ = keyed.Submit(k%3, func() {}); k++ })
	repeatUntil(&wg, stop, func() { root.Pause(); root.Resume() })
	size := 0
	repeatUntil(&wg, stop, func() { root.Resize(1 + size%3); size++ })
	time.Sleep(30 * time.Millisecond)
	inner.StopNow()
	time.Sleep(10 * time.Millisecond)
	close(stop)
	wg.Wait()
	root.Resume()
	root.Resize(3)
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	var panicked uint64
	for i, q := range pools {
		s := q.Stats()
		idleIdentity(t, fmt.Sprintf("pool %d", i), s)
		panicked += s.Panicked
		if s.WaitTime.Count != s.RunTime.Count {
			t.Fatalf("pool %d: %d waits timed, %d runs", i, s.WaitTime.Count, s.RunTime.Count)
		}
		// The innermost pool's tasks are all its own. The others' Stats also count their
		// sub-pools' workers and, on high, the Keyed's turns, which their histograms do not
		// see (Pool.Sub, Keyed): TestParentCountsSubPoolWorkersAndSeesOnlyItsOwnTasks.
		if ran := s.Completed + s.Panicked; q == inner && s.RunTime.Count != ran {
			t.Fatalf("innermost pool: histograms counted %d of %d tasks that ran: %+v", s.RunTime.Count, ran, s)
		}
	}
	if uint64(handled.Load()) != panicked {
		t.Fatalf("the panic handler saw %d panics, Stats count %d", handled.Load(), panicked)
	}
	if started.Load() != finished.Load() {
		t.Fatalf("Started %d times, Finished %d", started.Load(), finished.Load())
	}
}
