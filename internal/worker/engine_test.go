package worker

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func noPanic(v any, _ []byte) { panic(v) }

// waitUntil polls cond against a deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestBurstBusiesEveryWorker guards the waking gate: a burst that the gate queues behind a
// waking worker still ends with every one of MaxWorkers workers busy, none of the queued tasks
// stranded while a worker could run it.
func TestBurstBusiesEveryWorker(t *testing.T) {
	const workers, tasks = 16, 200
	hold := make(chan struct{})
	var started atomic.Int32
	e := New(Config[int]{
		Run:          func(int) { started.Add(1); <-hold },
		MaxWorkers:   workers,
		IdleTimeout:  time.Minute,
		PanicHandler: noPanic,
	})
	for i := range tasks {
		if r := e.Submit(i, true, nil); r != Accepted {
			t.Fatalf("Submit = %v, want Accepted", r)
		}
	}
	waitUntil(t, "every worker busy", func() bool { return started.Load() == workers })
	c := e.Counters()
	if c.Workers != workers || c.Idle != 0 || c.Waiting != tasks-workers {
		t.Fatalf("counters %+v, want %d busy workers and %d waiting", c, workers, tasks-workers)
	}
	close(hold)
	e.Stop()
	<-e.Exited()
	if c := e.Counters(); c.Completed != tasks {
		t.Fatalf("Completed = %d, want %d", c.Completed, tasks)
	}
}

// TestIdleWorkersPickUpBursts: parked workers are reused for a later burst and every worker
// ends up busy again, through the gate's one-by-one wake-ups.
func TestIdleWorkersPickUpBursts(t *testing.T) {
	const workers = 8
	e := New(Config[chan struct{}]{
		Run:          func(c chan struct{}) { <-c },
		MaxWorkers:   workers,
		MinWorkers:   workers,
		PanicHandler: noPanic,
	})
	for round := range 20 {
		hold := make(chan struct{})
		for range workers * 3 {
			if r := e.Submit(hold, true, nil); r != Accepted {
				t.Fatalf("round %d: Submit = %v", round, r)
			}
		}
		waitUntil(t, "every worker busy", func() bool {
			c := e.Counters()
			return c.Idle == 0 && c.Waiting == workers*2
		})
		close(hold)
		if ch := e.Drained(); ch != nil {
			<-ch
		}
	}
	e.Stop()
	<-e.Exited()
}

// TestForwardRunsAfterStop: Forward accepts whatever the bound and even after Stop, since a
// sub-pool's accepted tasks must run.
func TestForwardRunsAfterStop(t *testing.T) {
	var ran atomic.Int32
	hold := make(chan struct{})
	e := New(Config[int]{
		Run: func(i int) {
			if i == 0 {
				<-hold
			}
			ran.Add(1)
		},
		MaxWorkers:   1,
		QueueSize:    1,
		PanicHandler: noPanic,
	})
	e.Submit(0, true, nil)
	e.Stop()
	if r := e.Submit(1, false, nil); r != Stopped {
		t.Fatalf("Submit after Stop = %v, want Stopped", r)
	}
	for i := 1; i <= 5; i++ {
		e.Forward(i)
	}
	close(hold)
	<-e.Exited()
	if ran.Load() != 6 {
		t.Fatalf("%d tasks ran, want 6 (one submitted, five forwarded)", ran.Load())
	}
}

// TestBlockedSubmitThatGivesUpIsRejected: a submitter blocked on a full queue whose done
// channel closes returns Canceled, is counted in Rejected, and its task never runs; one that
// gets room first is Accepted.
func TestBlockedSubmitThatGivesUpIsRejected(t *testing.T) {
	hold := make(chan struct{})
	var ran sync.Map
	e := New(Config[int]{
		Run:          func(i int) { <-hold; ran.Store(i, true) },
		MaxWorkers:   1,
		QueueSize:    1,
		PanicHandler: noPanic,
	})
	e.Submit(0, true, nil)
	e.Submit(1, true, nil)
	done := make(chan struct{})
	res := make(chan Result)
	go func() { res <- e.Submit(2, true, done) }()
	waitUntil(t, "the submitter to block", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.blocked.head != nil
	})
	close(done)
	if r := <-res; r != Canceled {
		t.Fatalf("blocked Submit whose done closed = %v, want Canceled", r)
	}
	if c := e.Counters(); c.Rejected != 1 || c.Submitted != 2 {
		t.Fatalf("counters %+v, want 1 rejected and 2 submitted", c)
	}
	close(hold)
	e.Stop()
	<-e.Exited()
	if _, ok := ran.Load(2); ok {
		t.Fatal("the task of a submitter that gave up ran")
	}
}

