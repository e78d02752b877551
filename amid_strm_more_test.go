package crew_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// WithTaskTimeout set on the root reaches the functions of a sub-pool of a sub-pool, for
// every door with a context, also run in a lent slot; Go's functions and plain tasks get none.
func TestAmidTaskTimeoutOnNestedSubPools(t *testing.T) {
	root := crew.New(1, crew.WithTaskTimeout(30*time.Millisecond))
	defer root.StopAndWait()
	leaf := root.Sub(2).Sub(3)
	long := root.Sub(2, crew.WithTaskTimeout(10*time.Second))
	check := func(what string, ctx context.Context) error {
		dl, ok := ctx.Deadline()
		if !ok || time.Until(dl) > 30*time.Millisecond {
			t.Errorf("%s: deadline %v %v", what, dl, ok)
			return nil
		}
		<-ctx.Done()
		if c := context.Cause(ctx); !errors.Is(c, crew.ErrTaskTimeout) || !errors.Is(c, context.DeadlineExceeded) {
			t.Errorf("%s: cause %v", what, c)
		}
		return nil
	}
	f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
		return 0, check("GoContext", ctx)
	})
	f.Wait()
	r, _ := crew.NewResults[int](context.Background(), leaf)
	r.Go(func(ctx context.Context) (int, error) { return 0, check("Results", ctx) })
	r.Wait()
	for _, err := range crew.MapSeqUnordered(context.Background(), leaf, countTo(2), func(ctx context.Context, v int) (int, error) {
		return 0, check("MapSeqUnordered", ctx)
	}) {
		must(t, err)
	}
	// nested: a group function on the leaf (New(1) root) runs a Map on the root in its slot.
	g, _ := long.GroupAll(context.Background())
	g.Go(func(ctx context.Context) error {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 5*time.Second {
			t.Errorf("sub-pool with its own timeout: deadline %v %v", dl, ok)
		}
		_, err := crew.Map(ctx, root, []int{1, 2}, func(ctx context.Context, v int) (int, error) {
			return 0, check("Map in a lent slot", ctx)
		})
		return err
	})
	awaitReturn(t, "group", goRun(func() { must(t, g.Wait()) }))
	// Go: no deadline
	gf := crew.Go(leaf, func() (int, error) { return 0, nil })
	gf.Wait()
}

// Shutdown with an ended ctx: GroupAll's queued functions are skipped with ErrStopped joined
// in order; running ones see ErrStopped; Group likewise; hooks see only those that ran.
func TestAmidShutdownEndedCtxGroupAllVsGroup(t *testing.T) {
	for _, all := range []bool{false, true} {
		var hc asHookCounts
		root := crew.New(2)
		sub := root.Sub(1, crew.WithPriority(1), crew.WithHooks(hc.hooks()))
		var g *crew.Group
		if all {
			g, _ = sub.GroupAll(context.Background())
		} else {
			g, _ = sub.Group(context.Background())
		}
		running := make(chan struct{})
		var ran atomic.Int64
		g.Go(func(ctx context.Context) error {
			ran.Add(1)
			close(running)
			<-ctx.Done()
			return context.Cause(ctx)
		})
		for range 4 {
			g.Go(func(ctx context.Context) error { ran.Add(1); return nil })
		}
		<-running
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := root.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown %v", err)
		}
		err := returnsWithin(t, "Wait", g.Wait)
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("all=%v: Wait %v", all, err)
		}
		if ran.Load() != 1 {
			t.Errorf("all=%v: ran %d, want 1 (queued ones skipped)", all, ran.Load())
		}
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		s := sub.Stats()
		idleIdentity(t, "sub", s)
		if s.Skipped != 4 {
			t.Errorf("all=%v: Skipped %d, want 4", all, s.Skipped)
		}
		if hc.started.Load() != 1 || hc.finished.Load() != 1 {
			t.Errorf("all=%v: Started %d Finished %d", all, hc.started.Load(), hc.finished.Load())
		}
	}
}

