package crew

import (
	"fmt"
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// Overflow says what a blocking submit ([Pool.Submit], [FuncPool.Invoke], and the submits of
// [Go], [Group.Go], [Results.Go], [Map] and [ForEach]) does when the bounded queue
// ([WithQueueSize]) is full. Set it with [WithOverflow]. Non-blocking submits
// ([Pool.TrySubmit], [FuncPool.TryInvoke]) never run a task inline and never drop another
// one: they report false on a full queue whatever the policy. On an unbounded queue the
// policy never comes into play.
type Overflow int

// The overflow policies. Their values are the engine's, which defines them once.
const (
	// Block waits for room (the default). [WithMaxWait] bounds the wait, after which the
	// submit returns [ErrQueueFull]; [WithMaxBlocked] bounds how many submitters wait.
	Block Overflow = Overflow(worker.Block)
	// Reject returns [ErrQueueFull] at once; [WithNonBlocking] is shorthand for it.
	Reject Overflow = Overflow(worker.Reject)
	// CallerRuns runs the task on the submitting goroutine, then returns nil. The task runs
	// with no lock of the pool held, so workers keep draining the queue meanwhile, and it does
	// not count against MaxWorkers. It starts only when a worker's start could: while the
	// pool or a pool above it is paused ([Pool.Pause]), the submitter waits for
	// [Pool.Resume], and under a rate limit ([WithRateLimit], its own or a parent's) for a
	// token. A [Pool.SubmitContext] whose context ends meanwhile returns its error, and a
	// submit that a stop overtakes meanwhile returns [ErrStopped]; either way the task never
	// runs. It counts in [Stats] Accepted, Completed or Panicked and
	// CallerRan once it has ended (not in Running while it runs), and [Pool.Wait] does not
	// wait for it. A plain task's panic goes to the panic handler, called on the submitter;
	// the panic of a [Go], [Group] or [Map] function goes to its Wait as always. A task that
	// submits into its own full pool runs the new task itself instead of deadlocking. With
	// [WithMaxWait] the submitter first waits up to that long for room; with [WithMaxBlocked],
	// a submitter that finds that many already waiting runs its task at once.
	CallerRuns Overflow = Overflow(worker.CallerRuns)
	// DiscardOldest accepts the task and drops the one that has waited longest, which never
	// runs: a dropped plain task (or [FuncPool] argument) goes to the discard handler
	// ([WithDiscardHandler]), and a dropped [Go], [Group], [Results], [Map] or [ForEach]
	// function fails with [ErrDiscarded], so its Wait returns. Every drop counts in
	// [Stats].Discarded; without a handler, that count is all that records a dropped plain
	// task. A sub-pool's worker waiting in its parent's queue is never dropped. With
	// sub-pools of other priority levels ([WithPriority]), each level waits in a queue of its
	// own, and the task dropped is the longest-waiting of the lowest level whose
	// longest-waiting task is not a sub-pool's worker; when every level's is, the submit
	// waits for room as under Block.
	DiscardOldest Overflow = Overflow(worker.DiscardOldest)
)

// overload holds the settings of the overload options: this file's, and the rate limit's
// (rate.go).
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

// handlerOf returns a FuncPool's Discard for c: the argument goes to the handler, whose panic
// goes to the panic handler, whatever its type (a *Future given as an argument is the
// caller's value, not a task of a pool: TestAdvFKDiscardedFutureArgumentGoesToTheHandler).
func handlerOf[T any](c config) func(T) {
	h, ph := c.discard, c.panicHandler
	return func(v T) { callHandler(h, any(v), ph) }
}

// discarder returns a Pool's Discard for c: an internal task fails with ErrDiscarded; a
// plain one goes to the handler, whose panic goes to the panic handler.
func discarder(c config) func(task) {
	h, ph := c.discard, c.panicHandler
	return func(t task) {
		if hd, ok := t.(holder); ok {
			fs, told := hd.unpack(true)
			for _, f := range fs {
				callHandler(h, any(f), ph)
			}
			if told != nil {
				told() // after the handler, as the engine tells of its own tasks
			}
			return
		}
		if t.abort(ErrDiscarded) {
			return
		}
		if f, ok := t.(funcTask); ok {
			callHandler(h, any((func())(f)), ph)
			return
		}
		callHandler(h, any(t), ph)
	}
}

func callHandler(h func(any), v any, ph func(any, []byte)) {
	if h == nil {
		return
	}
	// catch, not recover alone, so that a panic(nil) under GODEBUG=panicnil=1 is reported.
	if pe := catch(func() { h(v) }); pe != nil {
		report(ph, pe)
	}
}

// keepSubWorker is the engine's Keep: DiscardOldest must not drop a sub-pool's worker.
func keepSubWorker(t task) bool {
	_, ok := t.(*subWorker)
	return ok
}
