package crew

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/crewgo/crew/internal/adaptive"
	"github.com/crewgo/crew/internal/worker"
)

// Pool runs func() tasks on at most MaxWorkers reused goroutines. Workers start as tasks
// arrive, are reused while there is work, and exit after the idle timeout ([WithIdleTimeout]).
// Tasks wait in a FIFO queue while every worker is busy; the queue is unbounded unless
// [WithQueueSize] bounds it.
//
// A Pool is safe for concurrent use. Build one with [New]; the zero value is not usable.
// Stop it with [Pool.Stop], [Pool.StopAndWait] or [Pool.Shutdown] when done: a pool that is
// never stopped keeps its idle workers until the idle timeout.
type Pool struct {
	core    core[task]
	parent  *Pool
	weights weights // set once SubmitN used weights on p or a sub-pool of it

	mu       sync.Mutex
	children map[*Pool]struct{}
	leveled  bool // a sub-pool with a priority level was made: see level
}

// task is what a Pool's queue holds. Plain tasks are funcTask values, which fit in the
// interface without an allocation (a func value is one pointer); futures and group tasks
// implement it themselves, so they cost no extra closure.
//
// abort ends a task that will never run (dropped by [DiscardOldest], or taken out of the queue
// by [Pool.StopNow]) and reports true, or reports false for a plain task, which goes back to
// the user instead.
type task interface {
	run() worker.Outcome
	abort(err error) bool
}

type funcTask func()

func (f funcTask) run() worker.Outcome {
	f()
	return worker.Completed
}

func (f funcTask) abort(error) bool { return false }

// runTask is a Pool engine's worker.Config.Outcomes: a task may end unrun (life.go).
func runTask(t task) worker.Outcome { return t.run() }

// A reporter is a task that reports its own panic and runtime.Goexit: a future's, whose Wait
// returns them, and those of a group, a Results, a Map, a ForEach or a MapSeq, whose Wait or
// sequence does. Its pool's engine recovers them for it
// (worker.Config.Reports), on the worker or, under CallerRuns, on the caller, and calls
// panicked or goexited; the task counts as completed and the panic handler never sees it.
// Recovering in the engine, which does so once per run of tasks, spares each such task a
// recovering frame of its own.
type reporter interface {
	panicked(pe *PanicError)
	goexited()
}

// reporting makes ec's engine hand the panics and Goexits of reporters to them.
func reporting(ec *worker.Config[task]) {
	ec.Reports = func(t task) bool {
		_, ok := t.(reporter)
		return ok
	}
	ec.Panicked = func(t task, v any, stack []byte) {
		t.(reporter).panicked(&PanicError{Value: v, Stack: stack})
	}
	ec.Goexited = func(t task) { t.(reporter).goexited() }
}

// New returns a pool that runs at most maxWorkers tasks at a time. It panics if maxWorkers is
// less than 1 (other than [CPUs]) or an option is out of range. Workers start lazily, except
// the ones [WithMinWorkers] asks for.
//
// For tasks that compute rather than wait, a limit near runtime.GOMAXPROCS(0) is fastest:
// workers beyond the processors only take turns on them; [CPUs] keeps the limit there. Tasks
// that wait (on the network, a disk, a timer) want a limit as high as the resource they wait
// on allows; [WithAdaptiveLimit] finds it from their run times.
func New(maxWorkers int, opts ...Option) *Pool {
	c := newConfig("New", maxWorkers, opts)
	p := &Pool{}
	p.core.self = p
	p.core.hard.init(nil)
	p.core.init(c, poolEngineConfig(c), nil, p.halt, unobserved)
	return p
}

// poolEngineConfig is the engine configuration of a Pool or a sub-pool built with c.
func poolEngineConfig(c config) worker.Config[task] {
	ec := engineConfig[task](c, nil)
	ec.Outcomes = runTask
	ec.RunInline = runTaskInline
	ec.Begin = beginTask
	ec.Take = takeTask
	ec.Doomed = doomedTask
	reporting(&ec)
	ec.Weight = taskWeight
	ec.Level = taskLevel
	ec.Relay = relayTask
	ec.Discard, ec.Keep = discarder(c), keepSubWorker
	return ec
}

