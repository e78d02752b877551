package worker

// Counting. The engine's counters are written by the functions below and nowhere else, so that
// each task is counted once as it enters (accept, or refuse), while it holds a slot (slot,
// unslot) and as it leaves, with its outcome (end). The one exception is next's plain case,
// the hot path, which writes what finish would (end Completed, and a slot handed straight to
// the next task) itself: see next. Callers hold e.mu.

// accept counts one accepted task: it is pending until end counts it.
func (e *Engine[T]) accept() {
	e.accepted++
	e.pending++
}

// refuse counts a submit that was not accepted: r is Full (rejected) or Canceled (its context
// ended first). Stopped is counted nowhere.
func (e *Engine[T]) refuse(r Result) {
	switch r {
	case Full:
		e.rejected++
	case Canceled:
		e.canceled++
	}
}

// slot counts a task that takes a slot: it runs, or is handed to a worker to run.
func (e *Engine[T]) slot() { e.running++ }

// unslot frees the slots of arg, a task that has ended or was handed out and then given back
// unrun: the one it ran in and, for a weighted task, those hold counted beyond it. Without
// the latter the slots stayed held for good and the engine ran fewer tasks than its limit from
// then on (TestGivenBackWeightedTaskFreesItsSlots).
func (e *Engine[T]) unslot(arg T) {
	e.unhold(arg)
	e.free()
}

// free counts the end of a task's slot. A weighted task's other slots are given back by the
// task itself (Unhold) or by unslot.
func (e *Engine[T]) free() {
	e.running--
	if (e.running == 0 || e.cfg.Start != nil) && e.quiet != nil && e.begun() == 0 {
		close(e.quiet)
		e.quiet = nil
	}
}

// begun returns how many tasks run: running, less a sub-pool's tasks handed to workers that
// wait in the parent's queue (waking counts those, as a sub-pool's workers never linger; see
// Counters). Callers hold e.mu.
func (e *Engine[T]) begun() int {
	if e.cfg.Start != nil {
		return e.running - e.waking
	}
	return e.running
}

// end counts n accepted tasks that left the engine with outcome o: they are no longer
// pending (Wait no longer waits for them), and count in o's counter. Claimed counts in none:
// the party that claimed the task counted it (RunClaimed).
func (e *Engine[T]) end(o Outcome, n int) {
	switch o {
	case Completed:
		e.completed += uint64(n)
	case Panicked:
		e.panicked += uint64(n)
	case Skipped:
		e.skipped += uint64(n)
	case removed:
		e.removed += uint64(n)
	case discarded:
		e.dropped += uint64(n)
	case Claimed:
		e.lent += n
	}
	e.pending -= n
	if n > 0 && e.pending == 0 && e.drained != nil {
		close(e.drained)
		e.drained = nil
	}
}

// ranHere counts a task that ran, or was skipped, on its submitter (CallerRuns): accepted
// and ended at once, so a snapshot never sees it half counted.
func (e *Engine[T]) ranHere(o Outcome) {
	e.accept()
	if o != Skipped {
		e.callerRan++
	}
	e.end(o, 1)
}

// ranClaimed counts a task that a party other than a worker claimed while it was queued and
// ran (RunClaimed): accepted when it was queued, it counts its outcome now; its place in the
// queue, reached later, ends as Claimed.
func (e *Engine[T]) ranClaimed(o Outcome) {
	e.lent--
	switch o {
	case Completed:
		e.completed++
	case Panicked:
		e.panicked++
	case Skipped:
		e.skipped++
	}
}

// claimed claims arg, queued and about to be taken out unrun, and reports whether another
// party claimed it first (Config.Take), with the outcome it then ends with.
func (e *Engine[T]) claimed(arg T) (Outcome, bool) {
	if e.cfg.Take == nil {
		return 0, false
	}
	return e.cfg.Take(arg)
}
