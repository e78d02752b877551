package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// resizeNode is one pool of a tree under test, with a gauge of the tasks running in it and
// in the pools below it, checked against a limit that is never below the one the pool
// promises (see limitGauge for the protocol).
type resizeNode struct {
	name    string
	p       *crew.Pool
	up      *resizeNode
	lo, hi  int          // the range the storm resizes it in
	limit   atomic.Int64 // at or above the limit in force
	running atomic.Int64 // tasks of it and its sub-pools inside their functions
	held    atomic.Int64 // the weights of those tasks
	excess  atomic.Int64 // the worst excess seen over limit
	heavy   atomic.Int64 // the worst weight excess seen over limit
	mu      sync.Mutex   // serializes exact resizes
}

func newResizeNode(name string, p *crew.Pool, up *resizeNode, lo, hi int) *resizeNode {
	n := &resizeNode{name: name, p: p, up: up, lo: lo, hi: hi}
	if p != nil {
		n.limit.Store(int64(p.Stats().MaxWorkers))
	}
	return n
}

func raiseTo(a *atomic.Int64, v int64) {
	for {
		h := a.Load()
		if v <= h || a.CompareAndSwap(h, v) {
			return
		}
	}
}

// resizeCheck reports err from a goroutine other than the test's own.
func resizeCheck(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// enter counts a task of weight w as running in n and every pool above it, and records any
// count above a limit. A task heavier than a limit runs alone, so a lone task never counts
// as a weight excess.
func (n *resizeNode) enter(w int) {
	for x := n; x != nil; x = x.up {
		before := x.limit.Load()
		cur := x.running.Add(1)
		h := x.held.Add(int64(w))
		after := x.limit.Load()
		lim := max(before, after)
		raiseTo(&x.excess, cur-lim)
		if cur > 1 {
			raiseTo(&x.heavy, h-lim)
		}
	}
}

func (n *resizeNode) leave(w int) {
	for x := n; x != nil; x = x.up {
		x.held.Add(-int64(w))
		x.running.Add(-1)
	}
}

// setBound makes the gauge's limit k without resizing: for a storm whose limits all stay at
// or below k.
func (n *resizeNode) setBound(k int) { n.limit.Store(int64(k)) }

// resizeExact resizes n's pool to k, keeping the gauge's limit at or above the promised one:
// it stores a higher limit before the Resize, a lower one once no more than k tasks run. It
// must not be called from a task of the tree.
func (n *resizeNode) resizeExact(t *testing.T, k int) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if int64(k) >= n.limit.Load() {
		n.limit.Store(int64(k))
		n.p.Resize(k)
		return
	}
	n.p.Resize(k)
	if s := n.p.Stats(); s.MaxWorkers != k {
		t.Errorf("%s: MaxWorkers = %d right after Resize(%d)", n.name, s.MaxWorkers, k)
	}
	awaitStats(t, n.p, n.name+" to run no more than its new limit", func(s crew.Stats) bool { return s.Running <= k })
	n.limit.Store(int64(k))
}

// randomResize resizes n's pool to a random limit of its range, without the gauge.
func (n *resizeNode) randomResize() { n.p.Resize(n.lo + rand.IntN(n.hi-n.lo+1)) }

func (n *resizeNode) check(t *testing.T, phase string) {
	t.Helper()
	if e := n.excess.Load(); e > 0 {
		t.Errorf("%s: %s: %d more tasks ran at once than the limit in force", phase, n.name, e)
	}
	if e := n.heavy.Load(); e > 0 {
		t.Errorf("%s: %s: the weights of running tasks summed %d above the limit in force", phase, n.name, e)
	}
}

// waitTree waits, bounded, until every pool of nodes (leaves first) has nothing accepted
// left, and checks the idle identity of each.
func waitTree(t *testing.T, what string, nodes []*resizeNode) {
	t.Helper()
	for i := len(nodes) - 1; i >= 0; i-- {
		awaitReturn(t, what+": Wait of "+nodes[i].name, goRun(nodes[i].p.Wait))
	}
	for _, n := range nodes {
		idleIdentity(t, what+": "+n.name, n.p.Stats())
	}
}

// watchBalance checks, until stop is closed, every snapshot of the pools of nodes against
// Stats' "Running+Waiting counts each accepted task that has not ended exactly once", and
// that no counter goes back; it returns when stop is closed, reporting through t.
func watchBalance(t *testing.T, wg *sync.WaitGroup, stop <-chan struct{}, nodes []*resizeNode) {
	for _, n := range nodes {
		watchBalanceOf(t, wg, stop, n.name, n.p.Stats)
	}
}

// watchBalanceOf is watchBalance for one Stats function (a pool's or a Keyed's).
func watchBalanceOf(t *testing.T, wg *sync.WaitGroup, stop <-chan struct{}, name string, stats func() crew.Stats) {
	var prev crew.Stats
	failed := false
	repeatUntil(wg, stop, func() {
		s := stats()
		ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
		if !failed && (uint64(s.Running+s.Waiting)+ended != s.Accepted || countersWentBack(s, prev) ||
			s.Running < 0 || s.Waiting < 0 || s.Idle < 0) {
			failed = true
			t.Errorf("%s: snapshot %+v (after %+v): Running+Waiting does not count each accepted task not ended once, or a counter went back",
				name, s, prev)
		}
		prev = s
		runtime.Gosched()
	})
}

// resizeStormSize is the number of tasks each submitter gives a storm.
func resizeStormSize() int {
	if testing.Short() {
		return 200
	}
	return 1500
}

// TestAdvResizeStormOnATreeRunsEachTaskOnceWithinEveryLimit attacks Pool.Resize's "No task
// is lost or run twice", "Resize is safe to call from a task", the Stats promise that
// MaxWorkers is the new limit from Resize's return, and Sub's "Tasks of p and of all its
// sub-pools together never exceed p's limit, whatever the sub-pool's own": a tree whose
// every pool is resized at once from many goroutines, from its tasks and from hooks, with a
// sub-pool whose range lies above its parent's. Each task must run exactly once, and the
// tasks inside their functions never exceed the limit of their pool nor of any ancestor:
// during the storm the highest limit of each range, after it the exact one.
func TestAdvResizeStormOnATreeRunsEachTaskOnceWithinEveryLimit(t *testing.T) {
	var rootN, bN *resizeNode
	var stormy atomic.Bool
	stormy.Store(true)
	hooks := crew.Hooks{
		Started: func(crew.TaskInfo) {
			if stormy.Load() && rand.IntN(8) == 0 {
				bN.randomResize()
			}
		},
		Finished: func(crew.TaskInfo) {
			if stormy.Load() && rand.IntN(8) == 0 {
				rootN.randomResize()
			}
		},
	}
	root := crew.New(4, crew.WithHooks(hooks))
	defer root.StopAndWait()
	a := root.Sub(3)
	b := root.Sub(6, crew.WithHooks(hooks))
	aa := a.Sub(2)
	rootN = newResizeNode("root", root, nil, 2, 6)
	aN := newResizeNode("a", a, rootN, 1, 4)
	bN = newResizeNode("b", b, rootN, 3, 8)
	aaN := newResizeNode("a/a", aa, aN, 1, 3)
	nodes := []*resizeNode{rootN, aN, bN, aaN}
	for _, n := range nodes {
		n.setBound(n.hi)
	}

	per := resizeStormSize()
	const submitters = 4
	runs := make([]atomic.Int32, submitters*per*2)
	task := func(n *resizeNode, i int) func() {
		return func() {
			n.enter(1)
			defer n.leave(1)
			runs[i].Add(1)
			if stormy.Load() && i%5 == 0 {
				nodes[i%len(nodes)].randomResize()
			}
			runtime.Gosched()
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		repeatUntil(&wg, stop, func() {
			n.randomResize()
			runtime.Gosched()
		})
	}
	watchBalance(t, &wg, stop, nodes)
	together(submitters, per, func(c, i int) {
		k := c*per + i
		n := nodes[k%len(nodes)]
		if err := n.p.Submit(task(n, k)); err != nil {
			t.Errorf("Submit to %s = %v", n.name, err)
		}
	})
	waitTree(t, "storm", nodes)
	stormy.Store(false)
	close(stop)
	wg.Wait()
	for _, n := range nodes {
		n.check(t, "storm")
	}

	// The storm is over: every pool to the bottom of its range, exactly, then a second round.
	for _, n := range nodes {
		n.resizeExact(t, n.lo)
	}
	together(submitters, per, func(c, i int) {
		k := submitters*per + c*per + i
		n := nodes[k%len(nodes)]
		if err := n.p.Submit(task(n, k)); err != nil {
			t.Errorf("Submit to %s = %v", n.name, err)
		}
	})
	waitTree(t, "after the storm", nodes)
	for _, n := range nodes {
		n.check(t, "after the storm")
		if s := n.p.Stats(); s.MaxWorkers != n.lo {
			t.Errorf("%s: MaxWorkers = %d, want %d, the last Resize", n.name, s.MaxWorkers, n.lo)
		}
	}
	ranOnce(t, runs)
	// Shrinking makes idle workers above the limit exit.
	awaitStats(t, root, "the root's idle workers within its limit", func(s crew.Stats) bool { return s.Idle <= s.MaxWorkers })
	for _, n := range nodes[1:] {
		if s := n.p.Stats(); s.Idle != 0 {
			t.Errorf("%s: a sub-pool reports %d idle workers, want none", n.name, s.Idle)
		}
	}
}

// gatedTasks submits tasks that each wait for one value on release (or for all to be
// closed), counting themselves in n's gauge; started counts those that began.
type gatedTasks struct {
	release chan struct{}
	all     chan struct{}
	once    sync.Once
	started atomic.Int64
	ended   atomic.Int64
}

func newGatedTasks() *gatedTasks {
	return &gatedTasks{release: make(chan struct{}), all: make(chan struct{})}
}

func (g *gatedTasks) task(n *resizeNode) func() {
	return func() {
		n.enter(1)
		defer n.leave(1)
		g.started.Add(1)
		select {
		case <-g.release:
		case <-g.all:
		}
		g.ended.Add(1)
	}
}

// releaseOne lets one running task return, failing t if none takes the release.
func (g *gatedTasks) releaseOne(t *testing.T) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatal("no running task took a release within 10 s")
	}
}

