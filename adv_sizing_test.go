//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// Adversarial tests of the self-sizing limit (WithAdaptiveLimit, CPUs) where it meets
// Resize, sub-pools, priorities, Pause, StopNow, Keyed, hooks and histograms. The ones in a
// testing/synctest bubble run their resources on the fake clock, so the adaptive limit sees
// exact run times and every run is the same.

// sizFeed submits task to p from a goroutine of its own until stop is closed or p refuses
// with ErrStopped, counting what it accepted. p needs a bounded queue inside a bubble, or the
// loop never blocks and the fake clock never moves.
func sizFeed(t *testing.T, p *crew.Pool, stop <-chan struct{}, accepted *atomic.Int64, task func() func()) <-chan struct{} {
	return goRun(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := p.Submit(task())
			if errors.Is(err, crew.ErrStopped) {
				return
			}
			if err != nil {
				t.Errorf("Submit: %v", err)
				return
			}
			accepted.Add(1)
		}
	})
}

// sizSetCeiling resizes p, adaptive, to n and records it in l as limitLog.setCeiling does,
// but checks the limits chosen against the higher of the two ceilings until Resize has
// returned: a window that ends just before the Resize takes the adaptive limit's lock chooses
// under the old ceiling, and its OnLimit call may come after l learnt of the new one.
func sizSetCeiling(l *limitLog, p *crew.Pool, n int) {
	l.mu.Lock()
	l.ceiling = max(l.ceiling, n)
	l.limits = append(l.limits, max(n, l.limits[len(l.limits)-1]))
	l.mu.Unlock()
	p.Resize(n)
	l.mu.Lock()
	l.ceiling = n
	l.limits = append(l.limits, min(n, l.limits[len(l.limits)-2]))
	l.mu.Unlock()
}

// TestAdvSizingUndoneCutStaysUnderALowerCeiling: WithAdaptiveLimit's doc says Resize on an
// adaptive pool sets the ceiling, "a limit above the new ceiling comes down to it at once",
// and the limit moves between min and the ceiling. On a bubble's clock, a pool (ceiling 64)
// whose tasks take 10 ms settles at 64; then the tasks take 30 ms (the resource got slower;
// nothing queues), so the limit is cut; right after the cut, Resize(16) lowers the ceiling.
// The window after the cut shows the run times did not shorten, so the limit undoes the cut:
// it must not go back above the ceiling of 16. Every limit chosen is checked, and so is
// Stats.MaxWorkers and the tasks running at each start.
func TestAdvSizingUndoneCutStaysUnderALowerCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var latency atomic.Int64
		latency.Store(int64(10 * time.Millisecond))
		p := crew.New(64, crew.WithAdaptiveLimit(2), crew.WithQueueSize(256))
		t0 := time.Now()
		var ceiling atomic.Int64
		ceiling.Store(64)
		var mu sync.Mutex
		var limits []string
		cut := make(chan struct{})
		var cutOnce sync.Once
		var slower atomic.Bool
		crew.OnLimit(p, func(n int) {
			mu.Lock()
			limits = append(limits, fmt.Sprintf("%v:%d", time.Since(t0), n))
			mu.Unlock()
			if int64(n) > ceiling.Load() {
				t.Errorf("at %v the limit chose %d, above the ceiling %d", time.Since(t0), n, ceiling.Load())
			}
			if slower.Load() && n < 64 {
				cutOnce.Do(func() { close(cut) })
			}
		})
		var running, over atomic.Int64
		var resized atomic.Int64 // fake time (ns since t0) when Resize(16) returned; 0: not yet
		stop := make(chan struct{})
		var accepted atomic.Int64
		fed := sizFeed(t, p, stop, &accepted, func() func() {
			return func() {
				r := running.Add(1)
				// Tasks that started before Resize(16) returned are gone 30 ms after it.
				if at := resized.Load(); at != 0 && int64(time.Since(t0)) > at+int64(30*time.Millisecond) && r > 16 {
					over.Add(1)
				}
				time.Sleep(time.Duration(latency.Load()))
				running.Add(-1)
			}
		})
		time.Sleep(300 * time.Millisecond)
		if m := p.Stats().MaxWorkers; m != 64 {
			t.Fatalf("MaxWorkers %d after 300 ms of 10 ms tasks with nothing queueing, want 64", m)
		}
		slower.Store(true)
		latency.Store(int64(30 * time.Millisecond))
		select {
		case <-cut:
		case <-time.After(10 * time.Second):
			t.Fatal("the limit was never cut after the tasks became three times slower")
		}
		ceiling.Store(16)
		p.Resize(16)
		resized.Store(int64(time.Since(t0)))
		if m := p.Stats().MaxWorkers; m > 16 {
			t.Errorf("MaxWorkers %d once Resize(16) returned", m)
		}
		for range 20 {
			time.Sleep(50 * time.Millisecond)
			if m := p.Stats().MaxWorkers; m > 16 {
				t.Errorf("%v in: MaxWorkers %d, above the ceiling of 16", time.Since(t0), m)
			}
		}
		close(stop)
		<-fed
		p.StopAndWait()
		if n := over.Load(); n > 0 {
			t.Errorf("%d tasks started with more than 16 running, after Resize(16)", n)
		}
		mu.Lock()
		t.Logf("limits chosen (time:limit): %v", limits)
		mu.Unlock()
	})
}

