package worker

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
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
	id := make(chan uint64, 1)
	go func() {
		defer close(done)
		id <- goroutineID()
		e.lock()
		acquired.Store(true)
		e.mu.Unlock()
	}()
	// Once the goroutine is inside Mutex.Lock it has stopped yielding: lock yields only
	// before it calls Lock. A lock that yielded on and on would never get there.
	locker := <-id
	waitUntil(t, "the second lock to wait in Mutex.Lock", func() bool {
		return strings.Contains(stackOf(locker), "sync.(*Mutex).Lock(")
	})
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

// stackOf returns the stack of goroutine id, or "" if it has ended.
func stackOf(id uint64) string {
	header := fmt.Appendf(nil, "goroutine %d [", id)
	for _, g := range bytes.Split(allStacks(), []byte("\n\n")) {
		if bytes.HasPrefix(g, header) {
			return string(g)
		}
	}
	return ""
}

// allStacks returns the stacks of all goroutines, whatever their length.
func allStacks() []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
