//go:build go1.25

package crew_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// TestAmidSynctestTreeWithRateAndPause: a pool tree made inside a synctest bubble, with
// rate limits on the root and a sub-pool, CPUs and an adaptive limit, bounded queues with
// MaxWait, a pause held across a rate refill, Resize and StopAndWait. Everything runs exactly
// once and, once StopAndWait returns, the bubble has no goroutine left (synctest.Test fails
// otherwise). The root's rate bound holds on the fake clock.
func TestAmidSynctestTreeWithRateAndPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perSecond, burst = 100.0, 4
		var mu sync.Mutex
		var starts []time.Time
		root := crew.New(crew.CPUs, crew.WithRateLimit(perSecond, burst), crew.WithQueueSize(8),
			crew.WithMaxWait(50*time.Millisecond), crew.WithIdleTimeout(10*time.Millisecond))
		a := root.Sub(3, crew.WithPriority(1), crew.WithRateLimit(50, 2), crew.WithAdaptiveLimit(1))
		b := a.Sub(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest))
		pools := []*crew.Pool{root, a, b}
		var ran, accepted atomic.Int64
		task := func() {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			ran.Add(1)
			time.Sleep(3 * time.Millisecond)
		}
		var wg sync.WaitGroup
		for s := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 40 {
					p := pools[(s+i)%3]
					if err := p.Submit(task); err == nil {
						accepted.Add(1)
					}
					if i == 10 && s == 0 {
						root.Pause()
						time.Sleep(100 * time.Millisecond)
						root.Resume()
					}
					if i == 20 && s == 1 {
						a.Resize(1)
						time.Sleep(5 * time.Millisecond)
						a.Resize(4)
					}
					time.Sleep(time.Millisecond)
				}
			}()
		}
		wg.Wait()
		root.StopAndWait()
		var discarded uint64
		for i, p := range pools {
			s := p.Stats()
			idleIdentity(t, fmt.Sprintf("pool %d", i), s)
			discarded += s.Discarded
		}
		if uint64(ran.Load())+discarded != uint64(accepted.Load()) {
			t.Errorf("accepted %d, ran %d, discarded %d", accepted.Load(), ran.Load(), discarded)
		}
		// Root's rate bound: every start of a sub-pool's task counts in the root's rate.
		mu.Lock()
		defer mu.Unlock()
		for i := range starts {
			for j := i; j < len(starts); j++ {
				w := starts[j].Sub(starts[i]).Seconds()
				if float64(j-i+1) > burst+perSecond*w+1e-9 {
					t.Fatalf("%d starts within %v: more than burst %d + %v/s", j-i+1, starts[j].Sub(starts[i]), burst, perSecond)
				}
			}
		}
	})
}
