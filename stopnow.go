package crew

// StopNow stops the pool as [Pool.Stop] does, then takes every accepted task that has not
// started out of the queue and returns the plain ones, in the order they would have started;
// they never run. It stops accepting before it empties the queue: a submitter blocked on a
// full queue when StopNow is called returns [ErrStopped], never a nil error for a task
// StopNow then hands back. It includes the tasks of the pool's sub-pools ([Pool.Sub]) and of
// theirs, at any depth: the order is the pool's queue, where a sub-pool's worker waiting
// there stands for the task it carries, then the queues of its sub-pools, a parent's before
// its sub-pools'. Functions of [Go], [Group], [Results], [Map] and [ForEach]
// taken out fail with [ErrStopped], so their Wait returns. Tasks already running go on;
// StopNow does not wait for them. After Stop, StopNow still takes out what is queued; a
// paused pool's backlog is abandoned this way. Every accepted task either runs exactly once
// or is returned (or failed) by StopNow, never both, and counts in [Stats].Returned if it
// is. It is safe to call from a task and concurrently with any other method.
//
// A [Keyed] on the pool keeps its order through StopNow: a key whose queued tasks StopNow
// hands back runs none of its tasks afterwards. A key whose turn was running when StopNow
// was called may run the tasks it had waiting after StopNow returns, as they were never in
// the pool's queue.
func (p *Pool) StopNow() []func() {
	checkPool(p, "StopNow")
	// Every pool of the tree stops and gives up its queue in one step each
	// (worker.Engine.StopNow), before anything taken out is unpacked: unpacking a sub-pool's
	// worker frees a slot of the sub-pool (Abandon), which would start its next task and move
	// a blocked submitter of its into the room made, were it still accepting. Before that,
	// every pool of the tree is frozen: the pools stop one after another, and a task of a pool
	// not yet stopped that ends meanwhile, having seen another one stop, would otherwise move a
	// submitter blocked since before StopNow into its queue, whose task StopNow then hands back
	// (TestStopNowOfAParentRefusesTheBlockedSubmittersOfItsSubPools).
	p.freezeTree()
	var queues [][]task
	p.stopTree(&queues)
	// This pool's workers waiting in the queues of the pools above hold its oldest tasks.
	above := p.takeAbove()
	var out []func()
	for _, t := range above {
		out = keep(out, unpackWorker(t))
	}
	for _, q := range queues {
		for _, t := range q {
			out = keep(out, unpackWorker(t))
		}
	}
	p.Stop() // unregisters the WithContext hooks, and stops a sub-pool made meanwhile
	// Unpacking a sub-pool's worker may start the sub-pool's next queued task on a new
	// worker, which waits in an ancestor's queue in turn, and a key's turn that was running
	// may queue itself again: so passes go on until one takes nothing out.
	for took := true; took; {
		out, took = p.takeOut(out)
	}
	return out
}

// freezeTree freezes p and its sub-pools, at any depth (worker.Engine.Freeze).
func (p *Pool) freezeTree() {
	p.eachInTree(func(q *Pool) { q.core.e.Freeze() })
}

// redispatchTree has p and its sub-pools, at any depth, start what may start: once a Shutdown
// gave up, their queued functions will be skipped, and leave the queue without waiting for a
// token of a rate limit (worker.Config.Doomed).
func (p *Pool) redispatchTree() {
	p.eachInTree(func(q *Pool) { q.core.e.Redispatch() })
}

// skipQueued fails at once the queued functions with a context of p and of its sub-pools, at
// any depth, that a Shutdown of p which gave up skips, each with its cause, as
// Future.Cancel fails its function: no worker may reach their places for a long time (a
// paused pool, a plain task that never returns), and their futures, groups and maps would
// wait until one did. Their places stay in the queues, counted as Waiting, until a worker
// or StopNow drops them, counted in Skipped. Besides p's tree, it looks in the queues of the
// pools above p, where p's workers wait carrying p's first tasks.
//
// Each function is claimed as skipped while its pool's lock is held: a function found in a
// queue is then in its current use, since a sequence's call (reused once it has ended) is
// reused only after a worker took its place, which takes that lock. A call so claimed is
// marked a husk, as a wait that claims one marks it, so that it is not reused while its place
// waits. The claimed functions are failed once the lock is released.
func (p *Pool) skipQueued() {
	var doomed []claimer
	look := func(t task) {
		c, ok := carried(t).(claimer)
		if !ok {
			return
		}
		if c.scope().skipping() && c.claimed().state.CompareAndSwap(queued, skipped) {
			if h, ok := c.(interface{ markHusk() }); ok {
				h.markHusk()
			}
			doomed = append(doomed, c)
		}
	}
	for q := p.parent; q != nil; q = q.parent {
		q.core.e.Each(look)
	}
	p.eachInTree(func(q *Pool) { q.core.e.Each(look) })
	for _, c := range doomed {
		c.fail(c.scope().cause())
	}
}

