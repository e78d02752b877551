//go:build go1.25

package crew_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// TestAdvBubblePriorityWhenSlotsFreeTogether attacks "a worker never takes a lower-level task
// while a higher-level one that may start waits" where it is hardest to keep: on the fake
// clock of a testing/synctest bubble, every task sleeps the same time, so all of a parent's
// slots free at the same instant, and a Resume or a growing Resize opens several at once. The
// levels are a high sub-pool and a plain one, both wider than the parent, and a low
// sub-pool of a sub-pool. Every start checks that no pool of a higher level has a task
// waiting. Between rounds the workers idle past the idle timeout, so each round starts from
// parked or reaped workers; at the end the bubble must hold no goroutine (synctest.Test fails
// otherwise).
func TestAdvBubblePriorityWhenSlotsFreeTogether(t *testing.T) {
	for _, width := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("width=%d", width), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { priorityWhenSlotsFreeTogether(t, width) })
		})
	}
}

func priorityWhenSlotsFreeTogether(t *testing.T, width int) {
	const idle = 50 * time.Millisecond
	top := crew.New(width, crew.WithIdleTimeout(idle))
	hi := top.Sub(width+1, crew.WithPriority(1))
	mid := top.Sub(width + 1) // a parent's Waiting counts its sub-pools' workers: a sub-pool's does not
	lo := top.Sub(width, crew.WithPriority(-1)).Sub(width)
	var mu sync.Mutex
	var faults []string
	var ran [3]int
	start := func(level int) {
		for l, p := range []*crew.Pool{lo, mid, hi} {
			if w := p.Stats().Waiting; l-1 > level && w != 0 {
				mu.Lock()
				faults = append(faults, fmt.Sprintf("at %v a level %d task started while %d of level %d waited",
					time.Since(epoch(t)), level, w, l-1))
				mu.Unlock()
			}
		}
		mu.Lock()
		ran[level+1]++
		mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	const perLevel = 12
	total := 0
	for round := range 4 {
		top.Pause()
		if round%2 == 1 {
			top.Resize(1) // a growing Resize below opens several slots at once
		}
		for range perLevel {
			must(t, lo.Submit(func() { start(-1) }))
			must(t, mid.Submit(func() { start(0) }))
			must(t, hi.Submit(func() { start(1) }))
		}
		total += perLevel
		top.Resume()
		if round%2 == 1 {
			time.Sleep(3 * time.Millisecond) // one slot, three tasks in
			top.Resize(width)
		}
		for _, p := range []*crew.Pool{top, hi, mid, lo} {
			p.Wait()
		}
		time.Sleep(2 * idle) // the workers park, then are reaped
		synctest.Wait()
		if s := top.Stats(); s.Running != 0 || s.Idle != 0 {
			t.Fatalf("round %d: after the idle timeout, Running %d, Idle %d, want none", round, s.Running, s.Idle)
		}
	}
	top.StopAndWait()
	mu.Lock()
	defer mu.Unlock()
	for _, f := range faults {
		t.Error(f)
	}
	if ran != [3]int{total, total, total} {
		t.Fatalf("tasks run per level (low, parent, high) %v, want %d each", ran, total)
	}
}

// epochs holds each bubble's start, so that a fault names the fake instant it happened at.
var epochs sync.Map // *testing.T -> time.Time

func epoch(t *testing.T) time.Time {
	v, _ := epochs.LoadOrStore(t, time.Now())
	return v.(time.Time)
}

// TestAdvBubbleSampledHistogramsAndLentPlacesWithGoexitAndPanicNil: in a synctest bubble, a
// tree of a bounded root, a priority sub-pool and a Keyed, every pool sampling its histograms
// one task in 4. Plain tasks return, panic(nil) or call runtime.Goexit; functions of groups
// made inside tasks do the same, so that the waits run some of them in lent slots, whose
// places leave the bounded queues as they end. Pause, a shrinking Resize and a StopNow act
// meanwhile. Every pool ends idle with each task in exactly one of Completed, Panicked,
// Discarded, Returned and Skipped, and the histograms hold multiples of 4, no more than the
// tasks that started.
func TestAdvBubbleSampledHistogramsAndLentPlacesWithGoexitAndPanicNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const k = 4
		obs := []crew.Option{crew.WithLatencyHistograms(), crew.WithLatencySample(k), crew.WithPanicHandler(func(any, []byte) {})}
		root := crew.New(3, append(obs, crew.WithQueueSize(4))...)
		hi := root.Sub(2, append(obs, crew.WithPriority(1), crew.WithQueueSize(2))...)
		keyed := crew.NewKeyed[int](hi)
		end := func(i int) {
			time.Sleep(time.Millisecond)
			switch i % 3 {
			case 1:
				panic(nil)
			case 2:
				runtime.Goexit()
			}
		}
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 40 {
					p := []*crew.Pool{root, hi}[(g+i)%2]
					switch i % 4 {
					case 0:
						_ = p.Submit(func() { end(i) })
					case 1:
						_ = keyed.Submit(i%3, func() { end(i) })
					default:
						f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
							gr, _ := p.Group(ctx)
							for j := range 3 {
								gr.Go(func(context.Context) error { end(i + j); return nil })
							}
							return 0, gr.Wait()
						})
						_, _ = f.Wait()
					}
					switch i {
					case 10:
						root.Pause()
						time.Sleep(2 * time.Millisecond)
						root.Resume()
					case 20:
						root.Resize(1)
						time.Sleep(2 * time.Millisecond)
						root.Resize(3)
					}
				}
			}()
		}
		time.Sleep(30 * time.Millisecond)
		hi.StopNow()
		wg.Wait()
		root.StopAndWait()
		synctest.Wait()
		for name, p := range map[string]*crew.Pool{"root": root, "hi": hi} {
			s := p.Stats()
			idleIdentity(t, name, s)
			if s.WaitTime.Count%k != 0 || s.RunTime.Count%k != 0 || s.RunTime.Count > s.WaitTime.Count ||
				s.WaitTime.Count > k*(s.Completed+s.Panicked) {
				t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d, %d tasks ended: want multiples of %d, run within wait",
					name, s.WaitTime.Count, s.RunTime.Count, s.Completed+s.Panicked, k)
			}
		}
		ks := keyed.Stats()
		if ks.Accepted != ks.Completed+ks.Panicked+ks.Discarded+ks.Returned || ks.Waiting != 0 || ks.Running != 0 {
			t.Errorf("Keyed: %+v: each task not in exactly one outcome", ks)
		}
	})
}
