package crew_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestAmidKeyedOnSubPoolsUnderOverload: Keyeds on a root with DiscardOldest and on a
// prioritised sub-pool, while the tree is paused, resized and rate limited, ending with the
// root's StopNow. Every accepted keyed task runs once, or is discarded or handed back, never
// two of those; per key the tasks that ran ran one at a time and in submit order; the pools'
// hooks see each keyed task once; Keyed.Stats' idle identity holds.
func TestAmidKeyedOnSubPoolsUnderOverload(t *testing.T) {
	for round := range 4 {
		ovlKeyedRound(t, round)
		if t.Failed() {
			return
		}
	}
}

func ovlKeyedRound(t *testing.T, round int) {
	var discardMark, backMark ovlMarks
	handler := func(v any) {
		discardMark.enter()
		v.(func())()
		discardMark.exit()
	}
	var hq, hs, hf, hd, hr atomic.Int64
	hooks := crew.Hooks{
		Queued:    func(crew.TaskInfo) { hq.Add(1) },
		Started:   func(crew.TaskInfo) { hs.Add(1) },
		Finished:  func(crew.TaskInfo) { hf.Add(1) },
		Discarded: func(crew.TaskInfo) { hd.Add(1) },
		Rejected:  func(error) { hr.Add(1) },
	}
	root := crew.New(3, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(handler))
	sub := root.Sub(2, crew.WithPriority(1), crew.WithHooks(hooks), crew.WithQueueSize(2),
		crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(handler))
	kr := crew.NewKeyed[int](root)
	ks := crew.NewKeyed[int](sub, crew.WithQueueSize(6))
	keyeds := []*crew.Keyed[int]{kr, ks}

	const keys = 4
	type rec struct {
		ran, back, disc atomic.Int32
		acc             bool
	}
	var mu sync.Mutex
	recs := map[[3]int][]*rec{} // [keyed, key] -> tasks in submit order
	var inKey [2][keys]atomic.Int32
	var orderBad atomic.Int32
	var last [2][keys]atomic.Int64
	var subOffered, subAccepted, subRan atomic.Int64

	stop := make(chan struct{})
	var opWG sync.WaitGroup
	repeatUntil(&opWG, stop, func() {
		p := []*crew.Pool{root, sub}[rand.IntN(2)]
		p.Pause()
		time.Sleep(80 * time.Microsecond)
		p.Resume()
		// A gap before the next pause: with none, a sub-pool whose parent and itself take
		// turns being paused may never find both running, and the submitters would wait
		// for the storm, which waits for them.
		time.Sleep(80 * time.Microsecond)
	})
	repeatUntil(&opWG, stop, func() {
		root.Resize(1 + rand.IntN(3))
		sub.Resize(1 + rand.IntN(3))
		time.Sleep(100 * time.Microsecond)
	})
	repeatUntil(&opWG, stop, func() {
		root.SetRateLimit(30000, 2)
		time.Sleep(150 * time.Microsecond)
		root.SetRateLimit(math.Inf(1), 1)
	})

	var wg sync.WaitGroup
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// each submitter owns its keys, so submit order per key is this loop's order
			ki := s % 2
			for i := range 120 {
				key := (s/2)*2 + i%2
				r := &rec{}
				seq := int64(i + 1)
				f := func() {
					switch {
					case discardMark.on():
						r.disc.Add(1)
						return
					case backMark.on():
						r.back.Add(1)
						return
					}
					if inKey[ki][key].Add(1) != 1 {
						orderBad.Add(1)
					}
					if prev := last[ki][key].Swap(seq); prev >= seq {
						orderBad.Add(1)
					}
					r.ran.Add(1)
					if ki == 1 {
						subRan.Add(1)
					}
					if i%7 == 0 {
						time.Sleep(30 * time.Microsecond)
					}
					inKey[ki][key].Add(-1)
				}
				if ki == 1 {
					subOffered.Add(1)
				}
				var ok bool
				if i%3 == 0 {
					ok = keyeds[ki].TrySubmit(key, f)
				} else {
					ok = keyeds[ki].Submit(key, f) == nil
				}
				r.acc = ok
				if ok && ki == 1 {
					subAccepted.Add(1)
				}
				mu.Lock()
				recs[[3]int{ki, key}] = append(recs[[3]int{ki, key}], r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	opWG.Wait()
	root.SetRateLimit(math.Inf(1), 1)
	root.Resume()
	sub.Resume()
	back := root.StopNow()
	backMark.enter()
	for _, f := range back {
		f()
	}
	backMark.exit()
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))

	if n := orderBad.Load(); n > 0 {
		t.Errorf("round %d: %d keyed tasks ran out of order or beside another of their key", round, n)
	}
	var lost, twice, refusedRan int
	for _, rs := range recs {
		for _, r := range rs {
			n := r.ran.Load() + r.back.Load() + r.disc.Load()
			switch {
			case r.acc && n == 0:
				lost++
			case r.acc && n > 1:
				twice++
			case !r.acc && n > 0:
				refusedRan++
			}
		}
	}
	if lost+twice+refusedRan > 0 {
		t.Errorf("round %d: keyed tasks: %d lost, %d twice, %d refused but ran", round, lost, twice, refusedRan)
	}
	for i, k := range keyeds {
		s := k.Stats()
		if ended := s.Completed + s.Panicked + s.Discarded + s.Returned; s.Accepted != ended || s.Running != 0 || s.Waiting != 0 {
			t.Errorf("round %d keyed %d: idle Stats do not add up: %+v", round, i, s)
		}
	}
	for i, p := range []*crew.Pool{root, sub} {
		idleIdentity(t, fmt.Sprintf("round %d pool %d", round, i), p.Stats())
	}
	// The sub-pool's hooks see each of ks's tasks.
	var subDisc int64
	for key := range keys {
		for _, r := range recs[[3]int{1, key}] {
			subDisc += int64(r.disc.Load())
		}
	}
	if hq.Load() != subOffered.Load() || hq.Load()-hr.Load() != subAccepted.Load() || hs.Load() != subRan.Load() ||
		hf.Load() != subRan.Load() || hd.Load() != subDisc {
		t.Errorf("round %d: sub hooks queued %d rejected %d started %d finished %d discarded %d; offered %d accepted %d ran %d discarded %d (keyed stats %+v)",
			round, hq.Load(), hr.Load(), hs.Load(), hf.Load(), hd.Load(), subOffered.Load(), subAccepted.Load(), subRan.Load(), subDisc, ks.Stats())
	}
}