// TestReapIdleKeepsMinWorkers: reaping dismisses workers idle for IdleTimeout, oldest first,
// never below MinWorkers, and not those idle for less.
func TestReapIdleKeepsMinWorkers(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	hold := make(chan struct{})
	e := New(Config[int]{
		Run:          func(int) { <-hold },
		MaxWorkers:   6,
		MinWorkers:   2,
		IdleTimeout:  time.Hour, // the reaper's timer never fires in this test
		PanicHandler: noPanic,
		Now:          clock,
	})
	for i := range 6 {
		e.Submit(i, true, nil)
	}
	waitUntil(t, "6 busy workers", func() bool { c := e.Counters(); return c.Workers == 6 && c.Idle == 0 })
	close(hold)
	waitUntil(t, "6 idle workers", func() bool { return e.Counters().Idle == 6 })
	if n := e.ReapIdle(now.Add(time.Hour - time.Nanosecond)); n != 0 {
		t.Fatalf("ReapIdle before the timeout dismissed %d", n)
	}
	if n := e.ReapIdle(now.Add(time.Hour)); n != 4 {
		t.Fatalf("ReapIdle dismissed %d, want 4 (6 idle, 2 kept)", n)
	}
	if c := e.Counters(); c.Workers != 2 || c.Idle != 2 {
		t.Fatalf("counters %+v, want the 2 minimum workers idle", c)
	}
	e.Stop()
	<-e.Exited()
}

// TestResizeStormLosesNothing: concurrent submitters and resizers on a bare engine; every
// accepted task runs exactly once and Exited closes after Stop.
func TestResizeStormLosesNothing(t *testing.T) {
	const submitters, each = 16, 2000
	runs := make([]atomic.Int32, submitters*each)
	var live, high atomic.Int32
	e := New(Config[int]{
		Run: func(i int) {
			n := live.Add(1)
			for {
				h := high.Load()
				if n <= h || high.CompareAndSwap(h, n) {
					break
				}
			}
			runs[i].Add(1)
			live.Add(-1)
		},
		MaxWorkers:   4,
		QueueSize:    8,
		PanicHandler: noPanic,
	})
	stop := make(chan struct{})
	var resizer sync.WaitGroup
	resizer.Add(1)
	go func() {
		defer resizer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.Resize(1 + i%6)
		}
	}()
	var wg sync.WaitGroup
	accepted := make([]atomic.Bool, len(runs))
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s * each; i < (s+1)*each; i++ {
				accepted[i].Store(true)
				r := e.Submit(i, i%2 == 0, nil)
				accepted[i].Store(r == Accepted)
			}
		}()
	}
	wg.Wait()
	close(stop)
	resizer.Wait()
	e.Stop()
	<-e.Exited()
	for i := range runs {
		if n := runs[i].Load(); accepted[i].Load() != (n == 1) || n > 1 {
			t.Fatalf("task %d: accepted %v, ran %d times", i, accepted[i].Load(), n)
		}
	}
	if h := high.Load(); h > 6 {
		t.Fatalf("%d tasks ran at once; the largest limit was 6", h)
	}
}

// TestStopWhileReaperRunsClosesExited: Stop racing with the reaper's timer still closes
// Exited. The reaper's select may take the timer even though Stop has closed done; if it
// then finds nothing idle, it must still report the engine's exit.
func TestStopWhileReaperRunsClosesExited(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		e := New(Config[int]{
			Run:          func(int) {},
			MaxWorkers:   2,
			IdleTimeout:  time.Duration(i%50) * time.Microsecond,
			PanicHandler: noPanic,
		})
		e.Submit(i, true, nil)
		for e.Counters().Idle == 0 && e.Counters().Workers > 0 {
			runtime.Gosched()
		}
		e.Stop()
		select {
		case <-e.Exited():
		case <-time.After(10 * time.Second):
			c := e.Counters()
			e.mu.Lock()
			reaping := e.reaping
			e.mu.Unlock()
			t.Fatalf("iteration %d: Exited never closed after Stop; counters %+v, reaping %v", i, c, reaping)
		}
	}
}

