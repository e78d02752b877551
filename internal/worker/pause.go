package worker

// Pausing, and the gate that pauses and rate limits share.
//
// A paused engine starts nothing: mayStart says no, so a submit queues its task, a worker that
// finishes a task takes no other, and a sub-pool's worker waiting in the parent's queue gives
// its first task back when it gets its turn (Serve). Pause takes e.mu, and every start is
// decided under e.mu by mayStart, so no task starts once Pause has returned. Resume lifts the
// pause and dispatches.
//
// A sub-pool's tasks run on its parent's workers, and everything above a sub-pool must hold
// each of its tasks at its start: a parent's pause, a shrunk limit, a rate limit, a higher
// priority waiting. A sub-pool's first start of a task is a worker forwarded to the parent's
// queue (Config.Start), where the parent decides its start as for any of its tasks, at the
// sub-pool's level: so the sub-pool's own mayStart looks at its own pause and rate only, and
// a paused ancestor's queue holds the forwarded workers in order until Resume. A worker that
// is running and would go on to the sub-pool's next task is a start the parent does not see,
// so it asks the ancestors itself (Admits) and, refused, gives the parent's worker back and
// leaves; its sub-pool forwards a new worker for the task (exit dispatches), which waits in
// the parent's queue like any task.

// regate recomputes gated. Callers hold e.mu, or own e alone (New).
func (e *Engine[T]) regate() {
	e.gated = 0
	if e.paused.Load() || e.rate.Load() != nil || e.cfg.Parent != nil || e.cfg.Guarded || e.relays > 0 {
		e.gated = 1
	}
	e.reopen()
}

// reopen recomputes goOn, which GoesOn reads without the lock: set while nothing but the
// limit may hold a start back (no gate, weight, turn or level) and the tasks running are
// within the limit. Without a gate, weight or sub-pool, only a Resize takes them beyond it,
// and Resize calls reopen: a task holding its slot may go on while goOn is set. After a
// Resize found more running than its limit, goOn stays clear until the next reopen, and
// GoesOn takes the lock. Callers hold e.mu, or own e alone (New).
func (e *Engine[T]) reopen() {
	e.goOn.Store(e.gated == 0 && e.sched == 0 && e.queue.lv == nil && e.running+e.held <= e.max)
}

// openFor reports whether e's own pause and rate limit let arg, the task about to leave the
// queue, start now, and if so takes the start's rate token. A task that will not run
// (Config.Doomed) leaves without a token, so that a backlog of canceled or skipped functions
// does not hold the live ones behind it back at the rate. Ancestors are asked by the
// parent's own start of a forwarded worker, or by Admits. Callers hold e.mu.
func (e *Engine[T]) openFor(arg T) bool {
	if e.paused.Load() {
		return false
	}
	b := e.rate.Load()
	return b == nil || (e.cfg.Doomed != nil && e.cfg.Doomed(arg)) || b.take()
}

// Halted reports whether e or an ancestor is paused. It takes no lock.
func (e *Engine[T]) Halted() bool {
	return e.paused.Load() || (e.cfg.Parent != nil && e.cfg.Parent.Halted())
}

// Admits implements Gate for the engines below e: see Gate. It takes e.mu, so callers hold
// no lock of e or of its ancestors (a sub-pool's lock is fine: locks go child, then parent).
func (e *Engine[T]) Admits() bool {
	if e.paused.Load() {
		return false
	}
	e.mu.Lock()
	// e's own turn at its level in its parent counts too: a task of a sub-pool of e starts
	// as a task of e would, and not while a higher level waits above e
	// (TestSubPoolOfASubPoolYieldsToAHigherLevelAboveIt).
	within := e.running+e.held <= e.max && !e.turnOver() && !e.heavyHead()
	e.mu.Unlock()
	if !within {
		return false
	}
	if b := e.rate.Load(); b != nil && !b.take() {
		return false
	}
	return e.cfg.Parent == nil || e.cfg.Parent.Admits()
}

// Lends reports whether a task of e may start in a slot lent to it by a running task that
// waits for it (RunClaimed, SubmitOrRun): neither e nor an ancestor is paused, and each that
// limits the rate gives a token (taken). The limits are not asked: the slot is the waiting
// task's, counted already, and a waiter kept from lending it by a lowered limit would wait
// for ever, its work having no other slot to run in. Every pause is asked before any token is
// taken. An engine frozen by a StopNow lends nothing (see Freeze). It takes no lock of e.
func (e *Engine[T]) Lends() bool {
	return !e.Halted() && !e.frozen.Load() && e.Paces()
}

