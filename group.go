package crew

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/crewgo/crew/internal/worker"
)

// Group runs functions on a pool as one unit of work: the first error cancels the group's
// context, and [Group.Wait] returns that error once every function has returned. Build one
// with [Pool.Group], or with [Pool.GroupAll] for a group that runs every function to the end
// and returns every error; the zero Group is not usable.
//
// A Group is safe for concurrent use. Many groups may share one pool, each with its own
// context; a group on a sub-pool ([Pool.Sub]) runs at most the sub-pool's limit of functions
// at a time.
type Group struct {
	p      *Pool
	ctx    context.Context
	given  context.Context // the context ctx is derived from: see scope (life.go)
	cancel context.CancelCauseFunc
	all    bool // made by GroupAll: errors are collected and cancel nothing
	// labels: ctx carries pprof labels, which the functions run under (labels.go); enter is
	// the pool's Context hook, or nil.
	labels bool
	enter  enter
	// unfollow stops the group's context from following the pool's Shutdown (life.go); h
	// lends the slot of the function the group was made in, if any, to its waits (help.go).
	unfollow func() bool
	h        helper
	// running counts the functions accepted and not yet returned. It is not a sync.WaitGroup:
	// Go may be called while Wait waits, and after Wait returned, and a WaitGroup allows
	// neither (an Add from zero concurrent with Wait is a race, and a reuse before Wait has
	// returned panics). See done and await; TestGroupGoConcurrentWithWaitIsSafe guards it.
	running atomic.Int64

	mu   sync.Mutex
	err  error
	seq  uint64        // GroupAll: the number of the last Go or TryGo call that took effect
	errs []seqError    // GroupAll: every error, with the number of the call it belongs to
	idle chan struct{} // made by a Wait that finds functions running, closed when none is
}

// seqError is an error of a GroupAll group and the number of the Go call it belongs to.
type seqError struct {
	seq uint64
	err error
}

// Group returns a new group that runs its functions on p, and the context they receive: it is
// derived from ctx and canceled at the first error, with that error as its [context.Cause], or
// when Wait returns. Each function receives a context of its own derived from it (see
// [WithTaskTimeout]); a function still queued when the group's context ends is skipped.
//
// Made inside a function running on p (or on a sub-pool of p), from the context crew gave that
// function, the group's Wait runs the group's functions that no worker has taken yet itself,
// in the slot the waiting function holds, and Go runs a function itself where p's full
// bounded queue would make it wait: nested groups of any depth complete, even on a pool of
// one worker. See the package documentation, "Waits that help".
func (p *Pool) Group(ctx context.Context) (*Group, context.Context) {
	checkPool(p, "Group")
	checkCtx(ctx, "Group")
	g := new(Group)
	return g, g.init(p, ctx)
}

// GroupAll returns a new group that runs every function to the end, whatever the others
// return, and the context they receive: derived from ctx, it is canceled when Wait returns or
// when ctx ends, never by a function's error. [Group.Wait] returns [errors.Join] of every
// error (the functions' errors and panics, and the refusals of [Group.Go]) in the order the
// Go calls took effect, or nil if there was none. Go, TryGo and Wait otherwise behave as for
// a group made by [Pool.Group].
func (p *Pool) GroupAll(ctx context.Context) (*Group, context.Context) {
	checkPool(p, "GroupAll")
	checkCtx(ctx, "GroupAll")
	g := &Group{all: true}
	return g, g.init(p, ctx)
}

// init sets g up to run on p with a context derived from ctx, and returns that context.
func (g *Group) init(p *Pool, ctx context.Context) context.Context {
	g.p, g.given = p, ctx
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	g.unfollow = p.core.hard.follow(g.cancel)
	g.h.init(ctx, p)
	g.labels = hasLabels(ctx)
	g.enter = p.core.obs.enter()
	return g.ctx
}

