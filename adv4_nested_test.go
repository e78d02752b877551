package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// nestAwait fails t with the stacks of the goroutines inside crew if done is not closed within
// 10 s: the wait it stands for deadlocked.
func nestAwait(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("deadlock: %s did not return within 10 s\n%s", what, nestDump())
	}
}

// nestDump returns the stacks of the goroutines that run code of crew, cut to a readable size.
func nestDump() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var kept []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "crewgo/crew") && !strings.Contains(g, "nestDump") {
			kept = append(kept, g)
		}
	}
	s := strings.Join(kept, "\n\n")
	if len(s) > 12000 {
		s = s[:12000] + "\n..."
	}
	return s
}

// nestRun runs f on a goroutine of its own and fails t, with a dump, unless it returns within
// 10 s.
func nestRun(t *testing.T, what string, f func()) {
	t.Helper()
	nestAwait(t, what, goRun(f))
}

// nestStop stops pools, children first, bounding each StopAndWait, and checks each one's idle
// identity.
func nestStop(t *testing.T, pools ...*crew.Pool) {
	t.Helper()
	for i := len(pools) - 1; i >= 0; i-- {
		p := pools[i]
		nestRun(t, fmt.Sprintf("StopAndWait of pool %d", i), p.StopAndWait)
		idleIdentity(t, fmt.Sprintf("pool %d", i), p.Stats())
	}
}

// A nestWait is one of the waits that help: it runs body(ctx, i) for i < n on p, from ctx, and
// waits for them all.
type nestWait struct {
	name string
	run  func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error
}

var nestWaits = []nestWait{
	{"Group", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		g, _ := p.Group(ctx)
		for i := range n {
			g.Go(func(ctx context.Context) error { return body(ctx, i) })
		}
		return g.Wait()
	}},
	{"GroupAll", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		g, _ := p.GroupAll(ctx)
		for i := range n {
			g.Go(func(ctx context.Context) error { return body(ctx, i) })
		}
		return g.Wait()
	}},
	{"Results", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		rs, _ := crew.NewResults[int](ctx, p)
		for i := range n {
			rs.Go(func(ctx context.Context) (int, error) { return i, body(ctx, i) })
		}
		vals, err := rs.Wait()
		if err == nil {
			for i, v := range vals {
				if v != i {
					return fmt.Errorf("Results: value %d at %d", v, i)
				}
			}
		}
		return err
	}},
	{"Map", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		in := make([]int, n)
		for i := range in {
			in[i] = i
		}
		vals, err := crew.Map(ctx, p, in, func(ctx context.Context, i int) (int, error) { return i, body(ctx, i) })
		if err == nil && len(vals) != n {
			return fmt.Errorf("Map: %d values", len(vals))
		}
		return err
	}},
	{"ForEach", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		return crew.ForEach(ctx, p, countTo(n), body)
	}},
	{"MapSeq", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		next := 0
		for v, err := range crew.MapSeq(ctx, p, countTo(n), func(ctx context.Context, i int) (int, error) { return i, body(ctx, i) }) {
			if err != nil {
				return err
			}
			if v != next {
				return fmt.Errorf("MapSeq: %d out of order, want %d", v, next)
			}
			next++
		}
		return nil
	}},
	{"MapSeqUnordered", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		got := 0
		for _, err := range crew.MapSeqUnordered(ctx, p, countTo(n), func(ctx context.Context, i int) (int, error) { return i, body(ctx, i) }) {
			if err != nil {
				return err
			}
			got++
		}
		if got != n {
			return fmt.Errorf("MapSeqUnordered: %d values, want %d", got, n)
		}
		return nil
	}},
	{"GoContext", func(ctx context.Context, p *crew.Pool, n int, body func(context.Context, int) error) error {
		fs := make([]*crew.Future[int], n)
		for i := range n {
			fs[i] = crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return i, body(ctx, i) })
		}
		var errs []error
		for i := n - 1; i >= 0; i-- { // the oldest last: each Wait finds others still queued
			_, err := fs[i].Wait()
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}},
}

// TestAdvNestedEveryWaitPairOnALimitOneTreeWithQueuesOfOne: every pair of waits that help,
// the outer one made by a function of a leaf sub-pool on the leaf, its parent or the root,
// the inner one made by each outer function on its own pool or a pool above it, completes on
// a tree of limit 1 at every level with queues of one, and each body runs once; no pool's
// Stats ever shows more than one task running.
func TestAdvNestedEveryWaitPairOnALimitOneTreeWithQueuesOfOne(t *testing.T) {
	t.Parallel()
	root := crew.New(1, crew.WithQueueSize(1))
	mid := root.Sub(1, crew.WithQueueSize(1))
	leaf := mid.Sub(1, crew.WithQueueSize(1))
	chain := []*crew.Pool{leaf, mid, root} // each pool, then the pools above it
	// Functions run in a lent slot count as Waiting, never Running: no pool shows more
	// running than its limit of 1.
	watched := make(chan struct{})
	var watchers []<-chan error
	for i, p := range chain {
		watchers = append(watchers, watchStats(t, fmt.Sprintf("pool %d", i), p, 1, watched))
	}
	n := 3
	for oi, outer := range nestWaits {
		for ii, inner := range nestWaits {
			x := (oi + ii) % 3       // the outer wait's pool
			y := x + (oi*7+ii)%(3-x) // the inner wait's: x's own or one above it
			var ran atomic.Int32
			f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
				err := outer.run(ctx, chain[x], n, func(ctx context.Context, _ int) error {
					return inner.run(ctx, chain[y], n, func(context.Context, int) error {
						ran.Add(1)
						return nil
					})
				})
				return int(ran.Load()), err
			})
			what := fmt.Sprintf("%s on pool %d around %s on pool %d", outer.name, x, inner.name, y)
			nestRun(t, what, func() {
				if got, err := f.Wait(); err != nil || got != n*n {
					t.Errorf("%s: ran %d, %v; want %d, nil", what, got, err, n*n)
				}
			})
		}
	}
	close(watched)
	for _, errc := range watchers {
		nestRun(t, "the stats watcher", func() { <-errc })
	}
	nestStop(t, root, mid, leaf)
}

// TestAdvNestedWaitsOnASiblingOrAChildCompleteWithASpareSlot: a wait that cannot help (made on
// a sibling sub-pool, or by a function of the root on a sub-pool of it) still completes when
// the root has a slot left over for the functions it waits for, for every kind of wait.
func TestAdvNestedWaitsOnASiblingOrAChildCompleteWithASpareSlot(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	a := root.Sub(1)
	b := root.Sub(1, crew.WithQueueSize(1))
	for _, w := range nestWaits {
		for _, c := range []struct {
			name     string
			from, on *crew.Pool
		}{{"sibling", a, b}, {"child", root, a}, {"grandchild of root via sibling", b, a}} {
			var ran atomic.Int32
			f := crew.GoContext(context.Background(), c.from, func(ctx context.Context) (int, error) {
				err := w.run(ctx, c.on, 4, func(context.Context, int) error { ran.Add(1); return nil })
				return int(ran.Load()), err
			})
			what := w.name + " on a " + c.name
			nestRun(t, what, func() {
				if got, err := f.Wait(); err != nil || got != 4 {
					t.Errorf("%s: ran %d, %v; want 4, nil", what, got, err)
				}
			})
		}
	}
	nestStop(t, root, a, b)
}

