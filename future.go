package crew

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// Future is the result of a function run on a pool by [Go] or [GoContext]. Its Wait returns
// what the function returned, or the error that kept it from running or the [*PanicError] it
// panicked with. Only Go and GoContext make one: the zero Future is not usable.
//
// A Future is safe for concurrent use: any number of goroutines may call Wait, Done and
// Cancel.
type Future[R any] struct {
	fn   func() (R, error) // Go's function; nil for GoContext's, which x holds
	val  R
	err  error
	wg   sync.WaitGroup // Wait blocks on it without allocating
	mu   sync.Mutex
	done bool
	// claim decides who takes the queued function: a worker, Cancel, StopNow or a wait that
	// runs it itself (life.go). It sits in done's word.
	claim claim
	// x is GoContext's part: the function, its context and the wait that may run it; nil for
	// Go. watch holds what Done and Completed wait on, made on demand. Both are pointers, so
	// that a Future holds one word for each and Go's one allocation stays in the 80-byte size
	// class (TestGoAllocatesEightyBytes).
	x     *futureCall[R]
	watch *watchers[R]
}

// watchers are the channels of a future's Done and of the ranges over Completed waiting for
// it.
type watchers[R any] struct {
	ch   chan struct{}
	outs []chan<- *Future[R] // each sent the future once
}

// futureCall is GoContext's part of a Future.
type futureCall[R any] struct {
	fn       func(context.Context) (R, error)
	c        call            // the context fn receives
	given    context.Context // GoContext's ctx, which c's is derived from: see scope (life.go)
	cancel   context.CancelCauseFunc
	unfollow func() bool // stops c's context from following the pool's Shutdown (life.go)
	h        helper      // Wait runs fn itself when made inside a function of the pool
	// labels: ctx carries pprof labels, which fn runs under on a worker (labels.go); enter
	// is the pool's Context hook, or nil.
	labels bool
	enter  enter
}

// closed is the channel Done returns for a future that finished before anyone asked for one.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// errGoexit is what a future or group reports for a function that called runtime.Goexit.
var errGoexit = errors.New("crew: task called runtime.Goexit")

// Go runs fn on p and returns a Future for its result. Like [Pool.Submit], it blocks only while
// a bounded queue is full. If p does not accept the task (it is stopped, or its non-blocking
// queue is full), fn never runs and Wait returns [ErrStopped] or [ErrQueueFull] at once; a nil
// fn gives [ErrNilTask]. A panic in fn is returned by Wait as a [*PanicError]; it does not reach
// the pool's panic handler. [Future.Cancel] takes fn out before it starts. It panics if p is
// nil.
//
// Go allocates the Future and nothing else per call.
func Go[R any](p *Pool, fn func() (R, error)) *Future[R] {
	if p == nil {
		panic("crew: Go: p must not be nil")
	}
	f := &Future[R]{fn: fn}
	f.wg.Add(1)
	if fn == nil {
		f.refuse(ErrNilTask)
		return f
	}
	if err := p.core.submit(f, true); err != nil {
		f.refuse(err)
	}
	return f
}

// GoContext runs fn on p with a context derived from ctx and returns a Future for its result,
// as [Go] does. If ctx ends before a worker takes fn, fn never runs: it is skipped (counted in
// [Stats].Skipped) and Wait returns [context.Cause] of ctx. Once fn runs, its context ends when
// ctx does, when [Pool.Shutdown]'s deadline passes (cause [ErrStopped]) and, under
// [WithTaskTimeout], when fn has run that long. While p's bounded queue is full, GoContext
// waits for room until ctx ends, like [Pool.SubmitContext]; if ctx has already ended, fn is
// not accepted and Wait returns ctx's cause at once.
//
// Called inside a function running on p (or on a sub-pool of p) with the context crew gave it,
// Wait runs fn itself if no worker has taken it yet, and GoContext runs fn itself where p's
// full bounded queue would make it wait: see the package documentation, "Waits that help".
// A panic in fn is returned by Wait as a [*PanicError]. GoContext panics if ctx or p is nil.
func GoContext[R any](ctx context.Context, p *Pool, fn func(context.Context) (R, error)) *Future[R] {
	if p == nil {
		panic("crew: GoContext: p must not be nil")
	}
	checkCtx(ctx, "GoContext")
	f := &Future[R]{}
	f.wg.Add(1)
	if fn == nil {
		f.refuse(ErrNilTask)
		return f
	}
	if ctx.Err() != nil {
		p.core.admit(f, true, ctx, false) // counted as Canceled, and seen by the hooks
		f.refuse(context.Cause(ctx))
		return f
	}
	x := &futureCall[R]{fn: fn, given: ctx}
	var fctx context.Context
	fctx, x.cancel = context.WithCancelCause(ctx)
	x.c = call{Context: fctx, pool: p}
	x.unfollow = p.core.hard.follow(x.cancel)
	x.h.init(ctx, p)
	x.labels = hasLabels(ctx)
	x.enter = p.core.obs.enter()
	f.x = x
	switch r := p.core.admit(f, true, ctx, x.h.helps()); r {
	case worker.Accepted:
	case worker.Canceled:
		f.refuse(context.Cause(ctx))
	default:
		f.refuse(p.core.result(r, ctx))
	}
	return f
}

