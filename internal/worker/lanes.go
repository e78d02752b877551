package worker

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe" // also for go:linkname

	"github.com/crewgo/crew/internal/queue"
)

// Lanes: the queue split by processor.
//
// With one queue behind one lock, a task crosses between the cores with its lock: the
// submitter writes its slot and the lock's line on one core, and the worker that pops it, as
// likely on the other core, reads both back. With tasks of a microsecond that was the largest
// single cost of the hot path: in a CPU profile of ultrapool's 1 µs sleeps (10 submitters per
// processor), the load of the popped slot alone took 12% of the samples, and the lock 15%
// (measurements.md, "Lanes").
//
// So an engine whose submitters run on several processors at once keeps its waiting tasks in
// lanes, one per processor (GOMAXPROCS when the engine was made, at most laneMaxLanes), each a
// FIFO behind a lock of its own. A submit pushes onto the lane of the processor it runs on,
// and a worker that finishes a task takes the next from its own processor's lane, or, if that
// one is empty, the oldest task of another (steal). A task submitted and run on one core
// never leaves it, and the submitters and workers of one core write no line that the other
// core's write, but when a worker steals. here names the processor, with the runtime's
// procPin: a wrong answer, as the caller may move at once, costs only locality, since any
// worker takes from any lane.
//
// What lanes change, and what they keep:
//
//   - Order: each lane is first in, first out, and gives its tasks up from its head only, to
//     its own workers and to stealing ones alike. Tasks submitted from one processor start
//     in the order submitted; tasks submitted from one goroutine too, unless the scheduler
//     moved it to another processor between two submits while lanes were on.
//   - The fast paths (a submit onto a lane that already holds tasks, a worker's next task
//     from a lane) touch only the lane. They count there, in accepted and completed, and
//     settle folds the lanes' counts into the engine's under e.mu and every lane's lock when
//     they are read; pending is exact only then. running does not change on those paths:
//     the task that ended hands its slot to the one taken, as in next's plain case.
//   - Everything else takes e.mu as before, and with it, to look at or change the lanes,
//     lane locks (always after e.mu, never the other way, and in lane order when several).
//     An empty lane turns non-empty only by a push under e.mu (route): the fast submit pushes
//     only onto a lane already holding tasks. So a worker that, holding e.mu, has found every
//     lane empty may park: no task can be pushed where it would not be seen. And while any
//     lane holds a task, some worker is running, waking or lingering and looks at every lane
//     before it parks, for the reasons route's comment gives for the single queue.
//   - Lanes are on only while lanesWanted: the engine is plain (no pause, rate limit, weight,
//     level or observer), its queue unbounded, it is not stopped, is no sub-pool, has no more
//     workers alive than its limit (after a shrinking Resize), and its limit is at least
//     laneMinWorkers per lane. relane recomputes that wherever any of them changes, under
//     e.mu and every lane's lock: turning lanes off moves their tasks into the queue (lane by
//     lane, each in order), turning them on moves the queue's tasks onto the first lane. So
//     every feature that holds tasks back, drops or removes them works on the one queue as
//     before, and a fast path that found its lane on may start a task: the limit holds.
//   - Lanes pay only where several processors submit at once. A lone submitter fills one
//     lane and the other processors' workers steal from it one task at a time, as they
//     popped the one queue, but the lookup of the processor and the second lock cost every
//     task: one submitter of tiny tasks took 14% to 27% longer with lanes always on. So an
//     engine starts without them and watches who waits for its lock: lanes go on once
//     submitters are seen waiting for each other (sampleLanes), and go off again once one
//     lane has taken laneQuietPushes submits while no other took one (solo).
//
// TestLanes* and FuzzLaneOperations guard it; BenchmarkUltrapool's sleep1us (in the
// benchmarks module) and BenchmarkSubmit measure it, and CI runs the root package's tests
// once more with every engine's lanes on from the start (CREW_LANES=on).

// laneMinWorkers is the limit per lane from which an engine uses lanes. Below it few tasks
// run at once, stealing would be most of what a worker does, and the single queue's order is
// what a user sees.
const laneMinWorkers = 4

// laneMaxLanes caps the number of lanes: one per processor, up to it.
const laneMaxLanes = 64

// Watching who submits: see "Lanes pay only" above. A window is laneWindow submits that
// found e.mu taken; lanes go on when at least laneRivals of them found it taken by another
// submit.
const (
	laneWindow      = 64
	laneRivals      = 4
	laneQuietPushes = 1 << 16 // a power of two
)

