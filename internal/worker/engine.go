// Package worker is the machinery behind crew's pools: it starts worker goroutines lazily up
// to a limit, hands tasks to them, parks idle workers and reaps those idle for too long.
//
// An Engine is generic over the task argument T, so a typed pool stores its arguments
// unboxed and the plain pool stores its task values; neither allocates per task.
//
// One file per mechanism:
//
//   - engine.go: the Engine, its settings, and the snapshot of its counters.
//   - counters.go: the only functions that write the counters: a task is counted as it enters
//     (accept, refuse), while it holds a slot (slot, unslot) and as it leaves (end, with its
//     Outcome).
//   - admit.go: admission. Submit and Forward accept a task or refuse it, and the
//     back-pressure of a submitter far ahead of the workers.
//   - waiter.go: submitters blocked on a full bounded queue, served first come first served.
//   - start.go: the start gate. mayStart is the one place that decides whether a task may
//     start now; every start passes through it, and startNext and dispatch are the one step
//     that starts what may start. The waking gate (route, begin, passOn) lives here too.
//   - loop.go: the worker loop. A worker runs a task, counts its end (finish), takes the next
//     task if it may start, lingers once and parks; panics and runtime.Goexit end here.
//   - idle.go: parked workers (a LIFO stack) and the spots they park in.
//   - reap.go: the reaper that dismisses workers idle for longer than the idle timeout.
//   - capacity.go: Resize.
//   - stop.go: Stop, and StopNow, which stops and takes the queue out in one step; the
//     removal of queued tasks that will never run, and the end of the engine's last goroutine.
//   - stopnow.go: what StopNow needs beyond Remove for sub-pools: RemoveIf, and Abandon for
//     a Config.Start worker taken out of the parent's queue unrun.
//   - overflow.go: the overflow policies of a full bounded queue (Block, Reject, CallerRuns,
//     DiscardOldest), and a task CallerRuns runs on its submitter.
//   - pause.go: Pause and Resume, the gate they share with rate limits and ancestors, and a
//     task given back unrun.
//   - rate.go: the token bucket of a rate limit on starts.
//   - observe.go: the Observer, told of each task's start and end with its wait and run times.
//   - lock.go: how the hot path takes the lock.
//   - weight.go: weighted tasks, which hold several slots of the limit.
//   - priority.go: the queue by priority level, and sub-pools taking turns in it.
//   - keyed.go: admission of a keyed pool's runners.
//   - bubble.go: whether the engine was made in a testing/synctest bubble, where nothing with
//     a channel is reused.
//
// Slots and goroutines are counted apart. running is the number of tasks started and not
// finished: the limit bounds it, and it is what Counters reports as Running. workers is the
// number of goroutines that may take tasks (running ones, idle ones and ones between tasks),
// alive the number of goroutines that have not yet ended, dismissed ones included.
//
// hotpath.md beside this file is the map of the hot path; measurements.md the log of what
// was measured to shape it.
package worker

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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

// Outcome is how a task that left the queue ended, and so which counter it ends in.
type Outcome uint8

// The outcomes of Config.Run.
const (
	Completed Outcome = iota // it ran (its panic, if any, went to the task itself, or it called runtime.Goexit)
	Panicked                 // it panicked and its panic went to the panic handler
	Skipped                  // it never ran: its own context had ended, or it was canceled
	Claimed                  // another party claimed it while it was queued and counted it (RunClaimed)

	// The engine's own outcomes, for the tasks it takes out of the queue unrun.
	removed   // Remove, RemoveIf, StopNow, Abandon
	discarded // DiscardOldest
)

