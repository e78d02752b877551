package crew_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

// The fault cases: a pool used badly still ends in a clear, documented state.

// TestShutdownReturnsContextErrorAndTheRestDrain: a task that never returns makes Shutdown
// return ctx.Err() when ctx ends, while every other accepted task still runs.
func TestShutdownReturnsContextErrorAndTheRestDrain(t *testing.T) {
	p := crew.New(2)
	stuck := make(chan struct{})
	started := make(chan struct{})
	if err := p.Submit(func() { close(started); <-stuck }); err != nil {
		t.Fatal(err)
	}
	<-started
	const n = 1000
	var ran sync.WaitGroup
	ran.Add(n)
	for range n {
		if err := p.Submit(ran.Done); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a task that never returns = %v, want context.DeadlineExceeded", err)
	}
	ran.Wait() // the other tasks drain on the free worker
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after Shutdown = %v, want ErrStopped", err)
	}
	if s := p.Stats(); s.Running != 1 || s.Completed != n {
		t.Fatalf("stats %+v, want the stuck task running and %d completed", s, n)
	}
	close(stuck)
	p.StopAndWait()
}

// TestPanicHandlerThatPanicsIsReportedAndWorkerKeepsServing: a panic in the panic handler
// goes to the default handler (log/slog) and the worker keeps serving.
func TestPanicHandlerThatPanicsIsReportedAndWorkerKeepsServing(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil)))
	defer slog.SetDefault(old)

	p := crew.New(1, crew.WithPanicHandler(func(v any, _ []byte) {
		panic("handler broke on " + v.(string))
	}))
	if err := p.Submit(func() { panic("task boom") }); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	if err := p.Submit(func() { close(ran) }); err != nil {
		t.Fatal(err)
	}
	<-ran
	p.StopAndWait()
	if s := p.Stats(); s.Panicked != 1 || s.Completed != 1 {
		t.Fatalf("stats %+v, want 1 panicked and 1 completed", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "handler broke on task boom") {
		t.Fatalf("the handler's own panic was not logged; log:\n%s", buf.String())
	}
}

// TestWaitFromTaskDoesNotReturnWhileTaskRuns: Wait called on behalf of a running task waits
// for that task too, so it cannot return while the task runs (called on the task's own
// goroutine, it never returns, as Pool.Wait documents). Meanwhile the other tasks run, and
// Shutdown with a deadline reports the stuck task; once the task gives up, Wait returns.
func TestWaitFromTaskDoesNotReturnWhileTaskRuns(t *testing.T) {
	p := crew.New(2)
	waited := make(chan struct{})
	giveUp := make(chan struct{})
	taskDone := make(chan struct{})
	if err := p.Submit(func() {
		defer close(taskDone)
		go func() { p.Wait(); close(waited) }()
		select {
		case <-waited:
			t.Error("Wait returned while the task that called it was running")
		case <-giveUp:
		}
	}); err != nil {
		t.Fatal(err)
	}
	var ran sync.WaitGroup
	ran.Add(100)
	for range 100 {
		if err := p.Submit(ran.Done); err != nil {
			t.Fatal(err)
		}
	}
	ran.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded while the waiting task runs", err)
	}
	select {
	case <-waited:
		t.Fatal("Wait returned while the task that called it was running")
	default:
	}
	close(giveUp)
	<-taskDone
	<-waited
	p.StopAndWait()
}

// TestStopFromTaskLetsAcceptedTasksRun: Stop called from a task returns at once; the tasks
// accepted before it still run, submits after it return ErrStopped, and StopAndWait returns.
// Shutdown from a task cannot wait for that task: it returns ctx.Err().
func TestStopFromTaskLetsAcceptedTasksRun(t *testing.T) {
	p := crew.New(1)
	var after error
	var shutdown error
	stopped := make(chan struct{})
	if err := p.Submit(func() {
		p.Stop()
		p.Stop() // a second Stop, from the same task, is a no-op
		after = p.Submit(func() { t.Error("a task submitted after Stop ran") })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		shutdown = p.Shutdown(ctx)
		cancel()
		close(stopped)
	}); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	for range 10 {
		if err := p.Submit(func() { ran.Add(1) }); err != nil && !errors.Is(err, crew.ErrStopped) {
			t.Fatal(err)
		}
	}
	<-stopped
	p.StopAndWait()
	if !errors.Is(after, crew.ErrStopped) {
		t.Fatalf("Submit after Stop from a task = %v, want ErrStopped", after)
	}
	if !errors.Is(shutdown, context.DeadlineExceeded) {
		t.Fatalf("Shutdown from a task = %v, want context.DeadlineExceeded", shutdown)
	}
	s := p.Stats()
	if uint64(ran.Load())+1 != s.Accepted || s.Completed != s.Accepted {
		t.Fatalf("stats %+v, %d tasks ran after the stopping one: accepted tasks were lost", s, ran.Load())
	}
}

