package worker

import (
	"runtime"
	"time"
)

// Submit offers arg to the engine. With wait false it never blocks; with wait true it blocks
// while a bounded queue is full (unless the engine is NonBlocking) until there is room, the
// engine stops, or done (which may be nil) is closed.
func (e *Engine[T]) Submit(arg T, wait bool, done <-chan struct{}) Result {
	// lockToSubmit written out: every submit takes this path, and lockToSubmit, with two
	// calls, is not inlined; as a call, Invoke took 6% to 12% longer (measurements.md).
	var at int64
	if e.timed {
		at = e.stamp()
	}
	e.lock()
	if e.stopped {
		e.mu.Unlock()
		return Stopped
	}
	// While tasks are queued and the queue has room, route queues arg and starts nothing:
	// for a plain engine that is written out, as most submits under load take it (see next).
	var s launch[T]
	var ok bool
	if q := &e.queue.fifo; e.plain() && q.Len() > 0 && (e.cfg.QueueSize == 0 || q.Len() < e.cfg.QueueSize) {
		if e.timed {
			q.PushAt(arg, at)
		} else {
			q.Push(arg)
		}
		e.accept()
	} else if s, ok = e.route(arg, true, at); !ok {
		if !wait || e.cfg.NonBlocking {
			e.refuse(Full)
			e.mu.Unlock()
			return Full
		}
		if e.overflowing() {
			return e.overflow(arg, done, at) // unlocks
		}
		return e.block(arg, done, at) // unlocks
	}
	crowded := !s.starts() && e.crowded()
	if crowded {
		e.yielding.Add(1)
	}
	e.mu.Unlock()
	e.launch(s)
	if crowded {
		crowdedYield()
		e.yielding.Add(-1)
	}
	return Accepted
}

// lockToSubmit takes e.mu for a submit and returns the submit time for the Observer (0 for
// an engine that does not observe): the clock is read before the lock, to keep it out of the
// critical section. It reports false, with e.mu released, if the engine is stopped.
func (e *Engine[T]) lockToSubmit() (at int64, ok bool) {
	if e.timed {
		at = e.stamp()
	}
	e.lock()
	if e.stopped {
		e.mu.Unlock()
		return 0, false
	}
	return at, true
}

// Forward accepts arg whatever the queue bound and even after Stop. Sub-pools use it to run
// their accepted tasks on the parent's workers: refusing them would lose accepted work.
func (e *Engine[T]) Forward(arg T) {
	var at int64
	if e.timed {
		at = e.stamp()
	}
	e.lock()
	s, _ := e.route(arg, false, at)
	e.mu.Unlock()
	e.launch(s)
}

// ForwardAhead is Forward for a sub-pool's worker that replaces one stopped between two tasks
// (see Config.Start): with tasks queued, it goes second at its level, behind the head, so
// that it and the tasks it waits with take turns.
func (e *Engine[T]) ForwardAhead(arg T) {
	e.lock()
	if e.queue.Len() == 0 {
		e.mu.Unlock()
		e.Forward(arg)
		return
	}
	var at int64
	if e.timed {
		at = e.stamp()
	}
	e.queue.PushSecondAt(arg, at)
	e.accept()
	e.mu.Unlock()
}

// Back-pressure on an unbounded queue. A submitter that runs far ahead of the workers gains
// nothing: the tasks wait either way. But the backlog costs: every garbage collection scans it, so
// a long queue slows down every task that allocates (TaskQ's JSON workload ran slower than with a
// 1024-slot channel: measurements.md has the figures). So while crowdedPerWorker or more tasks per
// live worker, and at least crowdedFloor tasks, wait, every submit yields its processor with
// runtime.Gosched. That is not blocking (Submit promises to block only on a full bounded queue):
// the submitter goes on as soon as the scheduler gets back to it, which on a machine whose cores
// all run workers takes about as long as the workers need to eat into the backlog, and at once on a
// machine with an idle processor. Yielding on every submit rather than on every 256th keeps the
// backlog near the threshold; with the sparser yield it still grew between yields.
//
// The threshold counts the workers alive, not the limit. A pool of CPU-bound tasks keeps few
// workers alive whatever its limit: the waking gate starts them one at a time, and each new
// one waits for a processor behind the busy ones (ultrapool's AES-CBC workload ran on a
// hundred or so of its 10,000 allowed workers, behind a long queue). A pool whose
// workers sleep has many alive, and its threshold rises with them: there the submitter's
// speed is what keeps the workers busy, and a yielding submitter would wait behind every
// worker its timer woke.
//
// A yield throttles only a submitter that comes back to submit more. Where the backlog is
// built by many goroutines that submit once each (pond's 1Mu-1t: a million goroutines, one
// task each), it throttles nobody and sends each of them through the scheduler a second time:
// without a cap, that workload took far longer. So at most crowdedYielders
// submitters yield at once, and the others go on without yielding. That many covers the
// looping submitters of the workloads measured (ultrapool's 200) and spares the one-shot
// ones. A cap of the live workers' number (at least 64) spared 1Mu-1t too, but left most of
// ultrapool's 200 submitters unthrottled: AES-CBC on 1 kB with FuncPool went back to being as
// slow as with no yield at all (measurements.md).
//
// TestSubmitYieldsWhenFarAhead, TestCrowdedThreshold and TestCrowdedYieldersAreCapped guard
// this; BenchmarkTaskQ's json task, BenchmarkUltrapool's AES-CBC tasks and BenchmarkPond's
// 1Mu-1t workload measure it.
const (
	crowdedPerWorker = 64
	crowdedFloor     = 4096
	crowdedYielders  = 256
)

