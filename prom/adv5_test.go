package prom_test

// Adversarial tests: the collector as an acceptance suite reads it, every Stats field and a
// Keyed's Stats read back from a real registry after known traffic, sampled and unsampled
// histograms, native histograms over the protobuf exposition, and scrapes concurrent with
// storms of submits, Pause, Resume, Resize and StopNow.

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// adv5Scrape gathers reg, failing t on an error.
func adv5Scrape(t *testing.T, reg prometheus.Gatherer) advScrape {
	t.Helper()
	sc, err := advGather(reg)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// adv5Want fails t unless pool's gauges and counters in sc are exactly want, by metric name.
func adv5Want(t *testing.T, sc advScrape, pool string, want map[string]float64) {
	t.Helper()
	got := sc.values[pool]
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("pool %q: %s = %v (present %v), want %v", pool, name, g, ok, w)
		}
	}
}

// TestAdv5PromEveryFieldReadsBackKnownTrafficWithPanicNilAndGoexit: after the traffic of
// crewtest.Losses, counted by hand (a task DiscardOldest dropped, a TrySubmit refused on a full
// queue, a submit with an ended context, a function skipped because its context ended while
// queued, a canceled future, tasks that panic(nil), panic and call runtime.Goexit, caller-run
// tasks of which one calls runtime.Goexit, a paused backlog that StopNow returns), every series
// of two pools on one registry reads back the hand-counted value, and the histograms count the
// tasks that started and finished.
func TestAdv5PromEveryFieldReadsBackKnownTrafficWithPanicNilAndGoexit(t *testing.T) {
	l := crewtest.NewLosses(t)
	p, q := l.Dropping, l.CallerRuns
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("dis", p), prom.NewCollector("cr", q))
	l.Run(t, func() {
		adv5Want(t, adv5Scrape(t, reg), "dis", map[string]float64{"crew_pool_paused": 1, "crew_tasks_waiting": 1, "crew_tasks_running": 0})
	})
	sc := adv5Scrape(t, reg)
	adv5Want(t, sc, "dis", map[string]float64{
		"crew_workers_max": 1, "crew_tasks_running": 0, "crew_tasks_waiting": 0,
		"crew_tasks_accepted_total":   11, // b1 A B, b2 skipped, b3 f, three of the mix, the paused one
		"crew_tasks_completed_total":  5,  // b1 B b2 b3 and the Goexit
		"crew_tasks_panicked_total":   2,  // panic(nil) and panic
		"crew_tasks_rejected_total":   1,
		"crew_tasks_canceled_total":   1,
		"crew_tasks_discarded_total":  1,
		"crew_tasks_caller_ran_total": 0,
		"crew_tasks_returned_total":   1,
		"crew_tasks_skipped_total":    2,
	})
	adv5Want(t, sc, "cr", map[string]float64{
		"crew_workers_max": 1, "crew_tasks_running": 0, "crew_tasks_waiting": 0, "crew_pool_paused": 0,
		"crew_tasks_accepted_total":   4,
		"crew_tasks_completed_total":  4,
		"crew_tasks_panicked_total":   0,
		"crew_tasks_rejected_total":   0,
		"crew_tasks_canceled_total":   0,
		"crew_tasks_discarded_total":  0,
		"crew_tasks_caller_ran_total": 2,
		"crew_tasks_returned_total":   0,
		"crew_tasks_skipped_total":    0,
	})
	for pool, n := range map[string]uint64{"dis": 7, "cr": 4} {
		for _, hn := range advHistNames {
			h := sc.hists[pool][hn.name]
			if h == nil || h.GetSampleCount() != n {
				t.Errorf("pool %q: %s counts %d, want %d tasks", pool, hn.name, h.GetSampleCount(), n)
			}
		}
	}
	if err := advMatches(sc, "dis", p.Stats()); err != nil {
		t.Error(err)
	}
	if err := advMatches(sc, "cr", q.Stats()); err != nil {
		t.Error(err)
	}
	if got := l.Panics.Load(); got != 2 {
		t.Errorf("the panic handler got %d panics, want 2", got)
	}
	if got := l.Ran.Load(); got != 3 { // B, X, Y
		t.Errorf("%d counting tasks ran, want 3", got)
	}
}

