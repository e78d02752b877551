package worker

// Stop stops accepting tasks. Queued tasks still run; submitters blocked on a full queue
// return Stopped. It does not wait. A second Stop does nothing.
func (e *Engine[T]) Stop() { e.stop(false) }

// StopNow stops accepting tasks and takes every queued task out, in one step under the lock,
// and returns them, oldest first: they end without running, counted as removed (see Remove).
// Nothing is accepted between the two: submitters blocked on a full queue return Stopped,
// never moved into the room the removal makes. On a stopped engine it is Remove.
func (e *Engine[T]) StopNow() []T { return e.stop(true) }

// stop is Stop, and with remove set StopNow.
func (e *Engine[T]) stop(remove bool) []T {
	e.mu.Lock()
	// Blocked submitters are refused before the queue is emptied, which would move them into
	// the room it makes (dequeue); a stopped engine has none.
	var refused []*waiter[T]
	for b := e.blocked.pop(); b != nil; b = e.blocked.pop() {
		refused = append(refused, b)
	}
	var out []T
	if remove {
		out = e.removeAll()
	}
	if e.stopped {
		e.checkExited()
		e.mu.Unlock()
		decideAll(refused, Stopped)
		return out
	}
	e.stopped = true
	close(e.done)
	starts := e.resumeForStop()
	idle := e.idle
	e.idle = nil
	e.dismiss(idle)
	e.checkExited()
	e.mu.Unlock()
	wakeAll(idle)
	e.launchAll(starts)
	decideAll(refused, Stopped)
	return out
}

// decideAll tells each of the waiters ws r.
func decideAll[T any](ws []*waiter[T], r Result) {
	for _, w := range ws {
		w.decide(r)
	}
}

// Stopped reports whether Stop was called.
func (e *Engine[T]) Stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

// Remove takes every queued task out of the queue, oldest first, and returns them: they end
// without running. Each counts as removed instead of completed, so Wait does not wait for
// them. Submitters blocked on a full queue move into the room made, and are removed with the
// rest.
func (e *Engine[T]) Remove() []T {
	e.mu.Lock()
	out := e.removeAll()
	e.checkExited()
	e.mu.Unlock()
	return out
}

// removeAll is Remove with e.mu held, without checkExited.
func (e *Engine[T]) removeAll() []T {
	var out []T
	for {
		arg, _, ok := e.dequeue()
		if !ok {
			break
		}
		if o, gone := e.claimed(arg); gone {
			e.end(o, 1) // claimed elsewhere: see Config.Take
			continue
		}
		out = append(out, arg)
	}
	e.end(removed, len(out))
	return out
}

// Each calls f with every task waiting in the queue. f runs with e.mu held and must not call
// into the engine.
func (e *Engine[T]) Each(f func(T)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue.each(f)
}

// Drained returns a channel closed when no accepted task is waiting or running, or nil if
// that is already so.
func (e *Engine[T]) Drained() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending == 0 {
		return nil
	}
	if e.drained == nil {
		e.drained = make(chan struct{})
	}
	return e.drained
}

// Exited returns a channel closed once the engine is stopped, every accepted task has ended
// and all its goroutines (workers and reaper) are gone.
func (e *Engine[T]) Exited() <-chan struct{} { return e.exited }

// exit removes the calling worker, which is about to return, from the count, and starts what
// its leaving lets start: it may have left because more workers were alive than a lowered
// limit allowed while queued tasks still wait. Callers hold e.mu and launch the starts after
// unlocking.
func (e *Engine[T]) exit() []launch[T] {
	e.workers--
	e.alive--
	starts := e.dispatch()
	e.checkExited()
	return starts
}

// gone is called by a dismissed worker as it leaves.
func (e *Engine[T]) gone() {
	e.mu.Lock()
	e.alive--
	e.checkExited()
	e.mu.Unlock()
}

// checkExited closes exited once the engine is stopped and has no task, no goroutine left and
// no sub-pool holding it, after giving the queue's last segment to the next queue of T.
// Callers hold e.mu.
func (e *Engine[T]) checkExited() {
	if e.stopped && e.alive == 0 && e.pending == 0 && !e.reaping && e.holds == 0 {
		select {
		case <-e.exited:
		default:
			e.queue.Free()
			e.stopRate()
			close(e.exited)
			if e.cfg.Exited != nil {
				e.cfg.Exited()
			}
		}
	}
}

// Hold keeps the engine from counting as exited until a matching Release. A sub-pool holds
// its parent from its creation until it has exited itself: until then it may Forward tasks to
// the parent, also after the parent stopped and its last worker exited, and the parent's
// Exited must wait for those.
//
// Lock order: Release is called with the sub-pool's lock held (Config.Exited) and takes the
// parent's, and no code takes a sub-pool's lock while it holds its parent's. Tested by
// TestExitedWaitsForHeldSubPoolsForward.
func (e *Engine[T]) Hold() {
	e.mu.Lock()
	e.holds++
	e.mu.Unlock()
}

// Release ends a Hold.
func (e *Engine[T]) Release() {
	e.mu.Lock()
	e.holds--
	e.checkExited()
	e.mu.Unlock()
}
