//go:build go1.25

package worker

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestReaperSleepsUntilTheNextDeadline: the reaper wakes once per idle worker's deadline, at
// that deadline, rather than on a tick. Two workers park half an idle timeout apart; the
// reaper must read the clock exactly twice, each time at a deadline: in a testing/synctest
// bubble, whose fake clock moves only when every goroutine of it is blocked, a timer fires
// exactly when it is due. A reaper ticking once per timeout would dismiss the second worker
// half a timeout late, and one ticking faster would read the clock more often.
func TestReaperSleepsUntilTheNextDeadline(t *testing.T) {
	synctest.Test(t, reaperSleepsUntilTheNextDeadline)
}

func reaperSleepsUntilTheNextDeadline(t *testing.T) {
	const timeout = 600 * time.Millisecond
	var mu sync.Mutex
	workers := map[uint64]bool{} // the ids of the goroutines that ran the tasks
	// The clock's readings: parks are a worker's, wakes the reaper's.
	var parks, wakes []time.Time
	now := func() time.Time {
		id, t := goroutineID(), time.Now()
		mu.Lock()
		defer mu.Unlock()
		if workers[id] {
			parks = append(parks, t)
		} else {
			wakes = append(wakes, t)
		}
		return t
	}
	e := New(Config[func()]{
		Run:          call,
		MaxWorkers:   2,
		IdleTimeout:  timeout,
		PanicHandler: noPanic,
		Now:          now,
	})
	defer stopAndWait(e)
	mu.Lock()
	wakes = nil // New's reading, the clock's epoch
	mu.Unlock()
	var holds [2]chan struct{}
	var started sync.WaitGroup
	started.Add(2)
	for i := range holds {
		holds[i] = make(chan struct{})
		submit(t, e, func() {
			mu.Lock()
			workers[goroutineID()] = true
			mu.Unlock()
			started.Done()
			<-holds[i]
		})
	}
	started.Wait()
	close(holds[0])
	synctest.Wait()
	if c := e.Counters(); c.Idle != 1 {
		t.Fatalf("counters %+v, want the first worker parked", c)
	}
	time.Sleep(timeout / 2)
	close(holds[1])
	time.Sleep(timeout) // the second worker's deadline
	synctest.Wait()
	e.mu.Lock()
	workersLeft, reaping := e.workers, e.reaping
	e.mu.Unlock()
	if workersLeft != 0 || reaping {
		t.Fatalf("%d workers and reaping %v a timeout after the second worker parked, want both reaped and the reaper gone",
			workersLeft, reaping)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(parks) != 2 {
		t.Fatalf("%d parks, want 2", len(parks))
	}
	if len(wakes) != len(parks) {
		t.Fatalf("the reaper read the clock %d times for %d idle workers, want once each",
			len(wakes), len(parks))
	}
	for i, wake := range wakes {
		if d := wake.Sub(parks[i].Add(timeout)); d != 0 {
			t.Errorf("wake-up %d came %v after idle worker %d's deadline, want exactly at it", i+1, d, i+1)
		}
	}
}
