package worker

import "github.com/crewgo/crew/internal/queue"

// Priority levels. A parent pool's queue holds its own tasks (level 0) and its sub-pools'
// workers (Config.Start forwards them), each sub-pool at its level. Once a leveled sub-pool
// exists (UseLevels), the queue becomes one FIFO per level, and Peek and Pop serve the
// highest level that has a task: since every start goes through startNext or take, which
// look at Peek, a worker never takes a lower-level task while a higher-level one waits, and
// tasks of one level start first in, first out. Blocked submitters need no levels: only a
// pool's own submitters block on its queue, and they are all level 0; a sub-pool's workers
// are forwarded and never wait for room.
//
// Until UseLevels, levelQueue is the plain queue behind one nil test per call: pools without
// leveled sub-pools pay nothing else.
//
// Classes share the parent fairly because a worker of a sub-pool whose parent has levels
// (UseTurns) gives the parent's worker back when Config.Turn says so, and its sub-pool queues
// a new worker at the tail of its level for the next task, instead of draining its queue on
// the parent's worker: a low class holding a worker cannot keep it from a higher class, and
// sub-pools at one level take turns. crew's Turn says so after any task while a higher level
// waits in the parent, and after a short batch while the same level waits (its sub-pool's own
// re-queued workers among them, so yielding after every task would re-queue every task).
// While nothing at its level or above waits, the worker goes on with its queue, as without
// levels. Config.Turn takes the parent's lock under the sub-pool's, the order Release already
// uses.

// gateTurns makes a sub-pool's workers give their turn back: see serialWorkers.
const gateTurns = gateWeights << 1

// levelQueue is the engine's queue of waiting tasks: the plain FIFO, or one FIFO per level.
//
// The plain FIFO is a named field, not embedded: embedded, its methods that levelQueue does
// not redefine (PushFront did) reached the plain FIFO while lv was set, where Len, Peek and
// Pop never look, and a task given back by a pause was lost
// (TestPauseStormWithPrioritisedSubPoolsLosesNoTask).
type levelQueue[T any] struct {
	fifo queue.Queue[T] // every task while lv is nil
	lv   *levels[T]
}

// levels holds one FIFO per level, highest level first.
type levels[T any] struct {
	level func(T) int
	qs    []*leveled[T]
	n     int
}

type leveled[T any] struct {
	level int
	q     queue.Queue[T]
}

// Relays. A sub-pool waits in its parent's queue with one worker at a time (the waking gate,
// in the sub-pool's route), which brings the next when it begins (passOn, in Serve). When
// several of the parent's slots free at once (a Resize up, a Resume, tasks ending
// together), the parent's queue shows the next level's worker before the first level's next
// one has arrived. So from the start of a sub-pool's worker at level L until its sub-pool has
// forwarded its next one, or found none to forward (Relayed), the parent starts nothing of
// a level below L (awaitsRelay), and a sub-pool below L that asks for its turn (queuedFrom)
// is told that a higher level waits. TestAdvResizeGrowingAParentStartsTheHigherLevelFirst
// guards it.

// relayOut counts arg, starting now from a queue with levels, as a relaying worker if
// Config.Relay says it is one. Callers test e.queue.lv themselves, which keeps the call off
// the plain paths, and hold e.mu.
func (e *Engine[T]) relayOut(arg T) {
	if e.cfg.Relay == nil || !e.cfg.Relay(arg, true) {
		return
	}
	l := e.queue.lv.level(arg)
	if e.relays == 0 || l > e.relayTop {
		e.relayTop = l
	}
	e.relays++
	if e.relays == 1 {
		e.regate()
	}
}

// relayBack takes back relayOut's count for arg, given back unrun. Callers hold e.mu.
func (e *Engine[T]) relayBack(arg T) {
	if e.relays > 0 && e.cfg.Relay != nil && e.cfg.Relay(arg, false) {
		e.unrelay()
	}
}

// unrelay ends one relay. Callers hold e.mu.
func (e *Engine[T]) unrelay() {
	e.relays--
	if e.relays == 0 {
		e.regate()
	}
}

