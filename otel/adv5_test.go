package crewotel_test

// Adversarial tests: Observe, Histograms and Hooks as an acceptance suite reads them (every
// Stats field and a Keyed's Stats after known traffic, sampled histograms, collections
// concurrent with storms), and the span per function of WithSpans where features meet:
// panic(nil), runtime.Goexit, waits that help, CallerRuns, task timeouts, sub-pools.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/internal/racetest"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// adv5Collect collects through r, failing t on an error.
func adv5Collect(t *testing.T, r sdkmetric.Reader) advCollection {
	t.Helper()
	c, err := advCollect(r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// adv5Want fails t unless pool's data points in c are exactly want, by instrument name.
func adv5Want(t *testing.T, c advCollection, pool string, want map[string]int64) {
	t.Helper()
	for name, w := range want {
		if g, ok := c.values[point{name, "pool=" + pool}]; !ok || g != w {
			t.Errorf("pool %q: %s = %d (present %v), want %d", pool, name, g, ok, w)
		}
	}
}

// adv5Tracing returns a tracer provider recording every span, shut down when t ends.
func adv5Tracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// adv5SpanHooks returns crewotel's hooks for pool name with spans from tp.
func adv5SpanHooks(t *testing.T, name string, tp trace.TracerProvider) crew.Hooks {
	t.Helper()
	meter, _ := newMeter(t)
	h, err := crewotel.Hooks(meter, name, crewotel.WithSpans(tp))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// adv5TracedPool returns a pool of limit workers made with opts and crewotel's hooks for
// pool name with spans, stopped when t ends; the recorder of its spans; and a context holding
// an open span named "request", which the caller ends.
func adv5TracedPool(t *testing.T, name string, limit int, opts ...crew.Option) (*crew.Pool, *tracetest.SpanRecorder, context.Context, trace.Span) {
	t.Helper()
	tp, rec := adv5Tracing(t)
	p := crew.New(limit, append(opts, crew.WithHooks(adv5SpanHooks(t, name, tp)))...)
	t.Cleanup(p.StopAndWait)
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	return p, rec, ctx, request
}

// adv5ObservedWithSpans returns a pool of limit workers made with opts and crewotel's Hooks
// with spans from tp, observed under name through the hooks' meter and stopped when t ends,
// and the reader that collects its metrics and the hooks' histograms.
func adv5ObservedWithSpans(t *testing.T, name string, tp trace.TracerProvider, limit int, opts ...crew.Option) (*crew.Pool, *sdkmetric.ManualReader) {
	t.Helper()
	meter, r := newMeter(t)
	hooks, err := crewotel.Hooks(meter, name, crewotel.WithSpans(tp))
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(limit, append(opts, crew.WithHooks(hooks))...)
	t.Cleanup(p.StopAndWait)
	adv5Observe(t, meter, name, p)
	return p, r
}

// adv5WantHookCounts fails t unless both histograms crewotel's Hooks recorded for pool in c
// count n tasks, what those are.
func adv5WantHookCounts(t *testing.T, c advCollection, pool string, n uint64, what string) {
	t.Helper()
	for _, hn := range advHists {
		if dp := c.expl[point{hn.name, "pool=" + pool}]; dp.Count != n {
			t.Errorf("hooks' %s counts %d, want %s", hn.name, dp.Count, what)
		}
	}
}

// adv5Observe observes src under name through meter until t ends.
func adv5Observe(t *testing.T, meter metric.Meter, name string, src crewotel.StatsSource) {
	t.Helper()
	reg, err := crewotel.Observe(meter, name, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
}

// adv5TaskSpans returns the ended crew.task spans of rec.
func adv5TaskSpans(rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "crew.task" {
			out = append(out, s)
		}
	}
	return out
}

// TestAdv5OtelEveryFieldReadsBackKnownTrafficWithPanicNilAndGoexit: after the traffic of
// crewtest.Losses, counted by hand (a task DiscardOldest dropped, a TrySubmit refused on a full
// queue, a submit with an ended context, a function skipped because its context ended while
// queued, a canceled future, tasks that panic(nil), panic and call runtime.Goexit, caller-run
// tasks of which one calls runtime.Goexit, a paused backlog that StopNow returns), every data
// point of two pools observed through one meter reads back the hand-counted value, and the
// Histograms producer counts the tasks that started and finished.
func TestAdv5OtelEveryFieldReadsBackKnownTrafficWithPanicNilAndGoexit(t *testing.T) {
	l := crewtest.NewLosses(t)
	p, q := l.Dropping, l.CallerRuns
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(crewotel.Histograms("dis", p)),
		sdkmetric.WithProducer(crewotel.Histograms("cr", q)))
	meter := advMeterProvider(t, r)
	for name, src := range map[string]*crew.Pool{"dis": p, "cr": q} {
		adv5Observe(t, meter, name, src)
	}
	l.Run(t, func() {
		adv5Want(t, adv5Collect(t, r), "dis", map[string]int64{"crew.pool.paused": 1, "crew.tasks.waiting": 1, "crew.tasks.running": 0})
	})
	c := adv5Collect(t, r)
	adv5Want(t, c, "dis", map[string]int64{
		"crew.workers.max": 1, "crew.tasks.running": 0, "crew.tasks.waiting": 0,
		"crew.tasks.accepted": 11, "crew.tasks.completed": 5, "crew.tasks.panicked": 2,
		"crew.tasks.rejected": 1, "crew.tasks.canceled": 1, "crew.tasks.discarded": 1,
		"crew.tasks.caller_ran": 0, "crew.tasks.returned": 1, "crew.tasks.skipped": 2,
	})
	adv5Want(t, c, "cr", map[string]int64{
		"crew.workers.max": 1, "crew.tasks.running": 0, "crew.tasks.waiting": 0, "crew.pool.paused": 0,
		"crew.tasks.accepted": 4, "crew.tasks.completed": 4, "crew.tasks.panicked": 0,
		"crew.tasks.rejected": 0, "crew.tasks.canceled": 0, "crew.tasks.discarded": 0,
		"crew.tasks.caller_ran": 2, "crew.tasks.returned": 0, "crew.tasks.skipped": 0,
	})
	for pool, n := range map[string]uint64{"dis": 7, "cr": 4} {
		for _, hn := range advHists {
			if dp, ok := c.exp[point{hn.name, "pool=" + pool}]; !ok || dp.Count != n {
				t.Errorf("pool %q: %s counts %d (present %v), want %d tasks", pool, hn.name, dp.Count, ok, n)
			}
		}
	}
	if err := advMatches(c, "dis", p.Stats(), true); err != nil {
		t.Error(err)
	}
	if err := advMatches(c, "cr", q.Stats(), true); err != nil {
		t.Error(err)
	}
	if got := l.Panics.Load(); got != 2 {
		t.Errorf("the panic handler got %d panics, want 2", got)
	}
}

// TestAdv5OtelSampledHistogramsCountInMultiplesOfN: under WithLatencySample(n) every count the
// Histograms producer reports (the data point's, the zero bucket's, each positive bucket's) is
// a multiple of n, and the counters stay exact.
func TestAdv5OtelSampledHistogramsCountInMultiplesOfN(t *testing.T) {
	const n = 8
	tasks := crewtest.Scale(800, 200)
	p := crewtest.SampledPool(t, n)
	r := exportAll(t, "sampled", p)
	crewtest.SubmitMix(t, p, tasks)
	c := adv5Collect(t, r)
	if err := advMatches(c, "sampled", p.Stats(), true); err != nil {
		t.Fatal(err)
	}
	adv5Want(t, c, "sampled", map[string]int64{
		"crew.tasks.accepted": int64(tasks), "crew.tasks.completed": int64(tasks - tasks/4), "crew.tasks.panicked": int64(tasks / 4),
	})
	for _, hn := range advHists {
		dp, ok := c.exp[point{hn.name, "pool=sampled"}]
		if !ok {
			t.Fatalf("no %s", hn.name)
		}
		if dp.Count%n != 0 || dp.Count == 0 || dp.ZeroCount%n != 0 {
			t.Errorf("%s: count %d, zero bucket %d; want multiples of %d, the count positive", hn.name, dp.Count, dp.ZeroCount, n)
		}
		for i, k := range dp.PositiveBucket.Counts {
			if k%n != 0 {
				t.Errorf("%s: bucket %d counts %d, want a multiple of %d", hn.name, int(dp.PositiveBucket.Offset)+i, k, n)
			}
		}
	}
}

// TestAdv5OtelHooksDisableSamplingAndCountEveryTaskOnce: WithLatencySample has no effect with
// hooks, so crewotel's Hooks and the pool's own histograms both count each task that ran
// exactly once (panic(nil), runtime.Goexit and caller-run ones included; a discarded and a
// skipped one not at all), and the Hooks' explicit buckets are at most a factor of 2 apart.
func TestAdv5OtelHooksDisableSamplingAndCountEveryTaskOnce(t *testing.T) {
	meter, r := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "hooked")
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithLatencySample(16), crew.WithHooks(hooks), crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	const plain = 21
	for i := range plain {
		task := func() {}
		switch i % 3 {
		case 1:
			task = func() { panic(nil) }
		case 2:
			task = func() { runtime.Goexit() }
		}
		if err := p.Submit(task); err != nil { // one at a time: none runs on this goroutine
			t.Fatal(err)
		}
		p.Wait()
	}
	// One caller-run task and one function skipped because its context ended while queued.
	release := crewtest.Hold(t, "the blocker", p.Submit)
	ctx, cancel := context.WithCancel(context.Background())
	skipped := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 0, nil })
	cancel()
	if err := p.Submit(func() {}); err != nil { // queue full: run by the caller
		t.Fatal(err)
	}
	release <- struct{}{}
	_, _ = skipped.Wait()
	crewtest.Await(t, p, "the skip", func(s crew.Stats) bool { return s.Skipped == 1 && s.Running == 0 && s.Waiting == 0 })
	const ran = plain + 2 // the blocker and the caller-run one
	s := p.Stats()
	if s.CallerRan != 1 || s.Completed+s.Panicked != ran {
		t.Fatalf("Stats %+v, want CallerRan 1 and %d tasks ended", s, ran)
	}
	if s.WaitTime.Count != ran || s.RunTime.Count != ran {
		t.Errorf("the pool's histograms count %d waits and %d runs, want %d each (no sampling with hooks)",
			s.WaitTime.Count, s.RunTime.Count, ran)
	}
	c := adv5Collect(t, r)
	for _, hn := range advHists {
		dp, ok := c.expl[point{hn.name, "pool=hooked"}]
		if !ok {
			t.Fatalf("hooks recorded no %s", hn.name)
		}
		if dp.Count != ran {
			t.Errorf("hooks' %s counts %d, want %d", hn.name, dp.Count, ran)
		}
		if err := advExplMatches(dp, *hn.of(s)); err != nil {
			t.Errorf("hooks' %s: %v", hn.name, err)
		}
		if len(dp.Bounds) == 0 || dp.Bounds[0] > 2e-6 || dp.Bounds[len(dp.Bounds)-1] < 3600 {
			t.Errorf("hooks' %s bounds %v, want about a microsecond to an hour", hn.name, dp.Bounds)
		}
		for i := 1; i < len(dp.Bounds); i++ {
			if f := dp.Bounds[i] / dp.Bounds[i-1]; f > 2*(1+1e-12) || f <= 1 {
				t.Errorf("hooks' %s: bound %v follows %v", hn.name, dp.Bounds[i], dp.Bounds[i-1])
			}
		}
	}
}

