package crew_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// Future.Cancel racing with the start, on a sub-pool under Resize churn: decided once.
func TestAmidFutureCancelRace(t *testing.T) {
	var hc asHookCounts
	p := crew.New(2, crew.WithHooks(hc.hooks()))
	sub := p.Sub(2, crew.WithPriority(1))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() { p.Resize(1); runtime.Gosched(); p.Resize(3) })
	var cancelTrueRan, cancelFalseNotRan atomic.Int64
	for i := range 2000 {
		var ran atomic.Bool
		q := sub
		if i%2 == 0 {
			q = p
		}
		f := crew.GoContext(context.Background(), q, func(ctx context.Context) (int, error) {
			ran.Store(true)
			return 1, nil
		})
		if i%3 == 0 {
			runtime.Gosched()
		}
		c := f.Cancel()
		v, err := f.Wait()
		if c {
			if !errors.Is(err, context.Canceled) || v != 0 {
				t.Fatalf("Cancel true, Wait = %v %v", v, err)
			}
			if ran.Load() {
				cancelTrueRan.Add(1)
			}
		} else {
			if err != nil || v != 1 || !ran.Load() {
				cancelFalseNotRan.Add(1)
				t.Errorf("Cancel false, Wait = %v %v ran=%v", v, err, ran.Load())
			}
		}
	}
	close(stop)
	wg.Wait()
	p.Wait()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if cancelTrueRan.Load() != 0 {
		t.Errorf("%d canceled futures ran", cancelTrueRan.Load())
	}
	idleIdentity(t, "sub", sub.Stats())
	idleIdentity(t, "root", p.Stats())
	if hc.started.Load() != hc.finished.Load() {
		t.Errorf("Started %d Finished %d", hc.started.Load(), hc.finished.Load())
	}
}

// Future.Cancel racing StopNow on a paused pool: each future ends once, counted once.
func TestAmidFutureCancelVsStopNow(t *testing.T) {
	for range 20 {
		p := crew.New(2)
		sub := p.Sub(1)
		p.Pause()
		var fs []*crew.Future[int]
		for i := range 50 {
			q := p
			if i%2 == 1 {
				q = sub
			}
			fs = append(fs, crew.GoContext(context.Background(), q, func(ctx context.Context) (int, error) { return 1, nil }))
		}
		var canceled atomic.Int64
		done := goRun(func() {
			for _, f := range fs {
				if f.Cancel() {
					canceled.Add(1)
				}
			}
		})
		out := p.StopNow()
		<-done
		if len(out) != 0 {
			t.Fatalf("StopNow returned %d plain tasks", len(out))
		}
		var nCanceled, nStopped int
		for _, f := range fs {
			var err error
			awaitReturn(t, "future Wait", goRun(func() { _, err = f.Wait() }))
			switch {
			case errors.Is(err, context.Canceled):
				nCanceled++
			case errors.Is(err, crew.ErrStopped):
				nStopped++
			default:
				t.Fatalf("future err %v", err)
			}
		}
		if int64(nCanceled) != canceled.Load() {
			t.Fatalf("Cancel true %d times, %d futures canceled", canceled.Load(), nCanceled)
		}
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		rs, ss := p.Stats(), sub.Stats()
		idleIdentity(t, "root", rs)
		idleIdentity(t, "sub", ss)
		if got := rs.Skipped + ss.Skipped; got < uint64(nCanceled) {
			// root's Skipped may or may not include sub's; at least the canceled ones
			t.Fatalf("Skipped %d+%d, canceled %d", rs.Skipped, ss.Skipped, nCanceled)
		}
	}
}

