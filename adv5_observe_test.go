package crew_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// adv5Mono fails t unless h's counts are at least those of prev (nil: none before), bucket by
// bucket, and Count is the sum of Counts; each bucket and Count a multiple of k.
func adv5Mono(t *testing.T, what string, prev, h *crew.Histogram, k uint64) {
	t.Helper()
	if h == nil {
		t.Fatalf("%s: nil histogram", what)
	}
	var sum uint64
	for i, c := range h.Counts {
		if prev != nil && c < prev.Counts[i] {
			t.Fatalf("%s: bucket %d went back from %d to %d", what, i, prev.Counts[i], c)
		}
		if c%k != 0 {
			t.Fatalf("%s: bucket %d holds %d, not a multiple of %d", what, i, c, k)
		}
		sum += c
	}
	if sum != h.Count {
		t.Fatalf("%s: Counts add up to %d, Count is %d", what, sum, h.Count)
	}
	if prev != nil && (h.Count < prev.Count || h.Sum < prev.Sum) {
		t.Fatalf("%s: Count %d Sum %v after Count %d Sum %v: went back", what, h.Count, h.Sum, prev.Count, prev.Sum)
	}
}

// adv5Snap checks a new snapshot of a pool against the one before (zero: none): the
// histograms never go back and stay multiples of k, WaitTime counts at least what RunTime
// does, and RunTime counts at least the tasks the counters say ended when it is read after
// them (exact is k == 1).
func adv5Snap(t *testing.T, what string, prev, s crew.Stats, k uint64) {
	t.Helper()
	adv5Mono(t, what+" WaitTime", prev.WaitTime, s.WaitTime, k)
	adv5Mono(t, what+" RunTime", prev.RunTime, s.RunTime, k)
	if s.WaitTime.Count < s.RunTime.Count {
		t.Fatalf("%s: WaitTime.Count %d below RunTime.Count %d", what, s.WaitTime.Count, s.RunTime.Count)
	}
	if k == 1 && s.RunTime.Count < s.Completed+s.Panicked {
		t.Fatalf("%s: RunTime.Count %d below Completed+Panicked %d, read before it", what, s.RunTime.Count, s.Completed+s.Panicked)
	}
}

// TestAdv5ObsGOMAXPROCSChurnNeverLosesOrRewindsCounts proves the doc of Stats.WaitTime and
// RunTime while GOMAXPROCS goes up and down under a storm of tasks (the histograms count
// into one shard per processor): no count goes back between two snapshots, Count is the
// sum of Counts, WaitTime counts at least RunTime, and once idle every task is counted once
// (or, sampled, the counts are equal multiples of n), on a Pool, a sampled Pool, a FuncPool
// and a sub-pool.
func TestAdv5ObsGOMAXPROCSChurnNeverLosesOrRewindsCounts(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const k = 4
	const chunk = 300
	minChanges := int64(200)
	if testing.Short() {
		minChanges = 40
	}
	h := crew.WithLatencyHistograms()
	plain := crew.New(4, h)
	sampled := crew.New(3, h, crew.WithLatencySample(k))
	fp := crew.NewFunc(2, func(f func()) { f() }, h)
	subRoot := crew.New(2)
	sub := subRoot.Sub(2, h)
	defer subRoot.StopAndWait()
	defer plain.StopAndWait()
	defer sampled.StopAndWait()
	defer fp.StopAndWait()

	stop := make(chan struct{})
	var changes atomic.Int64
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { // GOMAXPROCS up and down
		defer bg.Done()
		procs := []int{1, 2, 3, 8, 1, 65, 2, 128, 4}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GOMAXPROCS(procs[i%len(procs)])
			changes.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	go func() { // snapshots
		defer bg.Done()
		var prev [4]crew.Stats
		prev[0], prev[1], prev[2], prev[3] = plain.Stats(), sampled.Stats(), fp.Stats(), sub.Stats()
		for {
			select {
			case <-stop:
				return
			default:
			}
			now := [4]crew.Stats{plain.Stats(), sampled.Stats(), fp.Stats(), sub.Stats()}
			adv5Snap(t, "Pool", prev[0], now[0], 1)
			adv5Snap(t, "sampled Pool", prev[1], now[1], k)
			adv5Snap(t, "FuncPool", prev[2], now[2], 1)
			adv5Snap(t, "sub-pool", prev[3], now[3], 1)
			prev = now
			runtime.Gosched()
		}
	}()
	task := func() {}
	// Rounds of tasks until GOMAXPROCS has changed often enough (within a bound of time).
	rounds := 0
	for begin := time.Now(); rounds < 2 || changes.Load() < minChanges && time.Since(begin) < 1500*time.Millisecond; rounds++ {
		together(4, chunk, func(c, i int) {
			f := task
			if i%97 == 0 {
				f = runtime.Goexit
			}
			switch c {
			case 0:
				must(t, plain.Submit(f))
			case 1:
				must(t, sampled.Submit(f))
			case 2:
				must(t, fp.Invoke(f))
			case 3:
				must(t, sub.Submit(f))
			}
		})
	}
	plain.Wait()
	sampled.Wait()
	fp.Wait()
	sub.Wait()
	close(stop)
	bg.Wait()
	n := uint64(rounds * chunk)
	for name, s := range map[string]crew.Stats{"Pool": plain.Stats(), "FuncPool": fp.Stats(), "sub-pool": sub.Stats()} {
		want := n
		if s.WaitTime.Count != want || s.RunTime.Count != want || s.Completed != n {
			t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d, Completed %d: want %d each", name,
				s.WaitTime.Count, s.RunTime.Count, s.Completed, want)
		}
	}
	s := sampled.Stats()
	if s.Completed != n || s.WaitTime.Count != s.RunTime.Count || s.RunTime.Count%k != 0 {
		t.Errorf("sampled: Completed %d, WaitTime.Count %d, RunTime.Count %d: want %d, and equal multiples of %d",
			s.Completed, s.WaitTime.Count, s.RunTime.Count, n, k)
	}
}

