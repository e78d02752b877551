package crew_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestIdleTimeoutDefaultsToDefaultIdleTimeout: without WithIdleTimeout, a worker above the
// minimum is reaped once it has been idle for DefaultIdleTimeout, and not a nanosecond before.
func TestIdleTimeoutDefaultsToDefaultIdleTimeout(t *testing.T) {
	t.Parallel()
	start, clock := frozenClock()
	p := crew.New(4, crew.WithClock(clock))
	defer p.StopAndWait()
	parkWorkers(t, p, 4)
	reapsAtIdleTimeout(t, p, start, crew.DefaultIdleTimeout, 4)
	if s := p.Stats(); s.Idle != 0 || s.Running != 0 {
		t.Fatalf("Stats after reaping = %+v, want no worker left", s)
	}
}

// TestNonBlockingHasNoEffectOnUnboundedQueue: under WithNonBlocking, a pool without
// WithQueueSize still accepts every task, however many wait.
func TestNonBlockingHasNoEffectOnUnboundedQueue(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, []crew.Option{crew.WithNonBlocking()}, func(t *testing.T, p testPool) {
		const n = 1000
		release := holdWorkers(t, p, 1, 0)
		ran := acceptsAll(t, p, n)
		if s := p.Stats(); s.Waiting != 2*n {
			t.Fatalf("Stats = %+v, want all %d tasks waiting", s, 2*n)
		}
		release()
		p.StopAndWait()
		if got := ran.Load(); got != 2*n {
			t.Fatalf("%d of %d tasks ran", got, 2*n)
		}
	})
}

// TestWithPanicHandlerNilRestoresDefault: WithPanicHandler(nil) after another handler puts
// the default back: the panic is logged through log/slog and the earlier handler never sees it.
func TestWithPanicHandlerNilRestoresDefault(t *testing.T) {
	// Not parallel: it swaps the default logger.
	var called atomic.Bool
	replaced := crew.WithPanicHandler(func(any, []byte) { called.Store(true) })
	defaultHandlerLogs(t, replaced, crew.WithPanicHandler(nil))
	if called.Load() {
		t.Fatal("the handler that WithPanicHandler(nil) replaced got the panic")
	}
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
