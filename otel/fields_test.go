package crewotel_test

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	crewotel "github.com/crewgo/crew/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// exportAll registers src under name both ways a pool is exported, Observe for the counters
// and gauges and Histograms for the histograms, and returns the reader that collects them.
func exportAll(t *testing.T, name string, srcs ...crewotel.StatsSource) *sdkmetric.ManualReader {
	t.Helper()
	var ropts []sdkmetric.ManualReaderOption
	for _, src := range srcs {
		ropts = append(ropts, sdkmetric.WithProducer(crewotel.Histograms(name, src)))
	}
	r := sdkmetric.NewManualReader(ropts...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, src := range srcs {
		reg, err := crewotel.Observe(mp.Meter("crewotel_test"), name, src)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Unregister() })
	}
	return r
}

// produce collects once from a reader that has p and nothing else.
func produce(t *testing.T, p sdkmetric.Producer) metricdata.ResourceMetrics {
	t.Helper()
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// TestExportsEveryStatsField walks crew.Stats by reflection and, for each field in turn,
// collects a snapshot that has only that field set, through Observe and Histograms: some
// instrument must report it, and no instrument may report two fields. A field added to
// Stats without an instrument fails here.
func TestExportsEveryStatsField(t *testing.T) {
	crewtest.CheckEveryStatsField(t, func(s crew.Stats) map[string]float64 {
		values := map[string]float64{}
		for p, v := range collect(t, exportAll(t, "fields", fixedSource{s})) {
			values[p.metric] = float64(v)
		}
		return values
	})
}

// TestExportsEveryFieldAfterKnownTraffic collects from pools after traffic that sets every
// counter but Skipped: returns, panics, a drop, a refusal, an ended context, a caller-run, a
// pause and a StopNow.
func TestExportsEveryFieldAfterKnownTraffic(t *testing.T) {
	tr := crewtest.KnownTraffic(t)
	drop := exportAll(t, "dropping", tr.Dropping)
	callerRuns := exportAll(t, "callerruns", tr.CallerRuns)
	check := func(what string, r *sdkmetric.ManualReader, pool string, s crew.Stats, hists map[string]int64) {
		t.Helper()
		got := collect(t, r)
		want := points("pool="+pool, s)
		for name, n := range hists {
			want[point{name, "pool=" + pool}] = n
		}
		// Running and Idle are left out: how soon a worker that finished counts as idle is
		// not part of Wait's contract.
		for _, n := range []string{"crew.tasks.running", "crew.workers.idle"} {
			delete(got, point{n, "pool=" + pool})
			delete(want, point{n, "pool=" + pool})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v\nwant %v", what, got, want)
		}
	}
	hists := map[string]int64{"crew.task.wait.duration": int64(tr.WaitCount), "crew.task.run.duration": int64(tr.RunCount)}
	check("paused", drop, "dropping", tr.WantDropping, hists)
	check("caller-runs", callerRuns, "callerruns", tr.WantCallerRuns, nil)
	check("after StopNow", drop, "dropping", tr.StopNow(), hists)
}

// TestHistogramsHandsOnThePoolsBuckets checks that each bucket of a pool's histogram lands in
// the exponential bucket with the same boundaries.
func TestHistogramsHandsOnThePoolsBuckets(t *testing.T) {
	h := *crewtest.RunTimeOf(t, 1)
	n := len(h.Counts)
	h.Counts = make([]uint64, n)
	h.Counts[0], h.Counts[5], h.Counts[100], h.Counts[n-1] = 1, 2, 4, 8
	h.Count, h.Sum = 15, 1.5
	rm := produce(t, crewotel.Histograms("buckets", fixedSource{crew.Stats{RunTime: &h}}))
	if len(rm.ScopeMetrics) != 1 || len(rm.ScopeMetrics[0].Metrics) != 1 {
		t.Fatalf("collected %+v, want the run time histogram alone", rm.ScopeMetrics)
	}
	m := rm.ScopeMetrics[0].Metrics[0]
	dp := m.Data.(metricdata.ExponentialHistogram[float64]).DataPoints[0]
	if m.Name != "crew.task.run.duration" || dp.Count != 15 || dp.Sum != 1.5 || dp.Scale != 3 {
		t.Fatalf("%s: count %d, sum %v, scale %d", m.Name, dp.Count, dp.Sum, dp.Scale)
	}
	if dp.ZeroThreshold != h.Buckets[1] || dp.ZeroCount != 1 {
		t.Errorf("zero bucket up to %v holds %d, want up to %v holding 1", dp.ZeroThreshold, dp.ZeroCount, h.Buckets[1])
	}
	base := math.Exp2(math.Exp2(-float64(dp.Scale)))
	got := map[[2]float64]uint64{}
	for i, c := range dp.PositiveBucket.Counts {
		if c > 0 {
			k := float64(dp.PositiveBucket.Offset) + float64(i)
			got[[2]float64{math.Pow(base, k), math.Pow(base, k+1)}] = c
		}
	}
	want := map[[2]float64]uint64{}
	for _, i := range []int{5, 100} {
		want[[2]float64{h.Buckets[i], h.Buckets[i+1]}] = h.Counts[i]
	}
	// The last bucket, above the last finite boundary, goes to the exponential bucket above it.
	last := h.Buckets[n-1]
	want[[2]float64{last, last * base}] = 8
	if len(got) != len(want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
	for w, c := range want {
		found := false
		for g, gc := range got {
			if math.Abs(g[0]/w[0]-1) < 1e-9 && math.Abs(g[1]/w[1]-1) < 1e-9 && gc == c {
				found = true
			}
		}
		if !found {
			t.Errorf("no bucket (%v, %v] holding %d in %v", w[0], w[1], c, got)
		}
	}
}

// TestHistogramsReportsNothingWithoutHistograms: a pool built without WithLatencyHistograms
// has no histograms to report.
func TestHistogramsReportsNothingWithoutHistograms(t *testing.T) {
	rm := produce(t, crewotel.Histograms("plain", fixedSource{crew.Stats{Accepted: 3}}))
	if len(rm.ScopeMetrics) != 0 {
		t.Fatalf("collected %+v, want nothing", rm.ScopeMetrics)
	}
}

// TestStatsFuncExportsAnyStatsSource exports the sum of two pools' Stats through a StatsFunc.
func TestStatsFuncExportsAnyStatsSource(t *testing.T) {
	sum := crewotel.StatsFunc(crewtest.SumOfTwo(t))
	want := points("pool=sum", crew.Stats{MaxWorkers: 3, Accepted: 3, Completed: 3})
	if got := collect(t, exportAll(t, "sum", sum)); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestHistogramsValidatesArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"empty name", func() { crewotel.Histograms("", fixedSource{}) }, "crewotel: Histograms: name must not be empty"},
		{"nil source", func() { crewotel.Histograms("x", nil) }, "crewotel: Histograms: src must not be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if v := recover(); v != tc.want {
					t.Fatalf("panic %v, want %q", v, tc.want)
				}
			}()
			tc.call()
		})
	}
}