// TestResizeToOneUnderFullLoadLosesNothingAndHoldsTheLimit: with every worker busy, the queue
// full and submitters blocked, Resize(1) returns at once; every accepted task runs exactly
// once, and the tasks started after it run one at a time.
func TestResizeToOneUnderFullLoadLosesNothingAndHoldsTheLimit(t *testing.T) {
	const workers, queue, blocked = 8, 64, 16
	p := crew.New(workers, crew.WithQueueSize(queue))
	hold := make(chan struct{})
	var running, high, started atomic.Int32
	var resized atomic.Bool
	runs := make([]atomic.Int32, workers+queue+blocked)
	task := func(i int) func() {
		return func() {
			n := running.Add(1)
			if resized.Load() {
				if n > high.Load() {
					high.Store(n)
				}
			}
			runs[i].Add(1)
			started.Add(1)
			<-hold
			running.Add(-1)
		}
	}
	for i := range workers + queue {
		if err := p.Submit(task(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Stats.Running counts a task from its start in the pool, before its first line runs: wait
	// until the held tasks have counted themselves.
	awaitStats(t, p, "a full pool", func(s crew.Stats) bool {
		return s.Running == workers && s.Waiting == queue && started.Load() == workers
	})
	var subs sync.WaitGroup
	for i := workers + queue; i < len(runs); i++ {
		subs.Add(1)
		go func() {
			defer subs.Done()
			if err := p.Submit(task(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { p.Resize(1); resized.Store(true); close(done) }()
	awaitReturn(t, "Resize(1) with 8 tasks running", done)
	close(hold)
	subs.Wait()
	p.StopAndWait()
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Fatalf("task %d ran %d times, want once", i, n)
		}
	}
	if h := high.Load(); h > 1 {
		t.Fatalf("%d tasks ran at once after Resize(1) returned", h)
	}
}

// TestStopWithMillionQueuedTasksRunsThemAll: Stop with a million tasks queued loses none;
// StopAndWait returns once all have run, and the queue's memory is given back.
func TestStopWithMillionQueuedTasksRunsThemAll(t *testing.T) {
	n := 1 << 20
	if testing.Short() || racetest.Enabled {
		n = 100_000
	}
	p := crew.New(1)
	hold := make(chan struct{})
	if err := p.Submit(func() { <-hold }); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	inc := func() { ran.Add(1) }
	for range n {
		if err := p.Submit(inc); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Stats(); s.Waiting != n {
		t.Fatalf("Waiting = %d, want %d", s.Waiting, n)
	}
	p.Stop()
	if err := p.Submit(inc); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after Stop = %v, want ErrStopped", err)
	}
	close(hold)
	p.StopAndWait()
	if got := ran.Load(); got != int64(n) {
		t.Fatalf("%d of %d queued tasks ran after Stop", got, n)
	}
}

// TestSubmitAfterPoolContextEndedIsRefused: once the WithContext context has ended, every
// submit (Submit, TrySubmit, SubmitContext, Invoke, TryInvoke, InvokeContext, a sub-pool's)
// is refused with ErrStopped, at once, and the task never runs; tasks accepted before still
// run.
func TestSubmitAfterPoolContextEndedIsRefused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := crew.New(2, crew.WithContext(ctx))
	fp := crew.NewFunc(2, func(int) { t.Error("a refused call ran") }, crew.WithContext(ctx))
	sub := p.Sub(1)
	hold := make(chan struct{})
	var before atomic.Int32
	for range 4 {
		if err := p.Submit(func() { <-hold; before.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	refusesEverySubmit(t, p, fp, func() { t.Error("a task submitted after the pool's context ended ran") })
	if sub.TrySubmit(func() {}) {
		t.Fatal("the sub-pool accepts tasks after its parent's context ended")
	}
	close(hold)
	p.StopAndWait()
	fp.StopAndWait()
	sub.StopAndWait()
	if before.Load() != 4 {
		t.Fatalf("%d of 4 tasks accepted before the context ended ran", before.Load())
	}
}

// TestTaskCallingGoexitIsCountedAndReplaced: a task that calls runtime.Goexit ends its
// worker's goroutine; the task counts as completed and the queued tasks still run.
func TestTaskCallingGoexitIsCountedAndReplaced(t *testing.T) {
	p := crew.New(1)
	hold := make(chan struct{})
	if err := p.Submit(func() { <-hold; runtime.Goexit() }); err != nil {
		t.Fatal(err)
	}
	var ran sync.WaitGroup
	ran.Add(10)
	for range 10 {
		if err := p.Submit(ran.Done); err != nil {
			t.Fatal(err)
		}
	}
	close(hold)
	ran.Wait()
	p.StopAndWait()
	if s := p.Stats(); s.Completed != 11 || s.Accepted != 11 {
		t.Fatalf("stats %+v, want 11 submitted and completed", s)
	}
}

// TestPanicInSubPoolTaskLeavesParentWorking: a sub-pool task's panic goes to the handler the
// sub-pool took from its parent, counts in the sub-pool's Panicked, and the parent's workers
// keep serving.
func TestPanicInSubPoolTaskLeavesParentWorking(t *testing.T) {
	var handled atomic.Int32
	p := crew.New(1, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
	sub := p.Sub(1)
	for range 5 {
		if err := sub.Submit(func() { panic("sub boom") }); err != nil {
			t.Fatal(err)
		}
	}
	ran := make(chan struct{})
	if err := p.Submit(func() { close(ran) }); err != nil {
		t.Fatal(err)
	}
	<-ran
	sub.Wait()
	p.StopAndWait()
	sub.StopAndWait()
	if s := sub.Stats(); s.Panicked != 5 || handled.Load() != 5 {
		t.Fatalf("sub-pool stats %+v, handler saw %d, want 5 panics", s, handled.Load())
	}
}

// TestStopAndWaitReturnsWhenReaperIsLast: the reaper can be the last goroutine of a stopped
// pool (its timer may fire as Stop closes its channel); StopAndWait must still return.
func TestStopAndWaitReturnsWhenReaperIsLast(t *testing.T) {
	t.Parallel()
	for i := range 400 {
		// Stop at about the moment the reaper's timer fires.
		timeout := time.Duration(50+i%40*25) * time.Microsecond
		p := crew.New(2, crew.WithIdleTimeout(timeout))
		p.Submit(func() {})
		p.Wait()
		for start := time.Now(); time.Since(start) < timeout; {
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatalf("iteration %d: Shutdown = %v: the pool never finished stopping", i, err)
		}
	}
}