func (g *gatedTasks) releaseAll() { g.once.Do(func() { close(g.all) }) }

// TestAdvResizeParentBelowItsSubPoolsLimitsHoldsAtEveryStart attacks the promise that after
// a parent's shrinking Resize returns no task of any sub-pool starts while the parent runs
// its new limit or more, and Resize's "Growing starts queued tasks at once": a parent of 8
// running two full sub-pools of 4 is resized to 2, below the sum of its sub-pools' limits.
// As running tasks return, none may start until fewer than 2 run; growing back to 8 must
// start queued sub-pool tasks without a new submit.
func TestAdvResizeParentBelowItsSubPoolsLimitsHoldsAtEveryStart(t *testing.T) {
	root := crew.New(8)
	defer root.StopAndWait()
	s1, s2 := root.Sub(4), root.Sub(4)
	rootN := newResizeNode("root", root, nil, 2, 8)
	n1 := newResizeNode("s1", s1, rootN, 4, 4)
	n2 := newResizeNode("s2", s2, rootN, 4, 4)
	g := newGatedTasks()
	defer g.releaseAll()
	for range 12 {
		must(t, s1.Submit(g.task(n1)))
		must(t, s2.Submit(g.task(n2)))
	}
	waitFor(t, "8 sub-pool tasks to run", func() bool { return g.started.Load() == 8 })

	root.Resize(2)
	if s := root.Stats(); s.MaxWorkers != 2 {
		t.Fatalf("root MaxWorkers = %d right after Resize(2)", s.MaxWorkers)
	}
	for i := range 6 {
		g.releaseOne(t)
		waitFor(t, "a released task to return", func() bool { return g.ended.Load() == int64(i+1) })
	}
	awaitStats(t, root, "the root to run 2 sub-pool workers", func(s crew.Stats) bool { return s.Running == 2 })
	time.Sleep(20 * time.Millisecond)
	if n := g.started.Load(); n != 8 {
		t.Fatalf("%d tasks started, want 8: a sub-pool task started while the parent ran its new limit of 2", n)
	}
	g.releaseOne(t)
	waitFor(t, "one task to start in the freed slot", func() bool { return g.started.Load() == 9 })
	time.Sleep(20 * time.Millisecond)
	if n := g.started.Load(); n != 9 {
		t.Fatalf("%d tasks started, want 9 under the parent's limit of 2", n)
	}
	rootN.check(t, "shrunk")
	if e := rootN.running.Load(); e > 2 {
		t.Fatalf("%d tasks run under a root limit of 2", e)
	}

	rootN.setBound(8)
	root.Resize(8)
	waitFor(t, "growing the parent to start 8 queued sub-pool tasks", func() bool { return rootN.running.Load() == 8 })
	g.releaseAll()
	waitTree(t, "end", []*resizeNode{rootN, n1, n2})
	for _, n := range []*resizeNode{rootN, n1, n2} {
		n.check(t, "end")
	}
	if n := g.started.Load(); n != 24 {
		t.Fatalf("%d tasks ran, want 24", n)
	}
}

// TestAdvResizeSubPoolAboveItsParentStaysUnderTheParent attacks Sub's promise that a
// sub-pool's tasks never exceed the parent's limit whatever its own, after the sub-pool is
// resized above its parent: its Stats report its own new limit, its tasks stay within the
// parent's, SubmitN checks the smallest limit on the path, and growing the parent then
// starts more of them at once.
func TestAdvResizeSubPoolAboveItsParentStaysUnderTheParent(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	s := root.Sub(1)
	s.Resize(10)
	if got := s.Stats().MaxWorkers; got != 10 {
		t.Fatalf("sub-pool MaxWorkers = %d after Resize(10), want 10", got)
	}
	rootN := newResizeNode("root", root, nil, 2, 2)
	sN := newResizeNode("sub", s, rootN, 10, 10)
	g := newGatedTasks()
	defer g.releaseAll()
	for range 12 {
		must(t, s.Submit(g.task(sN)))
	}
	waitFor(t, "2 tasks to run", func() bool { return g.started.Load() == 2 })
	time.Sleep(20 * time.Millisecond)
	if n := g.started.Load(); n != 2 {
		t.Fatalf("%d sub-pool tasks run at once under a parent of 2", n)
	}
	if err := s.SubmitN(3, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
		t.Fatalf("SubmitN(3) on a sub-pool of 10 under a parent of 2 = %v, want ErrTooHeavy", err)
	}
	rootN.setBound(5)
	root.Resize(5)
	waitFor(t, "growing the parent to start 5 sub-pool tasks", func() bool { return g.started.Load() == 5 })
	time.Sleep(20 * time.Millisecond)
	if n := g.started.Load(); n != 5 {
		t.Fatalf("%d sub-pool tasks run at once under a parent of 5", n)
	}
	g.releaseAll()
	waitTree(t, "end", []*resizeNode{rootN, sN})
	rootN.check(t, "end")
	if n := g.started.Load(); n != 12 {
		t.Fatalf("%d tasks ran, want 12", n)
	}
}

// TestAdvResizeWhilePausedStartsNothingUntilResume attacks Pause's "once Pause has returned,
// none starts" against Resize's "Growing starts queued tasks at once": growing a paused pool
// (or a sub-pool whose parent is paused) starts nothing; Resume then starts the queued tasks
// up to the new limit. A shrink while paused holds after Resume.
func TestAdvResizeWhilePausedStartsNothingUntilResume(t *testing.T) {
	for _, viaParent := range []bool{false, true} {
		t.Run(fmt.Sprintf("parentPaused=%v", viaParent), func(t *testing.T) {
			root := crew.New(8)
			defer root.StopAndWait()
			p := root.Sub(1)
			paused := p
			if viaParent {
				paused = root
			}
			rootN := newResizeNode("root", root, nil, 8, 8)
			n := newResizeNode("sub", p, rootN, 1, 6)
			g := newGatedTasks()
			defer g.releaseAll()
			for range 6 {
				must(t, p.Submit(g.task(n)))
			}
			waitFor(t, "the first task to run", func() bool { return g.started.Load() == 1 })
			paused.Pause()
			n.setBound(6)
			p.Resize(6)
			if got := p.Stats().MaxWorkers; got != 6 {
				t.Fatalf("MaxWorkers = %d after Resize(6)", got)
			}
			g.releaseOne(t)
			awaitStats(t, p, "the released task to end", func(s crew.Stats) bool { return s.Running == 0 })
			time.Sleep(20 * time.Millisecond)
			if s := p.Stats(); s.Running != 0 || g.started.Load() != 1 {
				t.Fatalf("a task started on a paused pool after a growing Resize: %+v, %d started", s, g.started.Load())
			}
			paused.Resume()
			waitFor(t, "Resume to start the 5 queued tasks at the new limit", func() bool { return g.started.Load() == 6 })

			// Shrink while paused, queue more, release the running ones, Resume: one at a time.
			paused.Pause()
			for range 5 {
				must(t, p.Submit(g.task(n)))
			}
			p.Resize(1)
			for range 5 {
				g.releaseOne(t)
			}
			awaitStats(t, p, "the running tasks to return", func(s crew.Stats) bool { return s.Running == 0 })
			n.setBound(1)
			paused.Resume()
			for i := range 5 {
				waitFor(t, "the next task to start", func() bool { return g.started.Load() == int64(7+i) })
				time.Sleep(5 * time.Millisecond)
				if r := n.running.Load(); r != 1 {
					t.Fatalf("%d tasks run after Resume under a limit of 1", r)
				}
				g.releaseOne(t)
			}
			waitTree(t, "end", []*resizeNode{rootN, n})
			n.check(t, "end")
		})
	}
}

// TestAdvResizeAfterStopAndShutdownStillStartsAcceptedTasks attacks the guarantee that every
// accepted task runs exactly once across Resize, Stop and Shutdown, with Resize's "Growing
// starts queued tasks at once" and "From its return Stats reports the new limit", which the
// doc does not suspend on a stopped pool: after Stop, and after a Shutdown whose context
// ended, growing starts the tasks still queued. After StopAndWait, Resize (to a number or
// to CPUs) neither panics nor leaves a goroutine.
func TestAdvResizeAfterStopAndShutdownStillStartsAcceptedTasks(t *testing.T) {
	for _, how := range []string{"Stop", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			p := crew.New(1)
			n := newResizeNode("pool", p, nil, 1, 5)
			g := newGatedTasks()
			defer g.releaseAll()
			for range 5 {
				must(t, p.Submit(g.task(n)))
			}
			waitFor(t, "the first task to run", func() bool { return g.started.Load() == 1 })
			if how == "Stop" {
				p.Stop()
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				err := returnsWithin(t, "Shutdown", func() error { return p.Shutdown(ctx) })
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
				}
			}
			n.setBound(5)
			p.Resize(5)
			if got := p.Stats().MaxWorkers; got != 5 {
				t.Fatalf("MaxWorkers = %d after Resize(5) on a stopped pool", got)
			}
			waitFor(t, "growing a stopped pool to start its 4 queued tasks", func() bool { return g.started.Load() == 5 })
			g.releaseAll()
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			n.check(t, "end")
			idleIdentity(t, "after StopAndWait", p.Stats())

			base := runtime.NumGoroutine()
			p.Resize(3)
			if got := p.Stats().MaxWorkers; got != 3 {
				t.Errorf("MaxWorkers = %d after Resize(3) on an exited pool", got)
			}
			p.Resize(crew.CPUs)
			p.Resize(1)
			p.Resize(crew.CPUs)
			_ = p.Stats()
			if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("Submit after StopAndWait = %v, want ErrStopped", err)
			}
			awaitGoroutines(t, "goroutines after Resize of an exited pool", base)
			if s := p.Stats(); s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
				t.Fatalf("an exited pool resized reports %+v", s)
			}
		})
	}
}

