// Package worker is the machinery behind crew's pools: it starts worker goroutines lazily up
// to a limit, hands tasks to them, parks idle workers and reaps those idle for too long.
//
// An Engine is generic over the task argument T, so a typed pool stores its arguments
// unboxed and the plain pool stores its task values; neither allocates per task. See
// hotpath.md beside this file for why the hot path looks the way it does.
package worker

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew/internal/queue"
	"github.com/crewgo/crew/internal/spare"
)

// Result says what became of a submission.
type Result uint8

// The outcomes of Submit.
const (
	Accepted Result = iota // the task will run exactly once
	Stopped                // the engine was stopped; the task never runs
	Full                   // the queue was full and the call could not wait; the task never runs
	Canceled               // the context ended first; the task never runs
)

// Config holds an Engine's settings. Validation is the caller's job.
type Config[T any] struct {
	Run          func(T)                   // runs one task; required
	MaxWorkers   int                       // >= 1
	MinWorkers   int                       // started at once, never reaped
	QueueSize    int                       // 0: unbounded
	NonBlocking  bool                      // a full queue rejects instead of blocking
	IdleTimeout  time.Duration             // idle workers above MinWorkers exit after it; 0: at once
	PanicHandler func(v any, stack []byte) // required
	// Start, when set, replaces "go serve": it must arrange for Serve(first) to be called
	// exactly once on some goroutine. Sub-pools use it to run their workers as tasks of the
	// parent. Such workers never park: they return when the queue is empty.
	Start func(first T)
	// Exited, when set, is called once the engine has stopped and its last goroutine is
	// done, with the engine's lock held. A sub-pool uses it to release its parent (Release).
	Exited func()
	// Now is the clock used for idle reaping; nil means time.Now.
	Now func() time.Time
}

// Counters is a snapshot of an Engine's state, taken under its lock.
type Counters struct {
	MaxWorkers, Workers, Idle, Waiting       int
	Submitted, Completed, Panicked, Rejected uint64
}

// Engine runs tasks of type T on at most MaxWorkers goroutines. All methods are safe for
// concurrent use.
type Engine[T any] struct {
	cfg Config[T]

	mu      sync.Mutex
	queue   queue.Queue[T]
	idle    []*worker[T] // parked workers; LIFO, so idle[0] has been idle longest
	blocked waiterList[T]
	max     int
	workers int // alive, idle ones included
	waking  int // handed a task or started, and not yet begun, or lingering: see route
	pending int // accepted and not yet finished: queued or running
	reaping bool
	holds   int // sub-pools not yet exited, which may still Forward tasks: see Hold
	stopped bool

	drained chan struct{} // closed when pending reaches 0; made on demand
	changed chan struct{} // closed when a worker exits or the limit changes; made on demand
	exited  chan struct{} // closed when stopped and no goroutine is left
	done    chan struct{} // closed by Stop; wakes the reaper

	submitted, completed, panicked, rejected uint64

	// yielding counts the submitters inside crowded's yield. It is raised under mu, when
	// crowded has said yes, and lowered without it once the yield returns.
	yielding atomic.Int32

	spares *spare.Pool[*worker[T]] // shared by the engines of T: see newWorker
}

// worker is one goroutine's parking spot. A submitter hands it a task by setting arg and
// sending on wake; Stop, Resize and the reaper set exit instead.
type worker[T any] struct {
	wake      chan struct{}
	arg       T
	exit      bool
	idleSince time.Time
}

// New returns an Engine and starts cfg.MinWorkers workers.
func New[T any](cfg Config[T]) *Engine[T] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Engine[T]{
		cfg:    cfg,
		max:    cfg.MaxWorkers,
		exited: make(chan struct{}),
		done:   make(chan struct{}),
		spares: spare.For[*worker[T]](),
	}
	if cfg.Start == nil && cfg.MinWorkers > 0 {
		e.mu.Lock()
		for range cfg.MinWorkers {
			w := e.newWorker()
			e.workers++
			e.park(w)
			go e.parked(w)
		}
		e.mu.Unlock()
	}
	return e
}

