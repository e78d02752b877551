package prom_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
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
		Accepted: uint64(n), Completed: uint64(n), Panicked: uint64(n), Rejected: uint64(n),
		Canceled: uint64(n), Discarded: uint64(n), CallerRan: uint64(n), Returned: uint64(n),
		Skipped: uint64(n),
	}
}

// series are the gauges and counters of a pool, in the order the text format sorts them.
var series = []struct {
	name, help, kind string
	value            func(crew.Stats) uint64
}{
	{"crew_pool_paused", "1 while the pool is paused, else 0.", "gauge", func(s crew.Stats) uint64 {
		if s.Paused {
			return 1
		}
		return 0
	}},
	{"crew_tasks_accepted_total", "Tasks accepted by the pool.", "counter", func(s crew.Stats) uint64 { return s.Accepted }},
	{"crew_tasks_caller_ran_total", "Tasks run on their submitter because the queue was full.", "counter", func(s crew.Stats) uint64 { return s.CallerRan }},
	{"crew_tasks_canceled_total", "Submits whose context ended before the pool accepted the task.", "counter", func(s crew.Stats) uint64 { return s.Canceled }},
	{"crew_tasks_completed_total", "Tasks of the pool that returned.", "counter", func(s crew.Stats) uint64 { return s.Completed }},
	{"crew_tasks_discarded_total", "Accepted tasks an overflow policy dropped unrun.", "counter", func(s crew.Stats) uint64 { return s.Discarded }},
	{"crew_tasks_panicked_total", "Tasks of the pool that panicked.", "counter", func(s crew.Stats) uint64 { return s.Panicked }},
	{"crew_tasks_rejected_total", "Submits the pool refused because its queue was full.", "counter", func(s crew.Stats) uint64 { return s.Rejected }},
	{"crew_tasks_returned_total", "Accepted tasks StopNow took out of the queue unrun.", "counter", func(s crew.Stats) uint64 { return s.Returned }},
	{"crew_tasks_running", "Tasks of the pool running.", "gauge", func(s crew.Stats) uint64 { return uint64(s.Running) }},
	{"crew_tasks_skipped_total", "Accepted functions skipped because their context ended before they started.", "counter", func(s crew.Stats) uint64 { return s.Skipped }},
	{"crew_tasks_waiting", "Tasks accepted by the pool that have not started.", "gauge", func(s crew.Stats) uint64 { return uint64(s.Waiting) }},
	{"crew_workers_idle", "Workers of the pool alive and waiting for a task.", "gauge", func(s crew.Stats) uint64 { return uint64(s.Idle) }},
	{"crew_workers_max", "Current worker limit of the pool.", "gauge", func(s crew.Stats) uint64 { return uint64(s.MaxWorkers) }},
}

