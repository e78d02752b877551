package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
	"go.uber.org/goleak"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// waitWithin polls cond until it holds, and fails t if it does not within d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// goRun runs f on a goroutine of its own and returns a channel closed when f returns.
func goRun(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// stillBlocked fails t if done is closed within 20 ms: what it stands for should block.
func stillBlocked(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s returned, want it to block", what)
	case <-time.After(20 * time.Millisecond):
	}
}

// awaitReturn fails t unless done is closed within 10 s, so that a call a bug makes hang
// fails the test instead of hanging it.
func awaitReturn(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s has not returned after 10 s", what)
	}
}

// blocker returns a task that blocks until release is closed, and a channel that receives
// once per task that has started.
func blocker() (task func(), started chan struct{}, release chan struct{}) {
	started = make(chan struct{}, 1024)
	release = make(chan struct{})
	return func() {
		started <- struct{}{}
		<-release
	}, started, release
}

// testPool is a Pool or a FuncPool, driven through fuzzPool's adapters (a FuncPool[func()]
// whose fn calls its argument), with Shutdown: for the guarantees the two types share.
type testPool interface {
	fuzzPool
	Shutdown(ctx context.Context) error
}

// poolKinds makes each kind of testPool.
var poolKinds = []struct {
	name string
	new  func(maxWorkers int, opts ...crew.Option) testPool
}{
	{"Pool", func(n int, opts ...crew.Option) testPool { return plainPool{crew.New(n, opts...)} }},
	{"FuncPool", func(n int, opts ...crew.Option) testPool {
		return invokePool{crew.NewFunc(n, func(f func()) { f() }, opts...)}
	}},
}

// forEachKind runs test as a parallel subtest for each of poolKinds, on a new pool of that
// kind built with maxWorkers and opts.
func forEachKind(t *testing.T, maxWorkers int, opts []crew.Option, test func(t *testing.T, p testPool)) {
	t.Helper()
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			test(t, k.new(maxWorkers, opts...))
		})
	}
}

// holdWorkers submits workers+queued tasks that block, and returns once workers of them run,
// the rest waiting in the queue; release lets them all return, as the end of the test does
// if the test has not. p must have exactly workers workers, and room in its queue for queued
// tasks.
func holdWorkers(t *testing.T, p fuzzPool, workers, queued int) (release func()) {
	t.Helper()
	task, started, gate := blocker()
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	for range workers + queued {
		if err := p.submit(task); err != nil {
			t.Fatalf("submit of a held task = %v", err)
		}
	}
	for range workers {
		<-started
	}
	return release
}

// acceptsAll checks that p accepts n tasks through submit and n more through try, none
// refused, and returns a counter of the ones that have run. The caller keeps p's workers busy
// meanwhile, so that the tasks pile up in its queue.
func acceptsAll(t *testing.T, p fuzzPool, n int) *atomic.Int64 {
	t.Helper()
	ran := new(atomic.Int64)
	task := func() { ran.Add(1) }
	for i := range n {
		if err := p.submit(task); err != nil {
			t.Fatalf("submit %d = %v; stats %+v", i, err, p.Stats())
		}
		if !p.try(task) {
			t.Fatalf("try %d = false; stats %+v", i, p.Stats())
		}
	}
	if s := p.Stats(); s.Rejected != 0 {
		t.Fatalf("Stats = %+v, want nothing rejected", s)
	}
	return ran
}

func TestBadInputPanicsWithClearMessage(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	tests := []struct {
		name      string
		call      func()
		wantPanic string
	}{
		{"New(0)", func() { crew.New(0) }, "crew: New: maxWorkers must be >= 1, got 0"},
		{"New(-3)", func() { crew.New(-3) }, "crew: New: maxWorkers must be >= 1, got -3"},
		{"NewFunc(0)", func() { crew.NewFunc(0, func(int) {}) }, "crew: NewFunc: maxWorkers must be >= 1, got 0"},
		{"NewFunc nil fn", func() { crew.NewFunc[int](1, nil) }, "crew: NewFunc: fn must not be nil"},
		{"WithQueueSize(-1)", func() { crew.WithQueueSize(-1) }, "crew: WithQueueSize: n must be >= 0, got -1"},
		{"WithMinWorkers(-1)", func() { crew.WithMinWorkers(-1) }, "crew: WithMinWorkers: n must be >= 0, got -1"},
		{"WithIdleTimeout(-1s)", func() { crew.WithIdleTimeout(-time.Second) }, "crew: WithIdleTimeout: d must be >= 0, got -1s"},
		//lint:ignore SA1012 a nil context is the bad input under test
		{"WithContext(nil)", func() { crew.WithContext(nil) }, "crew: WithContext: ctx must not be nil"},
		{"min above max", func() { crew.New(2, crew.WithMinWorkers(3)) }, "crew: New: WithMinWorkers(3) exceeds maxWorkers 2"},
		{"Resize(0)", func() { p.Resize(0) }, "crew: Resize: maxWorkers must be >= 1, got 0"},
		{"Sub(0)", func() { p.Sub(0) }, "crew: Sub: maxWorkers must be >= 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				got := recover()
				if got != tt.wantPanic {
					t.Fatalf("panic = %v, want %q", got, tt.wantPanic)
				}
			}()
			tt.call()
		})
	}
}

func TestSubmitRunsAcceptedTaskExactlyOnce(t *testing.T) {
	t.Parallel()
	const n = 20000
	p := crew.New(4)
	runs := make([]atomic.Int32, n)
	for i := range n {
		if err := p.Submit(func() { runs[i].Add(1) }); err != nil {
			t.Fatalf("Submit: %v", err)
		}
	}
	p.StopAndWait()
	for i := range runs {
		if got := runs[i].Load(); got != 1 {
			t.Fatalf("task %d ran %d times", i, got)
		}
	}
	if s := p.Stats(); s.Accepted != n || s.Completed != n {
		t.Fatalf("Stats = %+v, want %d submitted and completed", s, n)
	}
}