// TestAdvNestedPauseHoldsLentStartsOfThePausedPoolOnly: a function of a leaf sub-pool waits
// for work it gave its own pool, its parent and the root. While the root is paused, no
// function of any of them starts, not even in the lent slot; a pause of the middle pool holds
// the leaf's and the middle's functions but not the root's, which complete; a Resume lets the
// rest complete.
func TestAdvNestedPauseHoldsLentStartsOfThePausedPoolOnly(t *testing.T) {
	t.Parallel()
	root := crew.New(1)
	mid := root.Sub(1)
	leaf := mid.Sub(1)
	chain := []*crew.Pool{leaf, mid, root}
	for _, w := range nestWaits {
		for pi, paused := range []*crew.Pool{root, mid} {
			for target := range chain {
				held := pi == 0 || target < 2 // a pause of mid holds leaf and mid, not root
				inside, gate := make(chan struct{}), make(chan struct{})
				var ran atomic.Int32
				f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
					close(inside)
					<-gate
					err := w.run(ctx, chain[target], 3, func(context.Context, int) error { ran.Add(1); return nil })
					return int(ran.Load()), err
				})
				what := fmt.Sprintf("%s on pool %d with pool %d paused", w.name, target, 2-pi)
				nestAwait(t, what+": start", inside)
				paused.Pause()
				close(gate)
				if held {
					time.Sleep(20 * time.Millisecond)
					if n := ran.Load(); n != 0 {
						t.Fatalf("%s: %d functions ran while paused", what, n)
					}
					paused.Resume()
				}
				nestRun(t, what, func() {
					if got, err := f.Wait(); err != nil || got != 3 {
						t.Errorf("%s: ran %d, %v; want 3, nil", what, got, err)
					}
				})
				paused.Resume()
			}
		}
	}
	nestStop(t, root, mid, leaf)
}

// nestTree forks 2 functions per level to depth on p with w, from ctx, and counts the leaves.
func nestTree(ctx context.Context, w nestWait, p *crew.Pool, depth int, leaves *atomic.Int32) error {
	if depth == 0 {
		leaves.Add(1)
		return nil
	}
	return w.run(ctx, p, 2, func(ctx context.Context, _ int) error {
		return nestTree(ctx, w, p, depth-1, leaves)
	})
}

// TestAdvNestedResizeDownToOneWhileTreesWait: four functions on a pool of four, each in the
// middle of a fork/join tree, see the pool (or its parent) shrink to 1; every tree completes,
// and once they have, no more than one task of the pool runs at a time.
func TestAdvNestedResizeDownToOneWhileTreesWait(t *testing.T) {
	t.Parallel()
	for _, w := range nestWaits {
		for _, shrinkRoot := range []bool{false, true} {
			root := crew.New(4, crew.WithQueueSize(2))
			p := root.Sub(4, crew.WithQueueSize(2))
			var started sync.WaitGroup
			started.Add(4)
			gate, shrunk := make(chan struct{}), make(chan struct{})
			var leaves, inWait atomic.Int32
			fs := make([]*crew.Future[int], 4)
			for i := range fs {
				fs[i] = crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
					started.Done()
					<-gate // the four hold the four slots before they fork
					return 0, w.run(ctx, p, 2, func(ctx context.Context, _ int) error {
						inWait.Add(1)
						<-shrunk // in a lent slot, inside the wait, when the shrink comes
						return nestTree(ctx, w, p, 4, &leaves)
					})
				})
			}
			what := fmt.Sprintf("%s, shrinking root %v", w.name, shrinkRoot)
			nestRun(t, what+": four started", started.Wait)
			close(gate)
			waitFor(t, what+": the four waits in progress", func() bool { return inWait.Load() >= 4 })
			if shrinkRoot {
				root.Resize(1)
			} else {
				p.Resize(1)
			}
			close(shrunk)
			for _, f := range fs {
				nestRun(t, what, func() {
					if _, err := f.Wait(); err != nil {
						t.Errorf("%s: %v", what, err)
					}
				})
			}
			if n := leaves.Load(); n != 4*2*16 {
				t.Fatalf("%s: %d leaves, want %d", what, n, 4*2*16)
			}
			var g limitGauge
			g.limit.Store(1)
			for range 20 {
				must(t, p.Submit(func() { g.enter(); time.Sleep(50 * time.Microsecond); g.leave() }))
			}
			nestRun(t, what+": Wait", p.Wait)
			if h := g.high.Load(); h > 0 {
				t.Fatalf("%s: after the shrink, %d tasks over the limit of 1 ran", what, h)
			}
			nestStop(t, root, p)
		}
	}
}

// TestAdvNestedStopNowStopOrShutdownAmidAHelpingWait: a function of a leaf sub-pool (limit 1
// at every level) waits for six functions it gave the leaf, its parent or the root, and runs
// one of them in its slot when the root is stopped: by StopNow, the rest are taken out and the
// wait returns ErrStopped; by Stop, the accepted ones all run; by a Shutdown whose context
// ends, the running function's context ends with ErrStopped, the rest are skipped, and the
// wait returns. None of them deadlocks.
func TestAdvNestedStopNowStopOrShutdownAmidAHelpingWait(t *testing.T) {
	t.Parallel()
	const n = 6
	// upfront: the waits whose functions are all accepted before the wait begins.
	upfront := map[string]bool{"Group": true, "GroupAll": true, "Results": true, "GoContext": true}
	for _, w := range nestWaits {
		for _, how := range []string{"StopNow", "Stop", "Shutdown"} {
			for target := range 3 {
				root := crew.New(1)
				mid := root.Sub(1)
				leaf := mid.Sub(1)
				chain := []*crew.Pool{leaf, mid, root}
				in, release := make(chan struct{}, n), make(chan struct{})
				var ran atomic.Int32
				f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
					err := w.run(ctx, chain[target], n, func(ctx context.Context, _ int) error {
						ran.Add(1)
						in <- struct{}{}
						select {
						case <-release:
							return nil
						case <-ctx.Done():
							return context.Cause(ctx)
						}
					})
					return int(ran.Load()), err
				})
				what := fmt.Sprintf("%s on pool %d, %s", w.name, target, how)
				nestAwait(t, what+": first function", in)
				switch how {
				case "StopNow":
					if back := root.StopNow(); len(back) != 0 {
						t.Fatalf("%s: StopNow handed back %d plain tasks, want none", what, len(back))
					}
					close(release)
				case "Stop":
					root.Stop()
					close(release)
				case "Shutdown":
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					var err error
					nestRun(t, what, func() { err = root.Shutdown(ctx) })
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("%s: Shutdown = %v, want DeadlineExceeded", what, err)
					}
					// release stays open: the running function returns when its context ends.
				}
				var got int
				var err error
				nestRun(t, what, func() { got, err = f.Wait() })
				if how == "Shutdown" {
					close(release)
				}
				switch {
				case how == "Stop" && upfront[w.name]:
					if err != nil || got != n {
						t.Fatalf("%s: ran %d, %v; want every accepted function run", what, got, err)
					}
				case how == "Stop":
					if err != nil && !errors.Is(err, crew.ErrStopped) {
						t.Fatalf("%s: %v, want nil or ErrStopped", what, err)
					}
				case !errors.Is(err, crew.ErrStopped):
					t.Fatalf("%s: ran %d, %v; want ErrStopped", what, got, err)
				case got != 1:
					t.Fatalf("%s: %d functions ran, want the one running when the pool stopped", what, got)
				}
				nestStop(t, root, mid, leaf)
			}
		}
	}
}