// adv5SumWithinBuckets returns an error unless h's Sum lies between the least and the most
// its counts allow: each count times its bucket's lower and upper boundary (a nanosecond of
// rounding allowed per duration).
func adv5SumWithinBuckets(h crew.Histogram) error {
	var lo, hi float64
	for i, c := range h.Counts {
		if c == 0 {
			continue // 0 × +Inf would make the bound NaN
		}
		lo += float64(c) * h.Buckets[i]
		hi += float64(c) * h.Buckets[i+1]
	}
	slack := float64(h.Count) * 1e-9
	if h.Sum < lo-slack || h.Sum > hi+slack {
		return fmt.Errorf("sum %v outside [%v, %v], what the buckets' counts allow", h.Sum, lo, hi)
	}
	return nil
}

// TestAdv5PromSampledHistogramsExportCountsInMultiplesOfN: under WithLatencySample(n) each
// timed task counts n times, so every scraped count (the sample count, each native bucket,
// each classic cumulative count) is a multiple of n, the scrape equals the pool's own
// histogram, its sum lies within what its buckets allow (each timed duration counted n
// times), and the counters stay exact.
func TestAdv5PromSampledHistogramsExportCountsInMultiplesOfN(t *testing.T) {
	const n = 8
	tasks := crewtest.Scale(800, 200)
	p := crewtest.SampledPool(t, n)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("sampled", p))
	crewtest.SubmitMix(t, p, tasks)
	sc := advQuietMatch(t, reg, map[string]prom.StatsSource{"sampled": p})
	adv5Want(t, sc, "sampled", map[string]float64{
		"crew_tasks_accepted_total": float64(tasks), "crew_tasks_completed_total": float64(tasks - tasks/4),
		"crew_tasks_panicked_total": float64(tasks / 4),
	})
	for _, hn := range advHistNames {
		h := sc.hists["sampled"][hn.name]
		if h == nil {
			t.Fatalf("no %s", hn.name)
		}
		if c := h.GetSampleCount(); c%n != 0 || c == 0 {
			t.Errorf("%s: count %d, want a positive multiple of %d", hn.name, c, n)
		}
		if h.GetZeroCount()%n != 0 {
			t.Errorf("%s: zero bucket %d, want a multiple of %d", hn.name, h.GetZeroCount(), n)
		}
		for k, c := range advNative(h) {
			if c%n != 0 {
				t.Errorf("%s: native bucket %d counts %d, want a multiple of %d", hn.name, k, c, n)
			}
		}
		if own := hn.of(p.Stats()); own != nil {
			if err := adv5SumWithinBuckets(*own); err != nil {
				t.Errorf("%s: %v", hn.name, err)
			}
		}
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount()%n != 0 {
				t.Errorf("%s: le=%v counts %d, want a multiple of %d", hn.name, b.GetUpperBound(), b.GetCumulativeCount(), n)
			}
		}
	}
}

// adv5EveryTaskTimed submits tasks copies of task to p, exported as name on a registry of
// its own, waits for them, and fails t unless the scrape matches p's Stats and both
// histograms count every task. It returns the scrape.
func adv5EveryTaskTimed(t *testing.T, p *crew.Pool, name string, tasks int, task func()) advScrape {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector(name, p))
	for range tasks {
		if err := p.Submit(task); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	sc := advQuietMatch(t, reg, map[string]prom.StatsSource{name: p})
	for _, hn := range advHistNames {
		if h := sc.hists[name][hn.name]; h == nil || h.GetSampleCount() != uint64(tasks) {
			t.Errorf("%s counts %d, want every one of %d tasks", hn.name, h.GetSampleCount(), tasks)
		}
	}
	return sc
}

// TestAdv5PromSampleIsIgnoredWithHooksSoEveryTaskCountsOnce: WithLatencySample has no effect
// on a pool with hooks: every task is timed and counted once, so the scraped counts equal the
// number of tasks exactly, even when that is no multiple of n.
func TestAdv5PromSampleIsIgnoredWithHooksSoEveryTaskCountsOnce(t *testing.T) {
	const tasks = 37
	var started atomic.Int64
	p := crew.New(2, crew.WithLatencyHistograms(), crew.WithLatencySample(16),
		crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { started.Add(1) }}))
	defer p.StopAndWait()
	adv5EveryTaskTimed(t, p, "hooked", tasks, func() {})
	if started.Load() != tasks {
		t.Errorf("Started hook saw %d tasks, want %d", started.Load(), tasks)
	}
}

