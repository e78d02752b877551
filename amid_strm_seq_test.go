package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// asInflight counts calls running now, and the highest seen.
type asInflight struct {
	now, high atomic.Int64
}

func (f *asInflight) enter() {
	n := f.now.Add(1)
	for {
		h := f.high.Load()
		if n <= h || f.high.CompareAndSwap(h, n) {
			return
		}
	}
}
func (f *asInflight) exit() { f.now.Add(-1) }

// asHookCounts counts hook calls.
type asHookCounts struct{ queued, started, finished, rejected, discarded atomic.Int64 }

func (h *asHookCounts) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { h.queued.Add(1) },
		Started:   func(crew.TaskInfo) { h.started.Add(1) },
		Finished:  func(crew.TaskInfo) { h.finished.Add(1) },
		Rejected:  func(error) { h.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

// MapSeq on a sub-pool of a sub-pool with priorities, the consumer breaking early: when the
// range ends nothing it started runs; hooks and stats balance.
func TestAmidMapSeqBreakOnNestedSubPools(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		var hc asHookCounts
		root := crew.New(3)
		mid := root.Sub(2, crew.WithPriority(2))
		leaf := mid.Sub(5, crew.WithPriority(-1), crew.WithHooks(hc.hooks()))
		other := root.Sub(1, crew.WithPriority(1))
		var fl asInflight
		var ran atomic.Int64
		// keep the other sub-pool busy
		for range 20 {
			must(t, other.Submit(func() { time.Sleep(50 * time.Microsecond) }))
		}
		seq := crew.MapSeq[int, int]
		if !ordered {
			seq = crew.MapSeqUnordered[int, int]
		}
		var pulled atomic.Int64
		done := goRun(func() {
			n := 0
			for r, err := range seq(context.Background(), leaf, endless(&pulled), func(ctx context.Context, v int) (int, error) {
				fl.enter()
				defer fl.exit()
				ran.Add(1)
				time.Sleep(time.Duration(v%3) * 100 * time.Microsecond)
				return v, nil
			}) {
				if err != nil {
					t.Errorf("err %v", err)
					return
				}
				_ = r
				n++
				if n == 50 {
					break
				}
			}
			if got := fl.now.Load(); got != 0 {
				t.Errorf("ordered=%v: %d calls still running after the range ended", ordered, got)
			}
		})
		awaitReturn(t, "range", done)
		if fl.high.Load() > 2 {
			t.Errorf("ordered=%v: %d calls at once, limit 2 (mid)", ordered, fl.high.Load())
		}
		if p := pulled.Load(); p > 50+5 {
			t.Errorf("ordered=%v: pulled %d, more than 50 + W", ordered, p)
		}
		root.Wait()
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		idleIdentity(t, "leaf", leaf.Stats())
		idleIdentity(t, "mid", mid.Stats())
		idleIdentity(t, "root", root.Stats())
		if hc.started.Load() != ran.Load() || hc.finished.Load() != ran.Load() {
			t.Errorf("ordered=%v: Started %d, Finished %d, ran %d", ordered, hc.started.Load(), hc.finished.Load(), ran.Load())
		}
	}
}

// A sequence that yields again after the range body broke out: the runtime panics in the
// sequence. The panic must go on from the range statement once the calls have returned.
func TestAmidMapSeqYieldAfterBreak(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	var fl asInflight
	bad := func(yield func(int) bool) {
		for i := 0; i < 100; i++ {
			yield(i) // ignores false
		}
	}
	for _, ordered := range []bool{true, false} {
		seq := crew.MapSeq[int, int]
		if !ordered {
			seq = crew.MapSeqUnordered[int, int]
		}
		var rec any
		done := goRun(func() {
			defer func() { rec = recover() }()
			n := 0
			for range seq(context.Background(), p, bad, func(ctx context.Context, v int) (int, error) {
				fl.enter()
				defer fl.exit()
				time.Sleep(200 * time.Microsecond)
				return v, nil
			}) {
				n++
				if n == 3 {
					break
				}
			}
		})
		awaitReturn(t, "range over a bad seq", done)
		if rec == nil {
			t.Errorf("ordered=%v: no panic from a sequence that yields after break", ordered)
		}
		if fl.now.Load() != 0 {
			t.Errorf("ordered=%v: %d calls still running after the panic left the range", ordered, fl.now.Load())
		}
	}
	p.Wait()
	idleIdentity(t, "pool", p.Stats())
}

// The loop body panics with panic(nil), and calls runtime.Goexit.
func TestAmidMapSeqBodyPanicNilAndGoexit(t *testing.T) {
	p := crew.New(3)
	defer p.StopAndWait()
	for _, ordered := range []bool{true, false} {
		for _, how := range []string{"panicnil", "goexit", "return"} {
			seq := crew.MapSeq[int, int]
			if !ordered {
				seq = crew.MapSeqUnordered[int, int]
			}
			var fl asInflight
			var rec any
			var after atomic.Int64
			done := goRun(func() {
				defer func() {
					rec = recover()
					after.Store(fl.now.Load())
				}()
				func() {
					for range seq(context.Background(), p, countTo(1000), func(ctx context.Context, v int) (int, error) {
						fl.enter()
						defer fl.exit()
						select {
						case <-ctx.Done():
						case <-time.After(time.Millisecond):
						}
						return v, nil
					}) {
						switch how {
						case "panicnil":
							panic(nil)
						case "goexit":
							runtime.Goexit()
						case "return":
							return
						}
					}
				}()
			})
			awaitReturn(t, how, done)
			if how == "panicnil" && panicNilValue() != nil { // nil under GODEBUG=panicnil=1
				if _, ok := rec.(*runtime.PanicNilError); !ok {
					t.Errorf("%s ordered=%v: recovered %T %v", how, ordered, rec, rec)
				}
			}
			if after.Load() != 0 {
				t.Errorf("%s ordered=%v: %d calls running when the range statement ended", how, ordered, after.Load())
			}
		}
	}
	p.Wait()
	idleIdentity(t, "pool", p.Stats())
}

