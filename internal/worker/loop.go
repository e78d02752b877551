package worker

import (
	"runtime"
	"runtime/debug"
)

// Serve runs first and then queued tasks on the calling goroutine until the queue is empty.
// It is for Config.Start, whose arguments it takes: the worker it stands for was counted when
// Start was called.
//
// If the engine or an ancestor was paused while the worker waited for its turn in the
// parent's queue, or the engine's limit was lowered below the tasks that have begun, first
// goes back to the front of the queue unrun and Serve returns: no task starts after Pause
// has returned, and none above the limit a Resize set.
func (e *Engine[T]) Serve(first T, since int64) { e.serveFirst(first, since, false) }

// ServeRelayed is Serve for a worker its parent counted as relaying (Config.Relay): once the
// sub-pool has decided its next start, forwarding its next worker to the parent if a task
// may start, it tells the parent (Relayed), which may then start a lower level's task.
func (e *Engine[T]) ServeRelayed(first T, since int64) { e.serveFirst(first, since, true) }

// serveFirst is Serve, and with relay set ServeRelayed.
func (e *Engine[T]) serveFirst(first T, since int64, relay bool) {
	e.lock()
	e.waking--
	// The worker may have waited in the parent's queue across a Pause, or across a Resize
	// that lowered the limit below the tasks that have begun (this one included: running
	// counts it, waking no longer does).
	if e.gated != 0 && (e.Halted() || e.running-e.waking > e.max) {
		// The task goes back to the front of the queue and a new worker is forwarded for
		// it, if one may start, to wait in the parent's queue.
		e.giveBack(first, since)
		starts := e.dispatch()
		e.mu.Unlock()
		e.launchAll(starts)
		if relay {
			e.cfg.Parent.Relayed()
		}
		return
	}
	s := e.passOn()
	e.mu.Unlock()
	e.launch(s)
	if relay {
		e.cfg.Parent.Relayed()
	}
	e.serveBegun(e.subWorker(since), first)
}

// parked is the body of a worker started idle.
func (e *Engine[T]) parked(w *worker[T]) {
	unlabel()
	if arg, ok := e.wait(w); ok {
		e.serveBegun(w, arg)
	}
	e.retire(w)
}

// serve runs tasks until the worker exits. w is nil for a worker that must not park.
func (e *Engine[T]) serve(w *worker[T], arg T) {
	unlabel()
	if e.begin(w, arg) {
		e.serveBegun(w, arg)
	} else if e.rest(w) {
		if arg, ok := e.wait(w); ok {
			e.serveBegun(w, arg)
		}
	}
	e.retire(w)
}

// serveBegun is serve for a worker that has already called begin.
//
// A worker that finds nothing to do parks here, at the bottom of its stack, not in next:
// next marks it resting and returns, and the frames of runUntilPanic and runTasks are gone
// before it blocks. Blocking on its wake channel may allocate (a goroutine's first wait on a
// channel, in a process whose caches of waiters are still empty), and from deep in the loop
// that allocation outgrew the goroutine's first stack: every worker a fresh process started
// copied its stack to one twice the size, which the garbage collector then scanned while the
// worker was parked (measurements.md, "Workers park at the bottom of their stack").
// TestParkedWorkerStackStaysSmall guards it.
func (e *Engine[T]) serveBegun(w *worker[T], arg T) {
	for {
		r := e.runUntilPanic(w, arg)
		var ok bool
		switch {
		case r == ranAll && !w.resting():
			return
		case r == ranAll:
			arg, ok = e.wait(w)
		default:
			o := Completed
			if r == handedToHandler {
				o = Panicked
			}
			if arg, ok = e.next(w, o); !ok && w.resting() {
				arg, ok = e.wait(w)
			}
		}
		if !ok {
			return
		}
	}
}

// What runUntilPanic reports.
const (
	ranAll          = iota // the worker is done
	handedToHandler        // a task panicked; the panic went to the panic handler
	reportedByTask         // a task panicked and reported it itself (Config.Reports)
)