// eachInTree calls f with p and its sub-pools, at any depth.
func (p *Pool) eachInTree(f func(*Pool)) {
	f(p)
	for _, c := range p.subs() {
		c.eachInTree(f)
	}
}

// carried returns the task that t, if it is a sub-pool's worker, carries to run first: a
// task of the sub-pool, which is itself a worker when the sub-pool has sub-pools of its own.
func carried(t task) task {
	for {
		w, ok := t.(*subWorker)
		if !ok {
			return t
		}
		t = w.first
	}
}

// stopTree stops p and its sub-pools, at any depth, each taking its queue out in the same
// step, and appends the queues to queues, p's first.
func (p *Pool) stopTree(queues *[][]task) {
	*queues = append(*queues, p.core.e.StopNow())
	for _, c := range p.subs() {
		c.stopTree(queues)
	}
}

// takeAbove takes the workers of p waiting in the queues of the pools above it out of those
// queues: in the parent's queue, and inside the workers of the pools between, in the queues
// above.
func (p *Pool) takeAbove() []task {
	var out []task
	for above := p.parent; above != nil; above = above.parent {
		out = append(out, above.core.e.RemoveIf(func(t task) bool { return carries(t, p) })...)
	}
	return out
}

// takeOut takes p's queued tasks out, and its sub-pools', with p's workers waiting in the
// queues above, appends the plain ones to out and fails the others with ErrStopped (see
// StopNow). It reports whether it took anything out.
func (p *Pool) takeOut(out []func()) ([]func(), bool) {
	above := p.takeAbove()
	for _, t := range above {
		out = keep(out, unpackWorker(t))
	}
	out, drained := p.drain(out)
	return out, len(above) > 0 || drained
}

// carries reports whether t is a worker of a sub-pool that runs, directly or through the
// workers of the sub-pools between, a worker of p.
func carries(t task, p *Pool) bool {
	for {
		w, ok := t.(*subWorker)
		if !ok {
			return false
		}
		if w.pool == p {
			return true
		}
		t = w.first
	}
}

// unpackWorker returns the task that t, if it is a sub-pool's worker taken out of its parent's
// queue unrun, was started for, telling each pool on the way that the worker will not run. A
// worker's task is itself a worker when the sub-pool has sub-pools of its own, one level per
// generation: a sub-pool's first task travels up to the root pool's queue inside them
// (TestStopNowReturnsTasksOfSubPoolsOfSubPools).
func unpackWorker(t task) task {
	for {
		w, ok := t.(*subWorker)
		if !ok {
			return t
		}
		if w.e.Abandon(w.first) {
			return nil // another party had claimed it (life.go)
		}
		t = w.first
	}
}

// drain takes p's queued tasks, and then its sub-pools', out, appends the plain ones to out
// and fails the others with ErrStopped. It reports whether it took anything out.
func (p *Pool) drain(out []func()) ([]func(), bool) {
	removed := p.core.e.Remove()
	for _, t := range removed {
		out = keep(out, unpackWorker(t))
	}
	took := len(removed) > 0
	for _, c := range p.subs() {
		var drained bool
		out, drained = c.drain(out)
		took = took || drained
	}
	return out, took
}

func keep(out []func(), t task) []func() {
	if t == nil {
		return out
	}
	if h, ok := t.(holder); ok {
		fs, _ := h.unpack(false)
		return append(out, fs...)
	}
	if !t.abort(ErrStopped) {
		out = append(out, t.(funcTask))
	}
	return out
}

// StopNow stops the pool as [Pool.StopNow] does and returns the arguments of the calls that
// had not started, in the order they would have started; those calls never happen.
func (p *FuncPool[T]) StopNow() []T {
	checkFuncPool(p, "StopNow")
	out := p.core.e.StopNow()
	p.Stop() // unregisters the WithContext hook
	return out
}
