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

// adv5Unended is the number of tasks s counts as accepted and not yet ended.
func adv5Unended(s crew.Stats) int64 {
	return int64(s.Accepted) - int64(s.Completed+s.Panicked+s.Discarded+s.Returned+s.Skipped)
}

// adv5Balanced reports an error unless s counts each accepted task that has not ended once in
// Running or Waiting, Completed+Panicked+Skipped (with Discarded and Returned) never passes
// Accepted, and no gauge is negative.
func adv5Balanced(s crew.Stats) error {
	if s.Running < 0 || s.Waiting < 0 || s.Idle < 0 {
		return fmt.Errorf("a negative gauge: %+v", s)
	}
	if u := adv5Unended(s); u < 0 || u != int64(s.Running+s.Waiting) {
		return fmt.Errorf("%d tasks accepted and not ended, but Running %d + Waiting %d: %+v", u, s.Running, s.Waiting, s)
	}
	return nil
}

// adv5Tree runs a fork/join tree of depth levels below the calling function, each node
// forking fan children on p with the wait kind picked for its level, from ctx. leaf runs at
// the bottom. It returns the first error.
func adv5Tree(ctx context.Context, p *crew.Pool, level, depth, fan, kind int, leaf func(ctx context.Context) error) error {
	return adv5TreeOf(nestWaits, ctx, p, level, depth, fan, kind, leaf)
}

// adv5TreeOf is adv5Tree with the waits picked from waits.
func adv5TreeOf(waits []nestWait, ctx context.Context, p *crew.Pool, level, depth, fan, kind int, leaf func(ctx context.Context) error) error {
	if level == depth {
		return leaf(ctx)
	}
	w := waits[(kind+level)%len(waits)]
	return w.run(ctx, p, fan, func(ctx context.Context, _ int) error {
		return adv5TreeOf(waits, ctx, p, level+1, depth, fan, kind, leaf)
	})
}

// adv5ManyWorkerWaits are the waits of nestWaits but the streams, for trees on pools of more
// than one worker: there a function of a stream that makes a wait of its own meets the data
// race TestAdv5WaitNestedStreamHolderIsNotReusedWhileAWorkerReadsIt shows.
var adv5ManyWorkerWaits = func() []nestWait {
	var ws []nestWait
	for _, w := range nestWaits {
		if !strings.HasPrefix(w.name, "MapSeq") {
			ws = append(ws, w)
		}
	}
	return ws
}()

// TestAdv5WaitFiveLevelsDeepOnAPoolOfOne: fork/join trees five waits deep, each level using
// another of the waits that help (group, GroupAll, Results, Map, ForEach, MapSeq,
// MapSeqUnordered, futures), complete on New(1), unbounded and with a queue of one under
// Block; no snapshot taken inside a leaf shows more than one task running, and each counts
// every accepted task that has not ended once in Running or Waiting.
func TestAdv5WaitFiveLevelsDeepOnAPoolOfOne(t *testing.T) {
	t.Parallel()
	kinds := len(nestWaits)
	if testing.Short() {
		kinds = 3
	}
	for _, opts := range [][]crew.Option{nil, {crew.WithQueueSize(1)}, {crew.WithQueueSize(1), crew.WithOverflow(crew.Block)}} {
		p := crew.New(1, opts...)
		for kind := range kinds {
			var leaves atomic.Int32
			var bad atomic.Value
			leaf := func(context.Context) error {
				leaves.Add(1)
				s := p.Stats()
				if s.Running != 1 {
					bad.CompareAndSwap(nil, fmt.Sprintf("Running %d inside a leaf on New(1): %+v", s.Running, s))
				}
				if err := adv5Balanced(s); err != nil {
					bad.CompareAndSwap(nil, err.Error())
				}
				return nil
			}
			what := fmt.Sprintf("queue %d, first kind %s", len(opts), nestWaits[kind].name)
			var err error
			nestRun(t, what, func() {
				g, _ := p.Group(context.Background())
				g.Go(func(ctx context.Context) error { return adv5Tree(ctx, p, 0, 5, 2, kind, leaf) })
				err = g.Wait()
			})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if n := leaves.Load(); n != 32 {
				t.Fatalf("%s: %d leaves ran, want 32", what, n)
			}
			if v := bad.Load(); v != nil {
				t.Fatalf("%s: %v", what, v)
			}
			nestRun(t, what+": Wait", p.Wait)
			idleIdentity(t, what, p.Stats())
		}
		nestStop(t, p)
	}
}

// TestAdv5WaitLentPlaceFreesRoomWhenItEnds: WithQueueSize(n) bounds the accepted tasks that
// wait for a worker, and Stats counts a function a waiting function ran itself as Waiting only
// until it has ended. A function that waits for two futures oldest first, or for two groups in
// the order it made them, runs each function itself in its slot; once they have ended nothing
// of theirs waits (Stats.Waiting is 0), so the queue of two has room for two more tasks.
func TestAdv5WaitLentPlaceFreesRoomWhenItEnds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		wait func(ctx context.Context, p *crew.Pool)
	}{
		{"futures oldest first", func(ctx context.Context, p *crew.Pool) {
			f1 := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil })
			f2 := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 2, nil })
			f1.Wait() // f2's place is queued behind f1's
			f2.Wait()
		}},
		{"groups in order", func(ctx context.Context, p *crew.Pool) {
			g1, _ := p.Group(ctx)
			g2, _ := p.Group(ctx)
			g1.Go(func(context.Context) error { return nil })
			g2.Go(func(context.Context) error { return nil })
			g1.Wait()
			g2.Wait()
		}},
	} {
		p := crew.New(1, crew.WithQueueSize(2))
		var after, last crew.Stats
		var try1, try2 bool
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			c.wait(ctx, p)
			after = p.Stats()
			try1, try2 = p.TrySubmit(func() {}), p.TrySubmit(func() {})
			last = p.Stats()
			return 0, nil
		})
		nestRun(t, c.name, func() { f.Wait() })
		if after.Waiting != 0 || after.Running != 1 {
			t.Errorf("%s: once both functions ended: Running %d, Waiting %d; want 1, 0", c.name, after.Running, after.Waiting)
		}
		if !try1 || !try2 {
			t.Errorf("%s: TrySubmit into a queue of 2 with nothing waiting: %v, %v; want true, true (stats before %+v, after %+v)",
				c.name, try1, try2, after, last)
		}
		nestStop(t, p)
	}
}

