package crew_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// TestStressWeightsKeysAndLevelsKeepTheLimits: 64 submitters released together send weighted
// tasks to a pool and to two leveled sub-pools, and keyed tasks to a Keyed on one of them,
// while the pool is resized. Every accepted task runs exactly once, the weights running
// never sum above the parent's largest limit, no key runs two tasks at once, and each key's
// tasks run in submit order.
func TestStressWeightsKeysAndLevelsKeepTheLimits(t *testing.T) {
	t.Parallel()
	submitters, per := stressSize()
	per = min(per, 500)
	p := crew.New(6)
	hi := p.Sub(4, crew.WithPriority(2))
	lo := p.Sub(4, crew.WithPriority(-1))
	k := crew.NewKeyed[int](lo)
	var m weightMeter
	runs := make([]atomic.Int32, submitters*per)
	var keyBusy [16]atomic.Int32
	var keyNext [16]int // written by one key's tasks only, in order
	var keyWrong atomic.Int32
	var keyHigh atomic.Int32
	var keySeq [16]atomic.Int32 // the next sequence number per key, taken under keyMu
	var keyMu [16]sync.Mutex

	release := make(chan struct{})
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			for i := range per {
				id := s*per + i
				n := 1 + (s+i)%3
				inner := m.task(n)
				task := func() { inner(); runs[id].Add(1) }
				var err error
				switch i % 4 {
				case 0:
					err = p.SubmitN(n, task)
				case 1:
					err = hi.SubmitN(n, task)
				case 2:
					err = lo.SubmitN(n, task)
				default:
					key := (s + i) % 16
					// Take the sequence number and submit under one lock, so that the order
					// of submits is the order of the numbers.
					keyMu[key].Lock()
					seq := int(keySeq[key].Add(1)) - 1
					err = k.Submit(key, func() {
						if b := keyBusy[key].Add(1); b > keyHigh.Load() {
							keyHigh.Store(b)
						}
						if keyNext[key] != seq {
							keyWrong.Add(1)
						}
						keyNext[key]++
						keyBusy[key].Add(-1)
						runs[id].Add(1)
					})
					if err != nil {
						keySeq[key].Add(-1)
					}
					keyMu[key].Unlock()
				}
				if err != nil && !errors.Is(err, crew.ErrTooHeavy) {
					t.Errorf("submit = %v", err)
					return
				}
				if err != nil {
					runs[id].Store(1) // refused before it was accepted: it must not run
				}
			}
		}()
	}
	close(release)
	for i := range 20 {
		p.Resize(3 + i%4)
	}
	p.Resize(6)
	wg.Wait()
	k.Wait()
	p.StopAndWait()
	for id := range runs {
		if n := runs[id].Load(); n != 1 {
			t.Fatalf("task %d ran %d times", id, n)
		}
	}
	if h := m.high.Load(); h > 6 {
		t.Fatalf("running tasks held %d slots, the largest limit 6", h)
	}
	if h := keyHigh.Load(); h > 1 {
		t.Fatalf("a key ran %d tasks at once", h)
	}
	if w := keyWrong.Load(); w != 0 {
		t.Fatalf("%d keyed tasks ran out of submit order", w)
	}
}
