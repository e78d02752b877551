package worker

// Admit accepts arg whatever the queue bound, unless the engine is stopped. Keyed pools use
// it to queue a key's runner: the keyed backlog is bounded by the keyed pool itself, and a
// runner refused by a full queue would leave its key's accepted tasks without a runner.
func (e *Engine[T]) Admit(arg T) Result {
	at, ok := e.lockToSubmit()
	if !ok {
		return Stopped
	}
	s, _ := e.route(arg, false, at)
	e.mu.Unlock()
	e.launch(s)
	return Accepted
}

// Done returns a channel closed by Stop.
func (e *Engine[T]) Done() <-chan struct{} { return e.done }

// GoesOn reports whether a running task of e may start more work in the slot it holds now, as a new
// task of e would start: neither e nor an ancestor is paused, the tasks running (the caller's among
// them) are within a limit a Resize may have lowered, no task of a higher level waits in e's queue,
// no weighted task that does not fit heads it (starts stay first in, first out: see weight.go), e's
// turn at its level in the parent is not over (Config.Turn), and e and every ancestor that limits
// the rate give a token (taken). A key's turn, which runs several keyed tasks in one slot, asks it
// before each task after its first, so that every keyed task starts as a task of the pool does;
// refused, the turn ends and its runner waits in the queue again.
//
// Without a gate, weight, turn or level, and with the limit never lowered below the tasks
// running, nothing can refuse, and one atomic load answers (goOn): a key's tasks of no work
// took a fifth longer with the lock taken for each (measurements.md).
func (e *Engine[T]) GoesOn() bool {
	if e.goOn.Load() {
		return true
	}
	// Otherwise it is what e asks of a task of a sub-pool of e (Admits), and that no task of
	// a higher level waits in e's own queue.
	e.mu.Lock()
	above, _ := e.queuedFrom(0)
	behind := above || e.heavyHead()
	e.mu.Unlock()
	return !behind && e.Admits()
}
