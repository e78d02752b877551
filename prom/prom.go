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
//
// Counters:
//
//	crew_tasks_accepted_total    tasks a submit accepted
//	crew_tasks_completed_total   tasks that returned
//	crew_tasks_panicked_total    tasks that panicked
//	crew_tasks_rejected_total    submits refused because the queue was full
//	crew_tasks_canceled_total    submits whose context ended before the task was accepted
//
// Histograms, for a pool built with [crew.WithLatencyHistograms] (absent otherwise):
//
//	crew_task_wait_seconds   time from a task's submit to its start
//	crew_task_run_seconds    time a task ran
//
// Each histogram is exported both ways a Prometheus histogram can be: as a native histogram
// of schema 3 (eight buckets per power of two, the pool's own buckets, so nothing is lost),
// and with classic le buckets at every second power of two from 2^-20 s (about 1 µs) to
// 2^12 s (about 68 minutes), for servers and queries that do not use native histograms. The
// native histogram's zero bucket holds the durations up to 2^-20 s; the few above 2^12 s go
// to the native bucket just above it.
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
	workersIdle    *prometheus.Desc
	tasksRunning   *prometheus.Desc
	tasksWaiting   *prometheus.Desc
	tasksAccepted  *prometheus.Desc
	tasksCompleted *prometheus.Desc
	tasksPanicked  *prometheus.Desc
	tasksRejected  *prometheus.Desc
	tasksCanceled  *prometheus.Desc
	waitSeconds    *prometheus.Desc
	runSeconds     *prometheus.Desc
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
		workersIdle:    desc("crew_workers_idle", "Workers of the pool alive and waiting for a task."),
		tasksRunning:   desc("crew_tasks_running", "Tasks of the pool running."),
		tasksWaiting:   desc("crew_tasks_waiting", "Tasks accepted by the pool that have not started."),
		tasksAccepted:  desc("crew_tasks_accepted_total", "Tasks accepted by the pool."),
		tasksCompleted: desc("crew_tasks_completed_total", "Tasks of the pool that returned."),
		tasksPanicked:  desc("crew_tasks_panicked_total", "Tasks of the pool that panicked."),
		tasksRejected:  desc("crew_tasks_rejected_total", "Submits the pool refused because its queue was full."),
		tasksCanceled:  desc("crew_tasks_canceled_total", "Submits whose context ended before the pool accepted the task."),
		waitSeconds:    desc("crew_task_wait_seconds", "Time from a task's submit to its start."),
		runSeconds:     desc("crew_task_run_seconds", "Time a task of the pool ran."),
	}
}

// Describe sends the descriptors of the collector's metrics to ch.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.workersMax
	ch <- c.workersIdle
	ch <- c.tasksRunning
	ch <- c.tasksWaiting
	ch <- c.tasksAccepted
	ch <- c.tasksCompleted
	ch <- c.tasksPanicked
	ch <- c.tasksRejected
	ch <- c.tasksCanceled
	ch <- c.waitSeconds
	ch <- c.runSeconds
}

// Collect reads one Stats snapshot from the source and sends the metrics built from it to ch:
// the histograms only when the snapshot has them. Reading the snapshot once, not once per metric, keeps the values of a scrape
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
	gauge(c.workersIdle, s.Idle)
	gauge(c.tasksRunning, s.Running)
	gauge(c.tasksWaiting, s.Waiting)
	counter(c.tasksAccepted, s.Accepted)
	counter(c.tasksCompleted, s.Completed)
	counter(c.tasksPanicked, s.Panicked)
	counter(c.tasksRejected, s.Rejected)
	counter(c.tasksCanceled, s.Canceled)
	if s.WaitTime != nil {
		ch <- histogramMetric(c.waitSeconds, *s.WaitTime)
		ch <- histogramMetric(c.runSeconds, *s.RunTime)
	}
}
