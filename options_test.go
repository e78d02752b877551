package crew_test

import (
	"sync/atomic"
	"testing"

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
