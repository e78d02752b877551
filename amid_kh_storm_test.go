package crew_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// A Keyed on a sub-pool of a sub-pool with priorities, hooks on the leaf, under Pause/Resume,
// Resize and SetRateLimit storms on every level, with panics, panic(nil) and Goexit in some
// keyed tasks: per-key order and one-at-a-time hold, each task runs once, the hooks see each
// keyed task once, Keyed.Stats and the pools' Stats are consistent once idle.
func TestAmidKeyedNestedStorm(t *testing.T) {
	var queued, startedH, finishedH atomic.Int64
	root := crew.New(3)
	defer root.StopAndWait()
	mid := root.Sub(2, crew.WithPriority(1))
	other := root.Sub(2, crew.WithPriority(2))
	leaf := mid.Sub(2, crew.WithPriority(-1), crew.WithPanicHandler(func(any, []byte) {}), crew.WithHooks(crew.Hooks{
		Queued:   func(crew.TaskInfo) { queued.Add(1) },
		Started:  func(crew.TaskInfo) { startedH.Add(1) },
		Finished: func(crew.TaskInfo) { finishedH.Add(1) },
	}))
	leaf2 := mid.Sub(1)
	k := crew.NewKeyed[int](leaf)
	k2 := crew.NewKeyed[int](root)
	c, c2 := newKeyChecker(), newKeyChecker()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauser := func(p *crew.Pool, d time.Duration) func() {
		return func() {
			p.Pause()
			time.Sleep(d)
			p.Resume()
			time.Sleep(d)
		}
	}
	repeatUntil(&wg, stop, pauser(root, 300*time.Microsecond))
	repeatUntil(&wg, stop, pauser(mid, 200*time.Microsecond))
	repeatUntil(&wg, stop, pauser(leaf, 250*time.Microsecond))
	repeatUntil(&wg, stop, func() {
		leaf.Resize(1 + rand.IntN(3))
		root.Resize(1 + rand.IntN(4))
		time.Sleep(300 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		if rand.IntN(2) == 0 {
			leaf.SetRateLimit(20000, 4)
		} else {
			leaf.SetRateLimit(math.Inf(1), 1)
		}
		time.Sleep(500 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		_ = other.Submit(func() { time.Sleep(20 * time.Microsecond) })
		_ = leaf2.Submit(func() {})
		_ = root.Submit(func() {})
		time.Sleep(50 * time.Microsecond)
	})

	const keys, per = 6, 150
	var ran2 atomic.Int64
	var submitters sync.WaitGroup
	for key := range keys {
		submitters.Add(1)
		go func() {
			defer submitters.Done()
			for seq := range per {
				must(t, k.Submit(key, func() {
					c.enter(key, seq)
					defer c.exit(key)
					switch seq % 37 {
					case 5:
						panic("boom")
					case 11:
						panic(nil)
					case 17:
						runtime.Goexit()
					}
					if seq%7 == 0 {
						runtime.Gosched()
					}
				}))
				must(t, k2.Submit(key, func() {
					c2.enter(key, seq)
					defer c2.exit(key)
					ran2.Add(1)
				}))
				if seq%20 == 0 {
					time.Sleep(200 * time.Microsecond)
				}
			}
		}()
	}
	awaitReturn(t, "submitters", goRun(submitters.Wait))
	// The storm goes on while most keyed tasks run. Levels are strict: while the storm's
	// tasks of higher levels keep coming (other, leaf2, the root's own), the leaf's keyed
	// tasks, and the root's, may wait seconds for a turn, so the wait is for progress.
	for _, cc := range []*keyChecker{c, c2} {
		for {
			ran := cc.ranCount()
			if ran >= keys*per*3/4 {
				break
			}
			if !poll(10*time.Second, func() bool { return cc.ranCount() > ran }) {
				t.Fatalf("no keyed task ran for 10 s under storm; %d of %d ran", ran, keys*per)
			}
		}
	}
	close(stop)
	wg.Wait()
	root.Resume()
	mid.Resume()
	leaf.Resume()
	leaf.SetRateLimit(math.Inf(1), 1)
	awaitReturn(t, "k.Wait", goRun(k.Wait))
	awaitReturn(t, "k2.Wait", goRun(k2.Wait))
	awaitReturn(t, "root.Wait", goRun(root.Wait))

	for _, cc := range []*keyChecker{c, c2} {
		cc.mu.Lock()
		if len(cc.errs) > 0 {
			t.Errorf("order errors: %v", cc.errs[:min(10, len(cc.errs))])
		}
		if len(cc.runs) != keys*per {
			t.Errorf("%d distinct keyed tasks ran, want %d", len(cc.runs), keys*per)
		}
		cc.mu.Unlock()
	}
	ks := k.Stats()
	idleIdentity(t, "leaf keyed", ks)
	idleIdentity(t, "root keyed", k2.Stats())
	if ks.Accepted != keys*per || ks.Panicked == 0 {
		t.Errorf("leaf keyed stats %+v", ks)
	}
	if q, s, f := queued.Load(), startedH.Load(), finishedH.Load(); q != keys*per || s != keys*per || f != keys*per {
		t.Errorf("leaf hooks: Queued %d Started %d Finished %d, want %d each", q, s, f, keys*per)
	}
	for _, p := range []*crew.Pool{root, mid, leaf, leaf2, other} {
		idleIdentity(t, "pool", p.Stats())
	}
}
