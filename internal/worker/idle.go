package worker

// worker is one goroutine's parking spot. A submitter hands it a task by setting arg and
// sending on wake; Stop, Resize and the reaper set exit instead.
//
// Its fields fit 64 bytes for a task of one interface (a Pool's), the allocator's size class
// that starts each worker on a cache line of its own, and arg is beside the times that a hand-out
// writes with it (observed): one line per hand-out, not two (TestWorkerFitsOneCacheLine).
type worker[T any] struct {
	arg      T
	observed // with an Observer: see observe.go
	exit     bool
	// rests is set by next when it has parked the worker, which is to wait in serveBegun.
	rests     bool
	wake      chan struct{}
	idleSince int64 // when it parked (clock), kept only if idle workers are reaped
}

// resting reports whether next has parked w, and clears the mark.
func (w *worker[T]) resting() bool {
	if w == nil || !w.rests {
		return false
	}
	w.rests = false
	return true
}

// startParked starts a worker that parks at once, as New does for MinWorkers. Callers hold
// e.mu.
func (e *Engine[T]) startParked() {
	w := e.newWorker()
	e.workers++
	e.alive++
	e.park(w)
	go e.parked(w)
}

// park puts w on the idle stack. Callers hold e.mu.
func (e *Engine[T]) park(w *worker[T]) {
	if e.cfg.IdleTimeout > 0 {
		w.idleSince = e.clock()
	}
	e.idle = append(e.idle, w)
	if !e.reaping && e.cfg.IdleTimeout > 0 && e.workers > e.cfg.MinWorkers {
		e.reaping = true
		go e.reap()
	}
}

// popIdle takes the most recently parked worker off the idle stack, or returns nil if none is
// idle. That worker's stack and caches are the warmest, and the ones at the bottom of the stack
// are left to the reaper. TestIdleWorkersAreReusedLastParkedFirst guards it. Callers hold e.mu.
func (e *Engine[T]) popIdle() *worker[T] {
	n := len(e.idle)
	if n == 0 {
		return nil
	}
	w := e.idle[n-1]
	e.idle[n-1] = nil
	e.idle = e.idle[:n-1]
	return w
}

// wait blocks a parked worker until it gets a task (true) or must exit (false).
func (e *Engine[T]) wait(w *worker[T]) (T, bool) {
	var zero T
	for {
		<-w.wake
		if w.exit {
			e.gone()
			return zero, false
		}
		arg := w.arg
		w.arg = zero
		if e.begin(w, arg) {
			return arg, true
		}
		if !e.rest(w) {
			return zero, false
		}
	}
}

// dismissOldest tells the k longest-idle workers, at the bottom of the idle stack, to exit and
// returns them, to be woken with wakeAll after unlocking. TestReapIdleDismissesLongestIdleFirst
// and TestReapIdleKeepsMinWorkers guard the order. Callers hold e.mu.
func (e *Engine[T]) dismissOldest(k int) []*worker[T] {
	if k <= 0 {
		return nil
	}
	dismissed := append([]*worker[T](nil), e.idle[:k]...)
	rest := copy(e.idle, e.idle[k:])
	clear(e.idle[rest:])
	e.idle = e.idle[:rest]
	e.dismiss(dismissed)
	return dismissed
}

// dismiss tells the idle workers in ws, already off the idle stack, to exit. They no longer
// count as workers, but stay alive until they have woken and left (gone). Callers hold e.mu
// and wake them after unlocking with wakeAll.
func (e *Engine[T]) dismiss(ws []*worker[T]) {
	for _, w := range ws {
		w.exit = true
		e.workers--
	}
}

func wakeAll[T any](ws []*worker[T]) {
	for _, w := range ws {
		w.wake <- struct{}{}
	}
}

// newWorker returns a parking spot for a worker about to start: one that an exited worker of
// any engine of T gave back (retire), or a new one.
//
// A worker's spot (the struct and its wake channel) is most of what starting a worker
// allocates, about 160 of 210 bytes. Pools whose workers come and go (a pool made per batch,
// idle reaping, pond's workloads on a fresh pool of 200,000 workers) would otherwise allocate
// it again for every worker they start. TestStartedWorkersReuseExitedWorkersSpots guards it.
//
// Inside a testing/synctest bubble nothing is reused: a channel made in one bubble must not
// be used from another bubble or from outside one (see inBubble).
func (e *Engine[T]) newWorker() *worker[T] {
	if !e.bubbled && !inBubble() {
		if w, ok := e.spares.Get(); ok {
			return w
		}
	}
	return &worker[T]{wake: make(chan struct{}, 1)}
}

// retire gives the spot of a worker that is exiting to the next worker started. Nothing else
// holds w by then: it is off the idle stack, and whoever told it to exit sent on w.wake before
// it woke, and touches w no more. Its channel is empty, as every send on it has been received.
func (e *Engine[T]) retire(w *worker[T]) {
	if w.transient() || e.bubbled || inBubble() {
		return
	}
	*w = worker[T]{wake: w.wake}
	e.spares.Put(w)
}