// Go runs fn on the group's pool with the group's context. Like [Pool.Submit], it blocks only
// while a bounded queue is full. A function whose group's context has ended before a worker
// takes it (the first error canceled it, the context the group was made from ended, or
// Wait returned) never runs: it is skipped, counted in [Stats].Skipped, and the context's
// [context.Cause] is its error. So once a function fails, the functions still queued are
// skipped; a group made by [Pool.GroupAll], whose context no error cancels, runs them all. A
// function that has started runs to its end, and should watch its context to return early. If
// the pool does not accept fn (it is stopped, or its non-blocking queue is full), fn never runs
// and the refusal ([ErrStopped], [ErrQueueFull]) counts as the group's error, as does
// [ErrNilTask] for a nil fn. A panic in fn is the group's error as a [*PanicError].
//
// In a group made from the context crew gave a function running on the pool, Go runs fn on the
// calling goroutine where the pool's full bounded queue would make it wait (counted in
// [Stats].CallerRan). A group made outside any function of the pool cannot tell who calls Go: a
// function of the pool that calls Go on it while the bounded queue is full blocks, as Submit
// would, and if every worker does so at once they all wait for ever. Make the group inside the
// function, from its context: see the package documentation, "Waits that help".
//
// Go after Wait has returned skips fn, the group's context being canceled; a later Wait
// returns its cause. Go allocates one task per call.
func (g *Group) Go(fn func(ctx context.Context) error) {
	seq := g.number()
	if fn == nil {
		g.fail(seq, ErrNilTask)
		return
	}
	g.submit(g.task(fn, seq), seq)
}

// TryGo runs fn as [Group.Go] does if the group's pool accepts it without blocking, and
// reports whether it did. It never blocks, so a function of the group may call it on its own
// pool. It returns false when the pool's bounded queue is full, the pool is stopped, or fn is
// nil; fn then never runs, and the refusal is not the group's error: the group, its context
// and what Wait returns are as if TryGo had not been called. A function that TryGo accepted
// runs as one accepted by Go: its error or panic is the group's.
func (g *Group) TryGo(fn func(ctx context.Context) error) bool {
	if fn == nil {
		return false
	}
	g.running.Add(1)
	t := g.task(fn, g.number())
	if g.p.core.submit(t, false) != nil {
		g.done()
		return false
	}
	if g.h.helps() {
		g.h.add(t.(lendable))
	}
	return true
}

// number numbers a Go or TryGo call of a GroupAll group, in the order the calls take effect;
// other groups need no numbers and get 0.
func (g *Group) number() uint64 {
	if !g.all {
		return 0 // inlined into Go: a plain group's calls pay one test
	}
	return g.next()
}

// next numbers a call of a GroupAll group: see number.
func (g *Group) next() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	return g.seq
}

// submit runs t, whose Go call is numbered seq, on the group's pool, counting it until it is
// done.
func (g *Group) submit(t task, seq uint64) {
	g.running.Add(1)
	g.launch(t, seq)
}

// launch offers t, already counted and of the Go call numbered seq, to the group's pool; a
// refusal is the group's error and ends the count of t.
func (g *Group) launch(t task, seq uint64) {
	if !g.h.helps() {
		if err := g.p.core.submit(t, true); err != nil {
			g.fail(seq, err)
			g.done()
		}
		return
	}
	if err := g.p.core.result(g.p.core.admit(t, true, nil, true), nil); err != nil {
		g.fail(seq, err)
		g.done()
		return
	}
	g.h.add(t.(lendable))
}

// launchContext counts t and offers it to the group's pool, waiting for room in a full
// bounded queue until ctx ends. It reports whether the pool accepted t. If not, t is no
// longer counted and never runs: ctx ended first, or the pool refused t and the refusal is
// the group's error.
func (g *Group) launchContext(ctx context.Context, t task) bool {
	g.running.Add(1)
	switch r := g.p.core.admit(t, true, ctx, g.h.helps()); r {
	case worker.Accepted:
		if g.h.helps() {
			g.h.add(t.(lendable))
		}
		return true
	case worker.Canceled:
	default:
		g.fail(0, g.p.core.result(r, ctx))
	}
	g.done()
	return false
}