// TestAdvSizingAdaptiveSubPoolUnderAnAdaptiveParent: on a bubble's clock, an adaptive root
// (ceiling 32, min 2) with an adaptive sub-pool at priority 1 (ceiling 16, min 3) and a
// fixed sub-pool (8), each in front of a resource of its own and fed without pause. Midway
// the root's ceiling goes down to 12, the root is paused for 200 ms, its ceiling goes back up
// to 32, and StopNow ends it. Every limit chosen stays within its pool's floor and ceiling;
// no task of any pool starts with more of the tree running than every root limit in force
// since its submit, nor a sub-pool's with more of its own running than its limits allow; no
// task starts while the root is paused; every accepted task ran once or came back from
// StopNow; and the bubble is left with no goroutine.
func TestAdvSizingAdaptiveSubPoolUnderAnAdaptiveParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := crew.New(32, crew.WithAdaptiveLimit(2), crew.WithQueueSize(64))
		hi := root.Sub(16, crew.WithAdaptiveLimit(3), crew.WithPriority(1), crew.WithQueueSize(32))
		lo := root.Sub(8, crew.WithQueueSize(32))
		rootLog, hiLog := newLimitLog(t, root, 2), newLimitLog(t, hi, 3)
		var loHW highWater
		resRoot := &resource{slots: 6, latency: 2 * time.Millisecond}
		resHi := &resource{slots: 4, latency: 3 * time.Millisecond}
		resLo := &resource{slots: 16, latency: time.Millisecond}
		var paused atomic.Bool
		var startedPaused, ran atomic.Int64
		stop := make(chan struct{})
		var accRoot, accHi, accLo atomic.Int64
		feeds := []<-chan struct{}{
			sizFeed(t, root, stop, &accRoot, func() func() {
				rm := rootLog.mark()
				return func() {
					rootLog.start(rm)
					defer rootLog.end()
					if paused.Load() {
						startedPaused.Add(1)
					}
					ran.Add(1)
					resRoot.call()
				}
			}),
			sizFeed(t, hi, stop, &accHi, func() func() {
				rm, hm := rootLog.mark(), hiLog.mark()
				return func() {
					rootLog.start(rm)
					defer rootLog.end()
					hiLog.start(hm)
					defer hiLog.end()
					if paused.Load() {
						startedPaused.Add(1)
					}
					ran.Add(1)
					resHi.call()
				}
			}),
			sizFeed(t, lo, stop, &accLo, func() func() {
				rm := rootLog.mark()
				return func() {
					rootLog.start(rm)
					defer rootLog.end()
					loHW.enter()
					defer loHW.exit()
					if paused.Load() {
						startedPaused.Add(1)
					}
					ran.Add(1)
					resLo.call()
				}
			}),
		}
		time.Sleep(500 * time.Millisecond)
		sizSetCeiling(rootLog, root, 12)
		if m := root.Stats().MaxWorkers; m > 12 {
			t.Errorf("root MaxWorkers %d once Resize(12) returned", m)
		}
		time.Sleep(300 * time.Millisecond)
		root.Pause()
		paused.Store(true)
		time.Sleep(200 * time.Millisecond)
		if s := root.Stats(); !s.Paused || s.MaxWorkers > 12 || s.MaxWorkers < 2 {
			t.Errorf("root while paused: %+v", s)
		}
		paused.Store(false)
		root.Resume()
		time.Sleep(200 * time.Millisecond)
		sizSetCeiling(rootLog, root, 32)
		time.Sleep(500 * time.Millisecond)
		for name, p := range map[string]*crew.Pool{"root": root, "hi": hi} {
			s := p.Stats()
			lo, hi := 2, 32
			if name == "hi" {
				lo, hi = 3, 16
			}
			if s.MaxWorkers < lo || s.MaxWorkers > hi {
				t.Errorf("%s: MaxWorkers %d outside [%d, %d]", name, s.MaxWorkers, lo, hi)
			}
		}
		returned := len(root.StopNow())
		close(stop)
		for _, f := range feeds {
			<-f
		}
		root.StopAndWait()
		accepted := accRoot.Load() + accHi.Load() + accLo.Load()
		if ran.Load()+int64(returned) != accepted {
			t.Errorf("%d ran and %d came back from StopNow, of %d accepted", ran.Load(), returned, accepted)
		}
		if n := startedPaused.Load(); n > 0 {
			t.Errorf("%d tasks started while the root was paused", n)
		}
		if h := loHW.high.Load(); h > 8 {
			t.Errorf("%d tasks of the fixed sub-pool of 8 ran at once", h)
		}
		rootLog.check(t)
		if n := hiLog.over.Load(); n > 0 {
			t.Errorf("%d tasks of the adaptive sub-pool started above every limit of it since their submit", n)
		}
		for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "lo": lo} {
			if s := p.Stats(); s.Running != 0 || s.Waiting != 0 || s.Accepted != s.Completed+s.Panicked+s.Returned+s.Skipped+s.Discarded {
				t.Errorf("%s after StopAndWait: %+v", name, s)
			}
		}
		t.Logf("%d tasks ran, %d returned; root limits %v; hi limits %v", ran.Load(), returned, rootLog.limits, hiLog.limits)
	})
}