// TestAdvNestedWaitsOnPrioritySubPoolsComplete: fork/join trees of every kind of wait, made
// by functions of sub-pools of three priorities (one a sub-pool of another) on their own pool
// and on the root of limit 1 with a queue of one, complete beside a flood of plain tasks.
func TestAdvNestedWaitsOnPrioritySubPoolsComplete(t *testing.T) {
	t.Parallel()
	root := crew.New(1, crew.WithQueueSize(1))
	lo := root.Sub(1, crew.WithPriority(0))
	hi := root.Sub(2, crew.WithPriority(3), crew.WithQueueSize(1))
	hihi := hi.Sub(1, crew.WithPriority(1))
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var plain atomic.Int64
	repeatUntil(&flood, stop, func() {
		if !root.TrySubmit(func() { plain.Add(1) }) {
			runtime.Gosched()
		}
	})
	for _, w := range nestWaits {
		var leaves atomic.Int32
		var fs []*crew.Future[int]
		for _, from := range []*crew.Pool{lo, hi, hihi} {
			for _, on := range []*crew.Pool{from, root} {
				fs = append(fs, crew.GoContext(context.Background(), from, func(ctx context.Context) (int, error) {
					return 0, nestTree(ctx, w, on, 3, &leaves)
				}))
			}
		}
		for _, f := range fs {
			nestRun(t, w.name+" trees on priority sub-pools", func() {
				if _, err := f.Wait(); err != nil {
					t.Errorf("%s: %v", w.name, err)
				}
			})
		}
		if n := leaves.Load(); n != 6*8 {
			t.Fatalf("%s: %d leaves, want 48", w.name, n)
		}
	}
	close(stop)
	flood.Wait()
	nestStop(t, root, lo, hi, hihi)
}

// TestAdvNestedWaitsUnderEveryOverflowPolicyOnQueuesOfOne: fork/join trees of every kind of
// wait, made by functions of a sub-pool on the sub-pool and on the root, both with a queue of
// one, under each overflow policy, beside outsiders that keep the root's queue full: nothing
// deadlocks; under Block and CallerRuns every function runs once and no wait fails; under
// DiscardOldest a wait fails only with ErrDiscarded, under Reject only with ErrQueueFull; the
// limit of 1 holds for the starts of workers.
func TestAdvNestedWaitsUnderEveryOverflowPolicyOnQueuesOfOne(t *testing.T) {
	t.Parallel()
	for _, pol := range []struct {
		name string
		o    crew.Overflow
		err  error
	}{
		{"Block", crew.Block, nil},
		{"CallerRuns", crew.CallerRuns, nil},
		{"DiscardOldest", crew.DiscardOldest, crew.ErrDiscarded},
		{"Reject", crew.Reject, crew.ErrQueueFull},
	} {
		root := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(pol.o))
		sub := root.Sub(1, crew.WithQueueSize(1))
		stop := make(chan struct{})
		var outsiders sync.WaitGroup
		repeatUntil(&outsiders, stop, func() {
			if pol.o == crew.DiscardOldest {
				_ = root.Submit(func() {}) // drops the oldest queued task, perhaps a function of a tree
				time.Sleep(100 * time.Microsecond)
				return
			}
			if !root.TrySubmit(func() {}) {
				time.Sleep(50 * time.Microsecond)
			}
		})
		for _, w := range nestWaits {
			for _, on := range []*crew.Pool{sub, root} {
				var leaves atomic.Int32
				f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
					return 0, nestTree(ctx, w, on, 3, &leaves)
				})
				what := fmt.Sprintf("%s under %s", w.name, pol.name)
				var err error
				nestRun(t, what, func() { _, err = f.Wait() })
				switch {
				case err == nil:
					if n := leaves.Load(); n != 8 {
						t.Fatalf("%s: %d leaves ran, want 8", what, n)
					}
				case pol.err == nil || !errors.Is(err, pol.err):
					t.Fatalf("%s: %v", what, err)
				}
				if n := leaves.Load(); n > 8 {
					t.Fatalf("%s: %d leaves ran, want at most 8", what, n)
				}
			}
		}
		close(stop)
		outsiders.Wait()
		nestStop(t, root, sub)
	}
}

// TestAdvNestedTaskTimeoutOfTheWaiterSkipsWhatItWaitsFor: under WithTaskTimeout, a function
// that waits for work it gave its pool (of limit 1, or a sub-pool of it) runs one function in
// its slot, which returns at the end of the waiter's deadline; the wait then returns an error
// matching ErrTaskTimeout, and the functions it gave that never started are skipped, counted
// in Skipped, never run.
func TestAdvNestedTaskTimeoutOfTheWaiterSkipsWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	const n = 5
	for _, w := range nestWaits {
		for _, onSub := range []bool{false, true} {
			root := crew.New(1, crew.WithTaskTimeout(30*time.Millisecond))
			sub := root.Sub(1)
			p := root
			if onSub {
				p = sub
			}
			var ran atomic.Int32
			f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
				err := w.run(ctx, p, n, func(ctx context.Context, _ int) error {
					ran.Add(1)
					<-ctx.Done()
					return context.Cause(ctx)
				})
				return 0, err
			})
			what := fmt.Sprintf("%s, on the sub-pool %v", w.name, onSub)
			var err error
			nestRun(t, what, func() { _, err = f.Wait() })
			// DeadlineExceeded: on a machine so slow that the timeout came before the wait.
			if !errors.Is(err, crew.ErrTaskTimeout) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s: %v, want ErrTaskTimeout", what, err)
			}
			if got := ran.Load(); got > 1 {
				t.Fatalf("%s: %d functions ran, want 1: the rest belong to a context that has ended", what, got)
			}
			nestStop(t, root, sub)
		}
	}
}