// TestAdv5PromNativeAndClassicBucketsOverHTTP scrapes a promhttp handler twice, once asking
// for the delimited protobuf format (native histograms of schema 3, whose buckets are a factor
// 2^(1/8) apart, with the classic buckets beside them) and once for the text format (classic
// le buckets, each at most a factor of 2 above the one before, ending with +Inf).
func TestAdv5PromNativeAndClassicBucketsOverHTTP(t *testing.T) {
	p := crew.NewFunc(2, func(d time.Duration) { time.Sleep(d) }, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	for _, d := range []time.Duration{0, time.Microsecond, 100 * time.Microsecond, 2 * time.Millisecond} {
		if err := p.Invoke(d); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("http", p))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	get := func(accept string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp
	}

	// Protobuf: native buckets.
	resp := get(`application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`)
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	hists := 0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			break
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		hists++
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSchema() != 3 {
			t.Errorf("%s: native schema %d, want 3 (buckets a factor 2^(1/8) apart)", mf.GetName(), h.GetSchema())
		}
		if len(h.GetPositiveSpan()) == 0 && h.GetZeroCount() != h.GetSampleCount() {
			t.Errorf("%s: no native buckets over protobuf", mf.GetName())
		}
		if zt := h.GetZeroThreshold(); zt <= 0 || zt > math.Exp2(-19) {
			t.Errorf("%s: zero threshold %v, want about 2^-20 s", mf.GetName(), zt)
		}
		var native uint64 = h.GetZeroCount()
		for _, c := range advNative(h) {
			native += c
		}
		if native != h.GetSampleCount() {
			t.Errorf("%s: native buckets hold %d of %d", mf.GetName(), native, h.GetSampleCount())
		}
		if len(h.GetBucket()) == 0 {
			t.Errorf("%s: no classic buckets beside the native ones", mf.GetName())
		}
	}
	resp.Body.Close()
	if hists != 2 {
		t.Fatalf("%d histograms over protobuf, want 2", hists)
	}

	// Text: classic buckets, at most a factor of 2 apart.
	resp = get("text/plain; version=0.0.4")
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"crew_task_wait_seconds", "crew_task_run_seconds"} {
		mf := mfs[name]
		if mf == nil {
			t.Fatalf("no %s in the text format", name)
		}
		h := mf.GetMetric()[0].GetHistogram()
		bs := h.GetBucket()
		if len(bs) < 2 {
			t.Fatalf("%s: %d classic buckets", name, len(bs))
		}
		if bs[0].GetUpperBound() > 2e-6 {
			t.Errorf("%s: first le=%v, want about a microsecond", name, bs[0].GetUpperBound())
		}
		if bs[len(bs)-1].GetUpperBound() < 3600 {
			t.Errorf("%s: last finite le=%v, want about an hour", name, bs[len(bs)-1].GetUpperBound())
		}
		if math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
			bs = bs[:len(bs)-1]
		}
		for i := 1; i < len(bs); i++ {
			if r := bs[i].GetUpperBound() / bs[i-1].GetUpperBound(); r > 2*(1+1e-12) || r <= 1 {
				t.Errorf("%s: le=%v follows le=%v, a factor %v", name, bs[i].GetUpperBound(), bs[i-1].GetUpperBound(), r)
			}
		}
		if h.GetSampleCount() != 4 {
			t.Errorf("%s: count %d, want 4", name, h.GetSampleCount())
		}
	}
}

