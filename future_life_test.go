package crew_test

import (
	"context"
	"errors"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// TestCanceledFuturesCompleteInCompleted: a range over Completed yields a canceled future as
// it does a finished one, with Wait returning context.Canceled, and Done and Wait from many
// goroutines all see the cancel.
func TestCanceledFuturesCompleteInCompleted(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	task, began, release := blocker()
	must(t, p.Submit(task))
	<-began
	fs := make([]*crew.Future[int], 6)
	for i := range fs {
		fs[i] = crew.Go(p, func() (int, error) { return i, nil })
	}
	var wg sync.WaitGroup
	var seen atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-fs[1].Done()
			if _, err := fs[1].Wait(); errors.Is(err, context.Canceled) {
				seen.Add(1)
			}
		}()
	}
	canceled := map[*crew.Future[int]]bool{}
	yielded := 0
	next := crew.Completed(fs...)
	done := goRun(func() {
		for f := range next {
			yielded++
			if _, err := f.Wait(); errors.Is(err, context.Canceled) {
				canceled[f] = true
			}
		}
	})
	if !fs[1].Cancel() || !fs[3].Cancel() {
		t.Fatal("Cancel of a queued future = false")
	}
	close(release)
	awaitReturn(t, "the range over Completed", done)
	wg.Wait()
	if seen.Load() != 8 {
		t.Fatalf("%d of 8 waiters saw the cancel", seen.Load())
	}
	if yielded != 6 || len(canceled) != 2 || !canceled[fs[1]] || !canceled[fs[3]] {
		t.Fatalf("Completed yielded %d futures, %d of them canceled; want 6, fs[1] and fs[3] canceled", yielded, len(canceled))
	}
}

// TestGoContextRunsUnderItsContextsLabelsAndContextHook: a GoContext function runs under the
// pprof labels of its context and is seen by the Context hook, which a skipped one never is.
func TestGoContextRunsUnderItsContextsLabelsAndContextHook(t *testing.T) {
	t.Parallel()
	var entered, ended atomic.Int32
	p := crew.New(1, crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
		entered.Add(1)
		return ctx, func(error) { ended.Add(1) }
	}}))
	defer p.StopAndWait()
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("req", "a"))
	f := crew.GoContext(ctx, p, func(context.Context) (string, error) { return labelsHere(), nil })
	if got, err := f.Wait(); err != nil || got != reqA {
		t.Fatalf("labels in the function = %q, %v; want %s", got, err, reqA)
	}
	task, began, release := blocker()
	must(t, p.Submit(task))
	<-began
	gone, cancel := context.WithCancel(ctx)
	skipped := crew.GoContext(gone, p, func(context.Context) (string, error) { return "ran", nil })
	cancel()
	close(release)
	if _, err := skipped.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want the skip's context.Canceled", err)
	}
	p.Wait()
	if entered.Load() != 1 || ended.Load() != 1 {
		t.Fatalf("the Context hook saw %d functions begin and %d end, want 1 and 1", entered.Load(), ended.Load())
	}
}
