package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// lifeKeyedGoexit makes keyed tasks call runtime.Goexit (Finished was missed for them before
// the keyed.go fix: TestAmidKeyedGoexitMissesFinishedHook).
const lifeKeyedGoexit = true

// Keyed on a sub-pool with hooks: tasks that call Goexit or panic(nil), Pause/Resume and
// Resize of the parent meanwhile; one Queued/Started/Finished per keyed task, order per key,
// Keyed.Stats and the pools' Stats add up.
func TestAmidKeyedOnSubPoolWithHooksAndGoexit(t *testing.T) {
	t.Parallel()
	var hs lifeHookCounts
	var handled atomic.Int64
	p := crew.New(3, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	sub := p.Sub(2, crew.WithHooks(hs.hooks()), crew.WithPriority(1))
	k := crew.NewKeyed[int](sub, crew.WithQueueSize(4))
	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() { p.Pause(); time.Sleep(50 * time.Microsecond); p.Resume(); time.Sleep(50 * time.Microsecond) })
	repeatUntil(&storms, stop, func() { p.Resize(1); time.Sleep(40 * time.Microsecond); p.Resize(3) })
	const keys, per = 4, 60
	var last [keys]atomic.Int64
	var bad atomic.Int64
	var ran atomic.Int64
	var wg sync.WaitGroup
	for key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				err := k.Submit(key, func() {
					if prev := last[key].Swap(int64(i + 1)); prev != int64(i) {
						bad.Add(1)
					}
					ran.Add(1)
					switch i % 7 {
					case 3:
						if lifeKeyedGoexit {
							runtime.Goexit()
						}
					case 5:
						panic(nil)
					}
				})
				if err != nil {
					t.Errorf("Submit = %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	close(stop)
	storms.Wait()
	p.Resume()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if bad.Load() != 0 {
		t.Errorf("%d keyed tasks ran out of order", bad.Load())
	}
	if ran.Load() != keys*per {
		t.Errorf("%d of %d keyed tasks ran", ran.Load(), keys*per)
	}
	ks := k.Stats()
	idleIdentity(t, "keyed", ks)
	if ks.Accepted != keys*per {
		t.Errorf("Keyed.Stats %+v, want Accepted %d", ks, keys*per)
	}
	nPanics := uint64(0)
	for i := range per {
		if i%7 == 5 {
			nPanics++
		}
	}
	if ks.Panicked != nPanics*keys || uint64(handled.Load()) != nPanics*keys {
		t.Errorf("Keyed.Stats.Panicked %d, handler %d, want %d", ks.Panicked, handled.Load(), nPanics*keys)
	}
	if hs.queued.Load() != keys*per || hs.started.Load() != keys*per || hs.finished.Load() != keys*per {
		t.Errorf("sub's hooks %v, want %d of each (one per keyed task)", &hs, keys*per)
	}
	if uint64(hs.panicked.Load()) != nPanics*keys {
		t.Errorf("Finished hooks with Panicked %d, want %d", hs.panicked.Load(), nPanics*keys)
	}
	idleIdentity(t, "sub", sub.Stats())
	idleIdentity(t, "p", p.Stats())
}

// Future.Cancel racing with workers, with helping waits and with StopNow, on a pool with
// hooks and a sub-pool: each future ends once with one outcome; Cancel true means it never
// ran; Started hooks match Completed+Panicked; Stats add up.
func TestAmidCancelRacesHelpingWaitsWithHooks(t *testing.T) {
	t.Parallel()
	var h, hs lifeHookCounts
	p := crew.New(2, crew.WithQueueSize(2), crew.WithHooks(h.hooks()))
	sub := p.Sub(1, crew.WithHooks(hs.hooks()))
	var mu sync.Mutex
	var bad []string
	report := func(s string) { mu.Lock(); bad = append(bad, s); mu.Unlock() }
	var outerWG sync.WaitGroup
	for round := range 40 {
		outerWG.Add(1)
		go func() {
			defer outerWG.Done()
			pool := []*crew.Pool{p, sub}[round%2]
			fut := crew.GoContext(context.Background(), pool, func(ctx context.Context) (int, error) {
				var fs []*crew.Future[int]
				var runs []*atomic.Int32
				for i := range 6 {
					r := new(atomic.Int32)
					runs = append(runs, r)
					fs = append(fs, crew.GoContext(ctx, p, func(context.Context) (int, error) { r.Add(1); return i, nil }))
				}
				canceled := make([]bool, len(fs))
				var cw sync.WaitGroup
				for i := range fs {
					if i%2 == 0 {
						cw.Add(1)
						go func() { defer cw.Done(); canceled[i] = fs[i].Cancel() }()
					}
				}
				for i, f := range fs {
					v, err := f.Wait()
					if err == nil && v != i {
						report(fmt.Sprintf("future %d = %d", i, v))
					}
				}
				cw.Wait()
				for i, f := range fs {
					_, err := f.Wait()
					n := runs[i].Load()
					switch {
					case canceled[i] && (n != 0 || !errors.Is(err, context.Canceled)):
						report(fmt.Sprintf("canceled future %d ran %d times, Wait %v", i, n, err))
					case !canceled[i] && (n != 1 || err != nil):
						report(fmt.Sprintf("future %d not canceled ran %d times, Wait %v", i, n, err))
					}
				}
				return 0, nil
			})
			select {
			case <-fut.Done():
			case <-time.After(10 * time.Second):
				report("an outer future hung")
			}
		}()
	}
	outerWG.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	awaitReturn(t, "p.Wait", goRun(p.Wait))
	s := p.Stats()
	idleIdentity(t, "p", s)
	idleIdentity(t, "sub", sub.Stats())
	checkHooksMatchStats(t, "sub", &hs, sub.Stats())
	if h.started.Load() != h.finished.Load() {
		t.Errorf("p's hooks %v", &h)
	}
	if uint64(h.started.Load())+s.Skipped < 20*6 {
		t.Errorf("p's hooks %v, stats %+v", &h, s)
	}
	p.StopAndWait()
}

// WithTaskTimeout on a parent and its sub-pools: inherited, overridden, reaching functions
// run in a lent slot, and the cause naming the timeout.
func TestAmidTaskTimeoutAcrossSubPoolsAndLentSlots(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithTaskTimeout(30*time.Millisecond), crew.WithQueueSize(1))
	defer p.StopAndWait()
	inherit := p.Sub(1)
	own := p.Sub(1, crew.WithTaskTimeout(time.Hour))
	deadlineIn := func(ctx context.Context) time.Duration {
		d, ok := ctx.Deadline()
		if !ok {
			return -1
		}
		return time.Until(d)
	}
	check := func(name string, pool *crew.Pool, wantShort bool) {
		t.Helper()
		f := crew.GoContext(context.Background(), pool, func(ctx context.Context) (time.Duration, error) {
			return deadlineIn(ctx), nil
		})
		d, err := f.Wait()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if wantShort && (d < 0 || d > 30*time.Millisecond) {
			t.Errorf("%s: deadline in %v, want within 30ms", name, d)
		}
		if !wantShort && (d < time.Minute) {
			t.Errorf("%s: deadline in %v, want about an hour", name, d)
		}
	}
	check("p", p, true)
	check("inherit", inherit, true)
	check("own", own, false)

	// a function in a lent slot gets its own deadline from its own start, and the cause says so
	f := crew.GoContext(context.Background(), own, func(ctx context.Context) (error, error) {
		g, _ := p.Group(ctx)
		var cause error
		g.Go(func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil
		})
		done := make(chan struct{})
		go func() { g.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			return nil, errors.New("the child never saw its task timeout")
		}
		return cause, nil
	})
	cause, err := f.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cause, crew.ErrTaskTimeout) || !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("cause = %v, want ErrTaskTimeout and DeadlineExceeded", cause)
	}
	p.Wait()
	for _, q := range []*crew.Pool{own, inherit, p} {
		idleIdentity(t, "pool", q.Stats())
	}
}
