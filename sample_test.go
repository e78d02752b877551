package crew_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// sampleBounds returns the least and most a sampled Count may be when n tasks are timed one
// in every k: k times a Binomial(n, 1/k) draw, within 6 standard deviations of its mean (a
// false failure about once in 10^9 runs).
func sampleBounds(n, k int) (lo, hi uint64) {
	mean := float64(n) / float64(k)
	sd := math.Sqrt(mean * (1 - 1/float64(k)))
	return uint64(max(0, math.Floor(mean-6*sd))) * uint64(k), uint64(math.Ceil(mean+6*sd)) * uint64(k)
}

// checkSampled fails unless both histograms of s hold a count that is a multiple of k, equal
// between them, and within sampleBounds for n tasks.
func checkSampled(t *testing.T, what string, s crew.Stats, n, k int) {
	t.Helper()
	lo, hi := sampleBounds(n, k)
	w, r := s.WaitTime.Count, s.RunTime.Count
	if w != r || w%uint64(k) != 0 || w < lo || w > hi {
		t.Fatalf("%s: WaitTime.Count %d, RunTime.Count %d for %d tasks sampled 1 in %d, want equal multiples of %d in [%d, %d]",
			what, w, r, n, k, k, lo, hi)
	}
	var sum uint64
	for _, c := range s.RunTime.Counts {
		if c%uint64(k) != 0 {
			t.Fatalf("%s: a bucket holds %d, not a multiple of %d", what, c, k)
		}
		sum += c
	}
	if sum != r {
		t.Fatalf("%s: RunTime.Counts add up to %d, Count is %d", what, sum, r)
	}
}

func TestLatencySampleCountsEachTimedTaskNTimes(t *testing.T) {
	t.Parallel()
	const n, k = 8000, 8
	p := crew.New(4, crew.WithLatencyHistograms(), crew.WithLatencySample(k))
	var ran atomic.Int64
	for range n {
		must(t, p.Submit(func() { ran.Add(1) }))
	}
	p.StopAndWait()
	s := p.Stats()
	if ran.Load() != n || s.Completed != n || s.Accepted != n {
		t.Fatalf("ran %d, Stats %+v: the counters must stay exact", ran.Load(), s)
	}
	checkSampled(t, "Pool", s, n, k)
}

// A task left out reads no clock: the clock is read only for the timed ones, three times
// each (submit, start, end), beside what the pool reads for itself.
func TestLatencySampleLeavesTheClockAloneForTasksLeftOut(t *testing.T) {
	t.Parallel()
	const n, k = 4000, 100
	var reads atomic.Int64
	clock := func() time.Time { reads.Add(1); return time.Now() }
	p := crew.New(2, crew.WithLatencyHistograms(), crew.WithLatencySample(k), crew.WithClock(clock),
		crew.WithIdleTimeout(crew.NoIdleTimeout)) // no reaping: the reaper reads the clock too
	before := reads.Load()
	for range n {
		must(t, p.Submit(func() {}))
	}
	p.Wait()
	got := reads.Load() - before
	timed := int64(p.Stats().RunTime.Count / k)
	p.StopAndWait()
	if got > 3*timed+10 {
		t.Fatalf("%d clock reads for %d tasks of which %d were timed, want at most %d", got, n, timed, 3*timed+10)
	}
}

// The times of a timed task are its own: tasks that sleep 2ms each run at least that long.
func TestLatencySampleTimesAreRealTimes(t *testing.T) {
	t.Parallel()
	const n, k = 200, 4
	p := crew.New(50, crew.WithLatencyHistograms(), crew.WithLatencySample(k))
	for range n {
		must(t, p.Submit(func() { time.Sleep(2 * time.Millisecond) }))
	}
	p.StopAndWait()
	s := p.Stats()
	checkSampled(t, "Pool", s, n, k)
	if s.RunTime.Count > 0 && s.RunTime.Sum < float64(s.RunTime.Count)*0.002 {
		t.Fatalf("RunTime: Sum %v s over Count %d, want at least 2ms each", s.RunTime.Sum, s.RunTime.Count)
	}
}