// lane is one processor's share of the queue. It fills two cache lines of its own, so that
// neighbouring lanes, written from other cores, share none with it (nor the line the
// hardware fetches beside it).
type lane[T any] struct {
	laneState[T]
	_ [lanePad]byte
}

// lanePad pads a lane to two cache lines. laneState's size does not depend on T.
const lanePad = (128 - unsafe.Sizeof(laneState[struct{}]{})%128) % 128

type laneState[T any] struct {
	mu sync.Mutex
	// on is whether lanes are in use; written under e.mu and mu, read under mu.
	on bool
	q  queue.Queue[T]
	// pushes counts the submits this lane took (not the tasks relane moved onto it); it wraps.
	pushes uint32
	// others is the sum of the other lanes' pushes when this lane last counted them: see
	// solo.
	others uint32
	// state publishes q.Len() (low 32 bits) and pushes (high 32 bits) to readers without
	// mu: workers look past empty lanes without taking their locks, and a submitter sees
	// whether other lanes take submits.
	state atomic.Uint64
	// accepted counts the tasks the fast submit pushed, completed the tasks that ended on a
	// worker that then took its next task from a lane without e.mu. settle folds both into
	// the engine's counters.
	accepted, completed uint64
}

// publish stores the lane's length and pushes in state. Callers hold l.mu.
func (l *lane[T]) publish() {
	l.state.Store(uint64(l.pushes)<<32 | uint64(l.q.Len()))
}

// size returns the lane's length, as last published.
func (l *lane[T]) size() int { return int(uint32(l.state.Load())) }

// lock takes l.mu as Engine.lock takes e.mu, and for the same reasons: yielding rather than
// spinning or parking while the lane's other user holds it.
func (l *lane[T]) lock() {
	if !l.mu.TryLock() {
		lockAfterYields(&l.mu)
	}
}

// procPin and procUnpin are the runtime's: procPin keeps the calling goroutine on its
// processor and returns that processor's id, procUnpin lets it go. sync.Pool uses them to find
// its per-processor shard; the runtime keeps both reachable by go:linkname for the packages
// that use them likewise (go.dev/issue/67401), from Go 1.23 on.
//
// A token taken from a sync.Pool and put back at once names the processor too, without
// linkname, but it took three times as long, and the tokens, numbered as the pool's New is
// first asked for them, need not name a different lane on each processor.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// newLanes returns the lanes of an engine made with cfg, or nil if it will never use them.
func newLanes[T any](cfg *Config[T]) []lane[T] {
	n := min(runtime.GOMAXPROCS(0), laneMaxLanes)
	if n < 2 || cfg.QueueSize > 0 || cfg.Start != nil || cfg.Parent != nil || cfg.Observer != nil {
		return nil
	}
	return make([]lane[T], n)
}

// here returns the lane of the processor the caller runs on.
func (e *Engine[T]) here() int {
	p := procPin()
	procUnpin()
	if n := len(e.lanes); p >= n { // only after GOMAXPROCS grew: no division otherwise
		p %= n
	}
	return p
}

// laneSubmit is the fast submit: it pushes arg onto lane i, the caller's, if lanes are on and
// that lane already holds a task, and reports whether it did. It returns i, for route to push
// onto if it did not. Like Submit, it yields once when the backlog is
// crowded (see crowded), judged by the lanes' lengths against crowdAt.
func (e *Engine[T]) laneSubmit(arg T, i int) (int, bool) {
	l := &e.lanes[i]
	l.lock()
	n := l.q.Len()
	if !l.on || n == 0 {
		l.mu.Unlock()
		return i, false
	}
	l.q.Push(arg)
	l.pushes++
	l.publish()
	l.accepted++
	solo := l.pushes%laneQuietPushes == 0 && e.solo(i)
	n++
	crowded := n*len(e.lanes) >= int(e.crowdAt.Load()) && e.laneCrowded()
	if crowded {
		e.yielding.Add(1)
	}
	l.mu.Unlock()
	if solo {
		e.mu.Lock()
		e.sampled = laneSolo
		e.relane()
		e.mu.Unlock()
	}
	if crowded {
		crowdedYield()
		e.yielding.Add(-1)
	}
	return i, true
}

// solo reports whether no lane but i took a submit since lane i last asked, laneQuietPushes
// submits ago: one processor does all the submitting, and lanes should go off. Callers hold
// lane i's lock.
func (e *Engine[T]) solo(i int) bool {
	var others uint32
	for j := range e.lanes {
		if j != i {
			others += uint32(e.lanes[j].state.Load() >> 32)
		}
	}
	l := &e.lanes[i]
	quiet := others == l.others
	l.others = others
	return quiet
}

