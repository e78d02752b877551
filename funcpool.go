package crew

import (
	"context"
	"time"
)

// FuncPool runs one function, fn, on arguments of type T, on at most MaxWorkers reused
// goroutines. It is [Pool] for the case where every task calls the same function: the
// arguments wait in the queue unboxed, so [FuncPool.Invoke] allocates nothing per call.
//
// A FuncPool is safe for concurrent use. Build one with [NewFunc]; the zero value is not
// usable. Its lifecycle (Wait, Stop, StopAndWait, Shutdown, Resize, Stats) is the same as
// Pool's.
type FuncPool[T any] struct {
	core core[T]
}

// NewFunc returns a pool that calls fn with each argument passed to [FuncPool.Invoke], at
// most maxWorkers calls at a time. It panics if maxWorkers is less than 1 (other than
// [CPUs]), fn is nil, or an option is out of range. The limit is chosen as for [New].
func NewFunc[T any](maxWorkers int, fn func(T), opts ...Option) *FuncPool[T] {
	c := newConfig("NewFunc", maxWorkers, opts)
	if fn == nil {
		panic("crew: NewFunc: fn must not be nil")
	}
	p := &FuncPool[T]{}
	p.core.init(c, engineConfig(c, fn), nil, p.core.halt, nil)
	return p
}

// Invoke queues a call of fn with arg. A nil error means the call was accepted and will run
// exactly once. Like [Pool.Submit], it blocks only while a bounded queue is full, returns
// [ErrQueueFull] under [WithNonBlocking] and [ErrStopped] after Stop; on error fn is never
// called with arg. A nil pointer or interface is an argument like any other. What the caller
// did before Invoke happens before the call starts, which may be before Invoke returns. It
// allocates nothing in steady state.
// Like Submit, it may yield its processor while far more calls wait than workers are alive.
func (p *FuncPool[T]) Invoke(arg T) error {
	checkFuncPool(p, "Invoke")
	return p.core.submit(arg, true)
}

// TryInvoke queues a call of fn with arg if it can without blocking, and reports whether it
// did. It returns false when the bounded queue is full or the pool is stopped.
func (p *FuncPool[T]) TryInvoke(arg T) bool {
	checkFuncPool(p, "TryInvoke")
	return p.core.submit(arg, false) == nil
}

// InvokeContext is [FuncPool.Invoke] that gives up waiting for room in a full queue when ctx
// ends, with an error that matches ctx.Err(). If ctx has already ended, it returns that error
// at once without accepting the call.
func (p *FuncPool[T]) InvokeContext(ctx context.Context, arg T) error {
	checkFuncPool(p, "InvokeContext")
	checkCtx(ctx, "InvokeContext")
	return p.core.submitContext(ctx, arg, false)
}

// Wait blocks until every call accepted so far has returned; see [Pool.Wait].
func (p *FuncPool[T]) Wait() {
	checkFuncPool(p, "Wait")
	p.core.wait()
}

// Stop stops the pool from accepting calls and returns at once; accepted calls still run.
// See [Pool.Stop].
func (p *FuncPool[T]) Stop() {
	checkFuncPool(p, "Stop")
	p.core.halt()
	p.core.unhook()
}

// StopAndWait stops the pool and waits until every accepted call has returned and every
// worker has exited; see [Pool.StopAndWait].
func (p *FuncPool[T]) StopAndWait() {
	checkFuncPool(p, "StopAndWait")
	p.Stop()
	<-p.core.e.Exited()
}

// Shutdown stops the pool and waits for the accepted calls until ctx ends, then returns
// ctx.Err(); see [Pool.Shutdown]. It panics if ctx is nil, and then stops nothing.
func (p *FuncPool[T]) Shutdown(ctx context.Context) error {
	checkFuncPool(p, "Shutdown")
	return p.core.shutdown(ctx, p.Stop, nil)
}

// Resize sets the worker limit; see [Pool.Resize].
func (p *FuncPool[T]) Resize(maxWorkers int) {
	checkFuncPool(p, "Resize")
	p.core.resize(maxWorkers)
}

// Stats returns a consistent snapshot of the pool's counters; see [Stats].
func (p *FuncPool[T]) Stats() Stats {
	checkFuncPool(p, "Stats")
	return p.core.stats()
}

// Stopped reports whether the pool has stopped accepting calls; see [Pool.Stopped].
func (p *FuncPool[T]) Stopped() bool {
	checkFuncPool(p, "Stopped")
	return p.core.stopped()
}

// QueueSize returns the bound on waiting calls that the pool was built with
// ([WithQueueSize]); 0 means unbounded.
func (p *FuncPool[T]) QueueSize() int {
	checkFuncPool(p, "QueueSize")
	return p.core.cfg.queueSize
}

// Overflow returns what a blocking call does when the bounded queue is full, as the pool was
// built ([WithOverflow]; [Reject] under [WithNonBlocking]); [Block] by default.
func (p *FuncPool[T]) Overflow() Overflow {
	checkFuncPool(p, "Overflow")
	return p.core.cfg.overflow
}

// MinWorkers returns the number of workers kept alive while idle ([WithMinWorkers]).
func (p *FuncPool[T]) MinWorkers() int {
	checkFuncPool(p, "MinWorkers")
	return p.core.cfg.minWorkers
}

// IdleTimeout returns how long a worker above the minimum stays idle before it exits
// ([WithIdleTimeout]); [NoIdleTimeout] means never.
func (p *FuncPool[T]) IdleTimeout() time.Duration {
	checkFuncPool(p, "IdleTimeout")
	return p.core.cfg.idleTimeout
}
