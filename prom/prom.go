// Package prom exports the Stats of a crew pool as Prometheus metrics.
//
// A [Collector] reads one [crew.Stats] snapshot per scrape, so the values of one scrape are
// consistent with each other: completed plus panicked tasks never exceed accepted tasks, and
// running tasks never exceed the limit by more than a shrinking [crew.Pool.Resize] allows.
// Every metric carries a pool label holding the name given to [NewCollector].
//
// Gauges:
//
//	crew_workers_max       the current worker limit
//	crew_workers_idle      workers alive and waiting for a task
//	crew_tasks_running     tasks running
//	crew_tasks_waiting     accepted tasks that have not started
//	crew_pool_paused       1 while the pool is paused, else 0
//
// Counters:
//
//	crew_tasks_accepted_total    tasks a submit accepted
//	crew_tasks_completed_total   tasks that returned
//	crew_tasks_panicked_total    tasks that panicked
//	crew_tasks_rejected_total    submits refused because the queue was full
//	crew_tasks_canceled_total    submits whose context ended before the task was accepted
//	crew_tasks_discarded_total   accepted tasks an overflow policy dropped unrun
//	crew_tasks_caller_ran_total  tasks run on their submitter because the queue was full
//	crew_tasks_returned_total    accepted tasks StopNow took out of the queue unrun
//	crew_tasks_skipped_total     accepted functions skipped because their context ended first
//
// Histograms, for a pool built with [crew.WithLatencyHistograms] (absent otherwise):
//
//	crew_task_wait_seconds   time from a task's submit to its start
//	crew_task_run_seconds    time a task ran
//
// Each histogram is exported both ways a Prometheus histogram can be: as a native histogram
// of schema 3 (eight buckets per power of two, the pool's own buckets, so nothing is lost),
// and with classic le buckets at every power of two from 2^-20 s (about 1 µs) to 2^12 s
// (about 68 minutes), for servers and queries that do not use native histograms, so that a
// quantile read from them is off by less than a factor of 2. The native histogram's zero
// bucket holds the durations up to 2^-20 s; the few above 2^12 s go to the native bucket just
// above it. A server scraping the protobuf format with native histograms enabled stores the
// native buckets; otherwise it stores the classic ones.
//
// Each metric reports one field of [crew.Stats], whose comment says exactly what it counts.
package prom

import (
	"fmt"
	"reflect"

	"github.com/crewgo/crew"
	"github.com/prometheus/client_golang/prometheus"
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

// Option configures a [Collector]; pass options to [NewCollector].
type Option func(*config)

type config struct {
	constLabels prometheus.Labels
}

// WithConstLabels adds labels with fixed values to every metric of the collector, for example
// the service or shard the pool belongs to. The label name "pool" is taken by the pool name,
// and "le" by the histograms' buckets: [NewCollector] panics if labels holds either.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) {
		for k, v := range labels {
			c.constLabels[k] = v
		}
	}
}

// Collector is a [prometheus.Collector] exporting the Stats of one pool. Register it with a
// [prometheus.Registerer]; each Collect call reads one Stats snapshot.
//
// A Collector is safe for concurrent use. Build one with [NewCollector]; the zero value is not
// usable. It holds no goroutine, so there is nothing to stop: unregister it from the registry
// when the pool is gone.
type Collector struct {
	src         StatsSource
	metrics     []scalar
	waitSeconds *prometheus.Desc
	runSeconds  *prometheus.Desc
}

// scalar is one gauge or counter and the Stats field it reports.
type scalar struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(crew.Stats) float64
}

