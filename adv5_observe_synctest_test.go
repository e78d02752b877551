//go:build go1.25

package crew_test

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// adv5Bucket returns the bucket of h that holds d: Buckets[i] < d <= Buckets[i+1], d in
// seconds, as the doc of Histogram says.
func adv5Bucket(h *crew.Histogram, d time.Duration) int {
	s := d.Seconds()
	for i := range h.Counts {
		if h.Buckets[i] < s && s <= h.Buckets[i+1] {
			return i
		}
	}
	if s <= 0 {
		return 0
	}
	return len(h.Counts) - 1
}

// adv5Holds fails t unless h holds exactly the durations ds, each counted weight times:
// Count, every bucket and Sum (to the nanosecond).
func adv5Holds(t *testing.T, what string, h *crew.Histogram, weight uint64, ds ...time.Duration) {
	t.Helper()
	if h == nil {
		t.Fatalf("%s: nil histogram, want one holding %v", what, ds)
	}
	want := make([]uint64, len(h.Counts))
	var sum time.Duration
	for _, d := range ds {
		want[adv5Bucket(h, d)] += weight
		sum += d * time.Duration(weight)
	}
	if h.Count != uint64(len(ds))*weight || !slices.Equal(h.Counts, want) {
		t.Fatalf("%s: Count %d, buckets %v; want %v each counted %d times in buckets %v",
			what, h.Count, adv5Nonzero(h), ds, weight, adv5NonzeroOf(h.Buckets, want))
	}
	if got := time.Duration(math.Round(h.Sum * 1e9)); got != sum {
		t.Fatalf("%s: Sum %v, want %v (%v each counted %d times)", what, got, sum, ds, weight)
	}
}

// adv5Nonzero describes the buckets of h that count something, by their upper boundary.
func adv5Nonzero(h *crew.Histogram) map[float64]uint64 { return adv5NonzeroOf(h.Buckets, h.Counts) }

func adv5NonzeroOf(bounds []float64, counts []uint64) map[float64]uint64 {
	m := map[float64]uint64{}
	for i, c := range counts {
		if c != 0 {
			m[bounds[i+1]] = c
		}
	}
	return m
}

// adv5Sleeper returns a task that sleeps d on the bubble's clock.
func adv5Sleeper(d time.Duration) func() { return func() { time.Sleep(d) } }

// TestAdv5ObsBubbleRunAndWaitLandInTheirExactBuckets proves the docs of Histogram and
// WithLatencyHistograms on a fake clock: a task that sleeps exactly d is counted in the
// bucket holding d (boundaries included: exactly 1 s is in the bucket that ends at 1 s),
// and one that waited exactly w behind the others in the bucket holding w; Sum is exact.
// On a Pool and on a FuncPool.
func TestAdv5ObsBubbleRunAndWaitLandInTheirExactBuckets(t *testing.T) {
	runs := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 1500 * time.Millisecond, 3 * time.Second}
	var waits []time.Duration
	var at time.Duration
	for _, d := range runs {
		waits = append(waits, at)
		at += d
	}
	forEachKindInBubble(t, 1, []crew.Option{crew.WithLatencyHistograms()}, func(t *testing.T, p testPool) {
		defer p.StopAndWait()
		for _, d := range runs {
			must(t, p.submit(adv5Sleeper(d)))
		}
		p.Wait()
		s := p.Stats()
		adv5Holds(t, "RunTime", s.RunTime, 1, runs...)
		adv5Holds(t, "WaitTime", s.WaitTime, 1, waits...)
	})
}