// StopNow while a MapSeq range runs on a paused pool: the range must end, yielding ErrStopped.
func TestAmidMapSeqStopNowWhilePaused(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		var hc asHookCounts
		p := crew.New(2)
		sub := p.Sub(4, crew.WithPriority(3), crew.WithHooks(hc.hooks()))
		seq := crew.MapSeq[int, int]
		if !ordered {
			seq = crew.MapSeqUnordered[int, int]
		}
		var ran atomic.Int64
		var gotErr error
		var results int
		started := make(chan struct{})
		done := goRun(func() {
			for _, err := range seq(context.Background(), sub, countTo(100), func(ctx context.Context, v int) (int, error) {
				if ran.Add(1) == 2 {
					close(started)
				}
				time.Sleep(time.Millisecond)
				return v, nil
			}) {
				if err != nil {
					gotErr = err
					break
				}
				results++
			}
		})
		<-started
		p.Pause()
		time.Sleep(5 * time.Millisecond)
		out := p.StopNow()
		if len(out) != 0 {
			t.Errorf("StopNow handed back %d plain tasks, want 0", len(out))
		}
		awaitReturn(t, "range after StopNow", done)
		if !errors.Is(gotErr, crew.ErrStopped) {
			t.Errorf("ordered=%v: range ended with %v after %d results, want ErrStopped", ordered, gotErr, results)
		}
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		idleIdentity(t, "sub", sub.Stats())
		idleIdentity(t, "root", p.Stats())
		if hc.started.Load() != ran.Load() || hc.finished.Load() != ran.Load() {
			t.Errorf("Started %d Finished %d ran %d", hc.started.Load(), hc.finished.Load(), ran.Load())
		}
		if s := sub.Stats(); int64(s.Completed) != ran.Load() {
			t.Errorf("ordered=%v: sub Completed %d, ran %d; %+v", ordered, s.Completed, ran.Load(), s)
		}
	}
}

// Shutdown with an ended ctx while a MapSeq range runs: running calls see ErrStopped, queued
// ones are skipped, the range ends.
func TestAmidMapSeqShutdownEndedCtx(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		p := crew.New(2)
		sub := p.Sub(2)
		seq := crew.MapSeq[int, int]
		if !ordered {
			seq = crew.MapSeqUnordered[int, int]
		}
		var causes sync.Map
		var ran atomic.Int64
		var gotErr error
		twoRunning := make(chan struct{})
		done := goRun(func() {
			for _, err := range seq(context.Background(), sub, countTo(1000), func(ctx context.Context, v int) (int, error) {
				if ran.Add(1) == 2 {
					close(twoRunning)
				}
				<-ctx.Done()
				causes.Store(v, context.Cause(ctx))
				return 0, context.Cause(ctx)
			}) {
				if err != nil {
					gotErr = err
				}
			}
		})
		<-twoRunning
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v", err)
		}
		awaitReturn(t, "range after Shutdown", done)
		if !errors.Is(gotErr, crew.ErrStopped) {
			t.Errorf("ordered=%v: range err %v, want ErrStopped", ordered, gotErr)
		}
		causes.Range(func(k, v any) bool {
			if !errors.Is(v.(error), crew.ErrStopped) {
				t.Errorf("ordered=%v: call %v cause %v", ordered, k, v)
			}
			return true
		})
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		idleIdentity(t, "sub", sub.Stats())
		idleIdentity(t, "root", p.Stats())
	}
}

// W is the limit when the range starts: growing the pool mid-range must not raise the number
// of values pulled and not yet yielded.
func TestAmidMapSeqBoundSurvivesResize(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		p := crew.New(2)
		seq := crew.MapSeq[int, int]
		if !ordered {
			seq = crew.MapSeqUnordered[int, int]
		}
		var pulled atomic.Int64
		yielded := 0
		var worst int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		storm := func() { p.Resize(8); time.Sleep(50 * time.Microsecond); p.Resize(1); time.Sleep(50 * time.Microsecond) }
		for _, err := range seq(context.Background(), p, endless(&pulled), func(ctx context.Context, v int) (int, error) {
			time.Sleep(time.Duration(v%4) * 50 * time.Microsecond)
			return v, nil
		}) {
			must(t, err)
			yielded++
			if yielded == 1 { // the range has read its W, 2: the storm starts now
				repeatUntil(&wg, stop, storm)
			}
			// the value being yielded counts as pulled and yielded
			if d := pulled.Load() - int64(yielded); d > worst {
				worst = d
			}
			if yielded == 500 {
				break
			}
		}
		close(stop)
		wg.Wait()
		p.StopAndWait()
		if worst > 2 {
			t.Errorf("ordered=%v: %d values pulled and not yet yielded, W = 2", ordered, worst)
		}
	}
}
