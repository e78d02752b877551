package crew_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestPauseStormWithPrioritisedSubPoolsLosesNoTask proves that every task accepted by a pool
// and its prioritised sub-pools runs, and that StopAndWait returns, while another goroutine
// pauses and resumes the pool without a break.
func TestPauseStormWithPrioritisedSubPoolsLosesNoTask(t *testing.T) {
	for _, level := range []int{1, -1} {
		p := crew.New(4, crew.WithQueueSize(32))
		subs := []*crew.Pool{p, p.Sub(2), p.Sub(3, crew.WithPriority(level))}
		subs = append(subs, subs[2].Sub(2))
		var accepted, ran atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					if subs[(i+j)%len(subs)].Submit(func() { ran.Add(1) }) == nil {
						accepted.Add(1)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p.Pause()
				p.Resume()
			}
		}()
		time.Sleep(100 * time.Millisecond)
		p.Stop()
		close(stop)
		wg.Wait()
		awaitReturn(t, "StopAndWait after a pause storm", goRun(p.StopAndWait))
		if a, r := accepted.Load(), ran.Load(); a != r {
			t.Fatalf("level %d: %d tasks accepted, %d ran", level, a, r)
		}
	}
}

// TestChainOfSubPoolsDrainsAfterResizeAndPauseStorms proves that a chain of sub-pools resized
// at every level while one of them is paused and resumed runs every accepted task and stops.
func TestChainOfSubPoolsDrainsAfterResizeAndPauseStorms(t *testing.T) {
	root := crew.New(4, crew.WithIdleTimeout(0), crew.WithMinWorkers(1))
	a := root.Sub(3)
	b := a.Sub(2)
	c := b.Sub(1)
	pools := []*crew.Pool{root, a, b, c}
	var accepted, ran atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	storm := func(f func(r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(1, 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				f(r)
			}
		}()
	}
	for _, q := range pools {
		storm(func(r *rand.Rand) { q.Resize(1 + r.IntN(4)) })
		storm(func(r *rand.Rand) {
			if q.Submit(func() { ran.Add(1) }) == nil {
				accepted.Add(1)
			}
		})
	}
	storm(func(*rand.Rand) { b.Pause(); b.Resume() })
	time.Sleep(100 * time.Millisecond)
	root.Stop()
	close(stop)
	wg.Wait()
	awaitReturn(t, "StopAndWait after resize and pause storms", goRun(root.StopAndWait))
	if a, r := accepted.Load(), ran.Load(); a != r {
		t.Fatalf("%d tasks accepted, %d ran", a, r)
	}
}
