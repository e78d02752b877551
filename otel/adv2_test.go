package crewotel_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// adv2Await waits until ch is closed, failing t after 10 s.
func adv2Await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out after 10 s waiting for %s", what)
	}
}

// adv2HookCounts collects r once and returns the count of each explicit-bucket histogram
// that crewotel.Hooks records, by name.
func adv2HookCounts(t *testing.T, r *sdkmetric.ManualReader) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, dp := range h.DataPoints {
					out[m.Name] += dp.Count
				}
			}
		}
	}
	return out
}

// TestAdv2CollectionAfterKnownTrafficOfOnePoolReadsEveryValueBack proves the package doc and
// crew's Stats docs through a collection: after known traffic on one pool (a caller-run
// task, a refusal, an ended context, a panic, a canceled future counted as skipped, a paused
// backlog that StopNow returns), every instrument reads back the value the traffic implies,
// counted by hand; the exponential histograms of Histograms and the explicit ones of Hooks
// both count the four tasks that started, the caller-run one included. A stopped pool reads
// back the same values.
func TestAdv2CollectionAfterKnownTrafficOfOnePoolReadsEveryValueBack(t *testing.T) {
	hookMeter, hookReader := newMeter(t)
	hooks, err := crewotel.Hooks(hookMeter, "one")
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithHooks(hooks), crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	r := exportAll(t, "one", p)
	set := attribute.NewSet(attribute.String("pool", "one"))
	attrs := set.Encoded(attribute.DefaultEncoder())
	started, release := make(chan struct{}), make(chan struct{})
	block := func() { started <- struct{}{}; <-release }

	if err := p.Submit(block); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := p.Submit(func() { panic("planned") }); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(func() {}); err != nil { // the queue is full: runs here
		t.Fatal(err)
	}
	if p.TrySubmit(func() {}) {
		t.Fatal("TrySubmit accepted into a full queue")
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(ended, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with an ended context = %v", err)
	}
	release <- struct{}{}
	adv2Await(t, "Wait", crewtest.Go(p.Wait))
	if err := p.Submit(block); err != nil {
		t.Fatal(err)
	}
	<-started
	f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 0, nil })
	if !f.Cancel() {
		t.Fatal("Cancel of a queued function reported false")
	}
	release <- struct{}{}
	adv2Await(t, "Wait", crewtest.Go(p.Wait))
	p.Pause()
	if err := p.Submit(func() { t.Error("a task StopNow returned ran") }); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"crew.workers.max":        1,
		"crew.pool.paused":        1,
		"crew.tasks.running":      0,
		"crew.tasks.waiting":      1,
		"crew.tasks.accepted":     6,
		"crew.tasks.completed":    3,
		"crew.tasks.panicked":     1,
		"crew.tasks.rejected":     1,
		"crew.tasks.canceled":     1,
		"crew.tasks.discarded":    0,
		"crew.tasks.caller_ran":   1,
		"crew.tasks.returned":     0,
		"crew.tasks.skipped":      1,
		"crew.task.wait.duration": 4,
		"crew.task.run.duration":  4,
	}
	check := func(when string) {
		t.Helper()
		got := collect(t, r)
		for name, w := range want {
			if g, ok := got[point{name, attrs}]; !ok || g != w {
				t.Errorf("%s: %s = %d (present %v), want %d", when, name, g, ok, w)
			}
		}
	}
	check("paused")
	if back := p.StopNow(); len(back) != 1 {
		t.Fatalf("StopNow returned %d tasks, want the paused one", len(back))
	}
	adv2Await(t, "StopAndWait", crewtest.Go(p.StopAndWait))
	want["crew.tasks.waiting"], want["crew.tasks.returned"], want["crew.workers.idle"] = 0, 1, 0
	want["crew.pool.paused"] = map[bool]int64{true: 1}[p.Stats().Paused]
	check("after StopAndWait")
	check("a second collection")
	hc := adv2HookCounts(t, hookReader)
	if hc["crew.task.wait.duration"] != 4 || hc["crew.task.run.duration"] != 4 {
		t.Errorf("the hooks' histograms count %v, want 4 each", hc)
	}
}

// TestAdv2AnUnreferencedPoolStillReportsItsLastValues proves Observe's and Histograms' docs
// (one snapshot per collection, from the source given): a pool that nothing but the meter's
// callback refers to, never stopped, whose workers have exited idle, reports the same values
// after garbage collections; its histograms count the keyed tasks it ran, not their turns.
func TestAdv2AnUnreferencedPoolStillReportsItsLastValues(t *testing.T) {
	var r *sdkmetric.ManualReader
	func() {
		p := crew.New(2, crew.WithIdleTimeout(time.Millisecond), crew.WithLatencyHistograms(),
			crew.WithPanicHandler(func(any, []byte) {}))
		k := crew.NewKeyed[int](p)
		r = exportAll(t, "gone", p)
		for i := range 5 {
			if err := k.Submit(i%2, func() {
				if i == 3 {
					panic("planned")
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		adv2Await(t, "Keyed.Wait", crewtest.Go(k.Wait))
		adv2Await(t, "Wait", crewtest.Go(p.Wait))
		deadline := time.Now().Add(10 * time.Second)
		for p.Stats().Idle != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the idle workers did not exit")
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for range 2 {
		runtime.GC()
	}
	set := attribute.NewSet(attribute.String("pool", "gone"))
	attrs := set.Encoded(attribute.DefaultEncoder())
	got := collect(t, r)
	for name, w := range map[string]int64{
		"crew.workers.idle":       0,
		"crew.tasks.running":      0,
		"crew.tasks.waiting":      0,
		"crew.task.wait.duration": 5, // the keyed tasks, not the turns
		"crew.task.run.duration":  5,
	} {
		if g, ok := got[point{name, attrs}]; !ok || g != w {
			t.Errorf("%s = %d (present %v), want %d", name, g, ok, w)
		}
	}
	acc, done := got[point{"crew.tasks.accepted", attrs}], got[point{"crew.tasks.completed", attrs}]+got[point{"crew.tasks.panicked", attrs}]
	if acc == 0 || acc != done {
		t.Errorf("the pool's turns do not add up: %d accepted, %d ended", acc, done)
	}
}