// TestQueuedTasksRunInFIFOOrder: tasks that wait for a busy worker, in a Pool's queue or a
// FuncPool's, start in the order they were submitted.
func TestQueuedTasksRunInFIFOOrder(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		const n = 200
		release := holdWorkers(t, p, 1, 0)
		var order []int // appended to by the one worker only
		for i := range n {
			if err := p.submit(func() { order = append(order, i) }); err != nil {
				t.Fatal(err)
			}
		}
		release()
		p.StopAndWait()
		if len(order) != n {
			t.Fatalf("%d of %d queued tasks ran", len(order), n)
		}
		for i, v := range order {
			if v != i {
				t.Fatalf("task %d ran in place %d", v, i)
			}
		}
	})
}

// Under the race detector, these fail if what the caller wrote before Submit or Invoke is not
// ordered before the task's read of it, or the task's write before Wait's return.
func TestSubmitHappensBeforeTaskAndTaskBeforeWait(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	in := make([]int, 100)
	out := make([]int, 100)
	for i := range in {
		in[i] = i + 1 // a plain write, before the Submit that hands it over
		if err := p.Submit(func() { out[i] = in[i] * 2 }); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	checkDoubled(t, out)
}

func TestInvokeHappensBeforeCallAndCallBeforeWait(t *testing.T) {
	t.Parallel()
	out := make([]int, 100)
	type job struct {
		i int
		v *int
	}
	p := crew.NewFunc(4, func(j job) { out[j.i] = *j.v * 2 })
	defer p.StopAndWait()
	for i := range out {
		v := new(int)
		*v = i + 1 // a plain write through a pointer the call reads
		if err := p.Invoke(job{i, v}); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	checkDoubled(t, out)
}

// checkDoubled fails t unless out[i] is 2(i+1) for every i.
func checkDoubled(t *testing.T, out []int) {
	t.Helper()
	for i, v := range out {
		if v != (i+1)*2 {
			t.Fatalf("out[%d] = %d, want %d", i, v, (i+1)*2)
		}
	}
}

func TestNilTaskReturnsErrNilTask(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	if err := p.Submit(nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Submit(nil) = %v, want ErrNilTask", err)
	}
	if err := p.SubmitContext(context.Background(), nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("SubmitContext(nil) = %v, want ErrNilTask", err)
	}
	if p.TrySubmit(nil) {
		t.Error("TrySubmit(nil) = true")
	}
	if s := p.Stats(); s.Accepted != 0 {
		t.Errorf("Accepted = %d after nil tasks", s.Accepted)
	}
}

func TestSubmitAfterStopReturnsErrStopped(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	f := crew.NewFunc(2, func(int) { t.Error("call ran after Stop") })
	p.Stop()
	f.Stop()
	ran := false
	refusesEverySubmit(t, p, f, func() { ran = true })
	p.StopAndWait()
	f.StopAndWait()
	if ran {
		t.Error("task ran after Stop")
	}
}

// refusesEverySubmit checks that each way of submitting to p and f (Submit, TrySubmit,
// SubmitContext, Invoke, TryInvoke, InvokeContext) refuses with ErrStopped. task is what p is
// offered; the caller checks that it never ran, as f's function should check for its calls.
func refusesEverySubmit(t *testing.T, p *crew.Pool, f *crew.FuncPool[int], task func()) {
	t.Helper()
	if err := p.Submit(task); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit = %v, want ErrStopped", err)
	}
	if p.TrySubmit(task) {
		t.Error("TrySubmit = true, want false")
	}
	if err := p.SubmitContext(context.Background(), task); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("SubmitContext = %v, want ErrStopped", err)
	}
	if err := f.Invoke(1); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Invoke = %v, want ErrStopped", err)
	}
	if f.TryInvoke(1) {
		t.Error("TryInvoke = true, want false")
	}
	if err := f.InvokeContext(context.Background(), 1); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("InvokeContext = %v, want ErrStopped", err)
	}
}

func TestNoMoreThanMaxWorkersRun(t *testing.T) {
	t.Parallel()
	const limit, n = 3, 3000
	p := crew.New(limit)
	var h highWater
	for range n {
		p.Submit(func() {
			h.enter()
			time.Sleep(10 * time.Microsecond)
			h.exit()
		})
	}
	p.StopAndWait()
	if m := h.high.Load(); m > limit || m < 1 {
		t.Fatalf("high-water mark %d, want 1..%d", m, limit)
	}
}

// TestQueueSizeBoundsWaitingTasks: with every worker busy and the queue full, TrySubmit and
// TryInvoke return false, and Submit and Invoke block until a task starts and makes room.
func TestQueueSizeBoundsWaitingTasks(t *testing.T) {
	t.Parallel()
	const workers, queued = 2, 3
	forEachKind(t, workers, []crew.Option{crew.WithQueueSize(queued)}, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, workers, queued)
		var ran atomic.Int32
		task := func() { ran.Add(1) }
		if p.try(task) {
			t.Fatal("try accepted the queue size + 1-th waiting task")
		}
		if s := p.Stats(); s.Waiting != queued || s.Running != workers || s.Rejected != 1 {
			t.Fatalf("Stats = %+v, want %d waiting, %d running, 1 rejected", s, queued, workers)
		}

		// A blocking submit waits for room and is accepted once a task starts.
		var err error
		accepted := goRun(func() { err = p.submit(task) })
		stillBlocked(t, "submit on a full queue", accepted)
		release()
		awaitReturn(t, "submit after room was made", accepted)
		if err != nil {
			t.Fatalf("submit after room was made: %v", err)
		}
		p.StopAndWait()
		if s := p.Stats(); s.Completed != workers+queued+1 || ran.Load() != 1 {
			t.Fatalf("Stats = %+v and %d of 1 blocked task ran, want %d completed",
				s, ran.Load(), workers+queued+1)
		}
	})
}

