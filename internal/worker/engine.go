// Package worker is the machinery behind crew's pools: it starts worker goroutines lazily up
// to a limit, hands tasks to them, parks idle workers and reaps those idle for too long.
//
// An Engine is generic over the task argument T, so a typed pool stores its arguments
// unboxed and the plain pool stores its task values; neither allocates per task.
//
// One file per mechanism:
//
//   - engine.go: the Engine, its settings and its counters.
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
//   - stop.go: Stop, the removal of queued tasks that will never run, and the end of the
//     engine's last goroutine.
//   - lock.go: how the hot path takes the lock.
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
	IdleTimeout  time.Duration             // idle workers above MinWorkers exit after it; 0: at once; < 0: never
	PanicHandler func(v any, stack []byte) // required
	// NoRecover lets a task's panic end the process instead of going to PanicHandler.
	NoRecover bool
	// Start, when set, replaces "go serve": it must arrange for Serve(first, since) to be
	// called exactly once on some goroutine. Sub-pools use it to run their workers as tasks
	// of the parent. Such workers never park: they return when the queue is empty.
	Start func(first T, since int64)
	// Exited, when set, is called once the engine has stopped and its last goroutine is
	// done, with the engine's lock held. A sub-pool uses it to release its parent (Release).
	Exited func()
	// Now is the clock used for idle reaping and by Observer; nil means time.Now.
	Now func() time.Time
	// Observer, when set, is told when each task starts and ends: see observe.go.
	Observer Observer[T]
}

// Counters is a snapshot of an Engine's state, taken under its lock.
type Counters struct {
	MaxWorkers int // the limit
	Running    int // tasks started and not finished
	Workers    int // goroutines that may take tasks, idle ones included
	Idle       int // parked workers
	Waiting    int // accepted tasks not started

	Accepted, Completed, Panicked uint64
	Rejected, Canceled            uint64
	Removed                       uint64 // accepted, then removed from the queue unrun (Remove)
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
	running int // tasks started and not finished: the slots in use
	workers int // goroutines that may take tasks: running, idle, or between tasks
	alive   int // goroutines not yet ended, dismissed ones included
	waking  int // handed a task or started, and not yet begun, or lingering: see route
	pending int // accepted and not yet finished: queued or running
	reaping bool
	holds   int // sub-pools not yet exited, which may still Forward tasks: see Hold
	stopped bool

	drained chan struct{} // closed when pending reaches 0; made on demand
	exited  chan struct{} // closed when stopped and no goroutine is left
	done    chan struct{} // closed by Stop; wakes the reaper

	accepted, completed, panicked uint64
	rejected, canceled, removed   uint64

	// yielding counts the submitters inside crowded's yield. It is raised under mu, when
	// crowded has said yes, and lowered without it once the yield returns.
	yielding atomic.Int32

	spares *spare.Pool[*worker[T]] // shared by the engines of T: see newWorker

	timing // set only with an Observer: see observe.go
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
	if cfg.Observer != nil {
		e.timed, e.epoch = true, cfg.Now()
	}
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
	return Counters{
		MaxWorkers: e.max,
		Running:    e.running,
		Workers:    e.workers,
		Idle:       len(e.idle),
		Waiting:    e.queue.Len(),
		Accepted:   e.accepted,
		Completed:  e.completed,
		Panicked:   e.panicked,
		Rejected:   e.rejected,
		Canceled:   e.canceled,
		Removed:    e.removed,
	}
}

// CountCanceled counts a submit refused because its context had ended before it was made.
func (e *Engine[T]) CountCanceled() {
	e.mu.Lock()
	e.canceled++
	e.mu.Unlock()
}

// DefaultPanicHandler logs a task's panic value and its stack, one frame a line, through the
// log/slog default logger.
func DefaultPanicHandler(v any, stack []byte) {
	slog.Error(fmt.Sprintf("crew: task panicked: %v\n%s", v, stack))
}