// Submit offers arg to the engine. With wait false it never blocks; with wait true it blocks
// while a bounded queue is full (unless the engine is NonBlocking) until there is room, the
// engine stops, or done (which may be nil) is closed.
func (e *Engine[T]) Submit(arg T, wait bool, done <-chan struct{}) Result {
	e.lock()
	if e.stopped {
		e.mu.Unlock()
		return Stopped
	}
	w, spawn, ok := e.route(arg, true)
	if !ok {
		if !wait || e.cfg.NonBlocking {
			e.rejected++
			e.mu.Unlock()
			return Full
		}
		return e.block(arg, done) // unlocks
	}
	crowded := w == nil && !spawn && e.crowded()
	if crowded {
		e.yielding.Add(1)
	}
	e.mu.Unlock()
	e.launch(w, spawn, arg)
	if crowded {
		crowdedYield()
		e.yielding.Add(-1)
	}
	return Accepted
}

// Back-pressure on an unbounded queue. A submitter that runs far ahead of the workers gains
// nothing: the tasks wait either way. But the backlog costs: every garbage collection scans
// it, so a long queue slows down every task that allocates (TaskQ's JSON workload ran 30%
// slower than with a 1024-slot channel). So while crowdedPerWorker or more tasks per live
// worker, and at least crowdedFloor tasks, wait, every submit yields its processor with
// runtime.Gosched. That is not blocking (Submit promises to block only on a full bounded
// queue): the submitter goes on as soon as the scheduler gets back to it, which on a machine
// whose cores all run workers takes about as long as the workers need to eat into the backlog,
// and at once on a machine with an idle processor. Yielding on every submit rather than on
// every 256th keeps the backlog near the threshold; with the sparser yield it still grew
// between yields.
//
// The threshold counts the workers alive, not the limit. A pool of CPU-bound tasks keeps few
// workers alive whatever its limit: the waking gate starts them one at a time, and each new
// one waits for a processor behind the busy ones (ultrapool's AES-CBC workload ran on 100 to
// 160 of its 10,000 allowed workers, behind a queue of up to 150,000 tasks). A pool whose
// workers sleep has many alive, and its threshold rises with them: there the submitter's
// speed is what keeps the workers busy, and a yielding submitter would wait behind every
// worker its timer woke.
//
// A yield throttles only a submitter that comes back to submit more. Where the backlog is
// built by many goroutines that submit once each (pond's 1Mu-1t: a million goroutines, one
// task each), it throttles nobody and sends each of them through the scheduler a second time:
// without a cap, that workload took 1.4 s instead of 0.8 s. So at most crowdedYielders
// submitters yield at once, and the others go on without yielding. That many covers the
// looping submitters of the workloads measured (ultrapool's 200) and spares the one-shot
// ones. A cap of the live workers' number (at least 64) spared 1Mu-1t too, but left most of
// ultrapool's 200 submitters unthrottled: AES-CBC on 1 kB with FuncPool went back to 56%
// slower than with no cap.
//
// TestSubmitYieldsWhenFarAhead, TestCrowdedThreshold and TestCrowdedYieldersAreCapped guard
// this; BenchmarkTaskQ's json task, BenchmarkUltrapool's AES-CBC tasks and BenchmarkPond's
// 1Mu-1t workload measure it.
const (
	crowdedPerWorker = 64
	crowdedFloor     = 4096
	crowdedYielders  = 256
)

// crowdedYield is the yield of a crowded submit; tests replace it to hold submitters in it.
var crowdedYield = runtime.Gosched

// crowded reports whether the submit that just queued a task should yield. Callers hold e.mu.
func (e *Engine[T]) crowded() bool {
	n := e.queue.Len()
	return n >= crowdedFloor && n/crowdedPerWorker >= e.workers &&
		e.yielding.Load() < crowdedYielders
}

// Forward accepts arg whatever the queue bound and even after Stop. Sub-pools use it to run
// their accepted tasks on the parent's workers: refusing them would lose accepted work.
func (e *Engine[T]) Forward(arg T) {
	e.lock()
	w, spawn, _ := e.route(arg, false)
	e.mu.Unlock()
	e.launch(w, spawn, arg)
}