// TestNonBlockingRejectsWithErrQueueFull: under WithNonBlocking, Submit and Invoke on a full
// queue return ErrQueueFull at once and the task never runs.
func TestNonBlockingRejectsWithErrQueueFull(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, []crew.Option{crew.WithQueueSize(1), crew.WithNonBlocking()}, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 1, 1)
		if err := p.submit(func() { t.Error("refused task ran") }); !errors.Is(err, crew.ErrQueueFull) {
			t.Fatalf("submit on a full queue = %v, want ErrQueueFull", err)
		}
		release()
		p.StopAndWait()
		if s := p.Stats(); s.Completed != 2 || s.Rejected != 1 {
			t.Fatalf("Stats = %+v, want 2 completed, 1 rejected", s)
		}
	})
}

func TestStopReleasesBlockedSubmitters(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	task, started, release := blocker()
	p.Submit(task)
	<-started
	p.Submit(task)
	const blocked = 8
	errs := make(chan error, blocked)
	for range blocked {
		go func() { errs <- p.Submit(func() { t.Error("refused task ran") }) }()
	}
	waitFor(t, "submitters to block", func() bool { return crew.BlockedSubmitters(p) == blocked })
	p.Stop()
	for range blocked {
		if err := <-errs; !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("blocked Submit = %v, want ErrStopped", err)
		}
	}
	close(release)
	p.StopAndWait()
	if s := p.Stats(); s.Completed != 2 {
		t.Fatalf("Completed = %d, want the 2 accepted tasks", s.Completed)
	}
}

// TestSubmitContextGivesUpWhenContextEnds: SubmitContext and InvokeContext, blocked on a full
// queue, give up when their context ends, with its error, and the task never runs.
func TestSubmitContextGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, []crew.Option{crew.WithQueueSize(1)}, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 1, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		var err error
		awaitReturn(t, "blocked submitContext after its context ended", goRun(func() {
			err = p.submitContext(ctx, func() { t.Error("task ran after its submit gave up") })
		}))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("submitContext = %v, want context.DeadlineExceeded", err)
		}
		release()
		p.StopAndWait()
	})
}

// TestCanceledCountsBlockedSubmitsWhoseContextEnded: Stats.Canceled, not Rejected, counts each
// SubmitContext or InvokeContext that waited on the full queue until its context ended, and
// each one made with a context that had already ended.
func TestCanceledCountsBlockedSubmitsWhoseContextEnded(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, []crew.Option{crew.WithQueueSize(1)}, func(t *testing.T, p testPool) {
		const n = 3
		release := holdWorkers(t, p, 1, 1)
		for range n {
			// The context ends long after the submit has found the queue full and blocked.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			err := p.submitContext(ctx, func() { t.Error("task ran after its submit gave up") })
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("submitContext = %v, want context.DeadlineExceeded", err)
			}
		}
		if s := p.Stats(); s.Canceled != n || s.Rejected != 0 || s.Accepted != 2 {
			t.Fatalf("Stats = %+v, want %d canceled, none rejected, 2 accepted", s, n)
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.submitContext(ended, func() { t.Error("task of an ended context ran") }); !errors.Is(err, context.Canceled) {
			t.Fatalf("submitContext with an ended context = %v, want context.Canceled", err)
		}
		if s := p.Stats(); s.Canceled != n+1 || s.Rejected != 0 {
			t.Fatalf("Stats = %+v, want %d canceled, none rejected", s, n+1)
		}
		release()
		p.StopAndWait()
	})
}

func TestSubmitContextWithEndedContextAcceptsNothing(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(ctx, func() { t.Error("task ran") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext = %v, want context.Canceled", err)
	}
	f := crew.NewFunc(1, func(int) { t.Error("call ran") })
	defer f.StopAndWait()
	if err := f.InvokeContext(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext = %v, want context.Canceled", err)
	}
}

func TestStopRunsAcceptedTasks(t *testing.T) {
	t.Parallel()
	const n = 1000
	p := crew.New(1)
	var ran atomic.Int32
	task, started, release := blocker()
	p.Submit(task)
	<-started
	for range n {
		p.Submit(func() { ran.Add(1) })
	}
	p.Stop() // returns at once, with the tasks still queued
	if s := p.Stats(); s.Waiting != n {
		t.Fatalf("Stats after Stop = %+v, want %d waiting", s, n)
	}
	close(release)
	p.StopAndWait()
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d accepted tasks ran after Stop", got, n)
	}
}

func TestStopAndWaitLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := crew.New(16, crew.WithMinWorkers(4))
	sub := p.Sub(3)
	for range 1000 {
		p.Submit(func() {})
		sub.Submit(func() {})
	}
	p.StopAndWait()
}

// TestSecondStopIsNoop: a second Stop, StopAndWait or Shutdown changes nothing: the pool
// still refuses tasks, the tasks queued before the first Stop still run, and Stats stays as
// it was.
func TestSecondStopIsNoop(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		const queued = 10
		release := holdWorkers(t, p, 1, 0)
		var ran atomic.Int32
		for range queued {
			if err := p.submit(func() { ran.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
		p.Stop()
		stopped := p.Stats()
		p.Stop()
		if s := p.Stats(); s != stopped {
			t.Fatalf("Stats after the second Stop = %+v, after the first %+v", s, stopped)
		}
		if err := p.submit(func() { t.Error("task ran after Stop") }); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("submit after the second Stop = %v, want ErrStopped", err)
		}
		release()
		p.StopAndWait()
		done := p.Stats()
		p.StopAndWait()
		p.Stop()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown after StopAndWait = %v", err)
		}
		if s := p.Stats(); s != done {
			t.Fatalf("Stats after a second StopAndWait, Stop and Shutdown = %+v, after the first StopAndWait %+v", s, done)
		}
		if got := ran.Load(); got != queued || done.Completed != queued+1 {
			t.Fatalf("%d of %d queued tasks ran; stats %+v", got, queued, done)
		}
	})
}