// adv5HistsGrow returns an error if a histogram of pool in cur has a sum, a zero bucket, a
// native bucket or a classic cumulative count below its value in prev: each is a counter.
func adv5HistsGrow(prev, cur advScrape, pool string) error {
	for name, h := range cur.hists[pool] {
		was, ok := prev.hists[pool][name]
		if !ok {
			continue
		}
		if h.GetSampleSum() < was.GetSampleSum() || h.GetZeroCount() < was.GetZeroCount() {
			return fmt.Errorf("pool %q: %s sum %v or zero bucket %d went back from %v, %d", pool, name,
				h.GetSampleSum(), h.GetZeroCount(), was.GetSampleSum(), was.GetZeroCount())
		}
		now := advNative(h)
		for k, c := range advNative(was) {
			if now[k] < c {
				return fmt.Errorf("pool %q: %s native bucket %d went back from %d to %d", pool, name, k, c, now[k])
			}
		}
		before := map[float64]uint64{}
		for _, b := range was.GetBucket() {
			before[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		for _, b := range h.GetBucket() {
			if c := before[b.GetUpperBound()]; b.GetCumulativeCount() < c {
				return fmt.Errorf("pool %q: %s le=%v went back from %d to %d", pool, name, b.GetUpperBound(), c, b.GetCumulativeCount())
			}
		}
	}
	return nil
}

// TestAdv5PromScrapesDuringStormsNeverGoBack scrapes a pool with sampled histograms, its
// sub-pool and a Keyed on it (a crewtest.Storm), from two goroutines, while submitters put on
// them tasks that return, panic(nil) and call runtime.Goexit and another goroutine pauses,
// resumes and resizes them, then StopNow ends the pool mid-storm: every scrape succeeds, is
// consistent (accepted = ended + running + waiting, sampled counts a multiple of n, wait count
// at least the run count), no counter goes backwards, and once stopped the scrapes stay where
// they are.
func TestAdv5PromScrapesDuringStormsNeverGoBack(t *testing.T) {
	const n = 4
	rounds := crewtest.Scale(300, 100)
	st := crewtest.NewStorm(t, n)
	root := st.Root
	srcs := map[string]prom.StatsSource{"root": root, "sub": st.Sub, "keyed": st.Keyed}
	reg := prometheus.NewRegistry()
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}

	check := func(prev, cur advScrape) error {
		for name := range srcs {
			if err := advConsistent(prev, cur, name, 3); err != nil {
				return err
			}
			if err := adv5HistsGrow(prev, cur, name); err != nil {
				return err
			}
			for hn, h := range cur.hists[name] {
				if h.GetSampleCount()%n != 0 {
					return fmt.Errorf("pool %q: %s count %d, not a multiple of %d", name, hn, h.GetSampleCount(), n)
				}
			}
		}
		return nil
	}
	stop := crewtest.Watch(t, 2, 20, func(int) func() error { return adv5Scraper(reg, check) })
	st.Run(rounds)
	afterStop := adv5Scrape(t, reg)
	crewtest.Await(t, root, "the stopped pool to drain", func(s crew.Stats) bool { return s.Running == 0 && s.Waiting == 0 })
	stop()
	last := adv5Scrape(t, reg)
	if err := check(afterStop, last); err != nil {
		t.Error(err)
	}
	for name, src := range srcs {
		s := src.Stats()
		adv5WaitCountsRunCount(t, name, s)
		if advEnded(s) != s.Accepted {
			t.Errorf("%s: stopped and drained, but Stats %+v do not add up", name, s)
		}
		if err := advMatches(last, name, s); err != nil {
			t.Error(err)
		}
	}
}

// adv5Scraper returns a check for crewtest.Watch that scrapes reg and passes check the scrape
// before and the scrape now (an empty one the first time).
func adv5Scraper(reg prometheus.Gatherer, check func(prev, cur advScrape) error) func() error {
	var prev advScrape
	return func() error {
		cur, err := advGather(reg)
		if err == nil {
			err = check(prev, cur)
		}
		prev = cur
		return err
	}
}

// adv5WaitCountsRunCount fails t unless the drained source name's wait histogram, if it has
// one, counts as many tasks as its run histogram: every task that started has finished.
func adv5WaitCountsRunCount(t *testing.T, name string, s crew.Stats) {
	t.Helper()
	if s.WaitTime != nil && s.WaitTime.Count != s.RunTime.Count {
		t.Errorf("%s: drained, but the wait histogram counts %d and the run histogram %d (every task that started has finished)", name, s.WaitTime.Count, s.RunTime.Count)
	}
}

// TestAdv5PromKeyedStatsExportEveryLoss exports a Keyed's own Stats and checks, after the known
// traffic of crewtest.KeyedLosses, its accepted, rejected (full keyed queue), canceled (ended
// context), completed, panicked (panic(nil)), returned (StopNow on the pool) tasks and the
// pool's limit and pause.
func TestAdv5PromKeyedStatsExportEveryLoss(t *testing.T) {
	l := crewtest.NewKeyedLosses(t)
	k := l.Keyed
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("keyed", k), prom.NewCollector("pool", l.Pool))
	l.Run(t, func() {
		adv5Want(t, adv5Scrape(t, reg), "keyed", map[string]float64{"crew_pool_paused": 1, "crew_tasks_waiting": 2, "crew_workers_max": 1})
	})
	sc := adv5Scrape(t, reg)
	adv5Want(t, sc, "keyed", map[string]float64{
		"crew_tasks_accepted_total":   5,
		"crew_tasks_completed_total":  2, // the blocker and the Goexit
		"crew_tasks_panicked_total":   1,
		"crew_tasks_rejected_total":   1,
		"crew_tasks_canceled_total":   1,
		"crew_tasks_returned_total":   2,
		"crew_tasks_discarded_total":  0,
		"crew_tasks_skipped_total":    0,
		"crew_tasks_caller_ran_total": 0,
		"crew_workers_idle":           0,
		"crew_tasks_running":          0,
		"crew_tasks_waiting":          0,
	})
	if err := advMatches(sc, "keyed", k.Stats()); err != nil {
		t.Error(err)
	}
}

