// Package crewotel reports the Stats of a crew pool through OpenTelemetry metrics.
//
// [Observe] registers asynchronous instruments with a [metric.Meter] and one callback that
// reads one [crew.Stats] snapshot per collection, so the values of one collection are
// consistent with each other: completed plus panicked tasks never exceed accepted tasks.
// Every observation carries a pool attribute holding the name given to Observe.
//
// Up-down counters (they add up across pools):
//
//	crew.workers.max       {worker}  the current worker limit
//	crew.workers.idle      {worker}  workers alive and waiting for a task
//	crew.tasks.running     {task}    tasks running
//	crew.tasks.waiting     {task}    accepted tasks that have not started
//
// Counters:
//
//	crew.tasks.accepted    {task}    tasks a submit accepted
//	crew.tasks.completed   {task}    tasks that returned
//	crew.tasks.panicked    {task}    tasks that panicked
//	crew.tasks.rejected    {task}    submits refused because the queue was full
//	crew.tasks.canceled    {task}    submits whose context ended before the task was accepted
//
// Histograms, recorded by the [crew.Hooks] that [Hooks] returns (asynchronous instruments
// cannot report histograms, so these are synchronous ones fed as tasks start and finish):
//
//	crew.task.wait.duration   s   time from a task's submit to its start
//	crew.task.run.duration    s   time a task ran
//
// Each instrument reports one field of [crew.Stats], whose comment says exactly what it counts.
package crewotel

import (
	"context"
	"errors"
	"sync"

	"github.com/crewgo/crew"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// StatsSource is anything that reports a [crew.Stats] snapshot. *crew.Pool and
// *crew.FuncPool[T] satisfy it.
type StatsSource interface {
	Stats() crew.Stats
}

// Option configures [Observe].
type Option func(*config)

type config struct {
	attrs []attribute.KeyValue
}

// WithAttributes adds attributes to every observation of the pool, for example the service or
// shard it belongs to. The key "pool" is taken by the pool name: [Observe] panics if attrs
// holds it.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}

// Registration is a pool being observed by a meter. Stop observing with
// [Registration.Unregister] (or [Registration.Close]).
//
// A Registration is safe for concurrent use. The zero value is not usable; [Observe] returns
// one.
type Registration struct {
	reg  metric.Registration
	once sync.Once
	err  error
}

// Unregister stops observing the pool: collections that start after it returns read no more
// Stats from the pool and report no data point for it. A second call does nothing and returns
// the first call's error.
func (r *Registration) Unregister() error {
	r.once.Do(func() { r.err = r.reg.Unregister() })
	return r.err
}

// Close is [Registration.Unregister]; it makes a Registration an io.Closer.
func (r *Registration) Close() error { return r.Unregister() }

// Observe registers the crew instruments with meter and a callback that reports the Stats of
// src, with the attribute pool=name, at each collection. The callback reads one Stats snapshot
// per collection. It panics if name is empty, src is nil, meter is nil, or an option sets the
// "pool" attribute; it returns an error, and registers nothing, if the meter cannot create an
// instrument or register the callback.
//
// Several pools may be observed through one meter under different names; the instruments are
// shared and each pool reports its own data points.
func Observe(meter metric.Meter, name string, src StatsSource, opts ...Option) (*Registration, error) {
	if name == "" {
		panic("crewotel: Observe: name must not be empty")
	}
	if src == nil {
		panic("crewotel: Observe: src must not be nil")
	}
	if meter == nil {
		panic("crewotel: Observe: meter must not be nil")
	}
	attrs := poolAttributes("Observe", name, opts)

	var errs []error
	upDown := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		i, err := meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	counter := func(name, desc string) metric.Int64ObservableCounter {
		i, err := meter.Int64ObservableCounter(name, metric.WithUnit("{task}"), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	workersMax := upDown("crew.workers.max", "{worker}", "Current worker limit of the pool.")
	tasksRunning := upDown("crew.tasks.running", "{task}", "Tasks of the pool running.")
	workersIdle := upDown("crew.workers.idle", "{worker}", "Workers of the pool alive and waiting for a task.")
	tasksWaiting := upDown("crew.tasks.waiting", "{task}", "Tasks accepted by the pool that have not started.")
	tasksAccepted := counter("crew.tasks.accepted", "Tasks accepted by the pool.")
	tasksCompleted := counter("crew.tasks.completed", "Tasks of the pool that returned.")
	tasksPanicked := counter("crew.tasks.panicked", "Tasks of the pool that panicked.")
	tasksRejected := counter("crew.tasks.rejected", "Submits the pool refused because its queue was full.")
	tasksCanceled := counter("crew.tasks.canceled", "Submits whose context ended before the pool accepted the task.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	set := metric.WithAttributeSet(attrs)
	callback := func(_ context.Context, o metric.Observer) error {
		s := src.Stats()
		o.ObserveInt64(workersMax, int64(s.MaxWorkers), set)
		o.ObserveInt64(tasksRunning, int64(s.Running), set)
		o.ObserveInt64(workersIdle, int64(s.Idle), set)
		o.ObserveInt64(tasksWaiting, int64(s.Waiting), set)
		o.ObserveInt64(tasksAccepted, counterValue(s.Accepted), set)
		o.ObserveInt64(tasksCompleted, counterValue(s.Completed), set)
		o.ObserveInt64(tasksPanicked, counterValue(s.Panicked), set)
		o.ObserveInt64(tasksRejected, counterValue(s.Rejected), set)
		o.ObserveInt64(tasksCanceled, counterValue(s.Canceled), set)
		return nil
	}
	reg, err := meter.RegisterCallback(callback,
		workersMax, tasksRunning, workersIdle, tasksWaiting,
		tasksAccepted, tasksCompleted, tasksPanicked, tasksRejected, tasksCanceled)
	if err != nil {
		return nil, err
	}
	return &Registration{reg: reg}, nil
}

// counterValue converts a Stats counter to the int64 the instruments take. A counter past
// the int64 range (2^63 tasks) stays at the largest int64 instead of turning negative.
func counterValue(n uint64) int64 {
	if n > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(n)
}

// poolAttributes applies opts and returns the attribute set of the pool named name. It panics,
// naming call, if the options set the "pool" attribute themselves.
func poolAttributes(call, name string, opts []Option) attribute.Set {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	for _, kv := range cfg.attrs {
		if kv.Key == "pool" {
			panic("crewotel: " + call + `: WithAttributes must not set the "pool" attribute`)
		}
	}
	return attribute.NewSet(append([]attribute.KeyValue{attribute.String("pool", name)}, cfg.attrs...)...)
}