// TestAdvResizeStormBesideStopNowAccountsForEveryTask attacks "every accepted task either runs
// exactly once or is returned by StopNow, never both" while the pools of a tree are resized
// from many goroutines and from tasks, and StopNow is called on the root in the middle: each
// task accepted ran once or came back once, Returned counts those, and the limits hold.
func TestAdvResizeStormBesideStopNowAccountsForEveryTask(t *testing.T) {
	root := crew.New(3)
	a := root.Sub(5)
	aa := a.Sub(2)
	rootN := newResizeNode("root", root, nil, 1, 4)
	aN := newResizeNode("a", a, rootN, 1, 6)
	aaN := newResizeNode("a/a", aa, aN, 1, 3)
	nodes := []*resizeNode{rootN, aN, aaN}
	for _, n := range nodes {
		n.setBound(n.hi)
	}
	per := resizeStormSize()
	const submitters = 4
	runs := make([]atomic.Int32, submitters*per)
	var accepted, stoppedErrs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		repeatUntil(&wg, stop, func() {
			n.randomResize()
			runtime.Gosched()
		})
	}
	var handedBack []func()
	var once sync.Once
	together(submitters, per, func(c, i int) {
		k := c*per + i
		n := nodes[k%len(nodes)]
		if c == 0 && i == per/2 {
			once.Do(func() { handedBack = root.StopNow() })
		}
		err := n.p.Submit(func() {
			n.enter(1)
			defer n.leave(1)
			runs[k].Add(1)
			if k%7 == 0 {
				nodes[k%len(nodes)].randomResize()
			}
			runtime.Gosched()
		})
		switch {
		case err == nil:
			accepted.Add(1)
		case errors.Is(err, crew.ErrStopped):
			stoppedErrs.Add(1)
		default:
			t.Errorf("Submit = %v", err)
		}
	})
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	close(stop)
	wg.Wait()
	var returned uint64
	for _, n := range nodes {
		returned += n.p.Stats().Returned
	}
	// Run what StopNow handed back: each must be a task that never ran.
	before := make([]int32, len(runs))
	for i := range runs {
		before[i] = runs[i].Load()
	}
	for _, f := range handedBack {
		f()
	}
	// A parent's Returned also counts the sub-pool workers StopNow took out of its queue,
	// which are tasks of the parent, so the tree's sum is at least what came back.
	if uint64(len(handedBack)) > returned {
		t.Errorf("StopNow handed back %d tasks, Stats.Returned of the tree sums only %d", len(handedBack), returned)
	}
	var ranTotal int64
	for i := range runs {
		r := runs[i].Load()
		if r > 1 {
			t.Fatalf("task %d ran %d times (pool runs %d, then handed back by StopNow)", i, r, before[i])
		}
		ranTotal += int64(r)
	}
	if ranTotal != accepted.Load() {
		t.Fatalf("%d tasks ran or came back from StopNow, %d were accepted (%d refused with ErrStopped)",
			ranTotal, accepted.Load(), stoppedErrs.Load())
	}
	for _, n := range nodes {
		n.check(t, "storm")
		idleIdentity(t, n.name, n.p.Stats())
	}
}

// TestAdvResizeBelowMinWorkersMakesIdleWorkersExit attacks Resize's "Shrinking makes idle
// workers above the limit exit" against WithMinWorkers' "keeps them alive while idle": a
// pool of 4 with 4 minimum workers resized to 1 keeps at most 1 idle worker (also after a
// task calls runtime.Goexit), runs no more than 1 task, and once grown back to 4 runs 4 and
// keeps its 4 minimum workers across idle timeouts.
func TestAdvResizeBelowMinWorkersMakesIdleWorkersExit(t *testing.T) {
	p := crew.New(4, crew.WithMinWorkers(4), crew.WithIdleTimeout(time.Millisecond))
	defer p.StopAndWait()
	awaitStats(t, p, "4 minimum workers idle", func(s crew.Stats) bool { return s.Idle == 4 })
	p.Resize(1)
	awaitStats(t, p, "at most 1 idle worker after Resize(1)", func(s crew.Stats) bool { return s.Idle <= 1 })
	waitFor(t, "at most 1 parked worker", func() bool { return crew.Parked(p) <= 1 })

	n := newResizeNode("pool", p, nil, 1, 4)
	n.setBound(1)
	exited := make(chan struct{})
	must(t, p.Submit(func() { defer close(exited); runtime.Goexit() }))
	awaitReturn(t, "the Goexit task", exited)
	awaitReturn(t, "Wait", goRun(p.Wait))
	time.Sleep(10 * time.Millisecond)
	if s := p.Stats(); s.Idle > 1 || crew.Parked(p) > 1 {
		t.Fatalf("after a Goexit under a limit of 1 with 4 minimum workers: %+v, %d parked", s, crew.Parked(p))
	}

	g := newGatedTasks()
	defer g.releaseAll()
	for range 8 {
		must(t, p.Submit(g.task(n)))
	}
	waitFor(t, "a task to run", func() bool { return g.started.Load() == 1 })
	time.Sleep(20 * time.Millisecond)
	if got := g.started.Load(); got != 1 {
		t.Fatalf("%d tasks started under a limit of 1", got)
	}
	n.setBound(4)
	p.Resize(4)
	waitFor(t, "growing to start 4 tasks", func() bool { return g.started.Load() == 4 })
	g.releaseAll()
	awaitReturn(t, "Wait", goRun(p.Wait))
	n.check(t, "end")
	idleIdentity(t, "end", p.Stats())
	// Workers above the minimum have expired long ago; the minimum stays.
	time.Sleep(20 * time.Millisecond)
	awaitStats(t, p, "the 4 minimum workers to stay idle", func(s crew.Stats) bool { return s.Idle == 4 })
	if s := p.Stats(); s.Idle > s.MaxWorkers {
		t.Fatalf("Idle %d above MaxWorkers %d", s.Idle, s.MaxWorkers)
	}
}

// TestAdvResizeStormWhileIdleWorkersAreReapedLosesNoTask attacks "No task is lost or run
// twice" while idle workers above the minimum are reaped as fast as the pool allows (idle
// timeouts of 0 and 1 ms): bursts of tasks with gaps in which workers expire, Resize from
// goroutines and tasks, then exact limits after the storm.
func TestAdvResizeStormWhileIdleWorkersAreReapedLosesNoTask(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			p := crew.New(6, crew.WithMinWorkers(1), crew.WithIdleTimeout(d))
			n := newResizeNode("pool", p, nil, 1, 6)
			n.setBound(6)
			per := resizeStormSize() / 2
			const submitters = 3
			runs := make([]atomic.Int32, submitters*per*2)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			repeatUntil(&wg, stop, func() {
				n.randomResize()
				time.Sleep(50 * time.Microsecond)
			})
			var stormy atomic.Bool
			stormy.Store(true)
			task := func(k int) func() {
				return func() {
					n.enter(1)
					defer n.leave(1)
					runs[k].Add(1)
					if stormy.Load() && k%9 == 0 {
						n.randomResize()
					}
				}
			}
			together(submitters, per, func(c, i int) {
				k := c*per + i
				resizeCheck(t, "submit", p.Submit(task(k)))
				if i%40 == 39 {
					time.Sleep(2 * time.Millisecond) // let workers expire
				}
			})
			awaitReturn(t, "Wait", goRun(p.Wait))
			stormy.Store(false)
			close(stop)
			wg.Wait()
			n.check(t, "storm")
			n.resizeExact(t, 2)
			together(submitters, per, func(c, i int) {
				resizeCheck(t, "submit", p.Submit(task(submitters*per+c*per+i)))
				if i%40 == 39 {
					time.Sleep(2 * time.Millisecond)
				}
			})
			awaitReturn(t, "Wait", goRun(p.Wait))
			n.check(t, "after the storm")
			idleIdentity(t, "end", p.Stats())
			ranOnce(t, runs)
			awaitStats(t, p, "idle workers within the limit", func(s crew.Stats) bool { return s.Idle <= 2 })
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			checkFinalStats(t, "stopped", p.Stats())
		})
	}
}

