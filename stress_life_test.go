package crew_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestStressNestedWaitsAmidStorms runs fork/join trees from many goroutines on a pool of 2
// with a queue of 2 and on its prioritised sub-pools, while other goroutines pause and
// resume, resize, cancel futures and end contexts for a while: once the storms end, every
// tree completes (a wait that helps runs nothing in its slot while its pool is paused, so a
// storm of pauses may hold a tree back while it lasts) with every one of its functions run,
// and once idle every pool's Stats add up.
func TestStressNestedWaitsAmidStorms(t *testing.T) {
	t.Parallel()
	trees, depth := 24, 6
	if testing.Short() {
		trees, depth = 8, 5
	}
	p := crew.New(2, crew.WithQueueSize(2))
	subs := []*crew.Pool{p, p.Sub(1), p.Sub(2, crew.WithPriority(1)), p.Sub(1, crew.WithQueueSize(1))}
	var fork func(ctx context.Context, pool *crew.Pool, d int, ran *atomic.Int64) error
	fork = func(ctx context.Context, pool *crew.Pool, d int, ran *atomic.Int64) error {
		ran.Add(1)
		if d == 0 {
			return nil
		}
		g, _ := pool.Group(ctx)
		for range 2 {
			g.Go(func(ctx context.Context) error { return fork(ctx, pool, d-1, ran) })
		}
		return g.Wait()
	}
	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() {
		subs[1].Pause()
		time.Sleep(50 * time.Microsecond)
		subs[1].Resume()
	})
	repeatUntil(&storms, stop, func() {
		p.Resize(1)
		time.Sleep(30 * time.Microsecond)
		p.Resize(3)
		time.Sleep(30 * time.Microsecond)
	})
	var canceled atomic.Int64
	repeatUntil(&storms, stop, func() {
		ctx, cancel := context.WithCancel(context.Background())
		f := crew.GoContext(ctx, subs[2], func(context.Context) (int, error) { return 1, nil })
		if time.Now().UnixNano()%2 == 0 {
			cancel()
		} else if f.Cancel() {
			canceled.Add(1)
		}
		if _, err := f.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("a storm future: Wait = %v", err)
		}
		cancel()
	})
	storming := 300 * time.Millisecond
	if testing.Short() {
		storming = 100 * time.Millisecond
	}
	time.AfterFunc(storming, func() { close(stop) })
	var wg sync.WaitGroup
	want := int64(1<<(depth+1) - 1)
	for i := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := subs[i%len(subs)]
			var ran atomic.Int64
			f := crew.GoContext(context.Background(), pool, func(ctx context.Context) (int64, error) {
				return 0, fork(ctx, pool, depth, &ran)
			})
			select {
			case <-f.Done():
			case <-time.After(60 * time.Second):
				t.Errorf("tree %d hung: %d of %d functions ran; stats %+v", i, ran.Load(), want, pool.Stats())
				return
			}
			if _, err := f.Wait(); err != nil || ran.Load() != want {
				t.Errorf("tree %d: %d of %d functions ran, Wait error %v", i, ran.Load(), want, err)
			}
		}()
	}
	wg.Wait()
	storms.Wait()
	p.StopAndWait()
	for i, s := range subs {
		idleIdentity(t, "pool "+string(rune('0'+i)), s.Stats())
	}
	if t.Failed() {
		return
	}
	t.Logf("%d storm futures canceled", canceled.Load())
}
