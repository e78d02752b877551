package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// snapshotIdentity checks Running+Waiting == Accepted - ended for one snapshot.
func snapshotIdentity(s crew.Stats) error {
	ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
	if s.Accepted < ended || uint64(s.Running+s.Waiting) != s.Accepted-ended {
		return fmt.Errorf("Running %d + Waiting %d != Accepted %d - ended %d (C%d P%d D%d R%d S%d)",
			s.Running, s.Waiting, s.Accepted, ended, s.Completed, s.Panicked, s.Discarded, s.Returned, s.Skipped)
	}
	return nil
}

// Stats identities in every snapshot while streams nested in groups run on sub-pools, with
// cancels, pause/resume and resize churn.
func TestAmidSnapshotIdentityUnderStreams(t *testing.T) {
	var hc asHookCounts
	root := crew.New(3, crew.WithHooks(hc.hooks()), crew.WithTaskTimeout(time.Second))
	a := root.Sub(2, crew.WithPriority(1))
	b := a.Sub(3, crew.WithPriority(-1))
	pools := map[string]*crew.Pool{"root": root, "a": a, "b": b}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad atomic.Value
	for name, q := range pools {
		repeatUntil(&wg, stop, func() {
			if err := snapshotIdentity(q.Stats()); err != nil {
				bad.CompareAndSwap(nil, name+": "+err.Error())
			}
			time.Sleep(20 * time.Microsecond)
		})
	}
	{
		repeatUntil(&wg, stop, func() { root.Resize(1); time.Sleep(100 * time.Microsecond); root.Resize(4) })
		repeatUntil(&wg, stop, func() { a.Pause(); time.Sleep(200 * time.Microsecond); a.Resume(); time.Sleep(200 * time.Microsecond) })
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	work := func(ctx context.Context, v int) (int, error) {
		if v%17 == 16 {
			panic(nil)
		}
		if v%13 == 12 {
			return 0, errors.New("e")
		}
		runtime.Gosched()
		return v, nil
	}
	var round atomic.Int64
	together(2, 1, func(c, _ int) {
		for time.Now().Before(deadline) {
			r := round.Add(1)
			// The group runs on the leaf; its functions stream on the leaf's ancestors (or the
			// leaf), whose waits help ("on P or on a sub-pool of P").
			g, _ := b.Group(context.Background())
			for i := range 3 {
				g.Go(func(ctx context.Context) error {
					q := []*crew.Pool{root, a, b}[(int(r)+i)%3]
					n := 0
					seq := crew.MapSeq[int, int]
					if i == 1 {
						seq = crew.MapSeqUnordered[int, int]
					}
					for _, err := range seq(ctx, q, countTo(30), work) {
						if err != nil {
							break
						}
						n++
						if n == 10 && i == 2 {
							break
						}
					}
					f := crew.GoContext(ctx, q, func(ctx context.Context) (int, error) { return 1, nil })
					f.Cancel()
					f.Wait()
					_, _ = crew.Map(ctx, q, []int{1, 2, 3, 16}, work)
					return nil
				})
			}
			t0 := time.Now()
			var err error
			wd := goRun(func() { err = g.Wait() })
			select {
			case <-wd:
			case <-time.After(8 * time.Second):
				buf := make([]byte, 1<<22)
				buf = buf[:runtime.Stack(buf, true)]
				t.Logf("stats root %+v a %+v b %+v", root.Stats(), a.Stats(), b.Stats())
				panic("group Wait hung\n" + string(buf))
			}
			if d := time.Since(t0); d > time.Second {
				t.Logf("round %d took %v", r, d)
			}
			if err != nil {
				t.Errorf("group: %v", err)
			}
		}
	})
	close(stop)
	wg.Wait()
	a.Resume()
	root.Wait()
	if v := bad.Load(); v != nil {
		t.Errorf("snapshot: %v", v)
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	for name, q := range pools {
		idleIdentity(t, name, q.Stats())
	}
	if hc.started.Load() != hc.finished.Load() {
		t.Errorf("Started %d Finished %d", hc.started.Load(), hc.finished.Load())
	}
	t.Logf("rounds %d, root %+v", round.Load(), root.Stats())
}

// Group: the first error skips queued functions (counted in Skipped, no hooks); GroupAll runs
// them all and joins the errors in submission order.
func TestAmidGroupVsGroupAllOnPausedSubPool(t *testing.T) {
	for _, all := range []bool{false, true} {
		var hc asHookCounts
		root := crew.New(1)
		sub := root.Sub(1, crew.WithHooks(hc.hooks()), crew.WithPriority(2))
		root.Pause()
		var g *crew.Group
		if all {
			g, _ = sub.GroupAll(context.Background())
		} else {
			g, _ = sub.Group(context.Background())
		}
		var ran atomic.Int64
		e1 := errors.New("e1")
		for i := range 6 {
			g.Go(func(ctx context.Context) error {
				ran.Add(1)
				if i == 0 || i == 3 {
					return fmt.Errorf("fn %d: %w", i, e1)
				}
				return nil
			})
		}
		root.Resume()
		err := returnsWithin(t, "Wait", g.Wait)
		root.Wait()
		s := sub.Stats()
		if all {
			if ran.Load() != 6 {
				t.Errorf("GroupAll ran %d of 6", ran.Load())
			}
			if err == nil || err.Error() != "fn 0: e1\nfn 3: e1" {
				t.Errorf("GroupAll err %q", err)
			}
		} else {
			if ran.Load() != 1 {
				t.Errorf("Group ran %d, want 1", ran.Load())
			}
			if s.Skipped != 5 {
				t.Errorf("Group Skipped %d, want 5: %+v", s.Skipped, s)
			}
			if err == nil || err.Error() != "fn 0: e1" {
				t.Errorf("Group err %q", err)
			}
		}
		if hc.started.Load() != ran.Load() || hc.finished.Load() != ran.Load() {
			t.Errorf("all=%v: Started %d Finished %d, ran %d", all, hc.started.Load(), hc.finished.Load(), ran.Load())
		}
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		idleIdentity(t, "sub", sub.Stats())
		idleIdentity(t, "root", root.Stats())
	}
}

// ForEach whose sequence calls runtime.Goexit or panics, on a sub-pool with hooks: no call
// outlives ForEach, the Goexit goes on, stats balance.
func TestAmidForEachSeqGoexitAndPanic(t *testing.T) {
	for _, how := range []string{"goexit", "panic", "panicnil"} {
		var hc asHookCounts
		root := crew.New(2)
		sub := root.Sub(3, crew.WithHooks(hc.hooks()))
		var fl asInflight
		var ran atomic.Int64
		var after atomic.Int64
		after.Store(-1)
		var rec any
		exited := true
		done := goRun(func() {
			defer func() {
				rec = recover()
				after.Store(fl.now.Load())
			}()
			seq := func(yield func(int) bool) {
				for i := range 100 {
					if i == 7 {
						switch how {
						case "goexit":
							runtime.Goexit()
						case "panic":
							panic("seq")
						case "panicnil":
							panic(nil)
						}
					}
					if !yield(i) {
						return
					}
				}
			}
			crew.ForEach(context.Background(), sub, seq, func(ctx context.Context, v int) error {
				ran.Add(1)
				fl.enter()
				defer fl.exit()
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Millisecond):
				}
				return nil
			})
			exited = false
		})
		awaitReturn(t, "ForEach", done)
		if !exited {
			t.Errorf("%s: ForEach returned normally", how)
		}
		if after.Load() != 0 {
			t.Errorf("%s: %d calls running after ForEach left", how, after.Load())
		}
		// Under GODEBUG=panicnil=1, recover returns nil for panic(nil).
		if how != "goexit" && rec == nil && !(how == "panicnil" && panicNilValue() == nil) {
			t.Errorf("%s: no panic", how)
		}
		root.Wait()
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		idleIdentity(t, "sub", sub.Stats())
		if hc.started.Load() != ran.Load() || hc.finished.Load() != ran.Load() {
			t.Errorf("Started %d Finished %d ran %d", hc.started.Load(), hc.finished.Load(), ran.Load())
		}
	}
}

