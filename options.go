package crew

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// DefaultIdleTimeout is how long a worker above the minimum stays idle before it exits, unless
// [WithIdleTimeout] says otherwise.
const DefaultIdleTimeout = 5 * time.Second

// An Option configures a pool built by [New] or [NewFunc].
type Option func(*config)

type config struct {
	queueSize    int
	nonBlocking  bool
	minWorkers   int
	idleTimeout  time.Duration
	panicHandler func(v any, stack []byte)
	noRecover    bool
	ctx          context.Context
	now          func() time.Time // clock hook for tests
	hooks        []Hooks          // WithHooks, in the order given
	histograms   bool             // WithLatencyHistograms
	sample       int              // WithLatencySample's n; 0: every task
	overload                      // overflow.go and rate.go
	priority     int              // WithPriority's level
	prioritySet  bool             // WithPriority was given
	adaptiveMin  int              // WithAdaptiveLimit's min; 0: a fixed limit
	maxWorkers   int              // the limit New or Sub was given, GOMAXPROCS for CPUs
	cpus         bool             // the limit follows GOMAXPROCS (CPUs)
	taskTimeout  time.Duration    // WithTaskTimeout's; 0: none
}

func newConfig(caller string, maxWorkers int, opts []Option) config {
	return newConfigFrom(config{idleTimeout: DefaultIdleTimeout, panicHandler: worker.DefaultPanicHandler},
		caller, maxWorkers, opts)
}

// newConfigFrom applies opts to c, which holds the defaults, and checks the result. maxWorkers
// may be CPUs: c.maxWorkers is then GOMAXPROCS.
func newConfigFrom(c config, caller string, maxWorkers int, opts []Option) config {
	c.cpus = maxWorkers == CPUs
	maxWorkers = workersFor(caller, maxWorkers)
	c.maxWorkers = maxWorkers
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.minWorkers > maxWorkers {
		panic(fmt.Sprintf("crew: %s: WithMinWorkers(%d) exceeds maxWorkers %d", caller, c.minWorkers, maxWorkers))
	}
	return c
}

func engineConfig[T any](c config, run func(T)) worker.Config[T] {
	idleTimeout := c.idleTimeout
	if idleTimeout == NoIdleTimeout {
		idleTimeout = -1 // the engine's "never": it starts no reaper at all
	}
	return worker.Config[T]{
		Run:          run,
		MaxWorkers:   c.maxWorkers,
		MinWorkers:   c.minWorkers,
		QueueSize:    c.queueSize,
		NonBlocking:  c.nonBlocking,
		IdleTimeout:  idleTimeout,
		PanicHandler: c.panicHandler,
		NoRecover:    c.noRecover,
		Now:          c.now,
		Overflow:     worker.Overflow(c.overflow),
		MaxWait:      c.maxWait,
		LimitBlocked: c.limitBlocked,
		MaxBlocked:   c.maxBlocked,
		Discard:      handlerOf[T](c),
	}
}

// WithQueueSize bounds the number of accepted tasks that wait for a worker: with every worker
// busy and n tasks waiting, the next submit blocks until one starts, or is rejected with
// [ErrQueueFull] under [WithNonBlocking]. 0, the default, leaves the queue unbounded. It panics
// if n is negative.
//
// A function that a waiting function ran itself (package documentation, "Waits that help")
// holds its place in the queue until it has ended. Its place then leaves at once if it is the
// newest or the oldest of its level; one with tasks queued both before and after it leaves
// when a worker reaches it, and takes room until then, though [Stats] no longer counts it
// as waiting. Likewise, when the function was a sub-pool's and the sub-pool had already
// started a worker for it, waiting in the parent's queue, that worker leaves at once if it is
// the newest or the oldest there, and otherwise when a worker of the parent reaches it.
func WithQueueSize(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("crew: WithQueueSize: n must be >= 0, got %d", n))
	}
	return func(c *config) { c.queueSize = n }
}

// WithNonBlocking makes [Pool.Submit] and [FuncPool.Invoke] return [ErrQueueFull] instead of
// blocking when the bounded queue is full. It has no effect on an unbounded queue.
//
// It is shorthand for WithOverflow(Reject); the last of the two given wins.
func WithNonBlocking() Option {
	return func(c *config) { c.nonBlocking, c.overflow = true, Reject }
}

// WithMinWorkers starts n workers with the pool and keeps them alive while idle; workers above
// n exit after the idle timeout. n may not exceed maxWorkers. It panics if n is negative.
func WithMinWorkers(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("crew: WithMinWorkers: n must be >= 0, got %d", n))
	}
	return func(c *config) { c.minWorkers = n }
}

// WithIdleTimeout sets how long a worker above the minimum waits idle for a task before it
// exits; the default is [DefaultIdleTimeout]. 0 makes such workers exit as soon as they find
// nothing to do, and [NoIdleTimeout] keeps them until the pool stops. It panics if d is
// negative.
func WithIdleTimeout(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("crew: WithIdleTimeout: d must be >= 0, got %v", d))
	}
	return func(c *config) { c.idleTimeout = d }
}

// WithPanicHandler sets the function that receives the value and stack of a plain task that
// panicked (tasks run through [Go], [Group], [Results], [Map] and [ForEach] report panics to
// their caller instead). The handler runs on the worker, which keeps serving afterwards; a
// handler that panics itself is reported through the default handler. The default logs
// through the log/slog default logger; nil restores it.
func WithPanicHandler(h func(v any, stack []byte)) Option {
	return func(c *config) {
		if h == nil {
			h = worker.DefaultPanicHandler
		}
		c.panicHandler = h
	}
}

// WithContext ties the pool to ctx: when ctx ends, the pool stops as if by [Pool.Stop],
// sub-pools included. Tasks already accepted still run; a submit to the pool or to any of its
// sub-pools made after ctx has ended returns [ErrStopped], and a pool built with a ctx that
// has already ended is stopped when New returns. It panics if ctx is nil.
func WithContext(ctx context.Context) Option {
	if ctx == nil {
		panic("crew: WithContext: ctx must not be nil")
	}
	return func(c *config) { c.ctx = ctx }
}

// WithoutPanicRecovery lets a plain task's panic crash the program, as a panic in a goroutine
// of its own would, with the panicking goroutine's stack, instead of going to the panic
// handler. Use it where a panic must never be absorbed (a test run, a fail-fast service).
// Functions run by [Go], a [Group], [Results], [Map] or [ForEach] still report their panics
// to Wait as a [*PanicError].
func WithoutPanicRecovery() Option {
	return func(c *config) { c.noRecover = true }
}

// NoIdleTimeout is the idle timeout that never expires: given to [WithIdleTimeout], it keeps
// every worker a pool has started alive until the pool stops. Workers still start only as
// tasks arrive, but none exits for being idle, and no goroutine watches them. Its value is
// the longest [time.Duration].
const NoIdleTimeout time.Duration = math.MaxInt64
