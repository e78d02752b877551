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
func (e *Engine[T]) overflow(arg T, done <-chan struct{}, since int64) Result {
	switch e.cfg.Overflow {
	case Reject:
		e.refuse(Full)
		e.mu.Unlock()
		return Full
	case DiscardOldest:
		if e.discardOldest(arg) {
			return Accepted
		}
		// The oldest is a sub-pool's worker, which holds an accepted task of the sub-pool and
		// must not be dropped: wait for room as Block does.
	case CallerRuns:
		if e.cfg.MaxWait <= 0 {
			e.mu.Unlock()
			return e.runPaced(arg, since, done)
		}
	}
	if e.cfg.LimitBlocked && e.blocked.n >= e.cfg.MaxBlocked {
		if e.cfg.Overflow == CallerRuns {
			e.mu.Unlock()
			return e.runPaced(arg, since, done)
		}
		e.refuse(Full)
		e.mu.Unlock()
		return Full
	}
	var expire <-chan time.Time
	if e.cfg.MaxWait > 0 {
		t := time.NewTimer(e.cfg.MaxWait)
		defer t.Stop()
		expire = t.C
	}
	r := e.blockUntil(arg, done, expire, since)
	if r == inline {
		return e.runPaced(arg, since, done)
	}
	return r
}

// runPaced runs arg on the caller for CallerRuns once a worker's start could happen: no
// pause of e or of its ancestors holds starts back and their rate limits give a token
// (Lends), decided under e.mu as a worker's start is (runInline). It looks again every
// PausePoll: a token falling due tells no one. done closing first cancels the submit; e or
// a pool above it stopping while it waits refuses it, as a stop refuses the submitters
// blocked on a full queue (the task is not accepted until it has run).
func (e *Engine[T]) runPaced(arg T, since int64, done <-chan struct{}) Result {
	for waited := false; ; waited = true {
		if waited && e.Ended() {
			return Stopped
		}
		if e.Lends() && e.runInline(arg, since) {
			return Accepted
		}
		t := time.NewTimer(PausePoll)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			e.CountCanceled()
			return Canceled
		}
	}
}

// Ended reports whether e or a pool above it was stopped. A parent's stop resumes the parent
// before it stops its sub-pools, so a sub-pool's own flag alone would come too late.
func (e *Engine[T]) Ended() bool {
	return e.Stopped() || (e.cfg.Parent != nil && e.cfg.Parent.Ended())
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
	if w.here {
		return lookAgain, true // SubmitOrRun's: see there
	}
	if e.cfg.Overflow == CallerRuns {
		return inline, true
	}
	e.refuse(Full)
	return Full, true
}

// lookAgain is block's answer to SubmitOrRun when its wait for room ran out: it looks again
// whether the engine is still paused.
const lookAgain Result = 254

// discardOldest is DiscardOldest's answer to a full queue: arg takes the place of the task
// queued longest (dropOldest), which goes to the discard handler and the Observer. It reports
// true with e.mu released. It reports false, with e.mu still held, when the only tasks it
// could drop must be kept (Config.Keep, sub-pools' workers): arg must wait for room as under
// Block. Callers hold e.mu.
func (e *Engine[T]) discardOldest(arg T) bool {
	old, since, dropped, ok := e.dropOldest(arg)
	if !ok {
		return false
	}
	// The task dropped may have been a heavy one at the head, holding back lighter ones
	// behind it that fit now.
	starts := e.dispatch()
	e.mu.Unlock()
	e.launchAll(starts)
	if dropped {
		// The dropped task is settled before the Observer hears of it: a hook that calls
		// runtime.Goexit must not leave a future or a group waiting for it
		// (TestGoexitInDiscardedHookStillFailsTheDroppedFunction).
		if e.cfg.Discard != nil {
			e.cfg.Discard(old)
		}
		e.discarded(old, since)
	}
	return true
}

// dropOldest replaces the task queued longest with arg, and returns it with its submit stamp
// (for the Observer), unless Config.Keep says it must stay. With levels, the task queued
// longest at the lowest level whose head may be dropped goes (levelQueue.dropFrom). Tasks at
// the head that another party claimed (Config.Take) are dropped first: if that makes room,
// arg takes it and nothing is discarded (dropped false). Callers hold e.mu.
func (e *Engine[T]) dropOldest(arg T) (old T, since int64, dropped, ok bool) {
	// The places claimed elsewhere are counted once arg is: ending them first could take
	// pending to 0 and release a Wait before arg, accepted in the same step, has run.
	var gone []Outcome
	defer func() {
		for _, o := range gone {
			e.end(o, 1)
		}
	}()
	var zero T
	for {
		if e.queue.Len() < e.cfg.QueueSize {
			e.queue.PushAt(arg, e.stampNow())
			e.accept()
			return zero, 0, false, true
		}
		f := e.queue.dropFrom(e.cfg.Keep)
		if f == nil {
			return zero, 0, false, false
		}
		old, _ = f.Peek()
		o, claimed := e.claimed(old)
		_, since = e.queue.popFrom(f)
		if claimed {
			gone = append(gone, o)
			continue
		}
		e.queue.PushAt(arg, e.stampNow())
		e.accept()
		e.end(discarded, 1)
		return old, since, true, true
	}
}

