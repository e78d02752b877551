//go:build go1.25

package crew_test

import (
	"fmt"
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