// route accepts arg and decides where it runs: on the parked worker w, on a new worker
// (spawn), or from the queue. With bounded set, a full queue that no worker can relieve makes
// it return ok false without accepting. Callers hold e.mu and call launch after unlocking.
//
// The waking gate: while some worker has been handed a task or started but has not yet begun
// running, or is lingering before it parks (e.waking > 0), route queues arg instead of waking
// another goroutine, and that worker wakes the next one itself if tasks are still queued when
// it begins or stops lingering (see passOn). The obvious "wake an idle worker per task" costs
// a goroutine wake-up, about a microsecond, per task: for small tasks more than the task, and
// it spreads a burst over many cold workers. With the gate, a burst is drained by a few
// running workers while more join one by one, as the Go scheduler does with spinning threads.
// The gate is lifted while the bounded queue is full: a submit must not block or be rejected
// while an idle worker or room for a new one could take the task.
//
// Without the gate, TestSubmitQueuesBehindAWakingWorker and
// TestLingeringWorkerTakesTasksQueuedMeanwhile fail; without the relay in begin,
// TestSubmitQueuesBehindAWakingWorker, TestBurstBusiesEveryWorker and
// TestIdleWorkersPickUpBursts; without the relay after lingering,
// TestLingeringWorkerTakesTasksQueuedMeanwhile. TestGateLiftsWhenBoundedQueueIsFull guards
// the lifting. BenchmarkSubmit/workers=1024 measures the gate.
func (e *Engine[T]) route(arg T, bounded bool) (w *worker[T], spawn, ok bool) {
	room := !bounded || e.cfg.QueueSize == 0 || e.queue.Len() < e.cfg.QueueSize
	if e.waking == 0 || !room {
		if w = e.popIdle(); w != nil {
			w.arg = arg
			e.waking++
			e.accept()
			return w, false, true
		}
		if e.workers < e.max {
			e.workers++
			e.waking++
			e.accept()
			return nil, true, true
		}
	}
	if !room {
		return nil, false, false
	}
	e.queue.Push(arg)
	e.accept()
	return nil, false, true
}

// launch carries out route's decision once the lock is released.
func (e *Engine[T]) launch(w *worker[T], spawn bool, arg T) {
	switch {
	case w != nil:
		w.wake <- struct{}{} // buffered, never blocks: a parked worker's wake is empty
	case spawn:
		e.start(arg)
	}
}

// begin is called by a worker that was handed a task or started, before it runs the task.
// If tasks are still queued and no other worker is waking, it wakes (or starts) one more
// with the oldest queued task: the other half of the waking gate in route.
func (e *Engine[T]) begin() {
	e.lock()
	e.waking--
	w, spawn, arg := e.passOn()
	e.mu.Unlock()
	e.launch(w, spawn, arg)
}

// passOn is the gate's relay: if tasks are queued and no worker is waking, it hands the oldest
// to an idle worker or a new one, to be launched after unlocking. A worker calls it when it
// stops being counted in e.waking (begin, and next after lingering), since the tasks queued
// while it was counted were queued because of it. Callers hold e.mu.
func (e *Engine[T]) passOn() (w *worker[T], spawn bool, arg T) {
	if e.waking > 0 || e.queue.Len() == 0 {
		return nil, false, arg
	}
	if w = e.popIdle(); w != nil {
		w.arg, _ = e.dequeue()
		e.waking++
		return w, false, arg
	}
	if e.workers < e.max {
		arg, _ = e.dequeue()
		e.workers++
		e.waking++
		return nil, true, arg
	}
	return nil, false, arg
}

// accept counts one accepted task. Callers hold e.mu.
func (e *Engine[T]) accept() {
	e.submitted++
	e.pending++
}

func (e *Engine[T]) start(first T) {
	if e.cfg.Start != nil {
		e.cfg.Start(first)
		return
	}
	go e.serve(e.newWorker(), first)
}