// TestAdv5ObsGoexitInTaskAndInFinishedHookLeavesThePoolServing proves the doc of Hooks: "a
// Finished hook comes after its task has ended, and the task's outcome stands, reported
// once ... The pool replaces a worker so ended." A task that calls runtime.Goexit, whose
// Finished hook calls runtime.Goexit too, counts as completed, once in RunTime, and Wait
// returns; on a Pool, a FuncPool and a sub-pool.
func TestAdv5ObsGoexitInTaskAndInFinishedHookLeavesThePoolServing(t *testing.T) {
	var armed atomic.Bool
	hk := crew.WithHooks(crew.Hooks{Finished: func(crew.TaskInfo) {
		if armed.CompareAndSwap(true, false) {
			runtime.Goexit()
		}
	}})
	h := crew.WithLatencyHistograms()
	root := crew.New(2)
	for _, c := range []struct {
		name string
		p    testPool
	}{
		{"Pool", plainPool{crew.New(1, hk, h)}},
		{"FuncPool", invokePool{crew.NewFunc(1, func(f func()) { f() }, hk, h)}},
		{"sub-pool", plainPool{root.Sub(1, hk, h)}},
	} {
		armed.Store(true)
		must(t, c.p.submit(runtime.Goexit))
		must(t, c.p.submit(func() {}))
		awaitReturn(t, c.name+" Wait", goRun(c.p.Wait))
		s := c.p.Stats()
		if s.Completed != 2 || s.Running != 0 || s.RunTime.Count != 2 || s.WaitTime.Count != 2 {
			t.Errorf("%s: %+v, RunTime.Count %d: want 2 completed, none running, 2 timed", c.name, s, s.RunTime.Count)
		}
		awaitReturn(t, c.name+" StopAndWait", goRun(c.p.StopAndWait))
	}
	awaitReturn(t, "root StopAndWait", goRun(root.StopAndWait))
}