// TestAdvNestedFutureCancelRacesItsHelpingWait: a function of a pool of one (or of its
// sub-pool) makes a future on the pool and waits for it while another goroutine cancels it:
// either Cancel reports true, the function never runs and Wait returns context.Canceled, or
// Cancel reports false and the function ran once; a future canceled before its Wait returns
// context.Canceled at once, and one whose function the wait has already started cannot be
// canceled.
func TestAdvNestedFutureCancelRacesItsHelpingWait(t *testing.T) {
	t.Parallel()
	root := crew.New(1)
	sub := root.Sub(1)
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for _, from := range []*crew.Pool{root, sub} {
		var canceledCount, ranCount int
		for range rounds {
			var ran atomic.Int32
			var canceled atomic.Bool
			f := crew.GoContext(context.Background(), from, func(ctx context.Context) (int, error) {
				fut := crew.GoContext(ctx, root, func(context.Context) (int, error) { ran.Add(1); return 7, nil })
				go func() { canceled.Store(fut.Cancel()) }()
				runtime.Gosched()
				v, err := fut.Wait()
				<-fut.Done()
				switch {
				case errors.Is(err, context.Canceled):
					if ran.Load() != 0 {
						return 0, fmt.Errorf("Wait = Canceled, but the function ran")
					}
				case err != nil || v != 7:
					return 0, fmt.Errorf("Wait = %d, %v", v, err)
				}
				return int(ran.Load()), err
			})
			var got int
			var err error
			nestRun(t, "a future's Wait racing its Cancel", func() { got, err = f.Wait() })
			if errors.Is(err, context.Canceled) {
				err = nil
			}
			if err != nil {
				t.Fatal(err)
			}
			// The goroutine of Cancel may not have stored yet: settle on Done of the pool.
			nestRun(t, "Wait", root.Wait)
			waitFor(t, "Cancel to return", func() bool { return canceled.Load() || got == 1 })
			if canceled.Load() == (got == 1) {
				t.Fatalf("Cancel = %v, but the function ran %d times", canceled.Load(), got)
			}
			if canceled.Load() {
				canceledCount++
			} else {
				ranCount++
			}
		}
		t.Logf("canceled %d, ran %d", canceledCount, ranCount)
	}

	// Canceled first, then waited for: at once, and the function never runs; started by the
	// wait, then canceled: false.
	f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
		a := crew.GoContext(ctx, root, func(context.Context) (int, error) { return 0, errors.New("ran") })
		var b *crew.Future[int]
		inside := make(chan struct{})
		b = crew.GoContext(ctx, sub, func(context.Context) (int, error) {
			close(inside)
			if b.Cancel() {
				return 0, errors.New("Cancel of a running future reported true")
			}
			return 1, nil
		})
		if !a.Cancel() {
			return 0, errors.New("Cancel of a queued future reported false")
		}
		if _, err := a.Wait(); !errors.Is(err, context.Canceled) {
			return 0, fmt.Errorf("Wait of a canceled future = %v", err)
		}
		v, err := b.Wait()
		<-inside
		return v, err
	})
	nestRun(t, "Cancel before the helping wait", func() {
		if v, err := f.Wait(); err != nil || v != 1 {
			t.Errorf("Wait = %d, %v", v, err)
		}
	})
	nestStop(t, root, sub)
}

// TestAdvNestedHooksThatPanicOrGoexitAroundALentSlot: hooks of a pool and of its sub-pool that
// panic (with nil too) or call runtime.Goexit at the first submit, start, finish, Context call
// or end of a Context after a function of the sub-pool begins a wait that helps, on its own pool or on the root (limit 1,
// queue of one): a panic goes to the panic handler and every function runs once; a Goexit ends
// the goroutine it runs on, the waiting function's, whose future reports the Goexit; in every
// case the functions left queued still run, and the pools drain to an idle identity.
func TestAdvNestedHooksThatPanicOrGoexitAroundALentSlot(t *testing.T) {
	t.Parallel()
	const n = 3
	for _, hook := range []string{"Queued", "Started", "Finished", "Context", "Context's end"} {
		for _, act := range []string{"panic(nil)", "panic", "Goexit"} {
			for _, w := range nestWaits {
				for _, onRoot := range []bool{false, true} {
					var armed atomic.Bool
					var handled atomic.Int32
					fire := func(crew.TaskInfo) {
						if !armed.CompareAndSwap(true, false) {
							return
						}
						switch act {
						case "panic(nil)":
							panic(nil)
						case "panic":
							panic("hook")
						default:
							runtime.Goexit()
						}
					}
					var h crew.Hooks
					switch hook {
					case "Queued":
						h.Queued = fire
					case "Started":
						h.Started = fire
					case "Finished":
						h.Finished = fire
					case "Context":
						h.Context = func(ctx context.Context) (context.Context, func(error)) {
							fire(crew.TaskInfo{})
							return ctx, nil
						}
					default:
						h.Context = func(ctx context.Context) (context.Context, func(error)) {
							if !armed.Load() {
								return ctx, nil
							}
							return ctx, func(error) { fire(crew.TaskInfo{}) }
						}
					}
					handler := crew.WithPanicHandler(func(any, []byte) { handled.Add(1) })
					root := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(h), handler)
					sub := root.Sub(1, crew.WithHooks(h))
					on := sub
					if onRoot {
						on = root
					}
					var ran atomic.Int32
					f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
						armed.Store(true)
						err := w.run(ctx, on, n, func(context.Context, int) error { ran.Add(1); return nil })
						return int(ran.Load()), err
					})
					what := fmt.Sprintf("%s hook that calls %s, %s on the root %v", hook, act, w.name, onRoot)
					var got int
					var err error
					nestRun(t, what, func() { got, err = f.Wait() })
					if act == "Goexit" {
						if err == nil || !strings.Contains(err.Error(), "Goexit") {
							t.Fatalf("%s: Wait = %d, %v; want the Goexit reported", what, got, err)
						}
					} else {
						if err != nil || got != n {
							t.Fatalf("%s: Wait = %d, %v; want %d, nil", what, got, err, n)
						}
						if handled.Load() != 1 {
							t.Fatalf("%s: the panic handler got %d panics, want 1", what, handled.Load())
						}
					}
					nestRun(t, what+": Wait", root.Wait)
					if n := ran.Load(); n > 3 {
						t.Fatalf("%s: %d functions ran, want at most 3", what, n)
					}
					nestStop(t, root, sub)
				}
			}
		}
	}
}

