//go:build go1.25

package crew_test

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// Adversarial tests of the adaptive limit (WithAdaptiveLimit) where it meets weighted submits
// (SubmitN), sub-pools, priorities, rate limits, Resize and Pause. They run in a
// testing/synctest bubble, so the resources the tasks call take exact times on the fake clock.

// w3Feed submits weighted tasks to p from a goroutine of its own until stop is closed or p
// refuses with ErrStopped, counting what it accepted. task(i) gives the i-th task and its
// weight.
func w3Feed(t *testing.T, p *crew.Pool, stop <-chan struct{}, accepted *atomic.Int64, task func(i int) (int, func())) <-chan struct{} {
	return goRun(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n, f := task(i)
			err := p.SubmitN(n, f)
			if errors.Is(err, crew.ErrStopped) {
				return
			}
			if err != nil {
				t.Errorf("SubmitN(%d): %v", n, err)
				return
			}
			accepted.Add(1)
		}
	})
}

// w3Await waits for ch on the bubble's clock, failing t after 10 s of it.
func w3Await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not done after 10 s", what)
	}
}

// w3Held is the sum of the weights of the tasks of one tree running now, the highest sum a
// start saw, and the starts that saw a sum above a bound while other tasks ran.
type w3Held struct {
	held, running atomic.Int64
	heavy         atomic.Int64 // >0 while a task heavier than the limit runs
	beside        atomic.Int64 // starts beside a running task heavier than the limit
}

func (h *w3Held) enter(n int) {
	if h.heavy.Load() > 0 {
		h.beside.Add(1)
	}
	h.held.Add(int64(n))
	h.running.Add(1)
}

func (h *w3Held) exit(n int) {
	h.held.Add(-int64(n))
	h.running.Add(-1)
}

// TestAdvWeightsHeavierThanTheAdaptiveLimitButNotTheCeilingRuns: WithAdaptiveLimit's doc says
// "Pool.SubmitN checks a weight against the ceiling", and SubmitN's doc that a task heavier
// than the limit (made so by a shrinking Resize) runs alone once every running task has
// returned. So on an adaptive pool whose limit came down far below its ceiling (a resource of
// 3 slots behind a ceiling of 32), SubmitN with the ceiling's weight is accepted, and it runs,
// alone, while the load goes on; the tasks behind it wait for it (FIFO), then run again.
func TestAdvWeightsHeavierThanTheAdaptiveLimitButNotTheCeilingRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ceiling, floor = 32, 2
		p := crew.New(ceiling, crew.WithAdaptiveLimit(floor), crew.WithQueueSize(64))
		res := newSlots(3)
		var h w3Held
		var accepted, ran atomic.Int64
		stop := make(chan struct{})
		feed := w3Feed(t, p, stop, &accepted, func(int) (int, func()) {
			return 1, func() {
				h.enter(1)
				defer h.exit(1)
				ran.Add(1)
				res.call(2 * time.Millisecond)
			}
		})
		time.Sleep(2 * time.Second)
		lim := p.Stats().MaxWorkers
		if lim >= ceiling || lim < floor {
			t.Fatalf("MaxWorkers %d after 2 s in front of 3 slots, want it in [%d, %d)", lim, floor, ceiling)
		}

		// Keyed.Stats reports its pool's MaxWorkers: the limit chosen now.
		k := crew.NewKeyed[int](p)
		for i := 0; ; i++ {
			a, ks, b := p.Stats().MaxWorkers, k.Stats().MaxWorkers, p.Stats().MaxWorkers
			if a == b {
				if ks != a {
					t.Errorf("Keyed.Stats().MaxWorkers %d, its adaptive pool's %d", ks, a)
				}
				break
			}
			if i == 100 {
				t.Fatal("the limit kept moving")
			}
		}

		heavyRan := make(chan struct{})
		var alone atomic.Bool
		var runningSeen atomic.Int64
		heavy := func() {
			alone.Store(h.running.Load() == 0)
			runningSeen.Store(int64(p.Stats().Running))
			h.enter(ceiling)
			h.heavy.Add(1)
			time.Sleep(5 * time.Millisecond)
			h.exit(ceiling)
			h.heavy.Add(-1)
			close(heavyRan)
		}
		if err := p.SubmitN(ceiling, heavy); err != nil {
			t.Fatalf("SubmitN(%d) on an adaptive pool of ceiling %d at limit %d = %v, want nil", ceiling, ceiling, lim, err)
		}
		if err := p.SubmitN(ceiling+1, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
			t.Fatalf("SubmitN(%d) above the ceiling = %v, want ErrTooHeavy", ceiling+1, err)
		}
		w3Await(t, "the heavy task", heavyRan)
		if !alone.Load() {
			t.Error("the task heavier than the limit started while other tasks ran")
		}
		if n := h.beside.Load(); n > 0 {
			t.Errorf("%d tasks started beside the task heavier than the limit", n)
		}
		if n := runningSeen.Load(); n != 1 {
			t.Errorf("the heavy task, running alone, saw Stats.Running %d, want 1 (a task counts once whatever its weight)", n)
		}
		before := ran.Load()
		time.Sleep(200 * time.Millisecond)
		if ran.Load() == before {
			t.Error("no task ran after the heavy one")
		}
		close(stop)
		w3Await(t, "the feeder", feed)
		w3Await(t, "StopAndWait", goRun(p.StopAndWait))
		if ran.Load() != accepted.Load() {
			t.Errorf("%d tasks ran, %d accepted", ran.Load(), accepted.Load())
		}
		s := p.Stats()
		idleIdentity(t, "pool", s)
		if s.Rejected != 0 || s.Canceled != 0 {
			t.Errorf("ErrTooHeavy counted in Rejected or Canceled: %+v", s)
		}
	})
}

