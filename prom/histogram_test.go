package prom_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestHistogramsAreScrapedWithClassicAndNativeBuckets(t *testing.T) {
	p := crew.NewFunc(2, func(d time.Duration) { time.Sleep(d) }, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	const n = 40
	for i := range n {
		if err := p.Invoke(time.Duration(i%4) * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()

	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("timed", p))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, mf := range mfs {
		name := mf.GetName()
		if name != "crew_task_wait_seconds" && name != "crew_task_run_seconds" {
			continue
		}
		found++
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("%s is a %v", name, mf.GetType())
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != n {
			t.Errorf("%s counts %d tasks, want %d", name, h.GetSampleCount(), n)
		}
		// Classic: cumulative, increasing boundaries, about a microsecond to an hour.
		bs := h.GetBucket()
		if len(bs) < 10 || bs[0].GetUpperBound() > 1e-6 || bs[len(bs)-1].GetUpperBound() < 3600 {
			t.Fatalf("%s: %d classic buckets from %v to %v", name, len(bs), bs[0].GetUpperBound(), bs[len(bs)-1].GetUpperBound())
		}
		for i := 1; i < len(bs); i++ {
			if bs[i].GetUpperBound() <= bs[i-1].GetUpperBound() || bs[i].GetCumulativeCount() < bs[i-1].GetCumulativeCount() {
				t.Fatalf("%s: classic buckets not cumulative: %v", name, bs)
			}
			// At most a factor of 2 apart, so that a quantile read from them is off by less.
			if r := bs[i].GetUpperBound() / bs[i-1].GetUpperBound(); r > 2 {
				t.Fatalf("%s: le=%v follows le=%v, a factor of %v", name, bs[i].GetUpperBound(), bs[i-1].GetUpperBound(), r)
			}
		}
		if last := bs[len(bs)-1].GetCumulativeCount(); last > n {
			t.Errorf("%s: last classic bucket %d > %d", name, last, n)
		}
		// Native: schema 3, and its buckets with the zero bucket add up to the count.
		if h.GetSchema() != 3 || h.GetZeroThreshold() <= 0 || h.GetZeroThreshold() > 1e-6 {
			t.Fatalf("%s: schema %d, zero threshold %v", name, h.GetSchema(), h.GetZeroThreshold())
		}
		total, c := h.GetZeroCount(), int64(0)
		for _, d := range h.GetPositiveDelta() {
			c += d
			total += uint64(c)
		}
		if total != n {
			t.Errorf("%s: native buckets count %d, want %d", name, total, n)
		}
	}
	if found != 2 {
		t.Fatalf("found %d of the two histograms", found)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}

	// A scrape over HTTP in the text format, as a Prometheus server without native
	// histograms reads it.
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`crew_task_run_seconds_bucket{pool="timed",le="+Inf"} 40`,
		`crew_task_wait_seconds_count{pool="timed"} 40`,
		"# TYPE crew_task_run_seconds histogram",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("scrape lacks %q:\n%s", want, body)
		}
	}
}

func TestRunHistogramPutsEachTaskInTheRightClassicBucket(t *testing.T) {
	p := crew.NewFunc(1, func(d time.Duration) { time.Sleep(d) }, crew.WithLatencyHistograms())
	for range 3 {
		_ = p.Invoke(2 * time.Millisecond)
	}
	p.StopAndWait()
	h := p.Stats().RunTime
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector("one", p))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "crew_task_run_seconds" {
			continue
		}
		m := mf.GetMetric()[0].GetHistogram()
		if math.Abs(m.GetSampleSum()-h.Sum) > 1e-12 {
			t.Fatalf("sum %v, Stats says %v", m.GetSampleSum(), h.Sum)
		}
		for _, b := range m.GetBucket() {
			// A 2 ms sleep never takes less than 2^-9 s (1.95 ms), and on any machine
			// these tests run on less than 2^2 s.
			ub := b.GetUpperBound()
			if ub < math.Exp2(-9) && b.GetCumulativeCount() != 0 || ub >= 4 && b.GetCumulativeCount() != 3 {
				t.Fatalf("le=%v holds %d of three 2 ms tasks", ub, b.GetCumulativeCount())
			}
		}
		return
	}
	t.Fatal("no crew_task_run_seconds")
}
