//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/crewgo/crew"
)

// These tests wait for "nothing happened" inside a testing/synctest bubble: see
// pool_synctest_test.go.

func TestGroupWaitReturnsFirstErrorAfterAllTasksFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(4)
		defer p.StopAndWait()
		g, _ := p.Group(context.Background())
		first := errors.New("first")
		release := make(chan struct{})
		var finished atomic.Int32
		for range 3 {
			g.Go(func(context.Context) error {
				<-release // still running when the first error is recorded
				finished.Add(1)
				return errors.New("later")
			})
		}
		synctest.Wait() // they have started: a function still queued at the error is skipped
		g.Go(func(context.Context) error { return first })
		done := make(chan error)
		go func() { done <- g.Wait() }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned %v while tasks were running", err)
		default:
		}
		close(release)
		if err := <-done; !errors.Is(err, first) {
			t.Fatalf("Wait = %v, want the first error", err)
		}
		if finished.Load() != 3 {
			t.Fatalf("Wait returned with %d of 3 tasks finished", finished.Load())
		}
	})
}

// TestGroupGoAfterWaitIsSkipped proves [crew.Group.Go]'s "Go after Wait has returned skips
// fn, the group's context being canceled; a later Wait returns its cause", with several Waits
// at once.
func TestGroupGoAfterWaitIsSkipped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(2)
		defer p.StopAndWait()
		g, ctx := p.Group(context.Background())
		release := make(chan struct{})
		var finished atomic.Bool
		g.Go(func(context.Context) error { <-release; finished.Store(true); return nil })
		waits := make([]<-chan struct{}, 3)
		for i := range waits {
			waits[i] = goRun(func() {
				if err := g.Wait(); err != nil {
					t.Errorf("Wait = %v", err)
				}
				if !finished.Load() {
					t.Error("Wait returned before the function did")
				}
			})
		}
		blockedForGood(t, "Wait", waits[0])
		close(release)
		for _, w := range waits {
			awaitReturn(t, "Wait", w)
		}
		if ctx.Err() == nil {
			t.Fatal("the group's context is live after Wait returned")
		}
		for range 3 {
			g.Go(func(context.Context) error { t.Error("a function given after Wait ran"); return nil })
		}
		if err := g.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after skipped functions = %v, want context.Canceled", err)
		}
		p.Wait()
		if s := p.Stats(); s.Skipped != 3 || s.Completed != 1 {
			t.Fatalf("Stats = %+v, want 1 completed and 3 skipped", s)
		}
	})
}

func TestGoBlocksOnlyWhileBoundedQueueIsFull(t *testing.T) {
	t.Parallel()
	for _, c := range goCalls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				p, free := fullBoundedQueue(t)
				var ran atomic.Int32
				var roomMade atomic.Bool
				waits := make(chan func() error, 1)
				go func() {
					wait := c.start(p, func() { ran.Add(1) })
					if !roomMade.Load() {
						t.Errorf("%s returned while the queue was full", c.name)
					}
					waits <- wait
				}()
				synctest.Wait() // the call has blocked, for good
				select {
				case <-waits:
					t.Fatalf("%s returned while the queue was full", c.name)
				default:
				}
				roomMade.Store(true)
				free()
				if err := (<-waits)(); err != nil {
					t.Fatalf("Wait = %v, want nil: the blocked call is accepted once room frees up", err)
				}
				if n := ran.Load(); n != 1 {
					t.Fatalf("the function ran %d times, want 1", n)
				}
			})
		})
	}
}
