package crew_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// StopNow: "Every accepted task either runs exactly once or is returned (or failed) by
// StopNow, never both"; "A [Keyed] on the pool keeps its order through StopNow: a key whose
// queued tasks StopNow hands back runs none of its tasks afterwards".
func TestAmidKeyedStopNowStorm(t *testing.T) {
	for iter := range 30 {
		root := crew.New(2)
		mid := root.Sub(2, crew.WithPriority(1))
		leaf := mid.Sub(2)
		pools := []*crew.Pool{root, mid, leaf}
		const keys, per = 5, 200
		ks := []*crew.Keyed[int]{crew.NewKeyed[int](leaf), crew.NewKeyed[int](root), crew.NewKeyed[int](mid, crew.WithQueueSize(3))}
		runs := make([][][]atomic.Int32, len(ks))
		accepted := make([][][]bool, len(ks))
		for i := range ks {
			runs[i] = make([][]atomic.Int32, keys)
			accepted[i] = make([][]bool, keys)
			for key := range keys {
				runs[i][key] = make([]atomic.Int32, per)
				accepted[i][key] = make([]bool, per)
			}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		pauseStorm(&wg, stop, 100*time.Microsecond, pools...)
		var subs sync.WaitGroup
		for i, k := range ks {
			for key := range keys {
				subs.Add(1)
				go func() {
					defer subs.Done()
					for seq := range per {
						err := k.Submit(key, func() {
							runs[i][key][seq].Add(1)
							if seq%13 == 0 {
								time.Sleep(10 * time.Microsecond)
							}
						})
						if err == nil {
							accepted[i][key][seq] = true
						} else if !errors.Is(err, crew.ErrStopped) {
							t.Errorf("submit: %v", err)
						}
					}
				}()
			}
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		out := root.StopNow()
		close(stop)
		wg.Wait()
		awaitReturn(t, "submitters after StopNow", goRun(subs.Wait))
		for _, k := range ks {
			awaitReturn(t, "Keyed.Wait after StopNow", goRun(k.Wait))
		}
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		ranBefore := make([][][]int32, len(ks))
		for i := range ks {
			ranBefore[i] = make([][]int32, keys)
			for key := range keys {
				ranBefore[i][key] = make([]int32, per)
				for seq := range per {
					ranBefore[i][key][seq] = runs[i][key][seq].Load()
				}
			}
		}
		for _, f := range out {
			f()
		}
		var returnedTotal uint64
		for i, k := range ks {
			s := k.Stats()
			idleIdentity(t, "keyed", s)
			returnedTotal += s.Returned
			for key := range keys {
				lastRan := -1
				firstReturned := -1
				for seq := range per {
					n := runs[i][key][seq].Load()
					if accepted[i][key][seq] && n != 1 {
						t.Fatalf("iter %d keyed %d key %d task %d: accepted, ran+returned %d times (ran %d before the hand-back)", iter, i, key, seq, n, ranBefore[i][key][seq])
					}
					if !accepted[i][key][seq] && n != 0 {
						t.Fatalf("iter %d keyed %d key %d task %d: not accepted but ran %d", iter, i, key, seq, n)
					}
					if ranBefore[i][key][seq] == 1 {
						lastRan = seq
					} else if accepted[i][key][seq] && firstReturned < 0 {
						firstReturned = seq
					}
				}
				if firstReturned >= 0 && lastRan > firstReturned {
					t.Fatalf("iter %d keyed %d key %d: task %d handed back by StopNow but task %d of the key ran", iter, i, key, firstReturned, lastRan)
				}
			}
		}
		if uint64(len(out)) != returnedTotal {
			t.Fatalf("iter %d: StopNow returned %d funcs; Keyed Stats Returned sum %d", iter, len(out), returnedTotal)
		}
		for _, p := range pools {
			idleIdentity(t, "pool", p.Stats())
		}
	}
}