// TestAdvWeightsOnASubPoolUnderAnAdaptiveParent: a sub-pool's SubmitN is refused with
// ErrTooHeavy only above the smallest limit on its path, and an adaptive parent's limit for a
// weight is its ceiling. A sub-pool of 16 under an adaptive parent (ceiling 24) whose limit came
// down: SubmitN(16) on the sub-pool is accepted and runs, alone in the tree; SubmitN(17) is
// ErrTooHeavy. While the tree runs, the weights running on it never sum above a limit the
// parent reported since (unless one task runs alone), and the sub-pool's never above 16.
func TestAdvWeightsOnASubPoolUnderAnAdaptiveParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := crew.New(24, crew.WithAdaptiveLimit(2), crew.WithQueueSize(64))
		sub := root.Sub(16, crew.WithQueueSize(32), crew.WithPriority(1))
		res := newSlots(3)
		var tree, subH w3Held
		var log sizedWeighLog
		log.limits = []int{24}
		crew.OnLimit(root, func(n int) {
			if n < 2 || n > 24 {
				t.Errorf("limit %d chosen outside [2, 24]", n)
			}
			log.add(n)
		})
		var accRoot, accSub, ran atomic.Int64
		stop := make(chan struct{})
		task := func(w int, inSub bool) func() {
			mark := log.mark()
			return func() {
				log.start(mark, w)
				defer log.end(w)
				tree.enter(w)
				defer tree.exit(w)
				if inSub {
					subH.enter(w)
					defer subH.exit(w)
					if held := subH.held.Load(); held > 16 {
						t.Errorf("weights %d running on a sub-pool of 16", held)
					}
				}
				ran.Add(1)
				res.call(2 * time.Millisecond)
			}
		}
		feeds := []<-chan struct{}{
			w3Feed(t, root, stop, &accRoot, func(i int) (int, func()) { w := 1 + i%2; return w, task(w, false) }),
			w3Feed(t, sub, stop, &accSub, func(i int) (int, func()) { w := 1 + i%3; return w, task(w, true) }),
		}
		time.Sleep(2 * time.Second)
		if lim := root.Stats().MaxWorkers; lim >= 16 {
			t.Fatalf("root MaxWorkers %d after 2 s in front of 3 slots, want it below 16", lim)
		}
		if err := sub.SubmitN(17, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
			t.Fatalf("sub.SubmitN(17) on a sub-pool of 16 = %v, want ErrTooHeavy", err)
		}
		heavyRan := make(chan struct{})
		var alone atomic.Bool
		if err := sub.SubmitN(16, func() {
			alone.Store(tree.running.Load() == 0)
			tree.enter(16)
			tree.heavy.Add(1)
			time.Sleep(5 * time.Millisecond)
			tree.exit(16)
			tree.heavy.Add(-1)
			close(heavyRan)
		}); err != nil {
			t.Fatalf("sub.SubmitN(16) under an adaptive parent of ceiling 24 = %v, want nil", err)
		}
		w3Await(t, "the heavy task of the sub-pool", heavyRan)
		if !alone.Load() {
			t.Error("the sub-pool's task heavier than the parent's limit started while other tasks ran")
		}
		if n := tree.beside.Load(); n > 0 {
			t.Errorf("%d tasks started beside the task heavier than the limit", n)
		}
		close(stop)
		for _, f := range feeds {
			w3Await(t, "a feeder", f)
		}
		w3Await(t, "StopAndWait", goRun(root.StopAndWait))
		if n := log.over.Load(); n > 0 {
			t.Errorf("%d starts with the weights running above every limit since their submit", n)
		}
		if got, want := ran.Load(), accRoot.Load()+accSub.Load(); got != want {
			t.Errorf("%d tasks ran, %d accepted", got, want)
		}
		idleIdentity(t, "root", root.Stats())
		idleIdentity(t, "sub", sub.Stats())
	})
}