// Submit queues task to run on a worker. A nil error means the task was accepted and will run
// exactly once, even if the pool is stopped or resized afterwards. Submit blocks only while a
// bounded queue ([WithQueueSize]) is full; under [WithNonBlocking] it returns [ErrQueueFull]
// instead. After [Pool.Stop] it returns [ErrStopped]; for a nil task, [ErrNilTask]. On error
// the task was not accepted and never runs.
//
// What the caller did before Submit happens before the task starts; the task may start, and
// even finish, before Submit returns. If the task panics, the panic goes to the panic handler
// ([WithPanicHandler]) and the worker keeps serving.
// Submit allocates nothing beyond the caller's closure, also while a backlog forms and drains
// again: the queue reuses the memory a drained backlog held, until the garbage collector takes
// it back. Pools share that memory, so a pool made after another one stopped does not
// allocate it again.
//
// While many more tasks wait than workers are alive, Submit may yield its processor
// (runtime.Gosched) before it returns, so that a producer far ahead of the workers lets them
// catch up rather than pile up a backlog that every garbage collection has to scan. That is
// not waiting for room: on an unbounded queue Submit never blocks.
func (p *Pool) Submit(task func()) error {
	checkPool(p, "Submit")
	if task == nil {
		return ErrNilTask
	}
	return p.core.submit(funcTask(task), true)
}

// TrySubmit queues task if it can do so without blocking and reports whether it did. It
// returns false when the bounded queue is full, the pool is stopped, or task is nil; the task
// then never runs.
func (p *Pool) TrySubmit(task func()) bool {
	checkPool(p, "TrySubmit")
	return task != nil && p.core.submit(funcTask(task), false) == nil
}

// SubmitContext is [Pool.Submit] that gives up waiting for room in a full queue when ctx
// ends. It then returns an error that matches ctx.Err() under [errors.Is], and the task never
// runs. If ctx has already ended, SubmitContext returns that error at once without accepting
// the task. Called inside a function running on p (or on a sub-pool of p) with the context
// crew gave it, it runs task on the caller where p's full bounded queue would make it wait
// (package documentation, "Waits that help"). The task itself carries no context: once
// accepted it runs.
func (p *Pool) SubmitContext(ctx context.Context, task func()) error {
	checkPool(p, "SubmitContext")
	checkCtx(ctx, "SubmitContext")
	if task == nil {
		return ErrNilTask
	}
	return p.core.submitContext(ctx, funcTask(task), helpable(ctx, p) != nil)
}

// Wait blocks until every task accepted so far has finished, including tasks accepted while
// it waits, and the tasks of its sub-pools, which run as tasks of the pool. The pool stays
// usable. The return of each task synchronizes before the return of
// the Wait call that waits for it. Calling Wait from a task of the same pool (or of a
// sub-pool) never returns, since that task has not finished: to wait inside a task for work
// it gave the pool, use a [Group] made from the task's context (package documentation,
// "Waits that help").
func (p *Pool) Wait() {
	checkPool(p, "Wait")
	p.core.wait()
}

// Stop stops the pool from accepting tasks and returns at once. Tasks already accepted still
// run, on the workers the pool has; submitters blocked on a full queue return [ErrStopped].
// Stop also stops the pool's sub-pools ([Pool.Sub]) and theirs: when any Stop call returns,
// also one concurrent with another, the pool and every sub-pool refuse tasks. A second Stop
// does nothing. It is safe to call from a task.
func (p *Pool) Stop() {
	checkPool(p, "Stop")
	p.halt()
	p.core.unhook()
}

// halt stops p and then its sub-pools. It is also the WithContext hook, which runs on a
// goroutine of its own, possibly while New is still running: it reads nothing that New writes
// after registering it.
//
// Every call stops every sub-pool itself, rather than leaving that to the first: sub-pools
// stay listed until they exit, so a Stop concurrent with another (or with the hook) does not
// return while a sub-pool the other is about to stop still accepts tasks
// (TestStopReturnsAfterSubPoolsAreStopped).
func (p *Pool) halt() {
	p.core.halt()
	for _, c := range p.subs() {
		c.Stop()
	}
}

