package crew

import (
	"time"

	"github.com/crewgo/crew/internal/histogram"
	"github.com/crewgo/crew/internal/worker"
)

// Hooks are functions a pool calls as its tasks pass through it; set them with [WithHooks].
// A nil field is not called.
//
// Each hook runs on the goroutine named below with no lock of the pool held, so a hook may
// call [Pool.Stats], [Pool.TrySubmit], [Pool.Resize] or [Pool.Stop] on the pool. A hook
// that panics has its panic sent to the pool's panic handler ([WithPanicHandler]), and the
// task it was called for is unaffected: a task whose Queued or Started hook panicked still
// runs exactly once, and the worker keeps serving. A Started or Finished hook that calls
// runtime.Goexit ends its worker as a task that calls it does, and the pool replaces the
// worker; a task whose Started hook did so never runs, but counts as completed. Hooks add
// their own run time to every task's path through the pool, so they should be quick.
//
// For each task, Queued happens before Started, and Started before Finished. A pool's hooks
// see the pool's own tasks, including those of [Go], [Group], [Results], [Map] and
// [ForEach]; a sub-pool's tasks are seen by the sub-pool's hooks ([Pool.Sub] takes options).
type Hooks struct {
	// Queued is called on the submitting goroutine when a submit offers a task, before the
	// pool accepts it or refuses it. If the pool refuses it, Rejected follows. TaskInfo is
	// zero.
	Queued func(TaskInfo)
	// Started is called on the worker just before a task runs, with TaskInfo.Wait set to the
	// time from its submit to this moment.
	Started func(TaskInfo)
	// Finished is called on the worker after a task returned, called runtime.Goexit or
	// panicked (before the panic handler), with Wait, Run and Panicked set.
	Finished func(TaskInfo)
	// Rejected is called on the submitting goroutine when a submit did not accept its task,
	// with the error the submit returns: [ErrQueueFull], [ErrStopped], or the error of a
	// submit whose context ended first. The task never runs. It is not called for
	// [ErrNilTask].
	Rejected func(error)
	// Discarded is called for an accepted task that an overflow policy removed from the
	// queue unrun, on the submitting goroutine that caused it, with TaskInfo.Wait set to the
	// time the task waited. Started and Finished are never called for it.
	Discarded func(TaskInfo)
}

// TaskInfo describes one task to a hook ([Hooks]).
type TaskInfo struct {
	// Wait is the time from the task's submit to its start (or its discard).
	Wait time.Duration
	// Run is the time the task ran, set in Finished only.
	Run time.Duration
	// Panicked reports, in Finished, that the task panicked.
	Panicked bool
}

// Histogram counts durations in exponential buckets: about eight per power of two, from a
// microsecond to an hour. [Stats] holds two, WaitTime and RunTime, under
// [WithLatencyHistograms].
//
// Buckets holds the boundaries in seconds, in increasing order, with len(Buckets) ==
// len(Counts)+1; Counts[i] counts the durations d with Buckets[i] < d <= Buckets[i+1] (the
// same "less or equal" as a Prometheus bucket's le label). Counts are per bucket, not
// cumulative. The first boundary is 0, so the first bucket holds every duration up to about
// a microsecond, zero included; the last is +Inf, so the last bucket holds every duration
// above about an hour. The finite boundaries are powers of 2^(1/8) seconds. Count is the sum
// of Counts and Sum the total of the durations in seconds.
//
// The zero Histogram (nil slices) is what Stats holds without WithLatencyHistograms. Each
// Stats call returns new slices, which the caller may keep or change.
type Histogram struct {
	Buckets []float64
	Counts  []uint64
	Count   uint64
	Sum     float64
}

// WithHooks makes the pool call h's functions as its tasks are submitted, start, finish or
// are refused; see [Hooks] for where and when each is called. Without hooks (the default),
// a pool spends nothing on them.
func WithHooks(h Hooks) Option {
	return func(c *config) { c.hooks = &h }
}

// WithLatencyHistograms makes the pool record how long each task waited between its submit
// and its start, and how long it ran, in the WaitTime and RunTime histograms of [Stats]. Every
// task is counted, none sampled; recording allocates nothing and takes no lock shared by the
// workers. Without this option (the default), Stats holds zero histograms and the pool reads
// no clock per task.
func WithLatencyHistograms() Option {
	return func(c *config) { c.histograms = true }
}

// observer is what a pool with hooks or histograms hands its engine (worker.Observer), and
// what its submits report to.
type observer[T any] struct {
	hooks     Hooks
	wait, run *histogram.Histogram // nil without WithLatencyHistograms
	handler   func(v any, stack []byte)
	skip      func(T) bool // tasks not observed, or nil
}

func newObserver[T any](c config, skip func(T) bool) *observer[T] {
	if c.hooks == nil && !c.histograms {
		return nil
	}
	o := &observer[T]{handler: c.panicHandler, skip: skip}
	if c.hooks != nil {
		o.hooks = *c.hooks
	}
	if c.histograms {
		o.wait, o.run = histogram.New(), histogram.New()
	}
	return o
}

// Started implements worker.Observer.
func (o *observer[T]) Started(arg T, wait time.Duration) bool {
	if o.skip != nil && o.skip(arg) {
		return false
	}
	if o.wait != nil {
		o.wait.Record(wait)
	}
	o.call(o.hooks.Started, TaskInfo{Wait: wait})
	return true
}

// Finished implements worker.Observer.
func (o *observer[T]) Finished(wait, run time.Duration, panicked bool) {
	if o.run != nil {
		o.run.Record(run)
	}
	o.call(o.hooks.Finished, TaskInfo{Wait: wait, Run: run, Panicked: panicked})
}

// Discarded implements worker.Observer.
func (o *observer[T]) Discarded(wait time.Duration) {
	o.call(o.hooks.Discarded, TaskInfo{Wait: wait})
}

func (o *observer[T]) queued() { o.call(o.hooks.Queued, TaskInfo{}) }

func (o *observer[T]) rejected(err error) {
	if o.hooks.Rejected == nil {
		return
	}
	o.guard(func() { o.hooks.Rejected(err) })
}

// call runs hook h, if set, sending a panic of h to the panic handler.
func (o *observer[T]) call(h func(TaskInfo), ti TaskInfo) {
	if h == nil {
		return
	}
	o.guard(func() { h(ti) })
}

// guard runs a hook and sends its panic to the panic handler, and a panic of the handler to
// the default one, as the worker does for tasks. catch tells a panic(nil) under
// GODEBUG=panicnil=1 from a Goexit, which recover alone does not.
func (o *observer[T]) guard(hook func()) {
	pe := catch(hook)
	if pe == nil {
		return
	}
	if hp := catch(func() { o.handler(pe.Value, pe.Stack) }); hp != nil {
		worker.DefaultPanicHandler(hp.Value, hp.Stack)
	}
}

// histograms fills s.WaitTime and s.RunTime.
func (o *observer[T]) histograms(s *Stats) {
	if o == nil || o.wait == nil {
		return
	}
	// RunTime first: a task's wait is recorded before its run, so WaitTime, read after,
	// counts every task that RunTime does.
	s.RunTime = snapshot(o.run)
	s.WaitTime = snapshot(o.wait)
}

func snapshot(h *histogram.Histogram) *Histogram {
	var s histogram.Snapshot
	h.Snapshot(&s)
	return &Histogram{
		Buckets: histogram.Bounds(),
		Counts:  append([]uint64(nil), s.Counts[:]...),
		Count:   s.Count,
		Sum:     s.Sum.Seconds(),
	}
}
