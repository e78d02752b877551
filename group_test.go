package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

func TestGroupCancelsContextAtFirstError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, ctx := p.Group(context.Background())
	g.Go(func(ctx context.Context) error {
		<-ctx.Done() // returns only because the other task failed
		return nil
	})
	g.Go(func(context.Context) error { return errors.New("fail") })
	if err := g.Wait(); err == nil || err.Error() != "fail" {
		t.Fatalf("Wait = %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("group context not canceled")
	}
	if cause := context.Cause(ctx); cause == nil || cause.Error() != "fail" {
		t.Fatalf("context.Cause = %v, want the first error", cause)
	}
}

func TestGroupCancelsContextWhenWaitReturns(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, ctx := p.Group(context.Background())
	g.Go(func(context.Context) error { return nil })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Fatal("group context still live after Wait")
	}
}

func TestGroupSkipsQueuedFunctionsOnceItFails(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	release := make(chan struct{})
	fail := errors.New("fail")
	g.Go(func(context.Context) error { <-release; return fail })
	var ran atomic.Int32
	for range 5 { // queued behind the failing task
		g.Go(func(ctx context.Context) error { ran.Add(1); return nil })
	}
	close(release)
	if err := g.Wait(); !errors.Is(err, fail) {
		t.Fatalf("Wait = %v, want the failure", err)
	}
	p.Wait()
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d of 5 functions queued behind the failure ran, want 0", n)
	}
	if s := p.Stats(); s.Skipped != 5 || s.Completed != 1 || s.Accepted != 6 {
		t.Fatalf("Stats = %+v, want 6 accepted, 1 completed, 5 skipped", s)
	}
}

func TestGroupPanicBecomesPanicError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	g.Go(func(context.Context) error { panic("group boom") })
	err := g.Wait()
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Value != "group boom" || len(pe.Stack) == 0 {
		t.Fatalf("Wait = %v, want *PanicError", err)
	}
	if err := p.Submit(func() {}); err != nil {
		t.Fatalf("pool unusable after a group panic: %v", err)
	}
}

func TestGroupSecondWaitReturnsSameErrorAndGoAfterWaitIsSkipped(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	boom := errors.New("boom")
	g.Go(func(context.Context) error { return boom })
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v", err)
	}
	var ran atomic.Bool
	g.Go(func(ctx context.Context) error { ran.Store(true); return nil })
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("second Wait = %v, want the same first error", err)
	}
	p.Wait()
	if ran.Load() {
		t.Fatal("a function given after Wait ran, though the group's context had ended")
	}
	if s := p.Stats(); s.Skipped != 1 {
		t.Fatalf("Skipped = %d, want 1", s.Skipped)
	}
}

func TestGroupOnStoppedPoolReturnsErrStopped(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	p.StopAndWait()
	g, _ := p.Group(context.Background())
	g.Go(func(context.Context) error { t.Error("ran on a stopped pool"); return nil })
	if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Wait = %v, want ErrStopped", err)
	}
	r, _ := crew.NewResults[int](context.Background(), p)
	r.Go(func(context.Context) (int, error) { t.Error("ran on a stopped pool"); return 1, nil })
	if _, err := r.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Results.Wait = %v, want ErrStopped", err)
	}
}

func TestManyGroupsShareOnePool(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	const groups, each = 16, 50
	var wg sync.WaitGroup
	errs := make([]error, groups)
	var ran atomic.Int64
	for i := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, _ := p.Group(context.Background())
			for j := range each {
				g.Go(func(ctx context.Context) error {
					ran.Add(1)
					if i%2 == 0 && j == each/2 {
						return fmt.Errorf("group %d failed", i)
					}
					return nil
				})
			}
			errs[i] = g.Wait()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		want := ""
		if i%2 == 0 {
			want = fmt.Sprintf("group %d failed", i)
		}
		if (err == nil && want != "") || (err != nil && err.Error() != want) {
			t.Fatalf("group %d: Wait = %v, want %q", i, err, want)
		}
	}
	p.Wait()
	// A failing group's functions still queued at its failure are skipped.
	if s := p.Stats(); ran.Load()+int64(s.Skipped) != groups*each {
		t.Fatalf("%d of %d tasks ran, %d skipped", ran.Load(), groups*each, s.Skipped)
	}
}

