package crew

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/crewgo/crew/internal/worker"
)

// MapSeq returns a sequence that calls fn on p for each value of in and yields the results in
// the order of in: fn(x) is yielded, with a nil error, as soon as it and every call for an
// earlier value have returned and the loop body has taken the results before it.
//
// Pulling is lazy, and bounded by W, p's limit (its MaxWorkers) when a range over the sequence
// starts: at most W values are pulled from in and not yet yielded, so an endless in and a slow
// loop body use bounded memory. in runs on the goroutine that ranges, between two results: a
// result that is ready while in is busy producing the next value is yielded once in has
// produced it (or ended). The calls never wait for the loop body: their results are kept, at
// most W of them, until the body takes them. Since results wait for the ones before them, a
// slow call holds back the pulling: while it runs, the results after it that are ready stay
// held and fewer calls run. [MapSeqUnordered], or a pool with a higher limit, keeps more calls
// busy.
//
// The first call to fail, in time, stops the pulling and cancels the context the calls
// receive (derived from ctx; its [context.Cause] is that error). The sequence then yields the
// results that come before the first failure in the order of in, yields that failure once
// with the zero R, and ends. A panic in fn is a failure, yielded as a [*PanicError], as is a
// runtime.Goexit; neither reaches the pool's panic handler. A call that fails only because an
// earlier failure canceled its context (its error matches [context.Canceled]) does not hide
// that failure: the failure that canceled the context is yielded in its place. A refusal by p
// mid-range ([ErrStopped] once p is stopped, [ErrQueueFull] from a full queue under
// [WithNonBlocking]) is the failure of the value that p refused.
//
// If ctx has ended when a range starts, the sequence yields (zero, ctx.Err()) once and ends;
// otherwise, if p is stopped, (zero, [ErrStopped]) once; in is not pulled. If ctx ends during
// the range, pulling stops, the results of the calls already made are yielded as above, and
// (zero, ctx.Err()) is yielded last if none of them failed (a call still queued then is
// skipped, and fails with ctx's cause, [context.Cause]: with a cause given to ctx, that is
// what the range yields); the same with [ErrStopped] when a
// [Pool.Shutdown] of p gives up during the range. Waiting for room in a full bounded queue
// gives up when ctx ends or a call fails.
//
// Breaking out of the loop, a panic in the loop body or in in, and a runtime.Goexit in either,
// cancel the calls' context and wait for the calls in flight: when the range statement ends,
// however it ends, no call started by it is still running. A panic goes on unwinding from the
// range statement once the calls have returned. Calls already made run to the end; fn should
// watch its context to return early.
//
// Each range over the sequence pulls in anew and calls fn again; ranges may run at the same
// time, each with its own calls, context and limit. A call still queued when ctx ends (or
// [Pool.Shutdown] gives up) is skipped; a failure skips none, so the results before it come.
// The calls of a range need free workers of p; a range inside a function running on p, from
// the context crew gave it, runs its own queued calls while it waits (package documentation,
// "Waits that help"), and a range from a plain task of p waits for workers like [Pool.Wait]
// would. The return of each call synchronizes before the loop
// body receives its result. MapSeq panics if ctx, p, in or fn is nil.
//
// Once W values are in flight, a range allocates nothing per value: it reuses W small task
// holders.
func MapSeq[T, R any](ctx context.Context, p *Pool, in iter.Seq[T], fn func(context.Context, T) (R, error)) iter.Seq2[R, error] {
	checkSeqArgs("MapSeq", ctx, p, in == nil, fn == nil)
	return func(yield func(R, error) bool) { rangeSeq(ctx, p, in, fn, true, yield) }
}

// MapSeqUnordered is [MapSeq] in completion order: it yields each result as soon as its call
// has returned and the loop body has taken the results of the calls that returned before it.
// Its calls still queued at the first failure are skipped: no result after it is yielded.
// Every promise of MapSeq holds, with "before in the order of in" read as "before in time":
// the failure yielded is the first call to fail, after the results of the calls that returned
// before it. The limit W bounds the values pulled and not yet yielded in the same way, and a
// call that returns early never waits behind a slow one.
func MapSeqUnordered[T, R any](ctx context.Context, p *Pool, in iter.Seq[T], fn func(context.Context, T) (R, error)) iter.Seq2[R, error] {
	checkSeqArgs("MapSeqUnordered", ctx, p, in == nil, fn == nil)
	return func(yield func(R, error) bool) { rangeSeq(ctx, p, in, fn, false, yield) }
}