// adv5Watch checks snapshots of each of pools until stop is closed: each is balanced
// (adv5Balanced) and no counter goes back. It returns a channel that gives the first fault, or
// nil.
func adv5Watch(stop <-chan struct{}, pools ...*crew.Pool) <-chan error {
	errc := make(chan error, 1)
	go func() {
		prev := make([]crew.Stats, len(pools))
		for {
			for i, p := range pools {
				s := p.Stats()
				if err := adv5Balanced(s); err != nil {
					errc <- fmt.Errorf("pool %d: %w", i, err)
					return
				}
				if countersWentBack(s, prev[i]) {
					errc <- fmt.Errorf("pool %d: a counter went back: %+v after %+v", i, s, prev[i])
					return
				}
				prev[i] = s
			}
			select {
			case <-stop:
				errc <- nil
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return errc
}

// adv5Leaf is a leaf of a tree: it counts itself, and every seventh calls runtime.Goexit and
// every eleventh panics with nil, when mixed is set.
type adv5Leaf struct {
	ran, goexits, panics atomic.Int32
	mixed                bool
}

func (l *adv5Leaf) run(context.Context) error {
	n := l.ran.Add(1)
	if l.mixed {
		switch {
		case n%7 == 0:
			l.goexits.Add(1)
			runtime.Goexit()
		case n%11 == 0:
			l.panics.Add(1)
			panic(nil)
		}
	}
	return nil
}

// TestAdv5WaitSubPoolChainsWithPrioritiesAndQueuesOfOne: a function on a sub-pool of a
// sub-pool, each pool of limit 1 with a queue of one and a priority of its own, forks and
// joins on its own pool, then from each function on its parent, then on the root, five
// levels in all: every chain completes, from many callers at once, beside plain tasks of a
// sibling of a higher priority, and every snapshot of every pool is balanced.
func TestAdv5WaitSubPoolChainsWithPrioritiesAndQueuesOfOne(t *testing.T) {
	t.Parallel()
	root := crew.New(1, crew.WithQueueSize(1))
	mid := root.Sub(1, crew.WithPriority(1), crew.WithQueueSize(1))
	leaf := mid.Sub(1, crew.WithPriority(2), crew.WithQueueSize(1))
	other := root.Sub(1, crew.WithPriority(3), crew.WithQueueSize(1))
	chain := []*crew.Pool{leaf, leaf, mid, mid, root}
	stop := make(chan struct{})
	watch := adv5Watch(stop, root, mid, leaf, other)
	var ran atomic.Int32
	var step func(ctx context.Context, level, kind int) error
	step = func(ctx context.Context, level, kind int) error {
		if level == len(chain) {
			ran.Add(1)
			return nil
		}
		w := nestWaits[(kind+level)%len(nestWaits)]
		return w.run(ctx, chain[level], 2, func(ctx context.Context, _ int) error { return step(ctx, level+1, kind) })
	}
	var wg sync.WaitGroup
	var chains atomic.Int32
	errs := make(chan error, 3*len(nestWaits))
	for kind := range nestWaits {
		for _, start := range []*crew.Pool{leaf, other} {
			if start == other && kind%2 == 1 {
				continue
			}
			wg.Add(1)
			chains.Add(1)
			go func() {
				defer wg.Done()
				f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) { return 0, step(ctx, 0, kind) })
				if _, err := f.Wait(); err != nil {
					errs <- fmt.Errorf("%s: %w", nestWaits[kind].name, err)
				}
				// Plain work on a sibling of a higher priority beside the chains.
				_ = start.Submit(func() {})
			}()
		}
	}
	nestRun(t, "every chain", wg.Wait)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(stop)
	if err := <-watch; err != nil {
		t.Fatal(err)
	}
	if want := chains.Load() * 32; ran.Load() != want {
		t.Fatalf("%d leaves ran, want %d", ran.Load(), want)
	}
	nestStop(t, root, mid, leaf, other)
}

// TestAdv5WaitStatsBalancedAmidPauseAndResizeStorms: trees of every wait that helps, three
// levels deep, made by functions of a pool with a queue of two, while the pool is paused and
// resumed, resized between 1 and 3, and fed plain tasks by TrySubmit: every tree completes,
// and no snapshot counts an accepted task that has not ended other than once in Running or
// Waiting.
func TestAdv5WaitStatsBalancedAmidPauseAndResizeStorms(t *testing.T) {
	t.Parallel()
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for _, opts := range [][]crew.Option{{crew.WithQueueSize(2)}, {crew.WithQueueSize(1)}, nil} {
		p := crew.New(2, opts...)
		stop := make(chan struct{})
		watch := adv5Watch(stop, p)
		var storms sync.WaitGroup
		pauseStorm(&storms, stop, time.Millisecond, p)
		n := 1
		repeatUntil(&storms, stop, func() {
			n = n%3 + 1
			p.Resize(n)
			time.Sleep(time.Millisecond)
		})
		repeatUntil(&storms, stop, func() {
			p.TrySubmit(func() {})
			time.Sleep(100 * time.Microsecond)
		})
		var leaves atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, rounds*len(nestWaits))
		for r := range rounds {
			for kind := range nestWaits {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
						return 0, adv5TreeOf(adv5ManyWorkerWaits, ctx, p, 0, 3, 2, kind+r, func(context.Context) error {
							leaves.Add(1)
							time.Sleep(20 * time.Microsecond)
							return nil
						})
					})
					if _, err := f.Wait(); err != nil {
						errs <- err
					}
				}()
			}
		}
		what := fmt.Sprintf("trees amid storms, %d options", len(opts))
		nestRun(t, what, wg.Wait)
		close(stop)
		storms.Wait()
		p.Resume()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", what, err)
		}
		if err := <-watch; err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := int32(rounds * len(nestWaits) * 8); leaves.Load() != want {
			t.Fatalf("%s: %d leaves ran, want %d", what, leaves.Load(), want)
		}
		nestStop(t, p)
	}
}