// Hooks and the adaptive limit need every task's times: with either, every task is timed and
// counted once. So is every task with a sample of one.
func TestLatencySampleTimesEveryTaskWhenSomethingNeedsEvery(t *testing.T) {
	t.Parallel()
	var started atomic.Int64
	for _, c := range []struct {
		name string
		opts []crew.Option
	}{
		{"hooks", []crew.Option{crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { started.Add(1) }})}},
		{"adaptive", []crew.Option{crew.WithAdaptiveLimit(1)}},
		{"one", []crew.Option{crew.WithLatencySample(1)}},
		{"order", []crew.Option{crew.WithLatencySample(8), crew.WithHooks(crew.Hooks{})}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 300
			opts := append([]crew.Option{crew.WithLatencyHistograms(), crew.WithLatencySample(8)}, c.opts...)
			p := crew.New(4, opts...)
			for range n {
				must(t, p.Submit(func() {}))
			}
			p.StopAndWait()
			if s := p.Stats(); s.WaitTime.Count != n || s.RunTime.Count != n {
				t.Fatalf("WaitTime.Count %d, RunTime.Count %d, want %d: every task timed once", s.WaitTime.Count, s.RunTime.Count, n)
			}
		})
	}
	if started.Load() != 300 {
		t.Fatalf("the Started hook was called %d times, want 300", started.Load())
	}
}

func TestLatencySamplePanicsOutsideItsRange(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, -1, math.MinInt, 1<<20 + 1, math.MaxInt} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithLatencySample(%d) did not panic", n)
				}
			}()
			crew.WithLatencySample(n)
		}()
	}
	p := crew.New(1, crew.WithLatencySample(1<<20)) // no histograms: no effect
	p.StopAndWait()
}

// Without WithLatencyHistograms the option does nothing: no histograms, and the clock read
// as often as without it. Idle workers are never reaped, so that the reads do not depend on
// timing: the pool then reads the clock once, whatever its tasks.
func TestLatencySampleAloneDoesNothing(t *testing.T) {
	t.Parallel()
	reads := func(opts ...crew.Option) (int64, crew.Stats) {
		var n atomic.Int64
		opts = append(opts, crew.WithIdleTimeout(crew.NoIdleTimeout),
			crew.WithClock(func() time.Time { n.Add(1); return time.Now() }))
		p := crew.New(1, opts...)
		for range 100 {
			must(t, p.Submit(func() {}))
		}
		p.StopAndWait()
		return n.Load(), p.Stats()
	}
	plain, _ := reads()
	sampled, s := reads(crew.WithLatencySample(4))
	if s.RunTime != nil || s.WaitTime != nil || sampled != plain {
		t.Fatalf("histograms %v %v, %d clock reads against %d without the option: want none, and as many", s.WaitTime, s.RunTime, sampled, plain)
	}
}

// A Keyed's tasks are sampled as the pool's; a sub-pool takes no sampling from its parent.
func TestLatencySampleKeyedAndSubPools(t *testing.T) {
	t.Parallel()
	const n, k = 4000, 4
	p := crew.New(4, crew.WithLatencyHistograms(), crew.WithLatencySample(k))
	sub := p.Sub(2, crew.WithLatencyHistograms())
	sampledSub := sub.Sub(2, crew.WithLatencyHistograms(), crew.WithLatencySample(2*k))
	kd := crew.NewKeyed[int](p)
	for i := range n {
		must(t, kd.Submit(i%7, func() {}))
		must(t, sub.Submit(func() {}))
		must(t, sampledSub.Submit(func() {}))
	}
	p.StopAndWait()
	checkSampled(t, "Keyed on a sampled pool", p.Stats(), n, k)
	if s := sub.Stats(); s.RunTime.Count != n || s.WaitTime.Count != n {
		t.Fatalf("sub-pool without the option: Count %d and %d, want %d", s.WaitTime.Count, s.RunTime.Count, n)
	}
	checkSampled(t, "sub-pool of a sub-pool", sampledSub.Stats(), n, 2*k)
	for name, q := range map[string]*crew.Pool{"root": p, "sub": sub, "sub of sub": sampledSub} {
		idleIdentity(t, name, q.Stats())
	}
}

