package crew

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// A task's life. A function given with a context (of GoContext, Group.Go, Results.Go, Map,
// ForEach, MapSeq and MapSeqUnordered), and a future's function, may be taken by several
// parties while it waits in the queue: the worker that reaches it, a function that waits for
// it and runs it itself (help.go), Future.Cancel, and StopNow or DiscardOldest. Its claim
// decides, by one atomic step, which of them has it, and so which counter of Stats it ends
// in. A party other than a worker leaves the task's place in the queue behind it; the engine
// drops that place when it meets it (worker.Outcome Claimed and Skipped, worker.Config.Take).
//
// The function receives a call: the context of its group or call, marked as given to a
// function of its pool while it runs, which is how a wait made from it knows it may help.

// The states of a claim.
const (
	queued   uint32 = iota // accepted and not yet taken
	taken                  // a worker took it, or its submitter runs it: it runs
	lent                   // a function waiting for it took it, to run it in its own slot
	canceled               // Future.Cancel took it: it never runs
	skipped                // its context had ended when it was taken: it never runs
	removed                // StopNow or DiscardOldest took it out: it never runs
	ended                  // it ran and has returned
)

// claim is the state of a task that several parties may take: see above.
type claim struct{ state atomic.Uint32 }

// begin claims the task for the goroutine about to run it: a worker that took it from the
// queue, or (inline set) its submitter or a function that lent it its slot (help.go). It
// returns Completed when the function is to run; Skipped when ctx (nil for none) had ended,
// with first set if this call decided it (the caller then fails the function with ctx's
// cause) or when it was canceled; Claimed when another party took it and counted it. It may
// be called twice for one run (worker.Config.Begin, then the task's run): the second call
// returns what the first did, with first false.
func (c *claim) begin(s scope, inline bool) (o worker.Outcome, first bool) {
	// The compare-and-swap comes first, without a load before it: the task's line was just
	// written by its submitter, and a load would fetch it once to read and again to write.
	next := taken
	if s.skipping() {
		next = skipped
	}
	if c.state.CompareAndSwap(queued, next) {
		if next == skipped {
			return worker.Skipped, true
		}
		return worker.Completed, false
	}
	switch c.state.Load() {
	case taken:
		return worker.Completed, false
	case lent:
		if inline {
			return worker.Completed, false
		}
		return worker.Claimed, false
	case canceled, skipped:
		return worker.Skipped, false
	default: // ended by the function that lent it its slot
		return worker.Claimed, false
	}
}

// lend claims the queued task for a function waiting for it (help.go). It reports whether the
// task is now the waiter's to run; skip is set when ctx had ended and this call claimed the
// task as skipped: the caller fails the function with ctx's cause, and the worker that
// reaches its place counts it.
func (c *claim) lend(s scope) (ok, skip bool) {
	if c.state.Load() != queued {
		return false, false
	}
	if s.skipping() {
		return false, c.state.CompareAndSwap(queued, skipped)
	}
	return c.state.CompareAndSwap(queued, lent), false
}

// take is worker.Config.Take for a task with a claim: see there.
func (c *claim) take() (worker.Outcome, bool) {
	if c.state.CompareAndSwap(queued, removed) {
		return worker.Completed, false
	}
	switch c.state.Load() {
	case canceled, skipped:
		return worker.Skipped, true
	default:
		return worker.Claimed, true
	}
}

// running reports whether the function is running: a call made from its context may lend its
// slot (help.go).
func (c *claim) running() bool {
	st := c.state.Load()
	return st == taken || st == lent
}

// A claimer is a task with a claim: a function given with a context (a group's, a Results',
// a ForEach call, a MapSeq call, GoContext's) or a future's. Each kind says what differs;
// runClaimer, beginClaimer and lendClaimer do the rest, the same for all.
type claimer interface {
	claimed() *claim
	// scope returns the context whose end skips the function (nil for none: Go's), the one
	// the caller gave, and its pool, whose Shutdown may skip it too.
	scope() scope
	// labels returns the context whose pprof labels the function runs under on a worker, or
	// nil.
	labels() context.Context
	// fail ends the function unrun, with err as its outcome.
	fail(err error)
	// call runs the function, once claimed, and ends it with what it returned.
	call()
}