// adv5Gate is a leaf that, the first time it runs, signals in and blocks until out is closed
// (or its context ends, when watch is set); every other call returns at once.
type adv5Gate struct {
	once    sync.Once
	in, out chan struct{}
	watch   bool
	ran     atomic.Int32
}

func newAdv5Gate(watch bool) *adv5Gate {
	return &adv5Gate{in: make(chan struct{}), out: make(chan struct{}), watch: watch}
}

func (g *adv5Gate) run(ctx context.Context) error {
	g.ran.Add(1)
	first := false
	g.once.Do(func() { first = true })
	if !first {
		return nil
	}
	close(g.in)
	if g.watch {
		select {
		case <-g.out:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return nil
	}
	<-g.out
	return nil
}

// TestAdv5WaitStopNowStopOrShutdownAmidADeepWait: a tree five waits deep on New(1) with a
// queue of one, its first leaf blocked, meets StopNow, Stop, or a Shutdown whose context ends
// (the leaf watching its context, or not): the tree's waits all return (ErrStopped where a
// function could not be given or was taken out), StopNow hands back no internal task, a snapshot right after is balanced, and the pool ends with every accepted task
// accounted for once.
func TestAdv5WaitStopNowStopOrShutdownAmidADeepWait(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"StopNow", "Stop", "Shutdown, leaf watching", "Shutdown, leaf deaf"} {
		for kind := range nestWaits {
			p := crew.New(1, crew.WithQueueSize(1))
			gate := newAdv5Gate(how == "Shutdown, leaf watching")
			var err error
			done := goRun(func() {
				g, _ := p.Group(context.Background())
				g.Go(func(ctx context.Context) error { return adv5Tree(ctx, p, 0, 5, 2, kind, gate.run) })
				err = g.Wait()
			})
			what := fmt.Sprintf("%s amid %s", how, nestWaits[kind].name)
			nestAwait(t, what+": the first leaf", gate.in)
			switch how {
			case "StopNow":
				if back := p.StopNow(); len(back) != 0 {
					t.Fatalf("%s: StopNow handed back %d tasks, all internal", what, len(back))
				}
				if err := adv5Balanced(p.Stats()); err != nil {
					t.Fatalf("%s: right after StopNow: %v", what, err)
				}
				close(gate.out)
			case "Stop":
				p.Stop()
				close(gate.out)
			default:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				serr := p.Shutdown(ctx)
				cancel()
				if !errors.Is(serr, context.DeadlineExceeded) {
					t.Fatalf("%s: Shutdown = %v, want the deadline", what, serr)
				}
				if err := adv5Balanced(p.Stats()); err != nil {
					t.Fatalf("%s: right after Shutdown: %v", what, err)
				}
				close(gate.out)
			}
			nestAwait(t, what+": the tree", done)
			switch {
			case err == nil && gate.ran.Load() != 32:
				t.Fatalf("%s: nil error, but %d leaves ran", what, gate.ran.Load())
			case err != nil && !errors.Is(err, crew.ErrStopped):
				t.Fatalf("%s: %v, want ErrStopped", what, err)
			}
			nestRun(t, what+": StopAndWait", p.StopAndWait)
			idleIdentity(t, what, p.Stats())
		}
	}
}

// TestAdv5WaitWaitersContextEndsMidWait: a tree five waits deep on New(1), unbounded and
// with a queue of one, made from a context the test cancels while the first leaf runs: every
// wait returns the cancellation, the functions still queued are skipped (none runs after),
// snapshots stay balanced, and once the pool is idle every accepted task is accounted for.
func TestAdv5WaitWaitersContextEndsMidWait(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]crew.Option{nil, {crew.WithQueueSize(1)}} {
		p := crew.New(1, opts...)
		for kind := range nestWaits {
			gate := newAdv5Gate(true)
			ctx, cancel := context.WithCancelCause(context.Background())
			cause := errors.New("the caller gave up")
			var err error
			done := goRun(func() {
				g, _ := p.Group(ctx)
				g.Go(func(ctx context.Context) error { return adv5Tree(ctx, p, 0, 5, 2, kind, gate.run) })
				err = g.Wait()
			})
			what := fmt.Sprintf("%d options, %s", len(opts), nestWaits[kind].name)
			nestAwait(t, what+": the first leaf", gate.in)
			cancel(cause)
			nestAwait(t, what+": the tree", done)
			if !errors.Is(err, cause) {
				t.Fatalf("%s: %v, want the cause", what, err)
			}
			ran := gate.ran.Load()
			nestRun(t, what+": Wait", p.Wait)
			if gate.ran.Load() != ran {
				t.Fatalf("%s: %d leaves ran after the waits returned", what, gate.ran.Load()-ran)
			}
			s := p.Stats()
			idleIdentity(t, what, s)
			if s.Skipped == 0 {
				t.Fatalf("%s: nothing skipped: %+v", what, s)
			}
		}
		nestStop(t, p)
	}
}

