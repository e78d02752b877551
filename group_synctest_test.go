//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"fmt"
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

// TestGroupGoAfterWaitIsWaitedForByTheNextWait proves [crew.Group.Go]'s "Go after Wait has
// returned still runs fn, with the canceled context; a later Wait waits for it", over several
// rounds of one group, with several Waits each round.
func TestGroupGoAfterWaitIsWaitedForByTheNextWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(2)
		defer p.StopAndWait()
		g, ctx := p.Group(context.Background())
		for round := range 5 {
			release := make(chan struct{})
			var finished atomic.Bool
			g.Go(func(fctx context.Context) error {
				<-release
				if round > 0 && fctx.Err() == nil {
					t.Error("a function started after Wait sees a live context")
				}
				finished.Store(true)
				return nil
			})
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
			blockedForGood(t, fmt.Sprintf("round %d: Wait", round), waits[0])
			close(release)
			for _, w := range waits {
				awaitReturn(t, fmt.Sprintf("round %d: Wait", round), w)
			}
			if ctx.Err() == nil {
				t.Fatal("the group's context is live after Wait returned")
			}
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