// TestAdv5OtelCollectionsDuringStormsNeverGoBack collects a pool with sampled histograms, its
// sub-pool and a Keyed on it (a crewtest.Storm), from two goroutines through two readers, while
// submitters put on them tasks that return, panic(nil) and call runtime.Goexit and another
// goroutine pauses, resumes and resizes them, then StopNow ends the pool mid-storm: every
// collection succeeds and is consistent, sampled counts stay multiples of n, no counter goes
// backwards, and the final collection equals the stopped pools' Stats.
func TestAdv5OtelCollectionsDuringStormsNeverGoBack(t *testing.T) {
	const n = 4
	rounds := crewtest.Scale(300, 100)
	st := crewtest.NewStorm(t, n)
	root, sub := st.Root, st.Sub
	srcs := map[string]crewotel.StatsSource{"root": root, "sub": sub, "keyed": st.Keyed}
	var readers []*sdkmetric.ManualReader
	for range 2 {
		readers = append(readers, sdkmetric.NewManualReader(sdkmetric.WithProducer(crewotel.Histograms("root", root)),
			sdkmetric.WithProducer(crewotel.Histograms("sub", sub))))
	}
	meter := advMeterProvider(t, readers[0], readers[1])
	for name, src := range srcs {
		adv5Observe(t, meter, name, src)
	}
	check := func(prev, cur advCollection) error {
		for name := range srcs {
			if err := advConsistent(prev, cur, name, 3); err != nil {
				return err
			}
		}
		for p, dp := range cur.exp {
			if dp.Count%n != 0 {
				return fmt.Errorf("%v: count %d, not a multiple of %d", p, dp.Count, n)
			}
		}
		return nil
	}
	stop := crewtest.Watch(t, len(readers), 20, func(i int) func() error {
		var prev advCollection
		return func() error {
			cur, err := advCollect(readers[i])
			if err == nil {
				err = check(prev, cur)
			}
			prev = cur
			return err
		}
	})
	st.Run(rounds)
	crewtest.Await(t, root, "the stopped pool to drain", func(s crew.Stats) bool { return s.Running == 0 && s.Waiting == 0 })
	stop()
	for _, r := range readers {
		c := adv5Collect(t, r)
		for name, src := range srcs {
			s := src.Stats()
			if s.WaitTime != nil && s.WaitTime.Count != s.RunTime.Count {
				t.Errorf("%s: drained, but the wait histogram counts %d and the run histogram %d (every task that started has finished)", name, s.WaitTime.Count, s.RunTime.Count)
			}
			if advEnded(s) != s.Accepted {
				t.Errorf("%s: stopped and drained, but Stats %+v do not add up", name, s)
			}
			if err := advMatches(c, name, s, name != "keyed"); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestAdv5OtelKeyedStatsReportEveryLoss observes a Keyed's own Stats and checks, after the
// known traffic of crewtest.KeyedLosses, its accepted, rejected, canceled, completed, panicked
// (panic(nil)) and returned (StopNow on the pool) tasks and the pool's limit and pause.
func TestAdv5OtelKeyedStatsReportEveryLoss(t *testing.T) {
	l := crewtest.NewKeyedLosses(t)
	k := l.Keyed
	meter, r := newMeter(t)
	adv5Observe(t, meter, "keyed", k)
	l.Run(t, func() {
		adv5Want(t, adv5Collect(t, r), "keyed", map[string]int64{"crew.pool.paused": 1, "crew.tasks.waiting": 2, "crew.workers.max": 1})
	})
	c := adv5Collect(t, r)
	adv5Want(t, c, "keyed", map[string]int64{
		"crew.tasks.accepted": 5, "crew.tasks.completed": 2, "crew.tasks.panicked": 1,
		"crew.tasks.rejected": 1, "crew.tasks.canceled": 1, "crew.tasks.returned": 2,
		"crew.tasks.discarded": 0, "crew.tasks.skipped": 0, "crew.tasks.caller_ran": 0,
		"crew.workers.idle": 0, "crew.tasks.running": 0, "crew.tasks.waiting": 0,
	})
	if err := advMatches(c, "keyed", k.Stats(), false); err != nil {
		t.Error(err)
	}
}

// TestAdv5OtelHistogramsOfAStoppedPoolStayCumulative: the producer of a stopped pool reports
// the same cumulative histograms collection after collection, with one start time and a
// collection time that never goes back.
func TestAdv5OtelHistogramsOfAStoppedPoolStayCumulative(t *testing.T) {
	p := crewtest.StoppedPool(t)
	r := exportAll(t, "stopped", p)
	var first advCollection
	for i := range 3 {
		c := adv5Collect(t, r)
		if err := advMatches(c, "stopped", p.Stats(), true); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = c
			adv5Want(t, c, "stopped", map[string]int64{"crew.tasks.accepted": 10, "crew.tasks.completed": 6, "crew.tasks.panicked": 4,
				"crew.workers.idle": 0, "crew.tasks.running": 0, "crew.tasks.waiting": 0})
			continue
		}
		for p, dp := range c.exp {
			was := first.exp[p]
			if dp.StartTime != was.StartTime || dp.Time.Before(was.Time) || dp.Count != was.Count || dp.Count != 10 {
				t.Errorf("%v: start %v, time %v, count %d after start %v, time %v, count %d",
					p, dp.StartTime, dp.Time, dp.Count, was.StartTime, was.Time, was.Count)
			}
		}
	}
}

// TestAdv5OtelSpanEndsWithErrorForPanicNilAndGoexit: a function that panics with nil, or
// calls runtime.Goexit, still gets its crew.task span ended, a child of the submitter's span,
// with status Error and the failure recorded on it; a function that returns nil gets status
// Unset. The spans have ended by the time the group's or future's Wait returns.
func TestAdv5OtelSpanEndsWithErrorForPanicNilAndGoexit(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "traced", 2)
	defer request.End()

	g, _ := p.GroupAll(ctx)
	g.Go(func(context.Context) error { panic(nil) })
	g.Go(func(context.Context) error { runtime.Goexit(); return nil })
	g.Go(func(context.Context) error { return nil })
	if err := g.Wait(); err == nil {
		t.Fatal("GroupAll.Wait = nil after a panic(nil) and a Goexit")
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 3 {
		t.Fatalf("%d crew.task spans ended when Wait returned, want 3", len(spans))
	}
	f := crew.GoContext(ctx, p, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
	if _, err := f.Wait(); err == nil {
		t.Fatal("a Goexit future's Wait = nil")
	}
	f = crew.GoContext(ctx, p, func(context.Context) (int, error) { panic(nil) })
	var pe *crew.PanicError
	if _, err := f.Wait(); !errors.As(err, &pe) {
		t.Fatalf("a panic(nil) future's Wait = %v, want a *PanicError", err)
	}
	spans = adv5TaskSpans(rec)
	if len(spans) != 5 {
		t.Fatalf("%d crew.task spans ended when the futures' Wait returned, want 5", len(spans))
	}
	var errored, recorded int
	for _, s := range spans {
		if s.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("a crew.task span's parent is %v, want the request's span", s.Parent().SpanID())
		}
		if s.Status().Code == codes.Error {
			errored++
		}
		for _, e := range s.Events() {
			if e.Name == "exception" {
				recorded++
				break
			}
		}
	}
	if errored != 4 || recorded != 4 {
		t.Errorf("%d spans with status Error and %d with the failure recorded, want 4 each", errored, recorded)
	}
}

// TestAdv5OtelSpansOfFunctionsRunByAWaitThatHelps: on New(1), a function makes a group from
// the context crew gave it and waits for it; the group's functions run on the waiting
// goroutine (waits that help), one level deeper too. Each still gets one crew.task span, a
// child of the crew.task span of the function that made its group, every span ends, and the
// limit of one holds.
func TestAdv5OtelSpansOfFunctionsRunByAWaitThatHelps(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "nested", 1, crew.WithQueueSize(1))
	var running, most atomic.Int64
	enter := func() func() {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		return func() { running.Add(-1) }
	}
	var leaves atomic.Int64
	level2 := func(ctx context.Context) error {
		g, _ := p.Group(ctx)
		for range 2 {
			g.Go(func(context.Context) error { leaves.Add(1); return nil })
		}
		return g.Wait()
	}
	var err error
	advWithin(t, 10*time.Second, "nested groups on New(1)", func() {
		g, _ := p.Group(ctx)
		for range 2 {
			g.Go(func(ctx context.Context) error {
				defer enter()()
				g2, _ := p.Group(ctx)
				for range 2 {
					g2.Go(level2)
				}
				return g2.Wait()
			})
		}
		err = g.Wait()
	})
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	if leaves.Load() != 8 {
		t.Fatalf("%d leaves ran, want 8", leaves.Load())
	}
	if most.Load() > 1 {
		t.Errorf("%d top functions ran at once on New(1)", most.Load())
	}
	spans := adv5TaskSpans(rec)
	const want = 2 + 4 + 8
	if len(spans) != want || len(rec.Started()) != want+1 {
		t.Fatalf("%d crew.task spans ended, %d spans started; want %d and %d", len(spans), len(rec.Started()), want, want+1)
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	depth := map[int]int{}
	for _, s := range spans {
		d := 0
		for cur := s; ; d++ {
			parent := cur.Parent().SpanID()
			if parent == request.SpanContext().SpanID() {
				break
			}
			next, ok := byID[parent]
			if !ok {
				t.Fatalf("a crew.task span's parent %v is neither the request's span nor a crew.task span", parent)
			}
			cur = next
		}
		depth[d]++
	}
	if depth[0] != 2 || depth[1] != 4 || depth[2] != 8 {
		t.Errorf("crew.task spans by depth %v, want 2 under the request, 4 under those, 8 under those", depth)
	}
}

// TestAdv5OtelSpanOfACallerRunFunction: a GoContext function that CallerRuns runs on its
// submitter gets a crew.task span, a child of the span in the context it was given with, and
// that span is in the context it receives.
func TestAdv5OtelSpanOfACallerRunFunction(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "cr", 1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	release := crewtest.Hold(t, "the blocker", p.Submit)
	if err := p.Submit(func() {}); err != nil { // fills the queue
		t.Fatal(err)
	}
	var inline trace.SpanContext
	f := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
		inline = trace.SpanContextFromContext(ctx)
		return 0, nil
	})
	if _, err := f.Wait(); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{}
	p.Wait()
	request.End()
	if s := p.Stats(); s.CallerRan != 1 {
		t.Fatalf("CallerRan = %d, want the GoContext function run on its submitter", s.CallerRan)
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 1 {
		t.Fatalf("%d crew.task spans, want 1 for the caller-run function", len(spans))
	}
	if spans[0].Parent().SpanID() != request.SpanContext().SpanID() {
		t.Errorf("the caller-run function's span is not a child of the submitter's span")
	}
	if inline.SpanID() != spans[0].SpanContext().SpanID() {
		t.Errorf("the caller-run function's context holds span %v, want its crew.task span %v", inline.SpanID(), spans[0].SpanContext().SpanID())
	}
}

// TestAdv5OtelSpanUnderATaskTimeout: under WithTaskTimeout the context a function receives
// holds both its crew.task span and the task's deadline, whose cause is ErrTaskTimeout.
func TestAdv5OtelSpanUnderATaskTimeout(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "timed", 1, crew.WithTaskTimeout(20*time.Millisecond))
	var span trace.SpanContext
	var deadline bool
	var cause error
	f := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
		span = trace.SpanContextFromContext(ctx)
		_, deadline = ctx.Deadline()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		cause = context.Cause(ctx)
		return 0, ctx.Err()
	})
	if _, err := f.Wait(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the deadline", err)
	}
	request.End()
	if !deadline || !errors.Is(cause, crew.ErrTaskTimeout) {
		t.Errorf("the function's context: deadline %v, cause %v; want a deadline whose cause is ErrTaskTimeout", deadline, cause)
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 1 || span.SpanID() != spans[0].SpanContext().SpanID() {
		t.Fatalf("%d crew.task spans; the function's context holds span %v", len(spans), span.SpanID())
	}
	if spans[0].Parent().SpanID() != request.SpanContext().SpanID() || spans[0].Status().Code != codes.Error {
		t.Errorf("the timed-out function's span: parent %v, status %v; want the request's span and Error",
			spans[0].Parent().SpanID(), spans[0].Status().Code)
	}
}

