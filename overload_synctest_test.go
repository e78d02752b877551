//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// WithMaxWait: a blocked submit gives up after exactly the max wait, on the fake clock.
func TestMaxWaitGivesUpAfterTheMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, o := range []crew.Overflow{crew.Block, crew.CallerRuns} {
			p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(o), crew.WithMaxWait(time.Second))
			release := make(chan struct{})
			p.Submit(func() { <-release })
			p.Submit(func() {})
			start := time.Now()
			ran := false
			err := p.Submit(func() { ran = true })
			if d := time.Since(start); d != time.Second {
				t.Fatalf("policy %d: gave up after %v, want 1s", o, d)
			}
			switch o {
			case crew.Block:
				if !errors.Is(err, crew.ErrQueueFull) || ran {
					t.Fatalf("Block: err %v, ran %v", err, ran)
				}
			case crew.CallerRuns:
				if err != nil || !ran {
					t.Fatalf("CallerRuns: err %v, ran %v", err, ran)
				}
			}
			close(release)
			p.StopAndWait()
			s := p.Stats()
			if o == crew.Block && (s.Rejected != 1 || s.Accepted != 2) {
				t.Fatalf("Block stats %+v", s)
			}
			if o == crew.CallerRuns && (s.CallerRan != 1 || s.Accepted != 3 || s.Rejected != 0) {
				t.Fatalf("CallerRuns stats %+v", s)
			}
		}
	})
}

// WithRateLimit: over any window T, starts <= burst + perSecond·T, and the bucket starts full.
func TestRateLimitBoundsStartsOverAnyWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perSecond, burst = 10.0, 3
		var starts []time.Time
		var mu sync.Mutex
		var n atomic.Int64
		p := crew.NewFunc(4, func(int) {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			n.Add(1)
		}, crew.WithRateLimit(perSecond, burst))
		for i := range 40 {
			p.Invoke(i)
		}
		synctest.Wait()
		if got := n.Load(); got != burst {
			t.Fatalf("%d started at once, want the burst %d", got, burst)
		}
		p.Wait()
		p.StopAndWait()
		if len(starts) != 40 {
			t.Fatalf("%d of 40 ran", len(starts))
		}
		for i := range starts {
			for j := i; j < len(starts); j++ {
				window := starts[j].Sub(starts[i]).Seconds()
				if float64(j-i+1) > burst+perSecond*window+1e-9 {
					t.Fatalf("%d starts in %vs", j-i+1, window)
				}
			}
		}
		// 40 starts take (40-3)/10 s.
		if d := starts[39].Sub(starts[0]); d < 3600*time.Millisecond || d > 3800*time.Millisecond {
			t.Fatalf("40 starts took %v", d)
		}
	})
}

// A parent's rate limit counts its sub-pools' starts.
func TestParentRateLimitCountsSubPoolStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(8, crew.WithRateLimit(5, 2))
		sub := p.Sub(4)
		var n atomic.Int64
		for range 20 {
			sub.Submit(func() { n.Add(1) })
		}
		start := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		if got := n.Load(); got > 2+5 {
			t.Fatalf("%d sub-pool tasks started in 1s under a parent limit of 5/s, burst 2", got)
		}
		sub.Wait()
		if d := time.Since(start); d < 2*time.Second {
			t.Fatalf("20 tasks done in %v, faster than the parent's limit allows", d)
		}
		p.SetRateLimit(math.Inf(1), 1)
		p.StopAndWait()
	})
}

func TestSetRateLimitInfRemovesTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		p := crew.NewFunc(2, func(int) { n.Add(1) }, crew.WithRateLimit(1, 1))
		for i := range 10 {
			p.Invoke(i)
		}
		synctest.Wait()
		if n.Load() != 1 {
			t.Fatalf("%d started, want 1", n.Load())
		}
		p.SetRateLimit(math.Inf(1), 1)
		p.Wait()
		if n.Load() != 10 {
			t.Fatalf("%d ran", n.Load())
		}
		p.StopAndWait()
	})
}

// Pool.StopNow inside a testing/synctest bubble, on a chain of three sub-pools whose root's
// one worker is busy: StopNow on the first and on the third at once, with the root's Stop
// beside them, returns every task queued in the sub-pools exactly once between them, and
// none of those runs; the root's own tasks still run. The bubble ends with no goroutine left.
func TestStopNowOnSubPoolsOfSubPoolsInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(1)
		release := make(chan struct{})
		if err := p.Submit(func() { <-release }); err != nil {
			t.Fatal(err)
		}
		pools := []*crew.Pool{p}
		for range 3 {
			pools = append(pools, pools[len(pools)-1].Sub(2))
		}
		var ran [4]atomic.Int32
		for range 2 {
			for depth := 3; depth >= 0; depth-- {
				if err := pools[depth].Submit(func() { ran[depth].Add(1) }); err != nil {
					t.Fatal(err)
				}
			}
		}
		synctest.Wait()
		var got [2][]func()
		var wg sync.WaitGroup
		for k, depth := range []int{1, 3} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[k] = pools[depth].StopNow()
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop()
		}()
		wg.Wait()
		close(release)
		p.StopAndWait()
		if r := [4]int32{ran[0].Load(), ran[1].Load(), ran[2].Load(), ran[3].Load()}; r != [4]int32{2, 0, 0, 0} {
			t.Fatalf("tasks run per depth: %v, want the root's two only", r)
		}
		for _, f := range append(got[0], got[1]...) {
			f()
		}
		if r := [4]int32{ran[0].Load(), ran[1].Load(), ran[2].Load(), ran[3].Load()}; r != [4]int32{2, 2, 2, 2} {
			t.Fatalf("tasks returned per depth, after the root's two that ran: %v, want two of each sub-pool once", r)
		}
	})
}

