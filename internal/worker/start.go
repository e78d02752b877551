package worker

// launch is a start decided under the lock and carried out after it is released: wake the
// parked worker w, which has been given its task, or, with spawn set, start a new worker with
// arg. The zero launch starts nothing.
//
// A spawn's w is nil unless the engine observes tasks: it is then the new worker, made under
// the lock to carry the task's submit time (see observe.go). The submit time is not a field
// of launch itself: route returns a launch on every submit, and with a fifth word the struct
// was copied through the stack and Submit took markedly longer (measurements.md, "Back to
// speed after the capabilities"). The bools share a word, so forwarded adds none.
type launch[T any] struct {
	w         *worker[T]
	spawn     bool
	forwarded bool // a sub-pool's spawn, already forwarded under the lock: see forward
	arg       T
}

func (s launch[T]) starts() bool { return s.w != nil || s.spawn }

// mayStart reports whether the task arg may start now. It is the one place that says so:
// every task start, from a submit, a worker that finished a task, a resize, a relay or the
// end of a worker, passes through it. A new reason to hold tasks back is a condition here,
// and the code that makes that reason go away calls dispatch. Callers hold e.mu.
//
// Two plain cases copy its decision for an engine that uses no feature, where it is the limit
// alone: take's and next's, which every task but a worker's first goes through. The engine
// fuzzers run each sequence with and without them (Config.Guarded).
func (e *Engine[T]) mayStart(arg T) bool {
	// Small enough to be inlined into the hot path's callers: the features that hold tasks
	// back cost one test while none is in use.
	if e.sched|e.gated != 0 {
		return e.mayStartGuarded(arg)
	}
	return e.running < e.max
}

// mayStartGuarded is mayStart while a pause, a rate limit, weights, levels or a parent are
// in play.
func (e *Engine[T]) mayStartGuarded(arg T) bool {
	if e.sched != 0 {
		return e.mayStartGated(arg) && !e.awaitsRelay(arg) && (e.gated == 0 || e.openFor(arg))
	}
	return e.running < e.max && !e.awaitsRelay(arg) && (e.gated == 0 || e.openFor(arg))
}

// route accepts arg and decides where it runs: on a parked worker, on a new worker, or from
// the queue. With bounded set, a full queue that no start can relieve makes it return ok
// false without accepting. Callers hold e.mu and call launch after unlocking.
//
// The waking gate: while some worker has been handed a task or started but has not yet begun
// running, or is lingering before it parks (e.waking > 0), route queues arg instead of waking
// another goroutine, and that worker wakes the next one itself if tasks are still queued when
// it begins or stops lingering (see passOn). The obvious "wake an idle worker per task" costs
// a goroutine wake-up, about a microsecond, per task: for small tasks more than the task, and
// it spreads a burst over many cold workers. With the gate, a burst is drained by a few
// running workers while more join one by one, as the Go scheduler does with spinning threads.
// The gate is lifted while the bounded queue is full: a submit must not block or be rejected
// while an idle worker or room for a new one could take a task. It then starts the oldest
// queued task and queues arg behind the others, so the queue stays first in, first out.
//
// Without the gate, TestSubmitQueuesBehindAWakingWorker and
// TestLingeringWorkerTakesTasksQueuedMeanwhile fail; without the relay in begin,
// TestSubmitQueuesBehindAWakingWorker, TestBurstBusiesEveryWorker and
// TestIdleWorkersPickUpBursts; without the relay after lingering,
// TestLingeringWorkerTakesTasksQueuedMeanwhile. TestGateLiftsWhenBoundedQueueIsFull guards
// the lifting. BenchmarkSubmit/workers=1024 measures the gate.
func (e *Engine[T]) route(arg T, bounded bool, at int64) (s launch[T], ok bool) {
	full := bounded && e.cfg.QueueSize > 0 && e.queue.Len() >= e.cfg.QueueSize
	if e.queue.Len() == 0 {
		if e.waking == 0 && e.mayStart(arg) {
			if s, ok = e.handOut(arg, at); ok {
				e.accept()
				return s, true
			}
		}
	} else if full {
		// Submitters already blocked on the full queue came first: a new one waits behind
		// them. Without them, starting the oldest task makes room without moving anyone in.
		if e.blocked.head != nil {
			return s, false
		}
		if s = e.startNext(); !s.starts() {
			return s, false
		}
	}
	if e.queue.lv == nil {
		// The plain queue without levelQueue's call: see priority.go.
		if e.timed {
			e.queue.fifo.PushAt(arg, at)
		} else {
			e.queue.fifo.Push(arg)
		}
	} else {
		e.queue.PushAt(arg, at)
	}
	e.accept()
	return s, true
}

