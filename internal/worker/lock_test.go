package worker

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestLockYieldsBeforeWaiting checks lock's contract: a free mutex is taken without yielding;
// a taken one is tried again after each of lockYields yields, and only then does the caller
// wait in Lock, yielding no more, until the holder releases it.
func TestLockYieldsBeforeWaiting(t *testing.T) {
	var yields atomic.Int64
	defer func(f func()) { yield = f }(yield)
	yield = func() { yields.Add(1) }

	e := &Engine[int]{}
	e.lock()
	if n := yields.Load(); n != 0 {
		t.Fatalf("lock of a free mutex yielded %d times, want 0", n)
	}

	var acquired atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.lock()
		acquired.Store(true)
		e.mu.Unlock()
	}()
	waitUntil(t, "the yields of the second lock", func() bool { return yields.Load() >= lockYields })
	time.Sleep(10 * time.Millisecond) // room for a broken lock to yield again or barge in
	if n := yields.Load(); n != lockYields {
		t.Fatalf("lock yielded %d times while the mutex was held, want %d", n, lockYields)
	}
	if acquired.Load() {
		t.Fatal("lock returned while another goroutine held the mutex")
	}
	e.mu.Unlock()
	<-done
	if !acquired.Load() {
		t.Fatal("lock never returned after the mutex was released")
	}
}

// TestLockExcludes runs many goroutines through lock and a non-atomic counter: under the race
// detector any overlap of two critical sections is reported, and a lost update shows in the
// total.
func TestLockExcludes(t *testing.T) {
	const goroutines, rounds = 16, 2000
	e := &Engine[int]{}
	counter := 0
	done := make(chan struct{})
	for range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for range rounds {
				e.lock()
				counter++
				e.mu.Unlock()
			}
		}()
	}
	for range goroutines {
		<-done
	}
	if want := goroutines * rounds; counter != want {
		t.Fatalf("counter = %d after %d locked increments", counter, want)
	}
}