func TestGroupsOnSubPoolRespectSubPoolLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	sub := p.Sub(2)
	var h highWater
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, _ := sub.Group(context.Background())
			for range 50 {
				g.Go(func(context.Context) error {
					h.enter()
					time.Sleep(20 * time.Microsecond)
					h.exit()
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if m := h.high.Load(); m > 2 {
		t.Fatalf("%d group tasks ran at once on a sub-pool of 2", m)
	}
}

func TestResultsWaitKeepsSubmissionOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	r, _ := crew.NewResults[int](context.Background(), p)
	const n = 200
	for i := range n {
		r.Go(func(context.Context) (int, error) {
			time.Sleep(time.Duration(n-i) * time.Microsecond) // later ones finish first
			return i * i, nil
		})
	}
	vals, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != n {
		t.Fatalf("%d values, want %d", len(vals), n)
	}
	for i, v := range vals {
		if v != i*i {
			t.Fatalf("vals[%d] = %d, want %d", i, v, i*i)
		}
	}
}

func TestResultsReturnsFirstErrorAndZeroForFailed(t *testing.T) {
	t.Parallel()
	p := crew.New(1) // one worker: the functions run one after another, in submission order
	defer p.StopAndWait()
	release := make(chan struct{})
	r, ctx := crew.NewResults[string](context.Background(), p)
	boom := errors.New("boom")
	var skippedRan atomic.Bool
	r.Go(func(context.Context) (string, error) { <-release; return "a", nil })
	r.Go(func(context.Context) (string, error) { return "failed", boom })
	// Queued behind the failure: the shared context ends at it, so they are skipped.
	r.Go(func(ctx context.Context) (string, error) { skippedRan.Store(true); return "c", nil })
	r.Go(func(context.Context) (string, error) { skippedRan.Store(true); panic("panicked") })
	close(release)
	vals, err := r.Wait()
	if !errors.Is(err, boom) {
		t.Fatalf("Wait error = %v, want boom", err)
	}
	if skippedRan.Load() {
		t.Fatal("a function queued behind the failure ran")
	}
	want := []string{"a", "", "", ""}
	if !slices.Equal(vals, want) {
		t.Fatalf("vals = %q, want %q", vals, want)
	}
	if !errors.Is(context.Cause(ctx), boom) {
		t.Fatalf("context's cause = %v, want boom", context.Cause(ctx))
	}
}

func TestResultsLeavesZeroForRefused(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	r, _ := crew.NewResults[int](context.Background(), p)
	r.Go(func(context.Context) (int, error) { return 1, nil })
	r.Go(nil) // the first error: functions given after it are skipped
	r.Go(func(context.Context) (int, error) { return 3, nil })
	vals, err := r.Wait()
	if !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("Wait error = %v, want ErrNilTask", err)
	}
	if !slices.Equal(vals, []int{1, 0, 0}) && !slices.Equal(vals, []int{0, 0, 0}) {
		t.Fatalf("vals = %v, want [1 0 0] (or [0 0 0] if the first was still queued)", vals)
	}

	p.Stop()
	r, _ = crew.NewResults[int](context.Background(), p)
	r.Go(func(context.Context) (int, error) { return 1, nil })
	vals, err = r.Wait()
	if !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Wait error on a stopped pool = %v, want ErrStopped", err)
	}
	if !slices.Equal(vals, []int{0}) {
		t.Fatalf("vals = %v, want [0]", vals)
	}
}

func TestGroupGoAllocatesOneTask(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func(context.Context) error { return nil }
	allocs := testing.AllocsPerRun(200, func() {
		g, _ := p.Group(context.Background())
		for range 100 {
			g.Go(fn)
		}
		g.Wait()
	})
	// The group itself and its context cost a few allocations; each Go at most one.
	if perGo := allocs / 100; perGo > 1.1 {
		t.Fatalf("Group.Go allocates %.2f times per call, want at most 1", perGo)
	}
}