// runClaimer runs t on a worker (inline false: under its labels) or on its submitter or a
// waiting function that lends its slot (inline: the caller's labels stay), once begin has
// claimed it.
func runClaimer(t claimer, inline bool) worker.Outcome {
	if o := beginClaimer(t, inline); o != worker.Completed {
		return o
	}
	if !inline {
		if ctx := t.labels(); ctx != nil {
			defer labelled(ctx)()
		}
	}
	t.call()
	return worker.Completed
}

// beginClaimer is claim.begin for t, failing its function with its context's cause when this
// call decided to skip it.
func beginClaimer(t claimer, inline bool) worker.Outcome {
	s := t.scope()
	o, first := t.claimed().begin(s, inline)
	if first {
		t.fail(s.cause())
	}
	return o
}

// lendClaimer is claim.lend for t, failing its function with its context's cause when it
// claimed it as skipped.
func lendClaimer(t claimer) bool {
	s := t.scope()
	ok, skip := t.claimed().lend(s)
	if skip {
		t.fail(s.cause())
	}
	return ok
}

// beginTask is a Pool engine's worker.Config.Begin, asked for each task on an observed pool:
// a plain task, the common case, is told apart by its type alone, which costs less than the
// lookup of an interface.
func beginTask(t task) worker.Outcome {
	switch t := t.(type) {
	case funcTask:
		return worker.Completed
	case claimer:
		return beginClaimer(t, false)
	}
	return worker.Completed
}

// doomedTask is a Pool engine's worker.Config.Doomed: a task with a claim that another party
// has taken, or that will be skipped when taken (its context ended, or a Shutdown gave up).
// Both stay so once true. A sub-pool's worker forwarded to its parent is doomed when the
// task it carries is: it starts nothing but that task's skip.
func doomedTask(t task) bool {
	c, ok := carried(t).(claimer)
	if !ok {
		return false
	}
	if c.claimed().state.Load() != queued {
		return true
	}
	return c.scope().skipping()
}

// takeTask is a Pool engine's worker.Config.Take.
func takeTask(t task) (worker.Outcome, bool) {
	if c, ok := t.(claimer); ok {
		return c.claimed().take()
	}
	return worker.Completed, false
}

// call is the context crew gives one function: the context of its group or call, marked as
// that of a running function of pool p (see help.go). The claim is the function's.
type call struct {
	context.Context
	pool *Pool
	claim
	// returned is set once the function has returned and a Context hook's end function is
	// still to run, its error kept in endOutcomes (enter.call). A bool fits beside the claim
	// in the struct's padding: a field for the error would take every group function's
	// allocation to the next size class.
	returned bool
}

// endOutcomes holds the errors of the functions whose Context hook's end function is running,
// keyed by their call: an end that calls runtime.Goexit leaves the error for goexited. Only a
// pool with a Context hook that returns an end function uses it.
var endOutcomes sync.Map // *call → error

// goexited is the outcome of c's function when runtime.Goexit ended its goroutine: what the
// function returned, if the Goexit came after, from a Context hook's end function, which
// "ends the goroutine it runs on ... and nothing else"; errGoexit otherwise.
func (c *call) goexited() error {
	if c.returned {
		v, _ := endOutcomes.LoadAndDelete(c)
		err, _ := v.(error)
		return err
	}
	return errGoexit
}

// callKey is the key under which a call finds itself among a context's values.
type callKey struct{}

// Value returns c for callKey, and otherwise what c's context holds.
func (c *call) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// String names c as the context packages' own do.
func (c *call) String() string { return fmt.Sprintf("%v.WithCrewTask", c.Context) }

// invoke runs fn with c as its context, through e (the Context hook), under the pool's task
// timeout if it has one; c's function counts as running until fn has returned.
func (c *call) invoke(e enter, fn func(context.Context) error) error {
	defer c.state.Store(ended)
	if d := c.pool.core.cfg.taskTimeout; d > 0 {
		ctx, cancel := context.WithTimeoutCause(c, d, &taskTimeoutError{d})
		defer cancel()
		return e.call(c, ctx, fn)
	}
	return e.call(c, c, fn)
}