// TestAdv5PromCollectorOfAStoppedPoolScrapesItsFinalValues: a collector used after its pool
// stopped keeps scraping the pool's final values, on a pedantic registry with constant labels
// and histograms, scrape after scrape; unregistered and registered again it reads the same.
func TestAdv5PromCollectorOfAStoppedPoolScrapesItsFinalValues(t *testing.T) {
	p := crewtest.StoppedPool(t)
	if err := p.Submit(func() {}); err == nil {
		t.Fatal("Submit after StopAndWait accepted")
	}
	reg := prometheus.NewPedanticRegistry()
	c := prom.NewCollector("stopped", p, prom.WithConstLabels(prometheus.Labels{"service": "adv5"}))
	reg.MustRegister(c)
	var first advScrape
	for i := range 3 {
		sc := adv5Scrape(t, reg)
		if err := advMatches(sc, "stopped", p.Stats()); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = sc
			continue
		}
		if err := advConsistent(first, sc, "stopped", 2); err != nil {
			t.Fatal(err)
		}
	}
	adv5Want(t, first, "stopped", map[string]float64{
		"crew_tasks_accepted_total": 10, "crew_tasks_completed_total": 6, "crew_tasks_panicked_total": 4,
		"crew_tasks_running": 0, "crew_tasks_waiting": 0, "crew_workers_idle": 0, // no worker outlives StopAndWait
	})
	if !reg.Unregister(c) {
		t.Fatal("Unregister of a registered collector reported false")
	}
	if err := reg.Register(c); err != nil {
		t.Fatalf("registering the collector again: %v", err)
	}
	sc := adv5Scrape(t, reg)
	if err := advMatches(sc, "stopped", p.Stats()); err != nil {
		t.Fatal(err)
	}
}

// TestAdv5PromEveryRefusalCountsInExactlyOneCounter: refusals of every kind, read back from a
// scrape: WithMaxWait expiring, a submitter over WithMaxBlocked and a TrySubmit on a full
// queue count in rejected; a submit whose context ends while it waits, and one made with an
// ended context, in canceled; ErrStopped, ErrNilTask and ErrTooHeavy in neither. None of
// them is accepted.
func TestAdv5PromEveryRefusalCountsInExactlyOneCounter(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxWait(20*time.Millisecond), crew.WithMaxBlocked(1))
	defer p.StopAndWait()
	sub := p.Sub(1)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("refusals", p))
	release := crewtest.Hold(t, "the blocker", p.Submit)
	if err := p.Submit(func() {}); err != nil { // fills the queue
		t.Fatal(err)
	}
	if err := p.Submit(func() {}); err != crew.ErrQueueFull { // WithMaxWait expires
		t.Fatalf("Submit past WithMaxWait = %v, want ErrQueueFull", err)
	}
	if p.TrySubmit(func() {}) {
		t.Fatal("TrySubmit accepted on a full queue")
	}
	// One submitter waits with a context that then ends; while it waits, another is over
	// WithMaxBlocked(1).
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() { waiting <- p.SubmitContext(ctx, func() {}) }()
	time.Sleep(2 * time.Millisecond) // let it reach the queue; the check below tolerates either order
	over := p.Submit(func() {})
	cancel()
	var waited error
	select {
	case waited = <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting submitter never returned")
	}
	if waited == nil || over == nil {
		t.Fatalf("SubmitContext = %v, the submit beside it = %v; want both refused", waited, over)
	}
	if err := p.SubmitContext(ctx, func() {}); err == nil { // made with an ended context
		t.Fatal("SubmitContext with an ended context accepted")
	}
	if err := p.Submit(nil); err != crew.ErrNilTask {
		t.Fatalf("Submit(nil) = %v", err)
	}
	if err := p.SubmitN(2, func() {}); err != crew.ErrTooHeavy {
		t.Fatalf("SubmitN(2) on New(1) = %v", err)
	}
	if err := sub.SubmitN(2, func() {}); err != crew.ErrTooHeavy {
		t.Fatalf("SubmitN(2) on a sub-pool of one = %v", err)
	}
	release <- struct{}{}
	p.Wait()
	p.StopAndWait() // Stop alone lets the idle worker leave between the scrape and Stats below
	if err := p.Submit(func() {}); err != crew.ErrStopped {
		t.Fatalf("Submit after Stop = %v", err)
	}
	sc := adv5Scrape(t, reg)
	// Rejected: MaxWait, TrySubmit, and whichever of the two concurrent submits was refused
	// for the queue; Canceled: the other of those (its context ended) and the ended context.
	rej, can := sc.values["refusals"]["crew_tasks_rejected_total"], sc.values["refusals"]["crew_tasks_canceled_total"]
	if rej+can != 5 || rej < 3 || can < 1 {
		t.Errorf("rejected %v + canceled %v, want 5 refusals in all (at least 3 and 1)", rej, can)
	}
	adv5Want(t, sc, "refusals", map[string]float64{"crew_tasks_accepted_total": 2, "crew_tasks_completed_total": 2})
	if err := advMatches(sc, "refusals", p.Stats()); err != nil {
		t.Error(err)
	}
}

