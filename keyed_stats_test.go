package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// The counters of a Keyed count its tasks, whatever turns they took on the pool's workers.
func ExampleKeyed_Stats() {
	p := crew.New(2)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	for i := range 100 {
		_ = k.Submit([]string{"alice", "bob"}[i%2], func() {})
	}
	k.Wait()
	s := k.Stats()
	fmt.Println(s.Accepted, s.Completed, s.Waiting, s.Running)
	// Output: 100 100 0 0
}

// TestKeyedStatsCountKeyedTasksNotTurns proves Keyed.Stats' "each keyed task counted once,
// whatever turns it took": 100 tasks of 2 keys, which run in turns of a few tasks each, count
// 100 accepted (the pool used to count 14, one per turn, and there was no Keyed.Stats); a
// task that panics counts as panicked and one that calls runtime.Goexit as completed.
func TestKeyedStatsCountKeyedTasksNotTurns(t *testing.T) {
	t.Parallel()
	p := crew.New(2, crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	const n = 100
	for i := range n {
		task := func() {}
		switch i % 10 {
		case 3:
			task = panicsWithBoom
		case 7:
			task = runtime.Goexit
		}
		must(t, k.Submit(i%2, task))
	}
	k.Wait()
	s := k.Stats()
	if s.Accepted != n || s.Completed != n-n/10 || s.Panicked != n/10 {
		t.Fatalf("Keyed.Stats %+v, want %d accepted, %d completed and %d panicked", s, n, n-n/10, n/10)
	}
	idleIdentity(t, "Keyed.Stats", s)
	// The pool counts turns (see Keyed): fewer than the tasks, each ended as completed. A
	// turn ends after its last task, so the pool is idle once its own Wait returns.
	p.Wait()
	ps := p.Stats()
	if ps.Accepted == 0 || ps.Accepted > n || ps.Panicked != 0 {
		t.Fatalf("pool Stats %+v, want between 1 and %d turns accepted, none panicked", ps, n)
	}
	idleIdentity(t, "the pool's Stats", ps)
}

// TestKeyedStatsShowRunningAndWaitingTasks: while a key's task runs, Keyed.Stats count it in
// Running and the tasks behind it, of its key and of keys waiting for a worker, in Waiting.
func TestKeyedStatsShowRunningAndWaitingTasks(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	task, started, release := blocker()
	must(t, k.Submit(0, task))
	<-started
	for i := range 6 {
		must(t, k.Submit(i%3, func() {}))
	}
	if s := k.Stats(); s.Running != 1 || s.Waiting != 6 || s.Accepted != 7 || s.MaxWorkers != 1 {
		t.Fatalf("Keyed.Stats %+v, want 1 running, 6 waiting, 7 accepted, MaxWorkers 1", s)
	}
	close(release)
	k.Wait()
	idleIdentity(t, "Keyed.Stats", k.Stats())
}

// TestKeyedStatsCountReturnedAndDiscardedTasks proves Keyed.Stats' Returned and Discarded:
// the keyed tasks StopNow hands back count as returned, and those DiscardOldest drops with
// their key's turn as discarded, each once, and the accounting identity holds.
func TestKeyedStatsCountReturnedAndDiscardedTasks(t *testing.T) {
	t.Parallel()
	t.Run("StopNow", func(t *testing.T) {
		t.Parallel()
		p := crew.New(1)
		k := crew.NewKeyed[int](p)
		task, started, release := blocker()
		must(t, p.Submit(task))
		<-started
		for i := range 9 {
			must(t, k.Submit(i%3, func() { t.Error("a task StopNow returned ran") }))
		}
		back := p.StopNow()
		close(release)
		p.StopAndWait()
		s := k.Stats()
		if len(back) != 9 || s.Returned != 9 {
			t.Fatalf("StopNow returned %d tasks; Keyed.Stats %+v; want 9 returned", len(back), s)
		}
		idleIdentity(t, "Keyed.Stats", s)
		idleIdentity(t, "the pool's Stats", p.Stats())
	})
	t.Run("DiscardOldest", func(t *testing.T) {
		t.Parallel()
		var dropped, discardHooks atomic.Int32
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
			crew.WithDiscardHandler(func(any) { dropped.Add(1) }),
			crew.WithHooks(crew.Hooks{Discarded: func(crew.TaskInfo) { discardHooks.Add(1) }}))
		defer p.StopAndWait()
		k := crew.NewKeyed[int](p)
		task, started, release := blocker()
		must(t, p.Submit(task))
		<-started
		for range 4 { // one key: one turn in the pool's one queue slot
			must(t, k.Submit(1, func() { t.Error("a dropped task ran") }))
		}
		must(t, p.Submit(func() {})) // drops the key's turn, with its 4 tasks
		close(release)
		p.Wait()
		s := k.Stats()
		if s.Discarded != 4 || dropped.Load() != 4 || discardHooks.Load() != 4 {
			t.Fatalf("Keyed.Stats %+v, %d tasks to the discard handler, %d Discarded hooks; want 4 of each",
				s, dropped.Load(), discardHooks.Load())
		}
		idleIdentity(t, "Keyed.Stats", s)
	})
}

