package crew

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Overflow says what a blocking submit ([Pool.Submit], [FuncPool.Invoke], and the submits of
// [Go], [Group.Go], [Results.Go], [Map] and [ForEach]) does when the bounded queue
// ([WithQueueSize]) is full. Set it with [WithOverflow]. Non-blocking submits
// ([Pool.TrySubmit], [FuncPool.TryInvoke]) never run a task inline and never drop another
// one: they report false on a full queue whatever the policy. On an unbounded queue the
// policy never comes into play.
type Overflow int

// The overflow policies.
const (
	// Block waits for room (the default). [WithMaxWait] bounds the wait, after which the
	// submit returns [ErrQueueFull]; [WithMaxBlocked] bounds how many submitters wait.
	Block Overflow = iota
	// Reject returns [ErrQueueFull] at once; [WithNonBlocking] is shorthand for it.
	Reject
	// CallerRuns runs the task on the submitting goroutine, then returns nil. The task runs
	// with no lock of the pool held, so workers keep draining the queue meanwhile, and it does
	// not count against MaxWorkers. It counts in [Stats] Accepted, Completed or Panicked and
	// CallerRan once it has ended (not in Running while it runs), and [Pool.Wait] does not
	// wait for it. A plain task's panic goes to the panic handler, called on the submitter;
	// the panic of a [Go], [Group] or [Map] function goes to its Wait as always. A task that
	// submits into its own full pool runs the new task itself instead of deadlocking. With
	// [WithMaxWait] the submitter first waits up to that long for room; with [WithMaxBlocked],
	// a submitter that finds that many already waiting runs its task at once.
	CallerRuns
	// DiscardOldest accepts the task and drops the one that has waited longest, which never
	// runs: a dropped plain task (or [FuncPool] argument) goes to the discard handler
	// ([WithDiscardHandler]), and a dropped [Go], [Group], [Results], [Map] or [ForEach]
	// function fails with [ErrDiscarded], so its Wait returns. Every drop counts in
	// [Stats].Discarded; without a handler, that count is all that records a dropped plain
	// task. A sub-pool's worker waiting in its parent's queue is never dropped: when it is the
	// oldest, the submit waits for room as under Block.
	DiscardOldest
)

// overload holds the settings of this file's options.
type overload struct {
	overflow      Overflow
	maxWait       time.Duration
	limitBlocked  bool
	maxBlocked    int
	discard       func(v any)
	rateSet       bool
	ratePerSecond float64
	rateBurst     int
}

// clearOverload drops the settings a sub-pool does not inherit from its parent.
func (o *overload) clearOverload() { *o = overload{} }

// WithOverflow sets what a blocking submit does when the bounded queue is full; see
// [Overflow]. The default is [Block]. It panics if o is not one of the policies.
func WithOverflow(o Overflow) Option {
	if o < Block || o > DiscardOldest {
		panic(fmt.Sprintf("crew: WithOverflow: unknown policy %d", int(o)))
	}
	return func(c *config) { c.overflow, c.nonBlocking = o, o == Reject }
}

// WithMaxWait bounds how long a blocking submit waits for room in a full queue: under
// [Block] it then returns [ErrQueueFull] (the task was not accepted and never runs); under
// [CallerRuns] it runs the task itself. A timer is made only for a submit that has to wait.
// 0, the default, waits without a bound. It panics if d is negative.
func WithMaxWait(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("crew: WithMaxWait: d must be >= 0, got %v", d))
	}
	return func(c *config) { c.maxWait = d }
}

// WithMaxBlocked lets at most n submitters wait for room in a full queue at a time; the next
// one returns [ErrQueueFull] at once (under [CallerRuns], runs its task itself). It panics if
// n is negative.
func WithMaxBlocked(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("crew: WithMaxBlocked: n must be >= 0, got %d", n))
	}
	return func(c *config) { c.limitBlocked, c.maxBlocked = true, n }
}

// WithDiscardHandler sets the function that receives each plain task [DiscardOldest] drops:
// the func() given to [Pool.Submit], or the argument given to [FuncPool.Invoke]. It runs on
// the submitter whose task took the dropped one's place, with no lock of the pool held,
// before that submit returns. A handler that panics is reported to the panic handler and the
// submit still returns nil. nil removes the handler.
func WithDiscardHandler(h func(v any)) Option {
	return func(c *config) { c.discard = h }
}