// handOut gives arg, which may start, to the most recently parked worker or to a new one, and
// counts it as running. It reports false, changing nothing, when every worker the limit
// allows is alive and none is parked: one of them takes the task from the queue once it is
// done with its own. Callers hold e.mu.
func (e *Engine[T]) handOut(arg T, since int64) (launch[T], bool) {
	if w := e.popIdle(); w != nil {
		w.arg = arg
		if e.timed {
			w.since = since
		}
		e.waking++
		e.slot()
		e.hold(arg)
		if e.queue.lv != nil {
			e.relayOut(arg)
		}
		return launch[T]{w: w}, true
	}
	if e.workers < e.max {
		e.workers++
		e.alive++
		e.waking++
		e.slot()
		e.hold(arg)
		if e.queue.lv != nil {
			e.relayOut(arg)
		}
		if e.cfg.Start != nil {
			return e.forward(arg, since), true
		}
		return launch[T]{spawn: true, arg: arg, w: e.timedSpawn(since)}, true
	}
	return launch[T]{}, false
}

// forward hands arg to a new worker of a sub-pool's engine: Config.Start puts the worker in
// the parent's queue. It is called with e.mu held, unlike every other start, so that a
// worker reaches the parent's queue in the order the sub-pool decided, before any later
// decision of the sub-pool: carried out after unlocking, a forward could be overtaken, and a
// parent took a lower level's worker while a higher level's decided one had not yet arrived
// (TestStressPriorityAcrossPauseAndResume). Locks go child, then parent, as in Admits and
// Turn, and the parent's Forward never waits. Callers hold e.mu.
func (e *Engine[T]) forward(arg T, since int64) launch[T] {
	ahead := e.cutIn
	e.cutIn = false
	e.cfg.Start(arg, since, ahead)
	return launch[T]{spawn: true, forwarded: true}
}

// startNext starts the oldest queued task, if it may start and a worker can take it, and
// returns the launch to carry out after unlocking. Callers hold e.mu.
func (e *Engine[T]) startNext() launch[T] {
	arg, at, ok := e.queue.PeekAt()
	if !ok || !e.mayStart(arg) {
		return launch[T]{}
	}
	s, ok := e.handOut(arg, at)
	if ok {
		e.dequeue() // the task just handed out, and its submit time, handed with it
	}
	return s
}

// dispatch starts every queued task that may start and that a worker can take, in queue
// order. Code that lifts a reason for holding tasks back (a larger limit, the end of a
// worker) calls it; the launches are carried out with launchAll after unlocking. Callers
// hold e.mu.
func (e *Engine[T]) dispatch() []launch[T] {
	var starts []launch[T]
	for {
		s := e.startNext()
		if !s.starts() {
			return starts
		}
		starts = append(starts, s)
	}
}

// passOn is the gate's relay: if tasks are queued and no worker is waking, it starts the
// oldest on an idle worker or a new one, to be launched after unlocking. A worker calls it
// when it stops being counted in e.waking (begin, and next after lingering), since the tasks
// queued while it was counted were queued because of it. Callers hold e.mu.
func (e *Engine[T]) passOn() launch[T] {
	if e.waking > 0 {
		return launch[T]{}
	}
	return e.startNext()
}

// begin is called by a worker that was handed a task or started, before it runs the task.
// If tasks are still queued and no other worker is waking, it wakes (or starts) one more
// with the oldest queued task: the other half of the waking gate in route.
//
// If the engine (or an ancestor) was paused between the hand-out and now, begin gives arg
// back to the front of the queue and reports false: the worker parks or leaves (rest), and
// the task starts after Resume. So no task's function begins after Pause has returned.
func (e *Engine[T]) begin(w *worker[T], arg T) bool {
	e.lock()
	e.waking--
	if e.gated != 0 && e.Halted() {
		e.relayBack(arg)
		e.unslot(arg)
		e.queue.PushFrontAt(arg, w.since)
		e.mu.Unlock()
		return false
	}
	s := e.passOn()
	e.mu.Unlock()
	e.launch(s)
	return true
}

// launch carries out a start decided under the lock, once the lock is released. Most submits
// start nothing (the task waits in the queue for a running worker), so launch is small
// enough to be inlined and costs them one test.
func (e *Engine[T]) launch(s launch[T]) {
	if s.starts() {
		e.start(s)
	}
}

// start carries out a launch that starts something.
func (e *Engine[T]) start(s launch[T]) {
	if !s.spawn {
		s.w.wake <- struct{}{} // buffered, never blocks: a parked worker's wake is empty
		return
	}
	if s.forwarded {
		return
	}
	w := s.w
	if w == nil {
		w = e.newWorker()
	}
	go e.serve(w, s.arg)
}

// launchAll carries out the starts dispatch decided.
func (e *Engine[T]) launchAll(starts []launch[T]) {
	for _, s := range starts {
		e.launch(s)
	}
}