// expected renders the gauges and counters of one pool name and snapshot in the text format,
// leaving out the names in skip.
func expected(pool string, s crew.Stats, skip ...string) *strings.Reader {
	var b strings.Builder
	for _, m := range series {
		if slices.Contains(skip, m.name) {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s{pool=%q} %d\n", m.name, m.help, m.name, m.kind, m.name, pool, m.value(s))
	}
	return strings.NewReader(b.String())
}

// names returns the names of the gauges and counters, leaving out those in skip.
func names(skip ...string) []string {
	var ns []string
	for _, m := range series {
		if !slices.Contains(skip, m.name) {
			ns = append(ns, m.name)
		}
	}
	return ns
}

// TestCollectorExportsEveryStatsField walks crew.Stats by reflection and, for each field in
// turn, scrapes a snapshot that has only that field set: some metric must report it, and no
// metric may report two fields. A field added to Stats without a metric fails here.
func TestCollectorExportsEveryStatsField(t *testing.T) {
	crewtest.CheckEveryStatsField(t, func(s crew.Stats) map[string]float64 {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(prom.NewCollector("fields", fixedSource{s}))
		values, err := gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		return values
	})
}

// TestCollectorReportsEveryFieldAfterKnownTraffic scrapes pools through a registry after
// traffic that sets every counter but Skipped: returns, panics, a drop, a refusal, an ended
// context, a caller-run, a pause and a StopNow.
func TestCollectorReportsEveryFieldAfterKnownTraffic(t *testing.T) {
	tr := crewtest.KnownTraffic(t)
	drop, callerRuns := prom.NewCollector("dropping", tr.Dropping), prom.NewCollector("callerruns", tr.CallerRuns)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(drop, callerRuns)
	// Running and Idle are left out: how soon a worker that finished counts as idle is not
	// part of Wait's contract.
	skip := []string{"crew_tasks_running", "crew_workers_idle"}
	if err := testutil.CollectAndCompare(drop, expected("dropping", tr.WantDropping, skip...), names(skip...)...); err != nil {
		t.Fatalf("paused: %v", err)
	}
	if err := testutil.CollectAndCompare(callerRuns, expected("callerruns", tr.WantCallerRuns, skip...), names(skip...)...); err != nil {
		t.Fatalf("caller-runs: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				counts[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = h.GetSampleCount()
			}
		}
	}
	want := map[string]uint64{"crew_task_wait_seconds/dropping": tr.WaitCount, "crew_task_run_seconds/dropping": tr.RunCount}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("histogram counts %v, want %v", counts, want)
	}
	after := tr.StopNow()
	if err := testutil.CollectAndCompare(drop, expected("dropping", after, skip...), names(skip...)...); err != nil {
		t.Fatalf("after StopNow: %v", err)
	}
}

// TestStatsFuncExportsAnyStatsSource exports the sum of two pools' Stats through a StatsFunc.
func TestStatsFuncExportsAnyStatsSource(t *testing.T) {
	sum := prom.StatsFunc(crewtest.SumOfTwo(t))
	want := crew.Stats{MaxWorkers: 3, Accepted: 3, Completed: 3}
	if err := testutil.CollectAndCompare(prom.NewCollector("sum", sum), expected("sum", want)); err != nil {
		t.Fatal(err)
	}
}

func TestCollectReadsOneSnapshotPerScrape(t *testing.T) {
	src := &countingSource{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("counting", src))
	for scrape := 1; scrape <= 3; scrape++ {
		values, err := gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		if got := src.calls.Load(); got != int64(scrape) {
			t.Fatalf("after %d scrapes: Stats called %d times, want %d", scrape, got, scrape)
		}
		if len(values) != len(series) {
			t.Fatalf("scrape %d: %d metric families, want %d", scrape, len(values), len(series))
		}
		for name, v := range values {
			if name == "crew_pool_paused" {
				continue // a bool: the source reports false
			}
			if v != float64(scrape) {
				t.Errorf("scrape %d: %s = %v, want %d", scrape, name, v, scrape)
			}
		}
	}
}

