package worker

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newSplit returns an engine of max workers running run, with lanes wanted from the start.
// It skips the test where this machine has one processor, as lanes need two.
func newSplit(t *testing.T, max int, run func(int)) *Engine[int] {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("lanes need GOMAXPROCS >= 2")
	}
	e := New(Config[int]{Run: run, MaxWorkers: max, IdleTimeout: time.Minute, PanicHandler: noPanic})
	e.SplitQueue()
	if !e.Split() {
		t.Fatalf("lanes off after SplitQueue with a limit of %d on %d lanes", max, len(e.lanes))
	}
	return e
}

// submitOn submits arg as a submitter on lane i would: onto lane i while it holds tasks,
// else through route with i as its lane.
func submitOn[T any](t *testing.T, e *Engine[T], arg T, i int) {
	t.Helper()
	if e.lanes == nil {
		submit(t, e, arg)
		return
	}
	if _, ok := e.laneSubmit(arg, i); ok {
		return
	}
	e.lock()
	s, ok := e.route(arg, true, i)
	e.mu.Unlock()
	e.launch(s)
	if !ok {
		t.Fatalf("route refused a task on an unbounded queue")
	}
}

// heldSplit returns an engine as newSplit does, whose every worker runs a task (-1) that
// waits for one receive from the returned gate: what is submitted next waits in the lanes. A
// send on gate releases one worker, close(gate) all. Tasks 0 and up go to run.
func heldSplit(t *testing.T, max int, run func(int)) (*Engine[int], chan struct{}) {
	t.Helper()
	gate := make(chan struct{})
	var started atomic.Int32
	e := newSplit(t, max, func(i int) {
		if i < 0 {
			started.Add(1)
			<-gate
			return
		}
		run(i)
	})
	for range max {
		submit(t, e, -1)
	}
	waitUntil(t, "every worker held", func() bool { return started.Load() == int32(max) })
	return e, gate
}

// TestLanesStayOffForOneSubmitter: a lone submitter, which waits only for workers, never
// turns lanes on, however many tasks it submits and however often it moves between
// processors.
func TestLanesStayOffForOneSubmitter(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("lanes need GOMAXPROCS >= 2")
	}
	var ran atomic.Int64
	e := New(Config[int]{Run: func(int) { ran.Add(1) }, MaxWorkers: 64, PanicHandler: noPanic})
	const tasks = 300_000
	for i := range tasks {
		submit(t, e, i)
		if i%1000 == 0 && e.Split() {
			t.Fatalf("lanes on after %d submits from one goroutine", i)
		}
	}
	stopAndWait(e)
	if e.Split() || ran.Load() != tasks {
		t.Fatalf("split %v, ran %d of %d", e.Split(), ran.Load(), tasks)
	}
}