// TestShutdownReturnsContextErrorWhenTasksOutlastIt: Pool's and FuncPool's Shutdown return
// ctx.Err() when ctx ends before the accepted tasks have finished, and those still run.
func TestShutdownReturnsContextErrorWhenTasksOutlastIt(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 1, 0)
		var after atomic.Bool
		if err := p.submit(func() { after.Store(true) }); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
		}
		if after.Load() {
			t.Fatal("the queued task ran while the worker was held")
		}
		release()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown = %v", err)
		}
		if !after.Load() {
			t.Fatal("the queued task did not run after Shutdown gave up")
		}
	})
}

func TestWaitKeepsPoolUsable(t *testing.T) {
	t.Parallel()
	p := crew.New(3)
	defer p.StopAndWait()
	var n atomic.Int32
	for round := 1; round <= 3; round++ {
		for range 100 {
			p.Submit(func() { n.Add(1) })
		}
		p.Wait()
		if got := n.Load(); got != int32(round*100) {
			t.Fatalf("round %d: %d tasks done after Wait", round, got)
		}
	}
	p.Wait() // nothing pending: returns at once
}

// TestWaitWaitsForTasksAcceptedWhileItWaits: a task submitted, by a running task, after Wait
// was called holds Wait up until it has finished too.
func TestWaitWaitsForTasksAcceptedWhileItWaits(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	waiting := make(chan struct{})
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // before StopAndWait, should the test fail with the task held
	var late atomic.Bool
	if err := p.Submit(func() {
		<-waiting
		if err := p.Submit(func() { <-hold; late.Store(true) }); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	waited := goRun(func() {
		close(waiting)
		p.Wait()
	})
	stillBlocked(t, "Wait with a task accepted while it waits held", waited)
	release()
	awaitReturn(t, "Wait", waited)
	if !late.Load() {
		t.Fatal("Wait returned before the task accepted while it waited had finished")
	}
}

func TestResizeLosesNoTask(t *testing.T) {
	t.Parallel()
	const n = 5000
	p := crew.New(4)
	runs := make([]atomic.Int32, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			p.Resize(1 + i%7)
		}
	}()
	for i := range n {
		p.Submit(func() { runs[i].Add(1) })
	}
	<-done
	p.StopAndWait()
	ranOnce(t, runs)
}

func TestResizeGrowingStartsQueuedTasks(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	task, started, release := blocker()
	for range 4 {
		p.Submit(task)
	}
	<-started
	p.Resize(4) // no new submit: the three queued tasks start on new workers
	for range 3 {
		<-started
	}
	if s := p.Stats(); s.Running != 4 || s.Waiting != 0 {
		t.Fatalf("Stats after growing = %+v, want 4 running, 0 waiting", s)
	}
	close(release)
	p.StopAndWait()
}

// TestResizeShrinkingHoldsNewLimit: a shrinking Resize of a Pool or a FuncPool returns at once,
// even with more tasks running than the new limit; from its return no task starts while that
// many or more run, so the tasks started after it never run more than the limit at once.
func TestResizeShrinkingHoldsNewLimit(t *testing.T) {
	t.Parallel()
	forEachKind(t, 4, nil, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 4, 0)
		var h highWater
		counted := func() {
			h.enter()
			time.Sleep(50 * time.Microsecond)
			h.exit()
		}
		for range 200 {
			if err := p.submit(counted); err != nil {
				t.Fatal(err)
			}
		}
		resized := goRun(func() { p.Resize(2) })
		awaitReturn(t, "Resize(2) with 4 tasks running", resized)
		if s := p.Stats(); s.MaxWorkers != 2 || s.Running != 4 {
			t.Fatalf("Stats after shrinking with 4 tasks held = %+v, want MaxWorkers 2, Running 4", s)
		}
		release()
		p.StopAndWait()
		if m := h.high.Load(); m > 2 {
			t.Fatalf("%d tasks started after Resize(2) ran at once", m)
		}
	})
}

// TestResizeReturnsAtOnceAndMaxWorkersIsTheNewLimit: a shrinking Resize called while more
// tasks than the new limit run returns without waiting for them; from its return
// Stats.MaxWorkers is the new limit and no task starts until fewer than that many run.
func TestResizeReturnsAtOnceAndMaxWorkersIsTheNewLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithIdleTimeout(time.Hour))
	t.Cleanup(p.StopAndWait) // cleanups run last first: after the gates' closing below
	started := make(chan struct{}, 4)
	gates := make([]chan struct{}, 4)
	for i := range gates {
		gates[i] = make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-gates[i]:
			default:
				close(gates[i])
			}
		})
		if err := p.Submit(func() { started <- struct{}{}; <-gates[i] }); err != nil {
			t.Fatal(err)
		}
	}
	for range gates {
		<-started
	}
	awaitReturn(t, "Resize(1) with 4 tasks running", goRun(func() { p.Resize(1) }))
	if s := p.Stats(); s.MaxWorkers != 1 || s.Running != 4 {
		t.Fatalf("Stats right after Resize(1) = %+v, want MaxWorkers 1 and the 4 tasks running", s)
	}
	var late atomic.Bool
	if err := p.Submit(func() { late.Store(true) }); err != nil {
		t.Fatal(err)
	}
	for i, running := range []int{3, 2, 1} {
		close(gates[i])
		waitFor(t, fmt.Sprintf("%d tasks left", running), func() bool {
			s := p.Stats()
			return s.Running == running && s.MaxWorkers == 1
		})
		if late.Load() {
			t.Fatalf("a task started with %d tasks running and a limit of 1", running)
		}
	}
	close(gates[3])
	p.Wait()
	if !late.Load() {
		t.Fatal("the queued task did not run once the running ones finished")
	}
	if s := p.Stats(); s.Running != 0 || s.MaxWorkers != 1 {
		t.Fatalf("Stats after Wait = %+v, want nothing running and MaxWorkers 1", s)
	}
}

