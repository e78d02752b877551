package worker

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
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

// submit submits arg with wait true and fails the test unless it is accepted.
func submit[T any](t *testing.T, e *Engine[T], arg T) {
	t.Helper()
	if r := e.Submit(arg, true, nil); r != Accepted {
		t.Fatalf("Submit = %v, want Accepted", r)
	}
}

// raise sets x to n if n is larger, for high-water marks kept by concurrent goroutines.
func raise(x *atomic.Int32, n int32) {
	for h := x.Load(); n > h && !x.CompareAndSwap(h, n); h = x.Load() {
	}
}

// stopAndWait stops e and waits until its last goroutine is gone.
func stopAndWait[T any](e *Engine[T]) {
	e.Stop()
	<-e.Exited()
}

// call is the Run of an engine whose tasks are functions.
func call(f func()) { f() }

// fakeClock is a Config.Now that moves only when the test sets it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// goroutineID returns the calling goroutine's id, which tells workers apart.
func goroutineID() uint64 {
	var buf [64]byte
	line := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, err := strconv.ParseUint(string(line[:bytes.IndexByte(line, ' ')]), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("no goroutine id in %q", buf[:]))
	}
	return id
}

// runOn submits a task and returns the id of the goroutine that ran it.
func runOn(t *testing.T, e *Engine[func()]) uint64 {
	t.Helper()
	id := make(chan uint64, 1)
	submit(t, e, func() { id <- goroutineID() })
	return <-id
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

// TestBlockedSubmitThatGivesUpIsCanceled: a submitter blocked on a full queue whose done
// channel closes returns Canceled, is counted in Canceled, and its task never runs; one that
// gets room first is Accepted, and its task runs.
func TestBlockedSubmitThatGivesUpIsCanceled(t *testing.T) {
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
	if c := e.Counters(); c.Canceled != 1 || c.Rejected != 0 || c.Accepted != 2 {
		t.Fatalf("counters %+v, want 1 canceled, none rejected and 2 accepted", c)
	}

	done = make(chan struct{})
	go func() { res <- e.Submit(3, true, done) }()
	waitUntil(t, "the second submitter to block", func() bool { return e.BlockedSubmitters() == 1 })
	close(hold) // task 0 returns, and the worker moves task 3 into the slot task 1 leaves
	if r := <-res; r != Accepted {
		t.Fatalf("blocked Submit that got room = %v, want Accepted", r)
	}
	close(done) // too late to matter
	stopAndWait(e)
	if _, ok := ran.Load(2); ok {
		t.Fatal("the task of a submitter that gave up ran")
	}
	if _, ok := ran.Load(3); !ok {
		t.Fatal("the task of a submitter that got room did not run")
	}
	if c := e.Counters(); c.Canceled != 1 || c.Accepted != 3 || c.Completed != 3 {
		t.Fatalf("counters %+v, want 1 canceled and 3 accepted and completed", c)
	}
}

// TestResizeStormLosesNothing: concurrent submitters and resizers on a bare engine; every
// accepted task runs exactly once and Exited closes after Stop.
func TestResizeStormLosesNothing(t *testing.T) {
	const submitters, each = 16, 2000
	runs := make([]atomic.Int32, submitters*each)
	var live, high atomic.Int32
	e := New(Config[int]{
		Run: func(i int) {
			raise(&high, live.Add(1))
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
		Start: func(first int, since int64, _ bool) {
			go func() {
				<-gate // the sub-pool's worker reaches the parent late, after it stopped
				parent.Forward(func() { child.Serve(first, since) })
			}()
		},
		Exited: parent.Release,
	})
	submitted := make(chan Result)
	go func() { submitted <- child.Submit(1, true, nil) }()
	waitUntil(t, "the sub-pool's task accepted", func() bool { return child.Counters().Accepted == 1 })
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
	if c := parent.Counters(); c.Workers != 0 || c.Completed != c.Accepted || c.Accepted != 1 {
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

// TestSubmitQueuesBehindAWakingWorker: while a started worker has not begun, submits queue
// instead of starting more workers; when it begins, it starts one more with the oldest queued
// task, which does the same in turn. Config.Start holds each worker until the test runs it.
func TestSubmitQueuesBehindAWakingWorker(t *testing.T) {
	const tasks = 3
	starts := make(chan int, tasks+1)
	hold := make(chan struct{})
	e := New(Config[int]{
		Run:          func(int) { <-hold },
		MaxWorkers:   tasks + 1,
		PanicHandler: noPanic,
		Start:        func(first int, _ int64, _ bool) { starts <- first },
	})
	for i := 1; i <= tasks; i++ {
		submit(t, e, i)
	}
	for want := 1; want <= tasks; want++ {
		var first int
		select {
		case first = <-starts:
		case <-time.After(10 * time.Second):
			t.Fatalf("no worker started with task %d", want)
		}
		if first != want || len(starts) != 0 {
			t.Fatalf("started a worker with task %d and %d more, want one with task %d", first, len(starts), want)
		}
		if c := e.Counters(); c.Workers != want || c.Waiting != tasks-want {
			t.Fatalf("%d workers and %d tasks queued before worker %d began, want %d and %d",
				c.Workers, c.Waiting, want, want, tasks-want)
		}
		go e.Serve(first, 0)
	}
	close(hold)
	stopAndWait(e)
	if c := e.Counters(); c.Completed != tasks {
		t.Fatalf("Completed = %d, want %d", c.Completed, tasks)
	}
}

// TestGateLiftsWhenBoundedQueueIsFull: while a worker lingers, the waking gate queues a submit,
// but once the bounded queue is full a submit that does not wait is accepted if an idle worker
// or room for a new one can take the task, and the task runs. With neither, it is Full.
func TestGateLiftsWhenBoundedQueueIsFull(t *testing.T) {
	tests := []struct {
		name                   string
		maxWorkers, minWorkers int
		want                   Result
	}{
		{name: "idle worker", maxWorkers: 2, minWorkers: 2, want: Accepted},
		{name: "room to start one", maxWorkers: 2, want: Accepted},
		{name: "no worker free", maxWorkers: 1, want: Full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran sync.Map
			e := New(Config[int]{
				Run:          func(i int) { ran.Store(i, true) },
				MaxWorkers:   tt.maxWorkers,
				MinWorkers:   tt.minWorkers,
				QueueSize:    1,
				IdleTimeout:  time.Minute,
				PanicHandler: noPanic,
			})
			var queued, got Result
			var between Counters
			lingered := make(chan struct{})
			lingerOnce(t, func() {
				defer close(lingered)
				queued = e.Submit(2, false, nil) // the gate is closed: queued for this worker
				between = e.Counters()
				got = e.Submit(3, false, nil) // the queue is full
			})
			submit(t, e, 1)
			<-lingered
			stopAndWait(e)
			if queued != Accepted || between.Waiting != 1 {
				t.Fatalf("Submit(2) while a worker lingered = %v with %d tasks queued, want Accepted and 1",
					queued, between.Waiting)
			}
			if got != tt.want {
				t.Fatalf("Submit(3) to the full queue = %v, want %v", got, tt.want)
			}
			if _, ok := ran.Load(3); ok != (tt.want == Accepted) {
				t.Fatalf("task 3 ran: %v; Submit returned %v", ok, got)
			}
			if _, ok := ran.Load(2); !ok {
				t.Fatal("task 2 did not run")
			}
		})
	}
}
