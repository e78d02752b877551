package worker

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReapIdleKeepsMinWorkers: reaping dismisses workers idle for IdleTimeout, oldest first,
// never below MinWorkers, and not those idle for less.
func TestReapIdleKeepsMinWorkers(t *testing.T) {
	const workers, minWorkers = 6, 2
	clock := newFakeClock()
	start := clock.Now()
	var holds [workers]chan struct{}
	for i := range holds {
		holds[i] = make(chan struct{})
	}
	var started atomic.Int32
	e := New(Config[int]{
		Run:          func(i int) { started.Add(1); <-holds[i] },
		MaxWorkers:   workers,
		MinWorkers:   minWorkers,
		IdleTimeout:  time.Hour, // the reaper's timer never fires in this test
		PanicHandler: noPanic,
		Now:          clock.Now,
	})
	for i := range workers {
		submit(t, e, i)
	}
	waitUntil(t, "6 busy workers", func() bool { return started.Load() == workers })
	// The worker that ran task i parks i minutes after start.
	for i := range workers {
		clock.Set(start.Add(time.Duration(i) * time.Minute))
		close(holds[i])
		waitUntil(t, fmt.Sprintf("%d idle workers", i+1), func() bool { return e.Counters().Idle == i+1 })
	}
	// idleMinutes lists the minutes at which the idle workers parked, bottom of the stack first.
	idleMinutes := func() []int {
		e.mu.Lock()
		defer e.mu.Unlock()
		var ms []int
		for _, w := range e.idle {
			ms = append(ms, int((e.epoch.Sub(start)+time.Duration(w.idleSince))/time.Minute))
		}
		return ms
	}
	reaps := []struct {
		at        time.Duration
		dismissed int
		left      []int
	}{
		{at: time.Hour - time.Nanosecond, dismissed: 0, left: []int{0, 1, 2, 3, 4, 5}},
		// The workers parked at minutes 0 to 2 have expired; those parked later have not.
		{at: time.Hour + 2*time.Minute, dismissed: 3, left: []int{3, 4, 5}},
		// All have expired, but only one more may go.
		{at: 2 * time.Hour, dismissed: 1, left: []int{4, 5}},
	}
	for _, r := range reaps {
		if n := e.ReapIdle(start.Add(r.at)); n != r.dismissed {
			t.Fatalf("ReapIdle at %v dismissed %d, want %d", r.at, n, r.dismissed)
		}
		if got := idleMinutes(); !slices.Equal(got, r.left) {
			t.Fatalf("after ReapIdle at %v, idle workers parked at minutes %v, want %v", r.at, got, r.left)
		}
	}
	if c := e.Counters(); c.Workers != minWorkers || c.Idle != minWorkers {
		t.Fatalf("counters %+v, want the %d minimum workers idle", c, minWorkers)
	}
	stopAndWait(e)
}

// parkTwoWorkers makes two workers of e busy at once, parks one and a minute later on clock
// the other, and returns the ids of their goroutines in the order they parked.
func parkTwoWorkers(t *testing.T, e *Engine[func()], clock *fakeClock) (first, second uint64) {
	t.Helper()
	var holds [2]chan struct{}
	var ids [2]chan uint64
	for i := range holds {
		holds[i], ids[i] = make(chan struct{}), make(chan uint64, 1)
		submit(t, e, func() { ids[i] <- goroutineID(); <-holds[i] })
	}
	first, second = <-ids[0], <-ids[1] // both tasks are running, so on two workers
	close(holds[0])
	waitUntil(t, "the first worker parked", func() bool { return e.Counters().Idle == 1 })
	clock.Set(clock.Now().Add(time.Minute))
	close(holds[1])
	waitUntil(t, "both workers parked", func() bool { return e.Counters().Idle == 2 })
	return first, second
}

// newTwoWorkerEngine returns an engine of up to two workers whose idle timeout is an hour of
// clock, which its reaper's timer never reaches in a test.
func newTwoWorkerEngine(clock *fakeClock) *Engine[func()] {
	return New(Config[func()]{
		Run:          call,
		MaxWorkers:   2,
		IdleTimeout:  time.Hour,
		PanicHandler: noPanic,
		Now:          clock.Now,
	})
}

