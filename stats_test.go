package crew_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

func TestStatsAddUp(t *testing.T) {
	t.Parallel()
	p := crew.New(2, crew.WithPanicHandler(func(any, []byte) {}))
	for i := range 100 {
		if i%10 == 0 {
			p.Submit(func() { panic("boom") })
		} else {
			p.Submit(func() {})
		}
	}
	p.StopAndWait()
	s := p.Stats()
	if s.Accepted != 100 || s.Completed != 90 || s.Panicked != 10 || s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestStatsSnapshotIsConsistentUnderLoad(t *testing.T) {
	t.Parallel()
	p := crew.New(3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					p.Submit(func() {})
				}
			}
		}()
	}
	var prev crew.Stats
	for range 2000 {
		s := p.Stats()
		if s.Completed+s.Panicked > s.Accepted || s.Running > s.MaxWorkers ||
			s.Accepted < prev.Accepted || s.Completed < prev.Completed {
			t.Fatalf("inconsistent snapshot %+v after %+v", s, prev)
		}
		prev = s
	}
	close(stop)
	wg.Wait()
	p.StopAndWait()
}

// TestCanceledCountsBlockedSubmitsWhoseContextEnded: Stats.Canceled, not Rejected, counts each
// SubmitContext or InvokeContext that waited on the full queue until its context ended, and
// each one made with a context that had already ended.
func TestCanceledCountsBlockedSubmitsWhoseContextEnded(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, []crew.Option{crew.WithQueueSize(1)}, func(t *testing.T, p testPool) {
		const n = 3
		release := holdWorkers(t, p, 1, 1)
		for range n {
			// The context ends long after the submit has found the queue full and blocked.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			err := p.submitContext(ctx, func() { t.Error("task ran after its submit gave up") })
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("submitContext = %v, want context.DeadlineExceeded", err)
			}
		}
		if s := p.Stats(); s.Canceled != n || s.Rejected != 0 || s.Accepted != 2 {
			t.Fatalf("Stats = %+v, want %d canceled, none rejected, 2 accepted", s, n)
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.submitContext(ended, func() { t.Error("task of an ended context ran") }); !errors.Is(err, context.Canceled) {
			t.Fatalf("submitContext with an ended context = %v, want context.Canceled", err)
		}
		if s := p.Stats(); s.Canceled != n+1 || s.Rejected != 0 {
			t.Fatalf("Stats = %+v, want %d canceled, none rejected", s, n+1)
		}
		release()
		p.StopAndWait()
	})
}