// Wait blocks until the function has returned and then returns its result. The return of the
// function synchronizes before the return of Wait. A future of [GoContext] made inside a
// function of the pool runs its function on the calling goroutine if no worker has taken it
// yet.
func (f *Future[R]) Wait() (R, error) {
	if f.x != nil && f.x.h.helps() {
		f.help()
	}
	f.wg.Wait()
	return f.val, f.err
}

// help runs the function on the calling goroutine if no worker has taken it yet, for a Wait
// made inside a function of the pool (help.go); while the pool holds starts back (a pause, a
// rate limit) it looks again every pausePoll, as helper.until does. As there, a function
// that will be skipped (its context ended) takes no start: it is failed at once, pause or
// not.
func (f *Future[R]) help() {
	x := f.x
	for f.claim.state.Load() == queued && x.h.slot.running() {
		if f.lendNow() {
			return
		}
		nap(x.c.pool, f.Done())
	}
}

// lendNow runs f's function on the caller, or fails it if it will be skipped, when its pool
// lets it start now, and reports whether it did; false while the pool holds starts back.
func (f *Future[R]) lendNow() bool {
	x := f.x
	if !doomedTask(f) && !x.c.pool.core.e.Lends() {
		return false
	}
	if f.lend() {
		runLent(x.c.pool, f)
	}
	return true
}

// Cancel keeps the function from running if no worker has taken it yet, and reports whether
// it did: Wait then returns [context.Canceled] at once, and the function never runs. It
// reports false if the function has started (or ended, or was never accepted): it then runs
// to its end, and Wait returns what it returns. A Cancel racing with the start is decided
// once, one way. Cancel takes constant time and never blocks: the function's place in the
// queue is freed when a worker reaches it, or when [Pool.StopNow] takes it out first, and it
// is counted in [Stats].Skipped then (never in Returned: StopNow hands back only what would
// still run); until then it counts as Waiting. A second Cancel reports false.
func (f *Future[R]) Cancel() bool {
	if !f.claim.state.CompareAndSwap(queued, canceled) {
		return false
	}
	f.fail(context.Canceled)
	return true
}

// Done returns a channel that is closed when the function has returned, for use in a select;
// Wait then returns at once.
func (f *Future[R]) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watch == nil {
		f.watch = new(watchers[R])
	}
	if f.watch.ch == nil {
		if f.done {
			f.watch.ch = closed
		} else {
			f.watch.ch = make(chan struct{})
		}
	}
	return f.watch.ch
}

// run, panicked and goexited: a Future is a reporter (see pool.go), so its pool's engine
// recovers a panic or a runtime.Goexit of fn and hands it to panicked or goexited. It is a
// claimer (life.go), run by runClaimer: a GoContext function whose context has ended is
// skipped, and Wait returns the context's cause.
func (f *Future[R]) run() worker.Outcome { return runClaimer(f, false) }

// runOnCaller runs the function on its submitter (CallerRuns) or on a wait that took it.
func (f *Future[R]) runOnCaller() worker.Outcome { return runClaimer(f, true) }

// call runs the function and finishes f with what it returns. x.c's claim follows f's, as it
// is the one a wait made from fn's context checks (helpable).
func (f *Future[R]) call() {
	if f.x == nil {
		v, err := f.fn()
		f.claim.state.Store(ended)
		f.finish(v, err)
		return
	}
	x := f.x
	x.c.state.Store(f.claim.state.Load()) // taken, or lent
	// The value goes to f.val at once: a Context hook's end function that calls
	// runtime.Goexit leaves it standing (goexited).
	err := x.c.invoke(x.enter, func(ctx context.Context) (err error) {
		f.val, err = x.fn(ctx)
		return err
	})
	f.finish(f.val, err)
}

func (f *Future[R]) fail(err error) { f.finish(*new(R), err) }

func (f *Future[R]) lend() bool { return lendClaimer(f) }

func (f *Future[R]) claimed() *claim { return &f.claim }

// scope is GoContext's context and pool; a function of Go has neither, and is never skipped.
func (f *Future[R]) scope() scope {
	if f.x == nil {
		return scope{}
	}
	return scope{f.x.c.Context, f.x.given, f.x.c.pool}
}

func (f *Future[R]) labels() context.Context {
	if f.x != nil && f.x.labels {
		return f.x.c.Context
	}
	return nil
}

func (f *Future[R]) panicked(pe *PanicError) { f.fail(pe) }

func (f *Future[R]) goexited() {
	if x := f.x; x != nil && x.c.returned {
		f.finish(f.val, x.c.goexited())
		return
	}
	f.fail(errGoexit)
}