// newWorker returns a parking spot for a worker about to start: one that an exited worker of
// any engine of T gave back (retire), or a new one.
//
// A worker's spot (the struct and its wake channel) is most of what starting a worker
// allocates, about 160 of 210 bytes. Pools whose workers come and go (a pool made per batch,
// idle reaping, pond's workloads on a fresh pool of 200,000 workers) would otherwise allocate
// it again for every worker they start. TestStartedWorkersReuseExitedWorkersSpots guards it.
func (e *Engine[T]) newWorker() *worker[T] {
	if w, ok := e.spares.Get(); ok {
		return w
	}
	return &worker[T]{wake: make(chan struct{}, 1)}
}

// retire gives the spot of a worker that is exiting to the next worker started. Nothing else
// holds w by then: it is off the idle stack, and whoever told it to exit sent on w.wake before
// it woke, and touches w no more. Its channel is empty, as every send on it has been received.
func (e *Engine[T]) retire(w *worker[T]) {
	if w == nil {
		return
	}
	*w = worker[T]{wake: w.wake}
	e.spares.Put(w)
}

// Serve runs first and then queued tasks on the calling goroutine until the queue is empty.
// It is for Config.Start: the worker it stands for was counted when Start was called.
func (e *Engine[T]) Serve(first T) {
	e.serve(nil, first)
}

// parked is the body of a worker started idle.
func (e *Engine[T]) parked(w *worker[T]) {
	if arg, ok := e.wait(w); ok {
		e.serveBegun(w, arg)
	}
	e.retire(w)
}

// serve runs tasks until the worker exits. w is nil for a worker that must not park.
func (e *Engine[T]) serve(w *worker[T], arg T) {
	e.begin()
	e.serveBegun(w, arg)
	e.retire(w)
}

// serveBegun is serve for a worker that has already called begin.
func (e *Engine[T]) serveBegun(w *worker[T], arg T) {
	for {
		if !e.runUntilPanic(w, arg) {
			return
		}
		var ok bool
		if arg, ok = e.next(w, true); !ok {
			return
		}
	}
}

// runUntilPanic runs arg and every task after it. It returns false when the worker is done,
// and true after a task panicked and the panic was handed to the handler.
//
// Recovering here, once per run of tasks rather than with a defer around each task, keeps the
// per-task path free of defer bookkeeping; after a panic the caller re-enters with the next
// task, so the same goroutine keeps serving.
func (e *Engine[T]) runUntilPanic(w *worker[T], arg T) (panicked bool) {
	panicked = true
	defer func() {
		if !panicked {
			return
		}
		v := recover()
		if v == nil {
			// runtime.Goexit in a task (t.FailNow, say): the goroutine is ending and
			// nothing stops it. Count the task and hand this worker's place on.
			e.goexit()
			return
		}
		e.handlePanic(v, debug.Stack())
	}()
	for {
		e.cfg.Run(arg)
		var ok bool
		if arg, ok = e.next(w, false); !ok {
			panicked = false
			return
		}
	}
}

// handlePanic gives v to the panic handler. A handler that panics in turn is reported
// through the default one rather than taking the worker (and the process) down.
func (e *Engine[T]) handlePanic(v any, stack []byte) {
	defer func() {
		if hv := recover(); hv != nil {
			DefaultPanicHandler(hv, debug.Stack())
		}
	}()
	e.cfg.PanicHandler(v, stack)
}

// next records the end of the task a worker ran and gives it the next one. It returns false
// when the worker should exit. A worker (w non-nil) that finds nothing to do parks until a
// submitter hands it a task or it is told to exit.
//
// Before it parks, a worker lingers once (see linger): it yields its processor with the gate
// closed, and takes a task queued meanwhile instead of parking.
func (e *Engine[T]) next(w *worker[T], panicked bool) (T, bool) {
	e.lock()
	e.finish(panicked)
	if arg, ok := e.take(); ok {
		e.mu.Unlock()
		return arg, true
	}
	leave := e.leaving(w)
	if !leave {
		e.linger()
		if arg, ok := e.take(); ok {
			other, spawn, first := e.passOn()
			e.mu.Unlock()
			e.launch(other, spawn, first)
			return arg, true
		}
		// linger released the lock: the engine may have stopped or shrunk meanwhile.
		leave = e.leaving(w)
	}
	if leave {
		e.exit()
		e.mu.Unlock()
		var zero T
		return zero, false
	}
	e.park(w)
	e.mu.Unlock()
	return e.wait(w)
}

