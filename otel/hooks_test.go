package crewotel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestHooksRecordWaitAndRunHistogramsPerTask(t *testing.T) {
	meter, r := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "timed")
	if err != nil {
		t.Fatal(err)
	}
	p := crew.NewFunc(2, func(d time.Duration) { time.Sleep(d) }, crew.WithHooks(hooks))
	const n = 30
	for i := range n {
		if err := p.Invoke(time.Duration(i%3) * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	p.StopAndWait()

	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "crew.task.wait.duration" && m.Name != "crew.task.run.duration" {
				continue
			}
			found++
			if m.Unit != "s" {
				t.Errorf("%s unit %q, want s", m.Name, m.Unit)
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || len(h.DataPoints) != 1 {
				t.Fatalf("%s: %T with %v", m.Name, m.Data, m.Data)
			}
			dp := h.DataPoints[0]
			if pool, _ := dp.Attributes.Value("pool"); pool.AsString() != "timed" {
				t.Errorf("%s pool = %q", m.Name, pool.AsString())
			}
			var sum uint64
			for _, c := range dp.BucketCounts {
				sum += c
			}
			if dp.Count != n || sum != n {
				t.Errorf("%s: Count %d, buckets %d, want %d", m.Name, dp.Count, sum, n)
			}
			if b := dp.Bounds; len(b) < 10 || b[0] > 1e-6 || b[len(b)-1] < 3600 {
				t.Errorf("%s bounds %v, want about a microsecond to an hour", m.Name, b)
			}
			if m.Name == "crew.task.run.duration" && dp.Sum < 0.02 {
				t.Errorf("run time sum %v s, want at least the 20 ms slept", dp.Sum)
			}
		}
	}
	if found != 2 {
		t.Fatalf("found %d of the two histograms", found)
	}
}

// TestHooksCoexistWithTheUsersOwn: crewotel's hooks and a user's, given as two WithHooks
// options, both see every task.
func TestHooksCoexistWithTheUsersOwn(t *testing.T) {
	meter, r := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "both")
	if err != nil {
		t.Fatal(err)
	}
	var finished atomic.Int32
	p := crew.New(2, crew.WithHooks(hooks), crew.WithHooks(crew.Hooks{Finished: func(crew.TaskInfo) { finished.Add(1) }}))
	const n = 20
	for range n {
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	p.StopAndWait()
	if got := finished.Load(); got != n {
		t.Fatalf("the user's Finished hook saw %d tasks, want %d", got, n)
	}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "crew.task.run.duration" {
				continue
			}
			if h, ok := m.Data.(metricdata.Histogram[float64]); !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != n {
				t.Fatalf("%s: %v, want one data point counting %d tasks", m.Name, m.Data, n)
			}
			return
		}
	}
	t.Fatal("crew.task.run.duration not recorded")
}

func TestHooksValidatesArguments(t *testing.T) {
	meter, _ := newMeter(t)
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"empty name", func() { _, _ = crewotel.Hooks(meter, "") }, "crewotel: Hooks: name must not be empty"},
		{"nil meter", func() { _, _ = crewotel.Hooks(nil, "x") }, "crewotel: Hooks: meter must not be nil"},
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