// TestLanesGoOnForSubmittersOnSeveralProcessors: submitters that wait for each other's lock
// turn lanes on.
func TestLanesGoOnForSubmittersOnSeveralProcessors(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("lanes need GOMAXPROCS >= 2")
	}
	var ran atomic.Int64
	e := New(Config[int]{Run: func(int) { ran.Add(1) }, MaxWorkers: 1000, PanicHandler: noPanic})
	var on atomic.Bool
	var wg sync.WaitGroup
	var submitted atomic.Int64
	deadline := time.Now().Add(10 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !on.Load() && time.Now().Before(deadline) {
				for range 100 {
					submit(t, e, 0)
				}
				submitted.Add(100)
				if e.Split() {
					on.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	stopAndWait(e)
	if !on.Load() {
		t.Fatalf("lanes still off after %d submits from 8 goroutines", submitted.Load())
	}
	if ran.Load() != submitted.Load() {
		t.Fatalf("ran %d of %d", ran.Load(), submitted.Load())
	}
}

// TestLanesGoOffWhenOneLaneTakesEverySubmit: solo says yes once a lane has taken
// laneQuietPushes submits while no other lane took one, and no otherwise.
func TestLanesGoOffWhenOneLaneTakesEverySubmit(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("lanes need GOMAXPROCS >= 2")
	}
	const max = 16
	e, gate := heldSplit(t, max, func(int) {})
	// Lane 0 takes every submit: a check, every laneQuietPushes of its submits, turns lanes
	// off once it finds no other lane's count moved since the check before (the first check
	// may still see heldSplit's submits, which went onto either lane).
	submitted := 0
	for e.Split() && submitted <= 2*laneQuietPushes {
		submitOn(t, e, submitted, 0)
		submitted++
	}
	if e.Split() {
		t.Fatalf("lanes still on after %d submits on lane 0 alone", submitted)
	}
	if c := e.Counters(); c.Waiting != submitted || c.Accepted != uint64(max+submitted) {
		t.Fatalf("counters %+v, want %d waiting and %d accepted", c, submitted, max+submitted)
	}
	// With both lanes taking submits, the checks find other pushes and keep lanes on.
	e.SplitQueue()
	for i := range 3 * laneQuietPushes {
		submitOn(t, e, i, i%2)
		submitted++
	}
	if !e.Split() {
		t.Fatal("lanes off while both lanes took submits")
	}
	close(gate)
	stopAndWait(e)
	if c := e.Counters(); c.Completed != uint64(max+submitted) {
		t.Fatalf("Completed = %d, want %d", c.Completed, max+submitted)
	}
}

// TestLanesKeepEachLaneInOrder: tasks submitted on one lane start in the order submitted,
// whether the worker takes them from its own lane or from another's.
func TestLanesKeepEachLaneInOrder(t *testing.T) {
	var order []int // appended by the one worker released below
	const max = 8
	e, gate := heldSplit(t, max, func(i int) {
		order = append(order, i)
	})
	const each = 1000
	for i := range 2 * each {
		submitOn(t, e, i, i%2) // even tasks on lane 0, odd on lane 1
	}
	if c := e.Counters(); c.Waiting != 2*each {
		t.Fatalf("Waiting = %d, want %d", c.Waiting, 2*each)
	}
	gate <- struct{}{} // one worker runs the backlog, from both lanes, while the others wait
	waitUntil(t, "the backlog run", func() bool { return e.Counters().Waiting == 0 })
	waitUntil(t, "the last task done", func() bool { return e.Counters().Running == max-1 })
	close(gate)
	stopAndWait(e)
	last := [2]int{-2, -1}
	for k, v := range order {
		if v <= last[v%2] {
			t.Fatalf("task %d ran %dth, after task %d of its lane", v, k, last[v%2])
		}
		last[v%2] = v
	}
	if len(order) != 2*each {
		t.Fatalf("ran %d tasks, want %d", len(order), 2*each)
	}
}

// TestLanesTurnOffForPauseAndOnAfterResume: a pause moves the lanes' tasks to the queue,
// where nothing starts them; Resume puts lanes back and they all run.
func TestLanesTurnOffForPauseAndOnAfterResume(t *testing.T) {
	var ran atomic.Int64
	const max = 8
	e, gate := heldSplit(t, max, func(i int) {
		ran.Add(1)
	})
	for i := range 100 {
		submitOn(t, e, i, i%2)
	}
	e.Pause()
	if e.Split() {
		t.Fatal("lanes on while paused")
	}
	close(gate)
	waitUntil(t, "held tasks done", func() bool { return e.Counters().Running == 0 })
	if c := e.Counters(); ran.Load() != 0 || c.Waiting != 100 {
		t.Fatalf("while paused: ran %d, counters %+v", ran.Load(), c)
	}
	e.Resume()
	if !e.Split() {
		t.Fatal("lanes off after Resume")
	}
	waitUntil(t, "the backlog run", func() bool { return ran.Load() == 100 })
	stopAndWait(e)
}

// TestLanesHoldALoweredLimit: after a Resize below the workers alive, lanes are off, so no
// worker hands its slot to a queued task while the new limit or more run.
func TestLanesHoldALoweredLimit(t *testing.T) {
	var live, high atomic.Int32
	const max = 16
	e, gate := heldSplit(t, max, func(i int) {
		n := live.Add(1)
		for h := high.Load(); n > h && !high.CompareAndSwap(h, n); h = high.Load() {
		}
		time.Sleep(time.Microsecond)
		live.Add(-1)
	})
	for i := range 500 {
		submitOn(t, e, i, i%2)
	}
	e.Resize(2)
	if e.Split() {
		t.Fatal("lanes on with more workers alive than the limit")
	}
	close(gate)
	stopAndWait(e)
	if h := high.Load(); h > 2 {
		t.Fatalf("%d tasks ran at once after Resize(2)", h)
	}
	if c := e.Counters(); c.Completed != max+500 {
		t.Fatalf("Completed = %d, want %d", c.Completed, max+500)
	}
}

// TestLanesRemoveTakesEveryLanesTasks: Remove returns the tasks of every lane, each lane's
// in order, and counts them as removed.
func TestLanesRemoveTakesEveryLanesTasks(t *testing.T) {
	const max = 8
	e, gate := heldSplit(t, max, func(int) {})
	for i := range 500 {
		submitOn(t, e, i, i%2)
	}
	e.Stop()
	got := e.Remove()
	close(gate)
	<-e.Exited()
	if len(got) != 500 {
		t.Fatalf("Remove returned %d tasks, want 500", len(got))
	}
	var even, odd []int
	for _, v := range got {
		if v%2 == 0 {
			even = append(even, v)
		} else {
			odd = append(odd, v)
		}
	}
	if !slices.IsSorted(even) || !slices.IsSorted(odd) {
		t.Fatalf("Remove broke a lane's order: %v", got)
	}
	if c := e.Counters(); c.Removed != 500 || c.Completed != max {
		t.Fatalf("counters %+v, want 500 removed and %d completed", c, max)
	}
}

// TestLanesCountersNeverShowMoreCompletedThanAccepted: snapshots taken while tasks move
// between lanes (steal) stay consistent.
func TestLanesCountersNeverShowMoreCompletedThanAccepted(t *testing.T) {
	e := newSplit(t, 64, func(int) {})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				submitOn(t, e, i, (s+i/64)%len(e.lanes))
			}
		}()
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	var last Counters
	for time.Now().Before(deadline) {
		c := e.Counters()
		if c.Completed+c.Panicked > c.Accepted || c.Running > c.MaxWorkers ||
			c.Accepted < last.Accepted || c.Completed < last.Completed {
			t.Fatalf("snapshot %+v after %+v", c, last)
		}
		last = c
	}
	close(stop)
	wg.Wait()
	stopAndWait(e)
	if c := e.Counters(); c.Completed != c.Accepted {
		t.Fatalf("counters %+v: not every accepted task completed", c)
	}
}