// TestAdvResizeStormKeepsWeightSumsWithinEveryLimit attacks SubmitN's "The weights of running
// tasks never sum above MaxWorkers (on a sub-pool, above its limit or any of its
// ancestors')" while the root and a sub-pool are resized from goroutines and tasks, and each
// weighted task runs once.
func TestAdvResizeStormKeepsWeightSumsWithinEveryLimit(t *testing.T) {
	root := crew.New(6)
	defer root.StopAndWait()
	s := root.Sub(4)
	rootN := newResizeNode("root", root, nil, 3, 6)
	sN := newResizeNode("sub", s, rootN, 3, 5)
	nodes := []*resizeNode{rootN, sN}
	for _, n := range nodes {
		n.setBound(n.hi)
	}
	per := resizeStormSize() / 2
	const submitters = 4
	runs := make([]atomic.Int32, submitters*per*2)
	var stormy atomic.Bool
	stormy.Store(true)
	task := func(n *resizeNode, w, k int) func() {
		return func() {
			n.enter(w)
			defer n.leave(w)
			runs[k].Add(1)
			if stormy.Load() && k%6 == 0 {
				nodes[k%2].randomResize()
			}
			runtime.Gosched()
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		repeatUntil(&wg, stop, func() {
			n.randomResize()
			runtime.Gosched()
		})
	}
	watchBalance(t, &wg, stop, nodes)
	submit := func(base int) {
		together(submitters, per, func(c, i int) {
			k := base + c*per + i
			n := nodes[k%2]
			w := 1 + k%3
			if err := n.p.SubmitN(w, task(n, w, k)); err != nil {
				t.Errorf("SubmitN(%d) to %s = %v", w, n.name, err)
			}
		})
	}
	submit(0)
	waitTree(t, "storm", nodes)
	stormy.Store(false)
	close(stop)
	wg.Wait()
	for _, n := range nodes {
		n.check(t, "storm")
	}
	for _, n := range nodes {
		n.resizeExact(t, n.lo)
	}
	submit(submitters * per)
	waitTree(t, "after the storm", nodes)
	for _, n := range nodes {
		n.check(t, "after the storm")
	}
	ranOnce(t, runs)
}

// TestAdvResizeParentMakesAQueuedSubPoolTaskHeavierThanItsLimit attacks SubmitN's "A task
// accepted before a shrinking Resize made it heavier than the limit runs alone, once every
// running task has returned" across a sub-pool: a weight-3 task queued in a sub-pool whose
// parent is then resized to 2 must still run exactly once, with no other task of the parent
// or the sub-pool beside it, and the tasks queued behind it run after it.
func TestAdvResizeParentMakesAQueuedSubPoolTaskHeavierThanItsLimit(t *testing.T) {
	root := crew.New(4)
	defer root.StopAndWait()
	s := root.Sub(4)
	rootN := newResizeNode("root", root, nil, 2, 4)
	sN := newResizeNode("sub", s, rootN, 4, 4)
	g := newGatedTasks()
	defer g.releaseAll()
	for range 2 {
		must(t, root.Submit(g.task(rootN)))
	}
	waitFor(t, "2 root tasks to run", func() bool { return g.started.Load() == 2 })
	var heavyRan atomic.Int32
	var beside atomic.Int64
	heavyDone := make(chan struct{})
	must(t, s.SubmitN(3, func() {
		defer close(heavyDone)
		sN.enter(3)
		defer sN.leave(3)
		heavyRan.Add(1)
		if r := rootN.running.Load(); r != 1 {
			beside.Store(r)
		}
		time.Sleep(10 * time.Millisecond)
		if r := rootN.running.Load(); r != 1 {
			beside.Store(r)
		}
	}))
	var after atomic.Int32
	for range 3 {
		must(t, s.Submit(func() {
			select {
			case <-heavyDone:
			default:
				t.Error("a sub-pool task queued behind the heavy task started before it finished")
			}
			after.Add(1)
		}))
	}
	awaitStats(t, root, "the heavy task to wait in the parent", func(s crew.Stats) bool { return s.Waiting >= 1 })
	root.Resize(2)
	rootN.setBound(2)
	g.releaseAll()
	awaitReturn(t, "the heavy task, heavier than the parent's new limit", heavyDone)
	waitTree(t, "end", []*resizeNode{rootN, sN})
	if heavyRan.Load() != 1 || after.Load() != 3 {
		t.Fatalf("heavy ran %d times, the tasks behind it %d, want 1 and 3", heavyRan.Load(), after.Load())
	}
	if b := beside.Load(); b != 0 {
		t.Fatalf("%d tasks ran beside a task heavier than the parent's limit, want it alone", b)
	}
}

// TestAdvResizeStormOnKeyedPoolsKeepsPerKeyOrder attacks Keyed's "tasks with one key run one
// at a time, in the order their submits took effect" and "Each keyed task starts as a task
// of the pool would: ... not at a limit a Resize lowered" while the root and the sub-pool a
// Keyed runs on are resized from goroutines and from keyed tasks: order and exactly once
// hold, the limits hold, and Keyed.Stats adds up once idle.
func TestAdvResizeStormOnKeyedPoolsKeepsPerKeyOrder(t *testing.T) {
	root := crew.New(4)
	defer root.StopAndWait()
	s := root.Sub(3)
	rootN := newResizeNode("root", root, nil, 1, 5)
	sN := newResizeNode("sub", s, rootN, 1, 4)
	nodes := []*resizeNode{rootN, sN}
	for _, n := range nodes {
		n.setBound(n.hi)
	}
	kr, ks := crew.NewKeyed[int](root), crew.NewKeyed[int](s)
	chk := newKeyChecker()
	var stormy atomic.Bool
	stormy.Store(true)
	per := resizeStormSize() / 2
	const submitters = 4
	var mu sync.Mutex
	seq := map[int]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		repeatUntil(&wg, stop, func() {
			n.randomResize()
			runtime.Gosched()
		})
	}
	watchBalance(t, &wg, stop, nodes)
	watchBalanceOf(t, &wg, stop, "Keyed on root", kr.Stats)
	watchBalanceOf(t, &wg, stop, "Keyed on sub", ks.Stats)
	submit := func() {
		together(submitters, per, func(c, i int) {
			key := rand.IntN(12)
			n, k := rootN, kr
			if key%2 == 1 {
				n, k = sN, ks
			}
			mu.Lock() // the submit takes effect in the order of seq
			sq := seq[key]
			seq[key]++
			err := k.Submit(key, func() {
				n.enter(1)
				defer n.leave(1)
				chk.enter(key, sq)
				defer chk.exit(key)
				if stormy.Load() && sq%5 == 0 {
					nodes[key%2].randomResize()
				}
				runtime.Gosched()
			})
			mu.Unlock()
			if err != nil {
				t.Errorf("Keyed.Submit = %v", err)
			}
		})
	}
	submit()
	awaitReturn(t, "root Keyed Wait", goRun(kr.Wait))
	awaitReturn(t, "sub Keyed Wait", goRun(ks.Wait))
	stormy.Store(false)
	close(stop)
	wg.Wait()
	for _, n := range nodes {
		n.check(t, "storm")
	}
	for _, n := range nodes {
		n.resizeExact(t, n.lo)
	}
	submit()
	awaitReturn(t, "root Keyed Wait", goRun(kr.Wait))
	awaitReturn(t, "sub Keyed Wait", goRun(ks.Wait))
	waitTree(t, "end", nodes)
	for _, n := range nodes {
		n.check(t, "after the storm")
	}
	chk.check(t, "keyed order")
	if got, want := chk.ranCount(), 2*submitters*per; got != want {
		t.Fatalf("%d keyed tasks ran, want %d", got, want)
	}
	for name, k := range map[string]*crew.Keyed[int]{"root": kr, "sub": ks} {
		st := k.Stats()
		idleIdentity(t, "Keyed on "+name, st)
		if want := map[string]int{"root": 1, "sub": 1}[name]; st.MaxWorkers != want {
			t.Errorf("Keyed on %s: MaxWorkers %d, want the pool's %d", name, st.MaxWorkers, want)
		}
	}
	if got := kr.Stats().Accepted + ks.Stats().Accepted; got != uint64(2*submitters*per) {
		t.Fatalf("Keyed Stats accepted %d, want %d", got, 2*submitters*per)
	}
}

// TestAdvResizeFuncPoolStormRunsEachCallOnceWithinTheLimit attacks FuncPool.Resize ("see
// Pool.Resize"): calls resized from goroutines and from the calls themselves each run once,
// never above the limit, and Stats.MaxWorkers is the last Resize.
func TestAdvResizeFuncPoolStormRunsEachCallOnceWithinTheLimit(t *testing.T) {
	per := resizeStormSize()
	const submitters = 4
	runs := make([]atomic.Int32, submitters*per*2)
	var limit, running, excess atomic.Int64
	var stormy atomic.Bool
	stormy.Store(true)
	var f *crew.FuncPool[int]
	f = crew.NewFunc(3, func(k int) {
		before := limit.Load()
		cur := running.Add(1)
		raiseTo(&excess, cur-max(before, limit.Load()))
		defer running.Add(-1)
		runs[k].Add(1)
		if stormy.Load() && k%5 == 0 {
			f.Resize(1 + rand.IntN(5))
		}
		runtime.Gosched()
	})
	defer f.StopAndWait()
	limit.Store(5)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() {
		f.Resize(1 + rand.IntN(5))
		runtime.Gosched()
	})
	together(submitters, per, func(c, i int) {
		if err := f.Invoke(c*per + i); err != nil {
			t.Errorf("Invoke = %v", err)
		}
	})
	awaitReturn(t, "Wait", goRun(f.Wait))
	stormy.Store(false)
	close(stop)
	wg.Wait()
	if e := excess.Load(); e > 0 {
		t.Fatalf("storm: %d calls above the highest limit", e)
	}
	f.Resize(2)
	if got := f.Stats().MaxWorkers; got != 2 {
		t.Fatalf("MaxWorkers = %d right after Resize(2)", got)
	}
	awaitStats(t, f, "no more than 2 running", func(s crew.Stats) bool { return s.Running <= 2 })
	limit.Store(2)
	together(submitters, per, func(c, i int) {
		if !f.TryInvoke(submitters*per + c*per + i) {
			t.Errorf("TryInvoke = false on an unbounded queue")
		}
	})
	awaitReturn(t, "Wait", goRun(f.Wait))
	if e := excess.Load(); e > 0 {
		t.Fatalf("after the storm: %d calls above the limit of 2", e)
	}
	ranOnce(t, runs)
	idleIdentity(t, "FuncPool", f.Stats())
}

