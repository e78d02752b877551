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
// Gauge:
//
//	crew.pool.paused       1         1 while the pool is paused, else 0
//
// Counters:
//
//	crew.tasks.accepted    {task}    tasks a submit accepted
//	crew.tasks.completed   {task}    tasks that returned
//	crew.tasks.panicked    {task}    tasks that panicked
//	crew.tasks.rejected    {task}    submits refused because the queue was full
//	crew.tasks.canceled    {task}    submits whose context ended before the task was accepted
//	crew.tasks.discarded   {task}    accepted tasks an overflow policy dropped unrun
//	crew.tasks.caller_ran  {task}    tasks run on their submitter because the queue was full
//	crew.tasks.returned    {task}    accepted tasks StopNow took out of the queue unrun
//	crew.tasks.skipped     {task}    accepted functions skipped because their context ended first
//
// Histograms:
//
//	crew.task.wait.duration   s   time from a task's submit to its start
//	crew.task.run.duration    s   time a task ran
//
// Asynchronous instruments cannot report histograms, so they come one of two ways. For a pool
// built with [crew.WithLatencyHistograms], [Histograms] returns a producer, given to a reader,
// that reports the pool's own histograms (WaitTime and RunTime of its Stats) as exponential
// histograms of scale 3: eight buckets per power of two, the pool's own, so nothing is lost.
// For any pool, [Hooks] returns [crew.Hooks] that record each task into synchronous
// histograms with explicit buckets a power of two apart. Use one or the other for a pool.
//
// Each instrument reports one field of [crew.Stats], whose comment says exactly what it counts.
package crewotel

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/crewgo/crew"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// isNil reports whether src is nil or holds a nil pointer or function (a nil *crew.Pool, a
// nil StatsFunc), which would fail only at the first collection.
func isNil(src StatsSource) bool {
	if src == nil {
		return true
	}
	switch v := reflect.ValueOf(src); v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// StatsSource is anything that reports a [crew.Stats] snapshot. *crew.Pool and
// *crew.FuncPool[T] satisfy it; [StatsFunc] makes one of a function.
type StatsSource interface {
	Stats() crew.Stats
}

// StatsFunc is a function used as a [StatsSource]: its Stats method calls it. It exports
// the Stats of anything that has them, for example a method value such as k.Stats, or a
// function that adds up the Stats of several pools.
type StatsFunc func() crew.Stats

// Stats calls f.
func (f StatsFunc) Stats() crew.Stats { return f() }

// Option configures [Observe].
type Option func(*config)

type config struct {
	attrs  []attribute.KeyValue
	tracer trace.Tracer // WithSpans
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

// Observe registers the crew instruments with meter and a callback that reports the Stats of src,
// with the attribute pool=name, at each collection. The callback reads one Stats snapshot per
// collection. Any Stats source will do: a pool, a [crew.Keyed] once it reports Stats, or a function
// wrapped in [StatsFunc]. It panics if name is empty, src is nil (or a nil *crew.Pool), meter is
// nil, or an option sets the "pool" attribute; it returns an error, and registers nothing, if the
// meter cannot create an instrument or register the callback.
//
// Several pools may be observed through one meter under different names; the instruments are
// shared and each pool reports its own data points.
func Observe(meter metric.Meter, name string, src StatsSource, opts ...Option) (*Registration, error) {
	if name == "" {
		panic("crewotel: Observe: name must not be empty")
	}
	if isNil(src) {
		panic("crewotel: Observe: src must not be nil")
	}
	if meter == nil {
		panic("crewotel: Observe: meter must not be nil")
	}
	attrs := poolAttributes("Observe", name, opts)

	var errs []error
	observed := make([]metric.Int64Observable, len(instruments))
	observables := make([]metric.Observable, len(instruments))
	for i, in := range instruments {
		var err error
		switch in.kind {
		case upDown:
			observed[i], err = meter.Int64ObservableUpDownCounter(in.name, metric.WithUnit(in.unit), metric.WithDescription(in.desc))
		case counter:
			observed[i], err = meter.Int64ObservableCounter(in.name, metric.WithUnit(in.unit), metric.WithDescription(in.desc))
		case gauge:
			observed[i], err = meter.Int64ObservableGauge(in.name, metric.WithUnit(in.unit), metric.WithDescription(in.desc))
		}
		errs = append(errs, err)
		observables[i] = observed[i]
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	set := metric.WithAttributeSet(attrs)
	callback := func(_ context.Context, o metric.Observer) error {
		s := src.Stats()
		for i, in := range instruments {
			o.ObserveInt64(observed[i], in.value(s), set)
		}
		return nil
	}
	reg, err := meter.RegisterCallback(callback, observables...)
	if err != nil {
		return nil, err
	}
	return &Registration{reg: reg}, nil
}

// The kinds of instrument Observe registers.
const (
	upDown = iota
	counter
	gauge
)

// instruments are what Observe registers, one per field of crew.Stats but the histograms.
var instruments = []struct {
	name, unit, desc string
	kind             int
	value            func(crew.Stats) int64
}{
	{"crew.workers.max", "{worker}", "Current worker limit of the pool.", upDown,
		func(s crew.Stats) int64 { return int64(s.MaxWorkers) }},
	{"crew.tasks.running", "{task}", "Tasks of the pool running.", upDown,
		func(s crew.Stats) int64 { return int64(s.Running) }},
	{"crew.workers.idle", "{worker}", "Workers of the pool alive and waiting for a task.", upDown,
		func(s crew.Stats) int64 { return int64(s.Idle) }},
	{"crew.tasks.waiting", "{task}", "Tasks accepted by the pool that have not started.", upDown,
		func(s crew.Stats) int64 { return int64(s.Waiting) }},
	{"crew.pool.paused", "1", "1 while the pool is paused, else 0.", gauge,
		func(s crew.Stats) int64 {
			if s.Paused {
				return 1
			}
			return 0
		}},
	{"crew.tasks.accepted", "{task}", "Tasks accepted by the pool.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Accepted) }},
	{"crew.tasks.completed", "{task}", "Tasks of the pool that returned.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Completed) }},
	{"crew.tasks.panicked", "{task}", "Tasks of the pool that panicked.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Panicked) }},
	{"crew.tasks.rejected", "{task}", "Submits the pool refused because its queue was full.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Rejected) }},
	{"crew.tasks.canceled", "{task}", "Submits whose context ended before the pool accepted the task.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Canceled) }},
	{"crew.tasks.discarded", "{task}", "Accepted tasks an overflow policy dropped unrun.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Discarded) }},
	{"crew.tasks.caller_ran", "{task}", "Tasks run on their submitter because the queue was full.", counter,
		func(s crew.Stats) int64 { return counterValue(s.CallerRan) }},
	{"crew.tasks.returned", "{task}", "Accepted tasks StopNow took out of the queue unrun.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Returned) }},
	{"crew.tasks.skipped", "{task}", "Accepted functions skipped because their context ended before they started.", counter,
		func(s crew.Stats) int64 { return counterValue(s.Skipped) }},
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
	set, _ := configure(call, name, opts)
	return set
}

// configure applies opts and returns the attribute set of the pool named name, and the
// configuration. It panics, naming call, if the options set the "pool" attribute themselves.
func configure(call, name string, opts []Option) (attribute.Set, config) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	for _, kv := range cfg.attrs {
		if kv.Key == "pool" {
			panic("crewotel: " + call + `: WithAttributes must not set the "pool" attribute`)
		}
	}
	return attribute.NewSet(append([]attribute.KeyValue{attribute.String("pool", name)}, cfg.attrs...)...), cfg
}
