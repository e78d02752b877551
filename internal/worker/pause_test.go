package worker

import (
	"testing"
	"time"
)

// TestRestingWorkerStartsWhatAResumeLeft: a worker whose task begin gave back because the
// engine was paused, and which the Resume that came before it parked could not start the task
// on (the worker was neither parked nor free to be counted as a new one), starts that task
// once it has parked. Before rest dispatched, the task waited with every worker parked.
func TestRestingWorkerStartsWhatAResumeLeft(t *testing.T) {
	ran := make(chan int, 1)
	e := New(Config[int]{Run: func(i int) { ran <- i }, MaxWorkers: 1, IdleTimeout: time.Minute, PanicHandler: noPanic})
	// Hand task 7 out as a submit would, to a new worker, without starting its goroutine yet.
	e.lock()
	s, ok := e.route(7, true)
	e.mu.Unlock()
	if !ok || !s.spawn {
		t.Fatalf("route = %+v, %v; want a spawn", s, ok)
	}
	e.Pause()
	w := e.newWorker()
	if e.begin(w, 7) {
		t.Fatal("begin started a task on a paused engine")
	}
	e.Resume() // the worker is not parked yet, and it is the one worker the limit allows
	if c := e.Counters(); c.Waiting != 1 || c.Running != 0 || c.Workers != 1 {
		t.Fatalf("after Resume: %+v, want the task waiting on the one worker", c)
	}
	if !e.rest(w) {
		t.Fatal("rest let the worker leave")
	}
	go func() {
		if arg, ok := e.wait(w); ok {
			e.serveBegun(w, arg)
		}
		e.retire(w)
	}()
	select {
	case i := <-ran:
		if i != 7 {
			t.Fatalf("ran %d, want 7", i)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("task given back during a pause not run 10 s after Resume: %+v", e.Counters())
	}
	stopAndWait(e)
}
