package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// setProcs sets GOMAXPROCS to n for the rest of the test, and restores it after.
func setProcs(t *testing.T, n int) {
	t.Helper()
	old := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// TestCPUsFollowsGOMAXPROCS proves CPUs' promise through Stats on a clock the test moves: New,
// NewFunc, Sub and Resize with CPUs start at GOMAXPROCS; a change of GOMAXPROCS shows in
// Stats.MaxWorkers once a second has passed since the last reading, not before; Resize to a
// number stops the following. It sets GOMAXPROCS, so it does not run in parallel.
func TestCPUsFollowsGOMAXPROCS(t *testing.T) {
	setProcs(t, 3)
	clock := newFakeClock()
	opt := crew.WithClock(clock.Now)
	p := crew.New(crew.CPUs, opt)
	defer p.StopAndWait()
	f := crew.NewFunc(crew.CPUs, func(int) {}, opt)
	defer f.StopAndWait()
	sub := p.Sub(crew.CPUs)
	fixed := crew.New(7, opt)
	defer fixed.StopAndWait()
	fixed.Resize(crew.CPUs)
	pools := map[string]interface{ Stats() crew.Stats }{"New": p, "NewFunc": f, "Sub": sub, "Resize": fixed}
	expect := func(when string, want int) {
		t.Helper()
		for name, q := range pools {
			if got := q.Stats().MaxWorkers; got != want {
				t.Errorf("%s, %s(CPUs): MaxWorkers %d, want %d", when, name, got, want)
			}
		}
	}
	expect("at first", 3)

	runtime.GOMAXPROCS(5)
	clock.advance(999 * time.Millisecond)
	expect("999ms after the change", 3)
	clock.advance(time.Millisecond)
	expect("a second after the last reading", 5)
	runtime.GOMAXPROCS(2)
	clock.advance(500 * time.Millisecond)
	expect("half a second after the last reading", 5)
	clock.advance(500 * time.Millisecond)
	expect("a second after the last reading", 2)

	fixed.Resize(4)
	pools = map[string]interface{ Stats() crew.Stats }{"Resize to 4 after": fixed}
	runtime.GOMAXPROCS(6)
	clock.advance(time.Hour)
	expect("an hour after GOMAXPROCS changed", 4)
}

// TestCPUsLimitHoldsAtEveryStart runs blocking tasks on New(CPUs) while GOMAXPROCS moves
// from 2 to 4 and the tasks are released: as many run as the limit GOMAXPROCS set, never
// more, and every task runs once.
func TestCPUsLimitHoldsAtEveryStart(t *testing.T) {
	setProcs(t, 2)
	clock := newFakeClock()
	p := crew.New(crew.CPUs, crew.WithClock(clock.Now))
	var hw highWater
	release := make(chan struct{})
	var ran atomic.Int64
	for range 20 {
		must(t, p.Submit(func() {
			hw.enter()
			<-release
			hw.exit()
			ran.Add(1)
		}))
	}
	waitFor(t, "2 running", func() bool { return hw.running.Load() == 2 })
	runtime.GOMAXPROCS(4)
	clock.advance(time.Second)
	if got := p.Stats().MaxWorkers; got != 4 {
		t.Fatalf("MaxWorkers %d a second after GOMAXPROCS became 4", got)
	}
	waitFor(t, "4 running", func() bool { return hw.running.Load() == 4 })
	close(release)
	p.StopAndWait()
	if ran.Load() != 20 || hw.high.Load() != 4 {
		t.Fatalf("%d tasks ran, at most %d at once; want 20 and 4", ran.Load(), hw.high.Load())
	}
}

// limitLog records every limit an adaptive pool chose (crew.OnLimit), so a task can check the
// running count it sees against every limit that was in force, or being set, since it was
// submitted: the task's start was decided under one of them, and every start after it under
// one of them too. It also checks each limit against the pool's floor and ceiling.
type limitLog struct {
	t                *testing.T
	mu               sync.Mutex
	limits           []int // limits[0] is the one the pool started with
	floor, ceiling   int
	running, highest atomic.Int64
	over             atomic.Int64 // starts that saw more running than any limit since their submit
}

func newLimitLog(t *testing.T, p *crew.Pool, floor int) *limitLog {
	l := &limitLog{t: t, floor: floor, ceiling: p.Stats().MaxWorkers}
	l.limits = []int{l.ceiling}
	crew.OnLimit(p, func(n int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if n < min(l.floor, l.ceiling) || n > l.ceiling {
			t.Errorf("limit %d chosen outside [%d, %d]", n, l.floor, l.ceiling)
		}
		l.limits = append(l.limits, n)
	})
	return l
}

// setCeiling resizes p to n, which an adaptive pool takes as its ceiling.
func (l *limitLog) setCeiling(p *crew.Pool, n int) {
	l.mu.Lock()
	l.ceiling = n
	l.limits = append(l.limits, max(n, l.limits[len(l.limits)-1])) // in force until Resize returns
	l.mu.Unlock()
	p.Resize(n)
	l.mu.Lock()
	l.limits = append(l.limits, min(n, l.limits[len(l.limits)-2]))
	l.mu.Unlock()
}

// mark returns the position of the limit in force now, for a task being submitted.
func (l *limitLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.limits) - 1
}