// TestAdvWeightsAdaptiveLimitUnderARateLimitStaysAboveItsFloor: a rate limit holds an adaptive
// pool (ceiling 32, floor 6) to far fewer tasks running than its limit allows, so the limit
// comes down toward what it runs; the doc says it moves between min and the ceiling, so no
// limit chosen, and no Stats.MaxWorkers, is below 6. The rate limit still holds every start
// (over any window T, starts ≤ burst + perSecond·T), counting a sub-pool's starts; weights
// of the running tasks never sum above a limit in force since their submit, and a task of
// weight 6 (the floor) always fits.
func TestAdvWeightsAdaptiveLimitUnderARateLimitStaysAboveItsFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ceiling, floor, rate, burst = 32, 6, 200.0, 4
		p := crew.New(ceiling, crew.WithAdaptiveLimit(floor), crew.WithQueueSize(64), crew.WithRateLimit(rate, burst))
		var log sizedWeighLog
		log.limits = []int{ceiling}
		var chosen atomic.Int64
		crew.OnLimit(p, func(n int) {
			chosen.Add(1)
			if n < floor || n > ceiling {
				t.Errorf("limit %d chosen outside [%d, %d]", n, floor, ceiling)
			}
			log.add(n)
		})
		res := newSlots(16)
		var accepted, ran atomic.Int64
		epoch := time.Now()
		var starts []time.Duration
		startsMu := make(chan struct{}, 1)
		stop := make(chan struct{})
		task := func(w int) (int, func()) {
			mark := log.mark()
			return w, func() {
				startsMu <- struct{}{}
				starts = append(starts, time.Since(epoch))
				<-startsMu
				log.start(mark, w)
				defer log.end(w)
				ran.Add(1)
				res.call(3 * time.Millisecond)
			}
		}
		// The pool's own tasks, one in ten of the floor's weight, and a sub-pool's, whose
		// starts the pool's rate limit counts too.
		sub := p.Sub(8, crew.WithQueueSize(32))
		feed := w3Feed(t, p, stop, &accepted, func(i int) (int, func()) {
			if i%10 == 9 {
				return task(floor)
			}
			return task(1)
		})
		subFeed := w3Feed(t, sub, stop, &accepted, func(i int) (int, func()) { return task(1 + i%2) })
		watch := goRun(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(7 * time.Millisecond):
				}
				if m := p.Stats().MaxWorkers; m < floor || m > ceiling {
					t.Errorf("MaxWorkers %d outside [%d, %d]", m, floor, ceiling)
				}
			}
		})
		time.Sleep(3 * time.Second)
		close(stop)
		w3Await(t, "the feeder", feed)
		w3Await(t, "the sub-pool's feeder", subFeed)
		w3Await(t, "the watcher", watch)
		w3Await(t, "StopAndWait", goRun(p.StopAndWait))
		if ran.Load() != accepted.Load() {
			t.Errorf("%d tasks ran, %d accepted", ran.Load(), accepted.Load())
		}
		if n := log.over.Load(); n > 0 {
			t.Errorf("%d starts with the weights running above every limit since their submit", n)
		}
		// Over every window between two starts, the starts in it are within the rate.
		slices.Sort(starts)
		for i := range starts {
			for j := i; j < len(starts); j++ {
				if n, allowed := float64(j-i+1), burst+rate*(starts[j]-starts[i]).Seconds(); n > allowed+1e-9 {
					t.Fatalf("%v starts between %v and %v, the rate allows %v", n, starts[i], starts[j], allowed)
				}
			}
		}
		if chosen.Load() == 0 {
			t.Error("the adaptive limit never chose a limit")
		}
		idleIdentity(t, "pool", p.Stats())
		t.Logf("%d tasks, starts from %v to %v, last limits %v", ran.Load(), starts[0], starts[len(starts)-1], log.limits[max(0, len(log.limits)-8):])
	})
}

