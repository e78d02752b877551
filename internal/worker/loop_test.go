package worker

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitClosed fails the test unless ch (nil counts as closed) is closed within 10 s.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not closed after 10 s", what)
	}
}

// TestTaskStartsInTheSlotOfTheTaskBefore guards next's plain case: a worker that ends a task
// while others are queued starts the oldest in the same slot. Under a limit of 1, each task
// sees itself running alone, the later tasks waiting and the earlier ones completed, in
// submission order; once the last has ended nothing runs and the engine is drained and
// quiet.
func TestTaskStartsInTheSlotOfTheTaskBefore(t *testing.T) {
	const n = 5
	e := New(Config[func()]{Run: call, MaxWorkers: 1, PanicHandler: noPanic})
	defer stopAndWait(e)
	release := make(chan struct{})
	submit(t, e, func() { <-release })
	waitUntil(t, "the first task to start", func() bool { return e.Counters().Running == 1 })
	var order []int
	var seen []Counters
	for i := range n {
		submit(t, e, func() {
			order = append(order, i)
			seen = append(seen, e.Counters())
		})
	}
	close(release)
	waitClosed(t, "Drained", e.Drained())
	for i, c := range seen {
		if order[i] != i {
			t.Fatalf("task %d ran in place %d", order[i], i)
		}
		if c.Running != 1 || c.Waiting != n-1-i || c.Completed != uint64(i+1) || c.Accepted != n+1 {
			t.Errorf("task %d saw Running %d, Waiting %d, Completed %d, Accepted %d; want 1, %d, %d, %d",
				i, c.Running, c.Waiting, c.Completed, c.Accepted, n-1-i, i+1, n+1)
		}
	}
	waitClosed(t, "Quiet", e.Quiet())
	if c := e.Counters(); c.Running != 0 || c.Waiting != 0 || c.Completed != n+1 {
		t.Errorf("after the last task: Running %d, Waiting %d, Completed %d; want 0, 0, %d",
			c.Running, c.Waiting, c.Completed, n+1)
	}
}

// TestLoweredLimitHoldsWhenATaskEnds guards the other side of next's plain case: once the
// limit is lowered below the tasks running, a task that ends does not hand its slot on, so
// the queued tasks start only as the limit allows.
func TestLoweredLimitHoldsWhenATaskEnds(t *testing.T) {
	e := New(Config[func()]{Run: call, MaxWorkers: 2, PanicHandler: noPanic})
	defer stopAndWait(e)
	release := make(chan struct{})
	for range 2 {
		submit(t, e, func() { <-release })
	}
	waitUntil(t, "two tasks to start", func() bool { return e.Counters().Running == 2 })
	var now, most atomic.Int32
	for range 6 {
		submit(t, e, func() {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			now.Add(-1)
		})
	}
	e.Resize(1)
	close(release)
	waitClosed(t, "Drained", e.Drained())
	if m := most.Load(); m != 1 {
		t.Errorf("%d queued tasks ran at once after Resize(1), want 1", m)
	}
}

// TestParkedWorkerStackStaysSmall guards where a worker parks: in serveBegun, with the
// frames of runUntilPanic, runTasks and next gone, whether it found nothing to do after a
// task that returned, after one that panicked, or with an Observer. Deep in the loop, the
// allocation a first wait on a channel makes outgrew a new goroutine's stack (see
// serveBegun).
func TestParkedWorkerStackStaysSmall(t *testing.T) {
	for _, c := range []struct {
		name     string
		observer Observer[func()]
		task     func()
	}{
		{"returned", nil, func() {}},
		{"panicked", nil, func() { panic("task") }},
		{"observed", quietObserver{}, func() {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const workers = 3
			e := New(Config[func()]{Run: call, MaxWorkers: workers, Observer: c.observer, IdleTimeout: time.Hour,
				PanicHandler: func(any, []byte) {}})
			defer stopAndWait(e)
			release := make(chan struct{})
			var started atomic.Int32
			for range workers {
				submit(t, e, func() {
					started.Add(1)
					<-release
					c.task()
				})
			}
			waitUntil(t, "every task to start", func() bool { return started.Load() == workers })
			close(release)
			var parked []string
			waitUntil(t, "every worker to park", func() bool {
				parked = parkedWorkers()
				return len(parked) == workers
			})
			for _, stack := range parked {
				for _, deep := range []string{").next(", ").runTasks(", ").runUntilPanic(", ").runObserved("} {
					if strings.Contains(stack, deep) {
						t.Fatalf("a worker parked under %s:\n%s", deep, stack)
					}
				}
			}
		})
	}
}

// parkedWorkers returns the stacks of the goroutines that wait in Engine.wait.
func parkedWorkers() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var parked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, ").wait(") && strings.Contains(g, "internal/worker.(*Engine[") {
			parked = append(parked, g)
		}
	}
	return parked
}

// quietObserver is an Observer that observes every task and records nothing.
type quietObserver struct{}

func (quietObserver) Started(func(), time.Duration) bool          { return true }
func (quietObserver) Finished(time.Duration, time.Duration, bool) {}
func (quietObserver) Discarded(func(), time.Duration)             {}
