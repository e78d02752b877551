//go:build go1.25

package crew_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// CPUs on a root and on sub-pools (one of them adaptive, one weighted), inside a bubble: a
// GOMAXPROCS change is taken within a second by submits or Stats, by each pool that follows it;
// Resize to a number stops the following; after StopAndWait nothing is left.
func TestAmidCPUsOnSubPoolsFollowsGOMAXPROCS(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.GOMAXPROCS(2)
	synctest.Test(t, func(t *testing.T) {
		root := crew.New(crew.CPUs, crew.WithLatencyHistograms())
		sub := root.Sub(crew.CPUs, crew.WithPriority(1))
		subsub := sub.Sub(crew.CPUs, crew.WithAdaptiveLimit(1))
		fixed := root.Sub(crew.CPUs)
		fixed.Resize(1)
		for _, p := range []*crew.Pool{root, sub, subsub} {
			if s := p.Stats(); s.MaxWorkers != 2 {
				t.Fatalf("MaxWorkers %d, want 2", s.MaxWorkers)
			}
		}
		runtime.GOMAXPROCS(3)
		var ran atomic.Int64
		for _, p := range []*crew.Pool{root, sub, subsub, fixed} {
			must(t, p.Submit(func() { ran.Add(1) }))
		}
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		if s := subsub.Stats(); s.MaxWorkers != 2 {
			t.Errorf("adaptive subsub: MaxWorkers %d, want 2 (a raised ceiling leaves the limit)", s.MaxWorkers)
		}
		for i, p := range []*crew.Pool{root, sub} {
			if s := p.Stats(); s.MaxWorkers != 3 {
				t.Errorf("pool %d: MaxWorkers %d a second after GOMAXPROCS went to 3, want 3", i, s.MaxWorkers)
			}
		}
		if s := fixed.Stats(); s.MaxWorkers != 1 {
			t.Errorf("resized sub-pool follows GOMAXPROCS: MaxWorkers %d, want 1", s.MaxWorkers)
		}
		// Weight 3 fits everywhere now.
		must(t, subsub.SubmitN(3, func() { ran.Add(1) }))
		runtime.GOMAXPROCS(1)
		time.Sleep(1100 * time.Millisecond)
		for i, p := range []*crew.Pool{root, sub, subsub} {
			if s := p.Stats(); s.MaxWorkers != 1 {
				t.Errorf("pool %d: MaxWorkers %d after GOMAXPROCS went to 1, want 1", i, s.MaxWorkers)
			}
		}
		if err := subsub.SubmitN(2, func() {}); err != crew.ErrTooHeavy {
			t.Errorf("SubmitN(2) with GOMAXPROCS 1 = %v, want ErrTooHeavy", err)
		}
		// Resize(CPUs) from a task brings the following back after a Resize to a number.
		must(t, root.Submit(func() { fixed.Resize(crew.CPUs) }))
		root.Wait()
		if s := fixed.Stats(); s.MaxWorkers != 1 {
			t.Errorf("fixed after Resize(CPUs): %d", s.MaxWorkers)
		}
		runtime.GOMAXPROCS(2)
		time.Sleep(1100 * time.Millisecond)
		if s := fixed.Stats(); s.MaxWorkers != 2 {
			t.Errorf("fixed after Resize(CPUs) and GOMAXPROCS 2: %d", s.MaxWorkers)
		}
		pools := []*crew.Pool{root, sub, subsub, fixed}
		var before [4]int
		for i, p := range pools {
			before[i] = p.Stats().MaxWorkers
		}
		root.StopAndWait()
		runtime.GOMAXPROCS(3)
		time.Sleep(1100 * time.Millisecond)
		for i, p := range pools {
			if s := p.Stats(); s.MaxWorkers != before[i] {
				t.Errorf("pool %d after stop: MaxWorkers %d, was %d: a stopped pool still follows GOMAXPROCS", i, s.MaxWorkers, before[i])
			}
			s := p.Stats()
			if s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
				t.Errorf("pool %d after StopAndWait: %+v", i, s)
			}
		}
		if ran.Load() != 5 {
			t.Errorf("%d of 5 ran", ran.Load())
		}
	})
}

// New(CPUs) under a limit that follows GOMAXPROCS: no task starts while MaxWorkers or more run,
// across a fall of GOMAXPROCS.
func TestAmidCPUsFallHoldsAtEveryStart(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.GOMAXPROCS(4)
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(crew.CPUs)
		sub := p.Sub(crew.CPUs)
		var running, over atomic.Int64
		var lowered atomic.Bool
		task := func() {
			r := running.Add(1)
			if lowered.Load() && r > 1 {
				over.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
			running.Add(-1)
		}
		for i := range 40 {
			q := p
			if i%2 == 1 {
				q = sub
			}
			must(t, q.Submit(task))
		}
		runtime.GOMAXPROCS(1)
		time.Sleep(1050 * time.Millisecond)
		_ = p.Stats()
		// Tasks started before the change may still run: wait for them to end.
		time.Sleep(150 * time.Millisecond)
		if s := p.Stats(); s.MaxWorkers != 1 {
			t.Fatalf("MaxWorkers %d, want 1", s.MaxWorkers)
		}
		lowered.Store(true)
		p.Wait()
		p.StopAndWait()
		if over.Load() != 0 {
			t.Errorf("%d tasks started with another running after the limit fell to 1", over.Load())
		}
	})
}