// take dequeues the next task for a worker that has finished one, unless more workers are
// alive than the limit allows. Callers hold e.mu.
func (e *Engine[T]) take() (T, bool) {
	if e.workers > e.max {
		var zero T
		return zero, false
	}
	return e.dequeue()
}

// leaving reports whether a worker that found the queue empty should exit rather than park:
// a sub-pool's worker (w nil), a stopped engine, a limit lowered below the workers alive, or
// an idle timeout of 0. Callers hold e.mu.
func (e *Engine[T]) leaving(w *worker[T]) bool {
	return w == nil || e.stopped || e.workers > e.max ||
		(e.cfg.IdleTimeout == 0 && e.workers > e.cfg.MinWorkers)
}

// lingerYield is linger's yield; tests replace it to act while a worker lingers.
var lingerYield = runtime.Gosched

// linger yields the processor once, counted in e.waking, so that a task submitted meanwhile is
// queued for this worker instead of waking a parked one. Callers hold e.mu; linger releases it
// while it yields and holds it again when it returns.
//
// A parked worker costs its submitter a wake-up and itself a park, and the worker that is
// woken takes the lock once more in begin. Where tasks are tiny and arrive from many
// goroutines at once (pond's 1Mu-1t: a million goroutines submitting one rand.Float64 each to
// 200,000 workers), that is most of the work: 43% of the tasks went through a wake-up and a
// park, and a goroutine per task was 15-24% faster than crew. The yield lets the goroutines
// waiting for this processor (the submitters, there) run first, and their tasks queue up for
// the worker, which then runs them one after another. With nothing else to run, the yield
// returns at once and the worker parks as before.
//
// The worker owes the tasks queued while it lingered the relay that begin does (passOn), or a
// burst submitted then would wait for the one worker instead of spreading over the idle ones.
// TestLingeringWorkerTakesTasksQueuedMeanwhile guards it; BenchmarkPond's 1Mu-1t workload
// measures it.
func (e *Engine[T]) linger() {
	e.waking++
	e.mu.Unlock()
	lingerYield()
	e.lock()
	e.waking--
}

// finish counts the end of one task. Callers hold e.mu.
func (e *Engine[T]) finish(panicked bool) {
	if panicked {
		e.panicked++
	} else {
		e.completed++
	}
	e.pending--
	if e.pending == 0 && e.drained != nil {
		close(e.drained)
		e.drained = nil
	}
}

// goexit handles a worker whose task called runtime.Goexit.
func (e *Engine[T]) goexit() {
	e.lock()
	e.finish(false)
	arg, ok := e.dequeue()
	if !ok {
		e.exit()
		e.mu.Unlock()
		return
	}
	e.waking++
	e.mu.Unlock()
	e.start(arg) // the exiting worker's place goes to a new one
}

// dequeue pops the next task and, if a submitter is blocked on the full queue, moves its task
// into the room just made. Callers hold e.mu.
func (e *Engine[T]) dequeue() (T, bool) {
	arg, ok := e.queue.Pop()
	if ok {
		if b := e.blocked.pop(); b != nil {
			e.queue.Push(b.arg)
			e.accept()
			b.decide(Accepted)
		}
	}
	return arg, ok
}