// Gate is what a sub-pool's engine asks its parent's. Halted reports whether it or an
// ancestor is paused, Ended whether it or an ancestor was stopped. Admits reports whether a
// worker of the sub-pool, which holds one of the parent's slots, may go on to another task:
// no ancestor is paused, none runs more than its limit or has a weighted task that does not
// fit at the head of its queue (first in, first out), and each that limits the rate gives a
// token (taken; when one is out it arms a
// timer and reports false). Lends is Admits without the limits, for a task that waits for
// work it gave the pool and runs it in its own slot (see Engine.Lends). Halted takes no lock;
// Admits takes each ancestor's lock in turn, never two at once, and is called with the
// sub-pool's held. *Engine implements it.
type Gate interface {
	Halted() bool
	Ended() bool
	Admits() bool
	Lends() bool
	Paces() bool
	Relayed()
}

// Config holds an Engine's settings. Validation is the caller's job.
type Config[T any] struct {
	Run          func(T)                   // runs one task; required unless Outcomes is set
	MaxWorkers   int                       // >= 1
	MinWorkers   int                       // started at once, never reaped
	QueueSize    int                       // 0: unbounded
	NonBlocking  bool                      // a full queue rejects instead of blocking
	NoRecover    bool                      // a task's panic ends the process instead of going to PanicHandler
	IdleTimeout  time.Duration             // idle workers above MinWorkers exit after it; 0: at once; < 0: never
	PanicHandler func(v any, stack []byte) // required
	// Reports, when set, tells the tasks that report their own panics and runtime.Goexit.
	// The engine recovers the panic of such a task, also under NoRecover, and calls Panicked
	// with it instead of PanicHandler; for a Goexit it calls Goexited. Either way the task
	// counts as completed, as if it had returned. Such tasks then need no recovering frame of
	// their own, which cost each of them a call and a defer (see runUntilPanic).
	Reports  func(arg T) bool
	Panicked func(arg T, v any, stack []byte) // required with Reports
	Goexited func(arg T)                      // required with Reports
	// Outcomes, when set, runs one task instead of Run and says how it ended: for tasks that
	// may end unrun (Outcome Skipped) or find themselves claimed by another party (Claimed).
	// The worker loop chooses between the two once per run of tasks, not per task.
	Outcomes func(T) Outcome
	// RunInline, when set, runs a task on its submitter (Overflow CallerRuns, RunHere,
	// RunClaimed) instead of Run.
	RunInline func(T) Outcome
	// Begin, when set, is called where a task is about to run and the Observer is to be
	// told (Run itself decides otherwise): Completed lets it run; another outcome ends it
	// unrun, unobserved, counted as that outcome. Run must then return the same outcome.
	Begin func(T) Outcome
	// Take, when set, claims a queued task that the engine takes out of the queue unrun
	// (Remove, RemoveIf, DiscardOldest, Abandon), against the other parties that may claim
	// it. gone false: the engine has it, to hand back or to end unrun. gone true: another
	// party claimed it first, and the engine drops it, counted as o (Skipped for a canceled
	// one; Claimed for one that party counted: see RunClaimed). It is called with e.mu held and
	// must not call into the engine.
	Take func(T) (o Outcome, gone bool)
	// Doomed, when set, reports whether a queued task will not run once taken: another
	// party claimed it, or it will be skipped. Such a task leaves the queue without a token
	// of the rate limit, which only starts are to spend. A true answer must stay true. It is
	// called with e.mu held and must not call into the engine.
	Doomed func(T) bool
	// Start, when set, replaces "go serve": it must arrange for Serve(first, since) to be called
	// exactly once on some goroutine. It is called with the engine's lock held (see forward) and
	// must not call back into this engine. Sub-pools use it to run their workers as tasks of the
	// parent. Such workers never park: they return when the queue is empty. ahead is set for a
	// worker that replaces one an ancestor stopped between two tasks (Admits): it goes behind the
	// head of the parent's queue (ForwardAhead) rather than at its tail.
	Start func(first T, since int64, ahead bool)
	// Exited, when set, is called once the engine has stopped and its last goroutine is
	// done, with the engine's lock held. A sub-pool uses it to release its parent (Release).
	Exited func()
	// Guarded makes every start take the general path (mayStartGuarded, takeGuarded, next's
	// general case) instead of the plain cases written out for an engine that uses no
	// feature: tests run one sequence of operations both ways and expect the same outcome.
	Guarded bool
	// Now is the clock used for idle reaping, by Observer and by the rate limit; nil means
	// time.Now.
	Now func() time.Time
	// Observer, when set, is told when each task starts and ends: see observe.go.
	Observer Observer[T]
	// Sample, above 1, has the engine time one task in Sample, picked at random at its
	// submit, and tell Observer of that one only: see observe.go.
	Sample uint32
	// Records, when set with Observer, stands in for Observer's Started and Finished, which
	// are then not called: see observe.go.
	Records *Records[T]
	// Parent, when set, is the engine whose workers run this one's (a sub-pool's parent). A
	// task of this engine starts on a worker of the parent, which the parent starts under
	// its own limit, pause, rate and priority, and so on up; a worker that goes on to another
	// task of this engine asks Parent.Admits first. See pause.go.
	Parent Gate
	// Overflow is what a blocking Submit does on a full queue; see overflow.go.
	Overflow Overflow
	// MaxWait bounds how long Block and CallerRuns wait for room; 0: no bound.
	MaxWait time.Duration
	// LimitBlocked caps the submitters waiting on a full queue at MaxBlocked.
	LimitBlocked bool
	MaxBlocked   int
	// Discard, when set, receives a task DiscardOldest dropped, on the submitter, with no lock
	// held.
	Discard func(T)
	// Keep, when set, marks tasks DiscardOldest must not drop (a sub-pool's worker).
	Keep func(T) bool
	// Weight, when set, gives a task's weight: the slots it holds while it runs (see
	// weight.go). It is called only after UseWeights.
	Weight func(T) int
	// Level, when set, gives a task's priority level (see priority.go). It is called only
	// after UseLevels.
	Level func(T) int
	// Turn, for a sub-pool's engine after UseTurns, reports whether its worker should give
	// the parent's worker back before its next task: see priority.go.
	Turn func() bool
	// Relay, when set, marks (starting) or unmarks a task about to start from a queue with
	// levels as a sub-pool's worker that relays: it brings its sub-pool's next worker when
	// it begins, and then calls Relayed on this engine (ServeRelayed). It reports whether
	// arg is such a worker. See priority.go.
	Relay func(arg T, starting bool) bool
}