// TestSubmitYieldsWhenFarAhead guards the back-pressure in Submit: on one processor, a
// submitter that has queued crowdedFloor tasks (more than crowdedPerWorker for the one live
// worker) yields, so the worker gets to run before the submitter is done. Without the yield,
// nothing would run until the submitter blocked or was preempted (after 10ms), long after
// these submits return. The threshold counts live workers, not the limit, so a pool allowed
// 10,000 workers but running one yields as soon as a pool limited to one.
//
// One yield may hand the processor straight back to the submitter: Gosched puts it on the
// global run queue, which the scheduler serves first on every 61st round. So the submitter
// gets up to nine yields (one per submit past the threshold) to let the worker in.
func TestSubmitYieldsWhenFarAhead(t *testing.T) {
	for _, limit := range []int{1, 10_000} {
		t.Run(fmt.Sprintf("max=%d", limit), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			var ran atomic.Int64
			e := New(Config[int]{
				Run:          func(int) { ran.Add(1) },
				MaxWorkers:   limit,
				IdleTimeout:  time.Minute,
				PanicHandler: noPanic,
			})
			defer func() { e.Stop(); <-e.Exited() }()
			// The first task goes to a new worker, which cannot run before the submitter
			// yields, and the waking gate queues the rest behind it; the submit that makes
			// the queue crowdedFloor long yields, and so does every submit after it.
			const yields = 9
			for i := 0; i < crowdedFloor+yields && ran.Load() == 0; i++ {
				if r := e.Submit(i, true, nil); r != Accepted {
					t.Fatalf("Submit = %v, want Accepted", r)
				}
			}
			if ran.Load() == 0 {
				t.Fatalf("no task ran while up to %d waited for the one worker: the submitter did not yield",
					crowdedFloor+yields-1)
			}
			if n := e.yielding.Load(); n != 0 {
				t.Fatalf("%d submitters counted as yielding after every submit returned", n)
			}
		})
	}
}

// TestCrowdedYieldersAreCapped checks that no more submitters yield at once than crowded
// allows, that the others return without yielding, and that each yielder is uncounted when
// its yield returns: one-shot submitters must not all queue behind one another.
func TestCrowdedYieldersAreCapped(t *testing.T) {
	release := make(chan struct{})
	var inside atomic.Int64
	defer func(f func()) { crowdedYield = f }(crowdedYield)
	crowdedYield = func() {
		inside.Add(1)
		<-release
	}
	unblock := make(chan struct{})
	var ran atomic.Int64
	e := New(Config[int]{
		Run:          func(int) { <-unblock; ran.Add(1) },
		MaxWorkers:   1,
		PanicHandler: noPanic,
	})
	// One task holds the worker and crowdedFloor-1 wait behind it, so every further submit
	// makes the queue crowded.
	for i := range crowdedFloor {
		if r := e.Submit(i, true, nil); r != Accepted {
			t.Fatalf("Submit = %v, want Accepted", r)
		}
	}
	if n := inside.Load(); n != 0 {
		t.Fatalf("%d yields while the queue was below the threshold, want 0", n)
	}
	const submitters = crowdedYielders + 100
	const limit = crowdedYielders
	var returned atomic.Int64
	var wg sync.WaitGroup
	for i := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.Submit(i, true, nil); r != Accepted {
				t.Errorf("Submit = %v, want Accepted", r)
			}
			returned.Add(1)
		}()
	}
	waitUntil(t, "the submitters past the cap to return", func() bool {
		return returned.Load() == submitters-limit
	})
	waitUntil(t, "the capped submitters to yield", func() bool { return inside.Load() == limit })
	time.Sleep(10 * time.Millisecond) // room for a broken cap to let one more in
	if n := inside.Load(); n != limit {
		t.Fatalf("%d submitters yielding at once, want %d", n, limit)
	}
	close(release)
	wg.Wait()
	if n := e.yielding.Load(); n != 0 {
		t.Fatalf("%d submitters counted as yielding after every submit returned", n)
	}
	close(unblock)
	e.Stop()
	<-e.Exited()
	if got, want := ran.Load(), int64(crowdedFloor+submitters); got != want {
		t.Fatalf("%d of %d tasks ran", got, want)
	}
}