// StopAndWait stops the pool as [Pool.Stop] does, then waits until every accepted task has
// finished and every worker goroutine of the pool has exited. That includes the tasks of its
// sub-pools ([Pool.Sub]), which run on the pool's workers. Called from a task of the pool, it
// waits for that task too and never returns; [Pool.Stop] is safe there.
func (p *Pool) StopAndWait() {
	checkPool(p, "StopAndWait")
	p.Stop()
	<-p.core.e.Exited()
}

// Shutdown stops the pool as [Pool.Stop] does and waits, like [Pool.StopAndWait], for the accepted
// tasks to finish, but no longer than ctx allows: if ctx ends first it returns ctx.Err(), and then
// stops firmly what it can: the functions given with a context (of [GoContext], groups, [Results],
// [Map], [ForEach], [MapSeq] and [MapSeqUnordered], on the pool or its sub-pools) still queued are
// skipped at once, their futures, groups and calls failing with [ErrStopped] without waiting for a
// worker to reach them, and the contexts of those running end with cause [ErrStopped], so that the
// ones watching their context return. Plain tasks, which carry no context, still run in the
// background. [Pool.StopAndWait] cancels nothing. Shutdown returns nil whenever the pool has
// exited, even if ctx has ended too (a pool stopped and drained earlier, say). It mirrors
// net/http.Server.Shutdown. It panics if ctx is nil, and then stops nothing.
func (p *Pool) Shutdown(ctx context.Context) error {
	checkPool(p, "Shutdown")
	return p.core.shutdown(ctx, p.Stop, func() {
		p.skipQueued()
		p.redispatchTree()
	})
}

// Resize sets the worker limit to maxWorkers and returns at once, without waiting for running
// tasks. From its return [Pool.Stats] reports the new limit and no task starts while that
// many or more run. Growing starts queued tasks at once. Shrinking makes idle workers above
// the limit exit; tasks already running finish, so Running may exceed the new limit until
// they do. No task is lost or run twice. Resize is safe to call from a task. [CPUs] makes the
// limit follow runtime.GOMAXPROCS(0); on a pool made with [WithAdaptiveLimit], Resize sets
// the ceiling the adaptive limit moves under. It panics if maxWorkers is less than 1 (other
// than CPUs).
func (p *Pool) Resize(maxWorkers int) {
	checkPool(p, "Resize")
	p.core.resize(maxWorkers)
}

// Stats returns a consistent snapshot of the pool's counters; see [Stats]. It takes one short
// lock and is safe to call from a task.
func (p *Pool) Stats() Stats {
	checkPool(p, "Stats")
	return p.core.stats()
}