// TestAdv5WaitGoexitAndPanicNilDeepInATree: leaves five waits deep on New(1) that call
// runtime.Goexit or panic with nil, run by waits in a lent slot: a Goexit ends the goroutine of
// every waiting function on it, a panic(nil) fails its group with a *PanicError; the waits from
// outside all return, the pool goes on serving, every snapshot meanwhile is balanced, and it
// ends with every accepted task accounted for once.
func TestAdv5WaitGoexitAndPanicNilDeepInATree(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]crew.Option{nil, {crew.WithQueueSize(1)}} {
		p := crew.New(1, append(opts, crew.WithPanicHandler(func(any, []byte) {}))...)
		stop := make(chan struct{})
		watch := adv5Watch(stop, p)
		for kind := range nestWaits {
			leaf := &adv5Leaf{mixed: true}
			var err error
			what := fmt.Sprintf("%d options, %s", len(opts), nestWaits[kind].name)
			nestRun(t, what, func() {
				g, _ := p.GroupAll(context.Background())
				for range 3 {
					g.Go(func(ctx context.Context) error { return adv5Tree(ctx, p, 0, 5, 2, kind, leaf.run) })
				}
				err = g.Wait()
			})
			if leaf.goexits.Load() == 0 && leaf.panics.Load() == 0 {
				t.Fatalf("%s: no leaf exited or panicked", what)
			}
			if err == nil {
				t.Fatalf("%s: nil error, with %d Goexits and %d panics", what, leaf.goexits.Load(), leaf.panics.Load())
			}
			var pe *crew.PanicError
			if !errors.As(err, &pe) && !strings.Contains(err.Error(), "Goexit") && !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want a panic or a Goexit", what, err)
			}
			nestRun(t, what+": Wait", p.Wait)
			if v, err := crew.Go(p, func() (int, error) { return 7, nil }).Wait(); v != 7 || err != nil {
				t.Fatalf("%s: the pool stopped serving: %v", what, err)
			}
			nestRun(t, what+": Wait after Go", p.Wait)
			idleIdentity(t, what, p.Stats())
		}
		close(stop)
		if err := <-watch; err != nil {
			t.Fatal(err)
		}
		nestStop(t, p)
	}
}

// TestAdv5WaitLentPlaceAtTheHeadIsNoVictimOfDiscardOldest: under DiscardOldest, a submit into
// a queue of two whose head is the place of a function a wait already ran, and which holds one
// function still waiting, drops nothing that would still run: the waiting function runs, no
// plain task goes to the discard handler, and the pool ends balanced.
func TestAdv5WaitLentPlaceAtTheHeadIsNoVictimOfDiscardOldest(t *testing.T) {
	t.Parallel()
	var dropped atomic.Int32
	p := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { dropped.Add(1) }))
	var plain atomic.Int32
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		f1 := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil })
		f2 := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 2, nil })
		if v, err := f1.Wait(); v != 1 || err != nil {
			return 0, fmt.Errorf("f1: %d, %v", v, err)
		}
		if err := p.Submit(func() { plain.Add(1) }); err != nil {
			return 0, err
		}
		if err := adv5Balanced(p.Stats()); err != nil {
			return 0, err
		}
		v, err := f2.Wait()
		if v != 2 || err != nil {
			return 0, fmt.Errorf("f2: %d, %v; want 2, nil: it was waiting in a queue with room", v, err)
		}
		return 0, nil
	})
	nestRun(t, "the waiting function", func() {
		if _, err := f.Wait(); err != nil {
			t.Error(err)
		}
	})
	nestRun(t, "Wait", p.Wait)
	if s := p.Stats(); dropped.Load() != 0 || s.Discarded != 0 || plain.Load() != 1 {
		t.Fatalf("dropped %d, Discarded %d, plain ran %d; want 0, 0, 1", dropped.Load(), s.Discarded, plain.Load())
	}
	nestStop(t, p)
}

// TestAdv5WaitRangeOverCompletedInsideAFunctionOfAPoolOfOne: Completed ranges over futures
// waiting "as Wait would"; a function of New(1) that ranges over the futures it gave its
// own pool from the context crew gave it sees each of them complete.
func TestAdv5WaitRangeOverCompletedInsideAFunctionOfAPoolOfOne(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		var fs []*crew.Future[int]
		for i := range 3 {
			fs = append(fs, crew.GoContext(ctx, p, func(context.Context) (int, error) { return i, nil }))
		}
		sum := 0
		for f := range crew.Completed(fs...) {
			v, _ := f.Wait()
			sum += v
		}
		return sum, nil
	})
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("the range did not end: %+v", p.Stats())
		p.Resize(2)
		nestAwait(t, "the range after growing the pool", f.Done())
	}
	if v, err := f.Wait(); v != 3 || err != nil {
		t.Fatalf("Wait = %d, %v; want 3", v, err)
	}
	nestStop(t, p)
}

