package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestStopAndWaitReturnsWhenReaperIsLast: the reaper can be the last goroutine of a stopped
// pool (its timer may fire as Stop closes its channel); StopAndWait must still return. A
// fuzzed operation sequence once hung here.
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

// TestShutdownGivesUpOnTaskThatNeverReturnsAndRestDrain: a task that never returns makes
// Shutdown(ctx) return ctx.Err() when ctx ends, and every other accepted task still runs.
func TestShutdownGivesUpOnTaskThatNeverReturnsAndRestDrain(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	stuck := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-stuck })
	<-started
	var ran atomic.Int32
	for range 100 {
		p.Submit(func() { ran.Add(1) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	waitFor(t, "the other tasks to drain", func() bool { return ran.Load() == 100 })
	if s := p.Stats(); s.Running != 1 || s.Waiting != 0 {
		t.Fatalf("Stats = %+v, want only the stuck task running", s)
	}
	close(stuck)
	p.StopAndWait()
}

// TestPanicHandlerThatPanicsIsContained: a panic handler that panics is reported through the
// default handler; the worker and the process survive and the pool keeps serving.
func TestPanicHandlerThatPanicsIsContained(t *testing.T) {
	// Not parallel: it swaps the default logger.
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	p := crew.New(1, crew.WithPanicHandler(func(v any, _ []byte) { panic(fmt.Sprint("handler failed on ", v)) }))
	p.Submit(func() { panic("task failed") })
	var ran atomic.Bool
	p.Submit(func() { ran.Store(true) })
	p.StopAndWait()
	if !ran.Load() {
		t.Fatal("the worker stopped serving after its panic handler panicked")
	}
	if !strings.Contains(buf.String(), "handler failed on task failed") {
		t.Fatalf("the handler's panic was not reported: %s", buf.String())
	}
	if s := p.Stats(); s.Panicked != 1 || s.Completed != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

// TestWaitFromTaskWaitsForThatTaskToo: Wait waits for every accepted task, including the one
// that calls it, so Wait called from a task of the same pool cannot return while that task
// runs (the documented outcome: it never returns). Here the call is made from a goroutine the
// task starts, to observe it without hanging the test.
func TestWaitFromTaskWaitsForThatTaskToo(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	returned := make(chan struct{})
	finish := make(chan struct{})
	p.Submit(func() {
		go func() {
			p.Wait()
			close(returned)
		}()
		<-finish
	})
	select {
	case <-returned:
		t.Fatal("Wait returned while the task that called it was running")
	case <-time.After(20 * time.Millisecond):
	}
	close(finish)
	<-returned
	p.StopAndWait()
}

// TestStopFromTaskLetsQueuedTasksRun: Stop called from a task returns at once, refuses new
// tasks, and the tasks queued before it still run.
func TestStopFromTaskLetsQueuedTasksRun(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	gate := make(chan struct{})
	var refused atomic.Bool
	p.Submit(func() {
		<-gate
		p.Stop()
		refused.Store(errors.Is(p.Submit(func() {}), crew.ErrStopped))
	})
	var ran atomic.Int32
	for range 10 {
		p.Submit(func() { ran.Add(1) })
	}
	close(gate)
	p.StopAndWait()
	if !refused.Load() {
		t.Fatal("Submit after Stop from a task was accepted")
	}
	if ran.Load() != 10 {
		t.Fatalf("%d of 10 queued tasks ran after Stop from a task", ran.Load())
	}
}

// TestResizeToOneUnderFullLoad: shrinking to 1 while 64 submitters keep every worker busy
// loses no task, and once Resize returns, tasks run one at a time.
func TestResizeToOneUnderFullLoad(t *testing.T) {
	t.Parallel()
	p := crew.New(16)
	var running atomic.Int32
	var resized atomic.Bool
	var violations, ran, accepted atomic.Int64
	task := func() {
		r := running.Add(1)
		if resized.Load() && r > 1 {
			violations.Add(1)
		}
		runtime.Gosched()
		running.Add(-1)
		ran.Add(1)
	}
	per := 1000
	if testing.Short() {
		per = 100
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range per {
				if p.Submit(task) == nil {
					accepted.Add(1)
				}
			}
		}()
	}
	close(start)
	waitFor(t, "the pool to fill", func() bool { return p.Stats().Running == 16 })
	p.Resize(1)
	resized.Store(true)
	wg.Wait()
	p.StopAndWait()
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d tasks ran beside another after Resize(1) returned", v)
	}
	if ran.Load() != accepted.Load() || accepted.Load() != int64(64*per) {
		t.Fatalf("%d accepted, %d ran, want %d", accepted.Load(), ran.Load(), 64*per)
	}
}

// TestMillionQueuedTasksThenStopRunsThemAll: Stop with a million tasks queued returns at once
// and every one of them still runs.
func TestMillionQueuedTasksThenStopRunsThemAll(t *testing.T) {
	t.Parallel()
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 100_000
	}
	p := crew.New(4)
	gate := make(chan struct{})
	for range 4 {
		p.Submit(func() { <-gate })
	}
	var ran atomic.Int64
	task := func() { ran.Add(1) }
	for range n {
		if err := p.Submit(task); err != nil {
			t.Fatal(err)
		}
	}
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return at once with a full queue")
	}
	if s := p.Stats(); s.Waiting != n {
		t.Fatalf("Waiting = %d after Stop, want %d", s.Waiting, n)
	}
	close(gate)
	p.StopAndWait()
	if ran.Load() != int64(n) {
		t.Fatalf("%d of %d queued tasks ran after Stop", ran.Load(), n)
	}
}

// TestSubmitAfterPoolContextEndedReturnsErrStopped: a pool whose context has ended refuses
// every submit with ErrStopped, even one made before the pool noticed, and runs nothing.
func TestSubmitAfterPoolContextEndedReturnsErrStopped(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := crew.New(2, crew.WithContext(ctx))
	f := crew.NewFunc(2, func(int) { t.Error("call ran") }, crew.WithContext(ctx))
	if err := p.Submit(func() { t.Error("task ran") }); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit = %v, want ErrStopped", err)
	}
	if err := f.Invoke(1); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Invoke = %v, want ErrStopped", err)
	}
	p.StopAndWait()
	f.StopAndWait()
}

// TestGoexitInTaskKeepsPoolServing: a task that calls runtime.Goexit ends its worker's
// goroutine; the task counts as completed and the pool keeps serving, with queued tasks
// moving to a new worker.
func TestGoexitInTaskKeepsPoolServing(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	gate := make(chan struct{})
	p.Submit(func() { <-gate; runtime.Goexit() })
	var ran atomic.Int32
	for range 10 {
		p.Submit(func() { ran.Add(1) })
	}
	close(gate)
	p.StopAndWait()
	if ran.Load() != 10 {
		t.Fatalf("%d of 10 tasks queued behind a Goexit ran", ran.Load())
	}
	if s := p.Stats(); s.Completed != 11 {
		t.Fatalf("Stats = %+v, want 11 completed", s)
	}
}
