package worker

// Weighted tasks. A task of weight n holds n slots of the limit while it runs: running
// counts tasks (one slot each) and held the slots they hold beyond one, so the slots in use
// are running+held. Weights are looked up (Config.Weight) only once the engine was told that
// weighted tasks exist (UseWeights): until then sched is 0 and a start costs one field test
// more than it did without weights.
//
// Starts stay first in, first out: a task at the head that does not fit blocks those behind
// it until enough slots are free, so a heavy task is never overtaken and never starved. A
// task heavier than the limit (after a shrinking Resize) starts once nothing runs, alone.
//
// A task's extra slots are given back by the task itself (Unhold, deferred in its run, so a
// panic or runtime.Goexit gives them back too), before its worker counts its end: the
// engine's finish does not know which task ended, and keeping it so keeps the worker loop
// untouched.
//
// On a sub-pool, a worker is a task of the parent that holds one parent slot; a weighted
// task must hold its weight in the parent too. So once a sub-pool uses weights, its workers
// run one task each (take refuses them the next), and each is forwarded to the parent with
// the weight of the task it carries (Config.Weight of the parent sees it).

// Bits of sched, so that each mechanism sets and tests its own.
const gateWeights = 1 << iota

// UseWeights tells the engine that tasks may have a weight other than one. It cannot be
// undone.
func (e *Engine[T]) UseWeights() {
	e.mu.Lock()
	e.sched |= gateWeights
	e.reopen()
	e.mu.Unlock()
}

// weight returns arg's weight, at least 1. Callers hold e.mu.
func (e *Engine[T]) weight(arg T) int {
	if e.sched&gateWeights == 0 || e.cfg.Weight == nil {
		return 1
	}
	return max(1, e.cfg.Weight(arg))
}

// mayStartGated is the limit part of mayStart while sched is not 0. Callers hold e.mu.
func (e *Engine[T]) mayStartGated(arg T) bool {
	return e.running == 0 || e.running+e.held+e.weight(arg) <= e.max
}

// heavyHead reports whether a weighted task that does not fit now heads the queue: nothing
// may start before it. Callers hold e.mu.
func (e *Engine[T]) heavyHead() bool {
	if e.sched&gateWeights == 0 {
		return false
	}
	head, _, ok := e.queue.PeekAt()
	return ok && !e.mayStartGated(head)
}

// hold counts the extra slots of arg, which is starting. Callers hold e.mu.
func (e *Engine[T]) hold(arg T) {
	if e.sched != 0 {
		e.held += e.weight(arg) - 1
	}
}

// unhold takes back what hold counted for arg, which is given back unrun (unslot). Callers
// hold e.mu.
func (e *Engine[T]) unhold(arg T) {
	if e.sched != 0 {
		e.held -= e.weight(arg) - 1
	}
}

// Unhold gives back n slots held by a weighted task that is returning, and starts what now
// fits.
func (e *Engine[T]) Unhold(n int) {
	if n <= 0 {
		return
	}
	e.lock()
	e.held -= n
	starts := e.dispatch()
	e.mu.Unlock()
	e.launchAll(starts)
}

// serialWorkers reports whether a sub-pool's worker must not take a next task: with weights
// in use (see above), or when it takes turns and the parent has work waiting (see
// priority.go). Callers hold e.mu.
func (e *Engine[T]) serialWorkers() bool {
	if e.cfg.Start == nil {
		return false
	}
	return e.sched&gateWeights != 0 || e.turnOver()
}

// turnOver reports whether a sub-pool that takes turns in its parent (priority.go) must give
// its parent's worker back now. Callers hold e.mu.
func (e *Engine[T]) turnOver() bool {
	return e.cfg.Start != nil && e.sched&gateTurns != 0 && e.cfg.Turn != nil && e.cfg.Turn()
}
