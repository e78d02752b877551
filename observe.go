package crew

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crewgo/crew/internal/adaptive"
	"github.com/crewgo/crew/internal/histogram"
	"github.com/crewgo/crew/internal/worker"
)

// Hooks are functions a pool calls as its tasks pass through it; set them with [WithHooks].
// A nil field is not called.
//
// A pool's hooks see every task of the pool, whatever the door it came through:
// [Pool.Submit], [Pool.SubmitN], [FuncPool.Invoke] and their Try and Context forms, [Go],
// [Group.Go], [Results.Go], [Map], [ForEach], [MapSeq], [MapSeqUnordered] and [Keyed.Submit].
// A keyed task is seen once, as a task of its own, whatever turns its key takes on the
// pool's workers; a task that [CallerRuns] runs on its submitter is seen there. A sub-pool's
// tasks are seen by the sub-pool's hooks ([Pool.Sub] takes options), not by its parent's.
// For each task, Queued happens before Started, and Started before Finished.
//
// Each hook runs on the goroutine named below with no lock of the pool held, so a hook may call
// [Pool.Stats], [Pool.TrySubmit], [Pool.Resize] or [Pool.Stop] on the pool. A hook that panics,
// with any value or with nil, has its panic sent to the pool's panic handler ([WithPanicHandler]),
// and the task it was called for is unaffected: it still runs exactly once, and the worker keeps
// serving. A hook that calls runtime.Goexit ends the goroutine it runs on, as a task that calls it
// does, and nothing else: a Queued or Rejected hook ends the submitter inside its submit, and the
// task is not accepted and never runs (a function of [Group.Go], [Group.TryGo], [Results.Go], [Map]
// or [ForEach] then counts as one that called runtime.Goexit, so Wait returns); a Started hook
// keeps its task from running, and the task counts as completed (a future's, a group's or a
// sequence's Wait or range reports the Goexit); a Finished hook comes after its task has ended, and
// the task's outcome stands, reported once (but a plain task's panic, which Finished precedes, then
// never reaches the panic handler); a Discarded hook comes after the dropped task went to the
// discard handler or failed with [ErrDiscarded]. The pool replaces a worker so ended. Hooks add
// their own run time to every task's path through the pool, so they should be quick.
type Hooks struct {
	// Queued is called on the submitting goroutine when a submit offers a task, before the
	// pool accepts it or refuses it. If the pool refuses it, Rejected follows. TaskInfo is
	// zero.
	Queued func(TaskInfo)
	// Started is called on the worker just before a task runs (on the submitter, for a task
	// CallerRuns runs), with TaskInfo.Wait set to the time from its submit to this moment.
	Started func(TaskInfo)
	// Finished is called where Started was, after the task returned, called runtime.Goexit
	// or panicked (before the panic handler), with Wait, Run and Panicked set. Panicked is
	// false for a function whose panic goes to its own Wait rather than to the panic handler
	// ([Go], [Group], [Map] and the others).
	Finished func(TaskInfo)
	// Rejected is called on the submitting goroutine when a submit did not accept its task,
	// with the error the submit returns: [ErrQueueFull], [ErrStopped], or the error of a
	// submit whose context ended first. The task never runs. It is not called for
	// [ErrNilTask] or [ErrTooHeavy], mistakes of the call that no pool state causes, which
	// [Stats] does not count either.
	Rejected func(error)
	// Discarded is called for an accepted task that an overflow policy removed from the
	// queue unrun, on the submitting goroutine that caused it, with TaskInfo.Wait set to the
	// time the task waited. Started and Finished are never called for it.
	Discarded func(TaskInfo)
	// Context is called for each function given with a context (the functions of
	// [GoContext], a [Group], a [Results], [Map], [ForEach], [MapSeq] and
	// [MapSeqUnordered]) on the goroutine that runs it, just before it runs, with the
	// context it was to receive; the function receives the context Context returns instead
	// (the one it was to receive if that is nil). A skipped function is not seen. The end
	// function it returns, unless nil, is called on that goroutine once the function has
	// ended, with the error it returned, or with a non-nil error if it panicked or called
	// runtime.Goexit. Plain tasks and the functions of [Go] carry no context and are not
	// seen. A tracer uses it to start a span per function, a child of the span in the
	// context the group or call was made from, that the function's own spans nest under.
	Context func(ctx context.Context) (_ context.Context, end func(err error))
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
// are refused; see [Hooks] for where and when each is called. Several WithHooks options all
// apply, none replacing another: for each event, the hooks of each are called in the order
// the options were given, each guarded on its own, so that the panic of one does not keep
// the next from being called. Without hooks (the default), a pool spends nothing on them.
func WithHooks(h Hooks) Option {
	return func(c *config) { c.hooks = append(c.hooks, h) }
}

// WithLatencyHistograms makes the pool record how long each task waited between its submit
// and its start, and how long it ran, in the WaitTime and RunTime histograms of [Stats]. Every
// task is counted, none sampled; recording allocates nothing and takes no lock shared by the
// workers. Without this option (the default), Stats holds zero histograms and the pool reads
// no clock per task.
func WithLatencyHistograms() Option {
	return func(c *config) { c.histograms = true }
}

// WithLatencySample makes a pool with [WithLatencyHistograms] time one task in n, picked at
// random as it is submitted, instead of every task: a task not picked reads no clock, which
// is most of what the histograms cost. Each timed task counts n times in WaitTime and
// RunTime, so their Count, Counts and Sum estimate those of every task, within the error of
// a random sample; each Count is a multiple of n, and a quantile read from the buckets is
// the sample's. The pool's counters in [Stats] (Completed and the rest) stay exact. Tasks of
// a [Keyed] on the pool are sampled alike.
//
// n of 1 times every task, as without the option. The option has no effect without
// WithLatencyHistograms, nor with [WithHooks] or [WithAdaptiveLimit], which need the times
// of every task: every task is then timed and counted once. It panics if n < 1 or n is
// above 1<<20.
func WithLatencySample(n int) Option {
	if n < 1 || n > maxSample {
		panic(fmt.Sprintf("crew: WithLatencySample: n must be in [1, %d], got %d", maxSample, n))
	}
	return func(c *config) { c.sample = n }
}

// maxSample bounds WithLatencySample's n: one task in a million is already a sample too thin
// for most pools' histograms.
const maxSample = 1 << 20

// observer is what a pool with hooks or histograms hands its engine (worker.Observer), and
// what its submits and a Keyed's turns report to.
type observer[T any] struct {
	hooks     []Hooks
	wait, run *histogram.Histogram // nil without WithLatencyHistograms
	// weight: one task in weight is timed, and each record stands for weight tasks
	// (WithLatencySample); 1 times every task.
	weight  uint64
	handler func(v any, stack []byte)
	skip    func(T) bool    // tasks not observed, or nil
	limit   *adaptive.Limit // WithAdaptiveLimit's, told each run time; nil without it
}

func newObserver[T any](c config, skip func(T) bool) *observer[T] {
	if len(c.hooks) == 0 && !c.histograms && c.adaptiveMin == 0 {
		return nil
	}
	o := &observer[T]{hooks: c.hooks, handler: c.panicHandler, skip: skip, weight: 1}
	if c.histograms {
		o.wait, o.run = histogram.New(), histogram.New()
		if len(c.hooks) == 0 && c.adaptiveMin == 0 {
			o.weight = uint64(max(1, c.sample))
		}
	}
	return o
}

// stamp returns the submit time of a task that the observer is told of, read from clock, or
// worker.Unsampled for one that sampling leaves out, whose time is not read.
func (o *observer[T]) stamp(clock func() int64) int64 {
	if worker.LeftOut(o.sample()) {
		return worker.Unsampled
	}
	return clock()
}

// records is the engine's worker.Config.Records: o's histograms, for an observer that does
// nothing but record (no hooks, no adaptive limit); nil otherwise.
func (o *observer[T]) records(c config) *worker.Records[T] {
	if o.wait == nil || len(o.hooks) > 0 || c.adaptiveMin > 0 {
		return nil
	}
	return &worker.Records[T]{Wait: o.wait, Run: o.run, Weight: o.weight, Skip: o.skip}
}

// sample is the engine's worker.Config.Sample: time one task in it (0 or 1: every task).
func (o *observer[T]) sample() uint32 { return uint32(o.weight) }

// Started implements worker.Observer.
func (o *observer[T]) Started(arg T, wait time.Duration) bool {
	if o.skip != nil && o.skip(arg) {
		return false
	}
	o.start(wait)
	return true
}

// start records the start of a task that waited for wait, and calls the Started hooks.
func (o *observer[T]) start(wait time.Duration) {
	if o.wait != nil {
		o.wait.RecordN(wait, o.weight)
	}
	for i := range o.hooks {
		o.call(o.hooks[i].Started, TaskInfo{Wait: wait})
	}
}

// Finished implements worker.Observer.
func (o *observer[T]) Finished(wait, run time.Duration, panicked bool) {
	if o.run != nil {
		o.run.RecordN(run, o.weight)
	}
	if o.limit != nil && !panicked {
		o.limit.Observe(run)
	}
	for i := range o.hooks {
		o.call(o.hooks[i].Finished, TaskInfo{Wait: wait, Run: run, Panicked: panicked})
	}
}

// Discarded implements worker.Observer.
func (o *observer[T]) Discarded(arg T, wait time.Duration) {
	if o.skip != nil && o.skip(arg) {
		return
	}
	o.discard(wait)
}

// discard calls the Discarded hooks for a task that waited for wait.
func (o *observer[T]) discard(wait time.Duration) {
	for i := range o.hooks {
		o.call(o.hooks[i].Discarded, TaskInfo{Wait: wait})
	}
}

// watchesSubmits reports whether a hook is told of submits: Queued or Rejected is set.
func (o *observer[T]) watchesSubmits() bool {
	for _, h := range o.hooks {
		if h.Queued != nil || h.Rejected != nil {
			return true
		}
	}
	return false
}

func (o *observer[T]) queued() {
	for i := range o.hooks {
		o.call(o.hooks[i].Queued, TaskInfo{})
	}
}

func (o *observer[T]) rejected(err error) {
	for i := range o.hooks {
		if h := o.hooks[i].Rejected; h != nil {
			o.guard(func() { h(err) })
		}
	}
}

// call runs hook h, if set, sending a panic of h to the panic handler.
func (o *observer[T]) call(h func(TaskInfo), ti TaskInfo) {
	if h == nil {
		return
	}
	o.guard(func() { h(ti) })
}

// guard runs a hook and sends its panic to the panic handler (see report). catch tells a
// panic(nil) under GODEBUG=panicnil=1 from a Goexit, which recover alone does not.
func (o *observer[T]) guard(hook func()) {
	if pe := catch(hook); pe != nil {
		report(o.handler, pe)
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

// enter is the Context hook of a pool, guarded, as a group or a stream calls its functions
// through it; nil when the pool has none.
type enter func(context.Context) (context.Context, func(error))

// enter returns o's Context hook, guarded as the other hooks are: a panic of the hook or of
// its end goes to the panic handler, and the function runs with the context it was to
// receive. It returns nil when o has no Context hook.
func (o *observer[T]) enter() enter {
	if o == nil {
		return nil
	}
	var hs []func(context.Context) (context.Context, func(error))
	for i := range o.hooks {
		if h := o.hooks[i].Context; h != nil {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	// Several WithHooks add up: each Context hook is given the context the one before it
	// returned, and their ends are called in the reverse order, innermost first.
	return func(ctx context.Context) (context.Context, func(error)) {
		var ends []func(error)
		for _, h := range hs {
			var next context.Context
			var end func(error)
			o.guard(func() { next, end = h(ctx) })
			if next != nil {
				ctx = next
			}
			if end != nil {
				ends = append(ends, end)
			}
		}
		if len(ends) == 0 {
			return ctx, nil
		}
		return ctx, func(err error) {
			for i := len(ends) - 1; i >= 0; i-- {
				o.guard(func() { ends[i](err) })
			}
		}
	}
}

// errNotReturned is what a Context hook's end gets for a function that panicked or called
// runtime.Goexit.
var errNotReturned = errors.New("crew: the function panicked or called runtime.Goexit")

// call runs fn, c's function, with ctx, through e when it is set (see Hooks.Context). Before
// the end function runs it records fn's outcome in c: an end function that calls
// runtime.Goexit ends the goroutine, and the function's own outcome still stands
// (call.goexited).
func (e enter) call(c *call, ctx context.Context, fn func(context.Context) error) error {
	if e == nil {
		return fn(ctx)
	}
	ctx, end := e(ctx)
	if end == nil {
		return fn(ctx)
	}
	err := errNotReturned
	defer func() {
		end(err)
		if c.returned {
			endOutcomes.Delete(c)
		}
	}()
	err = fn(ctx)
	endOutcomes.Store(c, err)
	c.returned = true
	return err
}
