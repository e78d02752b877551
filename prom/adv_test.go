package prom_test

// Adversarial tests: collectors for a pool, its sub-pools and its Keyeds, scraped while the
// pools' features meet (overflow policies, Pause, Resize, StopNow, Stop, histograms, tasks
// that panic or call runtime.Goexit), and checked against what the package documentation and
// crew.Stats promise.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// advScrape is one scrape of a registry: per pool label, the value of each gauge and counter
// and each histogram.
type advScrape struct {
	values map[string]map[string]float64
	hists  map[string]map[string]*dto.Histogram
}

// advGather scrapes g once.
func advGather(g prometheus.Gatherer) (advScrape, error) {
	sc := advScrape{values: map[string]map[string]float64{}, hists: map[string]map[string]*dto.Histogram{}}
	mfs, err := g.Gather()
	if err != nil {
		return sc, err
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			pool := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "pool" {
					pool = lp.GetValue()
				}
			}
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				if sc.hists[pool] == nil {
					sc.hists[pool] = map[string]*dto.Histogram{}
				}
				if _, dup := sc.hists[pool][mf.GetName()]; dup {
					return sc, fmt.Errorf("two %s series for pool %q", mf.GetName(), pool)
				}
				sc.hists[pool][mf.GetName()] = m.GetHistogram()
			case dto.MetricType_COUNTER, dto.MetricType_GAUGE:
				if sc.values[pool] == nil {
					sc.values[pool] = map[string]float64{}
				}
				if _, dup := sc.values[pool][mf.GetName()]; dup {
					return sc, fmt.Errorf("two %s series for pool %q", mf.GetName(), pool)
				}
				sc.values[pool][mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
			default:
				return sc, fmt.Errorf("%s has type %v", mf.GetName(), mf.GetType())
			}
		}
	}
	return sc, nil
}

// advHistNames are the histograms and the Stats field each reports.
var advHistNames = []struct {
	name string
	of   func(crew.Stats) *crew.Histogram
}{
	{"crew_task_wait_seconds", func(s crew.Stats) *crew.Histogram { return s.WaitTime }},
	{"crew_task_run_seconds", func(s crew.Stats) *crew.Histogram { return s.RunTime }},
}

// advMatches returns an error unless the scrape's series of pool report exactly s.
func advMatches(sc advScrape, pool string, s crew.Stats) error {
	vals := sc.values[pool]
	if len(vals) != len(series) {
		return fmt.Errorf("pool %q: %d gauges and counters, want %d: %v", pool, len(vals), len(series), vals)
	}
	for _, m := range series {
		got, ok := vals[m.name]
		if !ok {
			return fmt.Errorf("pool %q: no %s", pool, m.name)
		}
		if want := float64(m.value(s)); got != want {
			return fmt.Errorf("pool %q: %s = %v, Stats say %v (%+v)", pool, m.name, got, want, s)
		}
	}
	for _, hn := range advHistNames {
		got, ok := sc.hists[pool][hn.name]
		want := hn.of(s)
		if want == nil {
			if ok {
				return fmt.Errorf("pool %q: %s exported for a pool without histograms", pool, hn.name)
			}
			continue
		}
		if !ok {
			return fmt.Errorf("pool %q: no %s", pool, hn.name)
		}
		if err := advHistMatches(got, *want); err != nil {
			return fmt.Errorf("pool %q: %s: %v", pool, hn.name, err)
		}
	}
	return nil
}

// advNative decodes the positive native buckets of h: bucket index to count.
func advNative(h *dto.Histogram) map[int]uint64 {
	out := map[int]uint64{}
	idx, k := int32(0), 0
	var count int64
	for _, sp := range h.GetPositiveSpan() {
		idx += sp.GetOffset()
		for range sp.GetLength() {
			count += h.GetPositiveDelta()[k]
			k++
			if count != 0 {
				out[int(idx)] = uint64(count)
			}
			idx++
		}
	}
	return out
}

// advHistMatches returns an error unless the exported histogram got holds exactly h: its count
// and sum, a classic bucket at every power of two holding the cumulative count of h's buckets
// up to it, and native buckets of schema 3 that are h's own.
func advHistMatches(got *dto.Histogram, h crew.Histogram) error {
	if got.GetSampleCount() != h.Count {
		return fmt.Errorf("count %d, want %d", got.GetSampleCount(), h.Count)
	}
	if got.GetSampleSum() != h.Sum {
		return fmt.Errorf("sum %v, want %v", got.GetSampleSum(), h.Sum)
	}
	// Classic buckets.
	bs := got.GetBucket()
	if len(bs) != 33 {
		return fmt.Errorf("%d classic buckets, want 33", len(bs))
	}
	for _, b := range bs {
		le := b.GetUpperBound()
		if e := math.Log2(le); e != math.Round(e) {
			return fmt.Errorf("classic le=%v is not a power of two", le)
		}
		var cum uint64
		for i, n := range h.Counts {
			if h.Buckets[i+1] <= le*(1+1e-12) {
				cum += n
			}
		}
		if b.GetCumulativeCount() != cum {
			return fmt.Errorf("classic le=%v counts %d, want %d", le, b.GetCumulativeCount(), cum)
		}
	}
	// Native buckets.
	if got.GetSchema() != 3 {
		return fmt.Errorf("schema %d, want 3", got.GetSchema())
	}
	if len(h.Counts) == 0 {
		return nil
	}
	if got.GetZeroThreshold() != h.Buckets[1] || got.GetZeroCount() != h.Counts[0] {
		return fmt.Errorf("zero bucket (threshold %v) counts %d, want %d (threshold %v)",
			got.GetZeroThreshold(), got.GetZeroCount(), h.Counts[0], h.Buckets[1])
	}
	want := map[int]uint64{}
	for i := 1; i < len(h.Counts); i++ {
		if h.Counts[i] == 0 {
			continue
		}
		up := h.Buckets[i+1]
		k := int(math.Round(math.Log2(up) * 8))
		if math.IsInf(up, 1) {
			k = int(math.Round(math.Log2(h.Buckets[i])*8)) + 1
		}
		want[k] += h.Counts[i]
	}
	if native := advNative(got); !reflect.DeepEqual(native, want) {
		return fmt.Errorf("native buckets %v, want %v", native, want)
	}
	return nil
}

