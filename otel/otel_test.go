package crewotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Both pool types are stats sources, and a Registration is an io.Closer.
var (
	_ crewotel.StatsSource = (*crew.Pool)(nil)
	_ crewotel.StatsSource = (*crew.FuncPool[int])(nil)
	_ io.Closer            = (*crewotel.Registration)(nil)
)

// fixedSource reports the same snapshot every time.
type fixedSource struct{ s crew.Stats }

func (f fixedSource) Stats() crew.Stats { return f.s }

// countingSource reports a snapshot whose every field is the number of calls so far, so a
// collection that read it more than once would show different values.
type countingSource struct{ calls atomic.Int64 }

func (c *countingSource) Stats() crew.Stats {
	n := c.calls.Add(1)
	return statsOf(int(n))
}

// statsOf returns a snapshot whose every number is n.
func statsOf(n int) crew.Stats {
	return crew.Stats{
		MaxWorkers: n, Running: n, Idle: n, Waiting: n,
		Accepted: uint64(n), Completed: uint64(n), Panicked: uint64(n), Rejected: uint64(n), Canceled: uint64(n),
		Discarded: uint64(n), CallerRan: uint64(n), Returned: uint64(n), Skipped: uint64(n),
	}
}

var (
	upDownNames  = []string{"crew.workers.max", "crew.tasks.running", "crew.workers.idle", "crew.tasks.waiting"}
	counterNames = []string{"crew.tasks.accepted", "crew.tasks.completed", "crew.tasks.panicked", "crew.tasks.rejected", "crew.tasks.canceled",
		"crew.tasks.discarded", "crew.tasks.caller_ran", "crew.tasks.returned", "crew.tasks.skipped"}
	gaugeNames     = []string{"crew.pool.paused"}
	histogramNames = []string{"crew.task.wait.duration", "crew.task.run.duration"}
	allNames       = slices.Concat(upDownNames, counterNames, gaugeNames)
)

// newMeter returns a meter whose metrics the returned reader collects on demand.
func newMeter(t *testing.T) (metric.Meter, *sdkmetric.ManualReader) {
	t.Helper()
	meter, readers := newMeterReaders(t, 1)
	return meter, readers[0]
}

// newMeterReaders returns a meter with n readers. Each reader runs the callbacks for its own
// collections, so collections through different readers run the callbacks at the same time.
func newMeterReaders(t *testing.T, n int) (metric.Meter, []*sdkmetric.ManualReader) {
	t.Helper()
	var readers []*sdkmetric.ManualReader
	var opts []sdkmetric.Option
	for range n {
		r := sdkmetric.NewManualReader()
		readers = append(readers, r)
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return mp.Meter("crewotel_test"), readers
}

// point is one data point: its instrument and its attributes, rendered.
type point struct {
	metric string
	attrs  string
}

// collect runs one collection and returns every data point's value, a histogram's count for
// a histogram. It fails the test if an
// instrument has the wrong kind, unit or monotonicity.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[point]int64 {
	t.Helper()
	got, err := tryCollect(t, r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// tryCollect is collect for goroutines other than the test's: it returns the error of the
// collection instead of ending the test.
func tryCollect(t *testing.T, r *sdkmetric.ManualReader) (map[point]int64, error) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		return nil, err
	}
	monotonic := map[string]bool{}
	for _, n := range upDownNames {
		monotonic[n] = false
	}
	for _, n := range counterNames {
		monotonic[n] = true
	}
	got := map[point]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Gauge[int64]:
				if !slices.Contains(gaugeNames, m.Name) || m.Unit != "1" {
					t.Errorf("%s [%s]: a gauge", m.Name, m.Unit)
				}
				for _, dp := range data.DataPoints {
					got[point{m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder())}] = dp.Value
				}
				continue
			case metricdata.ExponentialHistogram[float64]:
				if !slices.Contains(histogramNames, m.Name) || m.Unit != "s" || data.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s [%s]: an exponential histogram, %v", m.Name, m.Unit, data.Temporality)
				}
				for _, dp := range data.DataPoints {
					got[point{m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder())}] = int64(dp.Count)
				}
				continue
			}
			wantMono, ok := monotonic[m.Name]
			if !ok {
				t.Errorf("unexpected instrument %q", m.Name)
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Errorf("%s: data is %T, want metricdata.Sum[int64]", m.Name, m.Data)
				continue
			}
			if sum.IsMonotonic != wantMono {
				t.Errorf("%s: IsMonotonic = %v, want %v", m.Name, sum.IsMonotonic, wantMono)
			}
			if sum.Temporality != metricdata.CumulativeTemporality {
				t.Errorf("%s: temporality %v, want cumulative", m.Name, sum.Temporality)
			}
			wantUnit := "{task}"
			if strings.HasPrefix(m.Name, "crew.workers.") {
				wantUnit = "{worker}"
			}
			if m.Unit != wantUnit {
				t.Errorf("%s: unit %q, want %q", m.Name, m.Unit, wantUnit)
			}
			for _, dp := range sum.DataPoints {
				got[point{m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder())}] = dp.Value
			}
		}
	}
	return got, nil
}

