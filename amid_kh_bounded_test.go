package crew_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// NewKeyed WithQueueSize(n): "n accepted tasks may wait (across keys, excluding those
// running), and the next submit blocks until one starts, or returns ErrQueueFull under
// WithNonBlocking". Stats: a consistent snapshot. Checked under Pause/Resume and Resize with
// Submit, TrySubmit and SubmitContext racing.
func TestAmidKeyedBoundedQueueSnapshots(t *testing.T) {
	const qs = 3
	p := crew.New(2)
	defer p.StopAndWait()
	sub := p.Sub(2, crew.WithPriority(1))
	k := crew.NewKeyed[int](sub, crew.WithQueueSize(qs))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 200*time.Microsecond, p, sub)
	repeatUntil(&wg, stop, func() {
		sub.Resize(1 + rand.IntN(3))
		time.Sleep(300 * time.Microsecond)
	})
	var bad atomic.Value
	var snaps atomic.Int64
	repeatUntil(&wg, stop, func() {
		s := k.Stats()
		snaps.Add(1)
		ended := s.Completed + s.Panicked + s.Discarded + s.Returned
		if s.Waiting > qs || uint64(s.Running+s.Waiting) != s.Accepted-ended || s.Running > 3 {
			bad.CompareAndSwap(nil, s)
		}
	})
	var ran, acc atomic.Int64
	var canceled, full atomic.Int64
	var subs sync.WaitGroup
	for g := range 4 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range 300 {
				key := rand.IntN(6)
				task := func() {
					ran.Add(1)
					if i%5 == 0 {
						time.Sleep(50 * time.Microsecond)
					}
				}
				switch g {
				case 0:
					must(t, k.Submit(key, task))
					acc.Add(1)
				case 1:
					if k.TrySubmit(key, task) {
						acc.Add(1)
					} else {
						full.Add(1)
					}
				default:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(300))*time.Microsecond)
					err := k.SubmitContext(ctx, key, task)
					cancel()
					switch {
					case err == nil:
						acc.Add(1)
					case errors.Is(err, context.DeadlineExceeded):
						canceled.Add(1)
					default:
						t.Errorf("SubmitContext: %v", err)
					}
				}
			}
		}()
	}
	// Under the storms the 1200 submits, many of them blocked on the bounded queue until a
	// task starts, take seconds on a slow machine: the wait is for their progress.
	submitted := goRun(subs.Wait)
	for {
		n := acc.Load() + full.Load() + canceled.Load()
		if !poll(10*time.Second, func() bool {
			select {
			case <-submitted:
				return true
			default:
				return acc.Load()+full.Load()+canceled.Load() > n
			}
		}) {
			t.Fatalf("no submit returned for 10 s; %d returned", n)
		}
		select {
		case <-submitted:
		default:
			continue
		}
		break
	}
	awaitReturn(t, "k.Wait", goRun(k.Wait))
	close(stop)
	wg.Wait()
	p.Resume()
	sub.Resume()
	if v := bad.Load(); v != nil {
		t.Errorf("inconsistent snapshot: %+v", v)
	}
	s := k.Stats()
	idleIdentity(t, "keyed", s)
	if int64(s.Accepted) != acc.Load() || int64(s.Completed) != ran.Load() || ran.Load() != acc.Load() ||
		int64(s.Canceled) != canceled.Load() || int64(s.Rejected) != full.Load() {
		t.Errorf("stats %+v; accepted %d ran %d canceled %d full %d", s, acc.Load(), ran.Load(), canceled.Load(), full.Load())
	}
	t.Logf("snaps %d stats %+v", snaps.Load(), s)
}
