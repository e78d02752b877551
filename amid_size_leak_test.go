package crew_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"go.uber.org/goleak"
)

// "After StopAndWait returns, no goroutine of the pool is left running": a root with a rate
// limit, CPUs and adaptive sub-pools, rate-limited and prioritized sub-pools of sub-pools
// with a throttled backlog, idle workers, a Keyed and StopNow on a sub-pool.
func TestAmidNothingLeftAfterStopAndWaitWithEveryFeature(t *testing.T) {
	opts := goleak.IgnoreCurrent()
	var ran atomic.Int64
	root := crew.New(4, crew.WithRateLimit(1000, 4), crew.WithMinWorkers(2), crew.WithIdleTimeout(time.Hour),
		crew.WithLatencyHistograms(), crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) {}}))
	a := root.Sub(crew.CPUs, crew.WithPriority(1), crew.WithRateLimit(20, 1))
	b := root.Sub(3, crew.WithAdaptiveLimit(1))
	aa := a.Sub(2, crew.WithPriority(3), crew.WithRateLimit(5, 1))
	k := crew.NewKeyed[int](aa)
	for i := range 30 {
		for _, p := range []*crew.Pool{root, a, b, aa} {
			must(t, p.Submit(func() { ran.Add(1) }))
		}
		must(t, k.Submit(i%3, func() { ran.Add(1) }))
		must(t, b.SubmitN(2, func() { ran.Add(1) }))
	}
	time.Sleep(20 * time.Millisecond)
	returned := aa.StopNow()
	root.StopAndWait()
	// the StopNow'd tasks never ran; the rest did
	if got, want := ran.Load()+int64(len(returned)), int64(30*6); got > want {
		t.Errorf("ran %d + returned %d > %d", ran.Load(), len(returned), want)
	}
	for _, p := range []*crew.Pool{root, a, b, aa} {
		s := p.Stats()
		if s.Running != 0 || s.Waiting != 0 || s.Idle != 0 {
			t.Errorf("after StopAndWait: %+v", s)
		}
	}
	goleak.VerifyNone(t, opts)
}