// Sub returns a sub-pool that runs its tasks on p's workers, at most maxWorkers of them at a
// time. Tasks of p and of all its sub-pools together never exceed p's limit, whatever the
// sub-pool's own. A sub-pool has the full [Pool] API: it can be resized, stopped (which
// leaves p and its other sub-pools working) and have sub-pools of its own. Stopping p stops
// its sub-pools; their accepted tasks still run, and p's [Pool.StopAndWait] and
// [Pool.Shutdown] wait for them. maxWorkers may be [CPUs]. It panics if maxWorkers is less
// than 1 (other than CPUs) or an option is out of range.
//
// By default a sub-pool has p's panic handler and task timeout and an unbounded queue, and none of
// p's hooks, histograms (nor their sampling), overflow policy, rate limit or priority. opts may
// bound its queue and choose what a full one does ([WithQueueSize], [WithNonBlocking],
// [WithOverflow], [WithMaxWait], [WithMaxBlocked], [WithDiscardHandler]), give it a priority level
// in p ([WithPriority]), a rate limit ([WithRateLimit]), hooks ([WithHooks]), histograms
// ([WithLatencyHistograms], [WithLatencySample]), a task timeout ([WithTaskTimeout]) or a panic
// handler ([WithPanicHandler]) of its own, tie it to a context ([WithContext]) or let it choose its
// limit ([WithAdaptiveLimit]). [WithMinWorkers] and [WithIdleTimeout] have no effect on it, since
// its workers are p's; WithMinWorkers is still checked against maxWorkers.
//
// A sub-pool's worker is a task of p that runs the sub-pool's queued tasks one after another
// and returns when the queue is empty; it may wait in p's queue like any task of p. p's
// [Stats] count it as one task of p however many tasks of the sub-pool it runs: once in
// Accepted and Waiting while it waits, once in Running while it runs (a sub-pool's worker
// runs one task at a time), once in Completed when it returns. The sub-pool's Stats count its
// tasks themselves, and p's hooks and latency histograms see only p's own tasks. So p's
// Running includes its sub-pools' running tasks, each on one of p's workers, but p's Waiting
// counts a sub-pool with tasks queued as the one worker it waits with in p's queue: the
// tasks queued in the sub-pool itself count in the sub-pool's Waiting. Counting them in p's
// too would make every submit to a sub-pool take the lock of each pool above it; to see a
// tree's backlog, add up its pools' Waiting. A bound on p's queue ([WithQueueSize]) bounds
// the tasks submitted to p: a sub-pool's worker always finds a place in p's queue, also
// beyond the bound, since the sub-pool accepted its tasks already, so p's Waiting may exceed
// the bound by the sub-pools' workers waiting there (at most each sub-pool's limit of them).
func (p *Pool) Sub(maxWorkers int, opts ...Option) *Pool {
	checkPool(p, "Sub")
	base := p.core.cfg
	base.queueSize, base.nonBlocking, base.minWorkers, base.ctx = 0, false, 0, nil
	base.hooks, base.histograms, base.sample = nil, false, 0
	base.clearOverload()
	base.priority, base.adaptiveMin = 0, 0
	c := newConfigFrom(base, "Sub", maxWorkers, opts)
	c.minWorkers, c.idleTimeout = 0, base.idleTimeout // p's workers run its tasks
	child := &Pool{parent: p}
	child.core.self = child
	child.core.hard.init(&p.core.hard)
	ec := poolEngineConfig(c)
	level := c.priority
	ec.Turn = turnIn(p.core.e, level)
	ec.Start = func(first task, since int64, ahead bool) {
		p.core.poke()
		w := &subWorker{e: child.core.e, pool: child, first: first, since: since, n: taskWeight(first), level: level, parent: p.core.e}
		if ahead {
			p.core.e.ForwardAhead(w)
		} else {
			p.core.e.Forward(w)
		}
	}
	ec.Parent = p.core.e
	p.core.e.Hold()
	ec.Exited = func() {
		p.core.e.Release()
		p.forget(child)
		child.core.hard.unfollow()
	}
	// The sub-pool refuses tasks as soon as the WithContext context of p, or of a pool above
	// p, has ended, as p does, rather than only once that context's hook has stopped it.
	child.core.init(c, ec, p.core.watches, child.halt, unobserved)

	p.mu.Lock()
	if p.children == nil {
		p.children = make(map[*Pool]struct{})
	}
	p.children[child] = struct{}{}
	p.level(child, level)
	p.mu.Unlock()
	if p.core.e.Stopped() {
		child.Stop()
	}
	return child
}

// subWorker is one worker of a sub-pool, running as a task of the parent. n is the weight of
// its first task, which it holds in the parent too (see internal/worker/weight.go).
type subWorker struct {
	e      *worker.Engine[task]
	pool   *Pool
	first  task
	since  int64
	n      int
	level  int
	parent *worker.Engine[task]
	relay  bool // the parent counts it as relaying: see worker.Config.Relay
}

func (w *subWorker) run() worker.Outcome {
	if w.n > 1 {
		defer w.parent.Unhold(w.n - 1)
	}
	if w.relay {
		w.e.ServeRelayed(w.first, w.since)
	} else {
		w.e.Serve(w.first, w.since)
	}
	return worker.Completed
}

// unobserved tells a pool's hooks and histograms which tasks they do not see: its sub-pools'
// workers, which run a sub-pool's tasks, which the sub-pool observes, and its keys' turns,
// which report each keyed task themselves.
func unobserved(t task) bool {
	switch t.(type) {
	case funcTask: // the common case, told apart by its type alone
		return false
	case *subWorker:
		return true
	case interface{ observedInside() }:
		return true
	}
	return false
}