// Relayed is told by a relaying worker's sub-pool (ServeRelayed) that it has forwarded its
// next worker, or has none to forward: the tasks below its level may start again.
func (e *Engine[T]) Relayed() {
	e.lock()
	if e.relays == 0 {
		e.mu.Unlock()
		return
	}
	e.unrelay()
	starts := e.dispatch()
	e.mu.Unlock()
	e.launchAll(starts)
}

// awaitsRelay reports whether arg, a task that may otherwise start, waits for a relay of a
// higher level. Callers hold e.mu.
func (e *Engine[T]) awaitsRelay(arg T) bool {
	return e.relays > 0 && e.queue.lv != nil && e.queue.lv.level(arg) < e.relayTop
}

// QueuedFrom reports whether a task waits at a level above level, and whether one waits at
// level itself. A sub-pool's Config.Turn asks its parent's.
func (e *Engine[T]) QueuedFrom(level int) (above, at bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queuedFrom(level)
}

// queuedFrom is QueuedFrom for a caller that holds e.mu.
func (e *Engine[T]) queuedFrom(level int) (above, at bool) {
	if e.relays > 0 && e.relayTop > level {
		return true, false
	}
	if e.queue.lv == nil {
		n := e.queue.Len() > 0
		return n && level < 0, n && level == 0
	}
	for _, l := range e.queue.lv.qs {
		if l.level < level {
			break
		}
		if l.q.Len() > 0 {
			if l.level > level {
				return true, false
			}
			at = true
		}
	}
	return false, at
}

func (q *levelQueue[T]) Len() int {
	if q.lv == nil {
		return q.fifo.Len()
	}
	return q.lv.n
}

// The methods below keep each task's stamp (its submit time, for an engine that observes:
// see observe.go) beside it; an engine that does not passes and ignores 0. PushAt, PeekAt and
// PopAt keep the leveled case out of line, so that the plain case is one test and one call.
// They are still a call of their own, as no method with two calls is inlined: route's push
// and dequeue's pop, which every submit and every task go through, test lv themselves and
// call the plain queue directly, which BenchmarkSubmit measured as faster.

func (q *levelQueue[T]) PushAt(v T, at int64) {
	if q.lv != nil {
		q.lv.push(v, at)
		return
	}
	q.fifo.PushAt(v, at)
}

func (q *levelQueue[T]) PeekAt() (T, int64, bool) {
	if q.lv != nil {
		return q.lv.peek()
	}
	return q.fifo.PeekAt()
}

// PushSecondAt puts v behind the head of its level, or at the head of an empty level.
func (q *levelQueue[T]) PushSecondAt(v T, at int64) {
	fifo := &q.fifo
	if q.lv != nil {
		fifo = q.lv.of(q.lv.level(v))
		q.lv.n++
	}
	if h, hat, ok := fifo.PopAt(); ok {
		fifo.PushFrontAt(v, at)
		fifo.PushFrontAt(h, hat)
		return
	}
	fifo.PushAt(v, at)
}

// PushFrontAt puts v back at the head of its level: a task given back unrun.
func (q *levelQueue[T]) PushFrontAt(v T, at int64) {
	if q.lv != nil {
		q.lv.of(q.lv.level(v)).PushFrontAt(v, at)
		q.lv.n++
		return
	}
	q.fifo.PushFrontAt(v, at)
}

// dropLastAt takes v out if it is the newest task of its level (same), with its stamp.
func (q *levelQueue[T]) dropLastAt(v T, same func(a, b T) bool) (int64, bool) {
	if q.lv == nil {
		return q.fifo.DropLastAt(v, same)
	}
	at, ok := q.lv.of(q.lv.level(v)).DropLastAt(v, same)
	if ok {
		q.lv.n--
	}
	return at, ok
}

// stampAtEnd returns the stamp of v when it is the newest or the oldest task of its level
// (same); ok is false otherwise.
func (q *levelQueue[T]) stampAtEnd(v T, same func(a, b T) bool) (at int64, ok bool) {
	fifo := &q.fifo
	if q.lv != nil {
		fifo = q.lv.of(q.lv.level(v))
	}
	if at, ok = fifo.LastAt(v, same); !ok {
		at, ok = fifo.FirstAt(v, same)
	}
	return at, ok
}

