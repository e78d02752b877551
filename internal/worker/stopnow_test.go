package worker

import "testing"

// TestAbandonedWeightedFirstFreesItsSlots: Abandon settles everything the hand-out of a
// Config.Start worker's first task counted, its extra slots included (unslot, pause.go).
func TestAbandonedWeightedFirstFreesItsSlots(t *testing.T) {
	e, starts := weightedStartEngine()
	submit(t, e, 3)
	e.Abandon(<-starts)
	if held := e.heldSlots(); held != 0 {
		t.Fatalf("%d slots held after Abandon, want 0", held)
	}
	if c := e.Counters(); c.Running != 0 || c.Removed != 1 || c.Workers != 0 {
		t.Fatalf("counters after Abandon: %+v", c)
	}
	stopAndWait(e)
}

// heldSlots returns the slots held by running weighted tasks beyond one each.
func (e *Engine[T]) heldSlots() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held
}

// weightedStartEngine returns an engine of limit 4 whose tasks weigh their value and run on
// Config.Start workers, whose first tasks it sends on starts; a task gives its extra slots
// back as it runs.
func weightedStartEngine() (*Engine[int], chan int) {
	starts := make(chan int, 1)
	var e *Engine[int]
	e = New(Config[int]{
		Run:          func(n int) { e.Unhold(n - 1) },
		Weight:       func(n int) int { return n },
		MaxWorkers:   4,
		PanicHandler: noPanic,
		Start:        func(first int, _ int64, _ bool) { starts <- first },
	})
	e.UseWeights()
	return e, starts
}

// TestStopNowRefusesBlockedSubmittersBeforeItEmptiesTheQueue: StopNow stops and takes the
// queue out in one step, so the submitters blocked on the full queue are refused, never moved
// into the room the removal makes; the queued task is returned and counted removed.
func TestStopNowRefusesBlockedSubmittersBeforeItEmptiesTheQueue(t *testing.T) {
	release := make(chan struct{})
	e := New(Config[func()]{Run: call, MaxWorkers: 1, QueueSize: 1, PanicHandler: noPanic})
	started := make(chan struct{})
	submit(t, e, func() { close(started); <-release })
	<-started
	submit(t, e, func() { t.Error("a task StopNow took out ran") })
	const blocked = 3
	results := make(chan Result, blocked)
	for range blocked {
		go func() { results <- e.Submit(func() { t.Error("a refused task ran") }, true, nil) }()
	}
	waitUntil(t, "the submitters to block", func() bool { return e.BlockedSubmitters() == blocked })
	out := e.StopNow()
	for range blocked {
		if r := <-results; r != Stopped {
			t.Fatalf("blocked Submit = %v, want Stopped", r)
		}
	}
	if len(out) != 1 {
		t.Fatalf("StopNow took out %d tasks, want the one queued", len(out))
	}
	close(release)
	<-e.Exited()
	if c := e.Counters(); c.Accepted != 2 || c.Removed != 1 || c.Completed != 1 {
		t.Fatalf("counters %+v, want 2 accepted, 1 removed, 1 completed", c)
	}
}