// TestAdvWeightsResizeOfAnAdaptiveCeilingAndAQueuedHeavyTask: Resize on an adaptive pool sets
// the ceiling, and SubmitN checks a weight against the ceiling at the time of the call. A
// paused adaptive pool (ceiling 16) accepts a task of weight 16; Resize(4) lowers the ceiling
// (MaxWorkers ≤ 4 at once), so SubmitN(5) is then ErrTooHeavy and SubmitN(4) is accepted; on
// Resume the heavy task, accepted before the shrink, runs alone, and the rest run after it,
// never more than 4 slots at once. A floor above the ceiling counts as the ceiling: New(3,
// WithAdaptiveLimit(8)) reports MaxWorkers 3 and refuses SubmitN(4).
func TestAdvWeightsResizeOfAnAdaptiveCeilingAndAQueuedHeavyTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(16, crew.WithAdaptiveLimit(2))
		p.Pause()
		var h w3Held
		var order []string
		orderMu := make(chan struct{}, 1)
		note := func(s string) {
			orderMu <- struct{}{}
			order = append(order, s)
			<-orderMu
		}
		var heavyAlone atomic.Bool
		must(t, p.SubmitN(16, func() {
			heavyAlone.Store(h.running.Load() == 0)
			h.enter(16)
			h.heavy.Add(1)
			note("heavy")
			time.Sleep(10 * time.Millisecond)
			h.heavy.Add(-1)
			h.exit(16)
		}))
		p.Resize(4)
		if s := p.Stats(); s.MaxWorkers > 4 || s.MaxWorkers < 2 {
			t.Fatalf("MaxWorkers %d once Resize(4) returned on an adaptive pool of floor 2", s.MaxWorkers)
		}
		if err := p.SubmitN(5, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
			t.Fatalf("SubmitN(5) after the ceiling came down to 4 = %v, want ErrTooHeavy", err)
		}
		if p.TrySubmitN(5, func() {}) {
			t.Fatal("TrySubmitN(5) after the ceiling came down to 4 accepted")
		}
		var over atomic.Int64
		for i := range 12 {
			w := 1 + i%4
			must(t, p.SubmitN(w, func() {
				h.enter(w)
				defer h.exit(w)
				if held := h.held.Load(); held > 4 {
					over.Add(1)
				}
				note("light")
				time.Sleep(time.Millisecond)
			}))
		}
		if s := p.Stats(); s.Waiting != 13 || s.Running != 0 || s.Accepted != 13 || s.Rejected != 0 || s.Canceled != 0 {
			t.Fatalf("paused pool with 13 accepted: %+v", s)
		}
		p.Resume()
		w3Await(t, "Wait", goRun(p.Wait))
		if !heavyAlone.Load() || h.beside.Load() != 0 {
			t.Errorf("the task heavier than the new ceiling did not run alone (alone at start %v, %d started beside it)",
				heavyAlone.Load(), h.beside.Load())
		}
		if len(order) != 13 || order[0] != "heavy" {
			t.Errorf("order of starts %v, want the heavy task first (FIFO)", order)
		}
		if n := over.Load(); n > 0 {
			t.Errorf("%d starts with weights above the ceiling of 4 running", n)
		}
		s := p.Stats()
		idleIdentity(t, "pool", s)
		if s.MaxWorkers > 4 || s.MaxWorkers < 2 {
			t.Errorf("MaxWorkers %d, want within [2, 4]", s.MaxWorkers)
		}
		p.StopAndWait()

		q := crew.New(3, crew.WithAdaptiveLimit(8))
		defer q.StopAndWait()
		if m := q.Stats().MaxWorkers; m != 3 {
			t.Errorf("New(3, WithAdaptiveLimit(8)): MaxWorkers %d, want 3", m)
		}
		if err := q.SubmitN(4, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
			t.Errorf("SubmitN(4) on a pool of ceiling 3 = %v, want ErrTooHeavy", err)
		}
		done := make(chan struct{})
		must(t, q.SubmitN(3, func() { close(done) }))
		w3Await(t, "a task of the ceiling's weight", done)
		w3Await(t, "Wait", goRun(q.Wait))

		// Resize below the floor: the floor counts as the ceiling; back above it, the floor
		// holds again.
		q.Resize(1)
		if m := q.Stats().MaxWorkers; m != 1 {
			t.Errorf("Resize(1) below a floor of 8: MaxWorkers %d, want 1", m)
		}
		if err := q.SubmitN(2, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
			t.Errorf("SubmitN(2) at a ceiling of 1 = %v, want ErrTooHeavy", err)
		}
		if q.TrySubmitN(2, func() {}) {
			t.Error("TrySubmitN(2) at a ceiling of 1 accepted")
		}
		q.Resize(16)
		if m := q.Stats().MaxWorkers; m < 8 || m > 16 {
			t.Errorf("Resize(16) with a floor of 8: MaxWorkers %d, want within [8, 16]", m)
		}
		done2 := make(chan struct{})
		must(t, q.SubmitN(16, func() { close(done2) }))
		w3Await(t, "a task of the new ceiling's weight", done2)
		w3Await(t, "Wait", goRun(q.Wait))
		if s := q.Stats(); s.Rejected != 0 || s.Canceled != 0 || s.Accepted != 2 {
			t.Errorf("refused weights counted: %+v, want Accepted 2, Rejected and Canceled 0", s)
		}
	})
}