// Paces reports whether the rate limits of e and its ancestors each give a token (taken) for
// a start now, pauses aside: a task that CallerRuns runs on its submitter starts so. It takes
// no lock of e.
func (e *Engine[T]) Paces() bool {
	if b := e.rate.Load(); b != nil && !b.take() {
		return false
	}
	return e.cfg.Parent == nil || e.cfg.Parent.Paces()
}

// Pause holds every start back until Resume (or Stop). Tasks running go on; submits are still
// accepted and queue. It is idempotent. On a stopped engine it does nothing: Stop resumed it
// once, and nothing would resume it again, so its queued tasks would never start.
func (e *Engine[T]) Pause() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.paused.Store(true)
	e.regate()
	e.mu.Unlock()
}

// Resume lifts a Pause and starts what may start. Sub-pools need no call: a pause never holds
// their hand-outs back, only their forwarded workers, which wait in this engine's queue.
// Resuming an engine that is not paused does nothing.
func (e *Engine[T]) Resume() {
	e.mu.Lock()
	if !e.paused.Load() {
		e.mu.Unlock()
		return
	}
	e.paused.Store(false)
	e.regate()
	e.wakeResumed()
	starts := e.dispatch()
	e.mu.Unlock()
	e.launchAll(starts)
}

// Resumed returns a channel closed when the engine is next resumed (by Resume, or by Stop),
// or nil if it is not paused: for a task that waits to run work in the slot it holds (Lends),
// which a Resume's dispatch, starting workers, does not tell.
func (e *Engine[T]) Resumed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resumedLocked()
}

// resumedLocked is Resumed for a caller that holds e.mu.
func (e *Engine[T]) resumedLocked() <-chan struct{} {
	if !e.paused.Load() {
		return nil
	}
	if e.resumed == nil {
		e.resumed = make(chan struct{})
	}
	return e.resumed
}

// wakeResumed closes the channel Resumed gave out, if any. Callers hold e.mu.
func (e *Engine[T]) wakeResumed() {
	if e.resumed != nil {
		close(e.resumed)
		e.resumed = nil
	}
}

// Paused reports whether the engine is paused.
func (e *Engine[T]) Paused() bool { return e.paused.Load() }

// Redispatch starts what may start: the rate timer's call once a token is due.
func (e *Engine[T]) Redispatch() {
	e.mu.Lock()
	starts := e.dispatch()
	e.mu.Unlock()
	e.launchAll(starts)
}

// Quiet returns a channel closed once no task of the engine runs, or nil if none runs now.
// A sub-pool's task handed to a worker that waits in the parent's queue does not run yet:
// the parent may keep it waiting for as long as it is busy or paused, and the worker gives
// it back if the sub-pool is paused when its turn comes (Serve).
func (e *Engine[T]) Quiet() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.begun() == 0 {
		return nil
	}
	if e.quiet == nil {
		e.quiet = make(chan struct{})
	}
	return e.quiet
}

// resumeForStop lifts a pause as Stop does: accepted tasks must still run. It returns the
// starts to launch after unlocking. Callers hold e.mu.
func (e *Engine[T]) resumeForStop() []launch[T] {
	if !e.paused.Load() {
		return nil
	}
	e.paused.Store(false)
	e.regate()
	e.wakeResumed()
	return e.dispatch()
}

// unrun takes back the count of a worker that Start promised and that will never serve first:
// handOut counted it running, a worker, alive and waking. Callers hold e.mu.
func (e *Engine[T]) unrun(first T) {
	e.relayBack(first)
	e.unslot(first)
	e.workers--
	e.alive--
}

// rest is what a worker whose task begin gave back does: it parks (true) or, if it should not
// stay, leaves (false).
func (e *Engine[T]) rest(w *worker[T]) bool {
	e.lock()
	if e.leaving(w) {
		starts := e.exit()
		e.mu.Unlock()
		e.launchAll(starts)
		return false
	}
	// The engine may have been resumed since begin gave the task back, and that Resume's
	// dispatch found no worker to start it on: this one was neither parked nor free to be
	// counted as a new one. So once parked, it dispatches, which may hand it the task again.
	// Without this, the task waited with every worker parked until the next submit, and after
	// Stop for ever (TestRestingWorkerStartsWhatAResumeLeft, found by FuzzEngineOperations).
	e.park(w)
	starts := e.dispatch()
	e.mu.Unlock()
	e.launchAll(starts)
	return true
}

// giveBack puts first, which a Config.Start worker was about to run, back at the front of
// the queue: the engine holds starts back. Callers hold e.mu, with e.waking already lowered.
func (e *Engine[T]) giveBack(first T, since int64) {
	e.unrun(first)
	e.queue.PushFrontAt(first, since)
	e.checkExited()
}
