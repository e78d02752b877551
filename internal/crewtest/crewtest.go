// Package crewtest holds helpers that crew's tests share across packages and modules: goroutines
// released together, and the load and the rejections that the tests of the integration modules
// (prom, otel) put on a pool before they check what their metrics report. It is imported by
// tests only.
package crewtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// Spawn starts n goroutines, counted by wg, that each wait for release and then run fn with
// their index.
func Spawn(wg *sync.WaitGroup, n int, release <-chan struct{}, fn func(i int)) {
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			fn(i)
		}()
	}
}

// SubmitCounts counts the submits of KeepBusy.
type SubmitCounts struct{ Accepted, Refused atomic.Uint64 }

// KeepBusy starts 8 submitters, counted by wg, that wait for start and then, until stop is
// closed, submit to p tasks that return and tasks that panic (p needs a panic handler): half
// with Submit, half with TrySubmit, which a full queue refuses.
func KeepBusy(t testing.TB, wg *sync.WaitGroup, p *crew.Pool, start, stop <-chan struct{}) *SubmitCounts {
	c := &SubmitCounts{}
	Spawn(wg, 8, start, func(int) {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			task := func() {}
			if i%7 == 0 {
				task = func() { panic("planned panic") }
			}
			if i%2 == 0 {
				if err := p.Submit(task); err != nil {
					t.Errorf("Submit: %v", err)
					return
				}
				c.Accepted.Add(1)
			} else if p.TrySubmit(task) {
				c.Accepted.Add(1)
			} else {
				c.Refused.Add(1)
			}
		}
	})
	return c
}

// cancelOnDone is a context that cancels itself when its Done channel is asked for.
// SubmitContext checks Err before it asks, so a submit given a cancelOnDone on a full queue
// gets past that check, blocks, and then finds its context ended: a blocked submit whose
// context ended first, made without waiting for a timer.
type cancelOnDone struct {
	context.Context
	cancel context.CancelFunc
}

func (c cancelOnDone) Done() <-chan struct{} {
	c.cancel()
	return c.Context.Done()
}

// RejectedTwice returns a pool of one worker and a queue of one, both held full until the test
// ends, that has rejected two submits: a TrySubmit refused by the full queue, and a
// SubmitContext that blocked on it and whose context ended first. Its Stats.Rejected is 1 and
// its Stats.Canceled 1.
func RejectedTwice(t testing.TB) *crew.Pool {
	t.Helper()
	p := crew.New(1, crew.WithQueueSize(1))
	release := make(chan struct{})
	t.Cleanup(p.StopAndWait) // cleanups run last first: after release is closed
	t.Cleanup(func() { close(release) })

	// One task holds the worker and one fills the queue.
	started := make(chan struct{})
	if err := p.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	if p.TrySubmit(func() {}) {
		t.Fatal("TrySubmit on a full queue succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := p.SubmitContext(cancelOnDone{ctx, cancel}, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext on a full queue with its context ending = %v, want context.Canceled", err)
	}
	return p
}
