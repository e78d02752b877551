package crew_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestAmidFuncPoolOverloadAccounting: a FuncPool with a bounded queue under each overflow
// policy, hooks, histograms, a rate limit and pauses, whose fn returns, panics, panics with
// nil or calls runtime.Goexit, with Invoke/TryInvoke/InvokeContext racing Resize and ending
// with StopNow. Each accepted argument is called once, or discarded, or handed back, never
// two; hooks and Stats agree with what happened.
func TestAmidFuncPoolOverloadAccounting(t *testing.T) {
	for _, o := range []crew.Overflow{crew.Block, crew.Reject, crew.CallerRuns, crew.DiscardOldest} {
		ovlFuncRound(t, o)
	}
}

func ovlFuncRound(t *testing.T, o crew.Overflow) {
	const n = 600
	var called, discarded, back [n]atomic.Int32
	var acc [n]atomic.Bool
	var q, st, fi, rj, rjStopped, ds atomic.Int64
	hooks := crew.Hooks{
		Queued:   func(crew.TaskInfo) { q.Add(1) },
		Started:  func(crew.TaskInfo) { st.Add(1) },
		Finished: func(crew.TaskInfo) { fi.Add(1) },
		Rejected: func(err error) {
			rj.Add(1)
			if errors.Is(err, crew.ErrStopped) {
				rjStopped.Add(1) // Stats counts no refusal of a stopped pool
			}
		},
		Discarded: func(crew.TaskInfo) { ds.Add(1) },
	}
	fn := func(i int) {
		called[i].Add(1)
		switch i % 9 {
		case 1:
			panic("boom")
		case 2:
			panic(nil)
		case 3:
			if o != crew.CallerRuns { // a caller-run Goexit would end the submitter
				runtime.Goexit()
			}
		case 4:
			time.Sleep(20 * time.Microsecond)
		}
	}
	p := crew.NewFunc(3, fn, crew.WithQueueSize(3), crew.WithOverflow(o), crew.WithHooks(hooks), crew.WithLatencyHistograms(),
		crew.WithDiscardHandler(func(v any) { discarded[v.(int)].Add(1) }), crew.WithPanicHandler(func(any, []byte) {}),
		crew.WithMaxWait(200*time.Microsecond))
	stop := make(chan struct{})
	var opWG sync.WaitGroup
	repeatUntil(&opWG, stop, func() { p.Resize(1 + int(time.Now().UnixNano()%4)); time.Sleep(50 * time.Microsecond) })
	repeatUntil(&opWG, stop, func() { p.Pause(); time.Sleep(60 * time.Microsecond); p.Resume(); time.Sleep(60 * time.Microsecond) })
	repeatUntil(&opWG, stop, func() {
		p.SetRateLimit(50000, 3)
		time.Sleep(100 * time.Microsecond)
		p.SetRateLimit(math.Inf(1), 1)
	})
	var wg sync.WaitGroup
	var offered atomic.Int64
	paused := make(chan struct{})
	for s := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < n; i += 3 {
				if i == 2*n/3 {
					// the last third is submitted to a paused pool, whose backlog StopNow takes
					close(stop)
					opWG.Wait()
					p.SetRateLimit(math.Inf(1), 1)
					p.Pause()
					close(paused)
				}
				offered.Add(1)
				var ok bool
				switch i % 3 {
				case 0:
					ok = p.Invoke(i) == nil
				case 1:
					ok = p.TryInvoke(i)
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Microsecond)
					ok = p.InvokeContext(ctx, i) == nil
					cancel()
				}
				acc[i].Store(ok)
			}
		}()
	}
	// Under CallerRuns a submit into the full queue of the paused pool waits for Resume
	// before it runs its task on the submitter: StopNow, called while the last third is
	// submitted, refuses those waiting.
	var early []int
	stopped := make(chan struct{})
	if o == crew.CallerRuns {
		go func() {
			defer close(stopped)
			<-paused
			time.Sleep(5 * time.Millisecond)
			early = p.StopNow()
		}()
	} else {
		close(stopped)
	}
	wg.Wait()
	<-stopped
	for _, i := range append(early, p.StopNow()...) {
		back[i].Add(1)
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	var accN, calledN, discN, backN int64
	for i := range n {
		c, d, b := called[i].Load(), discarded[i].Load(), back[i].Load()
		if acc[i].Load() {
			accN++
			if c+d+b != 1 {
				t.Errorf("policy %d: accepted arg %d: called %d, discarded %d, handed back %d", o, i, c, d, b)
			}
		} else if c+d+b != 0 {
			t.Errorf("policy %d: refused arg %d: called %d, discarded %d, handed back %d", o, i, c, d, b)
		}
		calledN += int64(c)
		discN += int64(d)
		backN += int64(b)
	}
	s := p.Stats()
	idleIdentity(t, "FuncPool", s)
	if s.Accepted != uint64(accN) || s.Discarded != uint64(discN) || s.Returned != uint64(backN) || s.Completed+s.Panicked != uint64(calledN) {
		t.Errorf("policy %d: Stats %+v; want Accepted %d Discarded %d Returned %d Completed+Panicked %d", o, s, accN, discN, backN, calledN)
	}
	if q.Load() != offered.Load() || q.Load()-rj.Load() != accN || st.Load() != calledN || fi.Load() != calledN || ds.Load() != discN {
		t.Errorf("policy %d: hooks queued %d rejected %d started %d finished %d discarded %d; offered %d accepted %d called %d discarded %d",
			o, q.Load(), rj.Load(), st.Load(), fi.Load(), ds.Load(), offered.Load(), accN, calledN, discN)
	}
	if s.WaitTime.Count != uint64(calledN) || s.RunTime.Count != uint64(calledN) {
		t.Errorf("policy %d: histogram counts wait %d run %d, want %d", o, s.WaitTime.Count, s.RunTime.Count, calledN)
	}
	if s.Rejected+s.Canceled != uint64(rj.Load()-rjStopped.Load()) {
		t.Errorf("policy %d: Rejected %d + Canceled %d != Rejected hooks %d less %d ErrStopped", o, s.Rejected, s.Canceled, rj.Load(), rjStopped.Load())
	}
}
