package worker

import (
	"runtime/debug"
	"time"
)

// Overflow is what a blocking Submit does when the bounded queue is full.
type Overflow uint8

// The overflow policies. crew's constants are defined from these, so the values agree by
// construction.
const (
	Block         Overflow = iota // wait for room (MaxWait bounds the wait)
	Reject                        // refuse: Full
	CallerRuns                    // run the task on the submitter (after MaxWait, if set)
	DiscardOldest                 // accept it and drop the task queued longest
)

// overflowing reports whether a full queue is handled by overflow rather than a plain block.
func (e *Engine[T]) overflowing() bool {
	return e.cfg.Overflow != Block || e.cfg.MaxWait > 0 || e.cfg.LimitBlocked
}

// overflow handles a blocking submit that found the bounded queue full, with a policy or a
// bound on waiting set. It is entered with e.mu held and releases it. Nothing here is on the
// path of a submit that finds room.
func (e *Engine[T]) overflow(arg T, done <-chan struct{}) Result {
	since := e.at // the submit time, for a task the caller runs (Submit set it under e.mu)
	switch e.cfg.Overflow {
	case Reject:
		e.rejected++
		e.mu.Unlock()
		return Full
	case DiscardOldest:
		if old, since, ok := e.dropOldest(arg); ok {
			// The task dropped may have been a heavy one at the head, holding back lighter
			// ones behind it that fit now.
			starts := e.dispatch()
			e.mu.Unlock()
			e.launchAll(starts)
			// The dropped task is settled before the Observer hears of it: a hook that calls
			// runtime.Goexit must not leave a future or a group waiting for it
			// (TestGoexitInDiscardedHookStillFailsTheDroppedFunction).
			if e.cfg.Discard != nil {
				e.cfg.Discard(old)
			}
			e.discarded(old, since)
			return Accepted
		}
		// The oldest is a sub-pool's worker, which holds an accepted task of the sub-pool and
		// must not be dropped: wait for room as Block does.
	case CallerRuns:
		if e.cfg.MaxWait <= 0 {
			e.mu.Unlock()
			e.runInline(arg, since)
			return Accepted
		}
	}
	if e.cfg.LimitBlocked && e.blocked.n >= e.cfg.MaxBlocked {
		if e.cfg.Overflow == CallerRuns {
			e.mu.Unlock()
			e.runInline(arg, since)
			return Accepted
		}
		e.rejected++
		e.mu.Unlock()
		return Full
	}
	var expire <-chan time.Time
	if e.cfg.MaxWait > 0 {
		t := time.NewTimer(e.cfg.MaxWait)
		defer t.Stop()
		expire = t.C
	}
	r := e.blockUntil(arg, done, expire)
	if r == inline {
		e.runInline(arg, since)
		return Accepted
	}
	return r
}

// inline is block's answer when MaxWait ran out under CallerRuns: the caller runs the task.
const inline Result = 255

// expired removes the waiter w, whose MaxWait ran out, if no worker decided for it meanwhile.
// It reports false if one did; the waiter must then take that decision. Callers hold e.mu.
func (e *Engine[T]) expired(w *waiter[T]) (Result, bool) {
	if !w.listed {
		return 0, false
	}
	e.blocked.remove(w)
	if e.cfg.Overflow == CallerRuns {
		return inline, true
	}
	e.rejected++
	return Full, true
}

// dropOldest replaces the task queued longest with arg, and returns it with its submit stamp
// (for the Observer), unless Config.Keep says it must stay. Callers hold e.mu.
func (e *Engine[T]) dropOldest(arg T) (old T, since int64, ok bool) {
	old, ok = e.queue.Peek()
	if !ok || (e.cfg.Keep != nil && e.cfg.Keep(old)) {
		var zero T
		return zero, 0, false
	}
	e.queue.Pop()
	e.dropped++
	e.pending--
	e.queue.Push(arg)
	if e.timed {
		since, _ = e.stamps.Pop()
		e.stamps.Push(e.clock())
	}
	e.accept()
	return old, since, true
}

// runInline runs arg on the calling submitter (CallerRuns), with no lock held. It is not
// counted against the limit, nor in Running or pending: it counts as accepted, caller-run
// and completed or panicked together, once it has ended, so a snapshot never sees it half
// counted. A panic goes to the panic handler, on the caller; a runtime.Goexit counts it as
// completed and goes on ending the caller's goroutine. The Observer is told of its start and
// end as of a worker's task, since being its submit time.
func (e *Engine[T]) runInline(arg T, since int64) {
	// A weighted task gives back the slots beyond its first when it returns (Unhold), so it
	// takes them here too, though its first slot is the caller's: without them the count of
	// held slots would go below zero and let heavier tasks start than the limit allows
	// (TestFuzzFindingWeightedCallerRunsKeepsTheLimit).
	e.lock()
	e.hold(arg)
	e.mu.Unlock()
	var w *worker[T] // the submitter's part in observing, as a worker's: see observe.go
	panicked, ended := false, false
	defer func() {
		// arg, or a Started hook, called runtime.Goexit; not a Finished hook (w.inHook).
		if !ended && e.reports(arg) && !w.inHook() {
			e.cfg.Goexited(arg)
		}
		if e.timed {
			e.finished(w, panicked)
		}
		e.lock()
		e.accepted++
		e.callerRan++
		if panicked {
			e.panicked++
		} else {
			e.completed++
		}
		e.mu.Unlock()
	}()
	if e.timed {
		w = &worker[T]{observed: observed{since: since}}
		e.started(w, arg)
	}
	v, stack, ok := e.runOne(arg)
	switch {
	case ok:
	case e.reports(arg):
		e.cfg.Panicked(arg, v, stack)
	default:
		panicked = true
	}
	if e.timed {
		w.ended = true
		e.finished(w, panicked)
	}
	ended = true
	if panicked {
		e.handlePanic(v, stack)
	}
}

// runOne runs arg; ok is false when it panicked, with what recover returned and the stack.
func (e *Engine[T]) runOne(arg T) (v any, stack []byte, ok bool) {
	defer func() {
		if !ok && (!e.cfg.NoRecover || e.reports(arg)) {
			v = recover()
			stack = debug.Stack()
		}
	}()
	if e.cfg.RunInline != nil {
		e.cfg.RunInline(arg)
	} else {
		e.cfg.Run(arg)
	}
	return nil, nil, true
}