// TestResizeShrinkingMakesIdleWorkersExit: the idle workers above a lowered limit have exited
// by the time Resize returns, whether WithMinWorkers keeps them or a long idle timeout would.
func TestResizeShrinkingMakesIdleWorkersExit(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]crew.Option{
		"min workers":  crew.WithMinWorkers(4),
		"idle timeout": crew.WithIdleTimeout(time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := crew.New(4, opt)
			defer p.StopAndWait()
			parkWorkers(t, p, 4)
			awaitReturn(t, "Resize(1) with 4 idle workers", goRun(func() { p.Resize(1) }))
			if s := p.Stats(); s.MaxWorkers != 1 || s.Idle > 1 || s.Running != 0 {
				t.Fatalf("Stats after Resize(1) = %+v, want a limit of 1, at most 1 idle, none running", s)
			}
		})
	}
}

func TestStatsAddUp(t *testing.T) {
	t.Parallel()
	p := crew.New(2, crew.WithPanicHandler(func(any, []byte) {}))
	for i := range 100 {
		if i%10 == 0 {
			p.Submit(func() { panic("boom") })
		} else {
			p.Submit(func() {})
		}
	}
	p.StopAndWait()
	s := p.Stats()
	if s.Accepted != 100 || s.Completed != 90 || s.Panicked != 10 || s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestStatsSnapshotIsConsistentUnderLoad(t *testing.T) {
	t.Parallel()
	p := crew.New(3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					p.Submit(func() {})
				}
			}
		}()
	}
	var prev crew.Stats
	for range 2000 {
		s := p.Stats()
		if s.Completed+s.Panicked > s.Accepted || s.Running > s.MaxWorkers ||
			s.Accepted < prev.Accepted || s.Completed < prev.Completed {
			t.Fatalf("inconsistent snapshot %+v after %+v", s, prev)
		}
		prev = s
	}
	close(stop)
	wg.Wait()
	p.StopAndWait()
}

func TestPanicGoesToHandlerAndWorkerKeepsServing(t *testing.T) {
	t.Parallel()
	type report struct {
		v     any
		stack string
	}
	reports := make(chan report, 1)
	p := crew.New(1, crew.WithPanicHandler(func(v any, stack []byte) {
		reports <- report{v, string(stack)}
	}))
	p.Submit(panicsWithBoom)
	r := <-reports
	if r.v != "boom" {
		t.Fatalf("handler got %v, want boom", r.v)
	}
	if !strings.Contains(r.stack, "panicsWithBoom") {
		t.Fatalf("stack lacks the panicking frame:\n%s", r.stack)
	}
	var ran atomic.Bool
	p.Submit(func() { ran.Store(true) })
	p.StopAndWait()
	if !ran.Load() {
		t.Fatal("the worker stopped serving after a panic")
	}
	if s := p.Stats(); s.Panicked != 1 || s.Completed != 1 {
		t.Fatalf("Stats = %+v, want 1 panicked, 1 completed", s)
	}
}

func panicsWithBoom() { panic("boom") }

func TestDefaultPanicHandlerLogsWithSlog(t *testing.T) {
	// Not parallel: it swaps the default logger.
	defaultHandlerLogs(t)
}

// defaultHandlerLogs runs a task that panics on a pool built with opts, and fails t unless
// the slog default logger got the panic's value and stack, as the default handler logs them.
// It swaps the default logger meanwhile, so it is not for parallel tests.
func defaultHandlerLogs(t *testing.T, opts ...crew.Option) {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	p := crew.New(1, opts...)
	if err := p.Submit(panicsWithBoom); err != nil {
		t.Fatal(err)
	}
	p.StopAndWait()
	out := buf.String()
	if !strings.Contains(out, "boom") || !strings.Contains(out, "panicsWithBoom") {
		t.Fatalf("log lacks the value or the stack: %s", out)
	}
}

func TestSubPoolSharesParentLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	p := crew.New(limit)
	subs := []*crew.Pool{p.Sub(2), p.Sub(10), p.Sub(10).Sub(10)}
	var h highWater
	task := func() {
		h.enter()
		time.Sleep(20 * time.Microsecond)
		h.exit()
	}
	var n atomic.Int32
	for range 300 {
		for _, pool := range append(subs, p) {
			if err := pool.Submit(func() { task(); n.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range subs {
		s.Wait()
	}
	p.StopAndWait()
	if got := n.Load(); got != 1200 {
		t.Fatalf("%d of 1200 tasks ran", got)
	}
	if m := h.high.Load(); m > limit {
		t.Fatalf("parent and sub-pools ran %d tasks at once, limit %d", m, limit)
	}
}

// TestStopAndWaitWaitsForSubPoolTasks: a pool's StopAndWait returns only after every task its
// sub-pools accepted has finished, those accepted while Stop ran included, and the pool's
// counters are final by then. TestExitedWaitsForHeldSubPoolsForward (internal/worker) makes
// the late case happen every time.
func TestStopAndWaitWaitsForSubPoolTasks(t *testing.T) {
	t.Parallel()
	for round := range 300 {
		p := crew.New(2, crew.WithIdleTimeout(0))
		sub := p.Sub(2)
		var ran, accepted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 20 {
					if sub.Submit(func() { ran.Add(1) }) == nil {
						accepted.Add(1)
					}
				}
			}()
		}
		close(start)
		p.StopAndWait()
		ranBefore, s := ran.Load(), p.Stats()
		wg.Wait()
		if got, want := ranBefore, accepted.Load(); got != want {
			t.Fatalf("round %d: %d sub-pool tasks had run when StopAndWait returned, %d accepted",
				round, got, want)
		}
		if s.Running != 0 || s.Completed != s.Accepted {
			t.Fatalf("round %d: stats after StopAndWait: %+v", round, s)
		}
	}
}

func TestSubPoolLimitHolds(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	sub := p.Sub(2)
	var h highWater
	for range 500 {
		sub.Submit(func() {
			h.enter()
			time.Sleep(20 * time.Microsecond)
			h.exit()
		})
	}
	sub.StopAndWait()
	p.StopAndWait()
	if m := h.high.Load(); m > 2 {
		t.Fatalf("sub-pool ran %d tasks at once, limit 2", m)
	}
}

// TestSubPoolQueueIsUnbounded: a sub-pool accepts every task however many wait, even under
// a parent whose bounded, non-blocking queue is full.
func TestSubPoolQueueIsUnbounded(t *testing.T) {
	t.Parallel()
	const n = 1000
	p := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking())
	release := holdWorkers(t, plainPool{p}, 1, 1)
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("parent Submit on its full queue = %v, want ErrQueueFull", err)
	}
	sub := p.Sub(1)
	ran := acceptsAll(t, plainPool{sub}, n)
	release()
	p.StopAndWait()
	if got := ran.Load(); got != 2*n {
		t.Fatalf("%d of %d sub-pool tasks ran", got, 2*n)
	}
}

// TestShutdownWaitsForSubPoolTasks: a pool's Shutdown waits for its sub-pools' accepted tasks:
// it returns ctx.Err() if ctx ends while one runs, and nil once they have all finished.
func TestShutdownWaitsForSubPoolTasks(t *testing.T) {
	t.Parallel()
	const n = 10
	p := crew.New(2)
	sub := p.Sub(1)
	release := holdWorkers(t, plainPool{sub}, 1, 0)
	var ran atomic.Int32
	for range n {
		if err := sub.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("parent Shutdown with a sub-pool task running = %v, want context.DeadlineExceeded", err)
	}
	release()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d sub-pool tasks had run when Shutdown returned", got, n)
	}
}

// TestSubPoolRunningCountsWorkersWaitingForParent: a sub-pool's worker that waits in the
// parent's queue, all the parent's workers being busy, counts as running in the sub-pool's
// Stats, although none of its tasks has started.
func TestSubPoolRunningCountsWorkersWaitingForParent(t *testing.T) {
	t.Parallel()
	const n = 3
	p := crew.New(1)
	release := holdWorkers(t, plainPool{p}, 1, 0)
	sub := p.Sub(n)
	var ran atomic.Int32
	for range n {
		if err := sub.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	s, ps := sub.Stats(), p.Stats()
	if s.Running < 1 || s.Running+s.Waiting != n || s.Idle != 0 || ran.Load() != 0 {
		t.Fatalf("sub-pool Stats = %+v with %d tasks run, want its %d tasks waiting or held by running workers",
			s, ran.Load(), n)
	}
	if ps.Waiting != s.Running {
		t.Fatalf("parent Stats = %+v, want the sub-pool's %d running workers waiting in its queue", ps, s.Running)
	}
	release()
	p.StopAndWait()
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d sub-pool tasks ran", got, n)
	}
}

func TestStoppingSubPoolLeavesParentWorking(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	a, b := p.Sub(1), p.Sub(1)
	a.StopAndWait()
	if err := a.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("stopped sub-pool Submit = %v", err)
	}
	var n atomic.Int32
	if err := p.Submit(func() { n.Add(1) }); err != nil {
		t.Fatalf("parent Submit = %v", err)
	}
	if err := b.Submit(func() { n.Add(1) }); err != nil {
		t.Fatalf("sibling Submit = %v", err)
	}
	b.Wait()
	p.StopAndWait()
	if n.Load() != 2 {
		t.Fatalf("%d of 2 tasks ran", n.Load())
	}
}

func TestStoppingParentStopsSubPools(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	sub := p.Sub(1)
	task, started, release := blocker()
	p.Submit(task)
	<-started
	var ran atomic.Int32
	for range 10 {
		sub.Submit(func() { ran.Add(1) }) // accepted: must still run
	}
	p.Stop()
	if err := sub.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("sub-pool Submit after parent Stop = %v", err)
	}
	if s := p.Sub(1); !errors.Is(s.Submit(func() {}), crew.ErrStopped) {
		t.Fatal("Sub of a stopped pool accepts tasks")
	}
	close(release)
	p.StopAndWait()
	sub.StopAndWait()
	if ran.Load() != 10 {
		t.Fatalf("%d of 10 accepted sub-pool tasks ran", ran.Load())
	}
}

func TestWithContextStopsPool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p := crew.New(1, crew.WithContext(ctx))
	task, started, release := blocker()
	p.Submit(task)
	<-started
	var ran atomic.Bool
	p.Submit(func() { ran.Store(true) })
	cancel()
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after the pool's context ended = %v, want ErrStopped", err)
	}
	close(release)
	p.StopAndWait()
	if !ran.Load() {
		t.Fatal("a task accepted before the context ended did not run")
	}
}

func TestMinWorkersStartWithPool(t *testing.T) {
	t.Parallel()
	p := crew.New(8, crew.WithMinWorkers(3))
	defer p.StopAndWait()
	if s := p.Stats(); s.Idle != 3 || s.Running != 0 {
		t.Fatalf("Stats of a new pool = %+v, want 3 idle", s)
	}
}

