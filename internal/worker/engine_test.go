package worker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newTestEngine(max int, run func(int)) *Engine[int] {
	return New(Config[int]{
		Run:          run,
		MaxWorkers:   max,
		IdleTimeout:  time.Hour,
		PanicHandler: func(any, []byte) {},
	})
}

func TestWakingGateStartsEveryQueuedTask(t *testing.T) {
	// With every task blocked, the chain of wake-ups must bring the engine to min(tasks, max)
	// running workers: no task may sit in the queue beside a free worker slot.
	for _, n := range []int{1, 2, 7, 64} {
		gate := make(chan struct{})
		var started atomic.Int32
		e := newTestEngine(16, func(int) { started.Add(1); <-gate })
		for i := range n {
			if r := e.Submit(i, true, nil); r != Accepted {
				t.Fatalf("Submit = %v", r)
			}
		}
		want := int32(min(n, 16))
		deadline := time.Now().Add(10 * time.Second)
		for started.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("n=%d: %d tasks started, want %d; %+v", n, started.Load(), want, e.Counters())
			}
			time.Sleep(100 * time.Microsecond)
		}
		if c := e.Counters(); c.Waiting != n-int(want) {
			t.Fatalf("n=%d: Counters = %+v", n, c)
		}
		close(gate)
		e.Stop()
		<-e.Exited()
	}
}

func TestReapIdleKeepsMinimum(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := New(Config[int]{
		Run: func(int) {}, MaxWorkers: 4, MinWorkers: 1, IdleTimeout: time.Hour,
		PanicHandler: func(any, []byte) {}, Now: clock,
	})
	// Three more workers join, run a task each and park; all at the same clock time.
	for range 3 {
		e.Forward(0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c := e.Counters(); c.Idle != c.Workers || c.Workers == 0; c = e.Counters() {
		if time.Now().After(deadline) {
			t.Fatalf("workers never parked: %+v", c)
		}
		time.Sleep(100 * time.Microsecond)
	}
	workers := e.Counters().Workers
	if n := e.ReapIdle(clock().Add(59 * time.Minute)); n != 0 {
		t.Fatalf("reaped %d before any deadline", n)
	}
	if n := e.ReapIdle(clock().Add(10 * time.Hour)); n != workers-1 {
		t.Fatalf("reaped %d of %d workers, want all but the minimum", n, workers)
	}
	e.Stop()
	<-e.Exited()
}