// TestAdv5ObsBubbleSampledTasksCountTheirOwnWaitAndRunNTimes proves the doc of
// WithLatencySample on a fake clock: each timed task counts n times in both histograms,
// with its own wait and its own run, and the others not at all. Every task runs a time of
// its own bucket and waits a time of its own bucket, so the buckets tell which tasks were
// timed: WaitTime must hold exactly the waits of the tasks RunTime holds.
func TestAdv5ObsBubbleSampledTasksCountTheirOwnWaitAndRunNTimes(t *testing.T) {
	const k = 3
	runs := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond,
		1500 * time.Millisecond, 3 * time.Second, 5 * time.Second, 11 * time.Second}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for range rounds {
		synctest.Test(t, func(t *testing.T) {
			p := crew.New(1, crew.WithLatencyHistograms(), crew.WithLatencySample(k))
			defer p.StopAndWait()
			p.Pause() // every task waits 250ms more, and the waits differ by the runs before
			for _, d := range runs {
				must(t, p.Submit(adv5Sleeper(d)))
			}
			time.Sleep(250 * time.Millisecond)
			p.Resume()
			p.Wait()
			s := p.Stats()
			if s.Completed != uint64(len(runs)) {
				t.Fatalf("Completed %d, want %d", s.Completed, len(runs))
			}
			var timedRuns, timedWaits []time.Duration
			at := 250 * time.Millisecond
			for _, d := range runs {
				if c := s.RunTime.Counts[adv5Bucket(s.RunTime, d)]; c != 0 {
					timedRuns = append(timedRuns, d)
					timedWaits = append(timedWaits, at)
				}
				at += d
			}
			adv5Holds(t, "RunTime", s.RunTime, k, timedRuns...)
			adv5Holds(t, "WaitTime", s.WaitTime, k, timedWaits...)
		})
	}
}

// TestAdv5ObsBubbleWaitsFollowPriorities proves the docs of WithPriority and the histograms
// together: on a root of one worker busy for 1 s, a level-0 sub-pool's task queued first and
// two tasks of a level-1 sub-pool queued after it; the level-1 tasks start first (at 1 s
// and 2 s), the level-0 one last (at 3 s), and each sub-pool's WaitTime holds exactly those
// waits, its RunTime the runs; the root's histograms see only its own task.
func TestAdv5ObsBubbleWaitsFollowPriorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := []crew.Option{crew.WithLatencyHistograms()}
		root := crew.New(1, h...)
		defer root.StopAndWait()
		lo := root.Sub(1, h...)
		hi := root.Sub(2, append(h, crew.WithPriority(1))...)
		must(t, root.Submit(adv5Sleeper(time.Second)))
		synctest.Wait()
		must(t, lo.Submit(adv5Sleeper(time.Second)))
		must(t, hi.Submit(adv5Sleeper(time.Second)))
		must(t, hi.Submit(adv5Sleeper(time.Second)))
		root.Wait()
		adv5Holds(t, "hi WaitTime", hi.Stats().WaitTime, 1, time.Second, 2*time.Second)
		adv5Holds(t, "hi RunTime", hi.Stats().RunTime, 1, time.Second, time.Second)
		adv5Holds(t, "lo WaitTime", lo.Stats().WaitTime, 1, 3*time.Second)
		adv5Holds(t, "lo RunTime", lo.Stats().RunTime, 1, time.Second)
		adv5Holds(t, "root WaitTime", root.Stats().WaitTime, 1, 0)
		adv5Holds(t, "root RunTime", root.Stats().RunTime, 1, time.Second)
	})
}