// TestGroupGoAllocatesItsTaskOnly guards what Group.Go allocates: its task, which holds the
// function's context and claim (life.go), and nothing else.
func TestGroupGoAllocatesItsTaskOnly(t *testing.T) {
	skipMemoryUnderRace(t)
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func(context.Context) error { return nil }
	for _, c := range []struct {
		name  string
		group func(context.Context) (*crew.Group, context.Context)
		bytes float64
	}{{"Group", p.Group, 48}, {"GroupAll", p.GroupAll, 64}} {
		perGo := bytesPerCall(func(n int) {
			for n > 0 {
				// A group per 4096 calls: a short queue, whose segments are reused, and
				// the group's own allocations spread thin.
				g, _ := c.group(context.Background())
				for range min(n, 4096) {
					g.Go(fn)
				}
				g.Wait()
				n -= 4096
			}
		})
		if perGo > c.bytes+0.5 {
			t.Errorf("%s: Go allocates %.2f bytes per call, want %.0f", c.name, perGo, c.bytes)
		}
	}
}

func TestGoOnFullNonBlockingQueueReportsErrQueueFull(t *testing.T) {
	t.Parallel()
	for _, c := range goCalls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, free := fullBoundedQueue(t, crew.WithNonBlocking())
			var ran atomic.Bool
			wait := c.start(p, func() { ran.Store(true) })
			// The function was refused, so Wait has nothing to wait for, even with the
			// worker still busy.
			if err := returnsWithin(t, "Wait", wait); !errors.Is(err, crew.ErrQueueFull) {
				t.Fatalf("Wait = %v, want ErrQueueFull", err)
			}
			free()
			p.StopAndWait()
			if ran.Load() {
				t.Fatal("the refused function ran")
			}
			if s := p.Stats(); s.Rejected != 1 || s.Completed != 2 {
				t.Fatalf("Stats = %+v, want 1 rejected and the 2 queue fillers completed", s)
			}
		})
	}
}

func TestGroupGoNilFunctionFailsWithErrNilTask(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	g, ctx := p.Group(context.Background())
	g.Go(nil)
	// ErrNilTask is the group's first error: it cancels the context at once, and a later
	// error does not replace it.
	if cause := context.Cause(ctx); !errors.Is(cause, crew.ErrNilTask) {
		t.Fatalf("context.Cause after Go(nil) = %v, want ErrNilTask", cause)
	}
	g.Go(func(context.Context) error { return errors.New("later") })
	if err := g.Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("Wait = %v, want ErrNilTask", err)
	}
}

func TestResultsPanicBecomesPanicError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	r, _ := crew.NewResults[int](context.Background(), p)
	r.Go(func(context.Context) (int, error) { return 1, nil })
	r.Go(resultsPanics)
	vals, err := r.Wait()
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Value != "results boom" {
		t.Fatalf("Wait error = %v, want a *PanicError with the panic value", err)
	}
	if !strings.Contains(string(pe.Stack), "resultsPanics") {
		t.Fatalf("PanicError.Stack lacks the panicking frame:\n%s", pe.Stack)
	}
	if !slices.Equal(vals, []int{1, 0}) {
		t.Fatalf("vals = %v, want [1 0]", vals)
	}
}

func resultsPanics(context.Context) (int, error) { panic("results boom") }

// TestGroupResultsMapAndForEachPanicsNeverReachPanicHandler: a panic in a function run through
// Go, Group, Results, Map or ForEach goes to its caller as a *PanicError, never to the pool's
// panic handler; a plain task's panic, on the same pool, does reach it.
func TestGroupResultsMapAndForEachPanicsNeverReachPanicHandler(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var handled []any
	p := crew.New(2, crew.WithPanicHandler(func(v any, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, v)
	}))
	calls := append(slices.Clone(goCalls),
		goCall{"Map", func(p *crew.Pool, fn func()) func() error {
			_, err := crew.Map(context.Background(), p, []int{1, 2}, func(context.Context, int) (int, error) {
				fn()
				return 1, nil
			})
			return func() error { return err }
		}},
		goCall{"ForEach", func(p *crew.Pool, fn func()) func() error {
			err := crew.ForEach(context.Background(), p, slices.Values([]int{1, 2}), func(context.Context, int) error {
				fn()
				return nil
			})
			return func() error { return err }
		}},
	)
	for _, c := range calls {
		err := c.start(p, func() { panic(c.name + " boom") })()
		var pe *crew.PanicError
		if !errors.As(err, &pe) || pe.Value != c.name+" boom" {
			t.Errorf("%s: Wait = %v, want a *PanicError with the panic value", c.name, err)
		}
	}
	if err := p.Submit(func() { panic("plain boom") }); err != nil {
		t.Fatal(err)
	}
	p.StopAndWait()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(handled, []any{"plain boom"}) {
		t.Fatalf("the panic handler got %v, want only the plain task's panic", handled)
	}
}

