//go:build go1.25

package crew_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// Pause: "once Pause has returned, none starts". A keyed task is a task of the pool (its hooks
// and histograms see each keyed task as one of its own); a key's turn that is running when
// Pause returns must not start the key's next tasks.
func TestKeyedTurnStartsNoTaskAfterPause(t *testing.T) {
	var hooked atomic.Int32
	p := crew.New(1, crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { hooked.Add(1) }}))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	gate := make(chan struct{})
	first := make(chan struct{})
	var started atomic.Int32
	must(t, k.Submit(0, func() { started.Add(1); close(first); <-gate }))
	for range 4 {
		must(t, k.Submit(0, func() { started.Add(1) }))
	}
	awaitReturn(t, "first keyed task to start", first)
	p.Pause()
	close(gate)
	time.Sleep(50 * time.Millisecond)
	if n := started.Load(); n != 1 {
		t.Errorf("%d keyed tasks started (Started hook %d), %d of them after Pause returned; stats %+v, keyed %+v", n, hooked.Load(), n-1, p.Stats(), k.Stats())
	}
	p.Resume()
	k.Wait()
}

// WithRateLimit: "over any window of length T, at most burst + perSecond·T tasks start"; a
// keyed task is a task of the pool, so a key's backlog must not start faster.
func TestKeyedTasksObeyTheRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(4, crew.WithRateLimit(1, 1))
		k := crew.NewKeyed[int](p)
		var started atomic.Int32
		gate := make(chan struct{})
		must(t, k.Submit(0, func() { started.Add(1); <-gate }))
		synctest.Wait()
		for range 7 {
			must(t, k.Submit(0, func() { started.Add(1) }))
		}
		close(gate)
		synctest.Wait()
		if n := started.Load(); n > 1 {
			t.Errorf("%d keyed tasks started at once under WithRateLimit(1, 1): want at most the burst, 1", n)
		}
		k.Wait()
		p.StopAndWait()
	})
}

// Resize: "from its return ... no task starts while that many or more run". Four keys' turns
// run on four workers; after Resize(1) their next keyed tasks must never run two at once:
// each may start only while nothing else of the pool runs. Counted by a high-water mark, not
// by time, so a slow machine cannot make it pass or fail.
func TestKeyedTurnsObeyAShrinkingResize(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	gate := make(chan struct{})
	var firsts, later atomic.Int32
	var hw highWater
	for key := range 4 {
		must(t, k.Submit(key, func() { firsts.Add(1); <-gate }))
		for range 3 {
			must(t, k.Submit(key, func() {
				hw.enter()
				defer hw.exit()
				later.Add(1)
				time.Sleep(time.Millisecond)
			}))
		}
	}
	waitFor(t, "4 keys running", func() bool { return firsts.Load() == 4 })
	p.Resize(1)
	close(gate)
	k.Wait()
	if n := hw.high.Load(); n > 1 {
		t.Errorf("%d keyed tasks ran at once after Resize(1)", n)
	}
	if n := later.Load(); n != 12 {
		t.Errorf("%d of the 12 later keyed tasks ran", n)
	}
}

// WithPriority: "no task of a higher level is waiting when a lower-level one starts". A Keyed on
// a low-level sub-pool: while its key's turn runs, a task of a higher-level sub-pool is queued;
// the key's next keyed task must not start before it.
func TestKeyedTurnOnALowLevelSubPoolYieldsToAHigherLevel(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	low := root.Sub(1, crew.WithPriority(0))
	high := root.Sub(1, crew.WithPriority(5))
	k := crew.NewKeyed[int](low)
	gate := make(chan struct{})
	first := make(chan struct{})
	var order []string
	var mu = make(chan struct{}, 1)
	rec := func(s string) { mu <- struct{}{}; order = append(order, s); <-mu }
	must(t, k.Submit(0, func() { rec("k0"); close(first); <-gate }))
	for range 3 {
		must(t, k.Submit(0, func() { rec("k") }))
	}
	awaitReturn(t, "first keyed task", first)
	must(t, high.Submit(func() { rec("HIGH") }))
	awaitStats(t, root, "the high sub-pool's worker waiting in the root", func(s crew.Stats) bool { return s.Waiting == 1 })
	close(gate)
	k.Wait()
	high.Wait()
	if len(order) < 2 || order[1] != "HIGH" {
		t.Errorf("start order %v: a keyed task of level 0 started while a level-5 task waited", order)
	}
}
