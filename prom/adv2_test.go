package prom_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
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

// adv2Compare fails t unless the scrape's gauges and counters of pool are exactly want, by
// metric name; the names not in want are not checked.
func adv2Compare(t *testing.T, what string, got map[string]float64, want map[string]float64) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: %s = %v (present %v), want %v", what, name, g, ok, w)
		}
	}
}

// TestAdv2ScrapeAfterKnownTrafficOfOnePoolReadsEveryValueBack proves the package doc and
// crew's Stats docs through a scrape: after known traffic on one pool (a caller-run task, a
// refusal, an ended context, a panic, a canceled future counted as skipped, a paused backlog
// that StopNow returns), every gauge and counter reads back the value the traffic implies,
// counted by hand, and the histograms count the tasks that started. The scrape of a paused
// pool reports it paused; a stopped pool scrapes the same values after StopAndWait.
func TestAdv2ScrapeAfterKnownTrafficOfOnePoolReadsEveryValueBack(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("one", p))
	started, release := make(chan struct{}), make(chan struct{})
	block := func() { started <- struct{}{}; <-release }

	// Phase 1: a blocker runs, a panicking task waits, a task runs on its submitter, a
	// TrySubmit is refused, a submit with an ended context is canceled.
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

	// Phase 2: a future canceled while queued behind a blocker is skipped.
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

	// Phase 3: a paused backlog.
	p.Pause()
	ran := make(chan struct{}, 1)
	if err := p.Submit(func() { ran <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	sc, err := advGather(reg)
	if err != nil {
		t.Fatal(err)
	}
	adv2Compare(t, "paused", sc.values["one"], map[string]float64{
		"crew_pool_paused":            1,
		"crew_workers_max":            1,
		"crew_tasks_running":          0,
		"crew_tasks_waiting":          1,
		"crew_tasks_accepted_total":   6,
		"crew_tasks_completed_total":  3,
		"crew_tasks_panicked_total":   1,
		"crew_tasks_rejected_total":   1,
		"crew_tasks_canceled_total":   1,
		"crew_tasks_discarded_total":  0,
		"crew_tasks_caller_ran_total": 1,
		"crew_tasks_returned_total":   0,
		"crew_tasks_skipped_total":    1,
	})
	if back := p.StopNow(); len(back) != 1 {
		t.Fatalf("StopNow returned %d tasks, want the paused one", len(back))
	}
	adv2Await(t, "StopAndWait", crewtest.Go(p.StopAndWait))
	select {
	case <-ran:
		t.Fatal("a task StopNow returned ran")
	default:
	}
	want := map[string]float64{
		"crew_workers_max":            1,
		"crew_workers_idle":           0,
		"crew_tasks_running":          0,
		"crew_tasks_waiting":          0,
		"crew_tasks_accepted_total":   6,
		"crew_tasks_completed_total":  3,
		"crew_tasks_panicked_total":   1,
		"crew_tasks_rejected_total":   1,
		"crew_tasks_canceled_total":   1,
		"crew_tasks_discarded_total":  0,
		"crew_tasks_caller_ran_total": 1,
		"crew_tasks_returned_total":   1,
		"crew_tasks_skipped_total":    1,
	}
	for _, when := range []string{"after StopAndWait", "a second scrape"} {
		sc, err := advGather(reg)
		if err != nil {
			t.Fatal(err)
		}
		adv2Compare(t, when, sc.values["one"], want)
		if got, wantPaused := sc.values["one"]["crew_pool_paused"], p.Stats().Paused; got != map[bool]float64{true: 1}[wantPaused] {
			t.Errorf("%s: crew_pool_paused %v, Stats.Paused %v", when, got, wantPaused)
		}
		// Four tasks started and ended: two blockers, the panicking one and the caller-run one.
		for _, name := range []string{"crew_task_wait_seconds", "crew_task_run_seconds"} {
			h := sc.hists["one"][name]
			if h == nil || h.GetSampleCount() != 4 {
				t.Errorf("%s: %s counts %v, want 4", when, name, h.GetSampleCount())
			}
		}
	}
}

// TestAdv2AnUnreferencedPoolStillScrapesItsLastValues proves the Collector's doc (it holds
// no goroutine, and reads its source at each scrape): a pool that nothing but the registry
// refers to, never stopped, whose workers have exited idle, scrapes the same values after
// garbage collections; and a Keyed exported through StatsFunc reads back its own tasks.
func TestAdv2AnUnreferencedPoolStillScrapesItsLastValues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	func() {
		p := crew.New(2, crew.WithIdleTimeout(time.Millisecond), crew.WithLatencyHistograms(),
			crew.WithPanicHandler(func(any, []byte) {}))
		k := crew.NewKeyed[int](p)
		reg.MustRegister(prom.NewCollector("gone", p), prom.NewCollector("gonekeyed", prom.StatsFunc(k.Stats)))
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
	sc, err := advGather(reg)
	if err != nil {
		t.Fatal(err)
	}
	adv2Compare(t, "keyed", sc.values["gonekeyed"], map[string]float64{
		"crew_tasks_accepted_total":  5,
		"crew_tasks_completed_total": 4,
		"crew_tasks_panicked_total":  1,
		"crew_tasks_running":         0,
		"crew_tasks_waiting":         0,
	})
	adv2Compare(t, "pool", sc.values["gone"], map[string]float64{
		"crew_workers_idle":  0,
		"crew_tasks_running": 0,
		"crew_tasks_waiting": 0,
	})
	got := sc.values["gone"]
	if got["crew_tasks_accepted_total"] != got["crew_tasks_completed_total"]+got["crew_tasks_panicked_total"] || got["crew_tasks_accepted_total"] == 0 {
		t.Errorf("the pool's turns do not add up: %v", got)
	}
	// The pool's histograms count the keyed tasks, not the turns.
	for _, name := range []string{"crew_task_wait_seconds", "crew_task_run_seconds"} {
		if h := sc.hists["gone"][name]; h == nil || h.GetSampleCount() != 5 {
			t.Errorf("%s counts %v, want the 5 keyed tasks", name, h.GetSampleCount())
		}
	}
}
