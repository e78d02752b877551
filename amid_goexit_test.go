package crew_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// TestAmidGoexitAndPanicNilInSubPoolTree: tasks of a root pool, a sub-pool and a
// sub-sub-pool (with priorities, weights and hooks) that return, panic, panic(nil) or call
// runtime.Goexit; some panic handlers call Goexit too. Every task is counted once, hooks
// match, each pool's idle identity holds and StopAndWait returns.
func TestAmidGoexitAndPanicNilInSubPoolTree(t *testing.T) {
	var handled atomic.Int64
	handler := func(v any, stack []byte) {
		if handled.Add(1)%3 == 0 {
			runtime.Goexit()
		}
	}
	type hk struct{ queued, started, finished, rejected atomic.Int64 }
	mkHooks := func(h *hk) crew.Hooks {
		return crew.Hooks{
			Queued:   func(crew.TaskInfo) { h.queued.Add(1) },
			Started:  func(crew.TaskInfo) { h.started.Add(1) },
			Finished: func(crew.TaskInfo) { h.finished.Add(1) },
			Rejected: func(error) { h.rejected.Add(1) },
		}
	}
	var hr, ha, hb hk
	root := crew.New(3, crew.WithPanicHandler(handler), crew.WithHooks(mkHooks(&hr)), crew.WithQueueSize(8))
	a := root.Sub(2, crew.WithPriority(1), crew.WithHooks(mkHooks(&ha)), crew.WithQueueSize(4))
	b := a.Sub(2, crew.WithPriority(-1), crew.WithHooks(mkHooks(&hb)), crew.WithPanicHandler(handler))
	pools := []*crew.Pool{root, a, b}
	hooks := []*hk{&hr, &ha, &hb}
	var ran [3]atomic.Int64
	var subs [3]atomic.Int64
	var wg sync.WaitGroup
	for s := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				pi := (s + i) % 3
				kind := i % 4
				f := func() {
					ran[pi].Add(1)
					switch kind {
					case 1:
						panic("boom")
					case 2:
						panic(nil)
					case 3:
						runtime.Goexit()
					}
				}
				var err error
				if i%5 == 0 {
					err = pools[pi].SubmitN(2, f)
				} else {
					err = pools[pi].Submit(f)
				}
				if err != nil {
					t.Errorf("submit to pool %d: %v", pi, err)
					continue
				}
				subs[pi].Add(1)
			}
		}()
	}
	wg.Wait()
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
	for i, p := range pools {
		s := p.Stats()
		idleIdentity(t, fmt.Sprintf("pool %d", i), s)
		h := hooks[i]
		if h.queued.Load() != subs[i].Load() || h.started.Load() != ran[i].Load() || h.finished.Load() != ran[i].Load() || h.rejected.Load() != 0 {
			t.Errorf("pool %d: hooks queued %d started %d finished %d rejected %d; submitted %d ran %d (stats %+v)",
				i, h.queued.Load(), h.started.Load(), h.finished.Load(), h.rejected.Load(), subs[i].Load(), ran[i].Load(), s)
		}
		if ran[i].Load() != subs[i].Load() {
			t.Errorf("pool %d: %d accepted, %d ran", i, subs[i].Load(), ran[i].Load())
		}
		if i == 2 && s.Accepted != uint64(subs[i].Load()) {
			t.Errorf("pool %d: Accepted %d, want %d", i, s.Accepted, subs[i].Load())
		}
	}
}
