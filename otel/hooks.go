package crewotel

import (
	"context"
	"errors"
	"math"

	"github.com/crewgo/crew"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// durationBuckets are the explicit bucket boundaries of the duration histograms, in seconds:
// every power of two from 2^-20 s (about 1 µs) to 2^12 s (about 68 minutes), which are
// boundaries of crew's own histograms too. Neighbours are a factor of 2 apart, so a quantile
// read from them is off by less than that.
var durationBuckets = func() []float64 {
	var b []float64
	for k := -20; k <= 12; k++ {
		b = append(b, math.Exp2(float64(k)))
	}
	return b
}()

// Hooks returns [crew.Hooks] that record, with the attribute pool=name, each task's wait (from
// its submit to its start) in the crew.task.wait.duration histogram and its run time in
// crew.task.run.duration, both in seconds. Pass them to [crew.WithHooks] when building the
// pool. It panics if name is empty, meter is nil, or an option sets the "pool" attribute; it
// returns an error if the meter cannot create the instruments.
//
// The hooks record through synchronous instruments on the pool's workers: each costs one
// Record call per task start and one per task end, and allocates nothing once the meter has
// seen the attribute set.
func Hooks(meter metric.Meter, name string, opts ...Option) (crew.Hooks, error) {
	if name == "" {
		panic("crewotel: Hooks: name must not be empty")
	}
	if meter == nil {
		panic("crewotel: Hooks: meter must not be nil")
	}
	attrs, cfg := configure("Hooks", name, opts)
	hist := func(name, desc string) (metric.Float64Histogram, error) {
		return meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
	}
	wait, err1 := hist("crew.task.wait.duration", "Time from a task's submit to its start.")
	run, err2 := hist("crew.task.run.duration", "Time a task of the pool ran.")
	if err := errors.Join(err1, err2); err != nil {
		return crew.Hooks{}, err
	}
	// The options are a slice made once: passed one by one, a Record call through the
	// interface makes a new one each time, which escapes.
	rec := []metric.RecordOption{metric.WithAttributeSet(attrs)}
	ctx := context.Background()
	h := crew.Hooks{
		Started:  func(ti crew.TaskInfo) { wait.Record(ctx, ti.Wait.Seconds(), rec...) },
		Finished: func(ti crew.TaskInfo) { run.Record(ctx, ti.Run.Seconds(), rec...) },
	}
	if cfg.tracer != nil {
		h.Context = spans(cfg.tracer, attrs)
	}
	return h, nil
}

// WithSpans makes the hooks that [Hooks] returns start a span, named crew.task and with the
// pool's attributes, for each function given with a context: the functions of
// [crew.GoContext], a [crew.Group], a [crew.Results], [crew.Map], [crew.ForEach],
// [crew.MapSeq] and [crew.MapSeqUnordered]; a skipped function, which never runs, gets none.
// The span is a child of the span in the context the group or call was made from, it is in the
// context the function receives, so the spans the function starts are its children, and it
// ends when the function does. An error the function returns, or a panic or
// runtime.Goexit, is recorded on the span and sets its status to Error. Tracers come from tp,
// with this package's import path as the instrumentation scope.
//
// Without WithSpans (the default) the hooks start no span. Plain tasks, typed pools' calls and
// the functions of [crew.Go] carry no context and get no span. [Observe] and [Histograms]
// ignore it. It panics if tp is nil.
func WithSpans(tp trace.TracerProvider) Option {
	if tp == nil {
		panic("crewotel: WithSpans: tp must not be nil")
	}
	tracer := tp.Tracer("github.com/crewgo/crew/otel")
	return func(c *config) { c.tracer = tracer }
}

// spans returns the Context hook that WithSpans sets.
func spans(tracer trace.Tracer, attrs attribute.Set) func(context.Context) (context.Context, func(error)) {
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs.ToSlice()...)}
	return func(ctx context.Context) (context.Context, func(error)) {
		ctx, span := tracer.Start(ctx, "crew.task", opts...)
		return ctx, func(err error) {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}
