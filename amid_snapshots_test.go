package crew_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// watchSnapshots checks every snapshot of pool while done is open: no counter goes backwards,
// nothing ends that was not accepted, every accepted task not ended is Running or Waiting.
func watchSnapshots(t *testing.T, name string, pool *crew.Pool, ceiling int, done <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var prev crew.Stats
		for {
			s := pool.Stats()
			ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
			var err string
			switch {
			case ended > s.Accepted:
				err = "more ended than accepted"
			case s.Running < 0 || s.Waiting < 0 || s.Idle < 0:
				err = "negative gauge"
			case uint64(s.Running+s.Waiting) < s.Accepted-ended:
				err = "an accepted task not ended is neither Running nor Waiting"
			case s.Running > ceiling:
				err = "Running above every limit"
			case countersWentBack(s, prev):
				err = "a counter went backwards"
			}
			if err != "" {
				t.Errorf("%s: %s: %+v after %+v", name, err, s, prev)
				return
			}
			prev = s
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return &wg
}

// Stats snapshots while futures are canceled, functions skipped and run in lent slots, on a
// pool and its sub-pools, with pause and resize storms; then StopNow.
func TestAmidStatsSnapshotsAcrossLives(t *testing.T) {
	t.Parallel()
	p := crew.New(3, crew.WithQueueSize(4), crew.WithPanicHandler(func(any, []byte) {}))
	subs := []*crew.Pool{p, p.Sub(2, crew.WithPriority(1)), p.Sub(1, crew.WithQueueSize(2))}
	subs = append(subs, subs[1].Sub(1))
	done := make(chan struct{})
	var watchers []*sync.WaitGroup
	for i, s := range subs {
		watchers = append(watchers, watchSnapshots(t, fmt.Sprint("pool ", i), s, 3, done))
	}
	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() { p.Pause(); time.Sleep(30 * time.Microsecond); p.Resume(); time.Sleep(30 * time.Microsecond) })
	repeatUntil(&storms, stop, func() { p.Resize(1); time.Sleep(30 * time.Microsecond); p.Resize(3) })
	var work sync.WaitGroup
	var hung atomic.Int32
	for w := range 6 {
		work.Add(1)
		go func() {
			defer work.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				pool := subs[(w+i)%len(subs)]
				ctx, cancel := context.WithCancel(context.Background())
				f := crew.GoContext(ctx, pool, func(ctx context.Context) (int, error) {
					switch i % 4 {
					case 0:
						g, _ := pool.Group(ctx)
						for j := range 3 {
							g.Go(func(context.Context) error {
								if j == 1 {
									return fmt.Errorf("fail")
								}
								return nil
							})
						}
						return 0, g.Wait()
					case 1:
						_, err := crew.Map(ctx, p, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) {
							if v == 2 {
								panic(nil)
							}
							return v, nil
						})
						return 0, err
					case 2:
						inner := crew.GoContext(ctx, pool, func(context.Context) (int, error) { return 1, nil })
						if i%8 == 2 {
							inner.Cancel()
						}
						return inner.Wait()
					}
					return 0, nil
				})
				pool.TrySubmit(func() {})
				switch i % 3 {
				case 0:
					f.Cancel()
				case 1:
					cancel()
				}
				select {
				case <-f.Done():
				case <-time.After(10 * time.Second):
					hung.Add(1)
					cancel()
					return
				}
				cancel()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	work.Wait()
	storms.Wait()
	if hung.Load() > 0 {
		t.Fatalf("%d futures hung; stats %+v", hung.Load(), p.Stats())
	}
	p.Resume()
	awaitReturn(t, "Wait", goRun(p.Wait))
	close(done)
	for _, w := range watchers {
		w.Wait()
	}
	for i, s := range subs {
		idleIdentity(t, fmt.Sprint("pool ", i), s.Stats())
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
}

// StopNow while functions wait in lent slots, futures are canceled and sub-pools' workers
// wait in a paused parent: every future, group and Map returns, Stats add up, no goroutine
// is left.
func TestAmidStopNowAmidHelpingWaits(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		p := crew.New(2, crew.WithQueueSize(2))
		sub := p.Sub(1)
		started := make(chan struct{}, 16)
		var outs []*crew.Future[int]
		for i := range 4 {
			pool := []*crew.Pool{p, sub}[i%2]
			outs = append(outs, crew.GoContext(context.Background(), pool, func(ctx context.Context) (int, error) {
				started <- struct{}{}
				g, _ := p.Group(ctx)
				for range 4 {
					g.Go(func(ctx context.Context) error {
						time.Sleep(100 * time.Microsecond)
						inner, _ := p.Group(ctx) // on p: a group on sub made in a function of p would not help
						inner.Go(func(context.Context) error { return nil })
						return inner.Wait()
					})
				}
				return 0, g.Wait()
			}))
		}
		<-started
		if round%2 == 0 {
			p.Pause()
		}
		for _, f := range outs[2:] {
			f.Cancel()
		}
		var handed []func()
		if round%3 == 0 {
			handed = sub.StopNow()
		}
		handed = append(handed, p.StopNow()...)
		for i, f := range outs {
			awaitReturn(t, fmt.Sprint("round ", round, " future ", i), goRun(func() { f.Wait() }))
		}
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		if len(handed) != 0 {
			t.Errorf("StopNow handed back %d plain tasks, none was submitted", len(handed))
		}
		idleIdentity(t, "sub", sub.Stats())
		idleIdentity(t, "p", p.Stats())
	}
}
