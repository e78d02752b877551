package worker

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew/internal/racetest"
)

// TestBlockedSubmittersAreServedFirstComeOnePerFreeSlot: submitters that block on a full queue
// one after another are accepted in that order, and each slot a worker frees accepts exactly
// one of them while the others stay blocked.
func TestBlockedSubmittersAreServedFirstComeOnePerFreeSlot(t *testing.T) {
	const blocked = 4
	const tasks = blocked + 2
	var holds [tasks]chan struct{}
	for i := range holds {
		holds[i] = make(chan struct{})
	}
	ranInOrder := make(chan int, tasks)
	e := New(Config[int]{
		Run:          func(i int) { <-holds[i]; ranInOrder <- i },
		MaxWorkers:   1,
		QueueSize:    1,
		PanicHandler: noPanic,
	})
	submit(t, e, 0) // holds the worker
	submit(t, e, 1) // fills the queue
	type outcome struct {
		task int
		r    Result
	}
	outcomes := make(chan outcome, blocked)
	for task := 2; task < tasks; task++ {
		go func() { outcomes <- outcome{task, e.Submit(task, true, nil)} }()
		awaitBlocked(t, e, task-1)
	}
	for slot := range blocked {
		close(holds[slot]) // the worker takes the next task from the queue, freeing its slot
		if got, want := <-outcomes, (outcome{slot + 2, Accepted}); got != want {
			t.Fatalf("slot %d freed: the submitter of task %d returned %v, want that of task %d Accepted",
				slot, got.task, got.r, want.task)
		}
		if n, want := e.BlockedSubmitters(), blocked-1-slot; n != want {
			t.Fatalf("%d submitters blocked after %d slots were freed, want %d", n, slot+1, want)
		}
		if c := e.Counters(); c.Waiting != 1 {
			t.Fatalf("%d tasks queued after slot %d was freed and taken, want 1", c.Waiting, slot)
		}
	}
	for _, h := range holds[blocked:] {
		close(h)
	}
	stopAndWait(e)
	close(ranInOrder)
	want := 0
	for i := range ranInOrder {
		if i != want {
			t.Fatalf("task %d ran where task %d should have", i, want)
		}
		want++
	}
	if want != tasks {
		t.Fatalf("%d tasks ran, want %d", want, tasks)
	}
}

// awaitBlocked waits until n submitters are blocked in e.Submit.
func awaitBlocked[T any](t *testing.T, e *Engine[T], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.BlockedSubmitters() != n {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d blocked submitters; %d are", n, e.BlockedSubmitters())
		}
		runtime.Gosched()
	}
}

// TestBlockedSubmitDecidedBeforeItGaveUpStands races a worker freeing a slot for a blocked
// submitter against the closing of the submitter's done channel, many times. Whichever wins,
// the result matches what happened to the task: Accepted exactly when the task ran once, and
// Canceled only when it never ran and was counted in Rejected. An acceptance decided before
// the closing took the lock therefore stands.
func TestBlockedSubmitDecidedBeforeItGaveUpStands(t *testing.T) {
	rounds := 1000
	if testing.Short() {
		rounds = 100
	}
	var accepted, canceled int
	for round := range rounds {
		hold := make(chan struct{})
		var runs atomic.Int32 // of task 2
		e := New(Config[int]{
			Run: func(i int) {
				switch i {
				case 0:
					<-hold
				case 2:
					runs.Add(1)
				}
			},
			MaxWorkers:   1,
			QueueSize:    1,
			PanicHandler: noPanic,
		})
		submit(t, e, 0) // holds the worker
		submit(t, e, 1) // fills the queue
		done := make(chan struct{})
		res := make(chan Result, 1)
		go func() { res <- e.Submit(2, true, done) }()
		awaitBlocked(t, e, 1)
		// Closing hold wakes the worker, which frees a slot and decides for the submitter;
		// closing done wakes the submitter, which gives up. Vary which comes first, and by
		// how much, so that either wins in some rounds.
		first, second := hold, done
		if round%2 == 1 {
			first, second = done, hold
		}
		close(first)
		for range round % 5 {
			runtime.Gosched()
		}
		close(second)
		r := <-res
		stopAndWait(e)
		n, c := runs.Load(), e.Counters()
		switch r {
		case Accepted:
			accepted++
			if n != 1 || c.Canceled != 0 || c.Accepted != 3 {
				t.Fatalf("round %d: Accepted, but task ran %d times; counters %+v", round, n, c)
			}
		case Canceled:
			canceled++
			if n != 0 || c.Canceled != 1 || c.Accepted != 2 {
				t.Fatalf("round %d: Canceled, but task ran %d times; counters %+v", round, n, c)
			}
		default:
			t.Fatalf("round %d: Submit = %v, want Accepted or Canceled", round, r)
		}
	}
	t.Logf("%d rounds accepted, %d canceled", accepted, canceled)
}

// TestBlockedSubmitterDoesNotAllocate: a Submit that blocks on the full queue until a worker
// makes room allocates nothing in steady state: its waiter comes back from waiters.
func TestBlockedSubmitterDoesNotAllocate(t *testing.T) {
	racetest.SkipPoolReuse(t)
	var draining atomic.Bool
	var e *Engine[int]
	e = New(Config[int]{
		// Each task returns once a submitter has blocked, so the worker frees a slot for it.
		Run: func(int) {
			for !draining.Load() && e.BlockedSubmitters() == 0 {
				runtime.Gosched()
			}
		},
		MaxWorkers:   1,
		QueueSize:    1,
		PanicHandler: noPanic,
	})
	submit(t, e, 0) // runs until the first submitter blocks
	submit(t, e, 1) // fills the queue
	allocs := testing.AllocsPerRun(100, func() {
		if r := e.Submit(2, true, nil); r != Accepted {
			t.Fatalf("Submit = %v, want Accepted", r)
		}
	})
	draining.Store(true)
	stopAndWait(e)
	if allocs != 0 {
		t.Fatalf("a Submit that blocked until it got room made %v allocations, want 0", allocs)
	}
}