// TestAdvResizeInvalidLimitsPanicAndLeaveTheLimit attacks Resize's "It panics if maxWorkers
// is less than 1 (other than CPUs)" on a pool, a sub-pool and a FuncPool: 0, -2 and
// math.MinInt panic with a message that names Resize, and the limit stays as it was; CPUs is
// valid and makes the limit GOMAXPROCS.
func TestAdvResizeInvalidLimitsPanicAndLeaveTheLimit(t *testing.T) {
	root := crew.New(3)
	defer root.StopAndWait()
	sub := root.Sub(2)
	f := crew.NewFunc(4, func(int) {})
	defer f.StopAndWait()
	pools := []struct {
		name   string
		resize func(int)
		stats  func() crew.Stats
	}{
		{"Pool", root.Resize, root.Stats},
		{"Sub", sub.Resize, sub.Stats},
		{"FuncPool", f.Resize, f.Stats},
	}
	for _, p := range pools {
		want := p.stats().MaxWorkers
		for _, bad := range []int{0, -2, math.MinInt} {
			func() {
				defer func() {
					r := recover()
					if r == nil {
						t.Errorf("%s.Resize(%d) did not panic", p.name, bad)
						return
					}
					if msg := fmt.Sprint(r); !strings.Contains(msg, "Resize") {
						t.Errorf("%s.Resize(%d) panicked with %q, which does not name Resize", p.name, bad, msg)
					}
				}()
				p.resize(bad)
			}()
			if got := p.stats().MaxWorkers; got != want {
				t.Errorf("%s: MaxWorkers = %d after a panicking Resize(%d), want %d", p.name, got, bad, want)
			}
		}
		p.resize(crew.CPUs)
		if got := p.stats().MaxWorkers; got != runtime.GOMAXPROCS(0) {
			t.Errorf("%s: MaxWorkers = %d after Resize(CPUs), want GOMAXPROCS %d", p.name, got, runtime.GOMAXPROCS(0))
		}
	}
	// Still working.
	for _, p := range []*crew.Pool{root, sub} {
		var ran atomic.Int32
		must(t, p.Submit(func() { ran.Add(1) }))
		awaitReturn(t, "Wait", goRun(p.Wait))
		if ran.Load() != 1 {
			t.Fatal("a task did not run after the invalid resizes")
		}
	}
	awaitReturn(t, "root Wait", goRun(root.Wait)) // the sub-pool's worker is a task of root
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
	idleIdentity(t, "FuncPool", f.Stats())
}