// WithRateLimit limits how fast tasks start: at most burst at once, and perSecond a second on
// average; over any window of length T, at most burst + perSecond·T tasks start. Submits are
// never limited: a task held back waits in the queue, never on a worker, and starts when its
// turn and a token come. The limit starts with a full burst. A pool's limit also counts the
// starts of its sub-pools' tasks (and, conservatively, of their workers). It panics unless
// perSecond > 0 and burst >= 1. See [Pool.SetRateLimit] to change it.
func WithRateLimit(perSecond float64, burst int) Option {
	checkRate("WithRateLimit", perSecond, burst)
	return func(c *config) {
		c.rateSet = !math.IsInf(perSecond, 1)
		c.ratePerSecond, c.rateBurst = perSecond, burst
	}
}

func checkRate(caller string, perSecond float64, burst int) {
	if !(perSecond > 0) || burst < 1 {
		panic(fmt.Sprintf("crew: %s: need perSecond > 0 and burst >= 1, got %v and %d", caller, perSecond, burst))
	}
}

// discarder returns the engine's Discard for c: an internal task fails with ErrDiscarded; a
// plain one goes to the handler, whose panic goes to the panic handler.
func discarder[T any](c config) func(T) {
	h, ph := c.discard, c.panicHandler
	return func(v T) {
		if t, ok := any(v).(task); ok {
			if hd, ok := t.(holder); ok {
				for _, f := range hd.unpack() {
					callHandler(h, any(f), ph)
				}
				return
			}
			if t.abort(ErrDiscarded) {
				return
			}
			if f, ok := t.(funcTask); ok {
				v := any((func())(f))
				callHandler(h, v, ph)
				return
			}
		}
		callHandler(h, any(v), ph)
	}
}

func callHandler(h func(any), v any, ph func(any, []byte)) {
	if h == nil {
		return
	}
	// catch, not recover alone, so that a panic(nil) under GODEBUG=panicnil=1 is reported.
	if pe := catch(func() { h(v) }); pe != nil {
		ph(pe.Value, pe.Stack)
	}
}

// keepSubWorker is the engine's Keep: DiscardOldest must not drop a sub-pool's worker.
func keepSubWorker[T any](v T) bool {
	_, ok := any(v).(*subWorker)
	return ok
}

// StopNow stops the pool as [Pool.Stop] does, then takes every accepted task that has not
// started out of the queue and returns the plain ones, in the order they would have started;
// they never run. It includes the tasks of the pool's sub-pools ([Pool.Sub]) and of theirs,
// at any depth, after the pool's own. Functions of [Go], [Group], [Results], [Map] and
// [ForEach] taken out fail with [ErrStopped], so their Wait returns. Tasks already running go
// on; StopNow does not wait for them. After Stop, StopNow still takes out what is queued; a
// paused pool's backlog is abandoned this way. Submitters blocked on a full queue return
// [ErrStopped]. Every accepted task either runs exactly once or is returned (or failed) by
// StopNow, never both. It is safe to call from a task and concurrently with any other method.
func (p *Pool) StopNow() []func() {
	// Take the backlog out before Stop, which would resume a paused pool and start it, and
	// again after, for what was accepted in between. Taking a sub-pool's worker out frees its
	// slot, and the sub-pool may then start its next queued task on a new worker, which waits
	// in an ancestor's queue in turn: so after Stop, when nothing new is accepted, passes go on
	// until one takes nothing out.
	out, _ := p.takeOut(nil)
	p.Stop()
	for took := true; took; {
		out, took = p.takeOut(out)
	}
	return out
}

// takeOut takes p's queued tasks out, and its sub-pools', appends the plain ones to out and
// fails the others with ErrStopped (see StopNow). It reports whether it took anything out.
func (p *Pool) takeOut(out []func()) ([]func(), bool) {
	took := false
	// This pool's workers waiting in the queues of the pools above hold its oldest tasks: in
	// the parent's queue, and inside the workers of the pools between, in the queues above.
	for above := p.parent; above != nil; above = above.parent {
		for _, t := range above.core.e.RemoveIf(func(t task) bool { return carries(t, p) }) {
			out = keep(out, unpackWorker(t))
			took = true
		}
	}
	out, drained := p.drain(out)
	return out, took || drained
}

// carries reports whether t is a worker of a sub-pool that runs, directly or through the
// workers of the sub-pools between, a worker of p.
func carries(t task, p *Pool) bool {
	for {
		w, ok := t.(*subWorker)
		if !ok {
			return false
		}
		if w.pool == p {
			return true
		}
		t = w.first
	}
}