// TestAdv5WaitWeightedHeadNeitherOvertakenNorBlockingWaiters: on a pool of 2, a task of weight
// 2 queued ahead of the functions a running function waits for starts only once that function
// has returned (weights never sum above the limit), while the wait runs its own functions in
// its slot meanwhile instead of waiting behind the heavy task; unbounded and with a queue of
// one under Block, where the waiting function's submits run on it.
func TestAdv5WaitWeightedHeadNeitherOvertakenNorBlockingWaiters(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]crew.Option{nil, {crew.WithQueueSize(1)}} {
		for kind := range nestWaits {
			p := crew.New(2, opts...)
			var inF, inHeavy atomic.Int32
			var clash atomic.Bool
			heavyDone := make(chan struct{})
			queued := make(chan struct{})
			what := fmt.Sprintf("%d options, %s", len(opts), nestWaits[kind].name)
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				inF.Add(1)
				defer inF.Add(-1)
				<-queued // the heavy task is queued: the pool's head
				var leaves atomic.Int32
				err := adv5TreeOf(adv5ManyWorkerWaits, ctx, p, 0, 3, 2, kind, func(context.Context) error {
					if inHeavy.Load() != 0 {
						clash.Store(true)
					}
					leaves.Add(1)
					return nil
				})
				if err == nil && leaves.Load() != 8 {
					err = fmt.Errorf("%d leaves", leaves.Load())
				}
				return 0, err
			})
			awaitStats(t, p, what+": the function to run", func(s crew.Stats) bool { return s.Running == 1 })
			// A second plain task holds the other slot until the heavy one is queued.
			hold := make(chan struct{})
			must(t, p.Submit(func() { <-hold }))
			must(t, p.SubmitN(2, func() {
				defer close(heavyDone)
				inHeavy.Add(1)
				if inF.Load() != 0 {
					clash.Store(true)
				}
				inHeavy.Add(-1)
			}))
			close(queued)
			nestRun(t, what+": the waiting function", func() {
				if _, err := f.Wait(); err != nil {
					t.Errorf("%s: %v", what, err)
				}
			})
			close(hold)
			nestAwait(t, what+": the heavy task", heavyDone)
			if clash.Load() {
				t.Fatalf("%s: the heavy task ran beside the waiting function or its functions", what)
			}
			nestStop(t, p)
		}
	}
}

// TestAdv5WaitKeyedTasksGivenByFunctionsDeepInATree: leaves five waits deep on New(1) with a
// queue of one submit keyed tasks on the same pool (the pool's queue does not bound them):
// no submit blocks, the tree completes, the keyed tasks then run once each in key order, and
// both the pool and the Keyed end balanced.
func TestAdv5WaitKeyedTasksGivenByFunctionsDeepInATree(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	k := crew.NewKeyed[int](p)
	check := newKeyChecker()
	for kind := range nestWaits {
		var seq atomic.Int32
		var mu sync.Mutex
		next := map[int]int{}
		what := nestWaits[kind].name
		var err error
		nestRun(t, what, func() {
			g, _ := p.Group(context.Background())
			g.Go(func(ctx context.Context) error {
				return adv5Tree(ctx, p, 0, 5, 2, kind, func(context.Context) error {
					key := int(seq.Add(1)) % 3
					// One lock over the sequence number and the submit: each key's submits
					// take effect in the order of their numbers.
					mu.Lock()
					defer mu.Unlock()
					n := next[key]
					next[key]++
					return k.Submit(kind*10+key, func() {
						check.enter(kind*10+key, n)
						check.exit(kind*10 + key)
					})
				})
			})
			err = g.Wait()
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	nestRun(t, "Keyed.Wait", k.Wait)
	check.check(t, "keyed tasks given by leaves")
	if n := check.ranCount(); n != 32*len(nestWaits) {
		t.Fatalf("%d keyed tasks ran, want %d", n, 32*len(nestWaits))
	}
	nestRun(t, "Wait", p.Wait)
	idleIdentity(t, "Keyed", k.Stats())
	idleIdentity(t, "pool", p.Stats())
	nestStop(t, p)
}

// TestAdv5WaitPauseAndResizeFromALentFunctionDeepInATree: a leaf five waits deep on New(1) with
// a queue of one pauses the pool, or shrinks it to 1 from 3 and grows it back, from inside the
// lent slot; no function starts while the pool is paused, the tree completes once a Resume
// comes after a handshake, every leaf runs once, and every snapshot is balanced.
func TestAdv5WaitPauseAndResizeFromALentFunctionDeepInATree(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"Pause", "Resize"} {
		for kind := range nestWaits {
			p := crew.New(3, crew.WithQueueSize(1))
			if how == "Pause" {
				p.Resize(1)
			}
			stop := make(chan struct{})
			watch := adv5Watch(stop, p)
			var leaves, whilePaused atomic.Int32
			var paused atomic.Bool
			pausedNow := make(chan struct{})
			var once sync.Once
			leaf := func(context.Context) error {
				if paused.Load() {
					whilePaused.Add(1)
				}
				n := leaves.Add(1)
				switch {
				case how == "Pause" && n == 3:
					p.Pause()
					paused.Store(true)
					once.Do(func() { close(pausedNow) })
				case how == "Resize" && n == 3:
					p.Resize(1)
				case how == "Resize" && n == 20:
					p.Resize(3)
				}
				return nil
			}
			what := fmt.Sprintf("%s from a leaf, %s", how, nestWaits[kind].name)
			var err error
			done := goRun(func() {
				f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
					return 0, adv5TreeOf(adv5ManyWorkerWaits, ctx, p, 0, 5, 2, kind, leaf)
				})
				_, err = f.Wait()
			})
			if how == "Pause" {
				nestAwait(t, what+": the pause", pausedNow)
				time.Sleep(5 * time.Millisecond)
				paused.Store(false)
				p.Resume()
			}
			nestAwait(t, what, done)
			close(stop)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if leaves.Load() != 32 || whilePaused.Load() != 0 {
				t.Fatalf("%s: %d leaves, %d while paused; want 32, 0", what, leaves.Load(), whilePaused.Load())
			}
			if err := <-watch; err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			nestStop(t, p)
		}
	}
}