// TestLanesDrainedClosesOnceEveryLaneIsDone: Drained, which Wait uses, closes when the last
// task has run, counted on whichever lane.
func TestLanesDrainedClosesOnceEveryLaneIsDone(t *testing.T) {
	var ran atomic.Int64
	e := newSplit(t, 32, func(int) { time.Sleep(time.Microsecond); ran.Add(1) })
	for round := range 20 {
		var wg sync.WaitGroup
		for s := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 500 {
					submitOn(t, e, i, (s+i)%len(e.lanes))
				}
			}()
		}
		wg.Wait()
		if d := e.Drained(); d != nil {
			<-d
		}
		if got, want := ran.Load(), int64(2000*(round+1)); got != want {
			t.Fatalf("round %d: Drained returned with %d of %d tasks run", round, got, want)
		}
	}
	stopAndWait(e)
}

// FuzzLaneOperations runs generated sequences of operations from several goroutines at once
// on an engine whose queue is split (or, with the second byte's top bit set, on the one
// queue): submits on chosen lanes or through Submit, Resize,
// Pause, Resume, Remove, counters checks, waits for Drained, and SplitQueue again after
// lanes went off. Then it stops the engine and checks that every accepted task ran exactly
// once or was removed and never ran, that no more tasks ran at once than the largest limit
// set, and that the counters add up.
func FuzzLaneOperations(f *testing.F) {
	f.Add([]byte{0, 1, 0x10, 0x21, 0x32, 0x43, 0x10, 0x54, 0x65, 0x76, 0x87, 0x10})
	f.Add([]byte{3, 3, 0x10, 0x10, 0x10, 0x10, 0x31, 0x41, 0x10, 0x51, 0x10, 0x61, 0x10})
	f.Add([]byte{7, 2, 0x20, 0x10, 0x25, 0x10, 0x2f, 0x10, 0x70, 0x10, 0x80, 0x10})
	f.Add([]byte{1, 0, 0x40, 0x10, 0x10, 0x50, 0x10, 0x10, 0x60, 0x60, 0x10, 0x90})
	f.Fuzz(laneOperations)
}