// TestAdv5OtelSpansFollowTheSubPoolsOwnHooks: a sub-pool's functions are seen by the
// sub-pool's hooks, not its parent's: with spans on the sub-pool only, the sub-pool's
// functions get spans and the parent's none; with spans on the parent only, the reverse.
// Without WithSpans no function gets a span, whatever the context holds.
func TestAdv5OtelSpansFollowTheSubPoolsOwnHooks(t *testing.T) {
	tp, rec := adv5Tracing(t)
	meter, _ := newMeter(t)
	plain, err := crewotel.Hooks(meter, "plain")
	if err != nil {
		t.Fatal(err)
	}
	root := crew.New(2, crew.WithHooks(plain))
	defer root.StopAndWait()
	traced := root.Sub(2, crew.WithHooks(adv5SpanHooks(t, "sub", tp)))
	untraced := traced.Sub(1)
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	run := func(p *crew.Pool, n int) {
		g, _ := p.GroupAll(ctx)
		for range n {
			g.Go(func(context.Context) error { return nil })
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	run(root, 3)
	run(untraced, 2)
	if got := len(adv5TaskSpans(rec)); got != 0 {
		t.Fatalf("%d crew.task spans for functions of pools without WithSpans", got)
	}
	run(traced, 4)
	request.End()
	spans := adv5TaskSpans(rec)
	if len(spans) != 4 {
		t.Fatalf("%d crew.task spans, want 4 for the traced sub-pool's functions", len(spans))
	}
	for _, s := range spans {
		if attr(s, "pool") != "sub" || s.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("span pool=%q parent %v; want pool=sub under the request", attr(s, "pool"), s.Parent().SpanID())
		}
	}
}

// TestAdv5OtelTwoSpanHooksNestAndBothEnd: two WithHooks options, each with crewotel's spans
// from its own provider, both apply: each provider gets one ended crew.task span per
// function, the second's a child of the first's, and the function's context holds the second.
func TestAdv5OtelTwoSpanHooksNestAndBothEnd(t *testing.T) {
	tp1, rec1 := adv5Tracing(t)
	tp2, rec2 := adv5Tracing(t)
	p := crew.New(2, crew.WithHooks(adv5SpanHooks(t, "one", tp1)), crew.WithHooks(adv5SpanHooks(t, "two", tp2)))
	defer p.StopAndWait()
	var mu sync.Mutex
	var seen []trace.SpanID
	g, _ := p.GroupAll(context.Background())
	for i := range 3 {
		g.Go(func(ctx context.Context) error {
			mu.Lock()
			seen = append(seen, trace.SpanContextFromContext(ctx).SpanID())
			mu.Unlock()
			if i == 1 {
				panic(nil)
			}
			return nil
		})
	}
	if err := g.Wait(); err == nil {
		t.Fatal("Wait = nil after a panic(nil)")
	}
	one, two := adv5TaskSpans(rec1), adv5TaskSpans(rec2)
	if len(one) != 3 || len(two) != 3 {
		t.Fatalf("%d and %d crew.task spans ended, want 3 each", len(one), len(two))
	}
	firsts := map[trace.SpanID]bool{}
	for _, s := range one {
		firsts[s.SpanContext().SpanID()] = true
	}
	var errored int
	for _, s := range two {
		if !firsts[s.Parent().SpanID()] {
			t.Errorf("a second hook's span is not a child of a first hook's span")
		}
		if !slices.Contains(seen, s.SpanContext().SpanID()) {
			t.Errorf("a second hook's span is not in a function's context")
		}
		if s.Status().Code == codes.Error {
			errored++
		}
	}
	if errored != 1 {
		t.Errorf("%d second spans with status Error, want 1 (the panic(nil))", errored)
	}
}

// TestAdv5OtelSpansEndBeforeABrokenMapSeqLoopEnds: breaking out of a MapSeq range cancels the
// calls in flight and waits for them, so when the range statement ends every crew.task span
// started for it has ended too, and the functions never started (skipped) got none.
func TestAdv5OtelSpansEndBeforeABrokenMapSeqLoopEnds(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "seq", 3)
	defer request.End()
	var ran atomic.Int64
	in := func(yield func(int) bool) {
		for i := 0; i < 1000; i++ {
			if !yield(i) {
				return
			}
		}
	}
	advWithin(t, 10*time.Second, "the broken MapSeq loop", func() {
		for v, err := range crew.MapSeq(ctx, p, in, func(ctx context.Context, i int) (int, error) {
			ran.Add(1)
			if i == 0 {
				return i, nil
			}
			<-ctx.Done() // the ones in flight wait for the break
			return i, ctx.Err()
		}) {
			if err != nil || v != 0 {
				t.Errorf("first yield %d, %v", v, err)
			}
			break
		}
	})
	ended := adv5TaskSpans(rec)
	started := 0
	for _, s := range rec.Started() {
		if s.Name() == "crew.task" {
			started++
		}
	}
	if started != len(ended) || int64(len(ended)) != ran.Load() {
		t.Errorf("when the loop ended: %d crew.task spans started, %d ended, %d functions ran", started, len(ended), ran.Load())
	}
}

