package crew_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// highWater tracks how many calls run at once.
type highWater struct{ running, high atomic.Int32 }

func (h *highWater) enter() {
	r := h.running.Add(1)
	for m := h.high.Load(); r > m && !h.high.CompareAndSwap(m, r); m = h.high.Load() {
	}
}

func (h *highWater) exit() { h.running.Add(-1) }

func TestGroupWaitReturnsFirstErrorAfterAllTasksFinish(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	first := errors.New("first")
	release := make(chan struct{})
	var finished atomic.Int32
	g.Go(func(context.Context) error { return first })
	for range 3 {
		g.Go(func(context.Context) error {
			<-release // still running when the first error is recorded
			finished.Add(1)
			return errors.New("later")
		})
	}
	done := make(chan error)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v while tasks were running", err)
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	if err := <-done; !errors.Is(err, first) {
		t.Fatalf("Wait = %v, want the first error", err)
	}
	if finished.Load() != 3 {
		t.Fatalf("Wait returned with %d of 3 tasks finished", finished.Load())
	}
}

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

func TestGroupRunsQueuedTasksWithCanceledContext(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	release := make(chan struct{})
	g.Go(func(context.Context) error { <-release; return errors.New("fail") })
	var sawCanceled atomic.Int32
	for range 5 { // queued behind the failing task
		g.Go(func(ctx context.Context) error {
			if ctx.Err() != nil {
				sawCanceled.Add(1)
			}
			return nil
		})
	}
	close(release)
	g.Wait()
	if sawCanceled.Load() != 5 {
		t.Fatalf("%d of 5 queued tasks ran and saw the canceled context", sawCanceled.Load())
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

func TestGroupSecondWaitReturnsSameErrorAndGoAfterWaitRuns(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	boom := errors.New("boom")
	g.Go(func(context.Context) error { return boom })
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v", err)
	}
	var sawCanceled atomic.Bool
	g.Go(func(ctx context.Context) error { sawCanceled.Store(ctx.Err() != nil); return nil })
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("second Wait = %v, want the same first error", err)
	}
	if !sawCanceled.Load() {
		t.Fatal("a function started after Wait did not run with the canceled context")
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
	r, _ := crew.NewResults[int](p, context.Background())
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
	var ran atomic.Int32
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
	if ran.Load() != groups*each {
		t.Fatalf("%d of %d tasks ran", ran.Load(), groups*each)
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
	r, _ := crew.NewResults[int](p, context.Background())
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
	r, ctx := crew.NewResults[string](p, context.Background())
	boom := errors.New("boom")
	var causeSeen error
	r.Go(func(context.Context) (string, error) { return "a", nil })
	r.Go(func(context.Context) (string, error) { return "failed", boom })
	r.Go(func(ctx context.Context) (string, error) {
		// The shared context ends at the first error, before Wait.
		causeSeen = context.Cause(ctx)
		return "canceled", ctx.Err()
	})
	r.Go(func(context.Context) (string, error) { panic("panicked") })
	r.Go(func(context.Context) (string, error) { return "e", nil })
	vals, err := r.Wait()
	if !errors.Is(err, boom) {
		t.Fatalf("Wait error = %v, want boom", err)
	}
	if !errors.Is(causeSeen, boom) {
		t.Fatalf("a function started after the error saw cause %v, want boom", causeSeen)
	}
	want := []string{"a", "", "", "", "e"}
	if !slices.Equal(vals, want) {
		t.Fatalf("vals = %q, want %q", vals, want)
	}
	if ctx.Err() == nil {
		t.Fatal("context not canceled")
	}
}

func TestResultsLeavesZeroForRefused(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	r, _ := crew.NewResults[int](p, context.Background())
	r.Go(nil)
	r.Go(func(context.Context) (int, error) { return 2, nil })
	vals, err := r.Wait()
	if !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("Wait error = %v, want ErrNilTask", err)
	}
	if !slices.Equal(vals, []int{0, 2}) {
		t.Fatalf("vals = %v, want [0 2]", vals)
	}

	p.Stop()
	r, _ = crew.NewResults[int](p, context.Background())
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