// TestIdleWorkersAreReusedLastParkedFirst: of two idle workers, the next task goes to the one
// that parked last.
func TestIdleWorkersAreReusedLastParkedFirst(t *testing.T) {
	clock := newFakeClock()
	e := newTwoWorkerEngine(clock)
	defer stopAndWait(e)
	first, second := parkTwoWorkers(t, e, clock)
	if got := runOn(t, e); got != second {
		t.Fatalf("the next task ran on goroutine %d, want %d, which parked last (%d parked first)",
			got, second, first)
	}
}

// TestReapIdleDismissesLongestIdleFirst: at a time past the deadline of the worker that parked
// first and before that of the one that parked a minute later, ReapIdle dismisses only the
// first, and the next task runs on the second.
func TestReapIdleDismissesLongestIdleFirst(t *testing.T) {
	clock := newFakeClock()
	start := clock.Now()
	e := newTwoWorkerEngine(clock)
	defer stopAndWait(e)
	first, second := parkTwoWorkers(t, e, clock)
	if n := e.ReapIdle(start.Add(time.Hour)); n != 1 {
		t.Fatalf("ReapIdle between the two deadlines dismissed %d, want 1", n)
	}
	if c := e.Counters(); c.Workers != 1 || c.Idle != 1 {
		t.Fatalf("counters %+v, want 1 worker, idle", c)
	}
	if got := runOn(t, e); got != second {
		t.Fatalf("the worker left runs on goroutine %d, want %d, which parked last (%d parked first)",
			got, second, first)
	}
}

// TestReaperExitsOnceIdleWorkersAreTakenAgain: the reaper that parking workers started exits at
// its next deadline once every idle worker has been handed a task again, though it dismissed
// none of them, and the next worker that parks starts it again.
func TestReaperExitsOnceIdleWorkersAreTakenAgain(t *testing.T) {
	clock := newFakeClock() // stands still: no idle worker ever expires
	e := New(Config[func()]{
		Run:          call,
		MaxWorkers:   2,
		IdleTimeout:  time.Millisecond, // the reaper's timer fires every millisecond
		PanicHandler: noPanic,
		Now:          clock.Now,
	})
	defer stopAndWait(e)
	others := reapers() // of engines that a failed test left behind
	reaping := func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.reaping
	}
	var started atomic.Int32
	var releases []func()
	defer func() { // before stopAndWait, should the test fail with the workers busy
		for _, release := range releases {
			release()
		}
	}()
	// busy makes both workers run a task until the returned function is called.
	busy := func() (release func()) {
		hold := make(chan struct{})
		release = sync.OnceFunc(func() { close(hold) })
		releases = append(releases, release)
		want := started.Load() + 2
		for range 2 {
			submit(t, e, func() { started.Add(1); <-hold })
		}
		waitUntil(t, "both workers busy", func() bool {
			c := e.Counters()
			return started.Load() == want && c.Idle == 0 && c.Waiting == 0
		})
		return release
	}
	parked := func() {
		waitUntil(t, "both workers parked", func() bool { return e.Counters().Idle == 2 })
		if !reaping() || reapers() != others+1 {
			t.Fatalf("reaping %v with %d reaper goroutines while workers are idle, want one",
				reaping(), reapers()-others)
		}
	}
	release := busy()
	release()
	parked()
	release = busy()
	waitUntil(t, "the reaper to exit", func() bool { return !reaping() && reapers() == others })
	if c := e.Counters(); c.Workers != 2 {
		t.Fatalf("counters %+v, want both workers still alive: the reaper must not have dismissed them", c)
	}
	release()
	parked()
}

// reapers counts the goroutines running an engine's reap.
func reapers() int {
	return bytes.Count(allStacks(), []byte("worker.(*Engine[...]).reap("))
}

// TestStopWhileReaperRunsClosesExited: Stop racing with the reaper's timer still closes
// Exited. The reaper's select may take the timer even though Stop has closed done; if it
// then finds nothing idle, it must still report the engine's exit.
func TestStopWhileReaperRunsClosesExited(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		e := New(Config[int]{
			Run:          func(int) {},
			MaxWorkers:   2,
			IdleTimeout:  time.Duration(i%50) * time.Microsecond,
			PanicHandler: noPanic,
		})
		e.Submit(i, true, nil)
		for e.Counters().Idle == 0 && e.Counters().Workers > 0 {
			runtime.Gosched()
		}
		e.Stop()
		select {
		case <-e.Exited():
		case <-time.After(10 * time.Second):
			c := e.Counters()
			e.mu.Lock()
			reaping := e.reaping
			e.mu.Unlock()
			t.Fatalf("iteration %d: Exited never closed after Stop; counters %+v, reaping %v", i, c, reaping)
		}
	}
}