// TestAdv5ObsBubbleWaitsCoverPauses proves the docs of Pause and the histograms: tasks
// queued on a paused pool, on a sub-pool of a paused parent and on a sub-pool of a sub-pool
// of it wait from their submit to their start, the pause included.
func TestAdv5ObsBubbleWaitsCoverPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := crew.WithLatencyHistograms()
		root := crew.New(4, h)
		defer root.StopAndWait()
		sub := root.Sub(2, h)
		subsub := sub.Sub(1, h)
		root.Pause()
		must(t, root.Submit(adv5Sleeper(300*time.Millisecond)))
		time.Sleep(100 * time.Millisecond)
		must(t, sub.Submit(adv5Sleeper(300*time.Millisecond)))
		must(t, subsub.Submit(adv5Sleeper(300*time.Millisecond)))
		must(t, subsub.Submit(adv5Sleeper(300*time.Millisecond)))
		time.Sleep(600 * time.Millisecond)
		root.Resume()
		root.Wait()
		adv5Holds(t, "root WaitTime", root.Stats().WaitTime, 1, 700*time.Millisecond)
		adv5Holds(t, "sub WaitTime", sub.Stats().WaitTime, 1, 600*time.Millisecond)
		// subsub runs one at a time: the second waits for the first's run too.
		adv5Holds(t, "subsub WaitTime", subsub.Stats().WaitTime, 1, 600*time.Millisecond, 900*time.Millisecond)
		adv5Holds(t, "subsub RunTime", subsub.Stats().RunTime, 1, 300*time.Millisecond, 300*time.Millisecond)

		// A pause of the middle pool holds its sub-pool's starts too.
		sub.Pause()
		must(t, subsub.Submit(adv5Sleeper(300*time.Millisecond)))
		time.Sleep(1500 * time.Millisecond)
		sub.Resume()
		root.Wait()
		adv5Holds(t, "subsub WaitTime after", subsub.Stats().WaitTime, 1,
			600*time.Millisecond, 900*time.Millisecond, 1500*time.Millisecond)
	})
}

// TestAdv5ObsBubbleWaitsCoverRateLimits proves the docs of WithRateLimit and the histograms:
// a throttled task waits in the queue, and its wait (in the Started hook and in WaitTime)
// runs from its submit to its start; the histogram holds exactly what the hooks saw. On a
// pool limited itself, and on a sub-pool of a sub-pool whose parent is limited.
func TestAdv5ObsBubbleWaitsCoverRateLimits(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(hooks crew.Option) (root, target *crew.Pool)
	}{
		{"own limit", func(hk crew.Option) (*crew.Pool, *crew.Pool) {
			p := crew.New(4, crew.WithRateLimit(2, 1), crew.WithLatencyHistograms(), hk)
			return p, p
		}},
		{"parent's limit", func(hk crew.Option) (*crew.Pool, *crew.Pool) {
			root := crew.New(4, crew.WithRateLimit(2, 1))
			return root, root.Sub(4).Sub(4, crew.WithLatencyHistograms(), hk)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var seen []time.Duration
				hk := crew.WithHooks(crew.Hooks{Started: func(ti crew.TaskInfo) {
					mu.Lock()
					seen = append(seen, ti.Wait)
					mu.Unlock()
				}})
				root, p := c.build(hk)
				defer root.StopAndWait()
				for range 4 {
					must(t, p.Submit(func() {}))
				}
				root.Wait()
				mu.Lock()
				defer mu.Unlock()
				slices.Sort(seen)
				// Starts at 0, then one a half second: the bucket starts full with one token.
				want := []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
				if len(seen) != len(want) {
					t.Fatalf("Started saw waits %v, want %v", seen, want)
				}
				for i := range want {
					if seen[i] < want[i] || seen[i] > want[i]+time.Millisecond {
						t.Fatalf("Started saw waits %v, want about %v", seen, want)
					}
				}
				adv5Holds(t, "WaitTime", p.Stats().WaitTime, 1, seen...)
			})
		})
	}
}

