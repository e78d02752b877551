package crew_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// DiscardOldest drops a key's turn with its keyed tasks: each goes to the discard handler,
// Keyed.Stats counts them in Discarded, the Discarded hook sees each, and none runs as well.
func TestAmidKeyedDiscardOldest(t *testing.T) {
	for iter := range 20 {
		var dmu sync.Mutex
		var dropped []func()
		var discHook, startedH, finishedH, queuedH atomic.Int64
		p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
			crew.WithDiscardHandler(func(v any) {
				dmu.Lock()
				dropped = append(dropped, v.(func()))
				dmu.Unlock()
			}),
			crew.WithHooks(crew.Hooks{
				Queued:    func(crew.TaskInfo) { queuedH.Add(1) },
				Started:   func(crew.TaskInfo) { startedH.Add(1) },
				Finished:  func(crew.TaskInfo) { finishedH.Add(1) },
				Discarded: func(crew.TaskInfo) { discHook.Add(1) },
			}))
		k := crew.NewKeyed[int](p)
		const keys, per, plain = 4, 150, 600
		runs := make([]atomic.Int32, keys*per)
		plainRuns := make([]atomic.Int32, plain)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		pauseStorm(&wg, stop, 100*time.Microsecond, p)
		var subs sync.WaitGroup
		for key := range keys {
			subs.Add(1)
			go func() {
				defer subs.Done()
				for seq := range per {
					id := key*per + seq
					must(t, k.Submit(key, func() { runs[id].Add(1) }))
				}
			}()
		}
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range plain {
				must(t, p.Submit(func() { plainRuns[i].Add(1) }))
			}
		}()
		awaitReturn(t, "submitters", goRun(subs.Wait))
		close(stop)
		wg.Wait()
		p.Resume()
		awaitReturn(t, "k.Wait", goRun(k.Wait))
		awaitReturn(t, "p.Wait", goRun(p.Wait))
		s := k.Stats()
		ps := p.Stats()
		idleIdentity(t, "keyed", s)
		idleIdentity(t, "pool", ps)
		var ranN int64
		for i := range runs {
			ranN += int64(runs[i].Load())
		}
		dmu.Lock()
		for _, f := range dropped {
			f()
		}
		dmu.Unlock()
		for i := range runs {
			if n := runs[i].Load(); n != 1 {
				t.Fatalf("iter %d keyed task %d ran+dropped %d times", iter, i, n)
			}
		}
		for i := range plainRuns {
			if n := plainRuns[i].Load(); n != 1 {
				t.Fatalf("iter %d plain task %d ran+dropped %d times", iter, i, n)
			}
		}
		if int64(s.Completed) != ranN || s.Discarded != uint64(keys*per)-uint64(ranN) {
			t.Fatalf("iter %d: keyed %d ran, stats %+v", iter, ranN, s)
		}
		total := int64(keys*per + plain)
		if q := queuedH.Load(); q != total {
			t.Errorf("Queued hook %d, want %d", q, total)
		}
		if st, f, d := startedH.Load(), finishedH.Load(), discHook.Load(); st != f || st+d != total {
			t.Fatalf("iter %d: hooks Started %d Finished %d Discarded %d, total %d; pool %+v keyed %+v", iter, st, f, d, total, ps, s)
		}
		if iter == 0 {
			t.Logf("keyed %+v pool %+v", s, ps)
		}
		p.StopAndWait()
	}
}
