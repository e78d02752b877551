package worker

import (
	"context"
	"math"
	"runtime/pprof"
	"time"

	"github.com/crewgo/crew/internal/histogram"
	"github.com/crewgo/crew/internal/proc"
)

// Observing tasks: with Config.Observer set, the engine measures how long each task waited
// between its submit and its start, and how long it ran, and tells the Observer on the worker
// with no lock held.
//
// The submit time of each queued task is kept beside it in the queue, as its stamp (the queue
// package's PushAt and PopAt), so the task values stay as they are and a typed pool still allocates
// nothing per task. The plain paths of Submit and next call PushAt and PopAt only for an engine
// that observes, and Push and Pop otherwise: one helper holding both calls was not inlined, and
// every submit and task took longer. The times travel as arguments, never through a field of the
// engine: a submit reads the clock before taking the lock (lockToSubmit) and hands the time to
// route, which queues it with the task or hands it out with it; whoever takes a task from the queue
// gets its stamp from dequeue, and the start hands it to the worker that runs the task: in w.since
// for a parked or new worker (handOut, launch), through Config.Start for a sub-pool's worker, and
// through taken for a worker that takes its next task itself. In a queue of their own, or in fields
// of the engine, the times cost the holder of e.mu more cache lines per task, which moved between
// the cores with the lock (measurements.md, "Observing"). Without an Observer, none of this
// happens: timed is false, the queue keeps no stamps, and the worker loop is the plain one. An
// observed engine takes the same plain paths through Submit and next as one without;
// TestQueuedTasksWaitTheirOwnTime guards the stamps there.
//
// With Config.Records set as well, the engine records the two times in Records' histograms
// itself, and tells the Observer only of discarded tasks.
//
// With Config.Sample above 1, a submit picks its task for timing at random, one in Sample,
// and stamps the others Unsampled without reading the clock; a worker reads no clock for an
// Unsampled task and does not tell the Observer of it (started). The stamp travels as any
// other, so a task keeps its pick from its submit to its end.

// Observer is told of each task's start and end. Its methods run on the worker, with no lock
// of the engine held; a method that panics unwinds into the worker's recovery as a task's
// panic would, so implementations recover their own panics.
type Observer[T any] interface {
	// Started is called before arg runs, with the time since its submit. false means the
	// task is not observed: Finished will not be called for it.
	Started(arg T, wait time.Duration) bool
	// Finished is called after an observed task returned, panicked (before the panic
	// handler runs) or called runtime.Goexit.
	Finished(wait, run time.Duration, panicked bool)
	// Discarded is called for a task removed from the queue unrun by an overflow policy,
	// with the time it waited.
	Discarded(arg T, wait time.Duration)
}

// Records is an Observer's Started and Finished for one that only records the times in
// histograms: the engine records them itself, and spares each task two calls through the
// Observer interface and what the Observer checks before it records (measurements.md,
// "Histograms recorded by the engine"). Each record counts Weight times (Config.Sample).
// Skip, when set, names the tasks not observed: Started would have said false for them.
type Records[T any] struct {
	Wait, Run *histogram.Histogram
	Weight    uint64
	Skip      func(T) bool
}

// clockSet is the engine's clock, set by New and only read after. Every reading of the clock
// reads it, most of them without the lock, so it sits away from the lines that every task
// writes under the lock, on the line after them, which the engine writes only as workers
// start and exit (measurements.md, "Observing").
type clockSet struct {
	epoch time.Time // clock readings are durations since it, so the monotonic clock is used
	// realClock is set when Config.Now is time.Now: clock then calls time.Since, which reads
	// the monotonic clock alone (and the fake one in a testing/synctest bubble). Now().Sub
	// reads the wall clock as well, and with three readings per task the clock took a fifth
	// of BenchmarkSubmitWithHistograms' time (measurements.md, "Observing").
	realClock bool
}

// observed is a worker's part: the task it is about to run or is running.
type observed struct {
	since     int64 // the submit time of the task it was handed
	start     int64 // when that task started
	observing bool  // Started said yes and Finished has not been called
	subWorker bool  // a worker made by Serve: it never parks and is never reused
	// ended is set once the task has ended and been reported (a reporter's panic handed to
	// it), before Finished: a runtime.Goexit from then on is the Finished hook's, and the task
	// must not be told of it (see runUntilPanic).
	ended bool
}

// inHook reports whether w's goroutine is in the Finished hook of a task that has ended.
func (w *worker[T]) inHook() bool { return w != nil && w.ended }

// transient reports whether w is a worker that must not park: a sub-pool's (Serve), which is
// nil when the engine does not observe.
func (w *worker[T]) transient() bool { return w == nil || w.subWorker }

// subWorker returns the worker Serve runs as: nil without an Observer, since it needs no
// spot, or a spot of its own to carry the submit times of its tasks.
func (e *Engine[T]) subWorker(since int64) *worker[T] {
	if !e.timed {
		return nil
	}
	return &worker[T]{observed: observed{since: since, subWorker: true}}
}