// Where a worker's goroutine is when it ends by runtime.Goexit, which no recover stops.
const (
	inTask    = iota // in a task: it counts as completed
	inHandler        // in the panic handler: the task counts as panicked
	returned         // not ended by Goexit
)

// runUntilPanic runs arg and every task after it until the worker is done (ranAll) or a task
// panics. It then gives the panic to the panic handler (handedToHandler) or, for a task that
// reports its own (Config.Reports), to the task (reportedByTask); the caller re-enters with
// the next task.
//
// Recovering once per run of tasks rather than with a defer around each task keeps the
// per-task path free of defer bookkeeping; after a panic the caller re-enters with the next
// task, so the same goroutine keeps serving. The tasks of futures and groups, which must
// report their function's panic rather than let it reach the handler, use this recovery too
// instead of a frame of their own.
//
// A task or the panic handler may call runtime.Goexit (t.FailNow does). recover returns nil
// then, but it also returns nil for panic(nil) under GODEBUG=panicnil=1, so the two are told
// apart by whether runTasks returned: it does after a recovered panic of any value, never
// after a Goexit. The deferred goexit counts the task's end and hands the worker's place on,
// or Wait and StopAndWait would wait for it forever. TestTaskCallingGoexitIsCountedAndReplaced,
// TestGoexitInPanicHandlerIsCountedAndReplaced and TestPanicNilIsAPanic guard it.
func (e *Engine[T]) runUntilPanic(w *worker[T], arg T) int {
	where := inTask
	var cur T // the task that panicked or called Goexit: set by runTasks
	defer func() {
		if where != returned {
			// A Goexit in the Finished hook of a task that reports its own end: the task
			// has told its future or group already, and must not a second time.
			if where == inTask && e.reports(cur) && !w.inHook() {
				e.cfg.Goexited(cur)
			}
			// Deferred, as the Finished hook may call runtime.Goexit in turn, which ends
			// this function too: the task is counted and the worker replaced all the same
			// (TestAdv5ObsGoexitInTaskAndInFinishedHookLeavesThePoolServing).
			defer e.goexit(w, where == inHandler)
			if e.timed {
				e.finished(w, where == inHandler)
			}
		}
	}()
	v, stack, ok := e.runTasks(w, arg, &cur)
	if ok {
		where = returned
		return ranAll
	}
	if e.reports(cur) {
		e.cfg.Panicked(cur, v, stack)
		if e.timed {
			w.ended = true
			e.finished(w, false)
		}
		where = returned
		return reportedByTask
	}
	where = inHandler
	if e.timed {
		e.finished(w, true)
	}
	e.handlePanic(v, stack)
	where = returned
	return handedToHandler
}

// reports reports whether arg reports its own panics: see Config.Reports.
func (e *Engine[T]) reports(arg T) bool {
	return e.cfg.Reports != nil && e.cfg.Reports(arg)
}

// runTasks runs arg and every task after it. ok is false when a task panicked: v is then what
// recover returned and stack the panicking goroutine's stack. The task that panicked, or
// called runtime.Goexit, is left in *cur.
func (e *Engine[T]) runTasks(w *worker[T], arg T, cur *T) (v any, stack []byte, ok bool) {
	defer func() {
		if !ok {
			*cur = arg
			// Under NoRecover the panic goes on and ends the process with its own stack,
			// unless the task reports its own.
			if !e.cfg.NoRecover || e.reports(arg) {
				v = recover()
				stack = debug.Stack()
			}
		}
	}()
	if e.timed {
		return e.runObserved(w, &arg)
	}
	var more bool
	if e.cfg.Outcomes != nil {
		for {
			if arg, more = e.next(w, e.cfg.Outcomes(arg)); !more {
				return nil, nil, true
			}
		}
	}
	for {
		e.cfg.Run(arg)
		if arg, more = e.next(w, Completed); !more {
			return nil, nil, true
		}
	}
}

// handlePanic gives v to the panic handler. A handler that panics in turn is reported
// through the default one rather than taking the worker (and the process) down.
func (e *Engine[T]) handlePanic(v any, stack []byte) {
	defer func() {
		if hv := recover(); hv != nil {
			DefaultPanicHandler(hv, debug.Stack())
		}
	}()
	e.cfg.PanicHandler(v, stack)
}