// gather scrapes g once and returns the value of each metric by name, a histogram's count
// for a histogram. g must hold one pool's collector, so that each metric has one series.
func gather(g prometheus.Gatherer) (map[string]float64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	values := make(map[string]float64, len(mfs))
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		values[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue() +
			float64(m.GetHistogram().GetSampleCount())
	}
	return values, nil
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
	crewtest.Await(t, p, "both workers running", func(s crew.Stats) bool { return s.Running == 2 })
	if err := p.Submit(func() { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(func() {}); err != crew.ErrQueueFull {
		t.Fatalf("Submit on a full queue = %v, want ErrQueueFull", err)
	}
	busy := crew.Stats{MaxWorkers: 2, Running: 2, Idle: 0, Waiting: 1, Accepted: 3, Rejected: 1}
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
# HELP crew_tasks_rejected_total Submits the pool refused because its queue was full.
# TYPE crew_tasks_rejected_total counter
crew_tasks_rejected_total{pool="work"} 1
# HELP crew_tasks_accepted_total Tasks accepted by the pool.
# TYPE crew_tasks_accepted_total counter
crew_tasks_accepted_total{pool="work"} 3
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
		"crew_tasks_accepted_total", "crew_tasks_waiting", "crew_workers_max"); err != nil {
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
# HELP crew_tasks_accepted_total Tasks accepted by the pool.
# TYPE crew_tasks_accepted_total counter
crew_tasks_accepted_total{pool="func"} 10
# HELP crew_workers_max Current worker limit of the pool.
# TYPE crew_workers_max gauge
crew_workers_max{pool="func"} 3
`
	c := prom.NewCollector("func", p)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"crew_tasks_completed_total", "crew_tasks_accepted_total", "crew_workers_max"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(c); got != len(series) {
		t.Fatalf("CollectAndCount = %d, want %d", got, len(series))
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
	reg.MustRegister(prom.NewCollector("a", fixedSource{crew.Stats{Accepted: 1}}))
	reg.MustRegister(prom.NewCollector("b", fixedSource{crew.Stats{Accepted: 2}}))
	if err := reg.Register(prom.NewCollector("a", fixedSource{})); err == nil {
		t.Fatal("registering a second collector named a succeeded, want an error")
	}
	want := `
# HELP crew_tasks_accepted_total Tasks accepted by the pool.
# TYPE crew_tasks_accepted_total counter
crew_tasks_accepted_total{pool="a"} 1
crew_tasks_accepted_total{pool="b"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "crew_tasks_accepted_total"); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorsOnOneRegistryNeedSameLabelNamesAndDistinctValues(t *testing.T) {
	type collector struct {
		pool   string
		labels prometheus.Labels
	}
	shard1 := prometheus.Labels{"shard": "1"}
	tests := []struct {
		name          string
		first, second collector
		wantErr       bool
	}{
		{"different names", collector{"a", nil}, collector{"b", nil}, false},
		{"same name", collector{"a", nil}, collector{"a", nil}, true},
		{"same name, different values of one label", collector{"a", shard1},
			collector{"a", prometheus.Labels{"shard": "2"}}, false},
		{"different names, same label values", collector{"a", shard1}, collector{"b", shard1}, false},
		{"same name and label values", collector{"a", shard1}, collector{"a", shard1}, true},
		{"different names, label on the first only", collector{"a", shard1}, collector{"b", nil}, true},
		{"different names, label on the second only", collector{"a", nil}, collector{"b", shard1}, true},
		{"different names, different label names", collector{"a", shard1},
			collector{"b", prometheus.Labels{"region": "1"}}, true},
		{"different names, one more label on the second", collector{"a", shard1},
			collector{"b", prometheus.Labels{"shard": "1", "region": "1"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			for i, c := range []collector{tt.first, tt.second} {
				err := reg.Register(prom.NewCollector(c.pool, fixedSource{}, prom.WithConstLabels(c.labels)))
				switch {
				case i == 1 && tt.wantErr && err == nil:
					t.Fatal("registering the second collector succeeded, want an error")
				case i == 1 && tt.wantErr:
					return
				case err != nil:
					t.Fatalf("registering collector %d: %v", i+1, err)
				}
			}
			if n, err := testutil.GatherAndCount(reg, "crew_tasks_accepted_total"); err != nil || n != 2 {
				t.Fatalf("gathered %d crew_tasks_accepted_total series (error %v), want 2", n, err)
			}
		})
	}
}

func TestRejectedCountsFullQueueAndCanceledCountsEndedContexts(t *testing.T) {
	p := crewtest.RejectedTwice(t)
	want := `
# HELP crew_tasks_canceled_total Submits whose context ended before the pool accepted the task.
# TYPE crew_tasks_canceled_total counter
crew_tasks_canceled_total{pool="ctx"} 1
# HELP crew_tasks_rejected_total Submits the pool refused because its queue was full.
# TYPE crew_tasks_rejected_total counter
crew_tasks_rejected_total{pool="ctx"} 1
`
	c := prom.NewCollector("ctx", p)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crew_tasks_rejected_total", "crew_tasks_canceled_total"); err != nil {
		t.Fatal(err)
	}
}

// checkScrape returns an error if the scrape cur is not consistent in itself, or if a counter
// in it is below its value in prev, the scrape before it (nil for none).
func checkScrape(prev, cur map[string]float64) error {
	if len(cur) != len(series) {
		return fmt.Errorf("%d metrics, want %d: %v", len(cur), len(series), cur)
	}
	if done, sub := cur["crew_tasks_completed_total"]+cur["crew_tasks_panicked_total"], cur["crew_tasks_accepted_total"]; done > sub {
		return fmt.Errorf("completed+panicked %v > submitted %v", done, sub)
	}
	if run, limit := cur["crew_tasks_running"], cur["crew_workers_max"]; run > limit {
		return fmt.Errorf("running %v > max %v", run, limit)
	}
	for name, v := range prev {
		if strings.HasSuffix(name, "_total") && cur[name] < v {
			return fmt.Errorf("%s went back from %v to %v", name, v, cur[name])
		}
	}
	return nil
}

// TestStressCollectorIsSafeForConcurrentUse scrapes one collector from 64 goroutines at once,
// half through one shared registry and half through registries of their own, while submitters
// keep the pool busy with tasks that return, tasks that panic and submits that are rejected.
// Under -race it proves the Collector safe for concurrent use; each scrape must be consistent
// and no counter may go back between two scrapes of one goroutine. At the end the counters
// must match what the submitters saw.
func TestStressCollectorIsSafeForConcurrentUse(t *testing.T) {
	const scrapers = 64
	scrapes := 100
	if testing.Short() {
		scrapes = 10
	}
	p := crew.New(4, crew.WithQueueSize(8), crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	c := prom.NewCollector("stress", p)
	shared := prometheus.NewPedanticRegistry()
	shared.MustRegister(c)
	gatherers := make([]prometheus.Gatherer, scrapers)
	for i := range gatherers {
		gatherers[i] = shared
		if i%2 == 1 {
			own := prometheus.NewRegistry()
			own.MustRegister(c)
			gatherers[i] = own
		}
	}

	start, scraped := make(chan struct{}), make(chan struct{})
	var submitting, scraping sync.WaitGroup
	counts := crewtest.KeepBusy(t, &submitting, p, start, scraped)
	crewtest.Spawn(&scraping, scrapers, start, func(i int) {
		var prev map[string]float64
		for n := range scrapes {
			cur, err := gather(gatherers[i])
			if err == nil {
				err = checkScrape(prev, cur)
			}
			if err != nil {
				t.Errorf("scraper %d, scrape %d: %v", i, n, err)
				return
			}
			prev = cur
		}
	})
	close(start)
	scraping.Wait()
	close(scraped)
	submitting.Wait()
	p.Wait()

	final, err := gather(shared)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := final["crew_tasks_accepted_total"], float64(counts.Accepted.Load()); got != want {
		t.Errorf("submitted = %v, want %v accepted", got, want)
	}
	if got, want := final["crew_tasks_rejected_total"], float64(counts.Refused.Load()); got != want {
		t.Errorf("rejected = %v, want %v refused", got, want)
	}
	if done, sub := final["crew_tasks_completed_total"]+final["crew_tasks_panicked_total"], final["crew_tasks_accepted_total"]; done != sub {
		t.Errorf("after Wait: completed+panicked = %v, want submitted %v", done, sub)
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
		{"le const label", func() {
			prom.NewCollector("p", fixedSource{}, prom.WithConstLabels(prometheus.Labels{"le": "x"}))
		}, `prom: NewCollector: WithConstLabels must not set the "le" label`},
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