// TestAdv5OtelCancelRacingTheStartDecidesTheSpan: futures canceled while a Resume races to
// start them: a Cancel that returns true means the function never ran and got no span; one
// that returns false means it ran and got exactly one ended span.
func TestAdv5OtelCancelRacingTheStartDecidesTheSpan(t *testing.T) {
	tp, rec := adv5Tracing(t)
	p := crew.New(4, crew.WithHooks(adv5SpanHooks(t, "race", tp)))
	defer p.StopAndWait()
	rounds := crewtest.Scale(20, 5)
	var ran, canceled, given atomic.Int64
	for range rounds {
		p.Pause()
		fs := make([]*crew.Future[int], 16)
		for i := range fs {
			given.Add(1)
			fs[i] = crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 0, nil })
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, f := range fs {
				if f.Cancel() {
					canceled.Add(1)
				}
			}
		}()
		p.Resume()
		wg.Wait()
		advWithin(t, 10*time.Second, "the round", p.Wait)
	}
	if ran.Load()+canceled.Load() != given.Load() {
		t.Fatalf("%d ran and %d canceled of %d", ran.Load(), canceled.Load(), given.Load())
	}
	if spans := adv5TaskSpans(rec); int64(len(spans)) != ran.Load() || int64(len(rec.Started())) != ran.Load() {
		t.Errorf("%d crew.task spans ended, %d started; %d functions ran, %d canceled", len(spans), len(rec.Started()), ran.Load(), canceled.Load())
	}
	if s := p.Stats(); int64(s.Skipped) != canceled.Load() {
		t.Errorf("Skipped = %d, %d canceled", s.Skipped, canceled.Load())
	}
}