// TestAdvNestedHelpedFunctionsThatPanicNilOrGoexitDeepInATree: a grandchild, run in the slot
// its grandparent lends through two waits, panics with nil or calls runtime.Goexit. panic(nil)
// is a *PanicError of its wait, which goes up the tree as an error; Goexit ends the goroutine,
// so the grandparent's future reports it. The pools keep serving, the functions still queued
// run, and the pools drain to an idle identity.
func TestAdvNestedHelpedFunctionsThatPanicNilOrGoexitDeepInATree(t *testing.T) {
	t.Parallel()
	for _, act := range []string{"panic(nil)", "Goexit"} {
		for _, w := range nestWaits {
			for _, onRoot := range []bool{false, true} {
				root := crew.New(1, crew.WithQueueSize(1))
				mid := root.Sub(1)
				leaf := mid.Sub(1, crew.WithQueueSize(1))
				on := mid // the children run on mid: their waits help on mid and above
				if onRoot {
					on = root
				}
				var once atomic.Bool
				f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
					err := w.run(ctx, mid, 2, func(ctx context.Context, _ int) error {
						return w.run(ctx, on, 2, func(context.Context, int) error {
							if once.CompareAndSwap(false, true) {
								if act == "Goexit" {
									runtime.Goexit()
								}
								panic(nil)
							}
							return nil
						})
					})
					return 0, err
				})
				what := fmt.Sprintf("%s deep in %s on the root %v", act, w.name, onRoot)
				var err error
				nestRun(t, what, func() { _, err = f.Wait() })
				var pe *crew.PanicError
				if act == "Goexit" {
					if err == nil || !strings.Contains(err.Error(), "Goexit") {
						t.Fatalf("%s: Wait = %v; want the Goexit reported", what, err)
					}
				} else if !errors.As(err, &pe) {
					t.Fatalf("%s: Wait = %v; want a *PanicError", what, err)
				}
				nestRun(t, what+": Wait", root.Wait)
				v, err := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
					return 1, nestTree(ctx, w, leaf, 2, new(atomic.Int32))
				}).Wait()
				if err != nil || v != 1 {
					t.Fatalf("%s: the pools stopped serving: %v", what, err)
				}
				nestStop(t, root, mid, leaf)
			}
		}
	}
}

// TestAdvNestedPausedWaitEndsByStopNowStopShutdownCancelOrTimeout: a function of a leaf
// sub-pool waits for work it gave its pool, its parent or the root while the root (or the
// middle pool) is paused, so its wait runs nothing and naps. Each way out ends the wait
// without a Resume: a StopNow of their pool takes them out (ErrStopped); Stop resumes, so they all
// run; a Shutdown resumes too; a Cancel of the future it waits on returns context.Canceled;
// the end of the waiter's task timeout skips them (ErrTaskTimeout).
func TestAdvNestedPausedWaitEndsByStopNowStopShutdownCancelOrTimeout(t *testing.T) {
	t.Parallel()
	const n = 4
	for _, how := range []string{"StopNow", "Stop", "Shutdown", "Cancel", "TaskTimeout"} {
		for _, w := range nestWaits {
			if how == "Cancel" && w.name != "GoContext" {
				continue
			}
			if how == "TaskTimeout" && w.name == "GoContext" {
				continue // TestAdvNestedPausedFutureWaitEndsWhenItsContextEnds
			}
			for target := range 3 {
				for _, pauseMid := range []bool{false, true} {
					if pauseMid && target == 2 {
						continue // a pause of mid holds nothing of the root
					}
					var opts []crew.Option
					if how == "TaskTimeout" {
						opts = append(opts, crew.WithTaskTimeout(15*time.Millisecond))
					}
					root := crew.New(1, opts...)
					mid := root.Sub(1)
					leaf := mid.Sub(1)
					chain := []*crew.Pool{leaf, mid, root}
					paused := root
					if pauseMid {
						paused = mid
					}
					inside, gate := make(chan struct{}), make(chan struct{})
					futs := make(chan *crew.Future[int], 1)
					var ran atomic.Int32
					f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
						close(inside)
						<-gate
						if how == "Cancel" {
							fut := crew.GoContext(ctx, chain[target], func(context.Context) (int, error) { ran.Add(1); return 1, nil })
							futs <- fut
							_, err := fut.Wait()
							return int(ran.Load()), err
						}
						err := w.run(ctx, chain[target], n, func(context.Context, int) error { ran.Add(1); return nil })
						return int(ran.Load()), err
					})
					what := fmt.Sprintf("%s of a %s on pool %d, mid paused %v", how, w.name, target, pauseMid)
					nestAwait(t, what+": start", inside)
					paused.Pause()
					close(gate)
					time.Sleep(2 * time.Millisecond) // the wait naps
					switch w.name {
					case "Group", "GroupAll", "Results", "GoContext":
						if how == "StopNow" || how == "Stop" || how == "Shutdown" {
							// They submit all n functions before their wait: every one is
							// accepted before the pools stop, however slow the machine.
							waitFor(t, what+": the functions to queue", func() bool { return chain[target].Stats().Waiting >= n })
						}
					}
					if got := ran.Load(); got != 0 {
						t.Fatalf("%s: %d functions ran while paused", what, got)
					}
					switch how {
					case "StopNow":
						// The pool of the functions, whose queue goes in one step; a StopNow of
						// the root: TestAdvNestedStopNowOfAPausedRootAbandonsASubPoolsBacklog.
						chain[target].StopNow()
					case "Stop":
						root.Stop()
					case "Shutdown":
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						nestRun(t, what+": Shutdown", func() { must(t, root.Shutdown(ctx)) })
						cancel()
					case "Cancel":
						var fut *crew.Future[int]
						nestRun(t, what+": the future", func() { fut = <-futs })
						if !fut.Cancel() {
							t.Fatalf("%s: Cancel of a future held by a pause = false", what)
						}
					}
					var got int
					var err error
					nestRun(t, what, func() { got, err = f.Wait() })
					switch how {
					case "StopNow":
						if !errors.Is(err, crew.ErrStopped) || got != 0 {
							t.Fatalf("%s: ran %d, %v; want 0, ErrStopped", what, got, err)
						}
					case "Stop", "Shutdown":
						if err != nil || got != n {
							// A stream or ForEach whose later submits come after the stop fails
							// with ErrStopped; every function accepted before still runs.
							if !errors.Is(err, crew.ErrStopped) || w.name == "Group" || w.name == "GroupAll" || w.name == "Results" || w.name == "GoContext" {
								t.Fatalf("%s: ran %d, %v; want %d, nil", what, got, err, n)
							}
						}
					case "Cancel":
						if !errors.Is(err, context.Canceled) || got != 0 {
							t.Fatalf("%s: ran %d, %v; want 0, context.Canceled", what, got, err)
						}
					case "TaskTimeout":
						// DeadlineExceeded: the timeout came before the wait began.
						if !(errors.Is(err, crew.ErrTaskTimeout) || errors.Is(err, context.DeadlineExceeded)) || got != 0 {
							t.Fatalf("%s: ran %d, %v; want 0, ErrTaskTimeout", what, got, err)
						}
					}
					paused.Resume()
					nestStop(t, root, mid, leaf)
				}
			}
		}
	}
}