// TestAdvResizeOfAnAdaptiveCeilingHoldsAtOnce attacks WithAdaptiveLimit's "Resize on an
// adaptive pool sets the ceiling: a limit above the new ceiling comes down to it at once"
// with "no task starts while MaxWorkers or more run", under a storm of ceiling changes from
// goroutines and tasks: MaxWorkers is never above the last ceiling set once the storm ends,
// tasks run once and never above the highest ceiling, then never above the last.
func TestAdvResizeOfAnAdaptiveCeilingHoldsAtOnce(t *testing.T) {
	p := crew.New(12, crew.WithAdaptiveLimit(2))
	defer p.StopAndWait()
	n := newResizeNode("adaptive", p, nil, 3, 12)
	n.setBound(12)
	per := resizeStormSize() / 4
	const submitters = 4
	runs := make([]atomic.Int32, submitters*per*2)
	var stormy atomic.Bool
	stormy.Store(true)
	task := func(k int) func() {
		return func() {
			n.enter(1)
			defer n.leave(1)
			runs[k].Add(1)
			if stormy.Load() && k%11 == 0 {
				n.randomResize()
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() {
		n.randomResize()
		time.Sleep(100 * time.Microsecond)
	})
	together(submitters, per, func(c, i int) { resizeCheck(t, "submit", p.Submit(task(c*per+i))) })
	awaitReturn(t, "Wait", goRun(p.Wait))
	stormy.Store(false)
	close(stop)
	wg.Wait()
	n.check(t, "storm")
	p.Resize(3)
	if got := p.Stats().MaxWorkers; got > 3 {
		t.Fatalf("MaxWorkers = %d right after the ceiling went to 3", got)
	}
	n.limit.Store(3)
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			if s := p.Stats(); s.MaxWorkers > 3 || s.Running > 3 {
				t.Errorf("under a ceiling of 3: %+v", s)
				return
			}
			select {
			case <-stopWatch:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	together(submitters, per, func(c, i int) { resizeCheck(t, "submit", p.Submit(task(submitters*per+c*per+i))) })
	awaitReturn(t, "Wait", goRun(p.Wait))
	close(stopWatch)
	<-watchDone
	n.check(t, "after the storm")
	ranOnce(t, runs)
	idleIdentity(t, "adaptive", p.Stats())
}

// TestAdvResizeGrowingNeverShowsRunningAboveMaxWorkers attacks Stats' "Running never exceeds
// MaxWorkers except while tasks that started before a shrinking Resize still run": while a
// pool and its sub-pool only grow, from goroutines and tasks, no snapshot of either shows
// Running above MaxWorkers, nor a counter going back.
func TestAdvResizeGrowingNeverShowsRunningAboveMaxWorkers(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(1)
	// Each pool's limit only grows: the next value is chosen and set under a lock, so that
	// two calls racing cannot land in the opposite order.
	type grower struct {
		mu sync.Mutex
		n  int
	}
	var rootMax, subMax grower
	rootMax.n, subMax.n = 1, 1
	grow := func(p *crew.Pool, m *grower) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.n < 16 {
			m.n++
			p.Resize(m.n)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range []*crew.Pool{root, sub} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prev crew.Stats
			for {
				s := p.Stats()
				if s.Running > s.MaxWorkers || countersWentBack(s, prev) || s.MaxWorkers < prev.MaxWorkers {
					t.Errorf("snapshot %+v after %+v while the limit only grew", s, prev)
					return
				}
				prev = s
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	per := resizeStormSize()
	together(4, per, func(c, i int) {
		p, m := root, &rootMax
		if i%2 == 1 {
			p, m = sub, &subMax
		}
		resizeCheck(t, "submit", p.Submit(func() {
			if i%50 == 0 {
				grow(p, m)
			}
			runtime.Gosched()
		}))
		if i%100 == 0 {
			grow(p, m)
		}
	})
	awaitReturn(t, "sub Wait", goRun(sub.Wait))
	awaitReturn(t, "root Wait", goRun(root.Wait))
	close(stop)
	wg.Wait()
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// TestAdvResizeGrowingLetsABlockedSubmitterIn attacks "Growing starts queued tasks at once"
// with WithQueueSize: a submitter blocked on a full queue gets in once a growing Resize
// starts the queued task, without any task returning; a shrink then holds the new task back.
func TestAdvResizeGrowingLetsABlockedSubmitterIn(t *testing.T) {
	for _, sub := range []bool{false, true} {
		t.Run(fmt.Sprintf("sub=%v", sub), func(t *testing.T) {
			root := crew.New(4)
			defer root.StopAndWait()
			var p *crew.Pool
			if sub {
				p = root.Sub(1, crew.WithQueueSize(1))
			} else {
				p = crew.New(1, crew.WithQueueSize(1))
				defer p.StopAndWait()
			}
			n := newResizeNode("pool", p, nil, 1, 2)
			g := newGatedTasks()
			defer g.releaseAll()
			must(t, p.Submit(g.task(n)))
			waitFor(t, "the first task to run", func() bool { return g.started.Load() == 1 })
			must(t, p.Submit(g.task(n)))
			var err error
			blocked := goRun(func() { err = p.Submit(g.task(n)) })
			stillBlocked(t, "Submit on a full queue", blocked)
			n.setBound(2)
			p.Resize(2)
			awaitReturn(t, "the blocked Submit after a growing Resize", blocked)
			must(t, err)
			waitFor(t, "the queued task to start", func() bool { return g.started.Load() == 2 })
			p.Resize(1)
			g.releaseOne(t)
			g.releaseOne(t)
			awaitStats(t, p, "the running tasks to end", func(s crew.Stats) bool { return s.Waiting == 0 && s.Running <= 1 })
			g.releaseAll()
			awaitReturn(t, "Wait", goRun(p.Wait))
			n.check(t, "end")
			idleIdentity(t, "end", p.Stats())
			if got := g.started.Load(); got != 3 {
				t.Fatalf("%d tasks ran, want 3", got)
			}
		})
	}
}

// TestAdvResizeSubPoolAfterItsParentStoppedStillRunsItsTasks attacks "Stopping the parent
// stops its sub-pools; their accepted tasks still run" with Resize of both afterwards:
// growing the sub-pool of a stopped parent forwards its queued tasks, growing the parent
// starts them at once, and StopAndWait returns with every task run once.
func TestAdvResizeSubPoolAfterItsParentStoppedStillRunsItsTasks(t *testing.T) {
	root := crew.New(1)
	sub := root.Sub(1)
	rootN := newResizeNode("root", root, nil, 1, 4)
	subN := newResizeNode("sub", sub, rootN, 1, 3)
	g := newGatedTasks()
	defer g.releaseAll()
	must(t, root.Submit(g.task(rootN)))
	waitFor(t, "the root task to run", func() bool { return g.started.Load() == 1 })
	for range 3 {
		must(t, sub.Submit(g.task(subN)))
	}
	root.Stop()
	if err := sub.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit to the sub-pool of a stopped parent = %v, want ErrStopped", err)
	}
	subN.setBound(3)
	sub.Resize(3)
	rootN.setBound(4)
	root.Resize(4)
	waitFor(t, "the 3 sub-pool tasks to run beside the root task", func() bool { return g.started.Load() == 4 })
	g.releaseAll()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	rootN.check(t, "end")
	subN.check(t, "end")
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// TestAdvResizeDuringShutdownLetsItReturnNil attacks Shutdown's wait with Resize: a Shutdown
// waiting for a backlog behind one worker returns nil once a growing Resize starts the
// backlog and it ends, well before its context does.
func TestAdvResizeDuringShutdownLetsItReturnNil(t *testing.T) {
	p := crew.New(1)
	n := newResizeNode("pool", p, nil, 1, 5)
	g := newGatedTasks()
	defer g.releaseAll()
	for range 5 {
		must(t, p.Submit(g.task(n)))
	}
	waitFor(t, "the first task to run", func() bool { return g.started.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	done := goRun(func() { err = p.Shutdown(ctx) })
	stillBlocked(t, "Shutdown with tasks running", done)
	n.setBound(5)
	p.Resize(5)
	waitFor(t, "growing during Shutdown to start the backlog", func() bool { return g.started.Load() == 5 })
	g.releaseAll()
	awaitReturn(t, "Shutdown", done)
	if err != nil {
		t.Fatalf("Shutdown = %v, want nil", err)
	}
	n.check(t, "end")
	idleIdentity(t, "end", p.Stats())
}

// TestAdvResizeGrowingStartsAHeavyTaskAtTheHead attacks SubmitN's FIFO starts with Resize's
// "Growing starts queued tasks at once": a weight-3 task at the head of the queue waiting
// for room starts as soon as a Resize makes room for it, and the light tasks behind it wait
// for it to start.
func TestAdvResizeGrowingStartsAHeavyTaskAtTheHead(t *testing.T) {
	for _, sub := range []bool{false, true} {
		t.Run(fmt.Sprintf("sub=%v", sub), func(t *testing.T) {
			root := crew.New(4)
			defer root.StopAndWait()
			p := root
			rootN := newResizeNode("root", root, nil, 4, 5)
			n := rootN
			if sub {
				p = root.Sub(4)
				n = newResizeNode("sub", p, rootN, 4, 5)
			}
			g := newGatedTasks()
			defer g.releaseAll()
			for range 2 {
				must(t, p.Submit(g.task(n)))
			}
			waitFor(t, "2 tasks to run", func() bool { return g.started.Load() == 2 })
			heavy := make(chan struct{})
			must(t, p.SubmitN(3, func() {
				n.enter(3)
				defer n.leave(3)
				close(heavy)
				<-g.all
			}))
			var early atomic.Int32
			for range 2 {
				must(t, p.Submit(func() {
					select {
					case <-heavy:
					default:
						early.Add(1)
					}
				}))
			}
			time.Sleep(10 * time.Millisecond)
			if early.Load() != 0 {
				t.Fatal("a light task overtook the heavy one at the head")
			}
			rootN.setBound(5)
			root.Resize(5)
			if sub {
				n.setBound(5)
				p.Resize(5)
			}
			awaitReturn(t, "the heavy task to start once the limit grew to fit it", heavy)
			g.releaseAll()
			awaitReturn(t, "Wait", goRun(p.Wait))
			awaitReturn(t, "root Wait", goRun(root.Wait))
			if early.Load() != 0 {
				t.Fatal("a light task started before the heavy task at the head")
			}
			rootN.check(t, "end")
			n.check(t, "end")
			idleIdentity(t, "pool", p.Stats())
			idleIdentity(t, "root", root.Stats())
		})
	}
}

// TestAdvResizeSubPoolShrunkWhileItsWorkersWaitInTheParent attacks Resize's "From its return
// ... no task starts while that many or more run" for a sub-pool whose workers were already
// forwarded to its parent's queue (its Stats count their tasks Waiting, not started): shrunk
// to 1 before the parent takes them, the sub-pool must run its tasks one at a time.
func TestAdvResizeSubPoolShrunkWhileItsWorkersWaitInTheParent(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(4)
	rootN := newResizeNode("root", root, nil, 1, 4)
	subN := newResizeNode("sub", sub, rootN, 1, 4)
	g := newGatedTasks()
	defer g.releaseAll()
	must(t, root.Submit(g.task(rootN)))
	waitFor(t, "the root task to run", func() bool { return g.started.Load() == 1 })
	for range 4 {
		must(t, sub.Submit(g.task(subN)))
	}
	awaitStats(t, root, "the sub-pool's workers to wait in the parent", func(s crew.Stats) bool { return s.Waiting >= 1 })
	if s := sub.Stats(); s.Running != 0 {
		t.Fatalf("sub-pool Stats %+v: a task counts as running while the parent is full", s)
	}
	sub.Resize(1)
	subN.setBound(1)
	rootN.setBound(4)
	root.Resize(4)
	g.releaseOne(t) // the root task, or a sub-pool task that started
	for i := range 4 {
		waitFor(t, "the next sub-pool task", func() bool { return g.started.Load() >= int64(2+i) })
		time.Sleep(5 * time.Millisecond)
		if r := subN.running.Load(); r > 1 {
			t.Fatalf("%d sub-pool tasks run at once after the sub-pool was shrunk to 1", r)
		}
		g.releaseOne(t)
	}
	waitTree(t, "end", []*resizeNode{rootN, subN})
	rootN.check(t, "end")
	subN.check(t, "end")
}

// TestAdvResizeKeyedTurnStopsAtALoweredLimit attacks Keyed's "a turn goes on to the key's next
// task only if the pool would start a task then (not ... at a limit a Pool.Resize lowered)",
// for a Keyed on a pool resized itself, on a sub-pool resized itself, and on a sub-pool whose
// parent is resized: with three keys' turns running and the limit lowered to 1, a key whose
// task returns starts no next task until fewer than 1 other runs.
func TestAdvResizeKeyedTurnStopsAtALoweredLimit(t *testing.T) {
	for _, tc := range []struct{ keyedOnSub, resizeRoot bool }{{false, true}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("keyedOnSub=%v/resizeRoot=%v", tc.keyedOnSub, tc.resizeRoot), func(t *testing.T) {
			root := crew.New(3)
			defer root.StopAndWait()
			sub := root.Sub(3)
			rootN := newResizeNode("root", root, nil, 1, 3)
			subN := newResizeNode("sub", sub, rootN, 1, 3)
			kp, kn := root, rootN
			if tc.keyedOnSub {
				kp, kn = sub, subN
			}
			shrunk, shrunkN := kp, kn
			if tc.resizeRoot {
				shrunk, shrunkN = root, rootN
			}
			k := crew.NewKeyed[int](kp)
			chk := newKeyChecker()
			g := newGatedTasks()
			defer g.releaseAll()
			for seq := range 4 {
				for key := range 3 {
					gated := g.task(kn)
					must(t, k.Submit(key, func() {
						chk.enter(key, seq)
						defer chk.exit(key)
						gated()
					}))
				}
			}
			waitFor(t, "3 keys' first tasks to run", func() bool { return g.started.Load() == 3 })
			shrunk.Resize(1)
			for i := range 2 {
				g.releaseOne(t)
				waitFor(t, "a released task to return", func() bool { return g.ended.Load() == int64(i+1) })
				time.Sleep(20 * time.Millisecond)
				if got := g.started.Load(); got != 3 {
					t.Fatalf("%d keyed tasks started with %d still running under a lowered limit of 1", got, 2-i)
				}
			}
			g.releaseOne(t)
			awaitStats(t, shrunk, "the shrunk pool to run at most 1", func(s crew.Stats) bool { return s.Running <= 1 })
			shrunkN.setBound(1)
			for i := range 9 {
				waitFor(t, "the next keyed task", func() bool { return g.started.Load() == int64(4+i) })
				time.Sleep(2 * time.Millisecond)
				if r := shrunkN.running.Load(); r > 1 {
					t.Fatalf("%d keyed tasks run at once under a limit of 1", r)
				}
				g.releaseOne(t)
			}
			awaitReturn(t, "Keyed Wait", goRun(k.Wait))
			waitTree(t, "end", []*resizeNode{rootN, subN})
			chk.check(t, "keyed order")
			idleIdentity(t, "Keyed", k.Stats())
			shrunkN.check(t, "end")
			if got := chk.ranCount(); got != 12 {
				t.Fatalf("%d keyed tasks ran, want 12", got)
			}
		})
	}
}

// TestAdvResizeStormWithPausesFuturesAndCancelsAccountsForEveryFunction attacks exactly once
// where Resize meets Pause/Resume, priorities, futures with contexts, Future.Cancel and
// groups on a tree: while every pool is resized and paused at random, from goroutines and
// from tasks, each plain task runs once, each function runs at most once and exactly when
// its future or group reports no error, the limits of every pool and ancestor hold, and every
// pool is idle and adds up at the end.
func TestAdvResizeStormWithPausesFuturesAndCancelsAccountsForEveryFunction(t *testing.T) {
	root := crew.New(4)
	defer root.StopAndWait()
	hi := root.Sub(3, crew.WithPriority(2))
	lo := root.Sub(5)
	lo2 := lo.Sub(2, crew.WithPriority(1))
	rootN := newResizeNode("root", root, nil, 1, 5)
	hiN := newResizeNode("hi", hi, rootN, 1, 4)
	loN := newResizeNode("lo", lo, rootN, 2, 6)
	lo2N := newResizeNode("lo/lo2", lo2, loN, 1, 3)
	nodes := []*resizeNode{rootN, hiN, loN, lo2N}
	for _, n := range nodes {
		n.setBound(n.hi)
	}
	per := resizeStormSize() / 2
	const submitters = 4
	total := submitters * per
	runs := make([]atomic.Int32, total)
	type outcome struct {
		wait     func() error
		canceled bool // Cancel reported true
	}
	outcomes := make([]outcome, total)
	var stormy atomic.Bool
	stormy.Store(true)
	body := func(n *resizeNode, k int) {
		n.enter(1)
		defer n.leave(1)
		runs[k].Add(1)
		if stormy.Load() && k%9 == 0 {
			nodes[k%len(nodes)].randomResize()
		}
		runtime.Gosched()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		repeatUntil(&wg, stop, func() {
			n.randomResize()
			time.Sleep(20 * time.Microsecond)
		})
	}
	pauseStorm(&wg, stop, 300*time.Microsecond, root, hi, lo, lo2)
	watchBalance(t, &wg, stop, nodes)
	together(submitters, per, func(c, i int) {
		k := c*per + i
		n := nodes[k%len(nodes)]
		switch k % 4 {
		case 0:
			resizeCheck(t, "Submit", n.p.Submit(func() { body(n, k) }))
			outcomes[k].wait = func() error { return nil }
		case 1:
			ctx, cancel := context.WithCancel(context.Background())
			f := crew.GoContext(ctx, n.p, func(context.Context) (int, error) { body(n, k); return k, nil })
			if k%3 == 0 {
				cancel()
			}
			outcomes[k].wait = func() error { defer cancel(); _, err := f.Wait(); return err }
		case 2:
			f := crew.Go(n.p, func() (int, error) { body(n, k); return k, nil })
			outcomes[k].canceled = k%5 == 0 && f.Cancel()
			outcomes[k].wait = func() error { _, err := f.Wait(); return err }
		case 3:
			g, _ := n.p.Group(context.Background())
			g.Go(func(context.Context) error { body(n, k); return nil })
			outcomes[k].wait = g.Wait
		}
	})
	waitTree(t, "storm", nodes)
	for k := range outcomes {
		var err error
		awaitReturn(t, fmt.Sprintf("the wait of function %d", k), goRun(func() { err = outcomes[k].wait() }))
		r := runs[k].Load()
		switch {
		case r > 1:
			t.Fatalf("function %d ran %d times", k, r)
		case k%4 == 0 && r != 1:
			t.Fatalf("plain task %d ran %d times, want 1", k, r)
		case (err == nil) != (r == 1):
			t.Fatalf("function %d ran %d times, and its wait returned %v", k, r, err)
		case outcomes[k].canceled && r != 0:
			t.Fatalf("function %d ran after its Cancel returned true", k)
		}
	}
	stormy.Store(false)
	close(stop)
	wg.Wait()
	for _, n := range nodes {
		n.check(t, "storm")
		if s := n.p.Stats(); s.Paused {
			t.Fatalf("%s is still paused after the storm", n.name)
		}
	}
	var skipped uint64
	for _, n := range nodes[1:] {
		skipped += n.p.Stats().Skipped
	}
	skipped += rootN.p.Stats().Skipped
	var notRun uint64
	for k := range runs {
		if runs[k].Load() == 0 {
			notRun++
		}
	}
	if skipped != notRun {
		t.Fatalf("%d functions never ran, the tree's Skipped sums %d", notRun, skipped)
	}
}

// TestAdvResizeGrowingAParentStartsTheHigherLevelFirst attacks WithPriority's "whenever one
// of the parent's workers takes a task, it takes one of the highest level waiting, so no task
// of a higher level is waiting when a lower-level one starts" with Resize: a parent grown by
// 2 slots (at once, or while paused and then resumed) while a lower-level sub-pool's tasks
// waited longer than a higher-level sub-pool's must give both slots to the higher level, and
// start the lower level only once none of the higher level waits.
func TestAdvResizeGrowingAParentStartsTheHigherLevelFirst(t *testing.T) {
	for _, paused := range []bool{false, true} {
		t.Run(fmt.Sprintf("paused=%v", paused), func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			hi := root.Sub(4, crew.WithPriority(2))
			lo := root.Sub(4, crew.WithPriority(1))
			rootN := newResizeNode("root", root, nil, 1, 3)
			hiN := newResizeNode("hi", hi, rootN, 4, 4)
			loN := newResizeNode("lo", lo, rootN, 4, 4)
			g := newGatedTasks()
			defer g.releaseAll()
			must(t, root.Submit(g.task(rootN)))
			waitFor(t, "the root task to run", func() bool { return g.started.Load() == 1 })
			if paused {
				root.Pause()
			}
			var hiStarted atomic.Int64
			var early atomic.Int64
			for range 3 {
				gated := g.task(loN)
				must(t, lo.Submit(func() {
					if hiStarted.Load() < 3 {
						early.Add(1)
					}
					gated()
				}))
			}
			for range 3 {
				gated := g.task(hiN)
				must(t, hi.Submit(func() {
					hiStarted.Add(1)
					gated()
				}))
			}
			rootN.setBound(3)
			root.Resize(3)
			if paused {
				time.Sleep(10 * time.Millisecond)
				if got := g.started.Load(); got != 1 {
					t.Fatalf("%d tasks started on a paused parent after a growing Resize", got-1)
				}
				root.Resume()
			}
			waitFor(t, "the room a Resize made to fill", func() bool { return g.started.Load() == 3 })
			time.Sleep(10 * time.Millisecond)
			if hiStarted.Load() != 2 || early.Load() != 0 {
				t.Fatalf("in the 2 slots a Resize made, %d higher-level tasks started and %d lower-level ones while higher-level ones waited; hi %+v, lo %+v",
					hiStarted.Load(), early.Load(), hi.Stats(), lo.Stats())
			}
			// One release at a time, each slot filled again before the next: a task handed to a
			// worker may run its first line after a task started later has run its own, so
			// without the wait a lower-level task could count a higher-level one that had
			// started as not started yet.
			for k := range 7 {
				g.releaseOne(t)
				want := int64(min(7, 4+k))
				waitFor(t, "the freed slot to be filled", func() bool { return g.started.Load() == want })
			}
			waitTree(t, "end", []*resizeNode{rootN, hiN, loN})
			if e := early.Load(); e != 0 {
				t.Fatalf("%d lower-level tasks started while a higher-level task waited", e)
			}
			rootN.check(t, "end")
		})
	}
}

// TestAdvResizeDuringMapSeqAndForEachKeepsTheirWindow attacks MapSeq's "at most W values are
// pulled and not yet yielded (W = the pool's limit when the call starts)" and ForEach's "at
// most p's limit (its MaxWorkers when the call starts)" while the pool is resized up and
// down in the middle of the range.
func TestAdvResizeDuringMapSeqAndForEachKeepsTheirWindow(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	var pulled atomic.Int64
	yielded := int64(0)
	for v, err := range crew.MapSeq(context.Background(), p, endless(&pulled), func(_ context.Context, x int) (int, error) {
		if x%3 == 0 {
			p.Resize(1 + x%7)
		}
		return x, nil
	}) {
		if err != nil {
			t.Fatalf("MapSeq yielded %v", err)
		}
		yielded++
		if ahead := pulled.Load() - yielded; ahead > 2 {
			t.Fatalf("MapSeq pulled %d values not yet yielded, above W = 2, after Resizes up to 7", ahead)
		}
		if v >= 300 {
			break
		}
		if v%5 == 0 {
			p.Resize(1 + v%9)
		}
	}
	p.Resize(3)
	var h highWater
	err := crew.ForEach(context.Background(), p, countTo(300), func(_ context.Context, x int) error {
		h.enter()
		defer h.exit()
		if x%4 == 0 {
			p.Resize(1 + x%8)
		}
		runtime.Gosched()
		return nil
	})
	if err != nil {
		t.Fatalf("ForEach = %v", err)
	}
	if hw := h.high.Load(); hw > 3 {
		t.Fatalf("ForEach ran %d calls at once, above its limit of 3 when it started", hw)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvResizeAdaptiveLimitStaysBetweenItsFloorAndTheCeiling attacks WithAdaptiveLimit's
// "moves Stats.MaxWorkers between min and the maxWorkers given to New", "Resize on an
// adaptive pool sets the ceiling: a limit above the new ceiling comes down to it at once"
// and "A min above the ceiling counts as the ceiling": while the limit adapts to a stream
// of tasks and the ceiling moves, every snapshot taken between two Resizes shows MaxWorkers
// at most the ceiling and at least min(floor, ceiling), and Running within the highest
// ceiling.
func TestAdvResizeAdaptiveLimitStaysBetweenItsFloorAndTheCeiling(t *testing.T) {
	const floor = 5
	p := crew.New(12, crew.WithAdaptiveLimit(floor))
	defer p.StopAndWait()
	var mu sync.Mutex // held by each Resize with the ceiling it sets, and by each check
	ceiling := 12
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad atomic.Value
	repeatUntil(&wg, stop, func() {
		mu.Lock()
		s := p.Stats()
		if s.MaxWorkers > ceiling || s.MaxWorkers < min(floor, ceiling) || s.Running > 12 {
			bad.CompareAndSwap(nil, fmt.Sprintf("%+v under a ceiling of %d and a floor of %d", s, ceiling, floor))
		}
		mu.Unlock()
		runtime.Gosched()
	})
	repeatUntil(&wg, stop, func() {
		mu.Lock()
		ceiling = 1 + rand.IntN(12)
		p.Resize(ceiling)
		if got := p.Stats().MaxWorkers; got > ceiling {
			bad.CompareAndSwap(nil, fmt.Sprintf("MaxWorkers %d right after Resize(%d)", got, ceiling))
		}
		mu.Unlock()
		time.Sleep(200 * time.Microsecond)
	})
	per := resizeStormSize()
	together(4, per, func(c, i int) {
		resizeCheck(t, "Submit", p.Submit(func() {
			if i%3 == 0 {
				time.Sleep(10 * time.Microsecond)
			}
		}))
	})
	awaitReturn(t, "Wait", goRun(p.Wait))
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	idleIdentity(t, "adaptive", p.Stats())
}

// TestAdvResizeFuncPoolBelowMinWorkersAndBesideStopNow attacks FuncPool.Resize as Pool.Resize
// is documented: shrinking below WithMinWorkers makes idle workers above the limit exit,
// growing starts queued calls at once, and beside a storm of Resizes from goroutines and
// calls, StopNow returns each accepted call not run, never one that ran, none lost.
func TestAdvResizeFuncPoolBelowMinWorkersAndBesideStopNow(t *testing.T) {
	t.Run("MinWorkers", func(t *testing.T) {
		g := newGatedTasks()
		defer g.releaseAll()
		f := crew.NewFunc(4, func(task func()) { task() }, crew.WithMinWorkers(4))
		defer f.StopAndWait()
		n := newResizeNode("FuncPool", nil, nil, 1, 4) // the gauge alone
		n.setBound(4)
		awaitStats(t, f, "4 minimum workers idle", func(s crew.Stats) bool { return s.Idle == 4 })
		f.Resize(1)
		awaitStats(t, f, "at most 1 idle worker after Resize(1)", func(s crew.Stats) bool { return s.Idle <= 1 })
		n.setBound(1)
		for range 4 {
			must(t, f.Invoke(g.task(n)))
		}
		waitFor(t, "a call to run", func() bool { return g.started.Load() == 1 })
		time.Sleep(20 * time.Millisecond)
		if got := g.started.Load(); got != 1 {
			t.Fatalf("%d calls run under a limit of 1", got)
		}
		n.setBound(4)
		f.Resize(4)
		waitFor(t, "growing to start the queued calls", func() bool { return g.started.Load() == 4 })
		g.releaseAll()
		awaitReturn(t, "Wait", goRun(f.Wait))
		n.check(t, "end")
		idleIdentity(t, "FuncPool", f.Stats())
	})
	t.Run("StopNow", func(t *testing.T) {
		per := resizeStormSize()
		const submitters = 4
		runs := make([]atomic.Int32, submitters*per)
		var limit, running, excess atomic.Int64
		limit.Store(5)
		var f *crew.FuncPool[int]
		f = crew.NewFunc(3, func(k int) {
			before := limit.Load()
			cur := running.Add(1)
			raiseTo(&excess, cur-max(before, limit.Load()))
			defer running.Add(-1)
			runs[k].Add(1)
			if k%7 == 0 {
				f.Resize(1 + rand.IntN(5))
			}
			runtime.Gosched()
		})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		repeatUntil(&wg, stop, func() {
			f.Resize(1 + rand.IntN(5))
			runtime.Gosched()
		})
		var accepted atomic.Int64
		var back []int
		var once sync.Once
		together(submitters, per, func(c, i int) {
			if c == 1 && i == per/2 {
				once.Do(func() { back = f.StopNow() })
			}
			switch err := f.Invoke(c*per + i); {
			case err == nil:
				accepted.Add(1)
			case !errors.Is(err, crew.ErrStopped):
				t.Errorf("Invoke = %v", err)
			}
		})
		awaitReturn(t, "StopAndWait", goRun(f.StopAndWait))
		close(stop)
		wg.Wait()
		for _, k := range back {
			if r := runs[k].Load(); r != 0 {
				t.Fatalf("StopNow returned call %d, which ran %d times", k, r)
			}
			runs[k].Add(1)
		}
		var total int64
		for k := range runs {
			r := runs[k].Load()
			if r > 1 {
				t.Fatalf("call %d ran %d times", k, r)
			}
			total += int64(r)
		}
		if total != accepted.Load() {
			t.Fatalf("%d calls ran or came back, %d were accepted", total, accepted.Load())
		}
		if e := excess.Load(); e > 0 {
			t.Fatalf("%d calls above the highest limit", e)
		}
		s := f.Stats()
		idleIdentity(t, "FuncPool", s)
		if s.Returned != uint64(len(back)) {
			t.Fatalf("Stats.Returned = %d, StopNow returned %d", s.Returned, len(back))
		}
	})
}

// TestAdvResizeRootShrinkHoldsAGrandchildSubPool attacks "A sub-pool's tasks obey everything
// above them at every start: after a parent's shrinking Resize returns, no task of any
// sub-pool starts while the parent runs its new limit or more" two levels down, for plain
// and weighted tasks: a sub-pool of a sub-pool running 4 tasks under a root shrunk to 1 starts
// no task until all of them have returned, then runs one at a time.
func TestAdvResizeRootShrinkHoldsAGrandchildSubPool(t *testing.T) {
	for _, weight := range []int{1, 2} {
		t.Run(fmt.Sprintf("weight=%d", weight), func(t *testing.T) {
			root := crew.New(8)
			defer root.StopAndWait()
			a := root.Sub(8)
			aa := a.Sub(8)
			rootN := newResizeNode("root", root, nil, 2, 8)
			aN := newResizeNode("a", a, rootN, 8, 8)
			aaN := newResizeNode("a/a", aa, aN, 8, 8)
			g := newGatedTasks()
			defer g.releaseAll()
			const total = 12
			for range total {
				must(t, aa.SubmitN(weight, g.task(aaN)))
			}
			running := 8 / weight
			waitFor(t, "the grandchild's tasks to run", func() bool { return g.started.Load() == int64(running) })
			root.Resize(2)
			// Release all but the tasks that fill the new limit of 2: none may start.
			keep := 2 / weight
			for i := range running - keep {
				g.releaseOne(t)
				waitFor(t, "a released task to return", func() bool { return g.ended.Load() == int64(i+1) })
			}
			time.Sleep(20 * time.Millisecond)
			if got := g.started.Load(); got != int64(running) {
				t.Fatalf("%d tasks started, want %d: a grandchild's task started while the root ran its new limit", got, running)
			}
			awaitStats(t, root, "the root to run no more than 2", func(s crew.Stats) bool { return s.Running <= 2 })
			rootN.setBound(2)
			// One release per task not yet released: a task that took its release may not have
			// counted itself ended yet, so a loop on ended would offer a release no task takes.
			for released := running - keep; released < total; released++ {
				g.releaseOne(t)
				time.Sleep(2 * time.Millisecond) // room for a start above the limit
				if r := rootN.running.Load(); r > int64(keep) {
					t.Fatalf("%d tasks of weight %d run at once under a root limit of 2", r, weight)
				}
			}
			waitTree(t, "end", []*resizeNode{rootN, aN, aaN})
			rootN.check(t, "end")
			if got := g.started.Load(); got != total {
				t.Fatalf("%d tasks ran, want %d", got, total)
			}
		})
	}
}

// TestAdvResizeParentStormKeepsASubPoolFirstInFirstOut attacks "within one pool or sub-pool,
// tasks start first in, first out" while the parent is resized (down to 1 and up) and paused
// from other goroutines, and a sibling and a leveled sub-pool compete for its slots: a
// sub-pool of limit 1 fed by one submitter runs its tasks in submission order, each once.
func TestAdvResizeParentStormKeepsASubPoolFirstInFirstOut(t *testing.T) {
	root := crew.New(3)
	defer root.StopAndWait()
	one := root.Sub(1)
	sibling := root.Sub(3)
	high := root.Sub(2, crew.WithPriority(1))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() {
		root.Resize(1 + rand.IntN(4))
		time.Sleep(30 * time.Microsecond)
	})
	pauseStorm(&wg, stop, 300*time.Microsecond, root, one)
	for _, p := range []*crew.Pool{sibling, high} {
		repeatUntil(&wg, stop, func() {
			resizeCheck(t, "Submit", p.Submit(func() { runtime.Gosched() }))
			time.Sleep(20 * time.Microsecond)
		})
	}
	n := resizeStormSize()
	var mu sync.Mutex
	next := 0
	var bad []string
	for i := range n {
		must(t, one.Submit(func() {
			mu.Lock()
			if i != next && len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("task %d started when %d was due", i, next))
			}
			next = i + 1
			mu.Unlock()
		}))
		if i%10 == 0 {
			time.Sleep(200 * time.Microsecond)
		}
	}
	awaitReturn(t, "Wait of the sub-pool", goRun(one.Wait))
	close(stop)
	wg.Wait()
	for _, p := range []*crew.Pool{sibling, high, root} {
		awaitReturn(t, "Wait", goRun(p.Wait))
	}
	if len(bad) > 0 {
		t.Fatalf("a sub-pool of limit 1 broke first in, first out: %q", bad)
	}
	if next != n {
		t.Fatalf("the last task to run was %d, want %d", next-1, n-1)
	}
	for name, p := range map[string]*crew.Pool{"root": root, "one": one, "sibling": sibling, "high": high} {
		idleIdentity(t, name, p.Stats())
	}
}
