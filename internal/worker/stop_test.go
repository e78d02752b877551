package worker

import (
	"slices"
	"sync/atomic"
	"testing"
)

// TestRemoveEndsQueuedTasksWithoutRunning: Remove takes every queued task out, oldest first;
// they never run, count as removed rather than completed, and Drained and Exited do not wait
// for them. A submitter blocked on the full queue moves into the room made and is removed
// with the rest.
func TestRemoveEndsQueuedTasksWithoutRunning(t *testing.T) {
	hold := make(chan struct{})
	var ran atomic.Int32
	e := New(Config[int]{
		Run: func(i int) {
			if i == 0 {
				<-hold
			}
			ran.Add(1)
		},
		MaxWorkers:   1,
		QueueSize:    3,
		PanicHandler: noPanic,
	})
	for i := range 4 {
		submit(t, e, i)
	}
	res := make(chan Result)
	go func() { res <- e.Submit(4, true, nil) }()
	awaitBlocked(t, e, 1)

	removed := e.Remove()
	if r := <-res; r != Accepted {
		t.Fatalf("blocked Submit = %v, want Accepted", r)
	}
	if want := []int{1, 2, 3, 4}; !slices.Equal(removed, want) {
		t.Fatalf("Remove = %v, want %v", removed, want)
	}
	c := e.Counters()
	if c.Removed != 4 || c.Waiting != 0 || c.Running != 1 || c.Accepted != 5 {
		t.Fatalf("counters after Remove %+v, want 4 removed, 1 running, 5 accepted", c)
	}
	drained := e.Drained()
	if drained == nil {
		t.Fatal("Drained is nil while task 0 runs")
	}
	close(hold)
	<-drained
	stopAndWait(e)
	if n := ran.Load(); n != 1 {
		t.Fatalf("%d tasks ran, want only task 0", n)
	}
	if c := e.Counters(); c.Completed != 1 || c.Removed != 4 || c.Completed+c.Removed != c.Accepted {
		t.Fatalf("final counters %+v, want Completed+Removed == Accepted", c)
	}
}