// TestAdvNestedStopNowOfAPausedRootAbandonsASubPoolsBacklog: Pause promises that no task of
// the pool or of its sub-pools starts until Resume, and StopNow that it abandons a paused
// backlog: the sub-pools' queued tasks included, taken out and never run. A function of a
// sub-pool of a sub-pool waits (a wait that helps) for functions it gave its own pool while the
// root (or the middle pool) is paused; a StopNow of the paused pool must fail them all with
// ErrStopped, none run.
func TestAdvNestedStopNowOfAPausedRootAbandonsASubPoolsBacklog(t *testing.T) {
	t.Parallel()
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	for i := range rounds {
		root := crew.New(1)
		mid := root.Sub(1)
		leaf := mid.Sub(1)
		held := root // paused, and stopped by StopNow
		if i%2 == 1 {
			held = mid
		}
		inside, gate := make(chan struct{}), make(chan struct{})
		var ran atomic.Int32
		f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
			close(inside)
			<-gate
			g, _ := leaf.Group(ctx)
			for range 4 {
				g.Go(func(context.Context) error { ran.Add(1); return nil })
			}
			return 0, g.Wait()
		})
		nestAwait(t, "the waiting function to start", inside)
		held.Pause()
		close(gate)
		waitFor(t, "the backlog to queue", func() bool { return leaf.Stats().Waiting >= 4 })
		time.Sleep(time.Millisecond) // the wait naps: nothing runs while paused
		held.StopNow()
		var err error
		nestRun(t, "the waiting function", func() { _, err = f.Wait() })
		if n := ran.Load(); n != 0 || !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("round %d: %d functions of the paused backlog ran after StopNow; Wait = %v, want ErrStopped", i, n, err)
		}
		nestStop(t, root, mid, leaf)
	}
}

// TestAdvNestedPausedFutureWaitEndsWhenItsContextEnds: a wait that helps runs nothing while its
// pool is paused, but a function whose context has ended needs no start: it is skipped, and
// the wait returns its cause (as a Group's, a Results', a Map's or a stream's wait does in
// TestAdvNestedPausedWaitEndsByStopNowStopShutdownCancelOrTimeout). A function of a pool
// with a task timeout waits for a future it made on the paused pool; once its timeout ends
// the future's context, Future.Wait must return ErrTaskTimeout without a Resume.
func TestAdvNestedPausedFutureWaitEndsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	for _, onSub := range []bool{false, true} {
		root := crew.New(1, crew.WithTaskTimeout(20*time.Millisecond))
		p := root
		if onSub {
			p = root.Sub(1)
		}
		inside, gate := make(chan struct{}), make(chan struct{})
		var ran atomic.Int32
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			close(inside)
			<-gate
			fut := crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
			_, err := fut.Wait()
			return 0, err
		})
		nestAwait(t, "the waiting function to start", inside)
		root.Pause()
		close(gate)
		select {
		case <-f.Done():
		case <-time.After(5 * time.Second):
			dump := nestDump()
			root.Resume()
			nestRun(t, "Wait after Resume", func() { f.Wait() })
			nestStop(t, root, p)
			t.Fatalf("on a sub-pool %v: Future.Wait of a future whose context ended waits for Resume\n%s", onSub, dump)
		}
		if _, err := f.Wait(); !errors.Is(err, crew.ErrTaskTimeout) || ran.Load() != 0 {
			t.Fatalf("on a sub-pool %v: Wait = %v, ran %d; want ErrTaskTimeout, 0", onSub, err, ran.Load())
		}
		root.Resume()
		if p != root {
			nestStop(t, root, p)
		} else {
			nestStop(t, root)
		}
	}
}

// TestAdvNestedKeyedAndPoolWaitsInsideAFunctionWithASpareSlot: waits that carry no context
// (Keyed.Wait, Pool.Wait of another pool) cannot help, but called inside a function of a pool
// of two, where one slot is left for the work they wait for, they return: Keyed.Wait of a
// Keyed on the same pool, on a sub-pool or on the parent; Pool.Wait of a sibling sub-pool or
// of a sub-pool (not of a pool above: its Wait waits for the caller's own task); also across a
// Pause and Resume of the root while they wait.
func TestAdvNestedKeyedAndPoolWaitsInsideAFunctionWithASpareSlot(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	a := root.Sub(1)
	b := root.Sub(2)
	for _, c := range []struct {
		name     string
		from, on *crew.Pool
		poolWait bool // Pool.Wait of on: never of a pool above from, whose tasks from's are
	}{{"same pool", root, root, false}, {"sub-pool", root, a, true}, {"parent", a, root, false}, {"sibling", a, b, true}} {
		for _, pause := range []bool{false, true} {
			k := crew.NewKeyed[int](c.on)
			var keyed, plain atomic.Int32
			inside, gate := make(chan struct{}), make(chan struct{})
			f := crew.GoContext(context.Background(), c.from, func(ctx context.Context) (int, error) {
				for i := range 20 {
					if err := k.Submit(i%3, func() { keyed.Add(1) }); err != nil {
						return 0, err
					}
				}
				close(inside)
				<-gate
				k.Wait()
				if c.poolWait {
					for range 5 {
						if err := c.on.Submit(func() { plain.Add(1) }); err != nil {
							return 0, err
						}
					}
					c.on.Wait()
				}
				return int(keyed.Load() + plain.Load()), nil
			})
			what := fmt.Sprintf("Keyed.Wait and Pool.Wait on the %s, paused %v", c.name, pause)
			nestAwait(t, what+": submits", inside)
			if pause {
				root.Pause()
			}
			close(gate)
			if pause {
				time.Sleep(2 * time.Millisecond)
				root.Resume()
			}
			want := 20
			if c.poolWait {
				want = 25
			}
			nestRun(t, what, func() {
				if got, err := f.Wait(); err != nil || got != want {
					t.Errorf("%s: %d tasks ran, %v; want %d", what, got, err, want)
				}
			})
			idleIdentity(t, what+": Keyed", k.Stats())
		}
	}
	nestStop(t, root, a, b)
}

// TestAdvNestedWaitAfterTheMakerLeftReturns: a function makes a group, a Results or futures on
// its pool of one, gives them functions and leaves without waiting: it returns, panics with
// nil or calls runtime.Goexit. A wait from outside, which cannot help, returns once the
// worker has run (or skipped) what was left: nothing is left claimed by the gone function.
func TestAdvNestedWaitAfterTheMakerLeftReturns(t *testing.T) {
	t.Parallel()
	root := crew.New(1, crew.WithPanicHandler(func(any, []byte) {}))
	sub := root.Sub(1, crew.WithQueueSize(1))
	for _, leave := range []string{"return", "panic(nil)", "Goexit"} {
		for _, p := range []*crew.Pool{root, sub} {
			var ran atomic.Int32
			waits := make(chan func() error, 1)
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				g, _ := p.Group(ctx)
				rs, _ := crew.NewResults[int](ctx, p)
				var fs []*crew.Future[int]
				for i := range 3 {
					g.Go(func(context.Context) error { ran.Add(1); return nil })
					rs.Go(func(context.Context) (int, error) { ran.Add(1); return i, nil })
					fs = append(fs, crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return i, nil }))
				}
				waits <- func() error {
					errs := []error{g.Wait()}
					_, err := rs.Wait()
					errs = append(errs, err)
					for _, f := range fs {
						_, err := f.Wait()
						errs = append(errs, err)
					}
					return errors.Join(errs...)
				}
				switch leave {
				case "panic(nil)":
					panic(nil)
				case "Goexit":
					runtime.Goexit()
				}
				return 0, nil
			})
			what := fmt.Sprintf("waits after the maker's %s", leave)
			var wait func() error
			nestRun(t, what+": maker", func() { wait = <-waits })
			var err error
			nestRun(t, what, func() { err = wait() })
			// Each function either ran or was skipped, its context having ended with its maker.
			if err != nil && ran.Load() == 9 {
				t.Fatalf("%s: every function ran, but the waits failed: %v", what, err)
			}
			nestRun(t, what+": the maker's future", func() { f.Wait() })
			nestRun(t, what+": Wait", p.Wait)
			idleIdentity(t, what, p.Stats())
		}
	}
	nestStop(t, root, sub)
}