// StopNow while a function of the pool waits on a nested MapSeq/Results/Group whose queued
// functions it runs itself: everything ends, each function once.
func TestAmidStopNowAgainstHelpingWaits(t *testing.T) {
	for round := range 30 {
		var hc asHookCounts
		var rc asHookCounts
		root := crew.New(2, crew.WithHooks(rc.hooks()))
		sub := root.Sub(2, crew.WithPriority(round%3-1), crew.WithHooks(hc.hooks()))
		var calls atomic.Int64
		outer, _ := sub.Group(context.Background())
		for k := range 3 {
			outer.Go(func(ctx context.Context) error {
				switch k {
				case 0:
					for _, err := range crew.MapSeq(ctx, root, countTo(200), func(ctx context.Context, v int) (int, error) {
						calls.Add(1)
						time.Sleep(20 * time.Microsecond)
						return v, nil
					}) {
						if err != nil {
							return err
						}
					}
				case 1:
					r, _ := crew.NewResults[int](ctx, sub)
					for i := range 100 {
						r.Go(func(ctx context.Context) (int, error) {
							calls.Add(1)
							time.Sleep(20 * time.Microsecond)
							return i, nil
						})
					}
					out, err := r.Wait()
					if err == nil {
						for i, v := range out {
							if v != i {
								t.Errorf("Results out of order at %d: %d", i, v)
								break
							}
						}
					}
					return err
				case 2:
					return crew.ForEach(ctx, sub, countTo(200), func(ctx context.Context, v int) error {
						calls.Add(1)
						time.Sleep(20 * time.Microsecond)
						return nil
					})
				}
				return nil
			})
		}
		time.Sleep(time.Duration(round%5+1) * time.Millisecond)
		out := root.StopNow()
		if len(out) != 0 {
			t.Fatalf("StopNow returned %d plain tasks", len(out))
		}
		err := returnsWithin(t, "outer Wait", outer.Wait)
		if err != nil && !errors.Is(err, crew.ErrStopped) {
			t.Errorf("outer Wait %v", err)
		}
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		idleIdentity(t, "root", root.Stats())
		idleIdentity(t, "sub", sub.Stats())
		// each run function has a Started and Finished; calls + the 3 outer functions (those
		// that ran) <= Started
		if hc.started.Load() != hc.finished.Load() || rc.started.Load() != rc.finished.Load() {
			t.Fatalf("Started %d Finished %d; root Started %d Finished %d", hc.started.Load(), hc.finished.Load(), rc.started.Load(), rc.finished.Load())
		}
		ss := sub.Stats()
		if got := ss.Completed + ss.Panicked; got != uint64(hc.finished.Load()) {
			t.Fatalf("sub Completed+Panicked %d, Finished hooks %d; %+v", got, hc.finished.Load(), ss)
		}
	}
}

// MapSeqUnordered's first failure skips the queued calls: no hooks for them, counted in
// Skipped; two WithHooks both apply. Map under a shrinking Resize keeps the limit.
func TestAmidUnorderedFailureSkipsWithHooks(t *testing.T) {
	var h1, h2 asHookCounts
	p := crew.New(4, crew.WithHooks(h1.hooks()), crew.WithHooks(h2.hooks()))
	defer p.StopAndWait()
	var ran atomic.Int64
	gate := make(chan struct{})
	boom := errors.New("boom")
	var got error
	done := goRun(func() {
		for _, err := range crew.MapSeqUnordered(context.Background(), p, countTo(4), func(ctx context.Context, v int) (int, error) {
			ran.Add(1)
			if v == 0 {
				<-gate
				return 0, boom
			}
			<-ctx.Done()
			return 0, ctx.Err()
		}) {
			if err != nil {
				got = err
			}
		}
	})
	waitFor(t, "4 calls", func() bool { return ran.Load() == 4 })
	p.Resize(1)
	close(gate)
	awaitReturn(t, "range", done)
	if !errors.Is(got, boom) {
		t.Errorf("err %v", got)
	}
	p.Wait()
	idleIdentity(t, "p", p.Stats())
	for i, h := range []*asHookCounts{&h1, &h2} {
		if h.started.Load() != ran.Load() || h.finished.Load() != ran.Load() || h.queued.Load() != 4 {
			t.Errorf("hooks %d: Queued %d Started %d Finished %d, ran %d", i, h.queued.Load(), h.started.Load(), h.finished.Load(), ran.Load())
		}
	}
	// Map under a shrink: the limit holds after Resize returns
	var fl asInflight
	p.Resize(3)
	var shrunk atomic.Bool
	var over atomic.Int64
	mdone := goRun(func() {
		_, err := crew.Map(context.Background(), p, make([]int, 300), func(ctx context.Context, v int) (int, error) {
			fl.enter()
			if shrunk.Load() && fl.now.Load() > 3 {
				over.Add(1)
			}
			time.Sleep(50 * time.Microsecond)
			fl.exit()
			return 0, nil
		})
		must(t, err)
	})
	time.Sleep(2 * time.Millisecond)
	p.Resize(1)
	shrunk.Store(true)
	awaitReturn(t, "Map", mdone)
	if over.Load() != 0 {
		t.Errorf("%d starts over the limit after a shrink", over.Load())
	}
}