// TestAdv5WaitLentSlotsKeepTheLimit: trees of every wait that helps, three deep, from six
// callers at once on pools of limit 2 and 3 (unbounded, and with a queue of one): counting a
// function as active while it runs and not while it waits, no more functions are ever
// active than the limit, since a waiting function lends its slot and never takes a new one.
func TestAdv5WaitLentSlotsKeepTheLimit(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{2, 3} {
		for _, opts := range [][]crew.Option{nil, {crew.WithQueueSize(1)}} {
			p := crew.New(limit, opts...)
			var active, peak atomic.Int32
			enter := func() {
				n := active.Add(1)
				for {
					m := peak.Load()
					if n <= m || peak.CompareAndSwap(m, n) {
						break
					}
				}
			}
			var node func(ctx context.Context, level, kind int) error
			node = func(ctx context.Context, level, kind int) error {
				enter()
				defer active.Add(-1)
				if level == 3 {
					time.Sleep(50 * time.Microsecond)
					return nil
				}
				w := adv5ManyWorkerWaits[(kind+level)%len(adv5ManyWorkerWaits)]
				active.Add(-1) // waiting: the slot is lent
				err := w.run(ctx, p, 2, func(ctx context.Context, _ int) error { return node(ctx, level+1, kind) })
				enter()
				return err
			}
			var wg sync.WaitGroup
			errs := make(chan error, 6*len(nestWaits))
			for c := range 6 {
				for kind := range nestWaits {
					wg.Add(1)
					go func() {
						defer wg.Done()
						f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
							return 0, node(ctx, 0, kind+c)
						})
						if _, err := f.Wait(); err != nil {
							errs <- err
						}
					}()
				}
			}
			what := fmt.Sprintf("limit %d, %d options", limit, len(opts))
			nestRun(t, what, wg.Wait)
			close(errs)
			for err := range errs {
				t.Errorf("%s: %v", what, err)
			}
			if n := peak.Load(); n > int32(limit) {
				t.Fatalf("%s: %d functions active at once", what, n)
			}
			nestStop(t, p)
		}
	}
}

// TestAdv5WaitStopNowWithALentPlaceQueued: a function whose wait ran a function from behind
// another still queued leaves that place in the queue; StopNow then hands back no plain task,
// fails the function still queued with ErrStopped, counts only that one in Returned, and the
// pool ends with every accepted task accounted for once.
func TestAdv5WaitStopNowWithALentPlaceQueued(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 2} {
		var opts []crew.Option
		if size > 0 {
			opts = append(opts, crew.WithQueueSize(size))
		}
		p := crew.New(1, opts...)
		inside, release := make(chan struct{}), make(chan struct{})
		var e2 error
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			f1 := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil })
			f2 := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 2, nil })
			f1.Wait()
			close(inside)
			<-release
			_, e2 = f2.Wait()
			return 0, nil
		})
		what := fmt.Sprintf("queue %d", size)
		nestAwait(t, what+": the first future", inside)
		if back := p.StopNow(); len(back) != 0 {
			t.Fatalf("%s: StopNow handed back %d tasks", what, len(back))
		}
		s := p.Stats()
		if err := adv5Balanced(s); err != nil {
			t.Fatalf("%s: after StopNow: %v", what, err)
		}
		if s.Returned != 1 || s.Waiting != 0 {
			t.Fatalf("%s: after StopNow: Returned %d, Waiting %d; want 1, 0: %+v", what, s.Returned, s.Waiting, s)
		}
		close(release)
		nestRun(t, what+": the waiting function", func() { f.Wait() })
		if !errors.Is(e2, crew.ErrStopped) {
			t.Fatalf("%s: the future StopNow took out: %v, want ErrStopped", what, e2)
		}
		nestRun(t, what+": StopAndWait", p.StopAndWait)
		idleIdentity(t, what, p.Stats())
		if s := p.Stats(); s.Completed != 2 || s.Returned != 1 {
			t.Fatalf("%s: %+v; want 2 completed and 1 returned", what, s)
		}
	}
}