// TestAdvNestedWaitsUnderPauseAndResizeStorms: fork/join trees of every kind of wait, made by
// functions of a leaf, its parent and the root on their own pool and the pools above, while the
// root and the middle pool are paused and resumed and the root is resized between 1 and 2
// over and over: every tree completes, each leaf of it once, and the pools drain to an idle
// identity.
func TestAdvNestedWaitsUnderPauseAndResizeStorms(t *testing.T) {
	t.Parallel()
	root := crew.New(2, crew.WithQueueSize(2))
	mid := root.Sub(2, crew.WithQueueSize(1))
	leaf := mid.Sub(1)
	chain := []*crew.Pool{leaf, mid, root}
	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 300*time.Microsecond, root, mid)
	repeatUntil(&storms, stop, func() {
		root.Resize(1)
		time.Sleep(200 * time.Microsecond)
		root.Resize(2)
		time.Sleep(200 * time.Microsecond)
	})
	depth := 3
	if testing.Short() {
		depth = 2
	}
	for _, w := range nestWaits {
		var leaves atomic.Int32
		var fs []*crew.Future[int]
		for from := range chain {
			for on := from; on < len(chain); on++ {
				fs = append(fs, crew.GoContext(context.Background(), chain[from], func(ctx context.Context) (int, error) {
					return 0, nestTree(ctx, w, chain[on], depth, &leaves)
				}))
			}
		}
		for _, f := range fs {
			nestRun(t, w.name+" trees under storms", func() {
				if _, err := f.Wait(); err != nil {
					t.Errorf("%s: %v", w.name, err)
				}
			})
		}
		if n, want := leaves.Load(), int32(len(fs)<<depth); n != want {
			t.Fatalf("%s: %d leaves, want %d", w.name, n, want)
		}
	}
	close(stop)
	storms.Wait()
	root.Resume()
	mid.Resume()
	nestStop(t, root, mid, leaf)
}

// TestAdvNestedHelpingSubmitHeldByAPauseGetsErrStoppedFromStopNow: a function of a leaf
// sub-pool with a queue of one submits a second function into its full queue while the
// middle pool (or the root) is paused: the submit, which would run the function itself, waits
// for the pause. A StopNow of the root refuses it with ErrStopped and takes the queued one
// out: none runs, and the group's Wait returns ErrStopped.
func TestAdvNestedHelpingSubmitHeldByAPauseGetsErrStoppedFromStopNow(t *testing.T) {
	t.Parallel()
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	for i := range rounds {
		root := crew.New(1)
		mid := root.Sub(1)
		leaf := mid.Sub(1, crew.WithQueueSize(1))
		held := mid
		if i%2 == 1 {
			held = root
		}
		inside, gate, going := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var ran atomic.Int32
		f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
			close(inside)
			<-gate
			g, _ := leaf.Group(ctx)
			g.Go(func(context.Context) error { ran.Add(1); return nil })
			close(going)
			g.Go(func(context.Context) error { ran.Add(1); return nil }) // a full queue, paused
			return 0, g.Wait()
		})
		nestAwait(t, "the function to start", inside)
		held.Pause()
		close(gate)
		nestAwait(t, "the first submit", going)
		waitFor(t, "the second submit to wait for the pause", func() bool { return crew.BlockedSubmitters(leaf) == 1 })
		root.StopNow()
		var err error
		nestRun(t, "the submitting function", func() { _, err = f.Wait() })
		if n := ran.Load(); n != 0 || !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("round %d: %d functions ran after StopNow; Wait = %v, want ErrStopped", i, n, err)
		}
		nestStop(t, root, mid, leaf)
	}
}

