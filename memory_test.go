package crew_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestMillionTasksLeaveHeapAndGoroutinesAsTheyWere: a million tasks accepted (half of them
// queued at once behind busy workers) and finished leave the live heap and the goroutine count
// back near where they started: idle workers are reaped and the queue's segments are given back.
func TestMillionTasksLeaveHeapAndGoroutinesAsTheyWere(t *testing.T) {
	skipMemoryUnderRace(t)
	n := 1 << 20
	if testing.Short() {
		n = 1 << 17
	}
	baseG := runtime.NumGoroutine()
	baseHeap := heapInUse()

	p := crew.New(8, crew.WithIdleTimeout(5*time.Millisecond))
	hold := make(chan struct{})
	for range 8 {
		if err := p.Submit(func() { <-hold }); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Add(n)
	// Half queue up behind the held workers, so the queue holds n/2 tasks at its peak.
	for range n / 2 {
		if err := p.Submit(wg.Done); err != nil {
			t.Fatal(err)
		}
	}
	peak := heapInUse()
	if peak < baseHeap+uint64(n/2)*16 {
		t.Fatalf("live heap %d B with %d tasks queued, %d B before: the measurement sees nothing", peak, n/2, baseHeap)
	}
	close(hold)
	var subs sync.WaitGroup
	for s := range 8 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := s; i < n/2; i += 8 {
				if err := p.Submit(wg.Done); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	subs.Wait()
	wg.Wait()
	p.Wait()
	// Idle reaping: every worker exits after the idle timeout, leaving no goroutine.
	awaitStats(t, p, "idle workers to be reaped", func(s crew.Stats) bool {
		return s.Idle == 0 && s.Running == 0
	})
	awaitGoroutines(t, "after reaping", baseG)
	after := heapInUse()
	const slack = 512 << 10 // the pool itself, the queue's head segment, runtime noise
	if after > baseHeap+slack {
		t.Fatalf("live heap %d B after %d tasks, %d B before (peak %d B with the queue full): "+
			"more than %d B were kept", after, n, baseHeap, peak, slack)
	}
	if s := p.Stats(); s.Accepted != uint64(n+8) || s.Completed != s.Accepted {
		t.Fatalf("stats %+v, want %d submitted and completed", s, n+8)
	}
	p.StopAndWait()
	runtime.KeepAlive(p)
}

// TestBoundedQueueBoundsMemory: with the queue bounded, a flood of submits to a stuck pool
// keeps at most QueueSize tasks (and what they reference) alive; the refused ones are garbage.
func TestBoundedQueueBoundsMemory(t *testing.T) {
	skipMemoryUnderRace(t)
	const queue, payload = 1000, 1024
	tries := 1 << 20
	if testing.Short() {
		tries = 1 << 17
	}
	p := crew.New(1, crew.WithQueueSize(queue))
	hold := make(chan struct{})
	if err := p.Submit(func() { <-hold }); err != nil {
		t.Fatal(err)
	}
	base := heapInUse()
	accepted := 0
	for range tries {
		buf := make([]byte, payload)
		if p.TrySubmit(func() { buf[0]++ }) {
			accepted++
		}
	}
	held := heapInUse()
	if accepted != queue {
		t.Fatalf("%d of %d tries accepted, want exactly the queue size %d", accepted, tries, queue)
	}
	// Each queued task holds its closure and payload: about queue*(payload+64) bytes.
	limit := uint64(queue*(payload+128)) + 512<<10
	if held > base+limit {
		t.Fatalf("live heap grew by %d B with %d tasks queued and %d refused; bound %d B",
			held-base, queue, tries-queue, limit)
	}
	if s := p.Stats(); s.Rejected != uint64(tries-queue) || s.Waiting != queue {
		t.Fatalf("stats %+v, want %d rejected and %d waiting", s, tries-queue, queue)
	}
	close(hold)
	p.StopAndWait()
}

// TestQueuedLargeArgumentPinsAboutItsOwnSize: a 1 MB argument waiting in a FuncPool's queue
// keeps about 1 MB alive, not a queue segment of many such slots.
func TestQueuedLargeArgumentPinsAboutItsOwnSize(t *testing.T) {
	skipMemoryUnderRace(t)
	type big [1 << 20]byte
	hold := make(chan struct{})
	var ran atomic.Int32
	fp := crew.NewFunc(1, func(big) { ran.Add(1); <-hold })
	defer fp.StopAndWait()
	defer close(hold)
	if err := fp.Invoke(big{}); err != nil { // runs, and holds the one worker
		t.Fatal(err)
	}
	waitFor(t, "the first call to start", func() bool { return ran.Load() == 1 })
	base := heapInUse()
	if err := fp.Invoke(big{}); err != nil { // waits in the queue
		t.Fatal(err)
	}
	held := heapInUse()
	if s := fp.Stats(); s.Waiting != 1 {
		t.Fatalf("Stats = %+v, want one call waiting", s)
	}
	if grew := int64(held) - int64(base); grew > 3<<20 {
		t.Fatalf("one queued 1 MB argument grew the live heap by %d B, want about 1 MB", grew)
	}
}