// TestAdv5WaitSkippedPlaceCountsAsWaitingAndASubmitWithTheContextRunsOnTheCaller: a function
// on New(1) with a queue of one makes a group from a context it then cancels; the group's
// Wait skips the queued function at once and returns the cancellation. As Stats documents,
// the skipped function's place keeps counting as Waiting (not yet Skipped) until a worker
// reaches it, so the queue is full: TrySubmit is refused, and a SubmitContext with the
// function's own context runs its task on the caller instead of blocking; once the function
// returns, the place is dropped and counted in Skipped.
func TestAdv5WaitSkippedPlaceCountsAsWaitingAndASubmitWithTheContextRunsOnTheCaller(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	var werr, serr error
	var s1, s2 crew.Stats
	var tried bool
	var ran atomic.Int32
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		gctx, cancel := context.WithCancel(ctx)
		g, _ := p.Group(gctx)
		g.Go(func(context.Context) error { ran.Add(1); return nil })
		cancel()
		werr = g.Wait()
		s1 = p.Stats()
		tried = p.TrySubmit(func() {})
		serr = p.SubmitContext(ctx, func() { ran.Add(10) })
		s2 = p.Stats()
		return 0, nil
	})
	nestRun(t, "the waiting function", func() { f.Wait() })
	if !errors.Is(werr, context.Canceled) {
		t.Fatalf("the group's Wait: %v, want context.Canceled", werr)
	}
	if s1.Waiting != 1 || s1.Skipped != 0 || adv5Balanced(s1) != nil {
		t.Fatalf("after the skip: %+v; want the place Waiting, not yet Skipped", s1)
	}
	if tried || serr != nil || ran.Load() != 10 || s2.CallerRan != 1 {
		t.Fatalf("TrySubmit %v, SubmitContext %v, ran %d, %+v; want false, nil, 10, one caller-run", tried, serr, ran.Load(), s2)
	}
	nestRun(t, "Wait", p.Wait)
	if s := p.Stats(); s.Skipped != 1 {
		t.Fatalf("%+v: want the place counted in Skipped once dropped", s)
	}
	nestStop(t, p)
}

// TestAdv5WaitPanicNilInALentSlotUnderEitherGODEBUG: under panicnil=0 and panicnil=1, a
// function three waits deep on New(1) with a queue of one that panics with nil, run by a wait
// in its slot, is reported by every kind of wait as a *PanicError, never as a Goexit or a
// success; a plain task that a function's SubmitContext runs on the caller (the queue full)
// and that panics with nil goes to the panic handler, counts as Panicked and caller-run, and
// the function goes on.
func TestAdv5WaitPanicNilInALentSlotUnderEitherGODEBUG(t *testing.T) {
	for _, setting := range panicNilSettings {
		t.Run(setting, func(t *testing.T) {
			t.Setenv("GODEBUG", setting)
			var handled atomic.Int32
			p := crew.New(1, crew.WithQueueSize(1), crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
			for kind := range nestWaits {
				var n atomic.Int32
				var err error
				what := setting + " " + nestWaits[kind].name
				nestRun(t, what, func() {
					f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
						return 0, adv5Tree(ctx, p, 0, 3, 2, kind, func(context.Context) error {
							if n.Add(1) == 2 {
								panic(nil)
							}
							return nil
						})
					})
					_, err = f.Wait()
				})
				var pe *crew.PanicError
				if !errors.As(err, &pe) {
					t.Fatalf("%s: %v, want a *PanicError", what, err)
				}
			}
			nestRun(t, setting+": Wait after the trees", p.Wait)
			before := p.Stats()
			went := false
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				must(t, p.SubmitContext(ctx, func() {})) // fills the queue of one
				if err := p.SubmitContext(ctx, func() { panic(nil) }); err != nil {
					return 0, err
				}
				went = true
				return 0, nil
			})
			nestRun(t, setting+": SubmitContext", func() {
				if _, err := f.Wait(); err != nil {
					t.Errorf("%s: %v", setting, err)
				}
			})
			nestRun(t, setting+": Wait", p.Wait)
			s := p.Stats()
			if !went || handled.Load() != 1 || s.Panicked-before.Panicked != 1 || s.CallerRan-before.CallerRan != 1 {
				t.Fatalf("%s: went on %v, handler %d, %+v after %+v; want true, 1, one more Panicked and CallerRan", setting, went, handled.Load(), s, before)
			}
			idleIdentity(t, setting, s)
			nestStop(t, p)
		})
	}
}

// TestAdv5WaitShutdownOfAMiddlePoolWhoseContextEndsAmidChains: chains of waits that help run
// from a sub-pool of a sub-pool through the middle pool to the root, every pool of limit 1
// with a queue of one, the first leaf watching its context; a Shutdown of the middle pool
// whose context ends returns the deadline, ends the contexts of the middle pool's and its
// sub-pool's functions with ErrStopped, so every chain returns; the root keeps serving, and
// every pool ends with each accepted task accounted for once.
func TestAdv5WaitShutdownOfAMiddlePoolWhoseContextEndsAmidChains(t *testing.T) {
	t.Parallel()
	for kind := range nestWaits {
		root := crew.New(1, crew.WithQueueSize(1))
		mid := root.Sub(1, crew.WithQueueSize(1))
		leaf := mid.Sub(1, crew.WithQueueSize(1))
		chain := []*crew.Pool{leaf, leaf, mid, mid, root}
		gate := newAdv5Gate(true)
		var step func(ctx context.Context, level int) error
		step = func(ctx context.Context, level int) error {
			if level == len(chain) {
				return gate.run(ctx)
			}
			w := nestWaits[(kind+level)%len(nestWaits)]
			return w.run(ctx, chain[level], 2, func(ctx context.Context, _ int) error { return step(ctx, level+1) })
		}
		f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) { return 0, step(ctx, 0) })
		what := nestWaits[kind].name
		nestAwait(t, what+": the first leaf", gate.in)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		var serr error
		nestRun(t, what+": Shutdown of the middle pool", func() { serr = mid.Shutdown(ctx) })
		cancel()
		if !errors.Is(serr, context.DeadlineExceeded) {
			t.Fatalf("%s: Shutdown = %v, want the deadline", what, serr)
		}
		var err error
		nestRun(t, what+": the chain", func() { _, err = f.Wait() })
		if !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("%s: the chain: %v, want ErrStopped", what, err)
		}
		close(gate.out)
		if v, err := crew.Go(root, func() (int, error) { return 1, nil }).Wait(); v != 1 || err != nil {
			t.Fatalf("%s: the root stopped serving: %v", what, err)
		}
		nestStop(t, root, mid, leaf)
	}
}

