//go:build go1.25

package crew_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// sizedStartLog records task start times on the bubble's fake clock.
type sizedStartLog struct {
	mu     sync.Mutex
	starts map[string][]time.Time
}

func (l *sizedStartLog) add(names ...string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.starts == nil {
		l.starts = map[string][]time.Time{}
	}
	for _, n := range names {
		l.starts[n] = append(l.starts[n], now)
	}
}

// sizedCheckRate fails t if over some window the starts in ts exceed burst + perSecond·T.
func sizedCheckRate(t *testing.T, what string, ts []time.Time, perSecond float64, burst int) {
	t.Helper()
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range ts {
		for j := i; j < len(ts); j++ {
			T := ts[j].Sub(ts[i]).Seconds()
			if n := j - i + 1; float64(n) > float64(burst)+perSecond*T+1e-9 {
				t.Fatalf("%s: %d starts within %v, above burst %d + %v/s·T", what, n, ts[j].Sub(ts[i]), burst, perSecond)
			}
		}
	}
}

// A root's rate bounds the starts of sub-pools and sub-pools of sub-pools with priorities,
// and each sub-pool's own rate bounds its starts and its sub-pools', with tasks of varying
// length (so that workers go on to next tasks and ask Admits) and a Pause/Resume storm.
func TestAmidRateBoundsNestedPrioritySubPools(t *testing.T) {
	for seed := range 4 {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			var mu sync.Mutex
			d := func() time.Duration {
				mu.Lock()
				defer mu.Unlock()
				return time.Duration(rng.IntN(30)) * time.Millisecond
			}
			var log sizedStartLog
			root := crew.New(3, crew.WithRateLimit(40, 3))
			subA := root.Sub(2, crew.WithPriority(1), crew.WithRateLimit(10, 2))
			subB := root.Sub(4)
			subAA := subA.Sub(2, crew.WithPriority(2))
			subAB := subA.Sub(3, crew.WithRateLimit(100, 5))
			type target struct {
				p     *crew.Pool
				names []string
			}
			targets := []target{
				{root, []string{"root"}},
				{subA, []string{"root", "A"}},
				{subB, []string{"root", "B"}},
				{subAA, []string{"root", "A", "AA"}},
				{subAB, []string{"root", "A", "AB"}},
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 40 {
						tg := targets[(g+i)%len(targets)]
						dd := d()
						must(t, tg.p.Submit(func() { log.add(tg.names...); time.Sleep(dd) }))
						if i%5 == 0 {
							time.Sleep(d())
						}
					}
				}()
			}
			stop := make(chan struct{})
			var storm sync.WaitGroup
			storm.Add(1)
			go func() {
				defer storm.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(17 * time.Millisecond):
					}
					subA.Pause()
					time.Sleep(3 * time.Millisecond)
					subA.Resume()
				}
			}()
			wg.Wait()
			root.Wait()
			close(stop)
			storm.Wait()
			root.StopAndWait()
			if n := len(log.starts["root"]); n != 160 {
				t.Fatalf("%d of 160 tasks ran", n)
			}
			sizedCheckRate(t, "root", log.starts["root"], 40, 3)
			sizedCheckRate(t, "A", log.starts["A"], 10, 2)
			sizedCheckRate(t, "AB", log.starts["AB"], 100, 5)
		})
	}
}

// SetRateLimit with the same values again and again keeps the saved tokens ("The tokens
// already saved are kept, up to the new burst"): the bound holds as for one limit.
func TestAmidSetRateLimitStormKeepsTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log sizedStartLog
		p := crew.New(4, crew.WithRateLimit(10, 2))
		sub := p.Sub(2)
		for i := range 40 {
			q := p
			if i%2 == 1 {
				q = sub
			}
			must(t, q.Submit(func() { log.add("p"); time.Sleep(time.Millisecond) }))
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(3 * time.Millisecond):
				}
				p.SetRateLimit(10, 2)
			}
		}()
		p.Wait()
		close(stop)
		<-done
		p.StopAndWait()
		sizedCheckRate(t, "p", log.starts["p"], 10, 2)
	})
}

// SetRateLimit from inside a task of a sub-pool, lowering the parent's rate: later starts
// obey the new rate (a window starting after the change).
func TestAmidSetRateLimitFromATaskOfASubPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log sizedStartLog
		p := crew.New(4)
		sub := p.Sub(3)
		var changed time.Time
		must(t, sub.Submit(func() { p.SetRateLimit(5, 1); changed = time.Now() }))
		p.Wait()
		for range 20 {
			must(t, sub.Submit(func() { log.add("p"); time.Sleep(time.Millisecond) }))
		}
		p.Wait()
		p.SetRateLimit(math.Inf(1), 1)
		p.StopAndWait()
		_ = changed
		sizedCheckRate(t, "p", log.starts["p"], 5, 1)
	})
}
