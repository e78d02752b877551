//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// The tests here wait for "nothing happened" or for a timeout inside a testing/synctest
// bubble: synctest.Wait returns once every goroutine of the bubble is durably blocked, so a
// call that should block is seen blocked for good, and the bubble's fake clock runs the
// timeouts at once.

// TestQueueSizeBoundsWaitingTasks: with every worker busy and the queue full, TrySubmit and
// TryInvoke return false, and Submit and Invoke block until a task starts and makes room.
func TestQueueSizeBoundsWaitingTasks(t *testing.T) {
	t.Parallel()
	const workers, queued = 2, 3
	forEachKindInBubble(t, workers, []crew.Option{crew.WithQueueSize(queued)}, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, workers, queued)
		var ran atomic.Int32
		task := func() { ran.Add(1) }
		if p.try(task) {
			t.Fatal("try accepted the queue size + 1-th waiting task")
		}
		if s := p.Stats(); s.Waiting != queued || s.Running != workers || s.Rejected != 1 {
			t.Fatalf("Stats = %+v, want %d waiting, %d running, 1 rejected", s, queued, workers)
		}

		// A blocking submit waits for room and is accepted once a task starts.
		var err error
		accepted := goRun(func() { err = p.submit(task) })
		blockedForGood(t, "submit on a full queue", accepted)
		release()
		awaitReturn(t, "submit after room was made", accepted)
		if err != nil {
			t.Fatalf("submit after room was made: %v", err)
		}
		p.StopAndWait()
		if s := p.Stats(); s.Completed != workers+queued+1 || ran.Load() != 1 {
			t.Fatalf("Stats = %+v and %d of 1 blocked task ran, want %d completed",
				s, ran.Load(), workers+queued+1)
		}
	})
}

// TestWaitWaitsForTasksAcceptedWhileItWaits: a task submitted, by a running task, after Wait
// was called holds Wait up until it has finished too.
func TestWaitWaitsForTasksAcceptedWhileItWaits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(2)
		defer p.StopAndWait()
		waiting := make(chan struct{})
		hold := make(chan struct{})
		release := sync.OnceFunc(func() { close(hold) })
		defer release() // before StopAndWait, should the test fail with the task held
		var late atomic.Bool
		if err := p.Submit(func() {
			<-waiting
			if err := p.Submit(func() { <-hold; late.Store(true) }); err != nil {
				t.Error(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		waited := goRun(func() {
			close(waiting)
			p.Wait()
		})
		blockedForGood(t, "Wait with a task accepted while it waits held", waited)
		release()
		awaitReturn(t, "Wait", waited)
		if !late.Load() {
			t.Fatal("Wait returned before the task accepted while it waited had finished")
		}
	})
}

// TestBlockingSubmitFromTaskIntoItsOwnFullQueueWaitsForAWorker: a task's Submit into its own
// pool's full queue is treated like any other: it blocks, takes no room beyond the bound, and
// is accepted when another worker makes room; when the task holds the only worker, no worker
// ever does, and only the context of a SubmitContext ends the wait.
func TestBlockingSubmitFromTaskIntoItsOwnFullQueueWaitsForAWorker(t *testing.T) {
	t.Parallel()
	t.Run("another worker makes room", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := crew.New(2, crew.WithQueueSize(1))
			release := holdWorkers(t, plainPool{p}, 1, 0)
			var ran atomic.Int32
			count := func() { ran.Add(1) }
			full := make(chan struct{})
			submitted := make(chan struct{})
			var inner error
			if err := p.Submit(func() {
				<-full
				inner = p.Submit(count)
				close(submitted)
			}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the task has begun and waits for full
			if s := p.Stats(); s.Running != 2 {
				t.Fatalf("Stats = %+v, want the submitting task on the second worker", s)
			}
			if err := p.Submit(count); err != nil { // takes the queue's one slot
				t.Fatal(err)
			}
			close(full)
			blockedForGood(t, "Submit from a task into its own full queue", submitted)
			if s := p.Stats(); s.Waiting != 1 || s.Running != 2 || s.Rejected != 0 {
				t.Fatalf("Stats with the task's Submit blocked = %+v, want 1 waiting, 2 running, none rejected", s)
			}
			release()
			awaitReturn(t, "Submit from a task once a worker made room", submitted)
			if inner != nil {
				t.Fatalf("Submit from a task once a worker made room = %v", inner)
			}
			p.StopAndWait()
			if got := ran.Load(); got != 2 {
				t.Fatalf("%d of 2 tasks ran", got)
			}
		})
	})
	t.Run("the task holds the only worker", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := crew.New(1, crew.WithQueueSize(1))
			var ran atomic.Int32
			count := func() { ran.Add(1) }
			var first, second error
			done := make(chan struct{})
			if err := p.Submit(func() {
				defer close(done)
				first = p.Submit(count) // takes the queue's one slot
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				second = p.SubmitContext(ctx, count)
			}); err != nil {
				t.Fatal(err)
			}
			awaitReturn(t, "the submitting task", done)
			if first != nil || !errors.Is(second, context.DeadlineExceeded) {
				t.Fatalf("Submit, SubmitContext from the only worker's task = %v, %v; want nil, context.DeadlineExceeded",
					first, second)
			}
			p.StopAndWait()
			if s := p.Stats(); ran.Load() != 1 || s.Canceled != 1 {
				t.Fatalf("%d tasks ran, stats %+v; want the 1 accepted one, 1 canceled", ran.Load(), s)
			}
		})
	})
}

// TestIdleWorkersExitAfterIdleTimeout: the pool's own reaper, on the bubble's clock, dismisses
// workers idle for the 1 ms WithIdleTimeout sets, once 1 ms has passed and not before, so a
// pool that ignored the option fails it.
func TestIdleWorkersExitAfterIdleTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(4, crew.WithIdleTimeout(time.Millisecond))
		defer p.StopAndWait()
		holdWorkers(t, plainPool{p}, 4, 0)()
		p.Wait()
		synctest.Wait()
		if s := p.Stats(); s.Idle != 4 || s.Running != 0 {
			t.Fatalf("Stats before the idle timeout = %+v, want 4 idle workers", s)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if s := p.Stats(); s.Idle != 0 || s.Running != 0 {
			t.Fatalf("Stats after the idle timeout = %+v, want no worker left", s)
		}
	})
}