// ErrTaskTimeout is the cause ([context.Cause]) of a function's context that ended because the
// function ran longer than [WithTaskTimeout] allows. The cause also matches
// [context.DeadlineExceeded] under [errors.Is], and names the timeout.
var ErrTaskTimeout = errors.New("crew: task timeout exceeded")

// taskTimeoutError is the cause of a context ended by WithTaskTimeout.
type taskTimeoutError struct{ d time.Duration }

func (e *taskTimeoutError) Error() string {
	return fmt.Sprintf("crew: the function ran longer than its task timeout of %v", e.d)
}

func (e *taskTimeoutError) Is(target error) bool {
	return target == ErrTaskTimeout || target == context.DeadlineExceeded
}

// WithTaskTimeout gives the context crew passes to each function given with a context (of
// [GoContext], [Group.Go], [Results.Go], [Map], [ForEach], [MapSeq] and [MapSeqUnordered]) a
// deadline d after that function starts. Its [context.Cause] is then an error that matches
// [ErrTaskTimeout] and [context.DeadlineExceeded] and names d. The function is not stopped:
// like any function given a context, it should watch it and return. Plain tasks, which
// receive no context, and [Go]'s functions are unaffected. A sub-pool ([Pool.Sub]) has its
// parent's task timeout unless given its own. It panics if d is not positive.
func WithTaskTimeout(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("crew: WithTaskTimeout: d must be > 0, got %v", d))
	}
	return func(c *config) { c.taskTimeout = d }
}

// skipping reports whether the function is to be skipped: ctx (nil for none) or given has
// ended, or a Shutdown of p or of a pool above it gave up waiting (hard). The last is checked
// apart from ctx, whose end follows it a moment later (context.AfterFunc runs on a goroutine
// of its own).
func (s scope) skipping() bool {
	return s.ctx != nil && (s.ctx.Err() != nil || s.given.Err() != nil || s.p.hardStopped())
}

// cause is the error a skipped function fails with.
func (s scope) cause() error {
	switch {
	case s.ctx.Err() != nil:
		return context.Cause(s.ctx)
	case s.given.Err() != nil:
		return context.Cause(s.given)
	case s.p.hardStopped():
		return ErrStopped
	}
	return context.Cause(s.ctx)
}

// scope is where a function given with a context is decided to be skipped: ctx, whose end
// skips it (nil for none: Go's); given, the context the caller gave, which ctx is derived
// from; and p, the pool it was given to. given is asked too because package context closes a
// context's Done before it ends the contexts derived from it: a caller that saw given end
// must not see the function run.
type scope struct {
	ctx, given context.Context
	p          *Pool
}

// hardStopped reports whether a Shutdown of p or of a pool above it gave up waiting.
func (p *Pool) hardStopped() bool {
	for q := p; q != nil; q = q.parent {
		if q.core.hard.ended.Load() {
			return true
		}
	}
	return false
}

// hard is the context a pool cancels, with cause ErrStopped, when a Shutdown's context ends
// before the pool has drained: the contexts of the groups and calls on the pool follow it
// (follow), so their queued functions are skipped and running ones see it end. A sub-pool's
// follows its parent's.
type hard struct {
	ended    atomic.Bool // set before ctx is canceled, for skipping
	ctx      context.Context
	cancel   context.CancelCauseFunc
	unfollow func() bool // a sub-pool's: stops following its parent's, once it has exited
}

// init makes h, following above's (nil for a root pool).
func (h *hard) init(above *hard) {
	h.ctx, h.cancel = context.WithCancelCause(context.Background())
	h.unfollow = func() bool { return false }
	if above != nil {
		h.unfollow = above.follow(h.cancel)
	}
}

// end marks h ended and cancels its context: see Pool.Shutdown.
func (h *hard) end() {
	h.ended.Store(true)
	h.cancel(ErrStopped)
}

// follow makes cancel, which cancels the context of a group or call, run with ErrStopped
// when h ends. The returned function unregisters it, once the group or call is done.
func (h *hard) follow(cancel context.CancelCauseFunc) (stop func() bool) {
	return context.AfterFunc(h.ctx, func() { cancel(ErrStopped) })
}