// TestAdv5ObsBubbleKeyedWaitsBehindItsKey proves the docs of Keyed and the histograms: the
// pool's histograms count each keyed task with its own wait (from its submit, through the
// key's earlier tasks) and run; a Keyed of a sub-pool of a sub-pool is counted by that
// sub-pool.
func TestAdv5ObsBubbleKeyedWaitsBehindItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := crew.New(3)
		defer root.StopAndWait()
		p := root.Sub(3).Sub(3, crew.WithLatencyHistograms())
		k := crew.NewKeyed[string](p)
		for _, d := range []time.Duration{300 * time.Millisecond, 700 * time.Millisecond, 100 * time.Millisecond} {
			must(t, k.Submit("a", adv5Sleeper(d)))
		}
		must(t, k.Submit("b", adv5Sleeper(1500*time.Millisecond)))
		k.Wait()
		root.Wait()
		s := p.Stats()
		adv5Holds(t, "WaitTime", s.WaitTime, 1, 0, 300*time.Millisecond, time.Second, 0)
		adv5Holds(t, "RunTime", s.RunTime, 1, 300*time.Millisecond, 700*time.Millisecond, 100*time.Millisecond,
			1500*time.Millisecond)
		if ks := k.Stats(); ks.WaitTime != nil || ks.RunTime != nil || ks.Completed != 4 {
			t.Fatalf("Keyed.Stats %+v: want 4 completed and nil histograms", ks)
		}
	})
}

// TestAdv5ObsBubbleCallerRunWaitCountsFromItsSubmit proves the docs of CallerRuns,
// WithMaxWait and TaskInfo.Wait: a task that waited d for room and then ran on its
// submitter waited d, in the hook and in WaitTime, and ran its own time.
func TestAdv5ObsBubbleCallerRunWaitCountsFromItsSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
			crew.WithMaxWait(300*time.Millisecond), crew.WithLatencyHistograms())
		defer p.StopAndWait()
		must(t, p.Submit(adv5Sleeper(time.Second)))
		must(t, p.Submit(adv5Sleeper(100*time.Millisecond)))
		must(t, p.Submit(adv5Sleeper(700*time.Millisecond))) // waits 300ms, runs here till 1s
		p.Wait()
		s := p.Stats()
		if s.CallerRan != 1 || s.Completed != 3 {
			t.Fatalf("%+v: want 3 completed, 1 of them on its submitter", s)
		}
		adv5Holds(t, "WaitTime", s.WaitTime, 1, 0, 300*time.Millisecond, time.Second)
		adv5Holds(t, "RunTime", s.RunTime, 1, time.Second, 700*time.Millisecond, 100*time.Millisecond)
	})
}

// TestAdv5ObsBubbleBlockedSubmitWaitCountsFromItsSubmit proves the docs of TaskInfo.Wait
// ("the time from the task's submit to its start") and WithLatencyHistograms ("how long
// each task waited between its submit and its start") for a submit that blocked on a full
// queue: submitted at 0 and started at 2 s, it waited 2 s, as a caller-run task's wait
// counts its wait for room (TestAdv5ObsBubbleCallerRunWaitCountsFromItsSubmit) and a keyed
// task's its wait for its key's bounded queue.
func TestAdv5ObsBubbleBlockedSubmitWaitCountsFromItsSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []time.Duration
		p := crew.New(1, crew.WithQueueSize(1), crew.WithLatencyHistograms(),
			crew.WithHooks(crew.Hooks{Started: func(ti crew.TaskInfo) {
				mu.Lock()
				seen = append(seen, ti.Wait)
				mu.Unlock()
			}}))
		defer p.StopAndWait()
		must(t, p.Submit(adv5Sleeper(time.Second)))
		must(t, p.Submit(adv5Sleeper(time.Second)))
		must(t, p.Submit(func() {})) // blocks from 0 to 1 s, starts at 2 s
		p.Wait()
		mu.Lock()
		defer mu.Unlock()
		if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(seen, want) {
			t.Errorf("Started saw waits %v, want %v", seen, want)
		}
		adv5Holds(t, "WaitTime", p.Stats().WaitTime, 1, 0, time.Second, 2*time.Second)
	})
}