// dropFirstAt takes v out if it is the oldest task of its level (same), with its stamp.
func (q *levelQueue[T]) dropFirstAt(v T, same func(a, b T) bool) (int64, bool) {
	if q.lv == nil {
		return q.fifo.DropFirstAt(v, same)
	}
	at, ok := q.lv.of(q.lv.level(v)).DropFirstAt(v, same)
	if ok {
		q.lv.n--
	}
	return at, ok
}

func (q *levelQueue[T]) PopAt() (T, int64, bool) {
	if q.lv != nil {
		return q.lv.pop()
	}
	return q.fifo.PopAt()
}

//go:noinline
func (l *levels[T]) push(v T, at int64) {
	l.of(l.level(v)).PushAt(v, at)
	l.n++
}

//go:noinline
func (l *levels[T]) peek() (T, int64, bool) {
	for _, lq := range l.qs {
		if lq.q.Len() > 0 {
			return lq.q.PeekAt()
		}
	}
	var zero T
	return zero, 0, false
}

//go:noinline
func (l *levels[T]) pop() (T, int64, bool) {
	for _, lq := range l.qs {
		if lq.q.Len() > 0 {
			l.n--
			return lq.q.PopAt()
		}
	}
	var zero T
	return zero, 0, false
}

// each calls f with every task waiting, level by level.
func (q *levelQueue[T]) each(f func(T)) {
	if q.lv == nil {
		q.fifo.Each(f)
		return
	}
	for _, l := range q.lv.qs {
		l.q.Each(f)
	}
}

// dropFrom returns the FIFO whose head DiscardOldest drops, or nil if there is none to drop:
// the plain queue unless its head is one keep keeps; with levels, the lowest level whose head
// keep does not keep. A higher level's tasks are the ones the pool runs first, so they are
// dropped only when no lower level has one to drop.
func (q *levelQueue[T]) dropFrom(keep func(T) bool) *queue.Queue[T] {
	if q.lv == nil {
		if v, ok := q.fifo.Peek(); ok && (keep == nil || !keep(v)) {
			return &q.fifo
		}
		return nil
	}
	for i := len(q.lv.qs) - 1; i >= 0; i-- {
		f := &q.lv.qs[i].q
		if v, ok := f.Peek(); ok && (keep == nil || !keep(v)) {
			return f
		}
	}
	return nil
}

// popFrom takes the head of f, one of q's FIFOs that dropFrom returned.
func (q *levelQueue[T]) popFrom(f *queue.Queue[T]) (T, int64) {
	v, at, _ := f.PopAt()
	if q.lv != nil {
		q.lv.n--
	}
	return v, at
}

func (q *levelQueue[T]) Free() {
	q.fifo.Free()
	if q.lv != nil {
		for _, l := range q.lv.qs {
			l.q.Free()
		}
	}
}

// of returns the FIFO of level, adding it in order if it is new.
func (l *levels[T]) of(level int) *queue.Queue[T] {
	i := 0
	for ; i < len(l.qs); i++ {
		if l.qs[i].level == level {
			return &l.qs[i].q
		}
		if l.qs[i].level < level {
			break
		}
	}
	l.qs = append(l.qs, nil)
	copy(l.qs[i+1:], l.qs[i:])
	l.qs[i] = &leveled[T]{level: level}
	return &l.qs[i].q
}

// UseLevels makes the queue serve tasks by level, Config.Level giving each task's. Tasks
// already queued keep their order at level 0, where they belong: before a leveled sub-pool
// exists, none of its workers can be queued. It cannot be undone.
func (e *Engine[T]) UseLevels() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.queue.lv != nil || e.cfg.Level == nil {
		return
	}
	lv := &levels[T]{level: e.cfg.Level}
	for {
		v, at, ok := e.queue.fifo.PopAt()
		if !ok {
			break
		}
		lv.of(0).PushAt(v, at)
		lv.n++
	}
	e.queue.lv = lv
	e.reopen()
}

// UseTurns makes the engine's workers, which must be a sub-pool's (Config.Start), give the
// parent's worker back after a task whenever Config.Turn says so. It cannot be undone.
func (e *Engine[T]) UseTurns() {
	e.mu.Lock()
	e.sched |= gateTurns
	e.reopen()
	e.mu.Unlock()
}