// Sampling beside every other feature: a bounded queue that runs tasks on the caller, a
// priority sub-pool, futures, a group, Pause and Resume, Resize, and a StopNow that takes
// tasks back. The counters stay exact, and the histograms hold multiples of k for at most
// the tasks that started.
func TestLatencySampleWithEveryFeatureAround(t *testing.T) {
	t.Parallel()
	const k = 4
	opts := []crew.Option{crew.WithLatencyHistograms(), crew.WithLatencySample(k)}
	root := crew.New(3, append(opts, crew.WithQueueSize(8), crew.WithOverflow(crew.CallerRuns))...)
	hi := root.Sub(2, append(opts, crew.WithPriority(1))...)
	lo := root.Sub(2, append(opts, crew.WithOverflow(crew.DiscardOldest), crew.WithQueueSize(4))...)
	var wg sync.WaitGroup
	var ran atomic.Int64
	task := func() { ran.Add(1); time.Sleep(10 * time.Microsecond) }
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				switch (g + i) % 5 {
				case 0:
					_ = root.Submit(task)
				case 1:
					_ = hi.Submit(task)
				case 2:
					_ = lo.Submit(task)
				case 3:
					f := crew.Go(hi, func() (int, error) { task(); return i, nil })
					if i%3 == 0 {
						f.Cancel()
					}
				case 4:
					gr, _ := lo.Group(context.Background())
					gr.Go(func(context.Context) error { task(); return nil })
					_ = gr.Wait()
				}
				switch i % 97 {
				case 10:
					root.Pause()
					root.Resume()
				case 50:
					root.Resize(1 + i%4)
				}
			}
		}()
	}
	wg.Wait()
	root.Pause()
	for range 20 {
		_ = hi.Submit(task)
	}
	back := root.StopNow()
	root.Resume()
	root.StopAndWait()
	for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "lo": lo} {
		s := p.Stats()
		idleIdentity(t, name, s)
		if s.WaitTime.Count != s.RunTime.Count || s.RunTime.Count%k != 0 {
			t.Fatalf("%s: WaitTime.Count %d, RunTime.Count %d: want equal multiples of %d", name, s.WaitTime.Count, s.RunTime.Count, k)
		}
	}
	if len(back) == 0 {
		t.Fatal("StopNow of a paused pool with queued tasks took none back")
	}
}

// ExampleWithLatencySample times one task in 8: each timed one counts 8 times, so the
// histograms' counts are multiples of 8 that estimate the tasks, while Completed is exact.
func ExampleWithLatencySample() {
	p := crew.New(4, crew.WithLatencyHistograms(), crew.WithLatencySample(8))
	for range 10_000 {
		_ = p.Submit(func() {})
	}
	p.StopAndWait()
	s := p.Stats()
	fmt.Println("completed:", s.Completed)
	fmt.Println("counts are multiples of 8:", s.RunTime.Count%8 == 0)
	fmt.Println("about every task:", s.RunTime.Count > 8_000 && s.RunTime.Count < 12_000)
	// Output:
	// completed: 10000
	// counts are multiples of 8: true
	// about every task: true
}

func TestLatencySampleOnAFuncPool(t *testing.T) {
	t.Parallel()
	const n, k = 4000, 4
	var sum atomic.Int64
	p := crew.NewFunc(2, func(v int) { sum.Add(int64(v)) }, crew.WithLatencyHistograms(), crew.WithLatencySample(k))
	for range n {
		must(t, p.Invoke(1))
	}
	p.StopAndWait()
	if sum.Load() != n {
		t.Fatalf("%d calls ran, want %d", sum.Load(), n)
	}
	checkSampled(t, "FuncPool", p.Stats(), n, k)
}