// TestAdv5ObsBubbleHelpedFunctionWaitCountsFromItsSubmit proves the docs of TaskInfo.Wait,
// WaitTime and "waits that help": a group's function queued at 0 behind the function that
// made the group, and run by that function's Wait at 1 s, waited 1 s.
func TestAdv5ObsBubbleHelpedFunctionWaitCountsFromItsSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []time.Duration
		p := crew.New(1, crew.WithLatencyHistograms(),
			crew.WithHooks(crew.Hooks{Started: func(ti crew.TaskInfo) {
				mu.Lock()
				seen = append(seen, ti.Wait)
				mu.Unlock()
			}}))
		defer p.StopAndWait()
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { time.Sleep(300 * time.Millisecond); return nil })
			time.Sleep(time.Second)
			return 0, g.Wait() // runs the group's function here, at 1 s
		})
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		p.Wait()
		mu.Lock()
		defer mu.Unlock()
		if want := []time.Duration{0, time.Second}; !slices.Equal(seen, want) {
			t.Errorf("Started saw waits %v, want %v", seen, want)
		}
		s := p.Stats()
		adv5Holds(t, "WaitTime", s.WaitTime, 1, 0, time.Second)
		adv5Holds(t, "RunTime", s.RunTime, 1, 1300*time.Millisecond, 300*time.Millisecond)
	})
}

// TestAdv5ObsBubbleGoexitAndPanicNilCountTheirRunTimes proves the docs of Stats.RunTime and
// Hooks: tasks that run d and then return, call runtime.Goexit, panic(nil) or panic are each
// counted once in RunTime with d, however their Finished hook ends (returning, panicking
// with nil, calling runtime.Goexit); RunTime.Count equals Completed+Panicked, on a pool, a
// sub-pool of a sub-pool and a Keyed.
func TestAdv5ObsBubbleGoexitAndPanicNilCountTheirRunTimes(t *testing.T) {
	ends := []func(){
		func() {},
		runtime.Goexit,
		func() { panic(nil) },
		func() { panic("boom") },
	}
	hookEnds := []func(){
		func() {},
		func() { panic(nil) },
		runtime.Goexit,
	}
	const unit = 100 * time.Millisecond
	// A task's run time tells its Finished hook how to end: d = unit*(1+i*len(hookEnds)+j)
	// for ends[i] and hookEnds[j].
	hook := crew.WithHooks(crew.Hooks{Finished: func(ti crew.TaskInfo) {
		hookEnds[(int(ti.Run/unit)-1)%len(hookEnds)]()
	}})
	synctest.Test(t, func(t *testing.T) {
		quiet := crew.WithPanicHandler(func(any, []byte) {})
		root := crew.New(2, quiet, crew.WithLatencyHistograms(), hook)
		defer root.StopAndWait()
		sub := root.Sub(1).Sub(2, crew.WithLatencyHistograms(), hook)
		kroot := crew.New(2, quiet, crew.WithLatencyHistograms(), hook)
		defer kroot.StopAndWait()
		kd := crew.NewKeyed[int](kroot)
		var want []time.Duration
		for i, end := range ends {
			for j := range hookEnds {
				d := unit * time.Duration(1+i*len(hookEnds)+j)
				want = append(want, d)
				task := func() { time.Sleep(d); end() }
				must(t, root.Submit(task))
				must(t, sub.Submit(task))
				must(t, kd.Submit(j%2, task))
			}
		}
		kd.Wait()
		sub.Wait()
		root.Wait()
		kroot.Wait()
		for name, p := range map[string]*crew.Pool{"root": root, "sub": sub, "keyed's pool": kroot} {
			s := p.Stats()
			if name != "keyed's pool" {
				idleIdentity(t, name, s)
			}
			adv5Holds(t, name+" RunTime", s.RunTime, 1, want...)
			if s.WaitTime.Count != uint64(len(want)) {
				t.Fatalf("%s: WaitTime.Count %d, want %d", name, s.WaitTime.Count, len(want))
			}
		}
		if s := sub.Stats(); s.Completed+s.Panicked != uint64(len(want)) || s.Panicked != uint64(2*len(hookEnds)) {
			t.Fatalf("sub %+v: want %d ended, %d of them panicked", s, len(want), 2*len(hookEnds))
		}
		if ks := kd.Stats(); ks.Completed+ks.Panicked != uint64(len(want)) || ks.Panicked != uint64(2*len(hookEnds)) {
			t.Fatalf("keyed %+v: want %d ended, %d of them panicked", ks, len(want), 2*len(hookEnds))
		}
	})
}