// scalars are the gauges and counters, one per field of crew.Stats but the histograms.
var scalars = []struct {
	name, help string
	kind       prometheus.ValueType
	value      func(crew.Stats) float64
}{
	{"crew_workers_max", "Current worker limit of the pool.", prometheus.GaugeValue,
		func(s crew.Stats) float64 { return float64(s.MaxWorkers) }},
	{"crew_workers_idle", "Workers of the pool alive and waiting for a task.", prometheus.GaugeValue,
		func(s crew.Stats) float64 { return float64(s.Idle) }},
	{"crew_tasks_running", "Tasks of the pool running.", prometheus.GaugeValue,
		func(s crew.Stats) float64 { return float64(s.Running) }},
	{"crew_tasks_waiting", "Tasks accepted by the pool that have not started.", prometheus.GaugeValue,
		func(s crew.Stats) float64 { return float64(s.Waiting) }},
	{"crew_pool_paused", "1 while the pool is paused, else 0.", prometheus.GaugeValue,
		func(s crew.Stats) float64 { return boolValue(s.Paused) }},
	{"crew_tasks_accepted_total", "Tasks accepted by the pool.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Accepted) }},
	{"crew_tasks_completed_total", "Tasks of the pool that returned.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Completed) }},
	{"crew_tasks_panicked_total", "Tasks of the pool that panicked.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Panicked) }},
	{"crew_tasks_rejected_total", "Submits the pool refused because its queue was full.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Rejected) }},
	{"crew_tasks_canceled_total", "Submits whose context ended before the pool accepted the task.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Canceled) }},
	{"crew_tasks_discarded_total", "Accepted tasks an overflow policy dropped unrun.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Discarded) }},
	{"crew_tasks_caller_ran_total", "Tasks run on their submitter because the queue was full.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.CallerRan) }},
	{"crew_tasks_returned_total", "Accepted tasks StopNow took out of the queue unrun.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Returned) }},
	{"crew_tasks_skipped_total", "Accepted functions skipped because their context ended before they started.", prometheus.CounterValue,
		func(s crew.Stats) float64 { return float64(s.Skipped) }},
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// NewCollector returns a collector exporting the Stats of src, labelled pool=name. It panics if
// name is empty, src is nil (or a nil *crew.Pool), or an option sets the "pool" or "le" label. Any
// Stats source will do: a pool, a [crew.Keyed] once it reports Stats, or a function wrapped in
// [StatsFunc].
//
// Collectors registered with one registry must all have the same constant label names (the
// same keys passed to [WithConstLabels], or none), and no two may have the same name and the
// same label values; the registry rejects a collector that breaks either rule. So pools on one
// registry are told apart by their names or by different values of the same labels, never by
// a label that only some of the collectors have.
func NewCollector(name string, src StatsSource, opts ...Option) *Collector {
	if name == "" {
		panic("prom: NewCollector: name must not be empty")
	}
	if isNil(src) {
		panic("prom: NewCollector: src must not be nil")
	}
	cfg := config{constLabels: prometheus.Labels{}}
	for _, o := range opts {
		o(&cfg)
	}
	for _, taken := range []string{"pool", "le"} {
		if _, ok := cfg.constLabels[taken]; ok {
			panic(fmt.Sprintf("prom: NewCollector: WithConstLabels must not set the %q label", taken))
		}
	}
	labels := prometheus.Labels{"pool": name}
	for k, v := range cfg.constLabels {
		labels[k] = v
	}
	c := &Collector{
		src:         src,
		waitSeconds: prometheus.NewDesc("crew_task_wait_seconds", "Time from a task's submit to its start.", nil, labels),
		runSeconds:  prometheus.NewDesc("crew_task_run_seconds", "Time a task of the pool ran.", nil, labels),
	}
	for _, m := range scalars {
		c.metrics = append(c.metrics, scalar{prometheus.NewDesc(m.name, m.help, nil, labels), m.kind, m.value})
	}
	return c
}

// Describe sends the descriptors of the collector's metrics to ch.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- c.waitSeconds
	ch <- c.runSeconds
}

// Collect reads one Stats snapshot from the source and sends the metrics built from it to ch:
// the histograms only when the snapshot has them (a nil or zero crew.Histogram is none).
// Reading the snapshot once, not once per metric, keeps the values of a scrape consistent
// with each other.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s))
	}
	if h := s.WaitTime; h != nil && len(h.Counts) > 0 {
		ch <- histogramMetric(c.waitSeconds, *h)
	}
	if h := s.RunTime; h != nil && len(h.Counts) > 0 {
		ch <- histogramMetric(c.runSeconds, *h)
	}
}