// Labels: a worker started by a labelled plain submit runs plain tasks under none, a labelled
// function under its context's, and has none afterwards, also after a panic and a Goexit.
func TestAmidLabelsFollowWork(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	sub := p.Sub(1, crew.WithPriority(2))
	lctx := pprof.WithLabels(context.Background(), pprof.Labels("k", "req"))
	check := func(what string, want bool) {
		t.Helper()
		got := make(chan bool, 1)
		must(t, p.Submit(func() { got <- (labelsHere() == `{"k":"req"}`) }))
		if g := <-got; g != want {
			t.Errorf("%s: plain task labelled=%v, want %v", what, g, want)
		}
	}
	// the submitter is labelled
	pprof.Do(context.Background(), pprof.Labels("k", "req"), func(context.Context) {
		check("first plain task from a labelled submitter", false)
	})
	// a labelled function
	var inFn atomic.Bool
	f := crew.GoContext(lctx, sub, func(ctx context.Context) (int, error) {
		inFn.Store((labelsHere() == `{"k":"req"}`))
		return 0, nil
	})
	f.Wait()
	if !inFn.Load() {
		t.Errorf("GoContext function on a sub-pool did not run under its context's labels")
	}
	check("after labelled future", false)
	// panic
	g, _ := sub.Group(lctx)
	g.Go(func(ctx context.Context) error { panic("x") })
	g.Wait()
	check("after labelled panic", false)
	// Goexit
	g, _ = sub.Group(lctx)
	g.Go(func(ctx context.Context) error { runtime.Goexit(); return nil })
	g.Wait()
	check("after labelled goexit", false)
	// MapSeq
	var seqLabelled atomic.Int64
	for _, err := range crew.MapSeq(lctx, sub, countTo(5), func(ctx context.Context, v int) (int, error) {
		if labelsHere() == `{"k":"req"}` {
			seqLabelled.Add(1)
		}
		return v, nil
	}) {
		must(t, err)
	}
	if seqLabelled.Load() != 5 {
		t.Errorf("MapSeq: %d of 5 calls under labels", seqLabelled.Load())
	}
	check("after MapSeq", false)
	// Map and ForEach
	var mapLabelled atomic.Int64
	_, err := crew.Map(lctx, sub, []int{1, 2, 3}, func(ctx context.Context, v int) (int, error) {
		if labelsHere() == `{"k":"req"}` {
			mapLabelled.Add(1)
		}
		return v, nil
	})
	must(t, err)
	if mapLabelled.Load() != 3 {
		t.Errorf("Map: %d of 3 calls under labels", mapLabelled.Load())
	}
	check("after Map", false)
	// Results
	r, _ := crew.NewResults[int](lctx, sub)
	var resLabelled atomic.Bool
	r.Go(func(ctx context.Context) (int, error) {
		resLabelled.Store((labelsHere() == `{"k":"req"}`))
		return 0, nil
	})
	r.Wait()
	if !resLabelled.Load() {
		t.Errorf("Results function not under labels")
	}
	check("after Results", false)
}

// A function of a nested group run in a lent slot (help) on New(1), whose context carries
// labels of its own, keeps the labels the waiting function runs under (package doc,
// "Profiler labels"), and the waiting function has its own labels after the wait.
func TestAmidLabelsOfAHelpedFunction(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	outer := pprof.WithLabels(context.Background(), pprof.Labels("k", "outer"))
	g, _ := p.Group(outer)
	var inner, outerBefore, outerAfter string
	g.Go(func(ctx context.Context) error {
		outerBefore = labelsHere()
		ictx := pprof.WithLabels(ctx, pprof.Labels("k", "inner"))
		ig, _ := p.Group(ictx)
		ig.Go(func(ctx context.Context) error {
			inner = labelsHere()
			return nil
		})
		err := ig.Wait()
		outerAfter = labelsHere()
		return err
	})
	awaitReturn(t, "outer Wait", goRun(func() { must(t, g.Wait()) }))
	if outerBefore != `{"k":"outer"}` {
		t.Errorf("outer function labels %q", outerBefore)
	}
	if inner != `{"k":"outer"}` {
		t.Errorf("nested function run in a lent slot has labels %q, want the waiting function's, {\"k\":\"outer\"}", inner)
	}
	if outerAfter != `{"k":"outer"}` {
		t.Errorf("outer function labels after the nested wait %q", outerAfter)
	}
}

// The same for a Future.Wait and a MapSeq range that run their own functions in the lent slot.
func TestAmidLabelsOfHelpedFutureAndStream(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	outer := pprof.WithLabels(context.Background(), pprof.Labels("k", "outer"))
	g, _ := p.Group(outer)
	var fut, seq string
	g.Go(func(ctx context.Context) error {
		ictx := pprof.WithLabels(ctx, pprof.Labels("k", "inner"))
		f := crew.GoContext(ictx, p, func(ctx context.Context) (int, error) { fut = labelsHere(); return 0, nil })
		f.Wait()
		for _, err := range crew.MapSeq(ictx, p, countTo(1), func(ctx context.Context, v int) (int, error) { seq = labelsHere(); return v, nil }) {
			if err != nil {
				return err
			}
		}
		return nil
	})
	awaitReturn(t, "outer Wait", goRun(func() { must(t, g.Wait()) }))
	if fut != `{"k":"outer"}` || seq != `{"k":"outer"}` {
		t.Errorf("functions run in a lent slot: GoContext labels %q, MapSeq labels %q; want the waiting function's, {\"k\":\"outer\"}", fut, seq)
	}
}