// TestAdv5ObsHooksTurnSamplingOffOnEveryDoor proves the doc of WithLatencySample: with
// WithHooks (even hooks that only set Context, or none of the fields) the option has no
// effect and every task is timed and counted once: through Submit, TrySubmit, a caller-run
// submit, Go, a Group, Map, a Keyed, and on a FuncPool and a sub-pool with its own hooks.
func TestAdv5ObsHooksTurnSamplingOffOnEveryDoor(t *testing.T) {
	t.Parallel()
	for _, hooks := range []crew.Hooks{
		{},
		{Context: func(ctx context.Context) (context.Context, func(error)) { return ctx, nil }},
		{Discarded: func(crew.TaskInfo) {}},
	} {
		opts := []crew.Option{crew.WithLatencyHistograms(), crew.WithLatencySample(64), crew.WithHooks(hooks)}
		p := crew.New(2, append(opts, crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns))...)
		sub := p.Sub(2, opts...)
		fp := crew.NewFunc(2, func(int) {}, opts...)
		kd := crew.NewKeyed[int](p)
		const each = 40
		var own atomic.Uint64 // tasks of p itself, keyed ones included
		for i := range each {
			if p.Submit(func() {}) == nil {
				own.Add(1)
			}
			if p.TrySubmit(func() {}) {
				own.Add(1)
			}
			if _, err := crew.Go(p, func() (int, error) { return i, nil }).Wait(); err != nil {
				t.Fatal(err)
			}
			own.Add(1)
			g, _ := p.Group(context.Background())
			g.Go(func(context.Context) error { return nil })
			g.Go(func(context.Context) error { return nil })
			must(t, g.Wait())
			own.Add(2)
			if _, err := crew.Map(context.Background(), p, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) { return v, nil }); err != nil {
				t.Fatal(err)
			}
			own.Add(3)
			must(t, kd.Submit(i%3, func() {}))
			own.Add(1)
			must(t, sub.Submit(func() {}))
			must(t, fp.Invoke(i))
		}
		kd.Wait()
		sub.Wait()
		p.Wait()
		fp.Wait()
		n := own.Load()
		if s := p.Stats(); s.WaitTime.Count != n || s.RunTime.Count != n {
			t.Errorf("hooks %+v: Pool: WaitTime.Count %d, RunTime.Count %d, want %d: every task once (CallerRan %d)",
				hooks, s.WaitTime.Count, s.RunTime.Count, n, s.CallerRan)
		}
		for name, s := range map[string]crew.Stats{"sub-pool": sub.Stats(), "FuncPool": fp.Stats()} {
			if s.WaitTime.Count != each || s.RunTime.Count != each || s.Completed != each {
				t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d, Completed %d: want %d each", name,
					s.WaitTime.Count, s.RunTime.Count, s.Completed, each)
			}
		}
		p.StopAndWait()
		fp.StopAndWait()
	}
}

// TestAdv5ObsSubPoolsTakeNoSamplingNorHistogramsFromTheirParent proves the doc of Pool.Sub:
// a sub-pool has none of its parent's histograms nor their sampling. A sub-pool of a sampled
// parent with histograms of its own times every task; one with WithLatencySample but no
// WithLatencyHistograms has none; a sub-pool of that with both samples itself.
func TestAdv5ObsSubPoolsTakeNoSamplingNorHistogramsFromTheirParent(t *testing.T) {
	t.Parallel()
	const n, k = 2000, 4
	root := crew.New(3, crew.WithLatencyHistograms(), crew.WithLatencySample(k))
	defer root.StopAndWait()
	full := root.Sub(2, crew.WithLatencyHistograms())
	none := root.Sub(2, crew.WithLatencySample(k))
	sampledBelow := none.Sub(2, crew.WithLatencyHistograms(), crew.WithLatencySample(2*k))
	for range n {
		must(t, full.Submit(func() {}))
		must(t, none.Submit(func() {}))
		must(t, sampledBelow.Submit(func() {}))
	}
	root.Wait()
	for _, p := range []*crew.Pool{full, none, sampledBelow} {
		p.Wait()
	}
	if s := full.Stats(); s.WaitTime.Count != n || s.RunTime.Count != n {
		t.Errorf("sub-pool with histograms: counts %d and %d, want %d", s.WaitTime.Count, s.RunTime.Count, n)
	}
	if s := none.Stats(); s.WaitTime != nil || s.RunTime != nil {
		t.Errorf("sub-pool without WithLatencyHistograms: histograms %+v %+v, want nil", s.WaitTime, s.RunTime)
	}
	checkSampled(t, "sampled sub-pool of a sub-pool", sampledBelow.Stats(), n, 2*k)
	if s := root.Stats(); s.WaitTime.Count != 0 || s.RunTime.Count != 0 {
		t.Errorf("root: counts %d and %d, want none: its sub-pools' tasks are theirs", s.WaitTime.Count, s.RunTime.Count)
	}
}