// TestAdvSizingFloorAcrossAResizeBelowIt: on a bubble's clock, WithAdaptiveLimit(4) on a
// ceiling of 32 in front of a resource of 2 slots. Resize(2), below the floor: the floor
// counts as the ceiling, so MaxWorkers is 2 at once and no more than 2 tasks run once those
// running have returned. Resize(32): the floor is 4 again, so MaxWorkers is at least 4 at once
// (the limit moves between min and the ceiling) and at most 32, and stays so while the load
// goes on. At every quiet point, Stats.MaxWorkers is the last limit the pool chose.
func TestAdvSizingFloorAcrossAResizeBelowIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(32, crew.WithAdaptiveLimit(4), crew.WithQueueSize(64))
		var mu sync.Mutex
		last := 32
		var ceiling, floor atomic.Int64
		ceiling.Store(32)
		floor.Store(4)
		crew.OnLimit(p, func(n int) {
			mu.Lock()
			last = n
			mu.Unlock()
			if int64(n) < min(floor.Load(), ceiling.Load()) || int64(n) > ceiling.Load() {
				t.Errorf("%v: limit %d chosen outside [min(%d, %d), %[4]d]", time.Now(), n, floor.Load(), ceiling.Load())
			}
		})
		res := newSlots(2)
		var hw highWater
		stop := make(chan struct{})
		var accepted atomic.Int64
		var ran atomic.Int64
		fed := sizFeed(t, p, stop, &accepted, func() func() {
			return func() {
				hw.enter()
				defer hw.exit()
				ran.Add(1)
				res.call(time.Millisecond)
			}
		})
		time.Sleep(time.Second)
		if m := p.Stats().MaxWorkers; m < 4 || m > 32 {
			t.Errorf("MaxWorkers %d after 1 s, want within [4, 32]", m)
		}
		ceiling.Store(32) // until Resize returns, the old ceiling or the new
		floor.Store(2)
		p.Resize(2)
		ceiling.Store(2)
		if m := p.Stats().MaxWorkers; m != 2 {
			t.Errorf("MaxWorkers %d once Resize(2) returned, below the floor of 4; want 2", m)
		}
		time.Sleep(10 * time.Millisecond) // those running under the old limit return
		hw.high.Store(hw.running.Load())
		time.Sleep(300 * time.Millisecond)
		if h := hw.high.Load(); h > 2 {
			t.Errorf("%d tasks ran at once under a ceiling of 2", h)
		}
		ceiling.Store(32) // the limit chosen while Resize runs is within [2, 32]
		p.Resize(32)
		floor.Store(4)
		if m := p.Stats().MaxWorkers; m < 4 || m > 32 {
			t.Errorf("MaxWorkers %d once Resize(32) returned, want within [4, 32]: the floor is 4 again", m)
		}
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			if m := p.Stats().MaxWorkers; m < 4 || m > 32 {
				t.Errorf("MaxWorkers %d, want within [4, 32]", m)
			}
		}
		close(stop)
		<-fed
		p.Wait()
		end := time.Now()
		mu.Lock()
		want := last
		mu.Unlock()
		s := p.Stats()
		if s.MaxWorkers != want {
			t.Errorf("Stats.MaxWorkers %d on an idle pool, want %d, the last limit chosen", s.MaxWorkers, want)
		}
		// Shrinking makes idle workers above the limit exit (Resize), also when the adaptive
		// limit shrinks; those left go exactly an idle timeout (the default) after they went
		// idle, the last of them when Wait returned.
		if s.Idle > s.MaxWorkers || s.Idle < 1 {
			t.Errorf("idle pool: %+v, want between 1 and MaxWorkers idle workers", s)
		}
		time.Sleep(time.Until(end.Add(crew.DefaultIdleTimeout - time.Nanosecond)))
		synctest.Wait()
		if s := p.Stats(); s.Idle < 1 {
			t.Errorf("1ns before the idle timeout of the last worker to go idle: %+v", s)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if s := p.Stats(); s.Idle != 0 {
			t.Errorf("an idle timeout after the pool went idle: %+v, want no worker left", s)
		}
		p.StopAndWait()
		if ran.Load() != accepted.Load() {
			t.Errorf("%d of %d accepted tasks ran", ran.Load(), accepted.Load())
		}
	})
}

