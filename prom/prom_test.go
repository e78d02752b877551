package prom_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Both pool types are stats sources.
var (
	_ prom.StatsSource     = (*crew.Pool)(nil)
	_ prom.StatsSource     = (*crew.FuncPool[int])(nil)
	_ prometheus.Collector = (*prom.Collector)(nil)
)

// fixedSource reports the same snapshot every time.
type fixedSource struct{ s crew.Stats }

func (f fixedSource) Stats() crew.Stats { return f.s }

// countingSource reports a snapshot whose every field is the number of calls so far, so a
// scrape that read it more than once would show different values.
type countingSource struct{ calls atomic.Int64 }

func (c *countingSource) Stats() crew.Stats {
	n := c.calls.Add(1)
	return crew.Stats{
		MaxWorkers: int(n), Running: int(n), Idle: int(n), Waiting: int(n),
		Submitted: uint64(n), Completed: uint64(n), Panicked: uint64(n), Rejected: uint64(n),
	}
}

const allMetrics = `
# HELP crew_tasks_completed_total Tasks of the pool that returned.
# TYPE crew_tasks_completed_total counter
crew_tasks_completed_total{pool="%[1]s"} %[6]d
# HELP crew_tasks_panicked_total Tasks of the pool that panicked.
# TYPE crew_tasks_panicked_total counter
crew_tasks_panicked_total{pool="%[1]s"} %[7]d
# HELP crew_tasks_rejected_total Submits the pool did not accept because its queue was full.
# TYPE crew_tasks_rejected_total counter
crew_tasks_rejected_total{pool="%[1]s"} %[8]d
# HELP crew_tasks_submitted_total Tasks accepted by the pool.
# TYPE crew_tasks_submitted_total counter
crew_tasks_submitted_total{pool="%[1]s"} %[5]d
# HELP crew_tasks_waiting Tasks accepted by the pool that have not started.
# TYPE crew_tasks_waiting gauge
crew_tasks_waiting{pool="%[1]s"} %[4]d
# HELP crew_workers_idle Workers of the pool alive and waiting for a task.
# TYPE crew_workers_idle gauge
crew_workers_idle{pool="%[1]s"} %[3]d
# HELP crew_workers_max Current worker limit of the pool.
# TYPE crew_workers_max gauge
crew_workers_max{pool="%[1]s"} %[2]d
# HELP crew_workers_running Workers of the pool running a task.
# TYPE crew_workers_running gauge
crew_workers_running{pool="%[1]s"} %[9]d
`

// expected renders allMetrics for one pool name and snapshot.
func expected(pool string, s crew.Stats) *strings.Reader {
	return strings.NewReader(fmt.Sprintf(allMetrics, pool, s.MaxWorkers, s.Idle, s.Waiting,
		s.Submitted, s.Completed, s.Panicked, s.Rejected, s.Running))
}

func TestCollectorExportsEveryStatsField(t *testing.T) {
	s := crew.Stats{
		MaxWorkers: 8, Running: 5, Idle: 2, Waiting: 13,
		Submitted: 1001, Completed: 950, Panicked: 3, Rejected: 17,
	}
	c := prom.NewCollector("fixed", fixedSource{s})
	if err := testutil.CollectAndCompare(c, expected("fixed", s)); err != nil {
		t.Fatal(err)
	}
}

func TestCollectReadsOneSnapshotPerScrape(t *testing.T) {
	src := &countingSource{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("counting", src))
	for scrape := 1; scrape <= 3; scrape++ {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if got := src.calls.Load(); got != int64(scrape) {
			t.Fatalf("after %d scrapes: Stats called %d times, want %d", scrape, got, scrape)
		}
		if len(mfs) != 8 {
			t.Fatalf("scrape %d: %d metric families, want 8", scrape, len(mfs))
		}
		for _, mf := range mfs {
			m := mf.GetMetric()[0]
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if v != float64(scrape) {
				t.Errorf("scrape %d: %s = %v, want %d", scrape, mf.GetName(), v, scrape)
			}
		}
	}
}

func TestCollectorPassesLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(prom.NewCollector("lint", fixedSource{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// waitFor polls the pool's Stats until ok holds, failing the test after a deadline.
func waitFor(t *testing.T, p prom.StatsSource, what string, ok func(crew.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := p.Stats()
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last Stats %+v", what, s)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCollectorReportsPoolAfterKnownWorkload(t *testing.T) {
	panics := make(chan any, 1)
	p := crew.New(2, crew.WithQueueSize(1), crew.WithNonBlocking(),
		crew.WithPanicHandler(func(v any, _ []byte) { panics <- v }))
	defer p.StopAndWait()
	c := prom.NewCollector("work", p)

	// Two tasks hold both workers, one waits in the queue, and a fourth finds it full.
	release := make(chan struct{})
	for range 2 {
		if err := p.Submit(func() { <-release }); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, p, "both workers running", func(s crew.Stats) bool { return s.Running == 2 })
	if err := p.Submit(func() { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(func() {}); err != crew.ErrQueueFull {
		t.Fatalf("Submit on a full queue = %v, want ErrQueueFull", err)
	}
	busy := crew.Stats{MaxWorkers: 2, Running: 2, Idle: 0, Waiting: 1, Submitted: 3, Rejected: 1}
	if err := testutil.CollectAndCompare(c, expected("work", busy)); err != nil {
		t.Fatal(err)
	}

	close(release)
	p.Wait()
	if v := <-panics; v != "boom" {
		t.Fatalf("panic handler got %v, want boom", v)
	}
	want := `
# HELP crew_tasks_completed_total Tasks of the pool that returned.
# TYPE crew_tasks_completed_total counter
crew_tasks_completed_total{pool="work"} 2
# HELP crew_tasks_panicked_total Tasks of the pool that panicked.
# TYPE crew_tasks_panicked_total counter
crew_tasks_panicked_total{pool="work"} 1
# HELP crew_tasks_rejected_total Submits the pool did not accept because its queue was full.
# TYPE crew_tasks_rejected_total counter
crew_tasks_rejected_total{pool="work"} 1
# HELP crew_tasks_submitted_total Tasks accepted by the pool.
# TYPE crew_tasks_submitted_total counter
crew_tasks_submitted_total{pool="work"} 3
# HELP crew_tasks_waiting Tasks accepted by the pool that have not started.
# TYPE crew_tasks_waiting gauge
crew_tasks_waiting{pool="work"} 0
# HELP crew_workers_max Current worker limit of the pool.
# TYPE crew_workers_max gauge
crew_workers_max{pool="work"} 2
`
	// Running and Idle are left out: how soon a worker that finished counts as idle is not
	// part of Wait's contract.
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"crew_tasks_completed_total", "crew_tasks_panicked_total", "crew_tasks_rejected_total",
		"crew_tasks_submitted_total", "crew_tasks_waiting", "crew_workers_max"); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReportsFuncPool(t *testing.T) {
	var sum atomic.Int64
	p := crew.NewFunc(3, func(n int) { sum.Add(int64(n)) })
	defer p.StopAndWait()
	for i := 1; i <= 10; i++ {
		if err := p.Invoke(i); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	if got := sum.Load(); got != 55 {
		t.Fatalf("sum = %d, want 55", got)
	}
	want := `
# HELP crew_tasks_completed_total Tasks of the pool that returned.
# TYPE crew_tasks_completed_total counter
crew_tasks_completed_total{pool="func"} 10
# HELP crew_tasks_submitted_total Tasks accepted by the pool.
# TYPE crew_tasks_submitted_total counter
crew_tasks_submitted_total{pool="func"} 10
# HELP crew_workers_max Current worker limit of the pool.
# TYPE crew_workers_max gauge
crew_workers_max{pool="func"} 3
`
	c := prom.NewCollector("func", p)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"crew_tasks_completed_total", "crew_tasks_submitted_total", "crew_workers_max"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(c); got != 8 {
		t.Fatalf("CollectAndCount = %d, want 8", got)
	}
}

func TestCollectorAddsConstLabels(t *testing.T) {
	c := prom.NewCollector("labelled", fixedSource{crew.Stats{MaxWorkers: 4}},
		prom.WithConstLabels(prometheus.Labels{"shard": "7"}))
	want := `
# HELP crew_workers_max Current worker limit of the pool.
# TYPE crew_workers_max gauge
crew_workers_max{pool="labelled",shard="7"} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crew_workers_max"); err != nil {
		t.Fatal(err)
	}
}

func TestPoolsWithDifferentNamesShareARegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("a", fixedSource{crew.Stats{Submitted: 1}}))
	reg.MustRegister(prom.NewCollector("b", fixedSource{crew.Stats{Submitted: 2}}))
	if err := reg.Register(prom.NewCollector("a", fixedSource{})); err == nil {
		t.Fatal("registering a second collector named a succeeded, want an error")
	}
	want := `
# HELP crew_tasks_submitted_total Tasks accepted by the pool.
# TYPE crew_tasks_submitted_total counter
crew_tasks_submitted_total{pool="a"} 1
crew_tasks_submitted_total{pool="b"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "crew_tasks_submitted_total"); err != nil {
		t.Fatal(err)
	}
}

func TestNewCollectorValidatesArguments(t *testing.T) {
	tests := []struct {
		name      string
		call      func()
		wantPanic string
	}{
		{"empty name", func() { prom.NewCollector("", fixedSource{}) },
			"prom: NewCollector: name must not be empty"},
		{"nil source", func() { prom.NewCollector("p", nil) },
			"prom: NewCollector: src must not be nil"},
		{"pool const label", func() {
			prom.NewCollector("p", fixedSource{}, prom.WithConstLabels(prometheus.Labels{"pool": "q"}))
		}, `prom: NewCollector: WithConstLabels must not set the "pool" label`},
		{"valid", func() { prom.NewCollector("p", fixedSource{}) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := func() (v any) {
				defer func() { v = recover() }()
				tt.call()
				return nil
			}()
			if tt.wantPanic == "" {
				if got != nil {
					t.Fatalf("panicked with %v, want no panic", got)
				}
				return
			}
			if got != tt.wantPanic {
				t.Fatalf("panic = %v, want %q", got, tt.wantPanic)
			}
		})
	}
}