func TestGroupIsSafeForConcurrentGo(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	const callers, each = 64, 100
	g, _ := p.Group(context.Background())
	runs := make([]atomic.Int32, callers*each)
	together(callers, each, func(c, i int) {
		g.Go(func(context.Context) error { runs[c*each+i].Add(1); return nil })
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	ranOnce(t, runs)
}

// TestResultsIsSafeForConcurrentGoAndKeepsTheOrderGoTookEffect: goroutines call Go on one
// Results at once. Each goroutine's calls take effect in the order it makes them, so its values
// come back in that order, interleaved with the others'; every function runs once.
func TestResultsIsSafeForConcurrentGoAndKeepsTheOrderGoTookEffect(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	const callers, each = 64, 50
	r, _ := crew.NewResults[int](context.Background(), p)
	runs := make([]atomic.Int32, callers*each)
	together(callers, each, func(c, i int) {
		v := c*each + i + 1 // never the zero value
		r.Go(func(context.Context) (int, error) {
			runs[v-1].Add(1)
			for range v % 5 { // finish out of submission order
				runtime.Gosched()
			}
			return v, nil
		})
	})
	vals, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != callers*each {
		t.Fatalf("%d values, want %d", len(vals), callers*each)
	}
	next := make([]int, callers) // the next value each caller's subsequence must show
	for c := range next {
		next[c] = c*each + 1
	}
	for i, v := range vals {
		if v < 1 || v > callers*each {
			t.Fatalf("vals[%d] = %d, not a submitted value", i, v)
		}
		c := (v - 1) / each
		if v != next[c] {
			t.Fatalf("vals[%d] = %d, want %d: caller %d's values out of the order of its Go calls", i, v, next[c], c)
		}
		next[c]++
	}
	ranOnce(t, runs)
}

func TestGroupContextEndsWhenParentContextEnds(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	parent, cancel := context.WithCancel(context.Background())
	g, ctx := p.Group(parent)
	seen := make(chan error, 1)
	started := make(chan struct{})
	g.Go(func(ctx context.Context) error {
		close(started)
		select {
		case <-ctx.Done(): // only the parent can end it: Wait is not called until this returns
			seen <- ctx.Err()
		case <-time.After(10 * time.Second):
			seen <- errors.New("still live 10s after the parent ended")
		}
		return nil
	})
	<-started // a function still queued would be skipped
	cancel()
	if err := <-seen; !errors.Is(err, context.Canceled) {
		t.Fatalf("the function saw ctx.Err() = %v, want context.Canceled", err)
	}
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("group context Err = %v, want context.Canceled", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Wait = %v, want nil: no function failed", err)
	}
}

func TestGroupFailureLeavesOtherGroupsContextLive(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	failing, _ := p.Group(context.Background())
	other, otherCtx := p.Group(context.Background())
	release := make(chan struct{})
	seen := make(chan error, 1)
	other.Go(func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		seen <- ctx.Err()
		return nil
	})
	boom := errors.New("boom")
	failing.Go(func(context.Context) error { return boom })
	if err := failing.Wait(); !errors.Is(err, boom) {
		t.Fatalf("failing group's Wait = %v, want boom", err)
	}
	if err := otherCtx.Err(); err != nil {
		t.Fatalf("the other group's context ended (%v) when the first group failed", err)
	}
	close(release)
	if err := <-seen; err != nil {
		t.Fatalf("the other group's running function saw ctx.Err() = %v, want nil", err)
	}
	if err := other.Wait(); err != nil {
		t.Fatalf("the other group's Wait = %v, want nil", err)
	}
}

// TestGroupGoConcurrentWithWaitIsSafe proves that a Group is safe for concurrent use with Go
// (and TryGo) and Wait called at once from many goroutines, as [crew.Group.Wait] says: no data
// race, no panic, every function runs once, and each Wait returns only when the function whose
// Go its caller made before it has returned. The functions are short, so the count of functions
// running drops to zero and rises again while other goroutines wait.
// TestGroupGoConcurrentWithWaitIsSafe proves that Go, TryGo and Wait may be called at once:
// each function runs at most once, a Wait returns only once the functions given before it
// have run or been skipped (a Wait cancels the group's context, so a function still queued
// when another caller's Wait returned is skipped), and every function is accounted for.
func TestGroupGoConcurrentWithWaitIsSafe(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	const callers, each = 16, 200
	g, _ := p.Group(context.Background())
	runs := make([]atomic.Int32, callers*each)
	seen := make([]int32, callers*each) // runs after the caller's Wait returned
	together(callers, each, func(c, i int) {
		n := &runs[c*each+i]
		fn := func(context.Context) error { n.Add(1); return nil }
		if i%2 == 0 {
			g.Go(fn)
		} else if !g.TryGo(fn) {
			t.Errorf("TryGo on an unbounded pool = false")
		}
		if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v, want nil or context.Canceled (a skipped function)", err)
		}
		seen[c*each+i] = n.Load()
	})
	g.Wait()
	p.Wait()
	ran := 0
	for i := range runs {
		n := runs[i].Load()
		if n > 1 || n != seen[i] {
			t.Fatalf("function %d ran %d times, %d by the time its caller's Wait returned", i, n, seen[i])
		}
		ran += int(n)
	}
	if s := p.Stats(); uint64(ran)+s.Skipped != callers*each {
		t.Fatalf("%d ran and %d were skipped, want %d in all", ran, s.Skipped, callers*each)
	}
}