// TestAdv5PromAdaptiveLimitTimesEveryTaskDespiteSampling: WithLatencySample has no effect with
// WithAdaptiveLimit, so the scraped histograms count every task once, and the limit scraped
// stays between the adaptive minimum and the ceiling.
func TestAdv5PromAdaptiveLimitTimesEveryTaskDespiteSampling(t *testing.T) {
	const tasks = 45
	p := crew.New(4, crew.WithAdaptiveLimit(2), crew.WithLatencyHistograms(), crew.WithLatencySample(32))
	defer p.StopAndWait()
	sc := adv5EveryTaskTimed(t, p, "adaptive", tasks, func() { time.Sleep(50 * time.Microsecond) })
	if m := sc.values["adaptive"]["crew_workers_max"]; m < 2 || m > 4 {
		t.Errorf("crew_workers_max = %v, want within [2, 4]", m)
	}
}

// TestAdv5PromScrapeRightAfterWaitShowsNothingRunning: Stats.Running "is 0 once Pool.Wait has
// returned with nothing queued", so a scrape made right after Wait, without polling, reads
// no running and no waiting task, and every accepted task ended, round after round of tasks
// that return, panic(nil), call runtime.Goexit or run on their submitter, on a pool, its
// sub-pool and a Keyed.
func TestAdv5PromScrapeRightAfterWaitShowsNothingRunning(t *testing.T) {
	root := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithLatencyHistograms())
	k := crew.NewKeyed[int](root)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("root", root), prom.NewCollector("sub", sub), prom.NewCollector("keyed", k))
	rounds := crewtest.Scale(100, 30)
	for r := range rounds {
		var submitters sync.WaitGroup
		for i := range 8 {
			task := crewtest.Mix(r + i)
			submitters.Add(1)
			go func() { // a caller-run Goexit ends this goroutine, not the test's
				defer submitters.Done()
				switch i % 3 {
				case 0:
					_ = root.Submit(task)
				case 1:
					_ = sub.Submit(task)
				case 2:
					_ = k.Submit(i%2, task)
				}
			}()
		}
		submitters.Wait()
		advWithin(t, 10*time.Second, "the waits", func() {
			k.Wait()
			sub.Wait()
			root.Wait()
		})
		sc := adv5Scrape(t, reg)
		for _, name := range []string{"root", "sub", "keyed"} {
			v := sc.values[name]
			ended := v["crew_tasks_completed_total"] + v["crew_tasks_panicked_total"] + v["crew_tasks_discarded_total"] +
				v["crew_tasks_returned_total"] + v["crew_tasks_skipped_total"]
			if v["crew_tasks_running"] != 0 || v["crew_tasks_waiting"] != 0 || ended != v["crew_tasks_accepted_total"] {
				t.Fatalf("round %d, right after Wait: %s running %v, waiting %v, ended %v of %v accepted", r, name,
					v["crew_tasks_running"], v["crew_tasks_waiting"], ended, v["crew_tasks_accepted_total"])
			}
		}
	}
}