// TestKeyedStatsCountRejectedAndCanceledSubmits: a submit refused by the Keyed's full
// non-blocking queue counts in Rejected, one whose context had ended in Canceled; neither is
// accepted.
func TestKeyedStatsCountRejectedAndCanceledSubmits(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p, crew.WithQueueSize(1), crew.WithNonBlocking())
	task, started, release := blocker()
	must(t, k.Submit(0, task))
	<-started
	must(t, k.Submit(1, func() {}))
	if err := k.Submit(2, func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Submit on a full queue = %v, want ErrQueueFull", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.SubmitContext(ctx, 3, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with an ended context = %v, want context.Canceled", err)
	}
	close(release)
	k.Wait()
	s := k.Stats()
	if s.Rejected != 1 || s.Canceled != 1 || s.Accepted != 2 {
		t.Fatalf("Keyed.Stats %+v, want 1 rejected, 1 canceled, 2 accepted", s)
	}
	idleIdentity(t, "Keyed.Stats", s)
}

// TestKeyedTasksAreRecordedOnceInThePoolsHistograms proves the Keyed doc's "the pool's latency
// histograms see each keyed task, not its turn".
func TestKeyedTasksAreRecordedOnceInThePoolsHistograms(t *testing.T) {
	t.Parallel()
	p := crew.New(2, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	const n = 40
	for i := range n {
		must(t, k.Submit(i%3, func() {}))
	}
	k.Wait()
	s := p.Stats()
	if s.WaitTime.Count != n || s.RunTime.Count != n {
		t.Fatalf("WaitTime counts %d, RunTime %d, want %d each", s.WaitTime.Count, s.RunTime.Count, n)
	}
}

// TestKeyedBlockedSubmitterGetsTheRoomADroppedTurnFrees: when DiscardOldest drops a key's
// turn, its tasks leave the Keyed's bounded queue, and a submitter blocked on it gets in.
func TestKeyedBlockedSubmitterGetsTheRoomADroppedTurnFrees(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p, crew.WithQueueSize(1))
	task, started, release := blocker()
	defer close(release)
	must(t, p.Submit(task))
	<-started
	must(t, k.Submit(1, func() {})) // its turn fills the pool's one queue slot
	blocked := goRun(func() { must(t, k.Submit(2, func() {})) })
	stillBlocked(t, "a keyed submit on a full Keyed queue", blocked)
	must(t, p.Submit(func() {})) // drops the turn of key 1
	awaitReturn(t, "the blocked keyed submit", blocked)
	if s := k.Stats(); s.Discarded != 1 || s.Accepted != 2 {
		t.Fatalf("Keyed.Stats %+v, want 1 discarded of 2 accepted", s)
	}
}

// TestKeyedTaskWhosePanicHandlerCallsGoexitCountsAsPanicked: the handler ends the turn, and
// the task it was called for still counts once, as panicked; the key's next task runs.
func TestKeyedTaskWhosePanicHandlerCallsGoexitCountsAsPanicked(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithPanicHandler(func(any, []byte) { runtime.Goexit() }))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var ran atomic.Bool
	must(t, k.Submit(1, panicsWithBoom))
	must(t, k.Submit(1, func() { ran.Store(true) }))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if s := k.Stats(); s.Panicked != 1 || s.Completed != 1 || !ran.Load() {
		t.Fatalf("Keyed.Stats %+v, next task ran %v; want 1 panicked, 1 completed, and it ran", s, ran.Load())
	}
}