// advConsistent returns an error if the series of pool in cur are not consistent with each
// other, or if a counter or a histogram's count in them is below its value in prev.
func advConsistent(prev, cur advScrape, pool string, maxLimit int) error {
	v := cur.values[pool]
	if len(v) != len(series) {
		return fmt.Errorf("pool %q: %d gauges and counters, want %d", pool, len(v), len(series))
	}
	if done, acc := v["crew_tasks_completed_total"]+v["crew_tasks_panicked_total"], v["crew_tasks_accepted_total"]; done > acc {
		return fmt.Errorf("pool %q: completed+panicked %v > accepted %v", pool, done, acc)
	}
	ended := v["crew_tasks_completed_total"] + v["crew_tasks_panicked_total"] + v["crew_tasks_discarded_total"] +
		v["crew_tasks_returned_total"] + v["crew_tasks_skipped_total"]
	if ended+v["crew_tasks_running"]+v["crew_tasks_waiting"] != v["crew_tasks_accepted_total"] {
		return fmt.Errorf("pool %q: ended %v + running %v + waiting %v != accepted %v", pool, ended,
			v["crew_tasks_running"], v["crew_tasks_waiting"], v["crew_tasks_accepted_total"])
	}
	if run := v["crew_tasks_running"]; run > float64(maxLimit) {
		return fmt.Errorf("pool %q: running %v above every limit it had (%d)", pool, run, maxLimit)
	}
	for name, before := range prev.values[pool] {
		if strings.HasSuffix(name, "_total") && v[name] < before {
			return fmt.Errorf("pool %q: %s went back from %v to %v", pool, name, before, v[name])
		}
	}
	hs := cur.hists[pool]
	for name, h := range hs {
		if before, ok := prev.hists[pool][name]; ok && h.GetSampleCount() < before.GetSampleCount() {
			return fmt.Errorf("pool %q: %s count went back from %d to %d", pool, name, before.GetSampleCount(), h.GetSampleCount())
		}
		var total uint64
		for _, n := range advNative(h) {
			total += n
		}
		if total+h.GetZeroCount() != h.GetSampleCount() {
			return fmt.Errorf("pool %q: %s native buckets hold %d, count %d", pool, name, total+h.GetZeroCount(), h.GetSampleCount())
		}
		var last uint64
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() < last || b.GetCumulativeCount() > h.GetSampleCount() {
				return fmt.Errorf("pool %q: %s classic buckets not cumulative within the count: %v", pool, name, h.GetBucket())
			}
			last = b.GetCumulativeCount()
		}
	}
	if w, r := hs["crew_task_wait_seconds"], hs["crew_task_run_seconds"]; (w == nil) != (r == nil) ||
		(w != nil && w.GetSampleCount() < r.GetSampleCount()) {
		return fmt.Errorf("pool %q: wait histogram %v, run histogram %v", pool, w.GetSampleCount(), r.GetSampleCount())
	}
	return nil
}

// advStatsEqual reports whether two snapshots are the same, histograms compared by value.
func advStatsEqual(a, b crew.Stats) bool {
	return reflect.DeepEqual(a, b)
}

// advQuietMatch scrapes g until a scrape falls between two equal Stats of every source in
// srcs (so nothing moved while it ran), and checks that scrape against them.
func advQuietMatch(t *testing.T, g prometheus.Gatherer, srcs map[string]prom.StatsSource) advScrape {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		before := map[string]crew.Stats{}
		for name, src := range srcs {
			before[name] = src.Stats()
		}
		sc, err := advGather(g)
		if err != nil {
			t.Fatal(err)
		}
		still := true
		for name, src := range srcs {
			if !advStatsEqual(before[name], src.Stats()) {
				still = false
			}
		}
		if still {
			for name := range srcs {
				if err := advMatches(sc, name, before[name]); err != nil {
					t.Fatal(err)
				}
			}
			return sc
		}
		if time.Now().After(deadline) {
			t.Fatal("the pools' Stats kept moving after they were quiet")
		}
		time.Sleep(time.Millisecond)
	}
}

