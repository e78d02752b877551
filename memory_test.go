package crew_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// settledHeap returns the live heap after collecting garbage.
func settledHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFinishedTasksLeaveHeapAndGoroutinesNearStart: after a million tasks have run and the
// idle timeout has passed, the pool's workers have exited and its queue has given its memory
// back, without stopping the pool.
func TestFinishedTasksLeaveHeapAndGoroutinesNearStart(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes heap and goroutine costs")
	}
	n := 1_000_000
	if testing.Short() {
		n = 200_000
	}
	goroutines, heap := runtime.NumGoroutine(), settledHeap()

	p := crew.New(1000, crew.WithIdleTimeout(10*time.Millisecond))
	var ran atomic.Int64
	gate := make(chan struct{})
	for range 1000 {
		p.Submit(func() { <-gate; ran.Add(1) })
	}
	task := func() { ran.Add(1) }
	for range n { // queued behind the blocked workers: the queue grows to n
		p.Submit(task)
	}
	if s := p.Stats(); s.Waiting < n/2 {
		t.Fatalf("Stats = %+v: the queue did not fill", s)
	}
	close(gate)
	p.Wait()
	if ran.Load() != int64(n+1000) {
		t.Fatalf("%d of %d tasks ran", ran.Load(), n+1000)
	}
	waitFor(t, "idle workers to be reaped", func() bool {
		s := p.Stats()
		return s.Idle == 0 && s.Running == 0
	})
	waitFor(t, "worker goroutines to exit", func() bool { return runtime.NumGoroutine() <= goroutines+1 })
	if grown := int64(settledHeap()) - int64(heap); grown > 1<<20 {
		t.Fatalf("heap grew by %d bytes after %d finished tasks, want under 1 MiB", grown, n)
	}
	p.StopAndWait()
	if got := runtime.NumGoroutine(); got > goroutines {
		t.Fatalf("%d goroutines after StopAndWait, %d before", got, goroutines)
	}
}

// TestBoundedQueueBoundsMemory: with WithQueueSize(n), offering far more tasks than fit keeps
// only n of them (and what they reference) alive.
func TestBoundedQueueBoundsMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes heap costs")
	}
	const queued, offered, payload = 1000, 100_000, 1024
	p := crew.New(1, crew.WithQueueSize(queued), crew.WithNonBlocking())
	gate := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-gate })
	<-started
	heap := settledHeap()
	var kept atomic.Int64
	accepted := 0
	for range offered {
		buf := make([]byte, payload)
		if p.TrySubmit(func() { kept.Add(int64(len(buf))) }) {
			accepted++
		}
	}
	grown := int64(settledHeap()) - int64(heap)
	if accepted != queued {
		t.Fatalf("%d tasks accepted, want %d", accepted, queued)
	}
	// n payloads plus their closures and queue slots; the 99,000 refused payloads
	// (about 100 MB) must be garbage.
	if limit := int64(queued * (payload + 256)); grown > limit {
		t.Fatalf("heap grew by %d bytes holding %d queued tasks, want under %d", grown, queued, limit)
	}
	close(gate)
	p.StopAndWait()
	if kept.Load() != queued*payload {
		t.Fatalf("queued tasks saw %d bytes, want %d", kept.Load(), queued*payload)
	}
}