// runInline runs arg on the calling submitter (CallerRuns), with no lock held. It is not
// counted against the limit, nor in Running or pending: it counts as accepted, caller-run
// and completed or panicked together, once it has ended, so a snapshot never sees it half
// counted. A panic goes to the panic handler, on the caller; a runtime.Goexit counts it as
// completed and goes on ending the caller's goroutine. The Observer is told of its start and
// end as of a worker's task, since being its submit time.
// It reports false, running nothing, if e or a pool above it was paused or stopped since the
// caller asked Lends: the start is decided under e.mu, so that none begins once a Pause or a
// Stop of e has returned. A stop of a pool above resumes that pool before the pools below it
// learn of the stop, so Halted alone would let a submitter that waited for a Resume run its
// task once the stop had returned.
func (e *Engine[T]) runInline(arg T, since int64) bool { return e.runHere(arg, since, false) }

// RunClaimed runs arg on the caller, as CallerRuns does, for a caller that claimed arg while
// it was queued (a function that waits for its own work and runs it meanwhile): arg was
// counted as accepted when it was queued, and counts now as completed or panicked only. Its
// place in the queue is dropped uncounted when met (Run's Outcome Claimed, Config.Gone).
// Config.Begin is not asked: the caller's claim decided. same tells arg's place (see
// DropPlace): arg is timed from its submit, the time kept with its place, when the place is
// the newest or the oldest of its level, as it is when the caller queued arg last or a worker
// is about to meet it; otherwise, found in constant time or not at all, from now.
func (e *Engine[T]) RunClaimed(arg T, same func(a, b T) bool) {
	if e.timed {
		e.mu.Lock()
		at, ok := e.queue.stampAtEnd(arg, same)
		e.mu.Unlock()
		if ok {
			e.runHere(arg, at, true)
			return
		}
	}
	e.runHere(arg, e.now(), true)
}

// now returns the current time as a submit's stamp (see stamp), or 0 when the engine does
// not observe.
func (e *Engine[T]) now() int64 {
	if !e.timed {
		return 0
	}
	return e.stamp()
}

// runHere is runInline, and RunClaimed with claimed set.
func (e *Engine[T]) runHere(arg T, since int64, claimed bool) bool {
	// A weighted task gives back the slots beyond its first when it returns (Unhold), so it
	// takes them here too, though its first slot is the caller's: without them the count of
	// held slots would go below zero and let heavier tasks start than the limit allows
	// (TestFuzzFindingWeightedCallerRunsKeepsTheLimit).
	e.lock()
	// Halted before the stops: a stop resumes a pool with its stopped flag already set, under
	// that pool's lock, which Ended takes.
	if !claimed && (e.Halted() || e.stopped || (e.cfg.Parent != nil && e.cfg.Parent.Ended())) {
		e.mu.Unlock()
		return false
	}
	e.hold(arg)
	e.mu.Unlock()
	var w *worker[T] // the submitter's part in observing, as a worker's: see observe.go
	o, ended := Completed, false
	defer func() {
		// arg, or a Started hook, called runtime.Goexit; not a Finished hook (w.inHook).
		if !ended && e.reports(arg) && !w.inHook() {
			e.cfg.Goexited(arg)
		}
		// Deferred, as the Finished hook may call runtime.Goexit, which ends this function
		// too: the task is counted all the same.
		defer func() {
			e.lock()
			if claimed {
				e.ranClaimed(o)
			} else {
				e.ranHere(o)
			}
			e.mu.Unlock()
		}()
		if w != nil {
			e.finished(w, o == Panicked)
		}
	}()
	if !claimed {
		if o = e.ready(arg); o != Completed {
			ended = true
			return true
		}
	}
	if e.timed {
		w = &worker[T]{observed: observed{since: since}}
		e.started(w, arg)
	}
	v, stack, ran, ok := e.runOne(arg)
	switch {
	case ok:
		o = ran
	case e.reports(arg):
		e.cfg.Panicked(arg, v, stack)
	default:
		o = Panicked
	}
	if e.timed {
		w.ended = true
		e.finished(w, o == Panicked)
	}
	ended = true
	if o == Panicked {
		e.handlePanic(v, stack)
	}
	return true
}

// runOne runs arg; ok is false when it panicked, with what recover returned and the stack.
func (e *Engine[T]) runOne(arg T) (v any, stack []byte, o Outcome, ok bool) {
	defer func() {
		if !ok && (!e.cfg.NoRecover || e.reports(arg)) {
			v = recover()
			stack = debug.Stack()
		}
	}()
	if e.cfg.RunInline != nil {
		o = e.cfg.RunInline(arg)
	} else {
		o = e.run(arg)
	}
	return nil, nil, o, true
}
