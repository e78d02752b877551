//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// keyedFull returns, in a synctest bubble, a Keyed on a pool of one worker whose queue of one
// is full: key 0's task holds the worker until release is closed, and key 1's task waits.
func keyedFull(t *testing.T, opts ...crew.Option) (p *crew.Pool, k *crew.Keyed[int], release chan struct{}) {
	t.Helper()
	p = crew.New(1, crew.WithMaxWait(time.Hour), crew.WithMaxBlocked(5)) // the pool's own: not the Keyed's
	k = crew.NewKeyed[int](p, append([]crew.Option{crew.WithQueueSize(1)}, opts...)...)
	release = make(chan struct{})
	must(t, k.Submit(0, func() { <-release }))
	synctest.Wait() // key 0's task runs: the queue is empty
	must(t, k.Submit(1, func() {}))
	synctest.Wait()
	if s := k.Stats(); s.Running != 1 || s.Waiting != 1 {
		t.Fatalf("Stats %+v, want 1 running and 1 waiting", s)
	}
	return p, k, release
}

// TestKeyedMaxWaitBoundsABlockedSubmit: with NewKeyed's WithMaxWait(d), a submit blocked on
// the Keyed's full queue returns ErrQueueFull after d exactly, counted in Rejected, and its
// task never runs; one that finds room before d is accepted; SubmitContext gives up at the
// earlier of its context's end and d. The pool's own WithMaxWait does not apply.
func TestKeyedMaxWaitBoundsABlockedSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 30 * time.Millisecond
		p, k, release := keyedFull(t, crew.WithMaxWait(d))
		start := time.Now()
		if err := k.Submit(2, func() { t.Error("a refused task ran") }); !errors.Is(err, crew.ErrQueueFull) {
			t.Fatalf("Submit on a full Keyed past WithMaxWait = %v, want ErrQueueFull", err)
		}
		if waited := time.Since(start); waited != d {
			t.Errorf("the submit waited %v, want %v", waited, d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), d/3)
		defer cancel()
		start = time.Now()
		if err := k.SubmitContext(ctx, 2, func() { t.Error("a refused task ran") }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("SubmitContext whose context ends first = %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != d/3 {
			t.Errorf("SubmitContext waited %v, want %v", waited, d/3)
		}
		// Room comes before d: the submit is accepted.
		ran := make(chan struct{})
		errc := make(chan error, 1)
		go func() { errc <- k.Submit(3, func() { close(ran) }) }()
		synctest.Wait()
		time.Sleep(d / 2)
		close(release)
		if err := <-errc; err != nil {
			t.Fatalf("a submit that found room before WithMaxWait = %v", err)
		}
		k.Wait()
		<-ran
		s := k.Stats()
		if s.Rejected != 1 || s.Canceled != 1 || s.Accepted != 3 || s.Completed != 3 {
			t.Errorf("Stats %+v, want 1 rejected, 1 canceled, 3 accepted and completed", s)
		}
		p.StopAndWait()
	})
}

// TestKeyedMaxBlockedRefusesTheSubmitBeyondIt: with NewKeyed's WithMaxBlocked(m), m submits
// wait for room in the Keyed's full queue and the next returns ErrQueueFull at once; once
// room comes, the waiting ones are accepted in turn. WithMaxBlocked(0) refuses every submit
// that would wait. The pool's own WithMaxBlocked does not apply.
func TestKeyedMaxBlockedRefusesTheSubmitBeyondIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, k, release := keyedFull(t, crew.WithMaxBlocked(2))
		errc := make(chan error, 2)
		for key := range 2 {
			go func() { errc <- k.Submit(10+key, func() {}) }()
		}
		synctest.Wait() // both wait for room
		start := time.Now()
		if err := k.Submit(20, func() { t.Error("a refused task ran") }); !errors.Is(err, crew.ErrQueueFull) {
			t.Fatalf("a third blocking Submit past WithMaxBlocked(2) = %v, want ErrQueueFull", err)
		}
		if time.Since(start) != 0 {
			t.Error("the submit past WithMaxBlocked waited")
		}
		close(release)
		for range 2 {
			if err := <-errc; err != nil {
				t.Errorf("a waiting submit = %v, want nil once room came", err)
			}
		}
		k.Wait()
		if s := k.Stats(); s.Rejected != 1 || s.Accepted != 4 || s.Completed != 4 {
			t.Errorf("Stats %+v, want 1 rejected, 4 accepted and completed", s)
		}
		p.StopAndWait()

		p, k, release = keyedFull(t, crew.WithMaxBlocked(0))
		if err := k.Submit(2, func() {}); !errors.Is(err, crew.ErrQueueFull) {
			t.Errorf("Submit under WithMaxBlocked(0) on a full Keyed = %v, want ErrQueueFull", err)
		}
		close(release)
		k.Wait()
		p.StopAndWait()
	})
}

// TestKeyedBlockedSubmitsLeaveWhenThePoolStops: under WithMaxBlocked(1), a blocked submit
// that gives up (its context ended) frees its place, so the next submit may wait in turn; a
// submit blocked when the pool stops returns ErrStopped, and neither counts as rejected.
func TestKeyedBlockedSubmitsLeaveWhenThePoolStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, k, release := keyedFull(t, crew.WithMaxWait(time.Hour), crew.WithMaxBlocked(1))
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- k.SubmitContext(ctx, 2, func() { t.Error("a refused task ran") }) }()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("a blocked SubmitContext whose context ended = %v, want Canceled", err)
		}
		go func() { errc <- k.Submit(3, func() { t.Error("a refused task ran") }) }()
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("the next submit returned %v at once, want it to wait in the place freed", err)
		default:
		}
		p.Stop()
		if err := <-errc; !errors.Is(err, crew.ErrStopped) {
			t.Errorf("a blocked submit when the pool stopped = %v, want ErrStopped", err)
		}
		close(release)
		p.StopAndWait()
		if s := k.Stats(); s.Rejected != 0 || s.Canceled != 1 || s.Accepted != 2 || s.Completed != 2 {
			t.Errorf("Stats %+v, want 2 accepted and completed, 1 canceled, none rejected", s)
		}
	})
}