// TestAdv5ObsSampledCountsStayMultiplesThroughEveryDoorAndPolicy proves the doc of
// WithLatencySample under storms: on a sampled pool that runs tasks on the caller when full,
// a sampled sub-pool that drops its oldest, a sampled FuncPool that drops its oldest, with
// TrySubmit, Pause/Resume, Resize and a final StopNow, every snapshot holds multiples of n in
// every bucket, never goes back, and WaitTime counts at least RunTime; once idle the two
// counts are equal and the counters exact.
func TestAdv5ObsSampledCountsStayMultiplesThroughEveryDoorAndPolicy(t *testing.T) {
	t.Parallel()
	const k = 5
	each := 400
	if testing.Short() {
		each = 120
	}
	h := []crew.Option{crew.WithLatencyHistograms(), crew.WithLatencySample(k)}
	var dropped atomic.Int64
	root := crew.New(3, append(h, crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns))...)
	lo := root.Sub(2, append(h, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { dropped.Add(1) }))...)
	hi := root.Sub(1, append(h, crew.WithPriority(2))...)
	fp := crew.NewFunc(2, func(int) { time.Sleep(time.Microsecond) }, append(h, crew.WithQueueSize(2),
		crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(func(any) { dropped.Add(1) }))...)
	pools := []interface{ Stats() crew.Stats }{root, lo, hi, fp}
	names := []string{"root", "lo", "hi", "FuncPool"}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		prev := make([]crew.Stats, len(pools))
		for i, p := range pools {
			prev[i] = p.Stats()
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i, p := range pools {
				s := p.Stats()
				adv5Snap(t, names[i], prev[i], s, k)
				prev[i] = s
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	task := func() { time.Sleep(time.Microsecond) }
	together(4, each, func(c, i int) {
		switch (c + i) % 6 {
		case 0:
			_ = root.Submit(task)
		case 1:
			root.TrySubmit(task)
		case 2:
			_ = lo.Submit(task)
		case 3:
			_ = hi.Submit(func() { runtime.Goexit() })
		case 4:
			_ = fp.Invoke(i)
		case 5:
			fp.TryInvoke(i)
		}
		switch i % 53 {
		case 7:
			root.Pause()
			root.Resume()
		case 19:
			root.Resize(1 + i%4)
		case 31:
			fp.Pause()
			fp.Resume()
		}
	})
	root.Pause()
	fp.Pause()
	for range 10 {
		_ = hi.Submit(task)
		_ = fp.Invoke(1)
	}
	back := root.StopNow()
	fpBack := fp.StopNow()
	root.Resume()
	fp.Resume()
	root.StopAndWait()
	fp.StopAndWait()
	close(stop)
	bg.Wait()
	for i, p := range pools {
		s := p.Stats()
		idleIdentity(t, names[i], s)
		if s.WaitTime.Count != s.RunTime.Count || s.RunTime.Count%k != 0 {
			t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d: want equal multiples of %d", names[i], s.WaitTime.Count, s.RunTime.Count, k)
		}
	}
	if s := fp.Stats(); s.Returned != uint64(len(fpBack)) {
		t.Errorf("FuncPool: Returned %d, StopNow gave back %d", s.Returned, len(fpBack))
	}
	if len(back) == 0 {
		t.Error("StopNow of a paused tree with tasks queued gave none back")
	}
}

// TestAdv5ObsTasksThatNeverRanAreNotTimed proves the docs of Stats.WaitTime ("every task
// that started") and RunTime ("every task that finished"): tasks dropped by DiscardOldest,
// taken back by StopNow, or skipped (a canceled future, a group's function whose context
// ended) count in neither; once idle both count exactly Completed+Panicked, on a pool and a
// sub-pool of a sub-pool.
func TestAdv5ObsTasksThatNeverRanAreNotTimed(t *testing.T) {
	t.Parallel()
	h := crew.WithLatencyHistograms()
	quiet := crew.WithPanicHandler(func(any, []byte) {})
	root := crew.New(2, h, quiet, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest))
	leaf := root.Sub(2).Sub(2, h, quiet, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest))
	// The leaf first: the root's StopNow stops its sub-pools.
	for _, p := range []*crew.Pool{leaf, root} {
		p.Pause()
		for i := range 8 {
			switch i % 4 {
			case 0:
				_ = p.Submit(func() {})
			case 1:
				_ = p.Submit(func() { panic(nil) })
			case 2:
				f := crew.Go(p, func() (int, error) { return 0, nil })
				f.Cancel()
			case 3:
				ctx, cancel := context.WithCancel(context.Background())
				g, _ := p.Group(ctx)
				g.Go(func(context.Context) error { return nil })
				cancel()
			}
		}
		p.Resume()
		awaitReturn(t, "Wait", goRun(p.Wait))
		p.Pause()
		for range 3 {
			_ = p.Submit(func() {})
		}
		_ = p.StopNow()
		p.Resume()
	}
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	for name, p := range map[string]*crew.Pool{"root": root, "leaf": leaf} {
		s := p.Stats()
		idleIdentity(t, name, s)
		ran := s.Completed + s.Panicked // for root, with the leaf's workers, which it does not time
		if s.Discarded == 0 || s.Returned == 0 {
			t.Errorf("%s: %+v: want some dropped and some taken back", name, s)
		}
		if name == "leaf" && (s.WaitTime.Count != ran || s.RunTime.Count != ran) {
			t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d, want %d: only tasks that ran", name, s.WaitTime.Count, s.RunTime.Count, ran)
		}
		if name == "root" && (s.WaitTime.Count != s.RunTime.Count || s.RunTime.Count > ran) {
			t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d, want equal and at most %d", name, s.WaitTime.Count, s.RunTime.Count, ran)
		}
	}
}

