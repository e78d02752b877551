package crew_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

func TestGroupTryGoRunsAnAcceptedFunctionAsGoDoes(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, ctx := p.Group(context.Background())
	boom := errors.New("boom")
	var ran atomic.Int32
	if !g.TryGo(func(context.Context) error { ran.Add(1); return nil }) {
		t.Fatal("TryGo on an unbounded queue = false")
	}
	if !g.TryGo(func(context.Context) error { ran.Add(1); return boom }) {
		t.Fatal("TryGo on an unbounded queue = false")
	}
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want the accepted function's error", err)
	}
	if context.Cause(ctx) != boom || ran.Load() != 2 {
		t.Fatalf("context.Cause = %v and %d functions ran, want boom and 2", context.Cause(ctx), ran.Load())
	}
}

// TestGroupTryGoRefusalIsNotTheGroupsError: a full queue, a stopped pool and a nil function
// make TryGo return false at once; the function never runs, the context stays live and Wait
// returns nil, for both kinds of group.
func TestGroupTryGoRefusalIsNotTheGroupsError(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"Group", "GroupAll"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			full, free := fullBoundedQueue(t) // blocking: Go would wait here
			stopped := crew.New(1)
			stopped.Stop()
			for _, p := range []*crew.Pool{full, stopped} {
				g, ctx := p.Group(context.Background())
				if kind == "GroupAll" {
					g, ctx = p.GroupAll(context.Background())
				}
				var ran atomic.Bool
				if returnsWithin(t, "TryGo on a full queue", func() error {
					if g.TryGo(func(context.Context) error { ran.Store(true); return nil }) {
						return errors.New("accepted")
					}
					return nil
				}) != nil {
					t.Fatal("TryGo accepted a function its pool refused")
				}
				if g.TryGo(nil) {
					t.Fatal("TryGo(nil) = true")
				}
				if ctx.Err() != nil {
					t.Fatalf("a refusal canceled the group's context: %v", context.Cause(ctx))
				}
				if err := g.Wait(); err != nil {
					t.Fatalf("Wait = %v, want nil: refusals are not the group's error", err)
				}
				free()
				if ran.Load() {
					t.Fatal("the refused function ran")
				}
			}
		})
	}
}

// TestGroupTryGoFromAFunctionOnItsOwnFullPoolNeverBlocks: the functions of a group fill the
// one worker and the queue of their pool and each adds more work with TryGo, running it itself
// when refused; with Go they would wait for room that only they could make.
func TestGroupTryGoFromAFunctionOnItsOwnFullPoolNeverBlocks(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	var inline, queued atomic.Int32
	var spawn func(depth int) func(context.Context) error
	spawn = func(depth int) func(context.Context) error {
		return func(ctx context.Context) error {
			if depth == 0 {
				return nil
			}
			for range 3 {
				child := spawn(depth - 1)
				if g.TryGo(child) {
					queued.Add(1)
					continue
				}
				inline.Add(1)
				if err := child(ctx); err != nil {
					return err
				}
			}
			return nil
		}
	}
	g.Go(spawn(4))
	if err := returnsWithin(t, "Wait of a group whose functions add work to their full pool", g.Wait); err != nil {
		t.Fatal(err)
	}
	if inline.Load()+queued.Load() != 3+9+27+81 || inline.Load() == 0 {
		t.Fatalf("%d functions run inline and %d queued, want 120 in all, some inline", inline.Load(), queued.Load())
	}
}