// TestAdv5WaitStopNowOrEndedShutdownFromALentFunction: a leaf five waits deep on New(1), unbounded
// or with a queue of one, running in a lent slot, calls StopNow, or Shutdown with a context
// already ended (safe from a task: it returns at once); the waits above it all return,
// StopNow hands back no internal task, no leaf starts after the call, and the pool ends with
// every accepted task accounted for once.
func TestAdv5WaitStopNowOrEndedShutdownFromALentFunction(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, how := range []string{"StopNow", "Shutdown"} {
		for _, opts := range [][]crew.Option{nil, {crew.WithQueueSize(1)}} {
			for kind := range nestWaits {
				p := crew.New(1, opts...)
				var leaves, after atomic.Int32
				var stopped atomic.Bool
				var back int
				var serr error
				leaf := func(context.Context) error {
					if stopped.Load() {
						after.Add(1)
					}
					if leaves.Add(1) == 5 {
						if how == "StopNow" {
							back = len(p.StopNow())
						} else {
							serr = p.Shutdown(ended)
						}
						stopped.Store(true)
					}
					return nil
				}
				what := fmt.Sprintf("%s, %d options, %s", how, len(opts), nestWaits[kind].name)
				var err error
				nestRun(t, what, func() {
					f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
						return 0, adv5Tree(ctx, p, 0, 5, 2, kind, leaf)
					})
					_, err = f.Wait()
				})
				if err == nil || !errors.Is(err, crew.ErrStopped) {
					t.Fatalf("%s: %v, want ErrStopped", what, err)
				}
				if back != 0 || after.Load() != 0 {
					t.Fatalf("%s: StopNow handed back %d, %d leaves started after the call", what, back, after.Load())
				}
				if how == "Shutdown" && !errors.Is(serr, context.Canceled) {
					t.Fatalf("%s: Shutdown = %v, want context.Canceled", what, serr)
				}
				nestRun(t, what+": StopAndWait", p.StopAndWait)
				idleIdentity(t, what, p.Stats())
			}
		}
	}
}

// TestAdv5WaitLentStartsKeepTheRateLimit: on New(1) with a rate limit of 500 starts a second
// and a burst of 2, or on a sub-pool of it with a queue of one, a fork/join tree of fifteen functions, each wait running its functions in
// its slot, completes, and its starts keep the rate: the k-th start (from 0) comes no earlier
// than (k-2)/500 s after the bucket was full.
func TestAdv5WaitLentStartsKeepTheRateLimit(t *testing.T) {
	t.Parallel()
	const rate, burst = 500.0, 2
	kinds := len(nestWaits)
	if testing.Short() {
		kinds = 2
	}
	for i := range 2 * kinds {
		kind, onSub := i/2, i%2 == 1
		root := crew.New(1, crew.WithRateLimit(rate, burst))
		p := root
		if onSub {
			p = root.Sub(1, crew.WithQueueSize(1))
		}
		var mu sync.Mutex
		var starts []time.Time
		start := func() {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
		}
		var node func(ctx context.Context, level int) error
		node = func(ctx context.Context, level int) error {
			start()
			if level == 3 {
				return nil
			}
			return nestWaits[(kind+level)%len(nestWaits)].run(ctx, p, 2, func(ctx context.Context, _ int) error { return node(ctx, level+1) })
		}
		begin := time.Now()
		what := fmt.Sprintf("%s, on a sub-pool %v", nestWaits[kind].name, onSub)
		nestRun(t, what, func() {
			if _, err := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) { return 0, node(ctx, 0) }).Wait(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		})
		if len(starts) != 15 {
			t.Fatalf("%s: %d starts, want 15", what, len(starts))
		}
		for k, at := range starts {
			// A millisecond of slack for the clock reads around the bucket's.
			if earliest := time.Duration(float64(k-burst) / rate * float64(time.Second)); at.Sub(begin) < earliest-time.Millisecond {
				t.Fatalf("%s: start %d after %v, before %v: the rate limit did not pace the lent starts", what, k, at.Sub(begin), earliest)
			}
		}
		nestStop(t, root, p)
	}
}

// TestAdv5WaitNestedStreamHolderIsNotReusedWhileAWorkerReadsIt: a function of a MapSeq on a
// pool of two ranges over a MapSeq of its own, made from its context; that range runs its one
// call itself, and while its loop body runs, the other worker meets that call's place in the
// queue. Once the function returns, the outer range yields it and reuses its holder. Run under
// -race: no access of one goroutine to the pool's state races with another's.
func TestAdv5WaitNestedStreamHolderIsNotReusedWhileAWorkerReadsIt(t *testing.T) {
	t.Parallel()
	for range 10 {
		p := crew.New(2)
		hold, held := make(chan struct{}), make(chan struct{})
		must(t, p.Submit(func() { close(held); <-hold }))
		<-held
		for _, err := range crew.MapSeq(context.Background(), p, countTo(1), func(ctx context.Context, _ int) (int, error) {
			for _, err := range crew.MapSeq(ctx, p, countTo(1), func(context.Context, int) (int, error) { return 5, nil }) {
				close(hold) // the other worker ends its task and meets the place of the call this range ran
				time.Sleep(2 * time.Millisecond)
				if err != nil {
					return 0, err
				}
			}
			return 0, nil
		}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		nestStop(t, p)
	}
}