// FuncPool: Invoke/TryInvoke/InvokeContext against StopNow, with hooks, pause and resize:
// every accepted arg runs once or is returned, never both; hooks match.
func TestAmidFuncPoolStopNowAccounting(t *testing.T) {
	for round := range 10 {
		var hc asHookCounts
		var runs [4000]atomic.Int32
		fp := crew.NewFunc(2, func(i int) {
			runs[i].Add(1)
			if i%50 == 0 {
				panic(nil)
			}
			if i%7 == 0 {
				runtime.Gosched()
			}
		}, crew.WithHooks(hc.hooks()), crew.WithQueueSize(8), crew.WithPanicHandler(func(any, []byte) {}))
		var accepted [4000]atomic.Bool
		var next atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for k := range 3 {
			repeatUntil(&wg, stop, func() {
				i := int(next.Add(1)) - 1
				if i >= len(runs) {
					return
				}
				var err error
				switch k {
				case 0:
					err = fp.Invoke(i)
				case 1:
					if !fp.TryInvoke(i) {
						err = crew.ErrQueueFull
					}
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					err = fp.InvokeContext(ctx, i)
					cancel()
				}
				if err == nil {
					accepted[i].Store(true)
				}
			})
		}
		repeatUntil(&wg, stop, func() { fp.Resize(1); fp.Resize(3) })
		repeatUntil(&wg, stop, func() { fp.Pause(); runtime.Gosched(); fp.Resume() })
		time.Sleep(time.Duration(5+round) * time.Millisecond)
		fp.Pause()
		out := fp.StopNow()
		close(stop)
		wg.Wait()
		awaitReturn(t, "StopAndWait", goRun(fp.StopAndWait))
		returned := make(map[int]bool)
		for _, i := range out {
			if returned[i] {
				t.Fatalf("arg %d returned twice", i)
			}
			returned[i] = true
		}
		var ran int64
		for i := range runs {
			r := runs[i].Load()
			ran += int64(r)
			switch {
			case r > 1:
				t.Fatalf("arg %d ran %d times", i, r)
			case r == 1 && returned[i]:
				t.Fatalf("arg %d ran and was returned", i)
			case r == 1 && !accepted[i].Load():
				t.Fatalf("arg %d ran without being accepted", i)
			case r == 0 && accepted[i].Load() && !returned[i]:
				t.Fatalf("arg %d accepted, never ran, not returned", i)
			case returned[i] && !accepted[i].Load():
				t.Fatalf("arg %d returned without being accepted", i)
			}
		}
		s := fp.Stats()
		idleIdentity(t, "funcpool", s)
		if s.Returned != uint64(len(out)) {
			t.Fatalf("Returned %d, StopNow gave %d", s.Returned, len(out))
		}
		if hc.started.Load() != ran || hc.finished.Load() != ran {
			t.Fatalf("Started %d Finished %d, ran %d", hc.started.Load(), hc.finished.Load(), ran)
		}
	}
}