// TestAdv5OtelShutdownThatGivesUpSpansOnlyWhatRan: a Shutdown whose context ends while a
// paused pool holds functions of a group skips them (no span, no hook record, counted in
// Skipped through Observe) and ends the context of the one running with cause ErrStopped; that
// one's span ends with status Error.
func TestAdv5OtelShutdownThatGivesUpSpansOnlyWhatRan(t *testing.T) {
	tp, rec := adv5Tracing(t)
	p, r := adv5ObservedWithSpans(t, "shut", tp, 1)
	g, _ := p.GroupAll(context.Background())
	started := make(chan struct{})
	var cause error
	g.Go(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	crewtest.Recv(t, "the running function", started)
	var ran atomic.Int64
	for range 3 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Shutdown(ended); err == nil {
		t.Fatal("Shutdown with an ended context returned nil while a function ran")
	}
	advWithin(t, 10*time.Second, "the group", func() { _ = g.Wait() })
	advWithin(t, 10*time.Second, "StopAndWait", p.StopAndWait)
	if !errors.Is(cause, crew.ErrStopped) {
		t.Errorf("the running function's context cause %v, want ErrStopped", cause)
	}
	if ran.Load() != 0 {
		t.Errorf("%d queued functions ran after Shutdown gave up", ran.Load())
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 1 || len(rec.Started()) != 1 || spans[0].Status().Code != codes.Error {
		t.Fatalf("%d crew.task spans ended, %d started; want the running one's only, with status Error", len(spans), len(rec.Started()))
	}
	c := adv5Collect(t, r)
	adv5Want(t, c, "shut", map[string]int64{"crew.tasks.accepted": 4, "crew.tasks.completed": 1, "crew.tasks.skipped": 3,
		"crew.tasks.running": 0, "crew.tasks.waiting": 0})
	adv5WantHookCounts(t, c, "shut", 1, "the one function that ran")
}

// TestAdv5OtelSpansOfHelpedFunctionsThatPanicNilOrGoexit: on New(1) a function's group wait
// runs the group's functions itself (waits that help). A helped function that panics with nil
// fails only its own group; one that calls runtime.Goexit ends the helping goroutine and so
// the function that helped. Every crew.task span still ends, each under the span of the
// function whose group it belongs to, with status Error for the panic, for the Goexit and
// for the function the Goexit ended, and the outer group's Wait returns.
func TestAdv5OtelSpansOfHelpedFunctionsThatPanicNilOrGoexit(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "lent", 1)
	var innerPanicErr error
	var afterGoexit atomic.Bool
	var outerErr error
	advWithin(t, 10*time.Second, "the outer group", func() {
		g, _ := p.GroupAll(ctx)
		g.Go(func(ctx context.Context) error { // helps a panic(nil)
			g2, _ := p.GroupAll(ctx)
			g2.Go(func(context.Context) error { panic(nil) })
			innerPanicErr = g2.Wait()
			return nil
		})
		g.Go(func(ctx context.Context) error { // helps a Goexit, which ends it
			g2, _ := p.GroupAll(ctx)
			g2.Go(func(context.Context) error { runtime.Goexit(); return nil })
			_ = g2.Wait()
			afterGoexit.Store(true)
			return nil
		})
		outerErr = g.Wait()
	})
	advWithin(t, 10*time.Second, "Wait", p.Wait)
	request.End()
	var pe *crew.PanicError
	if !errors.As(innerPanicErr, &pe) {
		t.Errorf("the helped panic(nil)'s group Wait = %v, want a *PanicError", innerPanicErr)
	}
	if outerErr == nil {
		t.Errorf("the outer group's Wait = nil, though one of its functions was ended by a Goexit")
	}
	if afterGoexit.Load() {
		t.Log("the helped function's Goexit did not end the function that helped (it ran on a worker)")
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 4 || len(rec.Started()) != 5 {
		t.Fatalf("%d crew.task spans ended, %d spans started; want 4 and 5", len(spans), len(rec.Started()))
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	var top, nested, errored int
	for _, s := range spans {
		if s.Status().Code == codes.Error {
			errored++
		}
		switch parent := s.Parent().SpanID(); {
		case parent == request.SpanContext().SpanID():
			top++
		case byID[parent] != nil && byID[parent].Parent().SpanID() == request.SpanContext().SpanID():
			nested++
		default:
			t.Errorf("a crew.task span's parent %v is neither the request's span nor a top function's", parent)
		}
	}
	wantErrored := 3 // the panic(nil), the Goexit, the function it ended
	if afterGoexit.Load() {
		wantErrored = 2
	}
	if top != 2 || nested != 2 || errored != wantErrored {
		t.Errorf("%d top spans, %d nested, %d with status Error; want 2, 2, %d", top, nested, errored, wantErrored)
	}
}

// TestAdv5OtelSpansCarryThePoolsAttributesThroughEveryDoor: with WithAttributes beside
// WithSpans (in either order), the crew.task span of a function of Results, MapSeqUnordered,
// ForEach and GoContext carries pool=name and the added attributes, under the submitter's
// span, from a tracer scoped by the package's import path; Go's functions, plain tasks and
// keyed tasks get none.
func TestAdv5OtelSpansCarryThePoolsAttributesThroughEveryDoor(t *testing.T) {
	tp, rec := adv5Tracing(t)
	meter, _ := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "doors", crewotel.WithSpans(tp), crewotel.WithAttributes(attribute.String("service", "adv5")))
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(2, crew.WithHooks(hooks))
	defer p.StopAndWait()
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	fn := func(context.Context, int) (int, error) { return 0, nil }
	res, _ := crew.NewResults[int](ctx, p)
	res.Go(func(context.Context) (int, error) { return 0, nil })
	if _, err := res.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, err := range crew.MapSeqUnordered(ctx, p, slices.Values([]int{1, 2}), fn) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := crew.ForEach(ctx, p, slices.Values([]int{1}), func(context.Context, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 0, nil }).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := crew.Go(p, func() (int, error) { return 0, nil }).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	k := crew.NewKeyed[int](p)
	if err := k.Submit(1, func() {}); err != nil {
		t.Fatal(err)
	}
	k.Wait()
	p.Wait()
	request.End()
	spans := adv5TaskSpans(rec)
	if len(spans) != 5 {
		t.Fatalf("%d crew.task spans, want 5 (Results 1, MapSeqUnordered 2, ForEach 1, GoContext 1)", len(spans))
	}
	for _, s := range spans {
		if scope := s.InstrumentationScope().Name; scope != "github.com/crewgo/crew/otel" {
			t.Errorf("a crew.task span's instrumentation scope is %q, want the package's import path", scope)
		}
		if attr(s, "pool") != "doors" || attr(s, "service") != "adv5" {
			t.Errorf("a crew.task span has pool=%q service=%q, want doors and adv5", attr(s, "pool"), attr(s, "service"))
		}
		if s.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("a crew.task span is not a child of the submitter's span")
		}
	}
}

// TestAdv5OtelDiscardedFunctionsGetNoSpanAndCountAsDiscarded: DiscardOldest drops a queued
// GoContext function and a group's function: their Wait fails with ErrDiscarded, they get no
// crew.task span and no hook record, and Observe reports them as discarded.
func TestAdv5OtelDiscardedFunctionsGetNoSpanAndCountAsDiscarded(t *testing.T) {
	tp, rec := adv5Tracing(t)
	p, r := adv5ObservedWithSpans(t, "drop", tp, 1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
	release := crewtest.Hold(t, "the blocker", p.Submit)
	var ran atomic.Int64
	f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 0, nil })
	g, _ := p.GroupAll(context.Background())
	// The group's function drops f; the plain task drops the group's function.
	g.Go(func(context.Context) error { ran.Add(1); return nil })
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(); !errors.Is(err, crew.ErrDiscarded) {
		t.Errorf("the dropped future's Wait = %v, want ErrDiscarded", err)
	}
	if err := g.Wait(); !errors.Is(err, crew.ErrDiscarded) {
		t.Errorf("the dropped group function's Wait = %v, want ErrDiscarded", err)
	}
	release <- struct{}{}
	p.Wait()
	if ran.Load() != 0 {
		t.Fatalf("%d dropped functions ran", ran.Load())
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans started for dropped functions", n)
	}
	c := adv5Collect(t, r)
	adv5Want(t, c, "drop", map[string]int64{"crew.tasks.accepted": 4, "crew.tasks.discarded": 2, "crew.tasks.completed": 2,
		"crew.tasks.running": 0, "crew.tasks.waiting": 0})
	adv5WantHookCounts(t, c, "drop", 2, "the 2 tasks that ran")
}