// points returns the data points a snapshot s of pool should produce.
func points(attrs string, s crew.Stats) map[point]int64 {
	paused := int64(0)
	if s.Paused {
		paused = 1
	}
	return map[point]int64{
		{"crew.workers.max", attrs}:      int64(s.MaxWorkers),
		{"crew.tasks.running", attrs}:    int64(s.Running),
		{"crew.workers.idle", attrs}:     int64(s.Idle),
		{"crew.tasks.waiting", attrs}:    int64(s.Waiting),
		{"crew.pool.paused", attrs}:      paused,
		{"crew.tasks.accepted", attrs}:   int64(s.Accepted),
		{"crew.tasks.completed", attrs}:  int64(s.Completed),
		{"crew.tasks.panicked", attrs}:   int64(s.Panicked),
		{"crew.tasks.rejected", attrs}:   int64(s.Rejected),
		{"crew.tasks.canceled", attrs}:   int64(s.Canceled),
		{"crew.tasks.discarded", attrs}:  int64(s.Discarded),
		{"crew.tasks.caller_ran", attrs}: int64(s.CallerRan),
		{"crew.tasks.returned", attrs}:   int64(s.Returned),
		{"crew.tasks.skipped", attrs}:    int64(s.Skipped),
	}
}

func TestObserveReportsEveryStatsField(t *testing.T) {
	meter, r := newMeter(t)
	s := crew.Stats{
		MaxWorkers: 8, Running: 5, Idle: 2, Waiting: 13,
		Accepted: 1001, Completed: 950, Panicked: 3, Rejected: 17, Canceled: 5,
	}
	reg, err := crewotel.Observe(meter, "fixed", fixedSource{s})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if got, want := collect(t, r), points("pool=fixed", s); !reflect.DeepEqual(got, want) {
		t.Fatalf("collected %v\nwant %v", got, want)
	}
}

func TestCallbackReadsOneSnapshotPerCollection(t *testing.T) {
	meter, r := newMeter(t)
	src := &countingSource{}
	reg, err := crewotel.Observe(meter, "counting", src)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for n := 1; n <= 3; n++ {
		got := collect(t, r)
		if calls := src.calls.Load(); calls != int64(n) {
			t.Fatalf("after %d collections: Stats called %d times, want %d", n, calls, n)
		}
		want := points("pool=counting", statsOf(n))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("collection %d: got %v\nwant %v", n, got, want)
		}
	}
}

func TestObserveReportsPoolAfterKnownWorkload(t *testing.T) {
	meter, r := newMeter(t)
	panics := make(chan any, 1)
	p := crew.New(2, crew.WithQueueSize(1), crew.WithNonBlocking(),
		crew.WithPanicHandler(func(v any, _ []byte) { panics <- v }))
	defer p.StopAndWait()
	reg, err := crewotel.Observe(meter, "work", p)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

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
	if got, want := collect(t, r), points("pool=work", busy); !reflect.DeepEqual(got, want) {
		t.Fatalf("while busy: got %v\nwant %v", got, want)
	}

	close(release)
	p.Wait()
	if v := <-panics; v != "boom" {
		t.Fatalf("panic handler got %v, want boom", v)
	}
	got := collect(t, r)
	// Running and Idle are left out: how soon a worker that finished counts as idle is not
	// part of Wait's contract.
	want := points("pool=work", crew.Stats{MaxWorkers: 2, Accepted: 3, Completed: 2, Panicked: 1, Rejected: 1})
	for _, n := range []string{"crew.tasks.running", "crew.workers.idle"} {
		delete(got, point{n, "pool=work"})
		delete(want, point{n, "pool=work"})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after Wait: got %v\nwant %v", got, want)
	}
}