// checkSeqArgs panics, naming the call, if an argument of MapSeq or MapSeqUnordered is nil.
func checkSeqArgs(call string, ctx context.Context, p *Pool, nilIn, nilFn bool) {
	switch {
	case ctx == nil:
		panic(fmt.Sprintf("crew: %s: ctx must not be nil", call))
	case p == nil:
		panic(fmt.Sprintf("crew: %s: p must not be nil", call))
	case nilIn:
		panic(fmt.Sprintf("crew: %s: in must not be nil", call))
	case nilFn:
		panic(fmt.Sprintf("crew: %s: fn must not be nil", call))
	}
}

// rangeSeq is one range over a MapSeq or MapSeqUnordered sequence.
//
// in is pulled by a plain range loop on the ranging goroutine (a push loop) rather than from
// a goroutine of its own: in then runs only while the loop asks for a value, so breaking out,
// or a panic in the body, stops it where it stands, and nothing has to interrupt an in that is
// blocked. iter.Pull would keep that property at the cost of a coroutine switch per value.
// The bound of W values pulled and not yet yielded holds because a value is handed back to in
// only once fewer than W are held (see push).
func rangeSeq[T, R any](ctx context.Context, p *Pool, in iter.Seq[T], fn func(context.Context, T) (R, error),
	ordered bool, yield func(R, error) bool) {
	var zero R
	if err := ctx.Err(); err != nil {
		yield(zero, err)
		return
	}
	if p.stopped() {
		yield(zero, ErrStopped)
		return
	}
	s := &seqRun[T, R]{parent: ctx, p: p, fn: fn, ordered: ordered, limit: max(p.Stats().MaxWorkers, 1)}
	// A call still queued is skipped when ctx ends or p's Shutdown gives up (skip). In
	// MapSeqUnordered it is also skipped at the first failure, which cancels the calls'
	// context; MapSeq yields the results before the failure in the order of in, so there a
	// failure skips nothing: the calls before it still run, with their context canceled.
	s.skip, s.stop = context.WithCancelCause(ctx)
	s.ctx, s.cancel = context.WithCancelCause(s.skip)
	if !ordered {
		s.skip = s.ctx
	}
	s.unfollow = p.core.hard.follow(s.stop)
	s.h.init(ctx, p)
	s.labels = hasLabels(ctx)
	s.enter = p.core.obs.enter()
	s.wake = make(chan struct{}, 1)
	defer s.finish()
	for v := range in {
		if !s.push(v, yield) {
			break
		}
	}
	s.drain(yield)
}

// stopped reports whether p no longer accepts tasks: it was stopped, or its context (or that
// of a pool above it) ended.
func (p *Pool) stopped() bool {
	return p.core.stopped()
}

// seqRun is the state of one range over a MapSeq or MapSeqUnordered sequence.
type seqRun[T, R any] struct {
	parent  context.Context
	ctx     context.Context         // the calls' context
	skip    context.Context         // a call still queued when it has ended is skipped
	stop    context.CancelCauseFunc // ends skip (and ctx): once the range ends, or at Shutdown
	cancel  context.CancelCauseFunc
	p       *Pool
	fn      func(context.Context, T) (R, error)
	ordered bool
	limit   int // W
	// labels: ctx carries pprof labels, which the calls run under (labels.go); enter is p's
	// Context hook, or nil.
	labels bool
	enter  enter
	// unfollow stops ctx from following p's Shutdown (life.go); h lends the slot of the
	// function the range runs in, if any, to its waits (help.go).
	unfollow func() bool
	h        helper

	// Shared with the calls, under mu.
	mu       sync.Mutex
	finished []*seqTask[T, R] // calls returned since the ranging goroutine last looked
	sleeping bool             // the ranging goroutine waits on wake for a call to return
	first    error            // the failure that canceled ctx, if a call's did
	looked   bool             // lookAgain has run: see there
	wake     chan struct{}

	// Owned by the ranging goroutine.
	spare   []*seqTask[T, R] // finished's other buffer (see collect)
	free    []*seqTask[T, R] // holders to reuse
	order   taskRing[T, R]   // MapSeq: the held values, in the order of in
	held    int              // values pulled and not yet yielded or dropped, at most limit
	running int              // values handed to p whose return has not been collected
	ended   bool             // a failure was yielded or the body stopped: yield nothing more
	cut     bool             // pulling stopped before in ended
}