// refuse finishes f, whose function was never accepted: no party may claim it.
func (f *Future[R]) refuse(err error) {
	f.claim.state.Store(ended)
	f.fail(err)
}

func (f *Future[R]) finish(v R, err error) {
	f.val, f.err, f.fn = v, err, nil
	if x := f.x; x != nil {
		x.unfollow()
		x.cancel(nil)
		x.c.state.Store(ended)
	}
	f.mu.Lock()
	f.done = true
	var ch chan struct{}
	var outs []chan<- *Future[R]
	if w := f.watch; w != nil {
		ch, outs = w.ch, w.outs
		w.outs = nil
	}
	f.mu.Unlock()
	// The ranges over Completed hear first: whoever learns from Wait or Done that f is done,
	// and then completes another future, completes it after f in their order.
	for _, out := range outs {
		out <- f // never blocks: each range's channel has room for all its futures
	}
	// Done's channel is closed before Wait is released, so that whoever Wait has returned to
	// finds Done closed too (TestFutureIsSafeForConcurrentWaitAndDone).
	if ch != nil && ch != closed {
		close(ch)
	}
	f.wg.Done()
}

// Completed returns a sequence of the futures fs in the order they complete: the loop body
// receives each future once its function has returned, so Wait on it does not wait for the
// function. A future completes before its Wait returns and its Done channel is closed, so one
// completed by a function that waited for another future comes after that future. The futures
// that have already completed when a range starts come first, in the order of fs. A range
// waits for the next future to complete, as Wait would: inside a function of the futures'
// pool, it runs their functions that no worker has taken yet itself (package documentation,
// "Waits that help"). One that never completes keeps the range waiting. A future given
// twice is yielded twice.
//
// Breaking out of the loop leaves nothing behind: no goroutine is started, and the futures not
// yet yielded forget the range. Each range yields every future of fs again; ranges may run at
// the same time, also over the same futures. Completed panics, naming the index, if a future
// is nil. It keeps its own copy of fs, so changing the slice afterwards does not change the
// sequence.
func Completed[R any](fs ...*Future[R]) iter.Seq[*Future[R]] {
	for i, f := range fs {
		if f == nil {
			panic(fmt.Sprintf("crew: Completed: fs[%d] must not be nil", i))
		}
	}
	fs = slices.Clone(fs)
	return func(yield func(*Future[R]) bool) {
		if len(fs) == 0 {
			return
		}
		out := make(chan *Future[R], len(fs))
		for _, f := range fs {
			f.notify(out)
		}
		n := 0
		defer func() {
			if n < len(fs) { // the body stopped, or panicked: forget out
				for _, f := range fs {
					f.forget(out)
				}
			}
		}()
		for ; n < len(fs); n++ {
			if !yield(nextCompleted(out, fs)) {
				return
			}
		}
	}
}

// nextCompleted returns the next future of fs to complete, received on out. While none has,
// a range inside a function of their pool runs their functions that no worker has taken yet
// itself, newest first, as their Wait would (help.go); while the pool holds their starts back
// (a pause, a rate limit), it looks again every pausePoll.
func nextCompleted[R any](out <-chan *Future[R], fs []*Future[R]) *Future[R] {
	for {
		select {
		case f := <-out:
			return f
		default:
		}
		ran, held := helpOneOf(fs)
		if ran {
			continue
		}
		if !held {
			return <-out
		}
		t := time.NewTimer(pausePoll)
		select {
		case f := <-out:
			t.Stop()
			return f
		case <-t.C:
		}
	}
}

// helpOneOf runs the newest function of fs whose Wait would run it, if its pool lets it
// start now (ran); held reports that one could have run but its pool holds starts back.
func helpOneOf[R any](fs []*Future[R]) (ran, held bool) {
	for i := len(fs) - 1; i >= 0; i-- {
		f := fs[i]
		x := f.x
		if x == nil || !x.h.helps() || !x.h.slot.running() || f.claim.state.Load() != queued {
			continue
		}
		if f.lendNow() {
			return true, false
		}
		held = true
	}
	return false, held
}

// notify sends f on out once it has completed: now, if it has.
func (f *Future[R]) notify(out chan<- *Future[R]) {
	f.mu.Lock()
	if !f.done {
		if f.watch == nil {
			f.watch = new(watchers[R])
		}
		f.watch.outs = append(f.watch.outs, out)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	out <- f
}

// forget drops out from the channels f is to be sent on.
func (f *Future[R]) forget(out chan<- *Future[R]) {
	f.mu.Lock()
	if f.watch != nil {
		f.watch.outs = slices.DeleteFunc(f.watch.outs, func(o chan<- *Future[R]) bool { return o == out })
	}
	f.mu.Unlock()
}

// abort ends a function taken out of the queue unrun (StopNow, DiscardOldest): the engine
// claimed it (worker.Config.Take).
func (f *Future[R]) abort(err error) bool {
	f.fail(err)
	return true
}
