package worker

import (
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