// advWithin runs fn and fails the test if it does not return within d.
func advWithin(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// advEnded returns Completed+Panicked+Discarded+Returned+Skipped.
func advEnded(s crew.Stats) uint64 {
	return s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
}

// advTask returns the i-th task of a mix: it counts itself in ran, then returns, panics or
// calls runtime.Goexit.
func advTask(i int, ran *atomic.Uint64) func() {
	return func() {
		ran.Add(1)
		switch i % 5 {
		case 1:
			panic("adv: planned panic")
		case 3:
			runtime.Goexit()
		case 4:
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// advTree is a pool with latency histograms under DiscardOldest, its sub-pool under
// CallerRuns, that one's sub-pool with a non-blocking queue, a Keyed on the pool and one on
// the innermost sub-pool, and ran counters for the tasks of each.
type advTree struct {
	root, sub, subsub *crew.Pool
	keyed, keyedSub   *crew.Keyed[int]
	ran               map[string]*atomic.Uint64
	srcs              map[string]prom.StatsSource
}

func newAdvTree(t *testing.T) *advTree {
	t.Helper()
	root := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(root.StopAndWait)
	sub := root.Sub(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms())
	subsub := sub.Sub(1, crew.WithQueueSize(1), crew.WithNonBlocking(), crew.WithLatencyHistograms())
	tr := &advTree{
		root: root, sub: sub, subsub: subsub,
		keyed:    crew.NewKeyed[int](root, crew.WithQueueSize(4)),
		keyedSub: crew.NewKeyed[int](subsub, crew.WithQueueSize(1), crew.WithNonBlocking()),
		ran:      map[string]*atomic.Uint64{},
	}
	tr.srcs = map[string]prom.StatsSource{
		"root": root, "sub": sub, "subsub": subsub,
		"keyed": tr.keyed, "keyedsub": prom.StatsFunc(tr.keyedSub.Stats),
	}
	for name := range tr.srcs {
		tr.ran[name] = new(atomic.Uint64)
	}
	return tr
}

// register registers a collector for every pool of the tree with reg.
func (tr *advTree) register(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	for name, src := range tr.srcs {
		if err := reg.Register(prom.NewCollector(name, src)); err != nil {
			t.Fatalf("registering %s: %v", name, err)
		}
	}
}

// submitAll starts two submitters per pool of the tree, each making n submits of the task
// mix, and returns when all have ended. Each submit to the CallerRuns sub-pool is made on a
// goroutine of its own, since a caller-run task that calls runtime.Goexit ends its submitter.
func (tr *advTree) submitAll(n int) {
	var wg sync.WaitGroup
	for name := range tr.srcs {
		ran := tr.ran[name]
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < 2*n; i += 2 {
					task := advTask(i, ran)
					switch name {
					case "root":
						_ = tr.root.Submit(task)
					case "sub":
						done := make(chan struct{})
						go func() {
							defer close(done)
							_ = tr.sub.Submit(task)
						}()
						<-done
					case "subsub":
						if i%2 == 0 {
							_ = tr.subsub.Submit(task)
						} else {
							_ = tr.subsub.TrySubmit(task)
						}
					case "keyed":
						_ = tr.keyed.Submit(i%3, task)
					case "keyedsub":
						_ = tr.keyedSub.TrySubmit(i%2, task)
					}
					if i%4 == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
	}
	wg.Wait()
}

// waitAll waits for every pool and Keyed of the tree, bounded.
func (tr *advTree) waitAll(t *testing.T) {
	t.Helper()
	advWithin(t, 5*time.Second, "waiting for the tree", func() {
		tr.keyedSub.Wait()
		tr.keyed.Wait()
		tr.subsub.Wait()
		tr.sub.Wait()
		tr.root.Wait()
	})
}

// checkQuiet checks, on a quiet tree, that the accounting identity holds for every source and
// that each pool's histograms count the tasks that ran on it, keyed tasks included.
func (tr *advTree) checkQuiet(t *testing.T) {
	t.Helper()
	for name, src := range tr.srcs {
		s := src.Stats()
		if s.Running != 0 || s.Waiting != 0 || advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, but Stats %+v break Accepted = Completed+Panicked+Discarded+Returned+Skipped", name, s)
		}
	}
	for _, c := range []struct {
		name string
		p    *crew.Pool
		ran  uint64
	}{
		{"root", tr.root, tr.ran["root"].Load() + tr.ran["keyed"].Load()},
		{"sub", tr.sub, tr.ran["sub"].Load()},
		{"subsub", tr.subsub, tr.ran["subsub"].Load() + tr.ran["keyedsub"].Load()},
	} {
		s := c.p.Stats()
		if s.RunTime == nil || s.WaitTime == nil {
			t.Errorf("%s: no histograms", c.name)
			continue
		}
		if s.RunTime.Count != c.ran || s.WaitTime.Count != c.ran {
			t.Errorf("%s: histograms count %d waits and %d runs, %d tasks ran", c.name, s.WaitTime.Count, s.RunTime.Count, c.ran)
		}
	}
	for _, name := range []string{"keyed", "keyedsub"} {
		s := tr.srcs[name].Stats()
		if got := s.Completed + s.Panicked; got != tr.ran[name].Load() {
			t.Errorf("%s: Completed+Panicked = %d, %d keyed tasks ran", name, got, tr.ran[name].Load())
		}
		// Keyed.Stats: Idle, CallerRan and Skipped are 0, the histograms nil.
		if s.Idle != 0 || s.CallerRan != 0 || s.Skipped != 0 || s.WaitTime != nil || s.RunTime != nil {
			t.Errorf("%s: Stats %+v, want Idle, CallerRan, Skipped 0 and no histograms", name, s)
		}
	}
	// A sub-pool's workers are its parent's: it reports no idle ones.
	for _, name := range []string{"sub", "subsub"} {
		if s := tr.srcs[name].Stats(); s.Idle != 0 {
			t.Errorf("%s: Idle = %d, want 0 for a sub-pool", name, s.Idle)
		}
	}
}

// TestAdvQuietTreeReadsBackItsStats exports a pool, a sub-pool, a sub-pool of that and two
// Keyeds, puts on them tasks that return, panic and call runtime.Goexit through DiscardOldest,
// CallerRuns and a non-blocking queue while another goroutine pauses, resumes and resizes them,
// and then, once they are quiet, requires every metric to equal its Stats field, the histograms
// to hold the pools' own buckets and to count the tasks that ran.
func TestAdvQuietTreeReadsBackItsStats(t *testing.T) {
	tr := newAdvTree(t)
	reg := prometheus.NewPedanticRegistry()
	tr.register(t, reg)

	stop := make(chan struct{})
	var churn sync.WaitGroup
	crewtest.Repeat(&churn, stop, crewtest.TreeChurn(tr.root, tr.sub, tr.subsub))
	advWithin(t, 10*time.Second, "submitting", func() { tr.submitAll(300) })
	close(stop)
	churn.Wait()
	tr.root.Resume() // the churn may have left them paused
	tr.sub.Resume()
	tr.waitAll(t)

	advQuietMatch(t, reg, tr.srcs)
	tr.checkQuiet(t)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestAdvConcurrentScrapesDuringChurnAreMonotonicAndConsistent scrapes a tree of pools from 12
// goroutines, through a shared registry and registries of their own, while submitters, a
// pauser, a resizer and finally StopNow, Stop and StopAndWait work on the pools. Each scrape
// must be consistent in itself, no counter or histogram count may go back between two scrapes
// of one goroutine, and once the pools have stopped, every metric must still read, equal to
// Stats.
func TestAdvConcurrentScrapesDuringChurnAreMonotonicAndConsistent(t *testing.T) {
	const scrapers = 12
	tr := newAdvTree(t)
	shared := prometheus.NewPedanticRegistry()
	tr.register(t, shared)
	gatherers := make([]prometheus.Gatherer, scrapers)
	for i := range gatherers {
		gatherers[i] = shared
		if i%2 == 1 {
			own := prometheus.NewRegistry()
			tr.register(t, own)
			gatherers[i] = own
		}
	}

	stop := make(chan struct{})
	var scraping, churn sync.WaitGroup
	var scrapes atomic.Int64
	for i := range scrapers {
		scraping.Add(1)
		go func() {
			defer scraping.Done()
			var prev advScrape
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				cur, err := advGather(gatherers[i])
				if err != nil {
					t.Errorf("scraper %d, scrape %d: %v", i, n, err)
					return
				}
				for name := range tr.srcs {
					if err := advConsistent(prev, cur, name, 3); err != nil {
						t.Errorf("scraper %d, scrape %d: %v", i, n, err)
						return
					}
				}
				scrapes.Add(1)
				prev = cur
			}
		}()
	}
	crewtest.Repeat(&churn, stop, crewtest.TreeChurnSmall(tr.root, tr.sub, tr.subsub))
	advWithin(t, 10*time.Second, "submitting", func() { tr.submitAll(80) })

	// Stop from the inside out, while the scrapers go on.
	tr.root.Pause()
	left := tr.subsub.StopNow()
	for _, task := range left {
		if task == nil {
			t.Error("StopNow returned a nil task")
		}
	}
	tr.sub.Stop()
	tr.root.Resume()
	advWithin(t, 5*time.Second, "StopAndWait", tr.root.StopAndWait)
	close(stop)
	scraping.Wait()
	churn.Wait()
	tr.sub.Resume() // the churn may have left them paused
	tr.root.Resume()
	if scrapes.Load() == 0 {
		t.Fatal("no scrape completed")
	}
	tr.waitAll(t)

	sc := advQuietMatch(t, shared, tr.srcs)
	tr.checkQuiet(t)
	if got := sc.values["subsub"]["crew_tasks_returned_total"]; got < float64(len(left)-int(tr.keyedSub.Stats().Returned)) {
		t.Errorf("subsub: returned %v, StopNow handed back %d tasks (%d of them keyed)", got, len(left), tr.keyedSub.Stats().Returned)
	}
	// A stopped pool refuses submits with ErrStopped, counted nowhere; its metrics still read.
	if err := tr.root.Submit(func() {}); err != crew.ErrStopped {
		t.Fatalf("Submit on a stopped pool = %v, want ErrStopped", err)
	}
	if err := tr.keyed.Submit(1, func() {}); err != crew.ErrStopped {
		t.Fatalf("Keyed.Submit on a stopped pool = %v, want ErrStopped", err)
	}
	after := advQuietMatch(t, shared, tr.srcs)
	for name := range tr.srcs {
		if !reflect.DeepEqual(after.values[name], sc.values[name]) {
			t.Errorf("%s: metrics moved after a refused submit on a stopped pool: %v, then %v", name, sc.values[name], after.values[name])
		}
	}
}

// TestAdvPausedBacklogStopNowIsExported pauses a pool with a backlog in itself, in its
// sub-pools and in a Keyed, checks the paused gauge of each (a sub-pool held back by its
// parent's pause reports 0), abandons the backlog with StopNow, and requires the exported
// Returned and Waiting to equal Stats, and every handed back task to be counted in some
// source's Returned.
func TestAdvPausedBacklogStopNowIsExported(t *testing.T) {
	tr := newAdvTree(t)
	reg := prometheus.NewPedanticRegistry()
	tr.register(t, reg)
	tr.root.Pause()
	var never atomic.Uint64
	for i := range 2 {
		if err := tr.root.Submit(advTask(i, &never)); err != nil {
			t.Fatal(err)
		}
		if !tr.subsub.TrySubmit(advTask(i, &never)) && i == 0 {
			t.Fatal("TrySubmit on an empty subsub refused")
		}
		if err := tr.keyed.Submit(i, advTask(i, &never)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.sub.Submit(advTask(0, &never)); err != nil {
		t.Fatal(err)
	}
	sc := advQuietMatch(t, reg, tr.srcs)
	if got := sc.values["root"]["crew_pool_paused"]; got != 1 {
		t.Errorf("root paused gauge = %v, want 1", got)
	}
	for _, name := range []string{"sub", "subsub"} {
		if got := sc.values[name]["crew_pool_paused"]; got != 0 {
			t.Errorf("%s (held by its parent's pause) paused gauge = %v, want 0", name, got)
		}
	}
	if got := sc.values["keyed"]["crew_tasks_waiting"]; got != 2 {
		t.Errorf("keyed waiting = %v, want 2", got)
	}
	// A Keyed reports its pool's limit and pause.
	if k, r := sc.values["keyed"], sc.values["root"]; k["crew_pool_paused"] != 1 || k["crew_workers_max"] != r["crew_workers_max"] {
		t.Errorf("keyed paused %v, limit %v; its pool's are 1 and %v", k["crew_pool_paused"], k["crew_workers_max"], r["crew_workers_max"])
	}
	if k, r := sc.values["keyedsub"], sc.values["subsub"]; k["crew_pool_paused"] != 0 || k["crew_workers_max"] != r["crew_workers_max"] {
		t.Errorf("keyedsub paused %v, limit %v; its pool's are 0 and %v", k["crew_pool_paused"], k["crew_workers_max"], r["crew_workers_max"])
	}

	left := tr.root.StopNow()
	tr.waitAll(t)
	if n := never.Load(); n != 0 {
		t.Fatalf("%d tasks of the abandoned backlog ran", n)
	}
	sc = advQuietMatch(t, reg, tr.srcs)
	var returned float64
	for _, name := range []string{"root", "sub", "subsub", "keyed"} {
		if w := sc.values[name]["crew_tasks_waiting"]; w != 0 {
			t.Errorf("%s: waiting %v after StopNow", name, w)
		}
	}
	returned = sc.values["root"]["crew_tasks_returned_total"] + sc.values["sub"]["crew_tasks_returned_total"] +
		sc.values["subsub"]["crew_tasks_returned_total"] + sc.values["keyed"]["crew_tasks_returned_total"]
	if returned < float64(len(left)) {
		t.Errorf("StopNow handed back %d tasks, the exported Returned add up to %v", len(left), returned)
	}
	if got := sc.values["keyed"]["crew_tasks_returned_total"]; got != 2 {
		t.Errorf("keyed returned = %v, want 2", got)
	}
	tr.checkQuiet(t)
}

// TestAdvHistogramEdgesMatchThePoolsBuckets exports hand-made histograms through a StatsFunc:
// counts in the first bucket only (the native zero bucket), in the last (above the last finite
// boundary) only, in every bucket, and an empty one. Each must read back exactly, classic and
// native, and the scrape must pass lint.
func TestAdvHistogramEdgesMatchThePoolsBuckets(t *testing.T) {
	p := crew.New(1, crew.WithLatencyHistograms())
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	p.StopAndWait()
	base := *p.Stats().RunTime
	mk := func(set func(counts []uint64)) *crew.Histogram {
		h := crew.Histogram{Buckets: base.Buckets, Counts: make([]uint64, len(base.Counts))}
		set(h.Counts)
		for i, n := range h.Counts {
			h.Count += n
			h.Sum += float64(n) * math.Min(h.Buckets[i+1], 1e4)
		}
		return &h
	}
	cases := map[string]*crew.Histogram{
		"first": mk(func(c []uint64) { c[0] = 5 }),
		"last":  mk(func(c []uint64) { c[len(c)-1] = 3 }),
		"every": mk(func(c []uint64) {
			for i := range c {
				c[i] = uint64(i%3 + 1)
			}
		}),
		"empty":  mk(func([]uint64) {}),
		"second": mk(func(c []uint64) { c[1], c[8], c[len(c)-2] = 1, 2, 4 }),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			s := crew.Stats{MaxWorkers: 1, WaitTime: h, RunTime: h}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(prom.NewCollector("edge", prom.StatsFunc(func() crew.Stats { return s })))
			sc, err := advGather(reg)
			if err != nil {
				t.Fatal(err)
			}
			if err := advMatches(sc, "edge", s); err != nil {
				t.Fatal(err)
			}
			if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
				t.Fatalf("lint: %v %v", problems, err)
			}
		})
	}
}

// TestAdvZeroHistogramDoesNotBreakTheScrape exports a source whose Stats hold the zero
// Histogram (nil slices), which crew.Histogram's documentation names as what a pool without
// WithLatencyHistograms holds, as a StatsFunc adding up pools might (crewotel's Histograms
// reports it as an empty histogram). The scrape must succeed, reporting the histograms empty
// or not at all, and every other metric.
func TestAdvZeroHistogramDoesNotBreakTheScrape(t *testing.T) {
	s := crew.Stats{MaxWorkers: 1, Accepted: 2, Completed: 2, WaitTime: &crew.Histogram{}, RunTime: &crew.Histogram{}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("zero", prom.StatsFunc(func() crew.Stats { return s })))
	sc, err := advGather(reg)
	if err != nil {
		t.Fatalf("scrape failed: %.300s", err)
	}
	want := s
	want.WaitTime, want.RunTime = nil, nil
	if err := advMatches(advScrape{values: sc.values}, "zero", want); err != nil {
		t.Fatal(err)
	}
	for name, h := range sc.hists["zero"] {
		if h.GetSampleCount() != 0 {
			t.Errorf("%s counts %d for an empty histogram", name, h.GetSampleCount())
		}
	}
}

// TestAdvMalformedHistogramFailsTheScrapeWithAnError exports a source whose histogram has
// fewer bucket boundaries than crew.Histogram's documentation requires: Collect must not
// panic, and the scrape fails with an error that says what is wrong.
func TestAdvMalformedHistogramFailsTheScrapeWithAnError(t *testing.T) {
	s := crew.Stats{MaxWorkers: 1, RunTime: &crew.Histogram{Buckets: []float64{0, 1}, Counts: []uint64{1, 2}, Count: 3}}
	c := prom.NewCollector("bad", prom.StatsFunc(func() crew.Stats { return s }))
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch) // must not panic
	close(ch)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "2 bucket boundaries") {
		t.Fatalf("Gather = %v, want an error naming the bucket boundaries", err)
	}
}

// TestAdvRegistrationRulesWithRealPools registers collectors of live pools: the same collector
// twice, a second collector of another pool under a taken name, the same pool under two names,
// a pool beside its own Keyed. The documented rejections must be errors, never panics, and a
// collector unregistered must leave the others reading.
func TestAdvRegistrationRulesWithRealPools(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	q := p.Sub(1)
	k := crew.NewKeyed[string](q)
	reg := prometheus.NewPedanticRegistry()
	c := prom.NewCollector("p", p)
	reg.MustRegister(c)
	mustErr := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: registered, want an error", what)
		}
	}
	noPanic := func(what string, fn func() error) error {
		t.Helper()
		var err error
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s panicked: %v", what, v)
				}
			}()
			err = fn()
		}()
		return err
	}
	err := noPanic("same collector twice", func() error { return reg.Register(c) })
	if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
		t.Errorf("same collector twice: %v, want an AlreadyRegisteredError", err)
	}
	mustErr("another pool under a taken name", noPanic("taken name", func() error { return reg.Register(prom.NewCollector("p", q)) }))
	mustErr("a const label only the second has", noPanic("label", func() error {
		return reg.Register(prom.NewCollector("q", q, prom.WithConstLabels(prometheus.Labels{"shard": "1"})))
	}))
	if err := reg.Register(prom.NewCollector("p-again", p)); err != nil {
		t.Errorf("the same pool under a second name: %v", err)
	}
	kc := prom.NewCollector("k", k)
	if err := reg.Register(kc); err != nil {
		t.Errorf("a Keyed beside its pool: %v", err)
	}
	if err := reg.Register(prom.NewCollector("q", q)); err != nil {
		t.Errorf("a sub-pool beside its parent: %v", err)
	}
	for range 10 {
		if err := k.Submit("a", func() {}); err != nil {
			t.Fatal(err)
		}
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	advWithin(t, 5*time.Second, "Wait", func() { k.Wait(); q.Wait(); p.Wait() })
	advQuietMatch(t, reg, map[string]prom.StatsSource{"p": p, "p-again": p, "k": k, "q": q})
	if !reg.Unregister(kc) {
		t.Fatal("Unregister of a registered collector = false")
	}
	sc, err := advGather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sc.values["k"]; ok {
		t.Errorf("unregistered collector still scraped: %v", sc.values["k"])
	}
	if len(sc.values["p"]) != len(series) || len(sc.values["q"]) != len(series) {
		t.Errorf("after Unregister of another: p %v, q %v", sc.values["p"], sc.values["q"])
	}
}

