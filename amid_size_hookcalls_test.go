package crew_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Hooks "may call Pool.Stats, Pool.TrySubmit, Pool.Resize or Pool.Stop on the pool"; tasks may
// call Stats, Resize, SetRateLimit, Pause. Hooks of a root and of a sub-pool that call Resize,
// SetRateLimit, Pause/Resume and Stats on the root and the sub-pool, while tasks do the same:
// nothing deadlocks, every task runs once, and the root ends idle.
func TestAmidHooksAndTasksCallSizingAndRateMethods(t *testing.T) {
	var root, sub *crew.Pool
	var n atomic.Int64
	poke := func() {
		i := n.Add(1)
		switch i % 6 {
		case 0:
			root.Resize(int(1 + i%4))
		case 1:
			sub.Resize(crew.CPUs)
		case 2:
			root.SetRateLimit(1e6, 4)
		case 3:
			sub.SetRateLimit(math.Inf(1), 1)
		case 4:
			root.Pause()
			root.Resume()
		case 5:
			_ = root.Stats()
			_ = sub.Stats()
		}
	}
	hooks := crew.Hooks{
		Queued:   func(crew.TaskInfo) { poke() },
		Started:  func(crew.TaskInfo) { poke() },
		Finished: func(crew.TaskInfo) { poke() },
		Rejected: func(error) { poke() },
	}
	root = crew.New(3, crew.WithHooks(hooks), crew.WithLatencyHistograms(), crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns))
	sub = root.Sub(2, crew.WithHooks(hooks), crew.WithPriority(1), crew.WithRateLimit(1e5, 2))
	var ran atomic.Int64
	done := goRun(func() {
		together(3, 100, func(c, i int) {
			q := root
			if (c+i)%2 == 0 {
				q = sub
			}
			must(t, q.Submit(func() { ran.Add(1); poke() }))
		})
		root.Resume()
		root.Resize(3)
		root.Wait()
	})
	awaitReturn(t, "submits and Wait with hooks calling back", done)
	if ran.Load() != 300 {
		t.Errorf("%d of 300 ran", ran.Load())
	}
	s := root.Stats()
	if s.Running != 0 || s.Waiting != 0 || s.WaitTime.Count < s.RunTime.Count {
		t.Errorf("idle root: %+v", s)
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	_ = time.Second
}