// next records the end of the task a worker ran and gives it the next one. It returns false
// when the worker should exit, or when it has parked (w non-nil, w.rests set): it has
// nothing to do, and waits in serveBegun until a submitter hands it a task or it is told to
// exit.
//
// Before it parks, a worker lingers once (see linger): it yields its processor with the gate
// closed, and takes a task queued meanwhile instead of parking.
//
// The common case is written out first: no feature in use (plain), nobody blocked on a full
// queue, a task queued and the limit not lowered below the tasks running. The task that
// ended hands its slot to the oldest queued one, so running stays as it is, and pending,
// which counts both, stays above 0: nothing waits on quiet or drained, and finish, take and
// dequeue have nothing to add. Every task but a worker's first passes here, under the lock
// the submitter waits for; the general path cost a worker more per task with nobody
// contending, and with one submitter and eight workers Submit took markedly longer
// (measurements.md, "The worker's and the submitter's plain case"). The engine fuzzers run
// every sequence with and without this case (Config.Guarded).
func (e *Engine[T]) next(w *worker[T], o Outcome) (T, bool) {
	e.lock()
	if o == Completed && e.plain() && e.blocked.head == nil && e.queue.fifo.Len() > 0 &&
		e.workers <= e.max && e.running <= e.max {
		e.completed++
		e.pending--
		var arg T
		if e.timed {
			arg = e.unstamped(w)
		} else {
			arg, _ = e.queue.fifo.Pop()
		}
		e.mu.Unlock()
		return arg, true
	}
	e.finish(o)
	if arg, ok := e.take(w); ok {
		e.mu.Unlock()
		return arg, true
	}
	leave := e.leaving(w)
	if !leave {
		e.linger()
		if arg, ok := e.take(w); ok {
			s := e.passOn()
			e.mu.Unlock()
			e.launch(s)
			return arg, true
		}
		// linger released the lock: the engine may have stopped or shrunk meanwhile.
		leave = e.leaving(w)
	}
	if leave {
		starts := e.exit()
		e.mu.Unlock()
		e.launchAll(starts)
		var zero T
		return zero, false
	}
	e.park(w)
	e.mu.Unlock()
	w.rests = true
	var zero T
	return zero, false
}

// take gives w, a worker that has finished a task, the oldest queued one, if it may start,
// unless more workers are alive than the limit allows; w gets its submit time (taken).
// Callers hold e.mu.
//
// Every worker takes the lock here once per task, and the submitter waits for it: so the
// plain case, with no gate, weight or level in use, is written out. There, mayStart is the
// limit alone, and the oldest task is the one Pop returns, so no Peek is needed.
func (e *Engine[T]) take(w *worker[T]) (T, bool) {
	if e.sched|e.gated != 0 || e.queue.lv != nil { // plain but for the clock, which dequeue serves
		return e.takeGuarded(w)
	}
	if e.workers > e.max || e.running >= e.max || e.queue.fifo.Len() == 0 {
		var zero T
		return zero, false
	}
	arg, at, _ := e.dequeue()
	e.taken(w, at)
	e.slot()
	return arg, true
}

// takeGuarded is take while something besides the limit may hold the oldest task back.
func (e *Engine[T]) takeGuarded(w *worker[T]) (T, bool) {
	var zero T
	if e.workers > e.max {
		return zero, false
	}
	// A sub-pool's worker that was forwarded and has not begun holds an older task than any
	// queued: while one waits in the parent's queue, a running worker leaves instead of
	// going on, so that tasks start first in, first out (TestSubPoolTasksStartFirstInFirstOut).
	if e.cfg.Start != nil && e.waking > 0 {
		return zero, false
	}
	arg, _, ok := e.queue.PeekAt()
	if !ok || !e.mayStart(arg) || (e.sched != 0 && e.serialWorkers()) {
		return zero, false
	}
	// A sub-pool's worker holds a slot of its parent: going on is a start the ancestors
	// must admit (see pause.go). Refused, it leaves, and exit forwards a new worker.
	// Its replacement, forwarded by exit, goes behind the head of the parent's queue, not at
	// its tail: it had its turn, and a parent with a backlog and a rate limit would otherwise
	// start one task of the sub-pool per pass through that backlog
	// (TestRateLimitedSubPoolServesItsSubPool). A task that will not run (Config.Doomed)
	// asks only that no ancestor is paused: it takes no token of their rate limits, as it
	// takes none of e's (openFor).
	if e.cfg.Parent != nil && !e.parentAdmits(arg) {
		e.cutIn = true
		return zero, false
	}
	_, at, _ := e.dequeue()
	e.taken(w, at)
	e.slot()
	e.hold(arg)
	if e.queue.lv != nil {
		e.relayOut(arg)
	}
	return arg, true
}