// TestAdvWeightsAdaptiveSubPoolOfASubPool: an adaptive sub-pool (ceiling 8, floor 1) of a
// sub-pool of 6 of a pool of 10. SubmitN on it is ErrTooHeavy above 6, the smallest limit on
// its path, whatever its own limit; a task of weight 6 is accepted even once its own limit
// came down below 6, and runs; the weights running in the innermost never sum above a limit
// it reported since their submit, nor above 6 in the middle one. A weighted task queued behind
// a pause comes back from StopNow as the plain task it was given, counted in Returned.
func TestAdvWeightsAdaptiveSubPoolOfASubPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := crew.New(10, crew.WithQueueSize(32))
		mid := root.Sub(6, crew.WithQueueSize(32))
		leaf := mid.Sub(8, crew.WithAdaptiveLimit(1), crew.WithQueueSize(32))
		var log sizedWeighLog
		log.limits = []int{8}
		crew.OnLimit(leaf, func(n int) {
			if n < 1 || n > 8 {
				t.Errorf("leaf limit %d chosen outside [1, 8]", n)
			}
			log.add(n)
		})
		res := newSlots(2)
		var midH w3Held
		var accepted, ran, midOver atomic.Int64
		stop := make(chan struct{})
		feed := w3Feed(t, leaf, stop, &accepted, func(i int) (int, func()) {
			w := 1 + i%2
			mark := log.mark()
			return w, func() {
				log.start(mark, w)
				defer log.end(w)
				midH.enter(w)
				defer midH.exit(w)
				if midH.held.Load() > 6 {
					midOver.Add(1)
				}
				ran.Add(1)
				res.call(2 * time.Millisecond)
			}
		})
		time.Sleep(2 * time.Second)
		if err := leaf.SubmitN(7, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
			t.Fatalf("SubmitN(7) on a sub-pool under a sub-pool of 6 = %v, want ErrTooHeavy", err)
		}
		lim := leaf.Stats().MaxWorkers
		done := make(chan struct{})
		if err := leaf.SubmitN(6, func() {
			midH.enter(6)
			midH.heavy.Add(1)
			time.Sleep(3 * time.Millisecond)
			midH.heavy.Add(-1)
			midH.exit(6)
			close(done)
		}); err != nil {
			t.Fatalf("SubmitN(6) on an adaptive sub-pool at limit %d, ceiling 8, under a sub-pool of 6 = %v", lim, err)
		}
		w3Await(t, "the task of weight 6", done)
		close(stop)
		w3Await(t, "the feeder", feed)
		w3Await(t, "Wait", goRun(root.Wait))
		if n := log.over.Load(); n > 0 {
			t.Errorf("%d starts in the leaf with weights above every limit since their submit", n)
		}
		if n := midOver.Load(); n > 0 {
			t.Errorf("%d starts with weights above 6 running in the middle sub-pool", n)
		}
		if n := midH.beside.Load(); n > 0 {
			t.Errorf("%d tasks started beside the task of the full weight of the middle sub-pool", n)
		}
		if ran.Load() != accepted.Load() {
			t.Errorf("%d ran, %d accepted", ran.Load(), accepted.Load())
		}

		// A paused weighted backlog comes back from StopNow.
		leaf.Pause()
		var heldBack atomic.Int64
		tasks := []func(){
			func() { heldBack.Add(1) },
			func() { heldBack.Add(10) },
			func() { heldBack.Add(100) },
		}
		for i, f := range tasks {
			must(t, leaf.SubmitN(1+2*i, f))
		}
		before := leaf.Stats()
		back := leaf.StopNow()
		if len(back) != 3 {
			t.Fatalf("StopNow returned %d tasks, want the 3 weighted ones", len(back))
		}
		for _, f := range back {
			f() // the plain tasks as given, in their order
		}
		if heldBack.Load() != 111 {
			t.Errorf("the returned tasks add %d, want 111", heldBack.Load())
		}
		after := leaf.Stats()
		if after.Returned != before.Returned+3 || after.Waiting != 0 {
			t.Errorf("StopNow of 3 weighted tasks: Stats %+v, before %+v", after, before)
		}
		w3Await(t, "StopAndWait", goRun(root.StopAndWait))
		for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
			idleIdentity(t, name, p.Stats())
		}
	})
}