// TestAdvSizingAdaptiveStormWithHooksKeyedFuturesAndStopNow: in real time (under -race, the
// synchronization too), an adaptive pool (ceiling 48, min 3) with hooks and latency
// histograms, fed plain tasks, keyed tasks and futures by 8 submitters, while one goroutine
// moves the ceiling, pauses and resumes, and a watcher checks each Stats snapshot; StopNow
// ends it midway. Every limit chosen is within the floor and the ceiling in force; no task
// starts above every limit in force since its submit; MaxWorkers never leaves [3, 48]; keyed
// tasks of one key never overlap; and every accepted task ran once or was accounted for:
// plain and keyed ones came back from StopNow, futures failed with ErrStopped. The hooks
// and histograms saw each task that ran, once; Stats adds up.
func TestAdvSizingAdaptiveStormWithHooksKeyedFuturesAndStopNow(t *testing.T) {
	t.Parallel()
	var queued, started, finished, rejected atomic.Int64
	p := crew.New(48, crew.WithAdaptiveLimit(3), crew.WithLatencyHistograms(), crew.WithQueueSize(64),
		crew.WithHooks(crew.Hooks{
			Queued:   func(crew.TaskInfo) { queued.Add(1) },
			Started:  func(crew.TaskInfo) { started.Add(1) },
			Finished: func(crew.TaskInfo) { finished.Add(1) },
			Rejected: func(error) { rejected.Add(1) },
		}))
	log := newLimitLog(t, p, 3)
	k := crew.NewKeyed[int](p)
	res := newSlots(5)
	var ran, plainAcc, keyedAcc atomic.Int64
	var keyBusy [8]atomic.Int32
	var futMu sync.Mutex
	var futures []*crew.Future[int]
	var futRan atomic.Int64
	done := make(chan struct{})
	watched := goRun(func() {
		var prev crew.Stats
		for {
			s := p.Stats()
			if s.MaxWorkers < 3 || s.MaxWorkers > 48 {
				t.Errorf("MaxWorkers %d outside [3, 48]", s.MaxWorkers)
			}
			if s.Completed+s.Panicked > s.Accepted || s.Accepted < prev.Accepted || s.Completed < prev.Completed {
				t.Errorf("snapshot %+v after %+v", s, prev)
			}
			if s.RunTime != nil && s.WaitTime != nil && s.WaitTime.Count < s.RunTime.Count {
				t.Errorf("WaitTime.Count %d below RunTime.Count %d", s.WaitTime.Count, s.RunTime.Count)
			}
			prev = s
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	stormDone := make(chan struct{})
	storm := goRun(func() {
		ceilings := []int{8, 48, 5, 30, 48}
		for i := 0; ; i++ {
			select {
			case <-stormDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
			sizSetCeiling(log, p, ceilings[i%len(ceilings)])
			if i%3 == 1 {
				p.Pause()
				time.Sleep(2 * time.Millisecond)
				p.Resume()
			}
		}
	})
	each := 300
	if testing.Short() {
		each = 150
	}
	var returned []func()
	var stopOnce sync.Once
	together(8, each, func(c, i int) {
		if c == 0 && i == each*2/3 {
			stopOnce.Do(func() { returned = p.StopNow() })
		}
		mark := log.mark()
		switch i % 3 {
		case 0:
			if err := p.Submit(func() {
				log.start(mark)
				defer log.end()
				ran.Add(1)
				res.call(300 * time.Microsecond)
			}); err == nil {
				plainAcc.Add(1)
			} else if !errors.Is(err, crew.ErrStopped) {
				t.Error(err)
			}
		case 1:
			key := (c + i) % len(keyBusy)
			if err := k.Submit(key, func() {
				log.start(mark)
				defer log.end()
				if keyBusy[key].Add(1) != 1 {
					t.Errorf("two tasks of key %d at once", key)
				}
				ran.Add(1)
				res.call(300 * time.Microsecond)
				keyBusy[key].Add(-1)
			}); err == nil {
				keyedAcc.Add(1)
			} else if !errors.Is(err, crew.ErrStopped) {
				t.Error(err)
			}
		default:
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				log.start(mark)
				defer log.end()
				futRan.Add(1)
				res.call(300 * time.Microsecond)
				return 1, nil
			})
			futMu.Lock()
			futures = append(futures, f)
			futMu.Unlock()
		}
	})
	close(stormDone)
	<-storm
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	close(done)
	<-watched

	var futAcc int64
	for _, f := range futures {
		_, err := f.Wait()
		switch {
		case err == nil:
			futAcc++
		case errors.Is(err, crew.ErrStopped):
			// refused after the stop, or failed by StopNow
		default:
			t.Errorf("future: %v", err)
		}
	}
	if futAcc != futRan.Load() {
		t.Errorf("%d futures returned a value, %d functions ran", futAcc, futRan.Load())
	}
	if got, want := ran.Load()+int64(len(returned)), plainAcc.Load()+keyedAcc.Load(); got != want {
		t.Errorf("%d plain and keyed tasks ran and %d came back from StopNow, of %d accepted", ran.Load(), len(returned), want)
	}
	log.check(t)
	s := p.Stats()
	all := ran.Load() + futRan.Load()
	if started.Load() != all || finished.Load() != all || int64(s.RunTime.Count) != all || int64(s.WaitTime.Count) != all {
		t.Errorf("Started %d, Finished %d, RunTime.Count %d, WaitTime.Count %d; want %d each",
			started.Load(), finished.Load(), s.RunTime.Count, s.WaitTime.Count, all)
	}
	if s.Running != 0 || s.Waiting != 0 || s.Accepted != s.Completed+s.Panicked+s.Returned+s.Skipped+s.Discarded {
		t.Errorf("stats after StopAndWait do not add up: %+v", s)
	}
	ks := k.Stats()
	if ks.Accepted != uint64(keyedAcc.Load()) || ks.Accepted != ks.Completed+ks.Returned {
		t.Errorf("Keyed.Stats %+v, %d keyed tasks accepted", ks, keyedAcc.Load())
	}
	// Every offer went through Queued, accepted or not.
	offers := int64(8 * each)
	if queued.Load() != offers {
		t.Errorf("Queued hook saw %d offers, want %d", queued.Load(), offers)
	}
}

// TestAdvSizingCPUsCeilingOfAnAdaptivePoolAndItsSubPools: New(CPUs, WithAdaptiveLimit(1))
// with an adaptive sub-pool Sub(CPUs, WithAdaptiveLimit(2)) and a plain Sub(CPUs), on a clock
// the test moves. GOMAXPROCS from 4 to 2: every ceiling follows, and each limit above it
// comes down to it. Back up to 6: the adaptive limits stay where they were (a lower limit
// stays and may grow), the plain sub-pool follows to 6, and SubmitN checks a weight against
// the root's ceiling of 6. Then Resize(3) on the root stops its following, while the plain
// sub-pool still follows GOMAXPROCS down to 1. Blocking tasks check that the limits in force
// hold. It sets GOMAXPROCS, so it does not run in parallel.
func TestAdvSizingCPUsCeilingOfAnAdaptivePoolAndItsSubPools(t *testing.T) {
	setProcs(t, 4)
	clock := newFakeClock()
	root := crew.New(crew.CPUs, crew.WithAdaptiveLimit(1), crew.WithClock(clock.Now))
	adaptive := root.Sub(crew.CPUs, crew.WithAdaptiveLimit(2))
	plain := root.Sub(crew.CPUs)
	pools := []struct {
		name string
		p    *crew.Pool
	}{{"root", root}, {"adaptive sub-pool", adaptive}, {"plain sub-pool", plain}}
	expect := func(when string, want ...int) {
		t.Helper()
		for i, q := range pools {
			if got := q.p.Stats().MaxWorkers; got != want[i] {
				t.Errorf("%s: %s MaxWorkers %d, want %d", when, q.name, got, want[i])
			}
		}
	}
	expect("at first", 4, 4, 4)
	runtime.GOMAXPROCS(2)
	clock.advance(time.Second)
	expect("a second after GOMAXPROCS fell to 2", 2, 2, 2)
	runtime.GOMAXPROCS(6)
	clock.advance(time.Second)
	expect("a second after GOMAXPROCS rose to 6", 2, 2, 6)
	if err := root.SubmitN(6, func() {}); err != nil {
		t.Errorf("SubmitN(6) within the root's ceiling of 6: %v", err)
	}
	if err := root.SubmitN(7, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
		t.Errorf("SubmitN(7) above the root's ceiling of 6: %v, want ErrTooHeavy", err)
	}
	root.Wait()

	// The limits in force hold: the root runs at most 2 at once, its sub-pools' tasks included.
	var hw highWater
	release := make(chan struct{})
	var ran atomic.Int64
	for i := range 9 {
		task := func() { hw.enter(); <-release; hw.exit(); ran.Add(1) }
		must(t, pools[i%3].p.Submit(task))
	}
	waitFor(t, "2 running", func() bool { return hw.running.Load() == 2 })
	stillBlockedFor := func() {
		time.Sleep(20 * time.Millisecond)
		if r := hw.running.Load(); r > 2 {
			t.Errorf("%d tasks running under the root's limit of 2", r)
		}
	}
	stillBlockedFor()
	root.Resize(3) // a ceiling of 3, following GOMAXPROCS no more; the limit stays 2
	runtime.GOMAXPROCS(1)
	clock.advance(time.Second)
	expect("after Resize(3) and GOMAXPROCS 1", 2, 1, 1)
	close(release)
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	if ran.Load() != 9 || hw.high.Load() > 2 {
		t.Errorf("%d of 9 tasks ran, at most %d at once; want all, at most 2", ran.Load(), hw.high.Load())
	}
}

// TestAdvSizingKeyedTasksObeyAnAdaptiveLimit: on a bubble's clock, an adaptive pool (ceiling
// 40, min 2) that runs only keyed tasks, 64 keys, in front of a resource of 5 slots. The
// limit comes down; each keyed task starts as a task of the pool would, not at a limit
// lowered since its submit (Keyed), so no keyed task starts with more running than every
// limit in force since its submit. Keys never overlap, every task runs once in its key's
// order, the hooks see each keyed task once, and Keyed.Stats adds up.
func TestAdvSizingKeyedTasksObeyAnAdaptiveLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var started, finished atomic.Int64
		p := crew.New(40, crew.WithAdaptiveLimit(2), crew.WithHooks(crew.Hooks{
			Started:  func(crew.TaskInfo) { started.Add(1) },
			Finished: func(crew.TaskInfo) { finished.Add(1) },
		}))
		log := newLimitLog(t, p, 2)
		k := crew.NewKeyed[int](p, crew.WithQueueSize(128))
		res := &resource{slots: 5, latency: 2 * time.Millisecond}
		const keys = 64
		var next [keys]atomic.Int64 // the sequence number each key runs next
		var busy [keys]atomic.Int32
		var accepted atomic.Int64
		stop := make(chan struct{})
		fed := goRun(func() {
			var seq [keys]int64
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key, n := i%keys, seq[i%keys]
				seq[key]++
				mark := log.mark()
				must(t, k.Submit(key, func() {
					log.start(mark)
					defer log.end()
					if busy[key].Add(1) != 1 {
						t.Errorf("two tasks of key %d at once", key)
					}
					if got := next[key].Add(1) - 1; got != n {
						t.Errorf("key %d ran task %d when task %d was due", key, n, got)
					}
					res.call()
					busy[key].Add(-1)
				}))
				accepted.Add(1)
			}
		})
		time.Sleep(2 * time.Second)
		close(stop)
		<-fed
		k.Wait()
		p.StopAndWait()
		log.check(t)
		ks := k.Stats()
		if ks.Accepted != uint64(accepted.Load()) || ks.Completed != ks.Accepted || ks.Running != 0 || ks.Waiting != 0 {
			t.Errorf("Keyed.Stats %+v, %d accepted", ks, accepted.Load())
		}
		if started.Load() != accepted.Load() || finished.Load() != accepted.Load() {
			t.Errorf("Started %d, Finished %d, want %d each", started.Load(), finished.Load(), accepted.Load())
		}
		if m := p.Stats().MaxWorkers; m > 20 {
			t.Logf("limits %v", log.limits)
			t.Errorf("MaxWorkers %d after 2 s in front of a resource of 5 slots, want it well below the ceiling of 40", m)
		}
	})
}