// unpackWorker returns the task that t, if it is a sub-pool's worker taken out of its parent's
// queue unrun, was started for, telling each pool on the way that the worker will not run. A
// worker's task is itself a worker when the sub-pool has sub-pools of its own, one level per
// generation: a sub-pool's first task travels up to the root pool's queue inside them
// (TestStopNowReturnsTasksOfSubPoolsOfSubPools).
func unpackWorker(t task) task {
	for {
		w, ok := t.(*subWorker)
		if !ok {
			return t
		}
		w.e.Abandon(w.first)
		t = w.first
	}
}

// drain takes p's queued tasks, and then its sub-pools', out, appends the plain ones to out
// and fails the others with ErrStopped. It reports whether it took anything out.
func (p *Pool) drain(out []func()) ([]func(), bool) {
	removed := p.core.e.Remove()
	for _, t := range removed {
		out = keep(out, unpackWorker(t))
	}
	took := len(removed) > 0
	for _, c := range p.subs() {
		var drained bool
		out, drained = c.drain(out)
		took = took || drained
	}
	return out, took
}

func keep(out []func(), t task) []func() {
	if h, ok := t.(holder); ok {
		return append(out, h.unpack()...)
	}
	if !t.abort(ErrStopped) {
		out = append(out, t.(funcTask))
	}
	return out
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

// wakeSubs lets p's sub-pools, and theirs, start what p no longer holds back.
func (p *Pool) wakeSubs() {
	for _, c := range p.subs() {
		c.core.e.Redispatch()
		c.wakeSubs()
	}
}

// Pause stops tasks of the pool, and of its sub-pools, from starting until [Pool.Resume]:
// once Pause has returned, none starts. Tasks already running go on. Submits are still
// accepted and wait in the queue (a bounded queue fills, and then the overflow policy
// applies); [Pool.Wait] waits for them, so it does not return while tasks are queued on a
// paused pool. [Pool.Stop], [Pool.StopAndWait] and [Pool.Shutdown] resume the pool, since
// every accepted task must still run; [Pool.StopNow] abandons a paused backlog instead.
// Pause is idempotent, does nothing once the pool is stopped (a stopped pool runs its
// accepted tasks to the end), and is safe to call from a task and concurrently with any other
// method.
func (p *Pool) Pause() { p.core.e.Pause() }

// PauseAndWait pauses the pool as [Pool.Pause] does, then waits until none of its tasks runs
// (its sub-pools' included, as they run on its workers). If ctx ends first it returns
// ctx.Err(), and the pool stays paused. Called from a task of the pool, it waits for that task
// too, and so returns only when ctx ends.
func (p *Pool) PauseAndWait(ctx context.Context) error { return p.core.pauseAndWait(ctx) }

// Resume lets the tasks of a paused pool, and of its sub-pools, start again, in queue order.
// Resuming a pool that is not paused does nothing. A sub-pool resumed while its parent is
// paused stays held back by the parent.
func (p *Pool) Resume() { p.core.e.Resume() }

// SetRateLimit sets the limit on how fast tasks start, as [WithRateLimit] does; perSecond
// math.Inf(1) removes it. The tokens already saved are kept, up to the new burst; a new limit
// starts with a full burst. Tasks the change allows start at once. It panics unless perSecond
// > 0 and burst >= 1.
func (p *Pool) SetRateLimit(perSecond float64, burst int) { p.core.setRate(perSecond, burst) }

// StopNow stops the pool as [Pool.StopNow] does and returns the arguments of the calls that
// had not started, in the order they would have started; those calls never happen.
func (p *FuncPool[T]) StopNow() []T {
	out := p.core.e.Remove()
	p.Stop()
	return append(out, p.core.e.Remove()...)
}

// Pause stops calls from starting until Resume; see [Pool.Pause].
func (p *FuncPool[T]) Pause() { p.core.e.Pause() }

// PauseAndWait pauses the pool and waits until no call runs, or ctx ends; see
// [Pool.PauseAndWait].
func (p *FuncPool[T]) PauseAndWait(ctx context.Context) error { return p.core.pauseAndWait(ctx) }

// Resume lets calls start again; see [Pool.Resume].
func (p *FuncPool[T]) Resume() { p.core.e.Resume() }

// SetRateLimit sets the limit on how fast calls start; see [Pool.SetRateLimit].
func (p *FuncPool[T]) SetRateLimit(perSecond float64, burst int) { p.core.setRate(perSecond, burst) }

func (c *core[T]) pauseAndWait(ctx context.Context) error {
	if ctx == nil {
		panic("crew: PauseAndWait: ctx must not be nil")
	}
	c.e.Pause()
	ch := c.e.Quiet()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *core[T]) setRate(perSecond float64, burst int) {
	if !math.IsInf(perSecond, 1) {
		checkRate("SetRateLimit", perSecond, burst)
	}
	c.e.SetRate(perSecond, burst)
}