// TestCrowdedThreshold checks when a submit yields: at least crowdedFloor queued tasks, at
// least crowdedPerWorker of them per live worker whatever the limit, and fewer submitters
// already yielding than crowdedYielders.
func TestCrowdedThreshold(t *testing.T) {
	tests := []struct {
		workers, queued, yielding int
		want                      bool
	}{
		{workers: 1, queued: crowdedFloor - 1, want: false},
		{workers: 1, queued: crowdedFloor, want: true},
		{workers: 1, queued: crowdedFloor, yielding: crowdedYielders - 1, want: true},
		{workers: 1, queued: crowdedFloor, yielding: crowdedYielders, want: false},
		{workers: 100, queued: crowdedFloor, want: false},
		{workers: 100, queued: 100*crowdedPerWorker - 1, want: false},
		{workers: 100, queued: 100 * crowdedPerWorker, want: true},
		{workers: 100, queued: 100 * crowdedPerWorker, yielding: crowdedYielders, want: false},
	}
	for _, tt := range tests {
		e := &Engine[int]{max: 10_000, workers: tt.workers}
		e.yielding.Store(int32(tt.yielding))
		for i := range tt.queued {
			e.queue.Push(i)
		}
		if got := e.crowded(); got != tt.want {
			t.Errorf("%d workers alive of 10,000, %d queued, %d yielding: crowded() = %v, want %v",
				tt.workers, tt.queued, tt.yielding, got, tt.want)
		}
	}
}

// TestStartedWorkersReuseExitedWorkersSpots: the workers an engine starts take the spots
// (the struct and its wake channel) that the exited workers of an engine of the same task
// type left, cleared: told to exit once, a spot does not make its next worker exit.
func TestStartedWorkersReuseExitedWorkersSpots(t *testing.T) {
	type task struct{ id int } // a type no other test's engines use
	const workers = 8
	var started, ran atomic.Int64
	var release chan struct{}
	cfg := Config[task]{
		// The tasks wait until all have started, so each of the workers runs one.
		Run:          func(task) { started.Add(1); <-release; ran.Add(1) },
		MaxWorkers:   workers,
		MinWorkers:   workers,
		PanicHandler: noPanic,
	}
	seen := map[*worker[task]]bool{}
	attempts := 0
	// A spot reaches the spares only as its goroutine returns, after Exited has closed, and
	// the garbage collector may drop spares: so try engines until one starts on old spots only.
	waitUntil(t, "an engine whose workers all took exited workers' spots", func() bool {
		attempts++
		release = make(chan struct{})
		started.Store(0)
		e := New(cfg)
		e.mu.Lock()
		fresh := 0
		for _, w := range e.idle {
			if !seen[w] {
				fresh++
				seen[w] = true
			}
		}
		e.mu.Unlock()
		for i := range workers {
			if r := e.Submit(task{i}, true, nil); r != Accepted {
				t.Fatalf("Submit = %v, want Accepted", r)
			}
		}
		waitUntil(t, "every worker running a task", func() bool { return started.Load() == workers })
		close(release)
		// Stop dismisses them parked, which marks their spots with exit.
		waitUntil(t, "every worker parked", func() bool { return e.Counters().Idle == workers })
		e.Stop()
		<-e.Exited()
		return attempts > 1 && fresh == 0
	})
	if got, want := ran.Load(), int64(attempts*workers); got != want {
		t.Fatalf("%d tasks ran in %d engines of %d workers, want %d", got, attempts, workers, want)
	}
}