// TestAdvNilSourcesPanicAtOnce: NewCollector refuses a nil *crew.Pool and a nil StatsFunc
// (non-nil interfaces holding nil) as it refuses a nil interface, with the documented panic,
// rather than accepting them and failing at the first scrape.
func TestAdvNilSourcesPanicAtOnce(t *testing.T) {
	catch := func(fn func()) (v any) {
		defer func() { v = recover() }()
		fn()
		return nil
	}
	var nilPool *crew.Pool
	v := catch(func() { prom.NewCollector("nil", nilPool) })
	if v != "prom: NewCollector: src must not be nil" {
		t.Errorf("NewCollector of a nil *crew.Pool panicked with %v", v)
	}
	v = catch(func() { prom.NewCollector("nil", prom.StatsFunc(nil)) })
	if v != "prom: NewCollector: src must not be nil" {
		t.Errorf("NewCollector of a nil StatsFunc panicked with %v", v)
	}
	// Documented: a nil interface.
	v = catch(func() { prom.NewCollector("nil", prom.StatsSource(nil)) })
	if v != "prom: NewCollector: src must not be nil" {
		t.Errorf("NewCollector(nil) panicked with %v", v)
	}
}

// TestAdvSkippedAndCanceledAreExported makes a paused pool with latency histograms skip
// functions (a future canceled, a group whose context ended, a Shutdown whose deadline passed)
// and cancel submits (a SubmitContext whose context had ended), then requires the exported
// Skipped and Canceled to equal Stats, and the accounting identity to hold once the pool is
// quiet: skipped functions never ran, so the histograms do not count them.
func TestAdvSkippedAndCanceledAreExported(t *testing.T) {
	p := crew.New(1, crew.WithLatencyHistograms(), crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	sub := p.Sub(1)
	reg := prometheus.NewPedanticRegistry()
	srcs := map[string]prom.StatsSource{"p": p, "sub": sub}
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	p.Pause()
	var ran atomic.Uint64
	f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := sub.Group(ctx)
	for range 3 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	_ = gctx
	cancel()
	if !f.Cancel() {
		t.Fatal("Cancel of a queued future = false")
	}
	if err := p.SubmitContext(ctx, func() { ran.Add(1) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with an ended context = %v", err)
	}
	hold := make(chan struct{})
	if err := p.Submit(func() { <-hold }); err != nil {
		t.Fatal(err)
	}
	late := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 0, nil })
	p.Resume()
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer scancel()
	if err := p.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a task held = %v, want DeadlineExceeded", err)
	}
	close(hold)
	advWithin(t, 5*time.Second, "waiting", func() {
		_ = g.Wait()
		_, _ = late.Wait()
		_, _ = f.Wait()
		p.StopAndWait()
	})
	sc := advQuietMatch(t, reg, srcs)
	if n := ran.Load(); n != 0 {
		t.Errorf("%d skipped functions ran", n)
	}
	if got := sc.values["p"]["crew_tasks_canceled_total"]; got != 1 {
		t.Errorf("p canceled = %v, want 1", got)
	}
	if got := sc.values["sub"]["crew_tasks_skipped_total"]; got != 3 {
		t.Errorf("sub skipped = %v, want 3", got)
	}
	if got := sc.values["p"]["crew_tasks_skipped_total"]; got != 2 {
		t.Errorf("p skipped = %v, want 2 (a canceled future, a function Shutdown skipped)", got)
	}
	for name, src := range srcs {
		if s := src.Stats(); advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, Stats %+v break the identity", name, s)
		}
	}
	if h := sc.hists["p"]["crew_task_run_seconds"]; h.GetSampleCount() != 1 {
		t.Errorf("p run histogram counts %d, want 1 (the held task)", h.GetSampleCount())
	}
}