// TestAdv5ObsBubbleWaitsCoverAShrinkingResize proves the docs of Resize ("no task starts
// while that many or more run"; a parent's shrinking Resize holds its sub-pools' starts) and
// the histograms: after a shrink to 1 under two running tasks of 1 s and 2 s, two queued
// tasks of 500 ms start at 2 s and 2.5 s, and their waits are exactly those; in the pool
// itself, and in a sub-pool of a sub-pool of the pool resized. A growing Resize then starts
// queued tasks at once, up to each pool's own limit: their wait ends at the Resize.
func TestAdv5ObsBubbleWaitsCoverAShrinkingResize(t *testing.T) {
	for _, nested := range []bool{false, true} {
		t.Run(map[bool]string{false: "own", true: "sub-pool of a sub-pool"}[nested], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				root := crew.New(2, crew.WithLatencyHistograms())
				defer root.StopAndWait()
				target := root
				if nested {
					target = root.Sub(2).Sub(2, crew.WithLatencyHistograms())
				}
				must(t, root.Submit(adv5Sleeper(time.Second)))
				must(t, root.Submit(adv5Sleeper(2*time.Second)))
				synctest.Wait()
				root.Resize(1)
				must(t, target.Submit(adv5Sleeper(500*time.Millisecond)))
				must(t, target.Submit(adv5Sleeper(500*time.Millisecond)))
				root.Wait()
				target.Wait()
				want := []time.Duration{2 * time.Second, 2500 * time.Millisecond}
				if !nested {
					want = append([]time.Duration{0, 0}, want...)
				}
				adv5Holds(t, "WaitTime", target.Stats().WaitTime, 1, want...)

				// Grow: three queued behind a paused pool of one start together at the Resize.
				root.Pause()
				for range 3 {
					must(t, target.Submit(adv5Sleeper(300*time.Millisecond)))
				}
				time.Sleep(700 * time.Millisecond)
				root.Resize(3)
				root.Resume()
				root.Wait()
				target.Wait()
				last := 700 * time.Millisecond
				if nested {
					last = time.Second // the sub-pools' own limit of 2 holds the third back
				}
				want = append(want, 700*time.Millisecond, 700*time.Millisecond, last)
				adv5Holds(t, "WaitTime after growing", target.Stats().WaitTime, 1, want...)
			})
		})
	}
}

// TestAdv5ObsBubbleKeyedBlockedSubmitWaitCountsFromItsSubmit proves the docs of TaskInfo.Wait
// and the histograms for a keyed task whose submit blocked on the Keyed's full bounded
// queue: submitted at 0, blocked until 1 s and started at 2 s, it waited 2 s.
func TestAdv5ObsBubbleKeyedBlockedSubmitWaitCountsFromItsSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []time.Duration
		p := crew.New(1, crew.WithLatencyHistograms(), crew.WithHooks(crew.Hooks{Started: func(ti crew.TaskInfo) {
			mu.Lock()
			seen = append(seen, ti.Wait)
			mu.Unlock()
		}}))
		defer p.StopAndWait()
		k := crew.NewKeyed[int](p, crew.WithQueueSize(1))
		must(t, k.Submit(1, adv5Sleeper(time.Second)))
		must(t, k.Submit(1, adv5Sleeper(time.Second)))
		must(t, k.Submit(1, func() {})) // blocks from 0 to 1 s, starts at 2 s
		k.Wait()
		p.Wait()
		mu.Lock()
		defer mu.Unlock()
		if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(seen, want) {
			t.Fatalf("Started saw waits %v, want %v", seen, want)
		}
		adv5Holds(t, "WaitTime", p.Stats().WaitTime, 1, 0, time.Second, 2*time.Second)
	})
}