// abort is never called: DiscardOldest keeps sub-pool workers and StopNow unpacks them. Were
// it called, the sub-pool's task would end unrun with err.
func (w *subWorker) abort(err error) bool {
	if !w.e.Abandon(w.first) {
		w.first.abort(err)
	}
	return true
}

// core is what Pool and FuncPool share: the engine and the pool's lifecycle around it.
type core[T any] struct {
	e    *worker.Engine[T]
	cfg  config
	self *Pool // the Pool whose core this is; nil for a FuncPool
	hard hard  // canceled by a Shutdown whose context ends first: see life.go
	// watches are the WithContext contexts that the pool's submits check: its own, and for a
	// sub-pool those of the pools above it. Usually none or one.
	watches []ctxWatch
	stopCtx func() bool   // unregisters the WithContext hook
	hooked  chan struct{} // closed when the WithContext hook has returned: see unhook
	unhooks sync.Once     // the first unhook unregisters the hook
	hookRan bool          // set by the first unhook: the hook had started
	obs     *observer[T]  // WithHooks, WithLatencyHistograms, WithAdaptiveLimit; nil without them
	// onSubmit is obs when a Queued or Rejected hook is set, nil otherwise: a submit takes
	// the guarded path of admitObserved only for hooks it must call.
	onSubmit *observer[T]
	sizing   sizing          // Resize and CPUs: see sizing.go
	limit    *adaptive.Limit // WithAdaptiveLimit's; nil without it
	onLimit  func(n int)     // tests: told of each limit the adaptive limit sets
}

// ctxWatch is a WithContext context: done is its Done channel, and halt stops the pool it
// was given to, with the pools below (see Pool.halt).
type ctxWatch struct {
	done <-chan struct{}
	halt func()
}

// ended reports whether one of the watched contexts has ended, and then stops the pools it
// was given to. A non-blocking receive is one atomic load.
func (c *core[T]) ended() bool {
	for _, w := range c.watches {
		select {
		case <-w.done:
			w.halt()
			return true
		default:
		}
	}
	return false
}

// init builds the engine. above are the watches of the pools above a sub-pool. halt stops
// the pool (and its sub-pools): it is the WithContext hook, called at once if the context has
// already ended, so that New returns a stopped pool. skip tells the observer which tasks are
// sub-pools' workers.
//
// The hook is registered last: context.AfterFunc runs it on a goroutine of its own, at once
// if the context ends meanwhile, and it must find the pool built. It must not read stopCtx,
// which is written when AfterFunc returns (TestNewWithEndedContextReturnsAStoppedPool).
func (c *core[T]) init(cfg config, ec worker.Config[T], above []ctxWatch, halt func(), skip func(T) bool) {
	c.cfg = cfg
	if c.obs = newObserver(cfg, skip); c.obs != nil {
		ec.Observer, ec.Sample, ec.Records = c.obs, c.obs.sample(), c.obs.records(cfg)
		if c.obs.watchesSubmits() {
			c.onSubmit = c.obs
		}
	}
	c.e = worker.New(ec)
	if cfg.adaptiveMin > 0 {
		c.limit = newLimit(cfg, ec.MaxWorkers, c.resizeLimit, func() int { return c.e.Counters().Running })
		c.obs.limit = c.limit
	}
	c.sizing.init(c.setLimit, cfg.now, cfg.cpus, ec.MaxWorkers)
	if cfg.rateSet {
		c.e.SetRate(cfg.ratePerSecond, cfg.rateBurst)
	}
	c.watches = slices.Clip(above) // an append copies, leaving the parent's alone
	if cfg.ctx == nil {
		return
	}
	c.watches = append(c.watches, ctxWatch{done: cfg.ctx.Done(), halt: halt})
	if cfg.ctx.Err() != nil {
		halt()
		return
	}
	c.hooked = make(chan struct{})
	c.stopCtx = context.AfterFunc(cfg.ctx, func() {
		defer close(c.hooked)
		halt()
	})
}

// unhook unregisters the WithContext hook of a pool being stopped, so that a long-lived
// context does not keep it reachable. If the hook has started already, it waits for it to
// return: it may still be stopping sub-pools, and StopAndWait, which stops through unhook,
// promises that no goroutine of the pool is left once it returns
// (TestStopAndWaitLeavesNoWithContextHookRunning). The hook never calls unhook of its own
// pool, so it never waits for itself.
func (c *core[T]) unhook() {
	if c.stopCtx == nil {
		return
	}
	c.unhooks.Do(func() { c.hookRan = !c.stopCtx() })
	if c.hookRan {
		<-c.hooked
	}
}