// TestAdvRunningNeverExceedsTheLimitWithoutResize scrapes a tree of pools, through the
// registry and over HTTP in the text and the protobuf formats, while submitters and a pauser
// work on it but nothing resizes it: the package documentation promises that running tasks
// never exceed the limit then, for the pool, each sub-pool and each Keyed (whose limit is its
// pool's). Every HTTP scrape must succeed.
func TestAdvRunningNeverExceedsTheLimitWithoutResize(t *testing.T) {
	const scrapers = 8
	tr := newAdvTree(t)
	reg := prometheus.NewPedanticRegistry()
	tr.register(t, reg)
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	stop := make(chan struct{})
	var scraping, churn sync.WaitGroup
	var scrapes atomic.Int64
	for i := range scrapers {
		scraping.Add(1)
		go func() {
			defer scraping.Done()
			var prev advScrape
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if i < 2 {
					req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
					if i == 1 {
						req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
					}
					rec := httptest.NewRecorder()
					handler.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
						t.Errorf("HTTP scraper %d: status %d, %d bytes: %.300s", i, rec.Code, rec.Body.Len(), rec.Body.String())
						return
					}
					continue
				}
				cur, err := advGather(reg)
				if err != nil {
					t.Errorf("scraper %d, scrape %d: %v", i, n, err)
					return
				}
				for name := range tr.srcs {
					v := cur.values[name]
					if err := advConsistent(prev, cur, name, 2); err != nil {
						t.Errorf("scraper %d, scrape %d: %v", i, n, err)
						return
					}
					if v["crew_tasks_running"] > v["crew_workers_max"] {
						t.Errorf("scraper %d, scrape %d: %s runs %v tasks, its limit is %v", i, n, name, v["crew_tasks_running"], v["crew_workers_max"])
						return
					}
				}
				scrapes.Add(1)
				prev = cur
			}
		}()
	}
	crewtest.Repeat(&churn, stop, func(i int) {
		switch i % 4 {
		case 0:
			tr.root.Pause()
		case 1:
			tr.root.Resume()
		case 2:
			tr.sub.Pause()
		case 3:
			tr.sub.Resume()
		}
		time.Sleep(100 * time.Microsecond)
	})
	advWithin(t, 10*time.Second, "submitting", func() { tr.submitAll(100) })
	close(stop)
	scraping.Wait()
	churn.Wait()
	tr.sub.Resume() // the churn may have left them paused
	tr.root.Resume()
	if scrapes.Load() == 0 {
		t.Fatal("no scrape completed")
	}
	tr.waitAll(t)
	advQuietMatch(t, reg, tr.srcs)
	tr.checkQuiet(t)
}