// TestAdvWeightsAHeavyTaskOfAHigherLevelIsNotOvertakenByALowerLevel: WithPriority's doc says
// no task of a higher level is waiting when a lower-level one starts, and SubmitN's that a
// heavy task is never overtaken. A pool of 4 (fixed, then adaptive) runs three tasks of a
// level-0 sub-pool; a task of weight 2 of a level-1 sub-pool waits for room; a task of weight
// 1 submitted after it at level 0 (to a sub-pool, the pool itself, or a Keyed on the pool),
// which would fit, must not start before it.
func TestAdvWeightsAHeavyTaskOfAHigherLevelIsNotOvertakenByALowerLevel(t *testing.T) {
	for i := range 6 {
		adaptive, low := i%2 == 1, i/2
		var opts []crew.Option
		if adaptive {
			opts = append(opts, crew.WithAdaptiveLimit(4))
		}
		root := crew.New(4, opts...)
		hi := root.Sub(4, crew.WithPriority(1))
		lo := root.Sub(4)
		started := make(chan string, 8)
		releases := make([]chan struct{}, 3)
		for i := range releases {
			releases[i] = make(chan struct{})
			must(t, lo.Submit(func() { started <- "blocker"; <-releases[i] }))
		}
		for range releases {
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the blockers did not start")
			}
		}
		heavyRelease := make(chan struct{})
		must(t, hi.SubmitN(2, func() { started <- "heavy"; <-heavyRelease }))
		light := func() { started <- "light" }
		switch low {
		case 0:
			must(t, lo.Submit(light))
		case 1:
			must(t, root.Submit(light))
		case 2:
			must(t, crew.NewKeyed[int](root).Submit(1, light))
		}
		select {
		case s := <-started:
			t.Errorf("adaptive %v, low %d: %q started with 3 of 4 slots held and a task of weight 2 of a higher level waiting", adaptive, low, s)
		case <-time.After(30 * time.Millisecond):
		}
		close(releases[0])
		var order []string
		select {
		case s := <-started:
			order = append(order, s)
		case <-time.After(10 * time.Second):
			t.Fatal("nothing started after a blocker returned")
		}
		close(heavyRelease)
		close(releases[1])
		close(releases[2])
		select {
		case s := <-started:
			order = append(order, s)
		case <-time.After(10 * time.Second):
			t.Fatal("the last task did not start")
		}
		if order[0] != "heavy" {
			t.Errorf("adaptive %v, low %d: order of starts %v, want the level-1 task first", adaptive, low, order)
		}
		select {
		case <-goRun(root.StopAndWait):
		case <-time.After(10 * time.Second):
			t.Fatal("StopAndWait did not return")
		}
		for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "lo": lo} {
			idleIdentity(t, name, p.Stats())
		}
	}
}

// TestAdvWeightsAdaptiveLimitMovesAtMostOncePerWindow: WithAdaptiveLimit's doc says a limit of
// n moves at most once per min(max(32, 4n), 1024) completions. On a bubble's clock, an
// adaptive pool (ceiling 64, floor 2) of weighted tasks calling a resource of 4 slots: between
// two limits it chooses, the tasks that returned number at least that window, less the tasks
// that may have been running (and so not yet counted by the pool) when the first was chosen.
// Stats.MaxWorkers at quiet points is the last limit chosen.
func TestAdvWeightsAdaptiveLimitMovesAtMostOncePerWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ceiling = 64
		p := crew.New(ceiling, crew.WithAdaptiveLimit(2), crew.WithQueueSize(128))
		var done atomic.Int64
		type change struct {
			limit int
			done  int64
		}
		var changes []change
		changesMu := make(chan struct{}, 1)
		crew.OnLimit(p, func(n int) {
			changesMu <- struct{}{}
			changes = append(changes, change{n, done.Load()})
			<-changesMu
		})
		res := newSlots(4)
		var accepted atomic.Int64
		stop := make(chan struct{})
		feed := w3Feed(t, p, stop, &accepted, func(i int) (int, func()) {
			w := 1 + i%2
			return w, func() {
				res.call(time.Millisecond)
				done.Add(1)
			}
		})
		time.Sleep(3 * time.Second)
		close(stop)
		w3Await(t, "the feeder", feed)
		w3Await(t, "Wait", goRun(p.Wait))
		changesMu <- struct{}{}
		changes = slices.Clone(changes)
		<-changesMu
		if len(changes) < 2 {
			t.Fatalf("the limit changed %d times in 3 s", len(changes))
		}
		prev := change{ceiling, 0}
		for i, c := range changes {
			window := int64(min(max(32, 4*prev.limit), 1024))
			if got := c.done - prev.done; got < window-int64(prev.limit) {
				t.Errorf("change %d: limit %d -> %d after %d completions, the window of a limit of %d is %d",
					i, prev.limit, c.limit, got, prev.limit, window)
			}
			prev = c
		}
		if m := p.Stats().MaxWorkers; m != prev.limit {
			t.Errorf("MaxWorkers %d on a quiet pool, the last limit chosen %d", m, prev.limit)
		}
		w3Await(t, "StopAndWait", goRun(p.StopAndWait))
		idleIdentity(t, "pool", p.Stats())
		t.Logf("%d changes, %d tasks", len(changes), done.Load())
	})
}