// TestAdv5OtelEverySpanStartedEndsUnderPauseResizeChurn: functions of groups on a pool and
// its sub-pool, both with span hooks, while another goroutine pauses, resumes and resizes
// them: each function that ran has exactly one crew.task span, and no span is started that
// does not end (a function given back to the queue by a pause starts none).
func TestAdv5OtelEverySpanStartedEndsUnderPauseResizeChurn(t *testing.T) {
	tp, rec := adv5Tracing(t)
	root := crew.New(3, crew.WithHooks(adv5SpanHooks(t, "root", tp)))
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithHooks(adv5SpanHooks(t, "sub", tp)), crew.WithPriority(1))
	groups := crewtest.Scale(30, 10)
	endChurn := crewtest.Churn(t, "the churn", func(i int) {
		switch i % 4 {
		case 0:
			root.Pause()
		case 1:
			sub.Pause()
			root.Resume()
		case 2:
			root.Resize(1 + i%3)
			sub.Resume()
		case 3:
			sub.Resize(1 + i%2)
		}
		time.Sleep(50 * time.Microsecond)
	})
	var ran atomic.Int64
	advWithin(t, 10*time.Second, "the groups", func() {
		var wg sync.WaitGroup
		for gi := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := root
				if gi%2 == 1 {
					p = sub
				}
				g, _ := p.GroupAll(context.Background())
				for i := range 6 {
					g.Go(func(context.Context) error {
						ran.Add(1)
						switch i % 3 {
						case 1:
							panic(nil)
						case 2:
							runtime.Goexit()
						}
						return nil
					})
				}
				_ = g.Wait()
			}()
		}
		wg.Wait()
	})
	endChurn()
	sub.Resume() // the churn may have left them paused
	root.Resume()
	advWithin(t, 10*time.Second, "Wait", root.Wait)
	ended := adv5TaskSpans(rec)
	if int64(len(ended)) != ran.Load() || len(rec.Started()) != len(ended) {
		t.Errorf("%d functions ran; %d crew.task spans ended, %d spans started", ran.Load(), len(ended), len(rec.Started()))
	}
	var errored int64
	for _, s := range ended {
		if s.Status().Code == codes.Error {
			errored++
		}
	}
	if want := ran.Load() * 2 / 3; errored != want {
		t.Errorf("%d spans with status Error, want %d (the panic(nil) and Goexit functions)", errored, want)
	}
}