// TestAdvDiscardOldestDropsAKeyedTurnNeverASubPoolWorker fills a DiscardOldest pool of one
// worker and a queue of one, first with a Keyed's turn and then with a sub-pool's worker. A
// submit over the turn drops it, with its keyed tasks (Keyed.Stats counts them Discarded); a
// submit over the sub-pool's worker waits for room instead, as the documentation of
// DiscardOldest promises. The exported metrics must follow, and equal Stats once quiet.
func TestAdvDiscardOldestDropsAKeyedTurnNeverASubPoolWorker(t *testing.T) {
	var dropped atomic.Int64
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithDiscardHandler(func(any) { dropped.Add(1) }))
	defer p.StopAndWait()
	sub := p.Sub(1)
	k := crew.NewKeyed[int](p)
	srcs := map[string]prom.StatsSource{"p": p, "sub": sub, "k": k}
	reg := prometheus.NewPedanticRegistry()
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	hold := func() chan struct{} {
		release, started := make(chan struct{}), make(chan struct{})
		if err := p.Submit(func() { close(started); <-release }); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the holding task did not start")
		}
		return release
	}

	release := hold()
	var ran atomic.Int64
	for range 3 {
		if err := k.Submit(7, func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(func() { ran.Add(1) }); err != nil {
		t.Fatal(err)
	}
	sc := advQuietMatch(t, reg, srcs)
	if got := sc.values["k"]["crew_tasks_discarded_total"]; got != 3 {
		t.Errorf("keyed discarded = %v after its turn was dropped, want 3", got)
	}
	if got := sc.values["p"]["crew_tasks_discarded_total"]; got != 1 {
		t.Errorf("pool discarded = %v, want 1 (the turn)", got)
	}
	close(release)
	advWithin(t, 5*time.Second, "Wait", func() { k.Wait(); p.Wait() })

	release = hold()
	var subRan atomic.Int64
	if err := sub.Submit(func() { subRan.Add(1) }); err != nil {
		t.Fatal(err)
	}
	submitted := make(chan error, 1)
	go func() { submitted <- p.Submit(func() { ran.Add(1) }) }()
	select {
	case err := <-submitted:
		t.Errorf("a submit over a sub-pool's waiting worker returned %v at once; want it to wait for room", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-submitted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the submit waiting for room never returned")
	}
	advWithin(t, 5*time.Second, "Wait", func() { sub.Wait(); p.Wait() })
	sc = advQuietMatch(t, reg, srcs)
	if got := sc.values["sub"]["crew_tasks_completed_total"]; got != 1 {
		t.Errorf("sub completed = %v, want 1: its worker was not to be dropped", got)
	}
	if got := sc.values["p"]["crew_tasks_discarded_total"]; got != 1 {
		t.Errorf("pool discarded = %v, want still 1", got)
	}
	for name, src := range srcs {
		if s := src.Stats(); advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, Stats %+v break the identity", name, s)
		}
	}
	// The pool's histograms see its own tasks, not the sub-pool's nor its worker.
	if h := sc.hists["p"]["crew_task_run_seconds"]; h.GetSampleCount() != uint64(ran.Load())+2 || subRan.Load() != 1 {
		t.Errorf("pool run histogram counts %d, %d of its tasks ran (and 2 holders); the sub-pool ran %d", h.GetSampleCount(), ran.Load(), subRan.Load())
	}
}

// TestAdvStopNowAndShutdownAmidSubmitsKeepScrapesConsistent scrapes a tree of pools from 8
// goroutines while submitters (plain tasks and group functions) are still at work and the
// pools are stopped under them: StopNow on the innermost sub-pool, StopNow on its parent, and
// a Shutdown of the pool whose deadline passes while a task holds a worker. Every scrape must
// be consistent and monotonic; once all is quiet every metric must equal Stats, with the
// accounting identity holding for each source.
func TestAdvStopNowAndShutdownAmidSubmitsKeepScrapesConsistent(t *testing.T) {
	const scrapers = 8
	tr := newAdvTree(t)
	reg := prometheus.NewPedanticRegistry()
	tr.register(t, reg)

	stop := make(chan struct{})
	var scraping, submitting sync.WaitGroup
	for i := range scrapers {
		scraping.Add(1)
		go func() {
			defer scraping.Done()
			var prev advScrape
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				cur, err := advGather(reg)
				if err != nil {
					t.Errorf("scraper %d, scrape %d: %v", i, n, err)
					return
				}
				for name := range tr.srcs {
					if err := advConsistent(prev, cur, name, 2); err != nil {
						t.Errorf("scraper %d, scrape %d: %v", i, n, err)
						return
					}
				}
				prev = cur
			}
		}()
	}
	// Group functions on the sub-pools, some of which their group's context skips.
	var groupRan atomic.Uint64
	for _, p := range []*crew.Pool{tr.sub, tr.subsub} {
		submitting.Add(1)
		go func() {
			defer submitting.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithCancel(context.Background())
				g, _ := p.Group(ctx)
				for j := range 4 {
					g.Go(func(context.Context) error {
						groupRan.Add(1)
						if j == 3 {
							return errors.New("adv: planned")
						}
						return nil
					})
				}
				if i%2 == 0 {
					cancel()
				}
				if err := g.Wait(); errors.Is(err, crew.ErrStopped) {
					cancel()
					return
				}
				cancel()
			}
		}()
	}
	submitting.Add(1)
	go func() {
		defer submitting.Done()
		tr.submitAll(60)
	}()
	time.Sleep(5 * time.Millisecond)
	tr.subsub.StopNow()
	time.Sleep(2 * time.Millisecond)
	tr.sub.StopNow()
	hold, held := make(chan struct{}), make(chan struct{})
	go func() {
		_ = tr.root.Submit(func() {
			select {
			case <-held:
			default:
				close(held)
			}
			<-hold
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	err := tr.root.Shutdown(ctx)
	close(hold)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v", err)
	}
	advWithin(t, 10*time.Second, "the submitters", submitting.Wait)
	advWithin(t, 5*time.Second, "StopAndWait", tr.root.StopAndWait)
	close(stop)
	scraping.Wait()
	tr.waitAll(t)
	advQuietMatch(t, reg, tr.srcs)
	for name, src := range tr.srcs {
		if s := src.Stats(); s.Running != 0 || s.Waiting != 0 || advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, but Stats %+v break the identity", name, s)
		}
	}
}