// Counters is a snapshot of an Engine's state, taken under its lock.
type Counters struct {
	MaxWorkers int // the limit
	Running    int // tasks started and not finished
	Workers    int // goroutines that may take tasks, idle ones included
	Idle       int // parked workers
	Waiting    int // accepted tasks in the queue
	// Handed counts a sub-pool's tasks handed to a worker forwarded to the parent that has not
	// begun them: counted in Running, though they wait in the parent's queue.
	Handed int
	// Free counts workers not running a task: parked, lingering or between two tasks. A
	// sub-pool's workers are its parent's: it has none free.
	Free int

	Accepted, Completed, Panicked uint64
	Rejected, Canceled            uint64
	Skipped                       uint64 // accepted, then never run: its context ended or it was canceled
	Removed                       uint64 // accepted, then removed from the queue unrun (Remove)
	Discarded                     uint64 // accepted, then dropped by DiscardOldest
	CallerRan                     uint64 // run on the submitter by CallerRuns
	Paused                        bool
}

// Engine runs tasks of type T on at most MaxWorkers goroutines. All methods are safe for
// concurrent use.
type Engine[T any] struct {
	// Where the fields sit changes how long a task takes. Every submit and every task's end
	// takes mu and touches fields after it, so their cache lines move between the cores with
	// the lock. The settings come first, padded to whole cache lines (hotLine); mu starts the
	// next line and shares it with the queue; the line after holds the counters and limits a
	// plain submit or task end reads or writes, and the one after that timed, stopped, waking
	// and the idle and blocked lists. With mu among the counters or alone on its line,
	// ultrapool's 1 µs sleeps took longer; with mu and the queue but the counters spread over
	// three more lines, one submitter of tiny tasks took longer. Why mu and the queue want one
	// line is not understood; the figures are in measurements.md, "Where the engine's fields
	// sit". TestEngineFieldsKeepTheirPlaces
	// guards the order; BenchmarkSleepingTasks and BenchmarkSubmit both judge a new field's
	// place.
	cfg Config[T]
	_   [hotLine]byte

	mu    sync.Mutex
	queue levelQueue[T] // the plain FIFO unless leveled: see priority.go

	running             int // tasks started and not finished
	pending             int // accepted and not yet finished: queued or running
	accepted, completed uint64
	workers             int // goroutines that may take tasks: running, idle, or between tasks
	max                 int
	sched               int // bits of the scheduling features in use (weights, turns); 0 by default
	// gated is nonzero while something besides the limit may hold a start back: a pause, a
	// rate limit or an ancestor's (Config.Held). mayStart looks further only then, so an
	// engine using none of them pays one comparison per start. See pause.go.
	gated int

	timed   bool // set only with an Observer: see observe.go
	stopped bool
	reaping bool
	waking  int          // handed a task or started, and not yet begun, or lingering: see route
	idle    []*worker[T] // parked workers; LIFO, so idle[0] has been idle longest
	blocked waiterList[T]

	// The clock's settings start the line after the hot ones: read by every reading of the
	// clock, most of them without the lock, they share no line with what a task writes.
	clockSet

	held  int  // slots held by running weighted tasks beyond one each: see weight.go
	alive int  // goroutines not yet ended, dismissed ones included
	holds int  // sub-pools not yet exited, which may still Forward tasks: see Hold
	cutIn bool // the next worker Start forwards replaces one an ancestor stopped: see takeGuarded
	// relays counts the sub-pools' workers started and not yet relayed, the highest of their
	// levels relayTop: see priority.go.
	relays, relayTop int
	// lent counts the places of claimed tasks (RunClaimed) taken out of the queue (outcome
	// Claimed), less the claimed tasks that have ended. Counters adds it to the queue's
	// length, so that Waiting counts a claimed task once from its submit until it ends,
	// whether its place or its end comes first: while it runs after its place was dropped,
	// and not once it has ended before its place was reached.
	lent int
	// frozen: blocked submitters stay blocked until Stop, and no slot is lent (see Freeze).
	// Written under mu; Lends reads it without.
	frozen atomic.Bool

	drained chan struct{} // closed when pending reaches 0; made on demand
	quiet   chan struct{} // closed when no task runs any more (begun); made on demand by Quiet
	resumed chan struct{} // closed by the next Resume (or Stop); made on demand by Resumed
	exited  chan struct{} // closed when stopped and no goroutine is left
	done    chan struct{} // closed by Stop; wakes the reaper

	panicked                    uint64
	rejected, canceled, removed uint64
	skipped                     uint64 // Outcome Skipped
	dropped, callerRan          uint64 // DiscardOldest drops, CallerRuns runs

	paused atomic.Bool            // written under mu; read by sub-pools without it
	goOn   atomic.Bool            // nothing but the limit holds a start, and it is kept: see reopen
	rate   atomic.Pointer[bucket] // nil: no rate limit; see rate.go

	spares  *spare.Pool[*worker[T]] // shared by the engines of T: see newWorker
	bubbled bool                    // made inside a testing/synctest bubble: reuses nothing (see inBubble)

	// yielding counts the submitters inside crowded's yield. It is raised under mu, when
	// crowded has said yes, and lowered without it once the yield returns. Being written
	// without the lock, it has the last cache line to itself: next to timed, which every
	// submit and every task's end read, it cost time with 200 submitters (measurements.md).
	_        [64]byte
	yielding atomic.Int32
	// The Engine's size is a multiple of 128 bytes, so that its size class is too and every
	// Engine starts a pair of cache lines: mu's line and the counters' line after it then
	// form one pair, which processors fetch together. At 704 bytes (a class that is a
	// multiple of 64 only), every other Engine started in the middle of a pair, and the plain
	// paths of submits and tasks took 6% to 9% longer, even on one processor
	// (measurements.md, "Observing"). TestEngineFieldsKeepTheirPlaces keeps the size.
	_ [92]byte
}