// TestAdv5OtelSpanOfAFunctionRunInsteadOfBlocking: a function of New(1, WithQueueSize(1))
// fills the queue, then gives a GoContext function from the context crew gave it: instead of
// blocking, the call runs the function itself (counted in CallerRan), and that function gets
// its crew.task span, a child of the giving function's span, in the context it receives.
func TestAdv5OtelSpanOfAFunctionRunInsteadOfBlocking(t *testing.T) {
	p, rec, ctx, request := adv5TracedPool(t, "inline", 1, crew.WithQueueSize(1))
	var outerSpan, innerSpan trace.SpanContext
	var innerErr error
	f := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
		outerSpan = trace.SpanContextFromContext(ctx)
		if err := p.Submit(func() {}); err != nil { // fills the queue of one
			return 0, err
		}
		_, innerErr = crew.GoContext(ctx, p, func(ctx context.Context) (int, error) {
			innerSpan = trace.SpanContextFromContext(ctx)
			return 0, nil
		}).Wait()
		return 0, nil
	})
	var err error
	advWithin(t, 10*time.Second, "the outer function", func() { _, err = f.Wait() })
	if err != nil || innerErr != nil {
		t.Fatalf("outer %v, inner %v", err, innerErr)
	}
	advWithin(t, 10*time.Second, "Wait", p.Wait)
	request.End()
	if s := p.Stats(); s.CallerRan != 1 {
		t.Errorf("CallerRan = %d, want 1 for the function run instead of blocking", s.CallerRan)
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 2 {
		t.Fatalf("%d crew.task spans, want 2", len(spans))
	}
	for _, s := range spans {
		switch s.SpanContext().SpanID() {
		case outerSpan.SpanID():
			if s.Parent().SpanID() != request.SpanContext().SpanID() {
				t.Errorf("the outer function's span is not a child of the request's")
			}
		case innerSpan.SpanID():
			if s.Parent().SpanID() != outerSpan.SpanID() {
				t.Errorf("the inline function's span is not a child of the outer function's")
			}
		default:
			t.Errorf("a crew.task span in neither function's context")
		}
	}
}