// seqTask holds one value and its result. It is the task p runs, so a value costs no
// allocation once the range has as many holders as it can hold values.
type seqTask[T, R any] struct {
	s    *seqRun[T, R]
	v    T
	r    R
	err  error
	done bool // MapSeq: its return has been collected
	// husk: a wait of the range claimed it (lend), leaving its place in p's queue, where a
	// worker will find it later: it is not reused (release).
	husk bool
	c    call
}

// abort ends a call that will never run (see task) as a failed one.
func (t *seqTask[T, R]) abort(err error) bool {
	t.r, t.err = *new(R), err
	t.s.fail(err)
	t.s.returned(t)
	return true
}

// A call's task is a reporter (see pool.go): its pool's engine recovers a panic or a
// runtime.Goexit of fn and hands it to panicked or goexited. It is a claimer (life.go); one
// skipped because the range's skip context has ended fails with its cause.
func (t *seqTask[T, R]) run() worker.Outcome { return runClaimer(t, false) }

// runOnCaller is run without the labels: a caller-run function keeps its submitter's.
func (t *seqTask[T, R]) runOnCaller() worker.Outcome { return runClaimer(t, true) }

func (t *seqTask[T, R]) call() {
	t.err = t.c.invoke(t.s.enter, func(ctx context.Context) (err error) {
		t.r, err = t.s.fn(ctx, t.v)
		return err
	})
	t.end()
}

func (t *seqTask[T, R]) fail(err error) {
	t.err = err
	t.end()
}

// markHusk marks t a husk: a Shutdown that gave up claimed it, leaving its place in p's queue
// (skipQueued). It runs under the lock of the pool whose queue holds that place.
func (t *seqTask[T, R]) markHusk() { t.husk = true }

// lend is lendClaimer for the ranging goroutine, which also marks t a husk, whose place in p's
// queue a worker has yet to reach, when it claims it: before fail hands t back.
func (t *seqTask[T, R]) lend() bool {
	s := t.scope()
	ok, skip := t.c.lend(s)
	if ok || skip {
		// Only the claim's winner writes husk: a Shutdown that gave up may claim t first
		// (skipQueued), and t must stay a husk.
		t.husk = true
	}
	if skip {
		t.fail(s.cause())
	}
	return ok
}

func (t *seqTask[T, R]) claimed() *claim { return &t.c.claim }

func (t *seqTask[T, R]) scope() scope { return scope{t.s.skip, t.s.parent, t.s.p} }

func (t *seqTask[T, R]) labels() context.Context {
	if t.s.labels {
		return t.s.ctx
	}
	return nil
}

func (t *seqTask[T, R]) panicked(pe *PanicError) { t.err = pe; t.end() }

func (t *seqTask[T, R]) goexited() { t.err = t.c.goexited(); t.end() }

// end hands t, whose call has ended with t.r and t.err, back to the ranging goroutine.
func (t *seqTask[T, R]) end() {
	s := t.s
	if t.err != nil {
		t.r = *new(R)
		s.fail(t.err)
	}
	s.returned(t)
}

// fail records err as the failure that canceled the calls' context, if it is the first and
// the context was live, and cancels the context.
func (s *seqRun[T, R]) fail(err error) {
	s.mu.Lock()
	if s.first == nil && s.ctx.Err() == nil {
		s.first = err
	}
	s.mu.Unlock()
	s.cancel(err)
}

// returned hands t back to the ranging goroutine. It never blocks: wake has room for the one
// signal a sleeping ranging goroutine waits for. t is not touched after it is handed back.
func (s *seqRun[T, R]) returned(t *seqTask[T, R]) {
	s.mu.Lock()
	s.finished = append(s.finished, t)
	wake := s.sleeping
	s.sleeping = false
	s.mu.Unlock()
	if wake {
		s.wake <- struct{}{}
	}
}

