//go:build go1.25

package crew_test

import (
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