// TestAdv5ObsCallerRunGoexitWithGoexitingFinishedHookIsCounted proves the docs of Stats ("A
// caller-run task counts in Accepted, Completed/Panicked and CallerRan") and Hooks (a
// Finished hook's Goexit leaves the task's outcome standing, reported once): a task that
// CallerRuns runs on its submitter and that calls runtime.Goexit, whose Finished hook calls
// runtime.Goexit too, counts once in Accepted, Completed and CallerRan, as it does once in
// WaitTime and RunTime.
func TestAdv5ObsCallerRunGoexitWithGoexitingFinishedHookIsCounted(t *testing.T) {
	var armed atomic.Bool
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithHooks(crew.Hooks{Finished: func(crew.TaskInfo) {
			if armed.Load() {
				runtime.Goexit()
			}
		}}))
	defer p.StopAndWait()
	task, started, release := blocker()
	must(t, p.Submit(task))
	<-started
	must(t, p.Submit(func() {}))
	armed.Store(true)
	awaitReturn(t, "caller-run submit", goRun(func() { _ = p.Submit(runtime.Goexit) }))
	armed.Store(false)
	close(release)
	awaitReturn(t, "Wait", goRun(p.Wait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Accepted != 3 || s.Completed != 3 || s.CallerRan != 1 || s.RunTime.Count != 3 || s.WaitTime.Count != 3 {
		t.Fatalf("%+v, WaitTime.Count %d, RunTime.Count %d: want 3 accepted, completed and timed, 1 run on its submitter",
			s, s.WaitTime.Count, s.RunTime.Count)
	}
}

// TestAdv5ObsPanicNilUnderOldGODEBUGIsAPanicEverywhere proves the docs of Stats.Panicked,
// RunTime and Hooks (a panic "with any value or with nil") where recover returns nil for
// panic(nil) (GODEBUG=panicnil=1): a task that panics with nil counts as panicked, once in
// RunTime, with Finished told Panicked and the panic handler given nil; a task that calls
// runtime.Goexit still counts as completed, not panicked; a Finished hook that panics with
// nil goes to the panic handler and changes nothing. On a Pool's worker, on a caller-run
// submit, on a sub-pool of a sub-pool, a Keyed and a FuncPool.
func TestAdv5ObsPanicNilUnderOldGODEBUGIsAPanicEverywhere(t *testing.T) {
	t.Setenv("GODEBUG", "panicnil=1")
	var handled, hookPanicked, hookNot atomic.Int64
	var hookArmed atomic.Bool
	opts := []crew.Option{
		crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithHooks(crew.Hooks{Finished: func(ti crew.TaskInfo) {
			if ti.Panicked {
				hookPanicked.Add(1)
			} else {
				hookNot.Add(1)
			}
			if hookArmed.Load() {
				panic(nil)
			}
		}}),
	}
	root := crew.New(1, append(opts, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))...)
	defer root.StopAndWait()
	leaf := root.Sub(1).Sub(1, opts...)
	kroot := crew.New(2, opts...)
	defer kroot.StopAndWait()
	kd := crew.NewKeyed[int](kroot)
	fp := crew.NewFunc(1, func(f func()) { f() }, opts...)
	defer fp.StopAndWait()
	panicNil := func() { panic(nil) }
	for _, armed := range []bool{false, true} {
		hookArmed.Store(armed)
		must(t, leaf.Submit(panicNil))
		must(t, leaf.Submit(runtime.Goexit))
		must(t, kd.Submit(1, panicNil))
		must(t, kd.Submit(1, runtime.Goexit))
		must(t, fp.Invoke(panicNil))
		must(t, fp.Invoke(runtime.Goexit))
		awaitReturn(t, "leaf Wait", goRun(leaf.Wait))
		awaitReturn(t, "Keyed Wait", goRun(kd.Wait))
		awaitReturn(t, "FuncPool Wait", goRun(fp.Wait))
		// The root: one on its worker, and one run on its submitter while the worker is held
		// and the queue full.
		task, started, release := blocker()
		must(t, root.Submit(task))
		<-started
		must(t, root.Submit(panicNil))
		awaitReturn(t, "caller-run submit", goRun(func() { must(t, root.Submit(panicNil)) }))
		close(release)
		awaitReturn(t, "root Wait", goRun(root.Wait))
	}
	// Per round: leaf 2, keyed 2, FuncPool 2, root 3 (the blocker returns): 5 panics with
	// nil, and the hooks see 9 tasks, 5 of them panicked.
	if hookPanicked.Load() != 10 || hookNot.Load() != 8 {
		t.Errorf("Finished saw %d panicked and %d not, want 10 and 8", hookPanicked.Load(), hookNot.Load())
	}
	// Each task's panic, plus each armed hook's.
	if handled.Load() != 10+9 {
		t.Errorf("the panic handlers got %d panics, want %d", handled.Load(), 10+9)
	}
	for name, c := range map[string]struct {
		s                    crew.Stats
		completed, panicked  uint64
		timedDone, callerRan uint64
	}{
		"leaf":     {leaf.Stats(), 2, 2, 4, 0},
		"FuncPool": {fp.Stats(), 2, 2, 4, 0},
		"root":     {root.Stats(), 0, 4, 6, 2}, // Completed: with the middle sub-pool's workers
		"Keyed":    {kd.Stats(), 2, 2, 0, 0},
	} {
		s := c.s
		if name == "root" {
			// The root counts the middle sub-pool's workers as its tasks, untimed.
			if s.Panicked != c.panicked || s.CallerRan != c.callerRan || s.RunTime.Count != c.timedDone || s.WaitTime.Count != c.timedDone {
				t.Errorf("root: %+v, RunTime.Count %d: want %d panicked, %d run on the submitter, %d timed",
					s, s.RunTime.Count, c.panicked, c.callerRan, c.timedDone)
			}
			continue
		}
		idleIdentity(t, name, s)
		if s.Completed != c.completed || s.Panicked != c.panicked {
			t.Errorf("%s: %+v: want %d completed and %d panicked", name, s, c.completed, c.panicked)
		}
		if name != "Keyed" && (s.RunTime.Count != c.timedDone || s.WaitTime.Count != c.timedDone) {
			t.Errorf("%s: WaitTime.Count %d, RunTime.Count %d, want %d", name, s.WaitTime.Count, s.RunTime.Count, c.timedDone)
		}
	}
	if s := kroot.Stats(); s.RunTime.Count != 4 || s.WaitTime.Count != 4 {
		t.Errorf("the Keyed's pool: WaitTime.Count %d, RunTime.Count %d, want 4 keyed tasks", s.WaitTime.Count, s.RunTime.Count)
	}
}