func TestObserveReportsFuncPool(t *testing.T) {
	meter, r := newMeter(t)
	var sum atomic.Int64
	p := crew.NewFunc(3, func(n int) { sum.Add(int64(n)) })
	defer p.StopAndWait()
	reg, err := crewotel.Observe(meter, "func", p)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for i := 1; i <= 10; i++ {
		if err := p.Invoke(i); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	if got := sum.Load(); got != 55 {
		t.Fatalf("sum = %d, want 55", got)
	}
	got := collect(t, r)
	for name, want := range map[string]int64{
		"crew.workers.max": 3, "crew.tasks.accepted": 10, "crew.tasks.completed": 10,
		"crew.tasks.panicked": 0, "crew.tasks.waiting": 0,
	} {
		if v, ok := got[point{name, "pool=func"}]; !ok || v != want {
			t.Errorf("%s = %d (present %v), want %d", name, v, ok, want)
		}
	}
}

func TestUnregisterStopsObservingOnlyThatPool(t *testing.T) {
	meter, r := newMeter(t)
	a, b := &countingSource{}, &countingSource{}
	regA, err := crewotel.Observe(meter, "a", a)
	if err != nil {
		t.Fatal(err)
	}
	regB, err := crewotel.Observe(meter, "b", b)
	if err != nil {
		t.Fatal(err)
	}
	defer regB.Close()
	if got := collect(t, r); len(got) != 2*len(allNames) {
		t.Fatalf("with two pools: %d data points, want %d: %v", len(got), 2*len(allNames), got)
	}

	if err := regA.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := regA.Close(); err != nil {
		t.Fatalf("second Unregister (Close) = %v, want nil", err)
	}
	got := collect(t, r)
	if calls := a.calls.Load(); calls != 1 {
		t.Fatalf("unregistered pool's Stats called %d times, want 1", calls)
	}
	want := points("pool=b", statsOf(2))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after unregistering a: got %v\nwant %v", got, want)
	}
}

func TestWithAttributesAddsAttributes(t *testing.T) {
	meter, r := newMeter(t)
	reg, err := crewotel.Observe(meter, "labelled", fixedSource{crew.Stats{MaxWorkers: 4}},
		crewotel.WithAttributes(attribute.String("shard", "7")))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if v, ok := collect(t, r)[point{"crew.workers.max", "pool=labelled,shard=7"}]; !ok || v != 4 {
		t.Fatalf("crew.workers.max{pool=labelled,shard=7} = %d (present %v), want 4", v, ok)
	}
}

// fakeMeter is a meter that fails where it is told to and counts the callbacks it registers
// and unregisters.
type fakeMeter struct {
	noop.Meter
	failInstrument string // creating the instrument of this name fails with errInstrument
	registerErr    error  // RegisterCallback returns it
	unregisterErr  error  // Unregister returns it
	registered     atomic.Int32
	unregistered   atomic.Int32
}

var (
	errInstrument = errors.New("instrument failed")
	errRegister   = errors.New("register failed")
	errUnregister = errors.New("unregister failed")
)

func (m *fakeMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	if name == m.failInstrument {
		return nil, errInstrument
	}
	return m.Meter.Int64ObservableCounter(name, opts...)
}

func (m *fakeMeter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	if name == m.failInstrument {
		return nil, errInstrument
	}
	return m.Meter.Int64ObservableUpDownCounter(name, opts...)
}

func (m *fakeMeter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	if name == m.failInstrument {
		return nil, errInstrument
	}
	return m.Meter.Int64ObservableGauge(name, opts...)
}

func (m *fakeMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	m.registered.Add(1)
	if m.registerErr != nil {
		return nil, m.registerErr
	}
	return fakeRegistration{m: m}, nil
}