// stats returns the engine's counters and the histograms as Stats.
func (c *core[T]) stats() Stats {
	c.sizing.check()
	s := statsOf(c.e.Counters())
	c.obs.histograms(&s)
	return s
}

func (c *core[T]) wait() {
	if ch := c.e.Drained(); ch != nil {
		<-ch
	}
}

// shutdown checks ctx, stops the pool with stop and waits for it to exit until ctx ends. Past
// that, gaveUp (if any) is called once the queued functions are to be skipped.
func (c *core[T]) shutdown(ctx context.Context, stop, gaveUp func()) error {
	if ctx == nil {
		panic("crew: Shutdown: ctx must not be nil")
	}
	stop()
	// An exited pool reports nil even when ctx has ended too: a select with both ready
	// picks one at random (TestShutdownOfExitedPoolWithEndedContextReturnsNil).
	select {
	case <-c.e.Exited():
		return nil
	case <-ctx.Done():
		select {
		case <-c.e.Exited():
			return nil
		default:
			// Past the deadline: the functions given with a context that are still queued
			// are skipped, and the running ones see their context end (life.go).
			if c.hard.cancel != nil { // a FuncPool's functions carry no context
				c.hard.end()
			}
			if gaveUp != nil {
				gaveUp()
			}
			return ctx.Err()
		}
	}
}

func (c *core[T]) resize(maxWorkers int) { c.sizing.resize(maxWorkers) }

// Stopped reports whether the pool has stopped accepting tasks: after [Pool.Stop],
// [Pool.StopAndWait] or [Pool.Shutdown], its parent's Stop, or the end of the [WithContext]
// context. Once it reports true it always will, and submits return [ErrStopped]. Tasks
// accepted before may still be running: [Pool.Wait] and [Pool.StopAndWait] wait for them. It
// is safe for concurrent use and from a task.
func (p *Pool) Stopped() bool {
	checkPool(p, "Stopped")
	return p.core.stopped()
}

// QueueSize returns the bound on waiting tasks that the pool was built with
// ([WithQueueSize]); 0 means unbounded, a sub-pool's default.
func (p *Pool) QueueSize() int {
	checkPool(p, "QueueSize")
	return p.core.cfg.queueSize
}

// Overflow returns what a blocking submit does when the bounded queue is full, as the pool was
// built ([WithOverflow]; [Reject] under [WithNonBlocking]); [Block] by default, and for a
// sub-pool unless its own options say otherwise.
func (p *Pool) Overflow() Overflow {
	checkPool(p, "Overflow")
	return p.core.cfg.overflow
}

// MinWorkers returns the number of workers kept alive while idle ([WithMinWorkers]); 0 for a
// sub-pool, whose workers are its parent's.
func (p *Pool) MinWorkers() int {
	checkPool(p, "MinWorkers")
	return p.core.cfg.minWorkers
}

// IdleTimeout returns how long a worker above the minimum stays idle before it exits
// ([WithIdleTimeout]); [NoIdleTimeout] means never. A sub-pool reports its parent's: its own
// workers do not wait idle, they return to the parent as soon as its queue is empty.
func (p *Pool) IdleTimeout() time.Duration {
	checkPool(p, "IdleTimeout")
	return p.core.cfg.idleTimeout
}

// stopped reports whether submits are refused with ErrStopped.
func (c *core[T]) stopped() bool {
	// A watched context may have ended a moment before its hook stops the engine; offer
	// already refuses submits then, so the pool is stopped.
	return c.ended() || c.e.Stopped()
}

// subs returns p's sub-pools that have not exited.
func (p *Pool) subs() []*Pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Pool, 0, len(p.children))
	for c := range p.children {
		out = append(out, c)
	}
	return out
}

// forget drops a sub-pool that has exited.
func (p *Pool) forget(c *Pool) {
	p.mu.Lock()
	delete(p.children, c)
	p.mu.Unlock()
}