// crowdedYield is the yield of a crowded submit; tests replace it to hold submitters in it.
var crowdedYield = runtime.Gosched

// crowded reports whether the submit that just queued a task should yield. Callers hold e.mu.
func (e *Engine[T]) crowded() bool {
	n := e.queue.Len()
	return n >= crowdedFloor && n/crowdedPerWorker >= e.workers &&
		e.yielding.Load() < crowdedYielders
}

// SubmitOrRun is Submit for a submitter that holds a slot of the engine (a function running
// on it, or on a sub-pool of it): where Submit would block on a full bounded queue, the
// submitter runs arg itself, as CallerRuns does, in the slot it holds, and it counts as
// caller-run. Under Reject or CallerRuns a full queue does not block: it is Submit. Under
// DiscardOldest it drops the oldest task it may, decided under the lock that found the queue
// full; where it may drop none (the heads are places claimed elsewhere and tasks it must
// keep, as sub-pools' workers), it is Block's case. While the engine or an ancestor is
// paused, or a rate limit has no token for it
// (Lends), no task may start, so it waits for room, looking again every PausePoll and at the
// engine's Resume, until done is closed: the slot it holds may be the one that would make room.
func (e *Engine[T]) SubmitOrRun(arg T, done <-chan struct{}) Result {
	var since int64 // the submit time of the first look, which the task keeps through the others
	for look := 0; ; look++ {
		at, ok := e.lockToSubmit()
		if !ok {
			return Stopped
		}
		if look == 0 {
			since = at
		} else {
			at = since
		}
		s, ok := e.route(arg, true, at)
		if ok {
			e.mu.Unlock()
			e.launch(s)
			return Accepted
		}
		if e.cfg.NonBlocking || (e.cfg.Overflow != Block && e.cfg.Overflow != DiscardOldest) {
			e.mu.Unlock()
			return e.Submit(arg, true, done)
		}
		// Not Submit: where DiscardOldest may drop nothing, Submit would wait for room that
		// this caller's own slot may be the one to make.
		if e.cfg.Overflow == DiscardOldest && e.discardOldest(arg) {
			return Accepted
		}
		if e.Lends() {
			e.mu.Unlock()
			if e.runInline(arg, at) {
				return Accepted
			}
			if e.Ended() {
				return Stopped
			}
			continue // paused meanwhile: look again
		}
		t := time.NewTimer(PausePoll)
		r := e.blockHere(arg, done, t.C, e.resumedLocked(), at) // unlocks
		t.Stop()
		if r != lookAgain {
			return r
		}
	}
}

// PausePoll is how often a task that waits to start work in the slot it holds (SubmitOrRun,
// and crew's waits that help) looks again whether a pause or a rate limit still holds it back:
// a rate limit's next token tells no one, and a Resume only those who asked (Resumed).
const PausePoll = 2 * time.Millisecond

// blockHere is blockUntil for SubmitOrRun: expire, or resumed closing, makes it look again
// (lookAgain), counted nowhere. It is entered with e.mu held and releases it.
func (e *Engine[T]) blockHere(arg T, done <-chan struct{}, expire <-chan time.Time, resumed <-chan struct{}, at int64) Result {
	return e.blockWaiter(arg, done, expire, resumed, true, at)
}