// fakeRegistration is a callback registered with a fakeMeter.
type fakeRegistration struct {
	noop.Registration
	m *fakeMeter
}

func (r fakeRegistration) Unregister() error {
	r.m.unregistered.Add(1)
	return r.m.unregisterErr
}

func TestObserveReturnsRegistrationError(t *testing.T) {
	reg, err := crewotel.Observe(&fakeMeter{registerErr: errRegister}, "p", fixedSource{})
	if !errors.Is(err, errRegister) || reg != nil {
		t.Fatalf("Observe = %v, %v; want nil, %v", reg, err, errRegister)
	}
}

func TestObserveRegistersNothingIfMeterCannotCreateInstrument(t *testing.T) {
	for _, name := range allNames {
		t.Run(name, func(t *testing.T) {
			m := &fakeMeter{failInstrument: name}
			reg, err := crewotel.Observe(m, "p", fixedSource{})
			if !errors.Is(err, errInstrument) || reg != nil {
				t.Fatalf("Observe = %v, %v; want nil, %v", reg, err, errInstrument)
			}
			if n := m.registered.Load(); n != 0 {
				t.Fatalf("RegisterCallback called %d times, want 0", n)
			}
		})
	}
}

func TestSecondUnregisterDoesNothingAndReturnsFirstError(t *testing.T) {
	m := &fakeMeter{unregisterErr: errUnregister}
	reg, err := crewotel.Observe(m, "p", fixedSource{})
	if err != nil {
		t.Fatal(err)
	}
	first := reg.Unregister()
	if !errors.Is(first, errUnregister) {
		t.Fatalf("first Unregister = %v, want %v", first, errUnregister)
	}
	if second := reg.Close(); second != first {
		t.Fatalf("second Unregister (Close) = %v, want the first call's %v", second, first)
	}
	if n := m.unregistered.Load(); n != 1 {
		t.Fatalf("the meter's Unregister called %d times, want 1", n)
	}
}

func TestCounterPastInt64StaysAtMaxInt64(t *testing.T) {
	meter, r := newMeter(t)
	s := crew.Stats{
		Accepted: math.MaxInt64, Completed: math.MaxInt64 + 1,
		Panicked: math.MaxUint64, Rejected: math.MaxInt64 + 12345, Canceled: math.MaxInt64 + 1,
		Discarded: math.MaxUint64, CallerRan: math.MaxInt64 + 2, Returned: math.MaxInt64 + 3, Skipped: math.MaxUint64 - 1,
	}
	reg, err := crewotel.Observe(meter, "huge", fixedSource{s})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	got := collect(t, r)
	for _, name := range counterNames {
		if v, ok := got[point{name, "pool=huge"}]; !ok || v != math.MaxInt64 {
			t.Errorf("%s = %d (present %v), want %d", name, v, ok, int64(math.MaxInt64))
		}
	}
}

func TestRejectedCountsFullQueueAndCanceledCountsEndedContexts(t *testing.T) {
	meter, r := newMeter(t)
	p := crewtest.RejectedTwice(t)
	reg, err := crewotel.Observe(meter, "ctx", p)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	got := collect(t, r)
	if rej, can := got[point{"crew.tasks.rejected", "pool=ctx"}], got[point{"crew.tasks.canceled", "pool=ctx"}]; rej != 1 || can != 1 {
		t.Fatalf("crew.tasks.rejected = %d, crew.tasks.canceled = %d, want 1 and 1", rej, can)
	}
}

// checkCollection returns an error if the data points of pool in cur are not consistent with
// each other, or if a counter in them is below its value in prev, the collection before it.
// A collection without data points for pool (after it was unregistered) passes.
func checkCollection(pool string, prev, cur map[point]int64) error {
	v := func(m map[point]int64, name string) (int64, bool) {
		n, ok := m[point{name, pool}]
		return n, ok
	}
	sub, ok := v(cur, "crew.tasks.accepted")
	if !ok {
		return nil
	}
	completed, _ := v(cur, "crew.tasks.completed")
	panicked, _ := v(cur, "crew.tasks.panicked")
	if completed+panicked > sub {
		return fmt.Errorf("completed %d + panicked %d > submitted %d", completed, panicked, sub)
	}
	if run, limit := cur[point{"crew.tasks.running", pool}], cur[point{"crew.workers.max", pool}]; run > limit {
		return fmt.Errorf("running %d > max %d", run, limit)
	}
	for _, name := range counterNames {
		if before, ok := v(prev, name); ok && cur[point{name, pool}] < before {
			return fmt.Errorf("%s went back from %d to %d", name, before, cur[point{name, pool}])
		}
	}
	return nil
}

