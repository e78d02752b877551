package crew_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Future.Cancel from another goroutine racing a helping Wait inside a function of a New(1)
// pool: decided once; Wait returns.
func TestAmidFutureCancelRacesHelpingWait(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	sub := p.Sub(1, crew.WithPriority(1))
	var bad atomic.Int64
	for i := range 300 {
		g, _ := sub.Group(context.Background())
		g.Go(func(ctx context.Context) error {
			var ran atomic.Bool
			f := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
				ran.Store(true)
				return 7, nil
			})
			got := make(chan bool, 1)
			go func() {
				if i%2 == 0 {
					time.Sleep(time.Duration(i%7) * time.Microsecond)
				}
				got <- f.Cancel()
			}()
			v, err := f.Wait()
			c := <-got
			switch {
			case c && (ran.Load() || !errors.Is(err, context.Canceled)):
				bad.Add(1)
				t.Errorf("Cancel true, ran=%v Wait=%v,%v", ran.Load(), v, err)
			case !c && (!ran.Load() || err != nil || v != 7):
				bad.Add(1)
				t.Errorf("Cancel false, ran=%v Wait=%v,%v", ran.Load(), v, err)
			}
			return nil
		})
		if err := returnsWithin(t, "group", g.Wait); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	idleIdentity(t, "root", p.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// A MapSeq range inside a task on New(1) whose loop body runs another MapSeq (from the
// task's context) and then calls StopNow on the pool: every range ends.
func TestAmidNestedStreamsInLoopBodyThenStopNow(t *testing.T) {
	for _, stopAt := range []int{-1, 3} {
		p := crew.New(1, crew.WithQueueSize(1))
		g, _ := p.Group(context.Background())
		var outerErr error
		var inner atomic.Int64
		g.Go(func(ctx context.Context) error {
			n := 0
			for v, err := range crew.MapSeq(ctx, p, countTo(10), func(ctx context.Context, v int) (int, error) { return v, nil }) {
				if err != nil {
					outerErr = err
					return err
				}
				for w, err := range crew.MapSeqUnordered(ctx, p, countTo(3), func(ctx context.Context, w int) (int, error) { return v * w, nil }) {
					if err != nil {
						return err
					}
					_ = w
					inner.Add(1)
				}
				if n == stopAt {
					p.StopNow()
				}
				n++
			}
			return nil
		})
		err := returnsWithin(t, "group Wait", g.Wait)
		if stopAt < 0 {
			if err != nil || inner.Load() != 30 {
				t.Errorf("no stop: err %v inner %d", err, inner.Load())
			}
		} else if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("stopAt %d: err %v (outer %v)", stopAt, err, outerErr)
		}
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		idleIdentity(t, "pool", p.Stats())
	}
}

// Completed over futures some of which are canceled, on a paused sub-pool: every future is
// yielded once, the canceled ones at once.
func TestAmidCompletedWithCanceledFutures(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	sub := p.Sub(1)
	sub.Pause()
	var fs []*crew.Future[int]
	for i := range 10 {
		fs = append(fs, crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) { return i, nil }))
	}
	for i := 0; i < 10; i += 2 {
		if !fs[i].Cancel() {
			t.Fatalf("Cancel of a queued future on a paused pool = false")
		}
	}
	n := 0
	done := goRun(func() {
		for f := range crew.Completed(fs...) {
			_, err := f.Wait()
			if n < 5 && !errors.Is(err, context.Canceled) {
				t.Errorf("yield %d: %v, want the canceled ones first", n, err)
			}
			n++
			if n == 5 {
				sub.Resume()
			}
		}
	})
	awaitReturn(t, "Completed", done)
	if n != 10 {
		t.Errorf("yielded %d", n)
	}
	p.Wait()
	s := sub.Stats()
	idleIdentity(t, "sub", s)
	if s.Skipped != 5 {
		t.Errorf("Skipped %d, want 5", s.Skipped)
	}
}