// TestExitedWaitsForHeldSubPoolsForward: an engine that a sub-pool holds (Hold) does not count
// as exited while the sub-pool may still forward it a task, even once it has stopped and has no
// worker left; the late task runs, and Exited closes after it has finished.
func TestExitedWaitsForHeldSubPoolsForward(t *testing.T) {
	var ran atomic.Int64
	parent := New(Config[func()]{Run: func(f func()) { f() }, MaxWorkers: 1, PanicHandler: noPanic})
	gate := make(chan struct{})
	var child *Engine[int]
	parent.Hold()
	child = New(Config[int]{
		Run:          func(int) { ran.Add(1) },
		MaxWorkers:   1,
		PanicHandler: noPanic,
		Start: func(first int) {
			<-gate // the sub-pool's worker reaches the parent late, after it stopped
			parent.Forward(func() { child.Serve(first) })
		},
		Exited: parent.Release,
	})
	submitted := make(chan Result)
	go func() { submitted <- child.Submit(1, true, nil) }()
	waitUntil(t, "the sub-pool's task accepted", func() bool { return child.Counters().Submitted == 1 })
	parent.Stop()
	child.Stop()
	select {
	case <-parent.Exited():
		t.Fatal("the parent exited while its sub-pool could still forward a task to it")
	default:
	}
	close(gate)
	if r := <-submitted; r != Accepted {
		t.Fatalf("Submit = %v, want Accepted", r)
	}
	<-child.Exited()
	<-parent.Exited()
	if n := ran.Load(); n != 1 {
		t.Fatalf("the sub-pool's task ran %d times, want 1", n)
	}
	if c := parent.Counters(); c.Workers != 0 || c.Completed != c.Submitted || c.Submitted != 1 {
		t.Fatalf("parent counters after Exited: %+v, want 1 task submitted and completed, no worker", c)
	}
}

// lingerOnce replaces lingerYield until the test ends: the first linger calls during, later
// ones just yield.
func lingerOnce(t *testing.T, during func()) {
	var once sync.Once
	saved := lingerYield
	t.Cleanup(func() { lingerYield = saved })
	lingerYield = func() {
		once.Do(during)
		runtime.Gosched()
	}
}

// TestLingeringWorkerTakesTasksQueuedMeanwhile: a task submitted while a worker lingers is
// queued for it rather than handed to a parked worker, the lingering worker takes it instead
// of parking, and passes the next queued task on to a parked worker rather than leaving it
// behind its own.
func TestLingeringWorkerTakesTasksQueuedMeanwhile(t *testing.T) {
	thirdRan := make(chan struct{})
	var ran sync.Map
	e := New(Config[int]{
		Run: func(i int) {
			ran.Store(i, true)
			switch i {
			case 2:
				// The worker that took 2 cannot run 3 until 2 returns: 3 must be on another.
				select {
				case <-thirdRan:
				case <-time.After(5 * time.Second):
					t.Error("task 3 was left queued behind task 2")
				}
			case 3:
				close(thirdRan)
			}
		},
		MaxWorkers:   2,
		MinWorkers:   2,
		IdleTimeout:  time.Minute,
		PanicHandler: noPanic,
	})
	var during Counters
	lingerOnce(t, func() {
		for i := 2; i <= 3; i++ {
			if r := e.Submit(i, false, nil); r != Accepted {
				t.Errorf("Submit(%d) while a worker lingers = %v", i, r)
			}
		}
		during = e.Counters()
	})
	if r := e.Submit(1, false, nil); r != Accepted {
		t.Fatalf("Submit(1) = %v", r)
	}
	waitUntil(t, "three tasks done and both workers parked", func() bool {
		c := e.Counters()
		return c.Completed == 3 && c.Idle == 2
	})
	if during.Waiting != 2 || during.Idle != 1 {
		t.Errorf("while a worker lingered: %d queued and %d idle, want 2 queued and the other worker idle",
			during.Waiting, during.Idle)
	}
	for i := 1; i <= 3; i++ {
		if _, ok := ran.Load(i); !ok {
			t.Errorf("task %d did not run", i)
		}
	}
	e.Stop()
	<-e.Exited()
}

// TestLingeringWorkerRunsTasksQueuedBeforeStop: Stop while a worker lingers loses nothing: a
// task queued before Stop still runs, and the worker exits after it.
func TestLingeringWorkerRunsTasksQueuedBeforeStop(t *testing.T) {
	var ran atomic.Int32
	e := New(Config[int]{
		Run:          func(int) { ran.Add(1) },
		MaxWorkers:   1,
		IdleTimeout:  time.Minute,
		PanicHandler: noPanic,
	})
	lingerOnce(t, func() {
		if r := e.Submit(2, false, nil); r != Accepted {
			t.Errorf("Submit while a worker lingers = %v", r)
		}
		e.Stop()
		if r := e.Submit(3, false, nil); r != Stopped {
			t.Errorf("Submit after Stop = %v, want Stopped", r)
		}
	})
	if r := e.Submit(1, false, nil); r != Accepted {
		t.Fatalf("Submit(1) = %v", r)
	}
	select {
	case <-e.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the engine did not exit after Stop")
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("%d tasks ran, want the 2 accepted", n)
	}
}