// timedSpawn returns, when the engine observes tasks, the worker a spawn starts, carrying
// the submit time of its first task (since); nil otherwise, and launch makes the worker.
// A sub-pool's spawn hands the time to Config.Start instead (forward). Callers hold e.mu.
func (e *Engine[T]) timedSpawn(since int64) *worker[T] {
	if !e.timed {
		return nil
	}
	w := e.newWorker()
	w.since = since
	return w
}

// clock returns the current time as a stamp. Callers hold e.mu or are on a worker.
func (e *Engine[T]) clock() int64 {
	if e.realClock {
		return int64(time.Since(e.epoch))
	}
	return int64(e.cfg.Now().Sub(e.epoch))
}

// unstamped takes the oldest task from the plain queue and hands its submit time to w, the
// worker that runs it, for an engine that observes. Callers hold e.mu.
func (e *Engine[T]) unstamped(w *worker[T]) T {
	arg, at, _ := e.queue.fifo.PopAt()
	w.since = at
	return arg
}

// stampNow is the stamp of a task queued now, 0 when the engine does not observe. Callers
// hold e.mu.
func (e *Engine[T]) stampNow() int64 {
	if e.timed {
		return e.stamp()
	}
	return 0
}

// Unsampled is the stamp of a task that Config.Sample left out: nothing reads the clock for
// it, and the Observer is not told of it.
const Unsampled = math.MinInt64

// LeftOut reports whether a task submitted now is left out of a sample of one task in n,
// picked at random. It uses the runtime's per-thread random numbers, so that submitters
// share nothing for it, and its cheap generator (proc.Rand): math/rand/v2's cost most of
// what a sampled task costs beyond one not observed (measurements.md, "Histograms counted by
// processor").
func LeftOut(n uint32) bool { return n > 1 && proc.Rand(n) != 0 }

// stamp returns the submit time of a task submitted now: the clock, or Unsampled for a task
// that Config.Sample leaves out.
func (e *Engine[T]) stamp() int64 {
	if LeftOut(e.cfg.Sample) {
		return Unsampled
	}
	return e.clock()
}

// taken hands at, the submit time of a task a worker took from the queue, to the worker.
// Callers hold e.mu.
func (e *Engine[T]) taken(w *worker[T], at int64) {
	if e.timed {
		w.since = at
	}
}

// runObserved is runTasks for an engine with an Observer.
// The task running is *arg, where runTasks finds it after a panic or a Goexit.
func (e *Engine[T]) runObserved(w *worker[T], arg *T) (v any, stack []byte, ok bool) {
	for {
		o := e.ready(*arg)
		if o == Completed {
			e.started(w, *arg)
			o = e.run(*arg)
			w.ended = true
			e.finished(w, false)
		}
		var more bool
		if *arg, more = e.next(w, o); !more {
			return nil, nil, true
		}
	}
}

// started tells the Observer that w starts the task it was handed.
func (e *Engine[T]) started(w *worker[T], arg T) {
	w.ended = false
	if w.since == Unsampled {
		w.observing = false
		return
	}
	now := e.clock()
	w.start = now
	wait := time.Duration(max(0, now-w.since))
	if r := e.cfg.Records; r != nil {
		w.observing = r.Skip == nil || !r.Skip(arg)
		if w.observing {
			r.Wait.RecordN(wait, r.Weight)
		}
		return
	}
	w.observing = e.cfg.Observer.Started(arg, wait)
}

// finished tells the Observer that w's task ended, unless it was not observed or the
// Observer was told already (a Goexit in Finished itself).
func (e *Engine[T]) finished(w *worker[T], panicked bool) {
	if !w.observing {
		return
	}
	w.observing = false
	run := time.Duration(max(0, e.clock()-w.start))
	if r := e.cfg.Records; r != nil {
		r.Run.RecordN(run, r.Weight)
		return
	}
	e.cfg.Observer.Finished(time.Duration(max(0, w.start-w.since)), run, panicked)
}

// discarded tells the Observer that a task was removed from the queue unrun, by an overflow
// policy that drops it. since is its submit time: the stamp dequeue returned when it
// removed the task. Callers hold no lock.
func (e *Engine[T]) discarded(arg T, since int64) {
	if e.timed && since != Unsampled {
		e.cfg.Observer.Discarded(arg, time.Duration(max(0, e.clock()-since)))
	}
}

// unlabel clears the pprof labels of a goroutine the engine has just started: a worker or the
// reaper. The go statement gives a new goroutine the labels of the one that ran it, here a
// submitter, and a worker serves many submitters for a long time: with that submitter's
// labels, a profile would put every task it runs down to the request that happened to start
// it. It costs a call per goroutine started, nothing per task.
// TestWorkerStartsWithoutItsSubmittersLabels guards it.
func unlabel() {
	pprof.SetGoroutineLabels(context.Background())
}