func TestGroupAllRunsEveryFunctionAndJoinsErrorsInSubmissionOrder(t *testing.T) {
	t.Parallel()
	const n = 8
	p := crew.New(n)
	defer p.StopAndWait()
	g, ctx := p.GroupAll(context.Background())
	errs := make([]error, n)
	done := make([]chan struct{}, n+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[n])
	var liveAfterErrors atomic.Int32
	for i := range n {
		errs[i] = fmt.Errorf("error %d", i)
		g.Go(func(ctx context.Context) error {
			// The functions fail last submitted first; each sees the context live.
			defer close(done[i])
			if err := within(done[i+1], "the function submitted after this one"); err != nil {
				return err
			}
			if ctx.Err() == nil {
				liveAfterErrors.Add(1)
			}
			if i%2 == 1 {
				return nil
			}
			return errs[i]
		})
	}
	err := g.Wait()
	want := errors.Join(errs[0], errs[2], errs[4], errs[6])
	if err == nil || err.Error() != want.Error() {
		t.Fatalf("Wait = %q, want %q", err, want)
	}
	for i := 0; i < n; i += 2 {
		if !errors.Is(err, errs[i]) {
			t.Fatalf("Wait's error does not match %v", errs[i])
		}
	}
	if liveAfterErrors.Load() != n {
		t.Fatalf("%d of %d functions saw the context live after others failed", liveAfterErrors.Load(), n)
	}
	if ctx.Err() == nil {
		t.Fatal("the group's context is live after Wait")
	}
}

// TestGroupAllJoinsPanicsNilFunctionsAndRefusalsInOrder: a panic, a nil function, an error
// and a refusal of a stopped pool each take their Go call's place.
func TestGroupAllJoinsPanicsNilFunctionsAndRefusalsInOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.GroupAll(context.Background())
	boom := errors.New("boom")
	g.Go(func(context.Context) error { panic("all boom") })
	g.Go(nil)
	g.Go(func(context.Context) error { return nil })
	g.Go(func(context.Context) error { return boom })
	p.Wait()
	p.Stop()
	g.Go(func(context.Context) error { t.Error("ran on a stopped pool"); return nil })
	err := g.Wait()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Wait = %v, want errors.Join of the errors", err)
	}
	got := joined.Unwrap()
	var pe *crew.PanicError
	if len(got) != 4 || !errors.As(got[0], &pe) || pe.Value != "all boom" || got[1] != crew.ErrNilTask ||
		got[2] != boom || got[3] != crew.ErrStopped {
		t.Fatalf("Wait's errors = %q, want the panic, ErrNilTask, boom, ErrStopped", got)
	}
}

func TestGroupAllWaitWithoutErrorsReturnsNil(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.GroupAll(context.Background())
	for range 10 {
		g.Go(func(context.Context) error { return nil })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
}

func TestGroupAllContextEndsWhenParentContextEnds(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	parent, cancel := context.WithCancel(context.Background())
	g, ctx := p.GroupAll(parent)
	started := make(chan struct{})
	g.Go(func(ctx context.Context) error { close(started); return within(ctx.Done(), "the parent to end") })
	<-started // a function still queued would be skipped
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if ctx.Err() != context.Canceled {
		t.Fatalf("ctx.Err() = %v, want context.Canceled", ctx.Err())
	}
}

// TestGroupAllIsSafeForConcurrentGoAndKeepsTheOrderGoTookEffect: each goroutine's errors come
// back in the order it made its Go calls, and every function runs once.
func TestGroupAllIsSafeForConcurrentGoAndKeepsTheOrderGoTookEffect(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	const callers, each = 16, 50
	g, _ := p.GroupAll(context.Background())
	runs := make([]atomic.Int32, callers*each)
	together(callers, each, func(c, i int) {
		g.Go(func(context.Context) error {
			runs[c*each+i].Add(1)
			return fmt.Errorf("%d/%d", c, i)
		})
	})
	err := g.Wait()
	ranOnce(t, runs)
	next := make([]int, callers)
	lines := strings.Split(err.Error(), "\n")
	for _, line := range lines {
		var c, i int
		if _, err := fmt.Sscanf(line, "%d/%d", &c, &i); err != nil {
			t.Fatalf("error %q: %v", line, err)
		}
		if i != next[c] {
			t.Fatalf("caller %d's error %d came where its error %d was due", c, i, next[c])
		}
		next[c]++
	}
	if len(lines) != callers*each {
		t.Fatalf("%d errors, want %d", len(lines), callers*each)
	}
}