// frozenClock returns a clock for WithClock that always reads start: the pool's own reaper
// then never finds a worker idle for long, and only ReapIdle, at a time the test picks, does.
func frozenClock() (start time.Time, clock func() time.Time) {
	start = time.Now()
	return start, func() time.Time { return start }
}

// parkWorkers has p's n workers run a task each at once, and waits until all n are idle.
func parkWorkers(t *testing.T, p *crew.Pool, n int) {
	t.Helper()
	holdWorkers(t, plainPool{p}, n, 0)()
	waitFor(t, "workers to park", func() bool { return p.Stats().Idle == n })
}

// reapsAtIdleTimeout checks that ReapIdle dismisses no worker of p parked at start before
// timeout has passed, and want of them once it has.
func reapsAtIdleTimeout(t *testing.T, p *crew.Pool, start time.Time, timeout time.Duration, want int) {
	t.Helper()
	if n := crew.ReapIdle(p, start.Add(timeout-time.Nanosecond)); n != 0 {
		t.Fatalf("reaped %d workers before the idle timeout of %v", n, timeout)
	}
	if n := crew.ReapIdle(p, start.Add(timeout)); n != want {
		t.Fatalf("reaped %d workers at the idle timeout of %v, want %d", n, timeout, want)
	}
}

func TestIdleWorkersAboveMinimumAreReaped(t *testing.T) {
	t.Parallel()
	start, clock := frozenClock()
	p := crew.New(8, crew.WithMinWorkers(2), crew.WithIdleTimeout(time.Hour), crew.WithClock(clock))
	defer p.StopAndWait()
	parkWorkers(t, p, 8)
	reapsAtIdleTimeout(t, p, start, time.Hour, 6) // keeping 2
	waitFor(t, "2 idle workers", func() bool { return p.Stats().Idle == 2 })
	var ran atomic.Bool
	p.Submit(func() { ran.Store(true) })
	p.Wait()
	if !ran.Load() {
		t.Fatal("pool does not serve after reaping")
	}
}

// TestIdleWorkersExitAfterIdleTimeout: the pool's own reaper, on the real clock, dismisses
// workers idle for the 1 ms WithIdleTimeout sets. The deadline is half of DefaultIdleTimeout,
// so a pool that ignored the option fails it.
func TestIdleWorkersExitAfterIdleTimeout(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithIdleTimeout(time.Millisecond))
	defer p.StopAndWait()
	holdWorkers(t, plainPool{p}, 4, 0)()
	p.Wait()
	waitWithin(t, crew.DefaultIdleTimeout/2, "idle workers to be reaped", func() bool {
		s := p.Stats()
		return s.Idle == 0 && s.Running == 0
	})
}

// TestIdleTimeoutZeroExitsAtOnce: with an idle timeout of 0, the workers above the minimum
// exit as soon as they find nothing to do. The clock is frozen, so the reaper would never
// dismiss them: a pool that ignored the option keeps 4 idle workers and fails the poll.
func TestIdleTimeoutZeroExitsAtOnce(t *testing.T) {
	t.Parallel()
	_, clock := frozenClock()
	p := crew.New(4, crew.WithMinWorkers(1), crew.WithIdleTimeout(0), crew.WithClock(clock))
	defer p.StopAndWait()
	holdWorkers(t, plainPool{p}, 4, 0)()
	p.Wait()
	waitFor(t, "the workers above the minimum to exit", func() bool {
		s := p.Stats()
		return s.Idle == 1 && s.Running == 0
	})
}

func TestInvokeAllocatesNothing(t *testing.T) {
	var n atomic.Int64
	p := crew.NewFunc(2, func(v int) { n.Add(int64(v)) })
	defer p.StopAndWait()
	for range 1000 { // warm up: start the workers
		p.Invoke(1)
	}
	p.Wait()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := p.Invoke(1); err != nil {
			t.Fatal(err)
		}
	})
	p.Wait()
	if allocs != 0 {
		t.Fatalf("Invoke allocates %.2f times per call, want 0", allocs)
	}
	if n.Load() != 2001 {
		t.Fatalf("%d calls ran, want 2001", n.Load())
	}
}

func TestSubmitAllocatesNothingBeyondTheClosure(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	var n atomic.Int64
	task := func() { n.Add(1) } // one closure, made once
	for range 1000 {
		p.Submit(task)
	}
	p.Wait()
	allocs := testing.AllocsPerRun(1000, func() { p.Submit(task) })
	p.Wait()
	if allocs != 0 {
		t.Fatalf("Submit allocates %.2f times per call, want 0", allocs)
	}
	if n.Load() != 2001 {
		t.Fatalf("%d tasks ran, want 2001", n.Load())
	}
}

// TestSubmitAllocatesNothingWhileABacklogSwings: a backlog that forms and drains again and
// again (here 10,000 tasks queued behind a held worker, then released) reuses the queue's
// memory, so Submit still allocates nothing once the first backlog has formed.
func TestSubmitAllocatesNothingWhileABacklogSwings(t *testing.T) {
	racetest.SkipPoolReuse(t)
	const backlog = 10_000
	p := crew.New(1, crew.WithMinWorkers(1))
	defer p.StopAndWait()
	var wg sync.WaitGroup
	var n atomic.Int64
	hold := make(chan struct{})
	blocker := func() { <-hold; wg.Done() }
	task := func() { n.Add(1); wg.Done() }
	swing := func() {
		wg.Add(backlog + 1)
		if err := p.Submit(blocker); err != nil {
			t.Fatal(err)
		}
		for range backlog {
			if err := p.Submit(task); err != nil {
				t.Fatal(err)
			}
		}
		hold <- struct{}{}
		wg.Wait()
	}
	swing() // the first backlog allocates the queue's segments
	if allocs := testing.AllocsPerRun(20, swing); allocs != 0 {
		t.Fatalf("%.0f allocations per backlog of %d tasks after the first, want 0", allocs, backlog)
	}
	if got, want := n.Load(), int64(22*backlog); got != want {
		t.Fatalf("%d tasks ran, want %d", got, want)
	}
}