// CallerRuns under a rate limit: a task run on its submitter starts only with a token, as a
// worker's start would, and a SubmitContext whose context ends while it waits for one returns
// the context's error with its task unrun and counted as canceled.
func TestCallerRunsWaitsForARateToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithRateLimit(1, 1))
		gate := make(chan struct{})
		must(t, p.Submit(func() { <-gate })) // takes the only token, at 0
		must(t, p.Submit(func() {}))         // fills the queue
		start := time.Now()

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		ran := false
		err := p.SubmitContext(ctx, func() { ran = true })
		if !errors.Is(err, context.DeadlineExceeded) || ran || time.Since(start) != 300*time.Millisecond {
			t.Errorf("SubmitContext = %v after %v, ran %v; want DeadlineExceeded after 300ms, unrun", err, time.Since(start), ran)
		}
		if s := p.Stats(); s.Canceled != 1 || s.CallerRan != 0 {
			t.Errorf("stats %+v; want 1 canceled, none caller-run", s)
		}

		var at time.Duration
		must(t, p.Submit(func() { at = time.Since(start) })) // the next token falls due at 1 s
		if at != time.Second {
			t.Errorf("the caller-run task started at %v, want 1s, when the next token fell due", at)
		}
		close(gate)
		p.StopAndWait()
		if s := p.Stats(); s.CallerRan != 1 || s.Completed != 3 {
			t.Errorf("stats %+v; want 1 caller-run, 3 completed", s)
		}
	})
}

// CallerRuns under a pause: a submit into a full queue of a paused pool, or of a sub-pool of
// a paused pool, runs its task on the submitter only once the pause is lifted, since no task
// of a paused pool starts. A stop while it waits refuses the task with ErrStopped, and a
// SubmitContext whose context ends returns the context's error; either way the task never
// runs, and every task accepted ends counted once.
func TestCallerRunsWaitsForResume(t *testing.T) {
	type pools struct{ paused, full *crew.Pool }
	for _, shape := range []string{"pool", "sub-pool"} {
		build := func() pools {
			opts := []crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns)}
			if shape == "pool" {
				p := crew.New(1, opts...)
				return pools{p, p}
			}
			root := crew.New(2)
			return pools{root, root.Sub(1, opts...)}
		}
		// hold fills ps.full: its worker held until gate closes, one task queued; then pauses.
		hold := func(t *testing.T, ps pools) (gate chan struct{}) {
			gate = make(chan struct{})
			must(t, ps.full.Submit(func() { <-gate }))
			synctest.Wait()
			must(t, ps.full.Submit(func() {}))
			ps.paused.Pause()
			return gate
		}
		t.Run(shape+"/resume", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ps := build()
				gate := hold(t, ps)
				start := time.Now()
				go func() {
					time.Sleep(time.Second)
					ps.paused.Resume()
				}()
				at := time.Duration(-1)
				must(t, ps.full.Submit(func() { at = time.Since(start) }))
				if at < time.Second || at > time.Second+crew.PausePoll {
					t.Errorf("the caller-run task started at %v, want at the Resume at 1s", at)
				}
				close(gate)
				ps.paused.StopAndWait()
				if s := ps.full.Stats(); s.CallerRan != 1 || s.Completed != 3 {
					t.Errorf("stats %+v; want 1 caller-run, 3 completed", s)
				}
			})
		})
		for _, stop := range []string{"Stop", "StopNow"} {
			t.Run(shape+"/"+stop, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ps := build()
					gate := hold(t, ps)
					go func() {
						time.Sleep(time.Second)
						if stop == "Stop" {
							ps.paused.Stop()
						} else {
							ps.paused.StopNow()
						}
					}()
					ran := false
					if err := ps.full.Submit(func() { ran = true }); !errors.Is(err, crew.ErrStopped) || ran {
						t.Errorf("Submit = %v, ran %v; want ErrStopped, unrun", err, ran)
					}
					close(gate)
					ps.paused.StopAndWait()
					s := ps.full.Stats()
					if s.CallerRan != 0 || s.Accepted != 2 {
						t.Errorf("stats %+v; want 2 accepted, none caller-run", s)
					}
					idleIdentity(t, shape, s)
				})
			})
		}
		t.Run(shape+"/context", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ps := build()
				gate := hold(t, ps)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				ran := false
				if err := ps.full.SubmitContext(ctx, func() { ran = true }); !errors.Is(err, context.DeadlineExceeded) || ran {
					t.Errorf("SubmitContext = %v, ran %v; want DeadlineExceeded, unrun", err, ran)
				}
				if s := ps.full.Stats(); s.Canceled != 1 || s.CallerRan != 0 {
					t.Errorf("stats %+v; want 1 canceled, none caller-run", s)
				}
				close(gate)
				ps.paused.Resume()
				ps.paused.StopAndWait()
			})
		})
	}
}