// collect returns the tasks that returned since the last collect, waiting for one if there
// are none and block is set. The slice is valid until the next collect: the two buffers take
// turns, so that collecting allocates nothing.
func (s *seqRun[T, R]) collect(block bool) []*seqTask[T, R] {
	s.mu.Lock()
	for block && len(s.finished) == 0 {
		if s.h.helps() {
			// A range made inside a function of p runs its own queued calls meanwhile; a
			// pause holds them, and it looks again shortly (helper.until). A call that
			// returned while s.mu was released found no one sleeping and sent no wake: the
			// loop looks at finished again before it sleeps
			// (TestMapSeqRangeInATaskMissesNoReturnWhileItHelps).
			s.mu.Unlock()
			ran := s.h.helpOne()
			held := !ran && s.h.held()
			if held {
				nap(s.p, nil)
			}
			s.mu.Lock()
			if ran || held || len(s.finished) > 0 {
				continue
			}
		}
		s.sleeping = true
		s.mu.Unlock()
		var skipped <-chan struct{} // ctx ending or a Shutdown giving up skips queued calls
		if !s.looked {
			skipped = s.skip.Done()
		}
		select {
		case <-s.wake:
		case <-skipped:
			s.lookAgain()
			<-s.wake
		}
		s.mu.Lock()
	}
	got := s.finished
	s.finished = s.spare[:0]
	s.mu.Unlock()
	s.spare = got
	s.running -= len(got)
	return got
}

// push hands v to p and yields the results that are ready; before it lets in produce another
// value, it waits until fewer than W values are held. It reports whether to go on pulling.
func (s *seqRun[T, R]) push(v T, yield func(R, error) bool) bool {
	if s.over() { // a call failed or ctx ended: pull no more
		s.cut = true
		return false
	}
	t := s.take()
	t.v = v
	s.held++
	if s.ordered {
		s.order.push(t, s.limit)
	}
	t.c.state.Store(queued) // a new claim; the call's context and pool are the holder's for good
	switch r := s.p.core.admit(t, true, s.ctx, s.h.helps()); r {
	case worker.Accepted:
		s.running++
		if s.h.helps() {
			s.h.add(t)
		}
	case worker.Canceled:
		// v was never handed over: drop it, as if in had not produced it.
		s.held--
		if s.ordered {
			s.order.dropLast()
		}
		s.release(t)
		s.cut = true
		return false
	default: // refused: the failure of v
		// It never runs. Its claim, new above, must say so: a wait's list of functions it
		// may run can still hold t from an earlier use, and would run it
		// (TestAdvMapSeqInATaskRunsNoValueItsPoolRefused).
		t.c.state.Store(ended)
		t.err = s.p.core.result(r, s.ctx)
		s.fail(t.err)
		s.running++
		s.returned(t)
	}
	if !s.deliver(yield, s.limit-1) {
		return false
	}
	// The loop body, or a call, may have ended ctx meanwhile: in is not to produce another
	// value that would then be dropped.
	if s.over() {
		s.cut = true
		return false
	}
	return true
}

// over reports whether the calls' context has ended, or the caller's that it is derived
// from: package context ends the derived one a moment after (see scope, life.go).
func (s *seqRun[T, R]) over() bool { return s.ctx.Err() != nil || s.parent.Err() != nil }

// drain yields what is left once in has ended or pulling has stopped, and then ctx.Err() if
// ctx cut the sequence short (ErrStopped if a Shutdown of p gave up: cutShort).
func (s *seqRun[T, R]) drain(yield func(R, error) bool) {
	if s.ended || !s.deliver(yield, 0) {
		return
	}
	if !s.cut {
		return
	}
	if err := cutShort(s.parent, s.p); err != nil {
		s.ended = true
		yield(*new(R), err)
	}
}

// finish cancels the calls' context and waits until every call handed to p has returned. It
// runs however the range ends.
func (s *seqRun[T, R]) finish() {
	s.cancel(nil)
	s.stop(nil)
	s.unfollow()
	if s.running > 0 {
		s.lookAgain()
	}
	for s.running > 0 {
		s.collect(true)
	}
}

// lookAgain has p and the pools above it look at their queues, once, when the range's calls
// still queued have become ones that will be skipped. Such a call leaves the queue without a
// token of a rate limit, but only once a worker looks at it, which an empty bucket would put
// off until its next token is due, and the range statement would wait as long. Callers hold
// no lock.
func (s *seqRun[T, R]) lookAgain() {
	if s.looked {
		return
	}
	s.looked = true
	for q := s.p; q != nil; q = q.parent {
		q.core.e.Redispatch()
	}
}

