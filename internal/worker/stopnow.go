package worker

// What StopNow needs beyond Remove: a sub-pool's workers are tasks of the parent, and each
// holds the sub-pool's task it was started for (Config.Start's first), which the sub-pool
// already counts as running. Taking such a worker out of the parent's queue (Remove,
// RemoveIf) leaves the sub-pool owing that count: Abandon settles it.

// Freeze keeps the submitters blocked on a full queue, and those that block from now on,
// where they are until Stop refuses them: a task that leaves the queue no longer moves one
// into the room it makes. It is for a StopNow over several engines (a pool and its
// sub-pools), which stop one after another: frozen first, every one of them, none of them
// accepts a submitter that was blocked when that StopNow began, whatever a task that saw
// another engine stop does meanwhile. Nor does a frozen engine lend a slot (Lends): a stop
// resumes a paused engine before the engines below it are stopped, and a function waiting
// in one of them would otherwise run their paused backlog meanwhile
// (TestAdvNestedStopNowOfAPausedRootAbandonsASubPoolsBacklog).
func (e *Engine[T]) Freeze() {
	e.mu.Lock()
	e.frozen.Store(true)
	e.mu.Unlock()
}

// DropStarted takes out of the queue a sub-pool's worker that will run nothing: same(a, v)
// tells it, for v the task the sub-pool started it for, which another party has run (see
// DropPlace). Only the newest and the oldest task of v's level are looked at, so it takes
// constant time. The worker counts as completed, as one that found nothing to run; a
// submitter blocked on the full queue moves into the room made. The caller then tells the
// sub-pool's engine (Abandon). It reports whether it took the worker out.
func (e *Engine[T]) DropStarted(v T, same func(a, b T) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.queue.dropLastAt(v, same); !ok {
		if _, ok = e.queue.dropFirstAt(v, same); !ok {
			return false
		}
	}
	e.end(Completed, 1)
	e.admitBlocked(1)
	e.checkExited()
	return true
}

// Abandon tells the engine that the worker Config.Start was asked to run for first will never
// run: first ends unrun, counted as removed, and the worker's counts are taken back. It
// reports whether another party had claimed first (Config.Take): the caller then drops it.
func (e *Engine[T]) Abandon(first T) (gone bool) {
	e.mu.Lock()
	e.waking--
	e.unrun(first)
	o, gone := e.claimed(first)
	if !gone {
		o = removed
	}
	e.end(o, 1)
	starts := e.dispatch()
	e.checkExited()
	e.mu.Unlock()
	e.launchAll(starts)
	return gone
}

// RemoveIf takes the queued tasks for which match reports true out of the queue, oldest
// first, and returns them; the others keep their order. Like Remove, they end unrun, counted
// as removed. match is called with e.mu held and must not call into e.
func (e *Engine[T]) RemoveIf(match func(T) bool) []T {
	e.mu.Lock()
	var out []T
	taken := 0 // tasks claimed elsewhere, taken out too
	n := e.queue.Len()
	for range n {
		arg, since, _ := e.queue.PopAt()
		if match(arg) {
			if o, gone := e.claimed(arg); gone {
				e.end(o, 1) // claimed elsewhere: see Config.Take
				taken++
			} else {
				out = append(out, arg)
			}
			continue
		}
		e.queue.PushAt(arg, since)
	}
	e.admitBlocked(len(out) + taken)
	e.end(removed, len(out))
	e.checkExited()
	e.mu.Unlock()
	return out
}

// DropPlace takes v's place out of the queue, for a party that claimed v while it was queued
// and has run it (RunClaimed): a worker would drop the place when it met it, but until then
// the place takes room in a bounded queue. A submitter blocked on the full queue moves into
// the room made. Only the newest and the oldest task of v's level are looked at (same
// tells v's place), so DropPlace takes constant time: the newest is where the last function a
// waiting function queued sits, the oldest where a worker would meet the place next. A place
// with other tasks queued both before and behind it stays for a worker.
// It reports whether it took the place out.
func (e *Engine[T]) DropPlace(v T, same func(a, b T) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, last := e.queue.dropLastAt(v, same)
	first := false
	if !last {
		at, first = e.queue.dropFirstAt(v, same)
	}
	if !last && !first {
		return false
	}
	o, gone := e.claimed(v)
	if !gone { // not a place after all: the engine still has v, where it was
		if last {
			e.queue.PushAt(v, at)
		} else {
			e.queue.PushFrontAt(v, at)
		}
		return false
	}
	e.end(o, 1)
	e.admitBlocked(1)
	e.checkExited()
	return true
}