// parentAdmits asks the parent whether arg, the next task of a sub-pool's worker, may start:
// Admits, or for a task that will not run only that no ancestor is paused.
func (e *Engine[T]) parentAdmits(arg T) bool {
	if e.cfg.Doomed != nil && e.cfg.Doomed(arg) {
		return !e.cfg.Parent.Halted()
	}
	return e.cfg.Parent.Admits()
}

// plain reports whether the engine uses no feature that changes how a task is queued or
// started: no gate, weight or level. An observer does not: the plain paths keep the submit
// times beside the tasks themselves (PushAt, unstamped). Callers hold e.mu.
func (e *Engine[T]) plain() bool {
	return e.sched|e.gated == 0 && e.queue.lv == nil
}

// leaving reports whether a worker that found no task to take should exit rather than park:
// a sub-pool's worker (w nil), a stopped engine, a limit lowered below the workers alive, or
// an idle timeout of 0. Callers hold e.mu.
func (e *Engine[T]) leaving(w *worker[T]) bool {
	return w.transient() || e.stopped || e.workers > e.max ||
		(e.cfg.IdleTimeout == 0 && e.workers > e.cfg.MinWorkers)
}

// lingerYield is linger's yield; tests replace it to act while a worker lingers.
var lingerYield = runtime.Gosched

// linger yields the processor once, counted in e.waking, so that a task submitted meanwhile is
// queued for this worker instead of waking a parked one. Callers hold e.mu; linger releases it
// while it yields and holds it again when it returns.
//
// A parked worker costs its submitter a wake-up and itself a park, and the worker that is woken
// takes the lock once more in begin. Where tasks are tiny and arrive from many goroutines at once
// (pond's 1Mu-1t: a million goroutines submitting one rand.Float64 each to 200,000 workers), that
// is most of the work: a large share of the tasks went through a wake-up and a park, and a
// goroutine per task was faster (measurements.md). The yield lets the goroutines waiting for this
// processor (the submitters, there) run first, and their tasks queue up for the worker, which then
// runs them one after another. With nothing else to run, the yield returns at once and the worker
// parks as before.
//
// The worker owes the tasks queued while it lingered the relay that begin does (passOn), or a
// burst submitted then would wait for the one worker instead of spreading over the idle ones.
// TestLingeringWorkerTakesTasksQueuedMeanwhile guards it; BenchmarkPond's 1Mu-1t workload
// measures it.
func (e *Engine[T]) linger() {
	e.waking++
	e.mu.Unlock()
	lingerYield()
	e.lock()
	e.waking--
}

// finish counts the end of one task that ended with o: its slot is free. Callers hold e.mu.
func (e *Engine[T]) finish(o Outcome) {
	e.free()
	e.end(o, 1)
}

// goexit handles a worker whose task, or whose panic handler, called runtime.Goexit: the
// goroutine is ending and nothing stops it. It counts the task, and the worker's place goes
// to a new worker: one that takes the next queued task, or an idle one when the engine would
// otherwise fall below MinWorkers.
func (e *Engine[T]) goexit(w *worker[T], panicked bool) {
	e.lock()
	o := Completed
	if panicked {
		o = Panicked
	}
	e.finish(o)
	starts := e.exit()
	if !w.transient() && !e.stopped && e.workers < e.cfg.MinWorkers {
		e.startParked()
	}
	e.mu.Unlock()
	e.launchAll(starts)
}
