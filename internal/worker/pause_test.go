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
	w := handOutPaused(t, e, 7)
	e.Resume() // the worker is not parked yet, and it is the one worker the limit allows
	if c := e.Counters(); c.Waiting != 1 || c.Running != 0 || c.Workers != 1 {
		t.Fatalf("after Resume: %+v, want the task waiting on the one worker", c)
	}
	restAndServe(t, e, w)
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

// handOutPaused hands arg out as a submit would, to a new worker, without starting its
// goroutine; pauses e; and has the worker begin, which gives arg back. It returns the worker.
func handOutPaused(t *testing.T, e *Engine[int], arg int) *worker[int] {
	t.Helper()
	e.lock()
	s, ok := e.route(arg, true, 0)
	e.mu.Unlock()
	if !ok || !s.spawn {
		t.Fatalf("route = %+v, %v; want a spawn", s, ok)
	}
	e.Pause()
	w := e.newWorker()
	if e.begin(w, arg) {
		t.Fatal("begin started a task on a paused engine")
	}
	return w
}

// restAndServe has w, whose task begin gave back, rest and then serve on a goroutine of its
// own as a worker does.
func restAndServe(t *testing.T, e *Engine[int], w *worker[int]) {
	t.Helper()
	if !e.rest(w) {
		t.Fatal("rest let the worker leave")
	}
	go func() {
		if arg, ok := e.wait(w); ok {
			e.serveBegun(w, arg)
		}
		e.retire(w)
	}()
}

// TestGivenBackWeightedTaskFreesItsSlots: a weighted task handed out and then given back
// because the engine was paused no longer holds its extra slots (unslot, pause.go); once it
// has run, nothing is held.
func TestGivenBackWeightedTaskFreesItsSlots(t *testing.T) {
	ran := make(chan int, 1)
	var e *Engine[int]
	e = New(Config[int]{
		Run: func(n int) {
			defer e.Unhold(n - 1) // as a weighted task gives back its extra slots
			ran <- n
		},
		Weight:       func(n int) int { return n },
		MaxWorkers:   4,
		IdleTimeout:  time.Minute,
		PanicHandler: noPanic,
	})
	e.UseWeights()
	w := handOutPaused(t, e, 3)
	if held := e.heldSlots(); held != 0 {
		t.Fatalf("%d slots held after the task was given back, want 0", held)
	}
	e.Resume()
	restAndServe(t, e, w)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatalf("task not run 10 s after Resume: %+v", e.Counters())
	}
	stopAndWait(e)
	if held := e.heldSlots(); held != 0 {
		t.Fatalf("%d slots held with nothing running, want 0", held)
	}
}

// TestGivenBackWeightedFirstFreesItsSlots: the same for the first task of a Config.Start
// worker that finds the engine paused when it begins (giveBack).
func TestGivenBackWeightedFirstFreesItsSlots(t *testing.T) {
	e, starts := weightedStartEngine()
	submit(t, e, 3)
	first := <-starts
	e.Pause()
	e.Serve(first, 0) // gives first back and returns
	if held := e.heldSlots(); held != 0 {
		t.Fatalf("%d slots held after the first task was given back, want 0", held)
	}
	e.Stop() // resumes: the task starts on a new Start worker
	go e.Serve(<-starts, 0)
	<-e.Exited()
	if held := e.heldSlots(); held != 0 {
		t.Fatalf("%d slots held with nothing running, want 0", held)
	}
}