// laneOperations is FuzzLaneOperations' body.
func laneOperations(t *testing.T, in []byte) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("lanes need GOMAXPROCS >= 2")
	}
	if len(in) < 3 || len(in) > 64 {
		return
	}
	lanes := min(runtime.GOMAXPROCS(0), laneMaxLanes)
	limit := laneMinWorkers*lanes + int(in[0]%16)
	goroutines := 2 + int(in[1]%3)
	ops := in[2:]

	const most = 1 << 14
	runs := make([]atomic.Int32, most)
	var next atomic.Int64 // ids handed out
	var live, high atomic.Int32
	var highest atomic.Int32 // the largest limit set
	highest.Store(int32(limit))
	e := New(Config[int]{
		Run: func(i int) {
			n := live.Add(1)
			for h := high.Load(); n > h && !high.CompareAndSwap(h, n); h = high.Load() {
			}
			runs[i].Add(1)
			if i%7 == 0 {
				time.Sleep(time.Microsecond)
			}
			live.Add(-1)
		},
		MaxWorkers:   limit,
		IdleTimeout:  time.Minute,
		PanicHandler: noPanic,
	})
	split := in[1]&0x80 == 0 // else the one queue: the same operations without lanes
	if split {
		e.SplitQueue()
	} else {
		e.lanes = nil
	}
	var removedMu sync.Mutex
	var removed []int
	// Drained waits for paused work, so it is waited for only in sequences that never
	// pause.
	pauses := slices.ContainsFunc(ops, func(b byte) bool { return b>>4%10 == 3 })

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < len(ops); k += goroutines {
				op, arg := ops[k]>>4, int(ops[k]&15)
				switch op % 10 {
				case 0, 1: // submit 1+arg*16 tasks, on lane arg%lanes or through Submit
					for range 1 + arg*16 {
						id := int(next.Add(1) - 1)
						if id >= most {
							return
						}
						if op == 0 {
							submitOn(t, e, id, arg%lanes)
						} else if r := e.Submit(id, true, nil); r != Accepted {
							t.Errorf("Submit = %v", r)
						}
					}
				case 2:
					n := 1 + arg*limit/15
					for h := highest.Load(); int32(n) > h && !highest.CompareAndSwap(h, int32(n)); h = highest.Load() {
					}
					e.Resize(n)
				case 3:
					e.Pause()
				case 4:
					e.Resume()
				case 5:
					got := e.Remove()
					removedMu.Lock()
					removed = append(removed, got...)
					removedMu.Unlock()
				case 6:
					c := e.Counters()
					if c.Completed+c.Panicked+c.Removed > c.Accepted {
						t.Errorf("counters %+v: more ended than accepted", c)
					}
				case 7:
					if !pauses {
						if d := e.Drained(); d != nil {
							select {
							case <-d:
							case <-time.After(10 * time.Second):
								t.Errorf("Drained not closed after 10 s: %+v", e.Counters())
							}
						}
					}
				case 8, 9:
					if split {
						e.SplitQueue()
					}
				}
			}
		}()
	}
	wg.Wait()
	e.Resume()
	e.Stop()
	select {
	case <-e.Exited():
	case <-time.After(20 * time.Second):
		e.mu.Lock()
		state := fmt.Sprintf("pending %d running %d workers %d alive %d queue %d laneOn %v waking %d idle %d stopped %v reaping %v holds %d",
			e.pending, e.running, e.workers, e.alive, e.queue.Len(), e.laneOn, e.waking, len(e.idle), e.stopped, e.reaping, e.holds)
		for i := range e.lanes {
			state += fmt.Sprintf(" lane%d{on %v len %d acc %d comp %d}", i, e.lanes[i].on, e.lanes[i].q.Len(), e.lanes[i].accepted, e.lanes[i].completed)
		}
		e.mu.Unlock()
		t.Fatalf("not exited 20 s after Stop: %s", state)
	}

	isRemoved := make(map[int]bool, len(removed))
	for _, id := range removed {
		if isRemoved[id] {
			t.Fatalf("task %d removed twice", id)
		}
		isRemoved[id] = true
	}
	n := int(min(next.Load(), most))
	for id := range n {
		want := int32(1)
		if isRemoved[id] {
			want = 0
		}
		if got := runs[id].Load(); got != want {
			t.Fatalf("task %d (removed %v) ran %d times", id, isRemoved[id], got)
		}
	}
	c := e.Counters()
	if c.Accepted != uint64(n) || c.Completed != uint64(n-len(removed)) || c.Removed != uint64(len(removed)) ||
		c.Running != 0 || c.Waiting != 0 {
		t.Fatalf("counters %+v after %d accepted, %d removed", c, n, len(removed))
	}
	if h, most := high.Load(), highest.Load(); h > most {
		t.Fatalf("%d tasks ran at once; the largest limit set was %d", h, most)
	}
}
