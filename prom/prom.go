// Package prom exports the Stats of a crew pool as Prometheus metrics.
//
// A [Collector] reads one [crew.Stats] snapshot per scrape, so the values of one scrape are
// consistent with each other: completed plus panicked tasks never exceed submitted tasks, and
// running workers never exceed the limit by more than a shrinking [crew.Pool.Resize] allows.
// Every metric carries a pool label holding the name given to [NewCollector].
//
// Gauges:
//
//	crew_workers_max       the current worker limit
//	crew_workers_running   workers running a task
//	crew_workers_idle      workers alive and waiting for a task
//	crew_tasks_waiting     accepted tasks that have not started
//
// Counters:
//
//	crew_tasks_submitted_total   accepted tasks
//	crew_tasks_completed_total   tasks that returned
//	crew_tasks_panicked_total    tasks that panicked
//	crew_tasks_rejected_total    submits that found the queue full and could not wait, and
//	                             blocked submits whose context ended first
//
// Each metric reports one field of [crew.Stats], whose comment says exactly what it counts.
package prom

import (
	"github.com/crewgo/crew"
	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is anything that reports a [crew.Stats] snapshot. *crew.Pool and
// *crew.FuncPool[T] satisfy it.
type StatsSource interface {
	Stats() crew.Stats
}

// Option configures a [Collector]; pass options to [NewCollector].
type Option func(*config)

type config struct {
	constLabels prometheus.Labels
}

// WithConstLabels adds labels with fixed values to every metric of the collector, for example
// the service or shard the pool belongs to. The label name "pool" is taken by the pool name:
// [NewCollector] panics if labels holds it.
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
	src StatsSource

	workersMax     *prometheus.Desc
	workersRunning *prometheus.Desc
	workersIdle    *prometheus.Desc
	tasksWaiting   *prometheus.Desc
	tasksSubmitted *prometheus.Desc
	tasksCompleted *prometheus.Desc
	tasksPanicked  *prometheus.Desc
	tasksRejected  *prometheus.Desc
}

// NewCollector returns a collector exporting the Stats of src, labelled pool=name. It panics if
// name is empty, src is nil, or an option sets the "pool" label.
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
	if src == nil {
		panic("prom: NewCollector: src must not be nil")
	}
	cfg := config{constLabels: prometheus.Labels{}}
	for _, o := range opts {
		o(&cfg)
	}
	if _, ok := cfg.constLabels["pool"]; ok {
		panic(`prom: NewCollector: WithConstLabels must not set the "pool" label`)
	}
	labels := prometheus.Labels{"pool": name}
	for k, v := range cfg.constLabels {
		labels[k] = v
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, nil, labels)
	}
	return &Collector{
		src:            src,
		workersMax:     desc("crew_workers_max", "Current worker limit of the pool."),
		workersRunning: desc("crew_workers_running", "Workers of the pool running a task."),
		workersIdle:    desc("crew_workers_idle", "Workers of the pool alive and waiting for a task."),
		tasksWaiting:   desc("crew_tasks_waiting", "Tasks accepted by the pool that have not started."),
		tasksSubmitted: desc("crew_tasks_submitted_total", "Tasks accepted by the pool."),
		tasksCompleted: desc("crew_tasks_completed_total", "Tasks of the pool that returned."),
		tasksPanicked:  desc("crew_tasks_panicked_total", "Tasks of the pool that panicked."),
		tasksRejected:  desc("crew_tasks_rejected_total", "Submits the pool did not accept because its queue was full or their context ended while they waited."),
	}
}

// Describe sends the descriptors of the collector's eight metrics to ch.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.workersMax
	ch <- c.workersRunning
	ch <- c.workersIdle
	ch <- c.tasksWaiting
	ch <- c.tasksSubmitted
	ch <- c.tasksCompleted
	ch <- c.tasksPanicked
	ch <- c.tasksRejected
}

// Collect reads one Stats snapshot from the source and sends the eight metrics built from it
// to ch. Reading the snapshot once, not once per metric, keeps the values of a scrape
// consistent with each other.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.workersMax, s.MaxWorkers)
	gauge(c.workersRunning, s.Running)
	gauge(c.workersIdle, s.Idle)
	gauge(c.tasksWaiting, s.Waiting)
	counter(c.tasksSubmitted, s.Accepted)
	counter(c.tasksCompleted, s.Completed)
	counter(c.tasksPanicked, s.Panicked)
	counter(c.tasksRejected, s.Rejected+s.Canceled)
}