// What sampled holds: lanes are off because no two processors were seen submitting at
// once (laneSolo), or were turned on by sampleLanes (laneMixed).
const (
	laneSolo  = 0
	laneMixed = 1
)

// sampleLanes is told of each submit that had to wait for e.mu while lanes are off for want
// of a second submitting processor. A lone submitter waits only for workers (and the odd
// Stats or Resize); submitters on two processors wait for each other. Which processor a
// submitter runs on says nothing here, as a lone submitter that yields (crowded, lock) moves
// between them all the time: in a test of one submitter and eight workers on two
// processors, lanes went on and off 287 times in three million submits when two processors
// seen in a window turned them on. So once laneRivals of a window of laneWindow such submits
// found the lock last held by another submit (bySubmit), lanes go on. Callers hold e.mu.
func (e *Engine[T]) sampleLanes() {
	if e.bySubmit {
		e.rivals++
	}
	if e.samples++; e.samples < laneWindow {
		return
	}
	mixed := e.rivals >= laneRivals
	e.samples, e.rivals = 0, 0
	if mixed {
		e.sampled = laneMixed
		e.relane()
	}
}

// laneCrowded is crowded for the fast submit, which holds no e.mu: the lanes' lengths
// against crowdAt, which follows the workers alive.
func (e *Engine[T]) laneCrowded() bool {
	var n int
	for i := range e.lanes {
		n += e.lanes[i].size()
	}
	return n >= int(e.crowdAt.Load()) && e.yielding.Load() < crowdedYielders
}

// recrowd sets crowdAt, the backlog from which crowded says yes, after a change of workers.
// Callers hold e.mu.
func (e *Engine[T]) recrowd() {
	if e.lanes != nil {
		e.crowdAt.Store(int64(max(crowdedFloor, crowdedPerWorker*e.workers)))
	}
}

// laneNext is a worker's fast next: the oldest task of its processor's lane, taken without
// e.mu while lanes are on. The task that ended counts as completed on that lane, and its slot
// goes to the one taken. If its own lane is empty, the worker takes the oldest task of
// another (steal).
func (e *Engine[T]) laneNext() (T, bool) {
	n := len(e.lanes)
	own := e.here()
	l := &e.lanes[own]
	if l.size() > 0 {
		l.lock()
		if l.on {
			if arg, ok := l.q.Pop(); ok {
				l.publish()
				l.completed++
				l.mu.Unlock()
				return arg, true
			}
		}
		l.mu.Unlock()
	}
	for k := 1; k < n; k++ {
		if arg, ok := e.steal((own + k) % n); ok {
			return arg, true
		}
	}
	var zero T
	return zero, false
}

// steal takes the oldest task of lane from for a worker whose own lane, to, is empty. It
// takes only that one: every lane gives up its tasks from its head, so the tasks submitted on
// one processor start in the order submitted, whoever takes them.
func (e *Engine[T]) steal(from int) (T, bool) {
	var zero T
	l := &e.lanes[from]
	if l.size() == 0 {
		return zero, false
	}
	l.lock()
	defer l.mu.Unlock()
	if !l.on {
		return zero, false
	}
	arg, ok := l.q.Pop()
	if ok {
		l.publish()
		l.completed++
	}
	return arg, ok
}

// laneQueued returns the number of tasks in the lanes. Callers hold e.mu; the number may
// drop meanwhile, but it rises from 0 only under e.mu.
func (e *Engine[T]) laneQueued() int {
	if !e.laneOn {
		return 0
	}
	var n int
	for i := range e.lanes {
		n += e.lanes[i].size()
	}
	return n
}

// queued returns the number of tasks waiting: in the queue and in the lanes. Callers hold
// e.mu.
func (e *Engine[T]) queued() int {
	return e.queue.Len() + e.laneQueued()
}

// lanePush queues arg on lane i (the caller's, from laneSubmit, or -1: find it). Callers
// hold e.mu and have checked e.laneOn.
func (e *Engine[T]) lanePush(arg T, i int) {
	if i < 0 {
		i = e.here()
	}
	l := &e.lanes[i]
	l.lock()
	l.q.Push(arg)
	l.pushes++
	l.publish()
	l.mu.Unlock()
}

// lanePop takes the oldest task of the caller's lane, else of another lane. Callers hold
// e.mu and have checked e.laneOn.
func (e *Engine[T]) lanePop() (T, bool) {
	n := len(e.lanes)
	start := e.here()
	for k := range n {
		l := &e.lanes[(start+k)%n]
		if l.size() == 0 {
			continue
		}
		l.lock()
		arg, ok := l.q.Pop()
		l.publish()
		l.mu.Unlock()
		if ok {
			return arg, true
		}
	}
	var zero T
	return zero, false
}