// TestAdv5ObsSampledKeyedThroughDiscardsAndStopNow proves the docs of WithLatencySample
// ("Tasks of a Keyed on the pool are sampled alike") and Keyed.Stats beside DiscardOldest
// and StopNow: every snapshot of the pool holds multiples of n that never go back, and once
// idle the pool's two histograms count alike, at most n times the keyed tasks that ran, and
// the Keyed's counts add up.
func TestAdv5ObsSampledKeyedThroughDiscardsAndStopNow(t *testing.T) {
	t.Parallel()
	const k = 4
	each := 300
	if testing.Short() {
		each = 100
	}
	p := crew.New(2, crew.WithLatencyHistograms(), crew.WithLatencySample(k), crew.WithQueueSize(3),
		crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(func(any) {}))
	kd := crew.NewKeyed[int](p)
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		prev := p.Stats()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := p.Stats()
			adv5Snap(t, "pool", prev, s, k)
			prev = s
			time.Sleep(50 * time.Microsecond)
		}
	}()
	together(3, each, func(c, i int) {
		task := func() {}
		if i%11 == 0 {
			task = runtime.Goexit
		}
		_ = kd.Submit((c*each+i)%9, task)
		if i%5 == 0 {
			_ = p.Submit(func() {})
		}
		if i%41 == 0 {
			p.Pause()
			p.Resume()
		}
	})
	p.Pause()
	for i := range 12 {
		_ = kd.Submit(i, func() {})
	}
	_ = p.StopNow()
	p.Resume()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	close(stop)
	bg.Wait()
	s, ks := p.Stats(), kd.Stats()
	idleIdentity(t, "pool", s)
	idleIdentity(t, "Keyed", ks)
	if s.WaitTime.Count != s.RunTime.Count || s.RunTime.Count%k != 0 {
		t.Fatalf("WaitTime.Count %d, RunTime.Count %d: want equal multiples of %d", s.WaitTime.Count, s.RunTime.Count, k)
	}
	if ks.Returned == 0 {
		t.Fatalf("Keyed %+v: StopNow of a paused pool took no keyed task back", ks)
	}
}