// TestAdv5OtelHooksAllocateNothingOnceWarm: the hooks "allocate nothing once the meter has
// seen the attribute set": after a first call, the Started and Finished hooks record with no
// allocation.
func TestAdv5OtelHooksAllocateNothingOnceWarm(t *testing.T) {
	if racetest.Enabled {
		t.Skip("the race detector's shadow memory distorts allocation counts")
	}
	meter, _ := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "allocs", crewotel.WithAttributes(attribute.String("service", "adv5")))
	if err != nil {
		t.Fatal(err)
	}
	ti := crew.TaskInfo{Wait: time.Millisecond, Run: 3 * time.Millisecond}
	hooks.Started(ti)
	hooks.Finished(ti)
	if n := testing.AllocsPerRun(200, func() {
		hooks.Started(ti)
		hooks.Finished(ti)
	}); n != 0 {
		t.Errorf("Started and Finished allocate %v times per task once warm, want 0", n)
	}
}

// TestAdv5OtelSpanRecordsTheReturnedError: the error a function returns is recorded on its
// crew.task span (an exception event carrying its message) and sets the status to Error
// with that message.
func TestAdv5OtelSpanRecordsTheReturnedError(t *testing.T) {
	tp, rec := adv5Tracing(t)
	p := crew.New(1, crew.WithHooks(adv5SpanHooks(t, "errs", tp)))
	defer p.StopAndWait()
	errPlanned := errors.New("adv5: planned failure")
	if _, err := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 0, errPlanned }).Wait(); !errors.Is(err, errPlanned) {
		t.Fatalf("Wait = %v", err)
	}
	spans := adv5TaskSpans(rec)
	if len(spans) != 1 {
		t.Fatalf("%d crew.task spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Status().Code != codes.Error || s.Status().Description != errPlanned.Error() {
		t.Errorf("status %v %q, want Error %q", s.Status().Code, s.Status().Description, errPlanned.Error())
	}
	found := false
	for _, e := range s.Events() {
		for _, kv := range e.Attributes {
			if e.Name == "exception" && kv.Key == "exception.message" && kv.Value.AsString() == errPlanned.Error() {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no exception event with the returned error's message: %v", s.Events())
	}
}