// TestAdv5PromWorkersMaxFollowsGOMAXPROCSUnderCPUs: a pool made with crew.CPUs reads
// GOMAXPROCS again at most once a second while Stats is called, so scrapes alone (no
// submits) see crew_workers_max follow a change of GOMAXPROCS within a few seconds.
func TestAdv5PromWorkersMaxFollowsGOMAXPROCSUnderCPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the once-a-second reading of GOMAXPROCS")
	}
	was := runtime.GOMAXPROCS(0)
	p := crew.New(crew.CPUs)
	defer p.StopAndWait()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("cpus", p))
	sc := adv5Scrape(t, reg)
	if got := sc.values["cpus"]["crew_workers_max"]; got != float64(was) {
		t.Fatalf("crew_workers_max = %v, GOMAXPROCS is %d", got, was)
	}
	want := was + 3
	runtime.GOMAXPROCS(want)
	defer runtime.GOMAXPROCS(was)
	deadline := time.Now().Add(5 * time.Second)
	for {
		sc := adv5Scrape(t, reg)
		if sc.values["cpus"]["crew_workers_max"] == float64(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("crew_workers_max = %v 5 s after GOMAXPROCS became %d", sc.values["cpus"]["crew_workers_max"], want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAdv5PromScrapesStayConsistentWhereEveryFeatureMeets scrapes, from two goroutines, a
// pool and two prioritized sub-pools (one rate limited, one under CallerRuns) while
// submitters use every door at once (plain and weighted tasks, futures some of which are
// canceled, groups whose context ends, keyed tasks) with tasks that panic(nil) or call
// runtime.Goexit, a churner pauses, resumes and resizes, and a Shutdown whose context has
// ended finally gives up: every scrape is consistent and monotonic, running never exceeds
// the largest limit the pool had, and once drained each pool's accepted tasks all ended.
func TestAdv5PromScrapesStayConsistentWhereEveryFeatureMeets(t *testing.T) {
	rounds := crewtest.Scale(150, 50)
	root := crew.New(4, crew.WithQueueSize(16), crew.WithLatencyHistograms(), crew.WithLatencySample(2),
		crew.WithPanicHandler(func(any, []byte) {}))
	defer root.StopAndWait()
	hi := root.Sub(2, crew.WithPriority(2), crew.WithRateLimit(20000, 50), crew.WithLatencyHistograms())
	lo := root.Sub(3, crew.WithPriority(1), crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns))
	k := crew.NewKeyed[int](hi)
	srcs := map[string]prom.StatsSource{"root": root, "hi": hi, "lo": lo, "keyed": k}
	reg := prometheus.NewRegistry()
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	task := func(i int) func() {
		return func() {
			switch i % 5 {
			case 1:
				panic(nil)
			case 2:
				runtime.Goexit()
			case 3:
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	stop := crewtest.Watch(t, 2, 0, func(int) func() error {
		return adv5Scraper(reg, func(prev, cur advScrape) error {
			for name := range srcs {
				if err := advConsistent(prev, cur, name, 4); err != nil {
					return err
				}
				if err := adv5HistsGrow(prev, cur, name); err != nil {
					return err
				}
			}
			return nil
		})
	})
	door := func(g int) func() {
		return func() {
			for i := range rounds {
				switch g {
				case 0:
					_ = root.Submit(task(i))
				case 1:
					if i%3 == 0 {
						_ = root.SubmitN(2, task(i))
					} else {
						_ = hi.Submit(task(i))
					}
				case 2:
					<-crewtest.Go(func() { _ = lo.Submit(task(i)) }) // a caller-run Goexit ends that goroutine only
				case 3:
					f := crew.GoContext(context.Background(), lo, func(context.Context) (int, error) { task(i)(); return 0, nil })
					if i%2 == 0 {
						f.Cancel()
					}
				case 4:
					ctx, cancel := context.WithCancel(context.Background())
					grp, _ := hi.GroupAll(ctx)
					grp.Go(func(context.Context) error { task(i)(); return nil })
					if i%2 == 0 {
						cancel()
					}
					_ = grp.Wait()
					cancel()
				case 5:
					_ = k.Submit(i%4, task(i))
				}
			}
		}
	}
	churn := func() {
		for i := range rounds / 5 {
			root.Pause()
			lo.Resize(1 + i%3)
			hi.Pause()
			root.Resume()
			root.Resize(2 + i%3)
			hi.Resume()
			runtime.Gosched()
		}
		root.Resize(4)
	}
	advWithin(t, 20*time.Second, "the storm", func() {
		crewtest.Concurrently(door(0), door(1), door(2), door(3), door(4), door(5), churn)
	})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_ = root.Shutdown(ended)
	advWithin(t, 10*time.Second, "StopAndWait", root.StopAndWait)
	stop()
	sc := adv5Scrape(t, reg)
	for name, src := range srcs {
		s := src.Stats()
		adv5WaitCountsRunCount(t, name, s)
		if s.Running != 0 || s.Waiting != 0 || advEnded(s) != s.Accepted {
			t.Errorf("%s: drained, but Stats %+v do not add up", name, s)
		}
		if err := advMatches(sc, name, s); err != nil {
			t.Error(err)
		}
	}
}

// TestAdv5PromSampledKeyedAndFuncPoolTasksCountInMultiplesOfN: "Tasks of a Keyed on the pool
// are sampled alike", and a FuncPool's invocations too: with only keyed tasks on a sampled
// pool, and on a sampled FuncPool, the scraped histogram counts are multiples of n, never
// above n times the tasks, and the counters exact.
func TestAdv5PromSampledKeyedAndFuncPoolTasksCountInMultiplesOfN(t *testing.T) {
	const n, tasks = 4, 240
	p := crew.New(2, crew.WithLatencyHistograms(), crew.WithLatencySample(n), crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	fp := crew.NewFunc(2, func(i int) {
		if i%3 == 1 {
			panic(nil)
		}
	}, crew.WithLatencyHistograms(), crew.WithLatencySample(n), crew.WithPanicHandler(func(any, []byte) {}))
	defer fp.StopAndWait()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("pool", p), prom.NewCollector("keyed", k), prom.NewCollector("func", fp))
	for i := range tasks {
		if err := k.Submit(i%5, func() {
			if i%3 == 2 {
				runtime.Goexit()
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := fp.Invoke(i); err != nil {
			t.Fatal(err)
		}
	}
	advWithin(t, 10*time.Second, "the waits", func() { k.Wait(); p.Wait(); fp.Wait() })
	sc := advQuietMatch(t, reg, map[string]prom.StatsSource{"pool": p, "keyed": k, "func": fp})
	adv5Want(t, sc, "keyed", map[string]float64{"crew_tasks_accepted_total": tasks, "crew_tasks_completed_total": tasks})
	adv5Want(t, sc, "func", map[string]float64{"crew_tasks_accepted_total": tasks, "crew_tasks_panicked_total": tasks / 3})
	for _, pool := range []string{"pool", "func"} {
		for _, hn := range advHistNames {
			h := sc.hists[pool][hn.name]
			if h == nil {
				t.Fatalf("%s: no %s", pool, hn.name)
			}
			if c := h.GetSampleCount(); c%n != 0 || c == 0 || c > n*tasks {
				t.Errorf("%s: %s counts %d, want a positive multiple of %d at most %d", pool, hn.name, c, n, n*tasks)
			}
		}
	}
	if sc.hists["keyed"] != nil {
		t.Errorf("a Keyed's collector exported histograms: %v", sc.hists["keyed"])
	}
}

// TestAdv5PromHistogramsCountExactlyTheTasksThatRanUnderChurn: without sampling, "WaitTime
// counts every task that started, RunTime every task that finished": on a pool with no
// sub-pool or Keyed, after a storm of plain tasks and GoContext functions (some canceled)
// that return, panic(nil) or call runtime.Goexit, through CallerRuns, while another goroutine
// pauses, resumes and resizes it, and a StopNow at the end, the drained pool's scraped
// histograms both count exactly completed + panicked: a task a pause gave back is timed once.
func TestAdv5PromHistogramsCountExactlyTheTasksThatRanUnderChurn(t *testing.T) {
	rounds := crewtest.Scale(200, 60)
	p := crew.New(3, crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("churn", p))
	submitter := func(g int) func() {
		return func() {
			for i := range rounds {
				<-crewtest.Go(func() { // a caller-run Goexit ends that goroutine only
					if g == 2 {
						f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { crewtest.Mix(i)(); return 0, nil })
						if i%3 == 0 {
							f.Cancel()
						}
						return
					}
					_ = p.Submit(crewtest.Mix(i))
				})
			}
		}
	}
	churn := func() {
		for i := range rounds / 5 {
			p.Pause()
			p.Resize(1 + i%3)
			p.Resume()
			runtime.Gosched()
		}
	}
	advWithin(t, 20*time.Second, "the storm", func() {
		crewtest.Concurrently(submitter(0), submitter(1), submitter(2), churn)
	})
	p.StopNow()
	crewtest.Await(t, p, "the pool to drain", func(s crew.Stats) bool { return s.Running == 0 && s.Waiting == 0 })
	sc := advQuietMatch(t, reg, map[string]prom.StatsSource{"churn": p})
	v := sc.values["churn"]
	ran := uint64(v["crew_tasks_completed_total"] + v["crew_tasks_panicked_total"])
	for _, hn := range advHistNames {
		if c := sc.hists["churn"][hn.name].GetSampleCount(); c != ran {
			t.Errorf("%s counts %d, %d tasks ran (completed + panicked)", hn.name, c, ran)
		}
	}
}