// hotLine pads Engine's settings to a whole number of cache lines, so that mu starts one.
// Config's size does not depend on T.
const hotLine = (64 - unsafe.Sizeof(Config[struct{}]{})%64) % 64

// New returns an Engine and starts cfg.MinWorkers workers.
func New[T any](cfg Config[T]) *Engine[T] {
	realClock := cfg.Now == nil
	if realClock {
		cfg.Now = time.Now
	}
	e := &Engine[T]{
		cfg:     cfg,
		max:     cfg.MaxWorkers,
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
		spares:  spare.For[*worker[T]](),
		bubbled: inBubble(),
	}
	e.epoch, e.realClock = cfg.Now(), realClock
	e.timed = cfg.Observer != nil
	e.regate()
	if cfg.Start == nil && cfg.MinWorkers > 0 {
		e.mu.Lock()
		for range cfg.MinWorkers {
			e.startParked()
		}
		e.mu.Unlock()
	}
	return e
}

// Counters returns a consistent snapshot of the engine's state.
func (e *Engine[T]) Counters() Counters {
	e.mu.Lock()
	defer e.mu.Unlock()
	// A sub-pool's task handed to a worker forwarded to the parent waits in the parent's
	// queue: waking counts those workers, as a sub-pool's never linger. A pool's own hand-out
	// takes a worker at once, so its task counts as running from then.
	handed, free := 0, 0
	if e.cfg.Start != nil {
		handed = e.waking
	} else {
		free = max(0, e.workers-e.running)
	}
	// A claimed task that has ended takes its place off Waiting (lent). That place may have
	// left the queue already, taken into a slot by a worker that has yet to drop it: it then
	// counts in running, and what lent takes off beyond the queue comes off running instead.
	running, waiting := e.running, e.queue.Len()+e.lent
	if waiting+handed < 0 {
		running += waiting + handed
		waiting = -handed
	}
	return Counters{
		MaxWorkers: e.max,
		Running:    running,
		Workers:    e.workers,
		Idle:       len(e.idle),
		Waiting:    waiting,
		Handed:     handed,
		Free:       free,
		Accepted:   e.accepted,
		Completed:  e.completed,
		Panicked:   e.panicked,
		Rejected:   e.rejected,
		Canceled:   e.canceled,
		Skipped:    e.skipped,
		Removed:    e.removed,
		Discarded:  e.dropped,
		CallerRan:  e.callerRan,
		Paused:     e.paused.Load(),
	}
}

// run runs arg with Config.Outcomes or Config.Run.
func (e *Engine[T]) run(arg T) Outcome {
	if e.cfg.Outcomes != nil {
		return e.cfg.Outcomes(arg)
	}
	e.cfg.Run(arg)
	return Completed
}

// ready asks Config.Begin whether arg, about to run, runs: see there.
func (e *Engine[T]) ready(arg T) Outcome {
	if e.cfg.Begin == nil {
		return Completed
	}
	return e.cfg.Begin(arg)
}

// CountCanceled counts a submit refused because its context had ended before it was made.
func (e *Engine[T]) CountCanceled() {
	e.mu.Lock()
	e.refuse(Canceled)
	e.mu.Unlock()
}

// DefaultPanicHandler logs a task's panic value and its stack, one frame a line, through the
// log/slog default logger.
func DefaultPanicHandler(v any, stack []byte) {
	slog.Error(fmt.Sprintf("crew: task panicked: %v\n%s", v, stack))
}