// startNextLane is startNext while lanes are on: the engine is plain, so mayStart is the limit
// alone, whichever task is taken. Callers hold e.mu.
func (e *Engine[T]) startNextLane() launch[T] {
	if e.running >= e.max || (len(e.idle) == 0 && e.workers >= e.max) {
		return launch[T]{} // handOut would refuse
	}
	arg, ok := e.lanePop()
	if !ok {
		return launch[T]{}
	}
	s, _ := e.handOut(arg)
	return s
}

// settle folds the lanes' counts into the engine's, so that accepted, completed and pending
// are exact. It holds every lane's lock at once: a task can be counted as accepted on one
// lane and completed on another (a lane counts the task that ended on the worker that takes
// its next task there), so lanes counted one after the other could show more tasks completed
// than accepted: TestLanesCountersNeverShowMoreCompletedThanAccepted found it. Callers hold e.mu.
func (e *Engine[T]) settle() {
	for i := range e.lanes {
		e.lanes[i].mu.Lock()
	}
	for i := range e.lanes {
		l := &e.lanes[i]
		e.settleLane(l)
		l.mu.Unlock()
	}
}

// settleLane folds one lane's counts into the engine's. Callers hold e.mu and l.mu.
func (e *Engine[T]) settleLane(l *lane[T]) {
	e.accepted += l.accepted
	e.completed += l.completed
	e.pending += int(l.accepted) - int(l.completed)
	l.accepted, l.completed = 0, 0
}

// lanesWanted reports whether the engine should keep its queue in lanes now. Callers hold
// e.mu.
func (e *Engine[T]) lanesWanted() bool {
	return e.lanes != nil && e.sampled == laneMixed && !e.unlaned && e.plain() && !e.stopped &&
		e.workers <= e.max && e.max >= laneMinWorkers*len(e.lanes)
}

// relane turns lanes on or off as lanesWanted says, moving the waiting tasks between the
// lanes and the queue. Every change to what lanesWanted reads calls it. Callers hold e.mu.
func (e *Engine[T]) relane() {
	want := e.lanesWanted()
	if want == e.laneOn {
		return
	}
	for i := range e.lanes {
		e.lanes[i].mu.Lock()
	}
	if want {
		// Tasks queued while lanes were off are older than any to come: they go first.
		l := &e.lanes[0]
		for {
			arg, ok := e.queue.Queue.Pop()
			if !ok {
				break
			}
			l.q.Push(arg)
		}
	} else {
		for i := range e.lanes {
			l := &e.lanes[i]
			for {
				arg, ok := l.q.Pop()
				if !ok {
					break
				}
				e.queue.Push(arg)
			}
		}
	}
	for i := range e.lanes {
		l := &e.lanes[i]
		l.on = want
		l.publish()
		e.settleLane(l)
		l.mu.Unlock()
	}
	e.laneOn = want
	e.laneMode.Store(want)
}

// unlane turns lanes off for an operation on the whole queue (Remove, RemoveIf, UseLevels);
// the caller calls relane when done, if lanes may come back. Callers hold e.mu.
func (e *Engine[T]) unlane() {
	e.unlaned = true
	e.relane()
	e.unlaned = false
}

// freeLanes gives the lanes' last segments back, as checkExited does the queue's. Callers
// hold e.mu; the engine has exited, so lanes are off and empty.
func (e *Engine[T]) freeLanes() {
	for i := range e.lanes {
		l := &e.lanes[i]
		l.mu.Lock()
		l.q.Free()
		l.mu.Unlock()
	}
}

// lanesFromStart makes every engine made from now on start with lanes wanted, as if two
// processors had been seen submitting: see StartLanes.
var lanesFromStart atomic.Bool

// StartLanes makes the engines made after it start with lanes wanted (on) or watching for a
// second submitting processor first (off, the default). Tests use it to run whole suites
// with the queue split.
func StartLanes(on bool) { lanesFromStart.Store(on) }

// SplitQueue wants lanes from now on, as if two processors had been seen submitting: they
// go on whenever the rest of lanesWanted agrees. Tests use it.
func (e *Engine[T]) SplitQueue() {
	e.mu.Lock()
	e.sampled = laneMixed
	e.relane()
	e.mu.Unlock()
}

// Split reports whether the waiting tasks are in lanes now.
func (e *Engine[T]) Split() bool { return e.laneMode.Load() }