// start counts a task starting that was submitted at mark, and checks it.
func (l *limitLog) start(mark int) {
	r := l.running.Add(1)
	for h := l.highest.Load(); r > h && !l.highest.CompareAndSwap(h, r); h = l.highest.Load() {
	}
	l.mu.Lock()
	bound := 0
	for _, n := range l.limits[mark:] {
		bound = max(bound, n)
	}
	l.mu.Unlock()
	if r > int64(bound) {
		l.over.Add(1)
	}
}

func (l *limitLog) end() { l.running.Add(-1) }

func (l *limitLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.over.Load(); n > 0 {
		t.Errorf("%d tasks started with more running than every limit in force since their submit", n)
	}
	if len(l.limits) < 2 {
		t.Errorf("the limit never changed (%v)", l.limits)
	}
}

// slots is a resource of n slots that each call holds for latency; calls beyond n wait for
// a slot, first come first served, so run times grow with the calls beyond n.
type slots struct{ ch chan struct{} }

func newSlots(n int) *slots { return &slots{ch: make(chan struct{}, n)} }

func (s *slots) call(latency time.Duration) {
	s.ch <- struct{}{}
	time.Sleep(latency)
	<-s.ch
}

// TestAdaptiveLimitHoldsAtEveryStart drives an adaptive pool (ceiling 64, min 3) of tasks
// that call a resource of 6 slots, from 16 submitters, while a Resize moves the ceiling to 24
// and back to 64, a Pause holds it, and tasks panic, panic(nil) and call runtime.Goexit: every
// limit chosen is within [3, ceiling], every task starts with no more running than a limit
// in force since its submit, MaxWorkers never leaves [3, 64], and every task runs once.
// Under -race it checks the pool's synchronization too.
func TestAdaptiveLimitHoldsAtEveryStart(t *testing.T) {
	t.Parallel()
	res := newSlots(6)
	p := crew.New(64, crew.WithAdaptiveLimit(3), crew.WithPanicHandler(func(any, []byte) {}))
	log := newLimitLog(t, p, 3)
	var ran atomic.Int64
	done := make(chan struct{})
	watched := goRun(func() {
		for {
			if s := p.Stats(); s.MaxWorkers < 3 || s.MaxWorkers > 64 {
				t.Errorf("MaxWorkers %d outside [3, 64]", s.MaxWorkers)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	submitters, each := 16, 400
	if testing.Short() {
		each = 100
	}
	var i atomic.Int64
	together(submitters, each, func(c, k int) {
		n := i.Add(1)
		mark := log.mark()
		must(t, p.Submit(func() {
			log.start(mark)
			defer log.end()
			ran.Add(1)
			res.call(500 * time.Microsecond)
			switch n % 97 {
			case 1:
				panic("boom")
			case 2:
				panic(nil)
			case 3:
				runtime.Goexit()
			}
		}))
		switch n {
		case int64(submitters * each / 4):
			log.setCeiling(p, 24)
		case int64(submitters * each / 2):
			p.Pause()
			time.Sleep(5 * time.Millisecond)
			p.Resume()
		case int64(3 * submitters * each / 4):
			log.setCeiling(p, 64)
		}
	})
	p.StopAndWait()
	close(done)
	<-watched
	if want := int64(submitters * each); ran.Load() != want {
		t.Fatalf("%d tasks ran, want %d", ran.Load(), want)
	}
	log.check(t)
	s := p.Stats()
	if s.Completed+s.Panicked != s.Accepted {
		t.Fatalf("stats do not add up: %+v", s)
	}
	t.Logf("highest running %d, limits %v", log.highest.Load(), log.limits)
}

// TestAdaptiveSubPoolsKeepTheirLimits: an adaptive sub-pool under an adaptive root, both in
// front of resources of their own, with StopNow on the sub-pool midway: each limit chosen is
// within its own floor and ceiling, each start within a limit in force since its submit, and
// each accepted task ran once or was returned by StopNow.
func TestAdaptiveSubPoolsKeepTheirLimits(t *testing.T) {
	t.Parallel()
	root := crew.New(48, crew.WithAdaptiveLimit(2))
	sub := root.Sub(32, crew.WithAdaptiveLimit(4))
	rootLog, subLog := newLimitLog(t, root, 2), newLimitLog(t, sub, 4)
	rootRes, subRes := newSlots(4), newSlots(8)
	var ran, accepted atomic.Int64
	n := 3000
	if testing.Short() {
		n = 1000
	}
	var returned int
	together(2, n, func(c, k int) {
		p, log, res := root, rootLog, rootRes
		if c == 1 {
			p, log, res = sub, subLog, subRes
		}
		mark := log.mark()
		err := p.Submit(func() {
			log.start(mark)
			defer log.end()
			ran.Add(1)
			res.call(200 * time.Microsecond)
		})
		if err == nil {
			accepted.Add(1)
		} else if !errors.Is(err, crew.ErrStopped) {
			t.Error(err)
		}
		if c == 1 && k == n/2 {
			returned = len(sub.StopNow())
		}
	})
	root.StopAndWait()
	if ran.Load()+int64(returned) != accepted.Load() {
		t.Fatalf("%d ran and %d returned of %d accepted", ran.Load(), returned, accepted.Load())
	}
	rootLog.check(t)
	if s := sub.Stats(); s.MaxWorkers < 4 || s.MaxWorkers > 32 {
		t.Fatalf("sub-pool's MaxWorkers %d outside [4, 32]", s.MaxWorkers)
	}
	if subLog.over.Load() > 0 {
		t.Fatalf("%d sub-pool tasks started above every limit since their submit", subLog.over.Load())
	}
}

// TestResizeOnAdaptivePoolSetsTheCeiling: Resize below the limit brings MaxWorkers down at
// once; Resize above it leaves MaxWorkers where it is; a weight above the limit but within
// the ceiling is accepted; a weight above the ceiling is refused.
func TestResizeOnAdaptivePoolSetsTheCeiling(t *testing.T) {
	t.Parallel()
	p := crew.New(40, crew.WithAdaptiveLimit(2))
	defer p.StopAndWait()
	if got := p.Stats().MaxWorkers; got != 40 {
		t.Fatalf("MaxWorkers %d at first, want 40, the ceiling", got)
	}
	p.Resize(10)
	if got := p.Stats().MaxWorkers; got != 10 {
		t.Fatalf("MaxWorkers %d after Resize(10), want 10", got)
	}
	p.Resize(100)
	if got := p.Stats().MaxWorkers; got != 10 {
		t.Fatalf("MaxWorkers %d after Resize(100), want 10 until the limit grows", got)
	}
	if err := p.SubmitN(50, func() {}); err != nil {
		t.Fatalf("SubmitN(50) within the ceiling of 100: %v", err)
	}
	if err := p.SubmitN(101, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
		t.Fatalf("SubmitN(101) above the ceiling of 100: %v, want ErrTooHeavy", err)
	}
	p.Wait()
}

// TestAdaptiveLimitMinAboveCeiling: a min above maxWorkers keeps the limit at maxWorkers.
func TestAdaptiveLimitMinAboveCeiling(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithAdaptiveLimit(10))
	defer p.StopAndWait()
	var hw highWater
	for range 2000 {
		must(t, p.Submit(func() { hw.enter(); time.Sleep(10 * time.Microsecond); hw.exit() }))
	}
	p.Wait()
	if s := p.Stats(); s.MaxWorkers != 4 || hw.high.Load() > 4 {
		t.Fatalf("MaxWorkers %d, %d at once; want 4 and at most 4", s.MaxWorkers, hw.high.Load())
	}
}

// TestAdaptiveLimitWithCPUsCeiling: New(CPUs, WithAdaptiveLimit(1)) has GOMAXPROCS as its
// ceiling, following it. It sets GOMAXPROCS, so it does not run in parallel.
func TestAdaptiveLimitWithCPUsCeiling(t *testing.T) {
	setProcs(t, 4)
	clock := newFakeClock()
	p := crew.New(crew.CPUs, crew.WithAdaptiveLimit(1), crew.WithClock(clock.Now))
	defer p.StopAndWait()
	if got := p.Stats().MaxWorkers; got != 4 {
		t.Fatalf("MaxWorkers %d, want 4", got)
	}
	runtime.GOMAXPROCS(2)
	clock.advance(time.Second)
	if got := p.Stats().MaxWorkers; got != 2 {
		t.Fatalf("MaxWorkers %d after GOMAXPROCS fell to 2, want 2", got)
	}
}

// TestStopLeavesNoSizingTimer: a CPUs pool that was submitted to has its timer armed; after
// StopAndWait, and after Shutdown, no goroutine of it is left (TestMain's goleak checks the
// package; this checks at once).
func TestStopLeavesNoSizingTimer(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, stop := range []func(*crew.Pool){
		(*crew.Pool).StopAndWait,
		func(p *crew.Pool) { _ = p.Shutdown(context.Background()) },
		func(p *crew.Pool) { p.Sub(crew.CPUs); p.Stop(); p.Wait() },
	} {
		p := crew.New(crew.CPUs)
		must(t, p.Submit(func() {}))
		stop(p)
	}
	awaitGoroutines(t, "goroutines after the pools stopped", base)
}

// TestAdaptiveLimitKeepsHooksHistogramsAndKeyed: on an adaptive pool with hooks and latency
// histograms, the hooks and histograms still see every task, keyed tasks run one at a time
// per key and all of them run, and the limit still moves.
func TestAdaptiveLimitKeepsHooksHistogramsAndKeyed(t *testing.T) {
	t.Parallel()
	var started, finished atomic.Int64
	p := crew.New(64, crew.WithAdaptiveLimit(2), crew.WithLatencyHistograms(),
		crew.WithHooks(crew.Hooks{
			Started:  func(crew.TaskInfo) { started.Add(1) },
			Finished: func(crew.TaskInfo) { finished.Add(1) },
		}))
	log := newLimitLog(t, p, 2)
	res := newSlots(4)
	k := crew.NewKeyed[int](p)
	n := 3000
	if testing.Short() {
		n = 1500
	}
	var keyedRan atomic.Int64
	var perKey [4]atomic.Int32
	for i := range n {
		mark := log.mark()
		must(t, p.Submit(func() {
			log.start(mark)
			defer log.end()
			res.call(200 * time.Microsecond)
		}))
		if i%10 == 0 {
			key := i % 4
			must(t, k.Submit(key, func() {
				if perKey[key].Add(1) != 1 {
					t.Errorf("two tasks of key %d at once", key)
				}
				time.Sleep(10 * time.Microsecond)
				perKey[key].Add(-1)
				keyedRan.Add(1)
			}))
		}
	}
	p.StopAndWait()
	s := p.Stats()
	if want := int64(n + n/10); keyedRan.Load()+int64(n) != want {
		t.Fatalf("%d keyed tasks ran, want %d", keyedRan.Load(), n/10)
	}
	// The hooks and histograms see each task, keyed ones included; the pool's Completed counts
	// a key's turn, which runs one or more keyed tasks, once (see Keyed).
	all := uint64(n + n/10)
	if uint64(started.Load()) != all || uint64(finished.Load()) != all || s.RunTime.Count != all {
		t.Fatalf("Started %d, Finished %d, RunTime.Count %d: want %d each",
			started.Load(), finished.Load(), s.RunTime.Count, all)
	}
	if s.Completed <= uint64(n) || s.Completed > all {
		t.Fatalf("Completed %d, want the %d plain tasks and between 1 and %d turns", s.Completed, n, n/10)
	}
	if ks := k.Stats(); ks.Completed != uint64(n/10) {
		t.Fatalf("Keyed.Stats().Completed %d, want %d", ks.Completed, n/10)
	}
	log.check(t)
}