// TestAdvNestedSubmitsIntoAFullQueueRunOnTheCallerAndCount: a function of a pool (or of a
// sub-pool of it, two levels down) submits with the context crew gave it into the pool's full
// queue of one: Group.Go, Results.Go, GoContext and SubmitContext each run the function on
// the caller instead of blocking, and the pool counts each in CallerRan; every function runs
// once, and the pool drains to an idle identity.
func TestAdvNestedSubmitsIntoAFullQueueRunOnTheCallerAndCount(t *testing.T) {
	t.Parallel()
	const n = 5
	for _, depth := range []int{0, 2} {
		root := crew.New(1, crew.WithQueueSize(1))
		mid := root.Sub(1)
		leaf := mid.Sub(1)
		from := []*crew.Pool{root, mid, leaf}[depth]
		var ran atomic.Int32
		body := func() { ran.Add(1) }
		f := crew.GoContext(context.Background(), from, func(ctx context.Context) (int, error) {
			g, _ := root.Group(ctx)
			rs, _ := crew.NewResults[int](ctx, root)
			var fs []*crew.Future[int]
			var errs []error
			for range n {
				g.Go(func(context.Context) error { body(); return nil })
				rs.Go(func(context.Context) (int, error) { body(); return 1, nil })
				fs = append(fs, crew.GoContext(ctx, root, func(context.Context) (int, error) { body(); return 1, nil }))
				errs = append(errs, root.SubmitContext(ctx, body))
			}
			errs = append(errs, g.Wait())
			_, err := rs.Wait()
			errs = append(errs, err)
			for _, f := range fs {
				_, err := f.Wait()
				errs = append(errs, err)
			}
			return 0, errors.Join(errs...)
		})
		what := fmt.Sprintf("submits from depth %d", depth)
		nestRun(t, what, func() {
			if _, err := f.Wait(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		})
		nestRun(t, what+": Wait", root.Wait)
		if got := ran.Load(); got != 4*n {
			t.Fatalf("%s: %d functions ran, want %d", what, got, 4*n)
		}
		// The queue holds one: of the 4n submits, at most one waits there at a time, and
		// every other one finds it full, the one waiting being the function's own.
		if s := root.Stats(); s.CallerRan < 4*n-1 {
			t.Fatalf("%s: CallerRan %d, want at least %d: %+v", what, s.CallerRan, 4*n-1, s)
		}
		nestStop(t, root, mid, leaf)
	}
}

// TestAdvNestedStreamLoopBodyThatLeavesEarly: a function of a pool of one (or of a sub-pool of
// it) ranges over a MapSeq or MapSeqUnordered on the pool, whose calls its loop runs in its
// slot, and leaves the loop at the first value by break, panic(nil) or runtime.Goexit: the
// stream ends without running the rest, the function's future reports how it ended, and the
// pools drain to an idle identity with nothing left running.
func TestAdvNestedStreamLoopBodyThatLeavesEarly(t *testing.T) {
	t.Parallel()
	streams := []struct {
		name string
		seq  func(context.Context, *crew.Pool, func(context.Context, int) (int, error)) func(func(int, error) bool)
	}{
		{"MapSeq", func(ctx context.Context, p *crew.Pool, fn func(context.Context, int) (int, error)) func(func(int, error) bool) {
			return crew.MapSeq(ctx, p, countTo(50), fn)
		}},
		{"MapSeqUnordered", func(ctx context.Context, p *crew.Pool, fn func(context.Context, int) (int, error)) func(func(int, error) bool) {
			return crew.MapSeqUnordered(ctx, p, countTo(50), fn)
		}},
	}
	for _, st := range streams {
		for _, leave := range []string{"break", "panic(nil)", "Goexit"} {
			for _, onSub := range []bool{false, true} {
				root := crew.New(1, crew.WithQueueSize(1))
				sub := root.Sub(1, crew.WithQueueSize(1))
				from := root
				if onSub {
					from = sub
				}
				var ran atomic.Int32
				f := crew.GoContext(context.Background(), from, func(ctx context.Context) (int, error) {
					for _, err := range st.seq(ctx, from, func(context.Context, int) (int, error) { ran.Add(1); return 0, nil }) {
						if err != nil {
							return 0, err
						}
						switch leave {
						case "panic(nil)":
							panic(nil)
						case "Goexit":
							runtime.Goexit()
						}
						break
					}
					return 1, nil
				})
				what := fmt.Sprintf("%s left by %s, on the sub-pool %v", st.name, leave, onSub)
				var err error
				nestRun(t, what, func() { _, err = f.Wait() })
				var pe *crew.PanicError
				switch leave {
				case "break":
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
				case "panic(nil)":
					if !errors.As(err, &pe) {
						t.Fatalf("%s: %v, want a *PanicError", what, err)
					}
				default:
					if err == nil || !strings.Contains(err.Error(), "Goexit") {
						t.Fatalf("%s: %v, want the Goexit reported", what, err)
					}
				}
				nestRun(t, what+": Wait", root.Wait)
				if n := ran.Load(); n >= 50 {
					t.Fatalf("%s: %d calls ran, want the stream ended early", what, n)
				}
				nestStop(t, root, sub)
			}
		}
	}
}

// TestAdvNestedShutdownGivesUpAmidTreesUnderAPauseStorm: fork/join trees of every kind of wait
// on a tree of pools (limit 2, queues of one) whose leaves block until their context ends,
// while the root and the middle pool are paused and resumed: a Shutdown of the root whose
// context ends gives up, ends the contexts of the running functions with ErrStopped and skips
// the queued ones, and every tree's wait returns, with nil or an error matching ErrStopped.
func TestAdvNestedShutdownGivesUpAmidTreesUnderAPauseStorm(t *testing.T) {
	t.Parallel()
	for _, w := range nestWaits {
		root := crew.New(2, crew.WithQueueSize(1))
		mid := root.Sub(2, crew.WithQueueSize(1))
		leaf := mid.Sub(1)
		chain := []*crew.Pool{leaf, mid, root}
		stop := make(chan struct{})
		var storm sync.WaitGroup
		pauseStorm(&storm, stop, 200*time.Microsecond, root, mid)
		var blocked atomic.Int32
		// The trees hold their slots until Shutdown, so a submit of the next tree may block on
		// a full queue until then: each is made on a goroutine of its own.
		var (
			mu        sync.Mutex
			fs        []*crew.Future[int]
			submitted sync.WaitGroup
		)
		for from := range chain {
			for on := from; on < len(chain); on++ {
				submitted.Add(1)
				go func() {
					defer submitted.Done()
					f := crew.GoContext(context.Background(), chain[from], func(ctx context.Context) (int, error) {
						return 0, w.run(ctx, chain[on], 2, func(ctx context.Context, _ int) error {
							return w.run(ctx, chain[on], 2, func(ctx context.Context, _ int) error {
								blocked.Add(1)
								<-ctx.Done()
								return context.Cause(ctx)
							})
						})
					})
					mu.Lock()
					fs = append(fs, f)
					mu.Unlock()
				}()
			}
		}
		waitFor(t, "some leaves to block", func() bool { return blocked.Load() >= 2 })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		var err error
		nestRun(t, w.name+": Shutdown", func() { err = root.Shutdown(ctx) })
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: Shutdown = %v, want DeadlineExceeded", w.name, err)
		}
		close(stop)
		storm.Wait()
		nestRun(t, w.name+": the submits", submitted.Wait) // a stopped pool refuses the blocked ones
		for _, f := range fs {
			nestRun(t, w.name+": a tree", func() {
				if _, err := f.Wait(); err != nil && !errors.Is(err, crew.ErrStopped) && !errors.Is(err, context.Canceled) {
					t.Errorf("%s: %v, want nil, ErrStopped or the end of the caller's context", w.name, err)
				}
			})
		}
		root.Resume()
		mid.Resume()
		nestStop(t, root, mid, leaf)
	}
}

// TestAdvNestedPauseFromAHelpedFunctionHoldsTheRestUntilResumeOrStop: a function run in a lent
// slot pauses the root: the wait it runs in runs none of the rest (they are starts like any
// other) until a Resume from outside, or a StopAndWait, which resumes the pool and waits for
// every accepted task, the waiting function's included.
func TestAdvNestedPauseFromAHelpedFunctionHoldsTheRestUntilResumeOrStop(t *testing.T) {
	t.Parallel()
	const n = 4
	for _, w := range nestWaits {
		for _, how := range []string{"Resume", "StopAndWait"} {
			root := crew.New(1)
			sub := root.Sub(1)
			var ran atomic.Int32
			paused := make(chan struct{})
			f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
				err := w.run(ctx, sub, n, func(context.Context, int) error {
					if ran.Add(1) == 1 {
						root.Pause()
						close(paused)
					}
					return nil
				})
				return int(ran.Load()), err
			})
			what := fmt.Sprintf("%s paused by its first function, then %s", w.name, how)
			nestAwait(t, what+": the pause", paused)
			time.Sleep(2 * time.Millisecond)
			if got := ran.Load(); got != 1 {
				t.Fatalf("%s: %d functions ran after the pause, want only the one that paused", what, got-1)
			}
			if how == "Resume" {
				root.Resume()
			} else {
				nestRun(t, what+": StopAndWait", root.StopAndWait)
			}
			var got int
			var err error
			nestRun(t, what, func() { got, err = f.Wait() })
			// A stream or ForEach submits lazily: after the stop, its later submits fail.
			lazy := w.name == "Map" || w.name == "ForEach" || w.name == "MapSeq" || w.name == "MapSeqUnordered"
			if (err != nil || got != n) && !(how == "StopAndWait" && lazy && errors.Is(err, crew.ErrStopped)) {
				t.Fatalf("%s: ran %d, %v; want %d, nil", what, got, err, n)
			}
			nestStop(t, root, sub)
		}
	}
}
