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

// TestStressClaimsRaceEveryParty races every party that may claim a queued function at once:
// workers, Future.Cancel, the end of the function's context, waits that run their own
// functions, a sub-pool's StopNow and a Shutdown that gives up and skips what is queued. Every
// future ends once, never runs twice, never runs after its Cancel reported true, and each
// pool's Stats add up once it has exited.
func TestStressClaimsRaceEveryParty(t *testing.T) {
	t.Parallel()
	callers, each := 16, 400
	if testing.Short() {
		each = 100
	}
	p := crew.New(2, crew.WithQueueSize(8))
	sub := p.Sub(2, crew.WithPriority(1))
	type outcome struct {
		runs     atomic.Int32
		canceled bool
		f        *crew.Future[int]
	}
	all := make([][]*outcome, callers)
	var wg sync.WaitGroup
	stopNow := make(chan struct{})
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				pool := p
				if i%2 == 1 {
					pool = sub
				}
				o := &outcome{}
				ctx, cancel := context.WithCancel(context.Background())
				if i%5 == 4 { // a function that forks on its pool and joins
					o.f = crew.GoContext(ctx, pool, func(ctx context.Context) (int, error) {
						o.runs.Add(1)
						g, _ := pool.Group(ctx)
						for range 2 {
							g.Go(func(context.Context) error { return nil })
						}
						return 1, g.Wait()
					})
				} else {
					o.f = crew.GoContext(ctx, pool, func(context.Context) (int, error) { o.runs.Add(1); return 1, nil })
				}
				switch i % 4 {
				case 0:
					o.canceled = o.f.Cancel()
				case 1:
					cancel()
				}
				cancel()
				all[c] = append(all[c], o)
				if c == 0 && i == each/2 {
					close(stopNow)
				}
			}
		}()
	}
	<-stopNow
	if got := sub.StopNow(); len(got) != 0 {
		t.Errorf("StopNow returned %d plain tasks; none was submitted", len(got))
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	p.Shutdown(ctx) // gives up at once, probably: the rest is skipped
	for c := range all {
		for i, o := range all[c] {
			select {
			case <-o.f.Done():
			case <-time.After(20 * time.Second):
				t.Fatalf("future %d of caller %d has not ended", i, c)
			}
			v, err := o.f.Wait()
			n := o.runs.Load()
			switch {
			case n > 1:
				t.Fatalf("future %d of caller %d ran %d times", i, c, n)
			case o.canceled && n != 0:
				t.Fatalf("future %d of caller %d ran after Cancel reported true", i, c)
			case n == 0 && err == nil:
				t.Fatalf("future %d of caller %d never ran, yet Wait = %d, nil", i, c, v)
			}
		}
	}
	p.StopAndWait()
	idleIdentity(t, "pool", p.Stats())
	idleIdentity(t, "sub-pool", sub.Stats())
}