// deliver yields the results that may be yielded, waiting for calls to return until at most
// target values are held. It reports false once the sequence has ended: a failure was yielded
// or the loop body stopped.
func (s *seqRun[T, R]) deliver(yield func(R, error) bool, target int) bool {
	block := false
	for {
		got := s.collect(block)
		if s.ordered {
			for _, t := range got {
				t.done = true
			}
			for s.held > 0 && s.order.first().done {
				if !s.yieldTask(s.order.popFirst(), yield) {
					return false
				}
			}
		} else {
			for _, t := range got {
				if !s.yieldTask(t, yield) {
					return false
				}
			}
		}
		if s.held <= target {
			return true
		}
		block = true
	}
}

// yieldTask yields t's result, or its failure, and frees t. It reports whether to go on.
func (s *seqRun[T, R]) yieldTask(t *seqTask[T, R], yield func(R, error) bool) bool {
	r, err := t.r, t.err
	s.held--
	s.release(t)
	if err != nil {
		s.ended = true
		yield(*new(R), s.failure(err))
		return false
	}
	if !yield(r, nil) {
		s.ended = true
		return false
	}
	return true
}

// failure is the error to yield for the failed value whose error is err (see MapSeq).
func (s *seqRun[T, R]) failure(err error) error {
	s.mu.Lock()
	first := s.first
	s.mu.Unlock()
	if first != nil && (!s.ordered || errors.Is(err, context.Canceled)) {
		return first
	}
	return err
}

// take returns a free holder, or a new one.
func (s *seqRun[T, R]) take() *seqTask[T, R] {
	if n := len(s.free); n > 0 {
		t := s.free[n-1]
		s.free = s.free[:n-1]
		return t
	}
	return &seqTask[T, R]{s: s, c: call{Context: s.ctx, pool: s.p}}
}

// release clears t's value and result, so that it keeps nothing alive, and keeps it for
// reuse, unless its place in p's queue is still to be reached by a worker (husk), or p gives
// its functions a task timeout: the timer's context has t's call as its parent, and a timer
// that fires as the function returns reads that parent from the timer's goroutine after t was
// handed back (TestAmidTaskTimeoutOnNestedSubPools found it under -race), so t is left to the
// garbage collector, as it is.
//
// t's call keeps its context and pool, the range's, which no holder's reuse writes again: a
// function run in t may have made waits from t's call, and a worker that reaches the place of
// one of their functions later, claimed by such a wait, reads that context through its own
// (TestAdv5WaitNestedStreamHolderIsNotReusedWhileAWorkerReadsIt).
func (s *seqRun[T, R]) release(t *seqTask[T, R]) {
	if t.husk || s.p.core.cfg.taskTimeout > 0 {
		return // the worker that reaches it reads its claim: it stays as it is
	}
	var zero seqTask[T, R]
	t.v, t.r, t.err, t.done = zero.v, zero.r, nil, false
	t.c.returned = false
	// A wait's list of functions it may run (helper.queue) may still hold t: cleared, its
	// claim would read as queued, and the wait would run an empty holder
	// (TestMapSeqWaitRunsNoHolderItHasFreed). push gives it a new claim when it reuses it.
	t.c.state.Store(ended)
	s.free = append(s.free, t)
}

// taskRing is a FIFO of holders that grows, up to a limit, as it fills.
type taskRing[T, R any] struct {
	buf     []*seqTask[T, R]
	head, n int
}

func (q *taskRing[T, R]) push(t *seqTask[T, R], limit int) {
	if q.n == len(q.buf) {
		buf := make([]*seqTask[T, R], min(max(2*len(q.buf), 8), limit))
		for i := range q.n {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = t
	q.n++
}

func (q *taskRing[T, R]) first() *seqTask[T, R] { return q.buf[q.head] }

func (q *taskRing[T, R]) popFirst() *seqTask[T, R] {
	t := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return t
}

func (q *taskRing[T, R]) dropLast() {
	q.n--
	q.buf[(q.head+q.n)%len(q.buf)] = nil
}