// TestAdvWeightsWithOverflowPolicies: a weighted task is a task like any other for the
// overflow policies. On a pool of 2 with a queue of 1: DiscardOldest drops a queued weighted
// task, handing the discard handler the very function given to SubmitN (it never runs from
// the pool), and counts it in Discarded; TrySubmitN on the full queue returns false and drops
// nothing; CallerRuns runs a weighted task on its submitter, counted in CallerRan, beside the
// tasks holding every slot (caller-run tasks do not count against MaxWorkers).
func TestAdvWeightsWithOverflowPolicies(t *testing.T) {
	var handed []any
	dp := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { handed = append(handed, v) }))
	defer dp.StopAndWait()
	hold := make(chan struct{})
	started := make(chan struct{}, 2)
	must(t, dp.SubmitN(2, func() { started <- struct{}{}; <-hold }))
	w3AwaitReal(t, "the heavy blocker", started)
	var ran atomic.Int64
	must(t, dp.SubmitN(2, func() { ran.Add(10) }))
	if dp.TrySubmitN(2, func() { ran.Add(1000) }) {
		t.Fatal("TrySubmitN accepted into a full queue")
	}
	if s := dp.Stats(); s.Discarded != 0 || s.Waiting != 1 {
		t.Fatalf("TrySubmitN on a full queue dropped a task: %+v", s)
	}
	must(t, dp.SubmitN(1, func() { ran.Add(1) }))
	if len(handed) != 1 {
		t.Fatalf("the discard handler got %d tasks, want 1", len(handed))
	}
	f, ok := handed[0].(func())
	if !ok {
		t.Fatalf("the discard handler got a %T, want the func() given to SubmitN", handed[0])
	}
	close(hold)
	w3AwaitReal(t, "Wait", goRun(dp.Wait))
	if got := ran.Load(); got != 1 {
		t.Fatalf("ran adds up to %d, want 1 (only the task that dropped the other)", got)
	}
	f()
	if got := ran.Load(); got != 11 {
		t.Fatalf("the dropped function adds %d, want 10: it is not the function given", got-1)
	}
	if s := dp.Stats(); s.Discarded != 1 || s.Accepted != 3 || s.Completed != 2 {
		t.Errorf("DiscardOldest pool: %+v, want Accepted 3, Completed 2, Discarded 1", s)
	}

	cp := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer cp.StopAndWait()
	hold2 := make(chan struct{})
	must(t, cp.SubmitN(2, func() { started <- struct{}{}; <-hold2 }))
	w3AwaitReal(t, "the heavy blocker", started)
	must(t, cp.SubmitN(2, func() {}))
	var inline atomic.Bool
	if err := cp.SubmitN(2, func() { inline.Store(true) }); err != nil {
		t.Fatalf("SubmitN into a full CallerRuns queue = %v", err)
	}
	if !inline.Load() {
		t.Fatal("SubmitN into a full CallerRuns queue returned before running the task")
	}
	if s := cp.Stats(); s.CallerRan != 1 || s.Running != 1 || s.Waiting != 1 {
		t.Errorf("CallerRuns pool with a caller-run weighted task: %+v", s)
	}
	close(hold2)
	w3AwaitReal(t, "Wait", goRun(cp.Wait))
	s := cp.Stats()
	idleIdentity(t, "CallerRuns pool", s)
	if s.Accepted != 3 || s.Completed != 3 || s.CallerRan != 1 {
		t.Errorf("CallerRuns pool: %+v, want Accepted 3, Completed 3, CallerRan 1", s)
	}
}

// w3AwaitReal waits for ch, failing t after 10 s.
func w3AwaitReal(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not done after 10 s", what)
	}
}

