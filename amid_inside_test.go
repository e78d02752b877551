package crew_test

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestAmidCallsFromInsideSubSubTasksAndHooks: from a task of a sub-sub-pool, and from every
// hook of each pool, call Stats, TrySubmit, a growing Resize, Pause/Resume, SetRateLimit,
// PauseAndWait with an ended context, and finally Stop or StopNow on the root. None of them
// may deadlock, and the tree must still StopAndWait with every task accounted for.
func TestAmidCallsFromInsideSubSubTasksAndHooks(t *testing.T) {
	for round := range 6 {
		var root, a, b *crew.Pool
		var inPoke ovlMarks
		poke := func(p *crew.Pool) {
			if inPoke.on() { // no recursion through the hooks a poke's own calls run
				return
			}
			inPoke.enter()
			defer inPoke.exit()
			_ = p.Stats()
			p.TrySubmit(func() {})
			s := p.Stats()
			p.Resize(min(s.MaxWorkers+1, 8))
			p.Pause()
			p.Resume()
			p.SetRateLimit(1e6, 5)
			p.SetRateLimit(math.Inf(1), 1)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = p.PauseAndWait(ctx)
			p.Resume()
		}
		mk := func(get func() *crew.Pool) crew.Hooks {
			return crew.Hooks{
				Queued:    func(crew.TaskInfo) { poke(get()) },
				Started:   func(crew.TaskInfo) { poke(get()) },
				Finished:  func(crew.TaskInfo) { poke(get()) },
				Rejected:  func(error) { poke(get()) },
				Discarded: func(crew.TaskInfo) { poke(get()) },
			}
		}
		root = crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(mk(func() *crew.Pool { return root })))
		a = root.Sub(1, crew.WithPriority(2), crew.WithHooks(mk(func() *crew.Pool { return a })), crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
		b = a.Sub(1, crew.WithHooks(mk(func() *crew.Pool { return b })), crew.WithRateLimit(1e5, 2))
		done := make(chan struct{})
		final := round % 2
		go func() {
			defer close(done)
			for i := range 30 {
				for _, p := range []*crew.Pool{root, a, b} {
					p.Submit(func() {
						poke(root)
						poke(a)
						poke(b)
						if i == 25 && p == b {
							if final == 0 {
								root.Stop()
							} else {
								root.StopNow()
							}
						}
					})
				}
			}
		}()
		if err := within(done, "the submitter"); err != nil {
			for i, p := range []*crew.Pool{root, a, b} {
				t.Logf("pool %d: %+v", i, p.Stats())
			}
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
			t.Fatalf("round %d (final %d): %v", round, final, err)
		}
		if err := within(goRun(root.StopAndWait), "root.StopAndWait"); err != nil {
			for i, p := range []*crew.Pool{root, a, b} {
				t.Logf("pool %d: %+v", i, p.Stats())
			}
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
			t.Fatalf("round %d (final %d): %v", round, final, err)
		}
		for _, p := range []*crew.Pool{root, a, b} {
			idleIdentity(t, "pool", p.Stats())
		}
		_ = time.Now
	}
}