// park puts w on the idle stack. Callers hold e.mu.
func (e *Engine[T]) park(w *worker[T]) {
	w.idleSince = e.cfg.Now()
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

// wait blocks a parked worker until it gets a task (true) or must exit (false).
func (e *Engine[T]) wait(w *worker[T]) (T, bool) {
	<-w.wake
	if w.exit {
		var zero T
		return zero, false
	}
	arg := w.arg
	var zero T
	w.arg = zero
	e.begin()
	return arg, true
}

// exit removes the calling worker from the count. Callers hold e.mu.
func (e *Engine[T]) exit() {
	e.workers--
	e.signalChange()
	e.checkExited()
}

// checkExited closes exited once the engine is stopped and has no goroutine left and no
// sub-pool holding it, after giving the queue's last segment to the next queue of T. Callers
// hold e.mu.
func (e *Engine[T]) checkExited() {
	if e.stopped && e.workers == 0 && !e.reaping && e.holds == 0 {
		select {
		case <-e.exited:
		default:
			e.queue.Free()
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

// dismiss tells the idle workers in ws to exit. Callers hold e.mu and wake them after
// unlocking with wakeAll.
func (e *Engine[T]) dismiss(ws []*worker[T]) {
	for _, w := range ws {
		w.exit = true
		e.workers--
	}
	e.signalChange()
	e.checkExited()
}

func wakeAll[T any](ws []*worker[T]) {
	for _, w := range ws {
		w.wake <- struct{}{}
	}
}

// Stop stops accepting tasks. Queued tasks still run; submitters blocked on a full queue
// return Stopped. It does not wait. A second Stop does nothing.
func (e *Engine[T]) Stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	close(e.done)
	idle := e.idle
	e.idle = nil
	e.dismiss(idle)
	var refused []*waiter[T]
	for b := e.blocked.pop(); b != nil; b = e.blocked.pop() {
		refused = append(refused, b)
	}
	e.mu.Unlock()
	wakeAll(idle)
	for _, b := range refused {
		b.decide(Stopped)
	}
}

// Stopped reports whether Stop was called.
func (e *Engine[T]) Stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
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

// Exited returns a channel closed once the engine is stopped and all its goroutines (workers
// and reaper) are gone, which implies every accepted task has finished.
func (e *Engine[T]) Exited() <-chan struct{} { return e.exited }

// Resize sets the worker limit. Idle workers above it exit now and busy ones when their task
// returns; Resize waits for those, so when it returns no more than n tasks run. When the
// limit grows, queued tasks start on new workers at once and Resize does not wait.
func (e *Engine[T]) Resize(n int) {
	e.mu.Lock()
	e.max = n
	e.signalChange()
	var dismissed []*worker[T]
	if extra := e.workers - n; extra > 0 {
		dismissed = e.dismissOldest(min(extra, len(e.idle)))
	}
	var starts []T
	for e.workers < e.max {
		arg, ok := e.dequeue()
		if !ok {
			break
		}
		e.workers++
		e.waking++
		starts = append(starts, arg)
	}
	e.mu.Unlock()
	wakeAll(dismissed)
	for _, arg := range starts {
		e.start(arg)
	}
	e.awaitLimit()
}

// awaitLimit waits until no more workers are alive than the limit allows.
func (e *Engine[T]) awaitLimit() {
	for {
		e.mu.Lock()
		if e.workers <= e.max {
			e.mu.Unlock()
			return
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		ch := e.changed
		e.mu.Unlock()
		<-ch
	}
}

// signalChange wakes the Resize calls waiting in awaitLimit. Callers hold e.mu.
func (e *Engine[T]) signalChange() {
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// Counters returns a consistent snapshot of the engine's state.
func (e *Engine[T]) Counters() Counters {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Counters{
		// While a shrinking Resize waits for busy workers above the new limit, the limit in
		// force is the number of workers still alive.
		MaxWorkers: max(e.max, e.workers),
		Workers:    e.workers,
		Idle:       len(e.idle),
		Waiting:    e.queue.Len(),
		Submitted:  e.submitted,
		Completed:  e.completed,
		Panicked:   e.panicked,
		Rejected:   e.rejected,
	}
}

// DefaultPanicHandler logs a task's panic value and stack through the log/slog default logger.
func DefaultPanicHandler(v any, stack []byte) {
	slog.Error("crew: task panicked", "panic", v, "stack", string(stack))
}