// TestStressRegistrationIsSafeForConcurrentUse collects from 64 goroutines at once, through
// two readers so that the callback itself runs in two collections at a time, while submitters
// keep the pool busy with tasks that return, tasks that panic and submits that are rejected.
// Halfway through, 16 more goroutines, released together, close the Registration. Under -race
// it proves the callback and the Registration safe for concurrent use; each collection must
// be consistent, no counter may go back between two collections of one goroutine, every Close
// must return nil, and no collection that starts after a Close has returned may report the
// pool.
func TestStressRegistrationIsSafeForConcurrentUse(t *testing.T) {
	const collectors, closers = 64, 16
	collections := 100
	if testing.Short() {
		collections = 10
	}
	meter, readers := newMeterReaders(t, 2)
	p := crew.New(4, crew.WithQueueSize(8), crew.WithPanicHandler(func(any, []byte) {}))
	defer p.StopAndWait()
	reg, err := crewotel.Observe(meter, "stress", p)
	if err != nil {
		t.Fatal(err)
	}

	start, collected := make(chan struct{}), make(chan struct{})
	var submitting, closing, collecting sync.WaitGroup
	crewtest.KeepBusy(t, &submitting, p, start, collected)

	// The closers go straight from their release to Close, with nothing in between that the
	// race detector could take for synchronization between them.
	closeNow, unregistered := make(chan struct{}), make(chan struct{})
	var halfway, returned sync.Once
	crewtest.Spawn(&closing, closers, closeNow, func(i int) {
		if err := reg.Close(); err != nil {
			t.Errorf("closer %d: Close = %v, want nil", i, err)
		}
		returned.Do(func() { close(unregistered) })
	})

	var done atomic.Int64
	crewtest.Spawn(&collecting, collectors, start, func(i int) {
		var prev map[point]int64
		for n := range collections {
			if done.Add(1) == collectors*int64(collections)/2 {
				halfway.Do(func() { close(closeNow) })
			}
			var afterClose bool
			select {
			case <-unregistered:
				afterClose = true
			default:
			}
			cur, err := tryCollect(t, readers[i%2])
			if err == nil {
				err = checkCollection("pool=stress", prev, cur)
			}
			if err == nil && afterClose && len(cur) != 0 {
				err = fmt.Errorf("collection after Close returned has data points: %v", cur)
			}
			if err != nil {
				t.Errorf("collector %d, collection %d: %v", i, n, err)
				return
			}
			prev = cur
		}
	})
	close(start)
	collecting.Wait()
	halfway.Do(func() { close(closeNow) }) // in case a collector failed before halfway
	closing.Wait()
	close(collected)
	submitting.Wait()
}

func TestObserveValidatesArguments(t *testing.T) {
	meter := noop.NewMeterProvider().Meter("")
	tests := []struct {
		name      string
		call      func()
		wantPanic string
	}{
		{"empty name", func() { crewotel.Observe(meter, "", fixedSource{}) },
			"crewotel: Observe: name must not be empty"},
		{"nil source", func() { crewotel.Observe(meter, "p", nil) },
			"crewotel: Observe: src must not be nil"},
		{"nil meter", func() { crewotel.Observe(nil, "p", fixedSource{}) },
			"crewotel: Observe: meter must not be nil"},
		{"pool attribute", func() {
			crewotel.Observe(meter, "p", fixedSource{}, crewotel.WithAttributes(attribute.String("pool", "q")))
		}, `crewotel: Observe: WithAttributes must not set the "pool" attribute`},
		{"valid", func() { crewotel.Observe(meter, "p", fixedSource{}) }, ""},
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