// TestAdv5ObsHelpedGoexitWithGoexitingFinishedHookIsCounted proves the docs of Stats
// (Waiting: a function a waiting function runs itself "counts as Waiting until it has
// ended ... and then in Completed or Panicked"; once idle, Accepted is the sum of the
// outcomes) and Hooks (a Finished hook's Goexit leaves the task's outcome standing): a
// group's function that its group's Wait runs on the waiting function, and that calls
// runtime.Goexit, counts as completed once it has ended, whether its Finished hook returns
// or calls runtime.Goexit too.
func TestAdv5ObsHelpedGoexitWithGoexitingFinishedHookIsCounted(t *testing.T) {
	for _, hookGoexits := range []bool{false, true} {
		var armed atomic.Bool
		p := crew.New(1, crew.WithLatencyHistograms(), crew.WithHooks(crew.Hooks{Finished: func(crew.TaskInfo) {
			if armed.CompareAndSwap(true, false) {
				runtime.Goexit()
			}
		}}))
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error {
				armed.Store(hookGoexits)
				runtime.Goexit()
				return nil
			})
			return 0, g.Wait() // runs the function here
		})
		if _, err := obs2Fut(t, f); err == nil {
			t.Fatalf("hook Goexit %v: the future of a function whose helped function called Goexit returned nil", hookGoexits)
		}
		awaitReturn(t, "Wait", goRun(p.Wait))
		s := p.Stats()
		if s.Accepted != 2 || s.Completed != 2 || s.Waiting != 0 || s.Running != 0 || s.RunTime.Count != 2 {
			t.Errorf("hook Goexit %v: %+v, RunTime.Count %d: want 2 accepted and completed, none waiting, 2 timed",
				hookGoexits, s, s.RunTime.Count)
		}
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	}
}