// TestNewPoolReusesQueueMemoryOfAStoppedOne: a pool made after another one stopped queues
// its backlog on the memory the stopped pool's backlog held, so a pool that queues 10,000
// tasks allocates no more than one that queues none.
func TestNewPoolReusesQueueMemoryOfAStoppedOne(t *testing.T) {
	racetest.SkipPoolReuse(t)
	var n atomic.Int64
	task := func() { n.Add(1) }
	life := func(backlog int) func() {
		return func() {
			p := crew.New(1, crew.WithMinWorkers(1))
			hold := make(chan struct{})
			if err := p.Submit(func() { <-hold }); err != nil {
				t.Fatal(err)
			}
			for range backlog {
				if err := p.Submit(task); err != nil {
					t.Fatal(err)
				}
			}
			close(hold)
			p.StopAndWait()
		}
	}
	const backlog = 10_000
	life(backlog)() // the first backlog allocates the segments
	none := testing.AllocsPerRun(20, life(0))
	queued := testing.AllocsPerRun(20, life(backlog))
	if queued > none {
		t.Fatalf("a pool that queued %d tasks allocated %.0f times, one that queued none %.0f",
			backlog, queued, none)
	}
	if got, want := n.Load(), int64(22*backlog); got != want {
		t.Fatalf("%d tasks ran, want %d", got, want)
	}
}

// TestInvokeTakesNilPointerAsArgument: a nil pointer and a nil interface are arguments like
// any other: Invoke accepts them and fn is called with nil.
func TestInvokeTakesNilPointerAsArgument(t *testing.T) {
	t.Parallel()
	invokesWithNil[*int](t, "nil *int")
	invokesWithNil[error](t, "nil error")
}

// invokesWithNil checks that a FuncPool[T] accepts T's zero value (nil, for a pointer or an
// interface) and calls fn with it.
func invokesWithNil[T comparable](t *testing.T, name string) {
	t.Helper()
	got := make(chan T, 1)
	p := crew.NewFunc(1, func(v T) { got <- v })
	defer p.StopAndWait()
	var zero T
	if err := p.Invoke(zero); err != nil {
		t.Fatalf("Invoke(%s) = %v", name, err)
	}
	select {
	case v := <-got:
		if v != zero {
			t.Fatalf("fn got %v, want %s", v, name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("fn was not called with %s", name)
	}
}

func TestCallsFromTaskNeverDeadlock(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	done := make(chan struct{})
	p.Submit(func() {
		defer close(done)
		_ = p.Stats()
		p.Resize(3)
		if !p.TrySubmit(func() {}) {
			t.Error("TrySubmit from a task refused")
		}
		p.Stop()
		p.Stop()
	})
	<-done
	p.StopAndWait()
}

// TestBlockingSubmitFromTaskIntoItsOwnFullQueueWaitsForAWorker: a task's Submit into its own
// pool's full queue is treated like any other: it blocks, takes no room beyond the bound, and
// is accepted when another worker makes room; when the task holds the only worker, no worker
// ever does, and only the context of a SubmitContext ends the wait.
func TestBlockingSubmitFromTaskIntoItsOwnFullQueueWaitsForAWorker(t *testing.T) {
	t.Parallel()
	t.Run("another worker makes room", func(t *testing.T) {
		t.Parallel()
		p := crew.New(2, crew.WithQueueSize(1))
		release := holdWorkers(t, plainPool{p}, 1, 0)
		var ran atomic.Int32
		count := func() { ran.Add(1) }
		full := make(chan struct{})
		submitted := make(chan struct{})
		var inner error
		if err := p.Submit(func() {
			<-full
			inner = p.Submit(count)
			close(submitted)
		}); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.Running != 2 {
			t.Fatalf("Stats = %+v, want the submitting task on the second worker", s)
		}
		if err := p.Submit(count); err != nil { // takes the queue's one slot
			t.Fatal(err)
		}
		close(full)
		stillBlocked(t, "Submit from a task into its own full queue", submitted)
		if s := p.Stats(); s.Waiting != 1 || s.Running != 2 || s.Rejected != 0 {
			t.Fatalf("Stats with the task's Submit blocked = %+v, want 1 waiting, 2 running, none rejected", s)
		}
		release()
		awaitReturn(t, "Submit from a task once a worker made room", submitted)
		if inner != nil {
			t.Fatalf("Submit from a task once a worker made room = %v", inner)
		}
		p.StopAndWait()
		if got := ran.Load(); got != 2 {
			t.Fatalf("%d of 2 tasks ran", got)
		}
	})
	t.Run("the task holds the only worker", func(t *testing.T) {
		t.Parallel()
		p := crew.New(1, crew.WithQueueSize(1))
		var ran atomic.Int32
		count := func() { ran.Add(1) }
		var first, second error
		done := make(chan struct{})
		if err := p.Submit(func() {
			defer close(done)
			first = p.Submit(count) // takes the queue's one slot
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			second = p.SubmitContext(ctx, count)
		}); err != nil {
			t.Fatal(err)
		}
		awaitReturn(t, "the submitting task", done)
		if first != nil || !errors.Is(second, context.DeadlineExceeded) {
			t.Fatalf("Submit, SubmitContext from the only worker's task = %v, %v; want nil, context.DeadlineExceeded",
				first, second)
		}
		p.StopAndWait()
		if s := p.Stats(); ran.Load() != 1 || s.Canceled != 1 {
			t.Fatalf("%d tasks ran, stats %+v; want the 1 accepted one, 1 canceled", ran.Load(), s)
		}
	})
}