// TestResultsGoConcurrentWithWaitIsSafe proves that a Results is safe for concurrent use with
// Go and Wait called at once, as [crew.Results.Wait] says: each Wait returns the values of
// the functions whose Go took effect before it, in order, every one of them finished (never
// the zero value of one still running, but the zero value of one skipped because an earlier
// Wait canceled the context), and the last Wait returns them all.
func TestResultsGoConcurrentWithWaitIsSafe(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	const callers, each = 16, 50
	for range 20 {
		r, _ := crew.NewResults[int](context.Background(), p)
		var goes atomic.Int64 // Go calls that have returned
		var mu sync.Mutex     // orders the Go calls so that value v is the v-th
		next := 0
		ran := make([]atomic.Bool, callers/2*each+1)
		together(callers, each, func(c, i int) {
			if c%2 == 1 {
				before := goes.Load()
				vals, err := r.Wait()
				if (err != nil && !errors.Is(err, context.Canceled)) || int64(len(vals)) < before {
					t.Errorf("Wait = %d values, %v; want at least %d", len(vals), err, before)
				}
				for j, v := range vals {
					if v != j+1 && (v != 0 || ran[j+1].Load()) {
						t.Errorf("Wait: vals[%d] = %d, want %d", j, v, j+1)
						return
					}
				}
				return
			}
			mu.Lock()
			next++
			v := next
			r.Go(func(context.Context) (int, error) { ran[v].Store(true); runtime.Gosched(); return v, nil })
			mu.Unlock()
			goes.Add(1)
		})
		vals, err := r.Wait()
		if (err != nil && !errors.Is(err, context.Canceled)) || len(vals) != callers/2*each {
			t.Fatalf("the last Wait = %d values, %v; want %d", len(vals), err, callers/2*each)
		}
		for j, v := range vals {
			if v != j+1 && (v != 0 || ran[j+1].Load()) {
				t.Fatalf("vals[%d] = %d, want %d (or 0 if skipped)", j, v, j+1)
			}
		}
	}
}