// done ends the count of one function. The one that takes the count to zero wakes the Wait
// calls waiting, unless a Go has raised it again meanwhile: then that function's done will.
func (g *Group) done() {
	if g.running.Add(-1) != 0 {
		return
	}
	g.mu.Lock()
	if g.idle != nil && g.running.Load() == 0 {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

// await blocks until no function of the group is running, running the group's own queued
// functions meanwhile if its waits help (help.go).
func (g *Group) await() {
	idle := g.idleChan()
	if idle == nil {
		return
	}
	g.h.until(idle)
	<-idle
}

// idleChan returns a channel closed once no function of the group is running, or nil if
// none is. While the count is above zero here, some function has yet to call done; the done
// that takes the count to zero finds idle set, under mu, and closes it unless a Go raised the
// count again meanwhile, in which case the done of that function does.
func (g *Group) idleChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running.Load() == 0 {
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	return g.idle
}

// Wait blocks until every function started by Go has returned, cancels the group's context,
// and returns the first error (nil if there was none); for a group made by [Pool.GroupAll],
// every error, joined. In a group made from the context crew gave a function running on the
// pool, Wait first runs the group's functions that no worker has taken yet on the calling
// goroutine, newest first. The return of every function synchronizes before the return of Wait.
// Any number of goroutines may call Wait, also while others call Go; a Go call concurrent
// with Wait may or may not be waited for.
func (g *Group) Wait() error {
	g.await()
	g.cancel(nil)
	g.unfollow()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all {
		slices.SortStableFunc(g.errs, func(a, b seqError) int { return cmp.Compare(a.seq, b.seq) })
		errs := make([]error, len(g.errs))
		for i, e := range g.errs {
			errs[i] = e.err
		}
		return errors.Join(errs...)
	}
	return g.err
}

// fail records err, the error of the Go call numbered seq: in a GroupAll group, beside the
// others; in another group, as the group's error if it is the first, canceling the group's
// context.
func (g *Group) fail(seq uint64, err error) {
	if g.all {
		g.mu.Lock()
		g.errs = append(g.errs, seqError{seq, err})
		g.mu.Unlock()
		return
	}
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
	g.cancel(err)
}

// end records err, the outcome of the function of the Go call numbered seq (nil if it
// returned nil), and counts the function as done.
func (g *Group) end(seq uint64, err error) {
	if err != nil {
		g.fail(seq, err)
	}
	g.done()
}

// task returns the task that runs fn, of the Go call numbered seq. Only a GroupAll group
// numbers its calls, so only its tasks carry the number.
func (g *Group) task(fn func(context.Context) error, seq uint64) task {
	if !g.all {
		return &groupTask{g: g, fn: fn, c: call{Context: g.ctx, pool: g.p}}
	}
	return &numberedTask{groupTask{g: g, fn: fn, c: call{Context: g.ctx, pool: g.p}}, seq}
}

// groupTask is one function of a group. c is the context it receives, and its claim.
type groupTask struct {
	g  *Group
	fn func(context.Context) error
	c  call
}

// A group's task is a reporter (see pool.go): its pool's engine recovers a panic or a
// runtime.Goexit of fn and hands it to panicked or goexited, so run needs no guard. It is a
// claimer (life.go), run by runClaimer.
func (t *groupTask) run() worker.Outcome { return runClaimer(t, false) }

// runOnCaller is run without the labels: a caller-run function keeps its submitter's.
func (t *groupTask) runOnCaller() worker.Outcome { return runClaimer(t, true) }

func (t *groupTask) call() { t.g.end(0, t.c.invoke(t.g.enter, t.fn)) }

func (t *groupTask) fail(err error) { t.g.end(0, err) }

func (t *groupTask) lend() bool { return lendClaimer(t) }

func (t *groupTask) claimed() *claim { return &t.c.claim }

func (t *groupTask) scope() scope { return scope{t.g.ctx, t.g.given, t.g.p} }

func (t *groupTask) labels() context.Context { return t.g.labelsContext() }

func (t *groupTask) panicked(pe *PanicError) { t.g.end(0, pe) }

func (t *groupTask) goexited() { t.g.end(0, t.c.goexited()) }

func (t *groupTask) abort(err error) bool { return t.g.abort(0, err) }

// uncount ends a function whose Go call a hook ended with runtime.Goexit: see admitObserved.
func (t *groupTask) uncount() { t.g.abort(0, errGoexit) }

// numberedTask is a GroupAll group's task: see Group.task. It has its own run, runOnCaller
// and lend, which hand runClaimer and lendClaimer its own call and fail, those of its number.
type numberedTask struct {
	groupTask
	seq uint64
}

func (t *numberedTask) run() worker.Outcome { return runClaimer(t, false) }

func (t *numberedTask) runOnCaller() worker.Outcome { return runClaimer(t, true) }

func (t *numberedTask) call() { t.g.end(t.seq, t.c.invoke(t.g.enter, t.fn)) }

func (t *numberedTask) fail(err error) { t.g.end(t.seq, err) }

func (t *numberedTask) lend() bool { return lendClaimer(t) }

func (t *numberedTask) panicked(pe *PanicError) { t.g.end(t.seq, pe) }

func (t *numberedTask) goexited() { t.g.end(t.seq, t.c.goexited()) }

func (t *numberedTask) abort(err error) bool { return t.g.abort(t.seq, err) }

func (t *numberedTask) uncount() { t.g.abort(t.seq, errGoexit) }

// labelsContext returns the group's context if its functions run under its pprof labels, or nil.
func (g *Group) labelsContext() context.Context {
	if g.labels {
		return g.ctx
	}
	return nil
}

// abort counts a function of the group that will never run as done, with err as its error.
func (g *Group) abort(seq uint64, err error) bool {
	g.fail(seq, err)
	g.done()
	return true
}

// Results runs functions that return values on a pool and gives the values back in the order
// the functions were submitted, whatever order they finish in. Like [Group], the first error
// cancels the shared context and is returned by Wait. Build one with [NewResults]; the zero
// Results is not usable.
//
// A Results is safe for concurrent use; when Go is called from several goroutines, the order
// of the values is the order in which the Go calls took effect.
type Results[R any] struct {
	g     Group
	mu    sync.Mutex
	tasks []*resultTask[R]
}

// NewResults returns a new Results that runs its functions on p, and the context they receive:
// derived from ctx and canceled at the first error, with that error as its [context.Cause], or
// when Wait returns. It panics if p is nil.
func NewResults[R any](ctx context.Context, p *Pool) (*Results[R], context.Context) {
	if p == nil {
		panic("crew: NewResults: p must not be nil")
	}
	checkCtx(ctx, "NewResults")
	r := new(Results[R])
	return r, r.g.init(p, ctx)
}

// Go runs fn on the pool with the shared context and keeps its value in submission order. It
// behaves as [Group.Go]: it blocks only while a bounded queue is full, every accepted function
// runs, and a refusal, an error or a panic ([*PanicError]) is the first error if none came
// before. Go allocates one result holder per call.
func (r *Results[R]) Go(fn func(ctx context.Context) (R, error)) {
	t := &resultTask[R]{g: &r.g, fn: fn, c: call{Context: r.g.ctx, pool: r.g.p}}
	if fn == nil {
		r.list(t)
		r.g.fail(0, ErrNilTask)
		return
	}
	// Counted before it is listed, so that a Wait that finds it in the list waits for it.
	r.g.running.Add(1)
	r.list(t)
	r.g.launch(t, 0)
}

// list appends t to the values Wait returns.
func (r *Results[R]) list(t *resultTask[R]) {
	r.mu.Lock()
	r.tasks = append(r.tasks, t)
	r.mu.Unlock()
}

// Wait blocks until every function has returned, cancels the shared context, and returns
// their values in submission order with the first error. A function that failed, panicked or
// never ran leaves the zero value in its place. The return of every function synchronizes
// before the return of Wait. Like [Group.Wait], it may be called by several goroutines, also
// while others call Go; the values are those of the functions whose Go took effect before
// Wait was called, and of no function still running.
func (r *Results[R]) Wait() ([]R, error) {
	r.mu.Lock()
	tasks := r.tasks // every function in it is counted: r.g.Wait waits for it
	r.mu.Unlock()
	err := r.g.Wait()
	vals := make([]R, len(tasks))
	for i, t := range tasks {
		vals[i] = t.val
	}
	return vals, err
}

type resultTask[R any] struct {
	g   *Group
	fn  func(context.Context) (R, error)
	val R
	c   call
}

// A result's task is a reporter (see pool.go) and a claimer (life.go), as a group's is.
func (t *resultTask[R]) run() worker.Outcome { return runClaimer(t, false) }

// runOnCaller is run without the labels: a caller-run function keeps its submitter's.
func (t *resultTask[R]) runOnCaller() worker.Outcome { return runClaimer(t, true) }

func (t *resultTask[R]) call() {
	t.g.end(0, t.c.invoke(t.g.enter, func(ctx context.Context) error {
		v, err := t.fn(ctx)
		if err == nil {
			t.val = v
		}
		return err
	}))
}

func (t *resultTask[R]) fail(err error) { t.g.end(0, err) }

func (t *resultTask[R]) lend() bool { return lendClaimer(t) }

func (t *resultTask[R]) claimed() *claim { return &t.c.claim }

func (t *resultTask[R]) scope() scope { return scope{t.g.ctx, t.g.given, t.g.p} }

func (t *resultTask[R]) labels() context.Context { return t.g.labelsContext() }

func (t *resultTask[R]) panicked(pe *PanicError) { t.g.end(0, pe) }

func (t *resultTask[R]) goexited() { t.g.end(0, t.c.goexited()) }

func (t *resultTask[R]) abort(err error) bool { return t.g.abort(0, err) }

func (t *resultTask[R]) uncount() { t.g.abort(0, errGoexit) }
