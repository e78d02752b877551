package crew_test

import (
	"bytes"
	"context"
	"errors"
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
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
	if s := p.Stats(); s.Submitted != n || s.Completed != n {
		t.Fatalf("Stats = %+v, want %d submitted and completed", s, n)
	}
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
	if s := p.Stats(); s.Submitted != 0 {
		t.Errorf("Submitted = %d after nil tasks", s.Submitted)
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

func TestQueueSizeBoundsWaitingTasks(t *testing.T) {
	t.Parallel()
	const workers, queued = 2, 3
	p := crew.New(workers, crew.WithQueueSize(queued))
	task, started, release := blocker()
	for range workers + queued {
		if !p.TrySubmit(task) {
			t.Fatal("TrySubmit refused a task within workers + queue size")
		}
	}
	for range workers {
		<-started
	}
	if p.TrySubmit(task) {
		t.Fatal("TrySubmit accepted the queue size + 1-th waiting task")
	}
	if s := p.Stats(); s.Waiting != queued || s.Running != workers || s.Rejected != 1 {
		t.Fatalf("Stats = %+v, want %d waiting, %d running, 1 rejected", s, queued, workers)
	}

	// A blocking Submit waits for room and is accepted once a task starts.
	accepted := make(chan error)
	go func() { accepted <- p.Submit(task) }()
	select {
	case err := <-accepted:
		t.Fatalf("Submit returned %v on a full queue", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-accepted; err != nil {
		t.Fatalf("Submit after room was made: %v", err)
	}
	p.StopAndWait()
	if s := p.Stats(); s.Completed != workers+queued+1 {
		t.Fatalf("Completed = %d, want %d", s.Completed, workers+queued+1)
	}
}

func TestNonBlockingRejectsWithErrQueueFull(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking())
	task, started, release := blocker()
	p.Submit(task)
	<-started
	if err := p.Submit(task); err != nil {
		t.Fatalf("Submit into the free queue slot: %v", err)
	}
	if err := p.Submit(task); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Submit on a full queue = %v, want ErrQueueFull", err)
	}
	close(release)
	p.StopAndWait()
	if s := p.Stats(); s.Completed != 2 || s.Rejected != 1 {
		t.Fatalf("Stats = %+v, want 2 completed, 1 rejected", s)
	}
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
	waitFor(t, "submitters to block", func() bool { return p.Stats().Waiting == 1 })
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

func TestSubmitContextGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(1))
	task, started, release := blocker()
	p.Submit(task)
	<-started
	p.Submit(task)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := p.SubmitContext(ctx, func() { t.Error("task ran after its SubmitContext gave up") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SubmitContext = %v, want context.DeadlineExceeded", err)
	}
	close(release)
	p.StopAndWait()
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

func TestSecondStopIsNoop(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	p.Submit(func() {})
	p.Stop()
	p.Stop()
	p.StopAndWait()
	p.StopAndWait()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after StopAndWait = %v", err)
	}
}

func TestShutdownReturnsContextErrorWhenTasksOutlastIt(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	task, started, release := blocker()
	p.Submit(task)
	<-started
	var after atomic.Bool
	p.Submit(func() { after.Store(true) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	close(release)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	if !after.Load() {
		t.Fatal("the queued task did not run after Shutdown gave up")
	}
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
	for i := range runs {
		if got := runs[i].Load(); got != 1 {
			t.Fatalf("task %d ran %d times", i, got)
		}
	}
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

func TestResizeShrinkingHoldsNewLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	task, started, release := blocker()
	for range 4 {
		p.Submit(task)
	}
	for range 4 {
		<-started
	}
	var h highWater
	counted := func() {
		h.enter()
		time.Sleep(50 * time.Microsecond)
		h.exit()
	}
	for range 200 {
		p.Submit(counted)
	}
	resized := make(chan struct{})
	go func() {
		p.Resize(2)
		close(resized)
	}()
	select {
	case <-resized:
		t.Fatal("shrinking Resize returned while 4 tasks were running")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	<-resized
	if s := p.Stats(); s.MaxWorkers != 2 || s.Running > 2 {
		t.Fatalf("Stats after shrinking = %+v", s)
	}
	p.StopAndWait()
	if m := h.high.Load(); m > 2 {
		t.Fatalf("%d tasks started after Resize(2) ran at once", m)
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
	if s.Submitted != 100 || s.Completed != 90 || s.Panicked != 10 || s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
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
		if s.Completed+s.Panicked > s.Submitted || s.Running > s.MaxWorkers ||
			s.Submitted < prev.Submitted || s.Completed < prev.Completed {
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
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	p := crew.New(1)
	p.Submit(panicsWithBoom)
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
		if s.Running != 0 || s.Completed != s.Submitted {
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

func TestIdleWorkersAboveMinimumAreReaped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := crew.New(8, crew.WithMinWorkers(2), crew.WithIdleTimeout(time.Hour), crew.WithClock(clock))
	defer p.StopAndWait()
	task, started, release := blocker()
	for range 8 {
		p.Submit(task)
	}
	for range 8 {
		<-started
	}
	close(release)
	waitFor(t, "8 idle workers", func() bool { return p.Stats().Idle == 8 })
	if n := crew.ReapIdle(p, clock().Add(59*time.Minute)); n != 0 {
		t.Fatalf("reaped %d workers before the idle timeout", n)
	}
	if n := crew.ReapIdle(p, clock().Add(time.Hour)); n != 6 {
		t.Fatalf("reaped %d workers at the idle timeout, want 6 (keeping 2)", n)
	}
	waitFor(t, "2 idle workers", func() bool { return p.Stats().Idle == 2 })
	var ran atomic.Bool
	p.Submit(func() { ran.Store(true) })
	p.Wait()
	if !ran.Load() {
		t.Fatal("pool does not serve after reaping")
	}
}

func TestIdleWorkersExitAfterIdleTimeout(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithIdleTimeout(time.Millisecond))
	defer p.StopAndWait()
	for range 4 {
		p.Submit(func() { time.Sleep(time.Millisecond) })
	}
	p.Wait()
	waitFor(t, "idle workers to be reaped", func() bool {
		s := p.Stats()
		return s.Idle == 0 && s.Running == 0
	})
}

func TestIdleTimeoutZeroExitsAtOnce(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithIdleTimeout(0))
	defer p.StopAndWait()
	for range 100 {
		p.Submit(func() {})
	}
	p.Wait()
	waitFor(t, "workers to exit", func() bool { return p.Stats().Idle == 0 })
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

func TestInvokeTakesNilPointerAsArgument(t *testing.T) {
	t.Parallel()
	got := make(chan *int, 1)
	p := crew.NewFunc(1, func(v *int) { got <- v })
	defer p.StopAndWait()
	if err := p.Invoke(nil); err != nil {
		t.Fatalf("Invoke(nil) = %v", err)
	}
	if v := <-got; v != nil {
		t.Fatalf("fn got %v, want nil", v)
	}
	var e error
	q := crew.NewFunc(1, func(error) {})
	defer q.StopAndWait()
	if err := q.Invoke(e); err != nil {
		t.Fatalf("Invoke(nil error) = %v", err)
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