// TestAdvWeightsAdaptiveSubPoolShrunkBelowAQueuedHeavyTask: on a sub-pool, the weights running
// never sum above either limit, and a task accepted before a shrinking Resize made it heavier
// than the limit runs alone once every running task has returned. An adaptive sub-pool
// (ceiling 8) of a pool of 8, paused, accepts a task of weight 8; Resize(3) lowers its ceiling
// (then SubmitN(4) is ErrTooHeavy); on Resume, with two tasks of the parent running, the heavy
// task waits for them (8 slots of the parent's 8), runs alone, and the sub-pool's lighter
// tasks behind it run after it, never more than 3 slots at once.
func TestAdvWeightsAdaptiveSubPoolShrunkBelowAQueuedHeavyTask(t *testing.T) {
	root := crew.New(8)
	defer root.StopAndWait()
	sub := root.Sub(8, crew.WithAdaptiveLimit(2))
	sub.Pause()
	var h w3Held
	events := make(chan string, 16)
	heavyDone := make(chan struct{})
	must(t, sub.SubmitN(8, func() {
		h.enter(8)
		h.heavy.Add(1)
		events <- "heavy"
		time.Sleep(5 * time.Millisecond)
		h.heavy.Add(-1)
		h.exit(8)
		close(heavyDone)
	}))
	sub.Resize(3)
	if m := sub.Stats().MaxWorkers; m > 3 || m < 2 {
		t.Fatalf("sub MaxWorkers %d after Resize(3) with a floor of 2", m)
	}
	if err := sub.SubmitN(4, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
		t.Fatalf("SubmitN(4) on a sub-pool of ceiling 3 = %v, want ErrTooHeavy", err)
	}
	var over atomic.Int64
	for range 3 {
		must(t, sub.SubmitN(2, func() {
			h.enter(2)
			defer h.exit(2)
			if h.held.Load() > 3 {
				over.Add(1)
			}
			events <- "light"
			time.Sleep(time.Millisecond)
		}))
	}
	rel := make(chan struct{})
	started := make(chan struct{}, 2)
	for range 2 {
		must(t, root.Submit(func() {
			h.enter(1)
			defer h.exit(1)
			started <- struct{}{}
			<-rel
		}))
	}
	for range 2 {
		w3AwaitReal(t, "the parent's tasks", started)
	}
	sub.Resume()
	select {
	case e := <-events:
		t.Fatalf("%q started with two tasks of the parent holding 2 of its 8 slots", e)
	case <-time.After(30 * time.Millisecond):
	}
	close(rel)
	w3AwaitReal(t, "the heavy task", heavyDone)
	w3AwaitReal(t, "Wait", goRun(root.Wait))
	close(events)
	var order []string
	for e := range events {
		order = append(order, e)
	}
	if len(order) != 4 || order[0] != "heavy" {
		t.Errorf("starts %v, want the heavy task first, then three light ones", order)
	}
	if n := h.beside.Load(); n > 0 {
		t.Errorf("%d tasks started beside the heavy one", n)
	}
	if n := over.Load(); n > 0 {
		t.Errorf("%d starts with more than the sub-pool's 3 slots held", n)
	}
	idleIdentity(t, "sub", sub.Stats())
}

// TestAdvWeightsPriorityHoldsAtResumeWithAHeavyHigherTask: WithPriority's doc says no task of a
// higher level is waiting when a lower-level one starts, also after Resume, and SubmitN's that
// the weights running never sum above MaxWorkers. A paused pool of 4 (fixed, then adaptive)
// holds a task of weight 3 of a level-1 sub-pool and light tasks of a level-0 sub-pool, of the
// pool itself and of a Keyed on it. On Resume the heavy task must be taken first, so until it
// has returned at most one light task (the slot left beside it) runs at a time: two light
// tasks running together before the heavy one returned mean either that a light one started
// while the heavy one waited, or that 5 slots of 4 were held.
func TestAdvWeightsPriorityHoldsAtResumeWithAHeavyHigherTask(t *testing.T) {
	for _, adaptive := range []bool{false, true} {
		var opts []crew.Option
		if adaptive {
			opts = append(opts, crew.WithAdaptiveLimit(4))
		}
		root := crew.New(4, opts...)
		hi := root.Sub(4, crew.WithPriority(1))
		lo := root.Sub(4)
		k := crew.NewKeyed[int](root)
		root.Pause()
		var lights, together atomic.Int64
		var heavyEnded atomic.Bool
		heavyDone := make(chan struct{})
		for i := range 6 {
			light := func() {
				if n := lights.Add(1); n > 1 && !heavyEnded.Load() {
					together.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				lights.Add(-1)
			}
			switch i % 3 {
			case 0:
				must(t, lo.Submit(light))
			case 1:
				must(t, root.Submit(light))
			case 2:
				must(t, k.Submit(i, light))
			}
		}
		must(t, hi.SubmitN(3, func() {
			time.Sleep(20 * time.Millisecond)
			heavyEnded.Store(true)
			close(heavyDone)
		}))
		root.Resume()
		w3AwaitReal(t, "the heavy task", heavyDone)
		w3AwaitReal(t, "StopAndWait", goRun(root.StopAndWait))
		if n := together.Load(); n > 0 {
			t.Errorf("adaptive %v: %d light tasks started beside another before the level-1 task of weight 3 returned", adaptive, n)
		}
		for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "lo": lo} {
			idleIdentity(t, name, p.Stats())
		}
		idleIdentity(t, "keyed", k.Stats())
	}
}
