package crew_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

// Exactly once under overload: every accepted task ran exactly once, or was handed back
// exactly once (by StopNow or to the discard handler), never both; no refused task ran; and
// the counters add up. 64 submitters are released together while the overflow policy of each
// round, Pause, Resume and StopNow fire.
func TestStressOverflowPoliciesPauseAndStopNow(t *testing.T) {
	n := 300
	if testing.Short() || racetest.Enabled {
		n = 80
	}
	policies := []crew.Overflow{crew.Block, crew.Reject, crew.CallerRuns, crew.DiscardOldest}
	for round := range 12 {
		policy := policies[round%len(policies)]
		r := rand.New(rand.NewPCG(uint64(round), 7))
		var handingBack atomic.Bool
		counts := make([]atomic.Int32, 64*n)
		var mu sync.Mutex
		var dropped []func()
		p := crew.New(1+r.IntN(4), crew.WithQueueSize(1+r.IntN(8)), crew.WithOverflow(policy),
			crew.WithDiscardHandler(func(v any) {
				mu.Lock()
				dropped = append(dropped, v.(func()))
				mu.Unlock()
			}))
		var accepted atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range n {
					k := g*n + i
					task := func() {
						if handingBack.Load() {
							counts[k].Add(1000)
						} else {
							counts[k].Add(1)
						}
					}
					var ok bool
					if i%5 == 0 {
						ok = p.TrySubmit(task)
					} else {
						ok = p.Submit(task) == nil
					}
					if ok {
						accepted.Add(1)
					}
				}
			}()
		}
		close(start)
		var back []func()
		for step := range 20 {
			switch r.IntN(3) {
			case 0:
				p.Pause()
			case 1:
				p.Resume()
			case 2:
				if step > 15 {
					back = append(back, p.StopNow()...)
				}
			}
		}
		p.Resume()
		wg.Wait()
		back = append(back, p.StopNow()...)
		p.StopAndWait()
		handingBack.Store(true)
		for _, f := range back {
			f()
		}
		for _, f := range dropped {
			f()
		}
		var settled int64
		for k := range counts {
			switch c := counts[k].Load(); c {
			case 0:
			case 1, 1000:
				settled++
			default:
				t.Fatalf("round %d (policy %d): task %d count %d, want 1 (ran) or 1000 (handed back)", round, policy, k, c)
			}
		}
		if settled != accepted.Load() {
			t.Fatalf("round %d (policy %d): %d settled, %d accepted", round, policy, settled, accepted.Load())
		}
		s := p.Stats()
		if s.Accepted != s.Completed+s.Panicked+uint64(s.Running+s.Waiting)+s.Discarded+crew.Removed(p) ||
			s.Discarded != uint64(len(dropped)) || crew.Removed(p) != uint64(len(back)) {
			t.Fatalf("round %d: Stats %+v, removed %d, handed back %d, dropped %d", round, s, crew.Removed(p), len(back), len(dropped))
		}
	}
}
