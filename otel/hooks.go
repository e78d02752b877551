package crewotel

import (
	"context"
	"errors"
	"math"

	"github.com/crewgo/crew"
	"go.opentelemetry.io/otel/metric"
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
	attrs := poolAttributes("Hooks", name, opts)
	hist := func(name, desc string) (metric.Float64Histogram, error) {
		return meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
	}
	wait, err1 := hist("crew.task.wait.duration", "Time from a task's submit to its start.")
	run, err2 := hist("crew.task.run.duration", "Time a task of the pool ran.")
	if err := errors.Join(err1, err2); err != nil {
		return crew.Hooks{}, err
	}
	set := metric.WithAttributeSet(attrs)
	ctx := context.Background()
	return crew.Hooks{
		Started:  func(ti crew.TaskInfo) { wait.Record(ctx, ti.Wait.Seconds(), set) },
		Finished: func(ti crew.TaskInfo) { run.Record(ctx, ti.Run.Seconds(), set) },
	}, nil
}
