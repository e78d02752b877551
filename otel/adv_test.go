package crewotel_test

// Adversarial tests: Observe, Histograms and Hooks for a pool, its sub-pools and its Keyeds,
// collected while the pools' features meet (overflow policies, Pause, Resize, StopNow, Stop,
// latency histograms, tasks that panic or call runtime.Goexit), and checked against what the
// package documentation and crew.Stats promise.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	crewotel "github.com/crewgo/crew/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

// advCollection is one collection: the value of each counter, up-down counter and gauge data
// point, each exponential histogram data point (from Histograms) and each explicit bucket
// histogram data point (from Hooks).
type advCollection struct {
	values map[point]int64
	exp    map[point]metricdata.ExponentialHistogramDataPoint[float64]
	expl   map[point]metricdata.HistogramDataPoint[float64]
}

// advCollect collects once from r.
func advCollect(r sdkmetric.Reader) (advCollection, error) {
	c := advCollection{values: map[point]int64{}, exp: map[point]metricdata.ExponentialHistogramDataPoint[float64]{},
		expl: map[point]metricdata.HistogramDataPoint[float64]{}}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		return c, err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			add := func(attrs attribute.Set, what string) (point, error) {
				p := point{m.Name, attrs.Encoded(attribute.DefaultEncoder())}
				_, a := c.values[p]
				_, b := c.exp[p]
				_, d := c.expl[p]
				if a || b || d {
					return p, fmt.Errorf("two %s data points for %v", what, p)
				}
				return p, nil
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					p, err := add(dp.Attributes, "sum")
					if err != nil {
						return c, err
					}
					c.values[p] = dp.Value
				}
			case metricdata.Gauge[int64]:
				for _, dp := range data.DataPoints {
					p, err := add(dp.Attributes, "gauge")
					if err != nil {
						return c, err
					}
					c.values[p] = dp.Value
				}
			case metricdata.ExponentialHistogram[float64]:
				for _, dp := range data.DataPoints {
					p, err := add(dp.Attributes, "exponential histogram")
					if err != nil {
						return c, err
					}
					c.exp[p] = dp
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					p, err := add(dp.Attributes, "histogram")
					if err != nil {
						return c, err
					}
					c.expl[p] = dp
				}
			default:
				return c, fmt.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return c, nil
}

// of returns the scalar data points of pool.
func (c advCollection) of(pool string) map[point]int64 {
	out := map[point]int64{}
	for p, v := range c.values {
		if p.attrs == "pool="+pool {
			out[p] = v
		}
	}
	return out
}

// advHists are the histograms and the Stats field each reports.
var advHists = []struct {
	name string
	of   func(crew.Stats) *crew.Histogram
}{
	{"crew.task.wait.duration", func(s crew.Stats) *crew.Histogram { return s.WaitTime }},
	{"crew.task.run.duration", func(s crew.Stats) *crew.Histogram { return s.RunTime }},
}

// advMatches returns an error unless the collection's data points of pool report exactly s,
// the exponential histograms included when withHists is set.
func advMatches(c advCollection, pool string, s crew.Stats, withHists bool) error {
	if got, want := c.of(pool), points("pool="+pool, s); !reflect.DeepEqual(got, want) {
		return fmt.Errorf("pool %q: collected %v\nStats say %v", pool, got, want)
	}
	if !withHists {
		return nil
	}
	for _, hn := range advHists {
		dp, ok := c.exp[point{hn.name, "pool=" + pool}]
		h := hn.of(s)
		if h == nil {
			if ok {
				return fmt.Errorf("pool %q: %s reported for a pool without histograms", pool, hn.name)
			}
			continue
		}
		if !ok {
			return fmt.Errorf("pool %q: no %s", pool, hn.name)
		}
		if err := advExpMatches(dp, *h); err != nil {
			return fmt.Errorf("pool %q: %s: %v", pool, hn.name, err)
		}
	}
	return nil
}

// advExpMatches returns an error unless dp holds exactly h, bucket for bucket at scale 3.
func advExpMatches(dp metricdata.ExponentialHistogramDataPoint[float64], h crew.Histogram) error {
	if dp.Count != h.Count || dp.Sum != h.Sum || dp.Scale != 3 {
		return fmt.Errorf("count %d, sum %v, scale %d; want %d, %v, 3", dp.Count, dp.Sum, dp.Scale, h.Count, h.Sum)
	}
	if len(h.Counts) == 0 {
		return nil
	}
	if dp.ZeroThreshold != h.Buckets[1] || dp.ZeroCount != h.Counts[0] {
		return fmt.Errorf("zero bucket up to %v holds %d, want up to %v holding %d", dp.ZeroThreshold, dp.ZeroCount, h.Buckets[1], h.Counts[0])
	}
	got := map[int]uint64{}
	total := dp.ZeroCount
	for i, n := range dp.PositiveBucket.Counts {
		if n > 0 {
			got[int(dp.PositiveBucket.Offset)+i] = n
		}
		total += n
	}
	if len(dp.NegativeBucket.Counts) != 0 {
		return fmt.Errorf("negative buckets %v", dp.NegativeBucket.Counts)
	}
	if total != dp.Count {
		return fmt.Errorf("buckets hold %d, count %d", total, dp.Count)
	}
	want := map[int]uint64{}
	for i := 1; i < len(h.Counts); i++ {
		if h.Counts[i] == 0 {
			continue
		}
		// Exponential bucket k is (2^(k/8), 2^((k+1)/8)].
		k := int(math.Round(math.Log2(h.Buckets[i]) * 8))
		want[k] += h.Counts[i]
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("buckets %v, want %v", got, want)
	}
	return nil
}

// advExplMatches returns an error unless dp, recorded by Hooks, holds the durations that h, the
// pool's own histogram of the same tasks, holds: the same count and, bucket by bucket, h's
// counts added up between neighbouring powers of two.
func advExplMatches(dp metricdata.HistogramDataPoint[float64], h crew.Histogram) error {
	if dp.Count != h.Count {
		return fmt.Errorf("count %d, the pool's histogram %d", dp.Count, h.Count)
	}
	if len(dp.BucketCounts) != len(dp.Bounds)+1 {
		return fmt.Errorf("%d bucket counts for %d bounds", len(dp.BucketCounts), len(dp.Bounds))
	}
	want := make([]uint64, len(dp.BucketCounts))
	for i, n := range h.Counts {
		up := h.Buckets[i+1]
		j := len(dp.Bounds)
		for k, b := range dp.Bounds {
			if up <= b*(1+1e-12) {
				j = k
				break
			}
		}
		want[j] += n
	}
	if !reflect.DeepEqual(dp.BucketCounts, want) {
		return fmt.Errorf("bucket counts %v, the pool's histogram gives %v", dp.BucketCounts, want)
	}
	if math.Abs(dp.Sum-h.Sum) > 1e-6*math.Max(1, h.Sum) {
		return fmt.Errorf("sum %v, the pool's histogram %v", dp.Sum, h.Sum)
	}
	return nil
}

// advConsistent returns an error if the data points of pool in cur are not consistent with
// each other, or if a counter or a histogram's count is below its value in prev.
func advConsistent(prev, cur advCollection, pool string, maxLimit int64) error {
	v := func(name string) int64 { return cur.values[point{name, "pool=" + pool}] }
	if _, ok := cur.values[point{"crew.tasks.accepted", "pool=" + pool}]; !ok {
		return fmt.Errorf("pool %q: no data points", pool)
	}
	acc := v("crew.tasks.accepted")
	if done := v("crew.tasks.completed") + v("crew.tasks.panicked"); done > acc {
		return fmt.Errorf("pool %q: completed+panicked %d > accepted %d", pool, done, acc)
	}
	ended := v("crew.tasks.completed") + v("crew.tasks.panicked") + v("crew.tasks.discarded") + v("crew.tasks.returned") + v("crew.tasks.skipped")
	if ended+v("crew.tasks.running")+v("crew.tasks.waiting") != acc {
		return fmt.Errorf("pool %q: ended %d + running %d + waiting %d != accepted %d", pool, ended, v("crew.tasks.running"), v("crew.tasks.waiting"), acc)
	}
	if run := v("crew.tasks.running"); run > maxLimit {
		return fmt.Errorf("pool %q: running %d above every limit it had (%d)", pool, run, maxLimit)
	}
	for _, name := range counterNames {
		p := point{name, "pool=" + pool}
		if before, ok := prev.values[p]; ok && cur.values[p] < before {
			return fmt.Errorf("pool %q: %s went back from %d to %d", pool, name, before, cur.values[p])
		}
	}
	var counts [2]uint64
	for i, hn := range advHists {
		p := point{hn.name, "pool=" + pool}
		dp, ok := cur.exp[p]
		if !ok {
			continue
		}
		counts[i] = dp.Count
		if before, ok := prev.exp[p]; ok && dp.Count < before.Count {
			return fmt.Errorf("pool %q: %s count went back from %d to %d", pool, hn.name, before.Count, dp.Count)
		}
		total := dp.ZeroCount
		for _, n := range dp.PositiveBucket.Counts {
			total += n
		}
		if total != dp.Count {
			return fmt.Errorf("pool %q: %s buckets hold %d, count %d", pool, hn.name, total, dp.Count)
		}
	}
	if counts[0] < counts[1] {
		return fmt.Errorf("pool %q: wait histogram counts %d < run histogram %d", pool, counts[0], counts[1])
	}
	return nil
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

// advTask returns the i-th task of a mix: it counts itself in ran, then returns, panics,
// calls runtime.Goexit or sleeps a little.
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

// advTree is a pool under DiscardOldest, its sub-pool under CallerRuns, that one's sub-pool
// with a non-blocking queue, each with latency histograms and crewotel's Hooks, a Keyed on the
// pool and one on the innermost sub-pool, ran counters for the tasks of each, and the reader
// of the hooks' meter.
type advTree struct {
	root, sub, subsub *crew.Pool
	keyed, keyedSub   *crew.Keyed[int]
	ran               map[string]*atomic.Uint64
	srcs              map[string]crewotel.StatsSource
	hooks             *sdkmetric.ManualReader
}

// pools are the names of the tree's pools, which have histograms.
var advPools = []string{"root", "sub", "subsub"}

func newAdvTree(t *testing.T) *advTree {
	t.Helper()
	hookMeter, hookReader := newMeter(t)
	hooks := func(name string) crew.Option {
		h, err := crewotel.Hooks(hookMeter, name)
		if err != nil {
			t.Fatal(err)
		}
		return crew.WithHooks(h)
	}
	root := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}), hooks("root"))
	t.Cleanup(root.StopAndWait)
	sub := root.Sub(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(), hooks("sub"))
	subsub := sub.Sub(1, crew.WithQueueSize(1), crew.WithNonBlocking(), crew.WithLatencyHistograms(), hooks("subsub"))
	tr := &advTree{
		root: root, sub: sub, subsub: subsub,
		keyed:    crew.NewKeyed[int](root, crew.WithQueueSize(4)),
		keyedSub: crew.NewKeyed[int](subsub, crew.WithQueueSize(1), crew.WithNonBlocking()),
		ran:      map[string]*atomic.Uint64{},
		hooks:    hookReader,
	}
	tr.srcs = map[string]crewotel.StatsSource{
		"root": root, "sub": sub, "subsub": subsub,
		"keyed": tr.keyed, "keyedsub": crewotel.StatsFunc(tr.keyedSub.Stats),
	}
	for name := range tr.srcs {
		tr.ran[name] = new(atomic.Uint64)
	}
	return tr
}

// producers returns a Histograms producer for each pool of the tree.
func (tr *advTree) producers() []sdkmetric.ManualReaderOption {
	var opts []sdkmetric.ManualReaderOption
	for _, name := range advPools {
		opts = append(opts, sdkmetric.WithProducer(crewotel.Histograms(name, tr.srcs[name])))
	}
	return opts
}

// observe observes every source of the tree through meter and returns the registrations.
func (tr *advTree) observe(t *testing.T, meter metric.Meter) map[string]*crewotel.Registration {
	t.Helper()
	regs := map[string]*crewotel.Registration{}
	for name, src := range tr.srcs {
		reg, err := crewotel.Observe(meter, name, src)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Unregister() })
		regs[name] = reg
	}
	return regs
}

// advMeterProvider returns a meter provider with readers, shut down when the test ends.
func advMeterProvider(t *testing.T, readers ...sdkmetric.Reader) metric.Meter {
	t.Helper()
	var opts []sdkmetric.Option
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return mp.Meter("crewotel_adv_test")
}

// submitAll starts two submitters per source of the tree, each making n submits of the task
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

// quietMatch collects from r until a collection falls between two equal Stats of every source
// (nothing moved while it ran), and checks it against them. withHists says r has the tree's
// Histograms producers.
func (tr *advTree) quietMatch(t *testing.T, r sdkmetric.Reader, withHists bool, skip ...string) advCollection {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		before := map[string]crew.Stats{}
		for name, src := range tr.srcs {
			before[name] = src.Stats()
		}
		c, err := advCollect(r)
		if err != nil {
			t.Fatal(err)
		}
		still := true
		for name, src := range tr.srcs {
			if !reflect.DeepEqual(before[name], src.Stats()) {
				still = false
			}
		}
		if still {
			for name := range tr.srcs {
				if slices.Contains(skip, name) {
					continue
				}
				if err := advMatches(c, name, before[name], withHists); err != nil {
					t.Fatal(err)
				}
			}
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the pools' Stats kept moving after they were quiet")
		}
		time.Sleep(time.Millisecond)
	}
}

// checkQuiet checks, on a quiet tree, the accounting identity of every source, that each
// pool's histograms count the tasks that ran on it (keyed tasks included), and that the
// hooks recorded exactly what the pool's own histograms hold.
func (tr *advTree) checkQuiet(t *testing.T) {
	t.Helper()
	for name, src := range tr.srcs {
		s := src.Stats()
		if s.Running != 0 || s.Waiting != 0 || advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, but Stats %+v break Accepted = Completed+Panicked+Discarded+Returned+Skipped", name, s)
		}
	}
	ran := map[string]uint64{
		"root":   tr.ran["root"].Load() + tr.ran["keyed"].Load(),
		"sub":    tr.ran["sub"].Load(),
		"subsub": tr.ran["subsub"].Load() + tr.ran["keyedsub"].Load(),
	}
	hooked, err := advCollect(tr.hooks)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range advPools {
		s := tr.srcs[name].Stats()
		if s.RunTime == nil || s.WaitTime == nil {
			t.Errorf("%s: no histograms", name)
			continue
		}
		if s.RunTime.Count != ran[name] || s.WaitTime.Count != ran[name] {
			t.Errorf("%s: histograms count %d waits and %d runs, %d tasks ran", name, s.WaitTime.Count, s.RunTime.Count, ran[name])
		}
		for _, hn := range advHists {
			dp, ok := hooked.expl[point{hn.name, "pool=" + name}]
			if !ok {
				if n := hn.of(s).Count; n > 0 {
					t.Errorf("%s: hooks recorded no %s, the pool's own counts %d", name, hn.name, n)
				}
				continue
			}
			if err := advExplMatches(dp, *hn.of(s)); err != nil {
				t.Errorf("%s: hooks' %s: %v", name, hn.name, err)
			}
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

// TestAdvQuietTreeReadsBackItsStats observes a pool, a sub-pool, a sub-pool of that and two
// Keyeds, puts on them tasks that return, panic and call runtime.Goexit through DiscardOldest,
// CallerRuns and a non-blocking queue while another goroutine pauses, resumes and resizes
// them, and then, once they are quiet, requires every data point to equal its Stats field,
// Histograms to hand on the pools' own buckets, the histograms to count the tasks that ran,
// and the Hooks' histograms to hold the same durations as the pools' own.
func TestAdvQuietTreeReadsBackItsStats(t *testing.T) {
	tr := newAdvTree(t)
	r := sdkmetric.NewManualReader(tr.producers()...)
	tr.observe(t, advMeterProvider(t, r))

	stop := make(chan struct{})
	var churn sync.WaitGroup
	crewtest.Repeat(&churn, stop, crewtest.TreeChurn(tr.root, tr.sub, tr.subsub))
	advWithin(t, 10*time.Second, "submitting", func() { tr.submitAll(200) })
	close(stop)
	churn.Wait()
	tr.sub.Resume() // the churn may have left them paused
	tr.root.Resume()
	tr.waitAll(t)

	tr.quietMatch(t, r, true)
	tr.checkQuiet(t)
}

// TestAdvConcurrentCollectionsDuringChurnAreMonotonicAndConsistent collects a tree of pools
// from 16 goroutines through two readers while submitters, a pauser, a resizer and finally
// StopNow, Stop and StopAndWait work on the pools; halfway, 4 goroutines unregister the
// Keyed's registration at once. Each collection must be consistent in itself, no counter or
// histogram count may go back between two collections of one goroutine, no collection that
// starts after an Unregister has returned may report the Keyed, and once the pools have
// stopped every data point must still read, equal to Stats.
func TestAdvConcurrentCollectionsDuringChurnAreMonotonicAndConsistent(t *testing.T) {
	const collectors, unregisterers = 16, 4
	tr := newAdvTree(t)
	readers := []*sdkmetric.ManualReader{sdkmetric.NewManualReader(tr.producers()...), sdkmetric.NewManualReader(tr.producers()...)}
	regs := tr.observe(t, advMeterProvider(t, readers[0], readers[1]))

	stop, unregisterNow, unregistered := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var collecting, churn, unregistering sync.WaitGroup
	var collections atomic.Int64
	var once, halfway sync.Once
	for i := range unregisterers {
		unregistering.Add(1)
		go func() {
			defer unregistering.Done()
			<-unregisterNow
			if err := regs["keyed"].Unregister(); err != nil {
				t.Errorf("unregisterer %d: %v", i, err)
			}
			once.Do(func() { close(unregistered) })
		}()
	}
	for i := range collectors {
		collecting.Add(1)
		go func() {
			defer collecting.Done()
			var prev advCollection
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if collections.Add(1) == 200 {
					halfway.Do(func() { close(unregisterNow) })
				}
				after := false
				select {
				case <-unregistered:
					after = true
				default:
				}
				cur, err := advCollect(readers[i%2])
				if err != nil {
					t.Errorf("collector %d, collection %d: %v", i, n, err)
					return
				}
				for name := range tr.srcs {
					if name == "keyed" {
						if after && len(cur.of(name)) > 0 {
							t.Errorf("collector %d: a collection after Unregister returned reports the keyed source", i)
							return
						}
						if len(cur.of(name)) == 0 {
							continue
						}
					}
					if err := advConsistent(prev, cur, name, 3); err != nil {
						t.Errorf("collector %d, collection %d: %v", i, n, err)
						return
					}
				}
				prev = cur
			}
		}()
	}
	crewtest.Repeat(&churn, stop, crewtest.TreeChurnSmall(tr.root, tr.sub, tr.subsub))
	advWithin(t, 10*time.Second, "submitting", func() { tr.submitAll(100) })

	tr.root.Pause()
	_ = tr.subsub.StopNow()
	tr.sub.Stop()
	tr.root.Resume()
	advWithin(t, 5*time.Second, "StopAndWait", tr.root.StopAndWait)
	halfway.Do(func() { close(unregisterNow) })
	close(stop)
	collecting.Wait()
	churn.Wait()
	tr.sub.Resume() // the churn may have left them paused
	tr.root.Resume()
	unregistering.Wait()
	tr.waitAll(t)

	for _, r := range readers {
		c := tr.quietMatch(t, r, true, "keyed")
		if got := c.of("keyed"); len(got) != 0 {
			t.Errorf("unregistered keyed source still reported: %v", got)
		}
	}
	tr.checkQuiet(t)
}

// TestAdvPausedBacklogStopNowIsReported pauses a pool with a backlog in itself, in its
// sub-pools and in a Keyed, checks the paused gauge of each (a sub-pool held back by its
// parent's pause reports 0), abandons the backlog with StopNow, and requires the reported
// Returned and Waiting to equal Stats, and the hooks to have seen no task start.
func TestAdvPausedBacklogStopNowIsReported(t *testing.T) {
	tr := newAdvTree(t)
	r := sdkmetric.NewManualReader(tr.producers()...)
	tr.observe(t, advMeterProvider(t, r))
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
	c := tr.quietMatch(t, r, true)
	if got := c.values[point{"crew.pool.paused", "pool=root"}]; got != 1 {
		t.Errorf("root paused = %d, want 1", got)
	}
	for _, name := range []string{"sub", "subsub"} {
		if got := c.values[point{"crew.pool.paused", "pool=" + name}]; got != 0 {
			t.Errorf("%s (held by its parent's pause) paused = %d, want 0", name, got)
		}
	}
	// A Keyed reports its pool's limit and pause.
	for keyed, pool := range map[string]string{"keyed": "root", "keyedsub": "subsub"} {
		for _, name := range []string{"crew.pool.paused", "crew.workers.max"} {
			if k, p := c.values[point{name, "pool=" + keyed}], c.values[point{name, "pool=" + pool}]; k != p {
				t.Errorf("%s: %s = %d, its pool's %d", keyed, name, k, p)
			}
		}
	}
	left := tr.root.StopNow()
	tr.waitAll(t)
	if n := never.Load(); n != 0 {
		t.Fatalf("%d tasks of the abandoned backlog ran", n)
	}
	c = tr.quietMatch(t, r, true)
	var returned int64
	for _, name := range []string{"root", "sub", "subsub", "keyed"} {
		if w := c.values[point{"crew.tasks.waiting", "pool=" + name}]; w != 0 {
			t.Errorf("%s: waiting %d after StopNow", name, w)
		}
		returned += c.values[point{"crew.tasks.returned", "pool=" + name}]
	}
	if returned < int64(len(left)) {
		t.Errorf("StopNow handed back %d tasks, the reported Returned add up to %d", len(left), returned)
	}
	if got := c.values[point{"crew.tasks.returned", "pool=keyed"}]; got != 2 {
		t.Errorf("keyed returned = %d, want 2", got)
	}
	tr.checkQuiet(t)
}

// advExporter is a metric exporter that keeps the data points of each export.
type advExporter struct {
	mu      sync.Mutex
	exports []advCollection
}

func (e *advExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *advExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *advExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	c := advCollection{values: map[point]int64{}, exp: map[point]metricdata.ExponentialHistogramDataPoint[float64]{}}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					c.values[point{m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder())}] = dp.Value
				}
			case metricdata.ExponentialHistogram[float64]:
				for _, dp := range data.DataPoints {
					c.exp[point{m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder())}] = dp
				}
			}
		}
	}
	e.mu.Lock()
	e.exports = append(e.exports, c)
	e.mu.Unlock()
	return nil
}

func (e *advExporter) ForceFlush(context.Context) error { return nil }
func (e *advExporter) Shutdown(context.Context) error   { return nil }

func (e *advExporter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.exports)
}

// TestAdvPeriodicExportUnregisterLeavesNoGoroutine exports a pool, its sub-pool and a Keyed
// through a periodic reader every millisecond while the pools work, unregisters (by Close)
// while exports go on, and requires the exports after Close to lack the pools' data points;
// once the pools have stopped and the meter provider is shut down, no goroutine may be left.
func TestAdvPeriodicExportUnregisterLeavesNoGoroutine(t *testing.T) {
	p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}))
	sub := p.Sub(1, crew.WithLatencyHistograms())
	k := crew.NewKeyed[int](sub)
	exp := &advExporter{}
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Millisecond),
		sdkmetric.WithProducer(crewotel.Histograms("p", p)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	meter := mp.Meter("crewotel_adv_test")
	var regs []*crewotel.Registration
	for name, src := range map[string]crewotel.StatsSource{"p": p, "sub": sub, "k": k} {
		reg, err := crewotel.Observe(meter, name, src)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	var ran atomic.Uint64
	for i := range 200 {
		_ = p.Submit(advTask(i, &ran))
		_ = sub.Submit(advTask(i, &ran))
		_ = k.Submit(i%4, advTask(i, &ran))
		if i%50 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	advWithin(t, 5*time.Second, "waiting for some exports", func() {
		for exp.count() < 3 {
			time.Sleep(time.Millisecond)
		}
	})
	for _, reg := range regs {
		if err := reg.Close(); err != nil {
			t.Fatal(err)
		}
	}
	closedAt := exp.count()
	advWithin(t, 5*time.Second, "waiting for exports after Close", func() {
		for exp.count() < closedAt+3 {
			time.Sleep(time.Millisecond)
		}
	})
	advWithin(t, 5*time.Second, "StopAndWait", p.StopAndWait)
	if err := mp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	exp.mu.Lock()
	// An export already collecting when Close returned may still hold the pools; the one
	// after it may not.
	for i, c := range exp.exports[closedAt+1:] {
		if len(c.values) != 0 {
			t.Errorf("export %d after Close holds %d data points of the observed pools", closedAt+1+i, len(c.values))
			break
		}
	}
	if len(exp.exports[len(exp.exports)-1].exp) == 0 {
		t.Error("the Histograms producer, never unregistered, stopped reporting")
	}
	exp.mu.Unlock()
	goleak.VerifyNone(t)
}

// TestAdvObserveOnePoolUnderTwoNamesAndBesideItsKeyed observes one pool under two names, its
// sub-pool and a Keyed on the sub-pool through one meter, and closes them one at a time: each
// name must report the same Stats, and closing one must leave the others reporting.
func TestAdvObserveOnePoolUnderTwoNamesAndBesideItsKeyed(t *testing.T) {
	meter, r := newMeter(t)
	p := crew.New(2)
	defer p.StopAndWait()
	sub := p.Sub(1)
	k := crew.NewKeyed[string](sub)
	srcs := map[string]crewotel.StatsSource{"a": p, "b": p, "sub": sub, "k": k}
	regs := map[string]*crewotel.Registration{}
	for name, src := range srcs {
		reg, err := crewotel.Observe(meter, name, src)
		if err != nil {
			t.Fatalf("Observe %s: %v", name, err)
		}
		defer reg.Unregister()
		regs[name] = reg
	}
	for range 10 {
		if err := k.Submit("x", func() {}); err != nil {
			t.Fatal(err)
		}
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	advWithin(t, 5*time.Second, "Wait", func() { k.Wait(); sub.Wait(); p.Wait() })
	for _, closing := range []string{"a", "k", "sub", "b"} {
		c, err := advCollect(r)
		if err != nil {
			t.Fatal(err)
		}
		for name, src := range srcs {
			if err := advMatches(c, name, src.Stats(), false); err != nil {
				t.Error(err)
			}
		}
		if err := regs[closing].Close(); err != nil {
			t.Fatal(err)
		}
		delete(srcs, closing)
		c, err = advCollect(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.of(closing); len(got) != 0 {
			t.Errorf("%s still reported after Close: %v", closing, got)
		}
	}
}

// TestAdvHistogramEdgesMatchThePoolsBuckets produces hand-made histograms through a
// StatsFunc: counts in the first bucket only (the zero bucket), in the last only (above the
// last finite boundary), in every bucket, none, and the zero Histogram that crew.Histogram's
// documentation names as a pool's without WithLatencyHistograms. Each must read back exactly
// and none may panic.
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
		"sparse": mk(func(c []uint64) { c[1], c[8], c[len(c)-2] = 1, 2, 4 }),
		"zero":   {},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			s := crew.Stats{MaxWorkers: 1, WaitTime: h, RunTime: h}
			r := sdkmetric.NewManualReader(sdkmetric.WithProducer(crewotel.Histograms("edge", crewotel.StatsFunc(func() crew.Stats { return s }))))
			if _, err := crewotel.Observe(advMeterProvider(t, r), "edge", crewotel.StatsFunc(func() crew.Stats { return s })); err != nil {
				t.Fatal(err)
			}
			var c advCollection
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("panicked: %v", v)
					}
				}()
				c, err = advCollect(r)
			}()
			if err != nil {
				t.Fatal(err)
			}
			if err := advMatches(c, "edge", s, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAdvSpansAndHooksUnderPauseGoexitAndCallerRuns starts a span per function (WithSpans) on a
// pool under CallerRuns with a queue of one, whose groups' functions return, fail, panic and
// call runtime.Goexit while another goroutine pauses and resumes the pool. Every function
// given must run (GroupAll), and every one that ran must have one ended span, with status Error exactly when it failed, panicked or
// called Goexit, and the hooks' histograms must count each once.
func TestAdvSpansAndHooksUnderPauseGoexitAndCallerRuns(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	meter, r := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "traced", crewotel.WithSpans(tp))
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(hooks), crew.WithLatencyHistograms())
	defer p.StopAndWait()

	stop := make(chan struct{})
	var churn sync.WaitGroup
	crewtest.Repeat(&churn, stop, func(i int) {
		if i%2 == 0 {
			p.Pause()
		} else {
			p.Resume()
		}
		time.Sleep(100 * time.Microsecond)
	})
	const groups, each = 40, 10
	var submitted, ran, failed atomic.Uint64
	errPlanned := errors.New("planned")
	advWithin(t, 10*time.Second, "the groups", func() {
		var wg sync.WaitGroup
		for gi := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A function that CallerRuns runs on this goroutine and that calls
				// runtime.Goexit ends it here: the functions given so far still run.
				g, _ := p.GroupAll(context.Background())
				for i := range each {
					submitted.Add(1)
					g.Go(func(context.Context) error {
						ran.Add(1)
						switch (gi + i) % 4 {
						case 1:
							failed.Add(1)
							return errPlanned
						case 2:
							failed.Add(1)
							panic("adv: planned panic")
						case 3:
							failed.Add(1)
							runtime.Goexit()
						}
						time.Sleep(20 * time.Microsecond)
						return nil
					})
				}
				_ = g.Wait()
			}()
		}
		wg.Wait()
	})
	close(stop)
	churn.Wait()
	p.Resume() // the churn may have left it paused
	advWithin(t, 5*time.Second, "Wait", p.Wait)

	if n := ran.Load(); n != submitted.Load() || n == 0 {
		t.Fatalf("%d functions ran, %d given (GroupAll runs every one)", n, submitted.Load())
	}
	var crewSpans, errored uint64
	for _, s := range rec.Ended() {
		if s.Name() != "crew.task" {
			continue
		}
		crewSpans++
		if s.Status().Code == codes.Error {
			errored++
		}
	}
	if crewSpans != ran.Load() || errored != failed.Load() {
		t.Errorf("%d crew.task spans ended, %d with status Error; %d functions ran, %d failed, panicked or called Goexit",
			crewSpans, errored, ran.Load(), failed.Load())
	}
	if started := len(rec.Started()); uint64(started) < crewSpans {
		t.Errorf("%d spans started, %d ended", started, crewSpans)
	}
	c, err := advCollect(r)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	for _, hn := range advHists {
		dp := c.expl[point{hn.name, "pool=traced"}]
		if dp.Count != ran.Load() {
			t.Errorf("hooks' %s counts %d, %d functions ran", hn.name, dp.Count, ran.Load())
		}
		if err := advExplMatches(dp, *hn.of(s)); err != nil {
			t.Errorf("hooks' %s: %v", hn.name, err)
		}
	}
}

// TestAdvNilSourcesPanicAtOnce: Observe and Histograms refuse a nil *crew.Pool (a non-nil
// interface holding a nil pointer) as they refuse a nil interface, with the documented panic,
// rather than accepting it and failing at the first collection.
func TestAdvNilSourcesPanicAtOnce(t *testing.T) {
	catch := func(fn func()) (v any) {
		defer func() { v = recover() }()
		fn()
		return nil
	}
	meter, _ := newMeter(t)
	var nilPool *crew.Pool
	if v := catch(func() { _, _ = crewotel.Observe(meter, "nil", nilPool) }); v != "crewotel: Observe: src must not be nil" {
		t.Errorf("Observe of a nil *crew.Pool panicked with %v", v)
	}
	if v := catch(func() { crewotel.Histograms("nil", nilPool) }); v != "crewotel: Histograms: src must not be nil" {
		t.Errorf("Histograms of a nil *crew.Pool panicked with %v", v)
	}
	if v := catch(func() { _, _ = crewotel.Observe(meter, "nil", crewotel.StatsSource(nil)) }); v != "crewotel: Observe: src must not be nil" {
		t.Errorf("Observe(nil) panicked with %v", v)
	}
	if v := catch(func() { crewotel.Histograms("nil", nil) }); v != "crewotel: Histograms: src must not be nil" {
		t.Errorf("Histograms(nil) panicked with %v", v)
	}
	if v := catch(func() { crewotel.WithSpans(nil) }); v != "crewotel: WithSpans: tp must not be nil" {
		t.Errorf("WithSpans(nil) panicked with %v", v)
	}
}

// TestAdvSkippedFunctionsGetNoSpanAndNoHookRecord pauses a pool whose hooks start spans,
// queues functions of groups whose context then ends, a future it then cancels and functions
// of a group left to run, and resumes it. WithSpans promises no span for a skipped function;
// the hooks' histograms, like the pool's own, must count only the functions that ran, and
// Observe must report the skipped ones as Skipped.
func TestAdvSkippedFunctionsGetNoSpanAndNoHookRecord(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	meter, r := newMeter(t)
	hooks, err := crewotel.Hooks(meter, "skips", crewotel.WithSpans(tp))
	if err != nil {
		t.Fatal(err)
	}
	p := crew.New(2, crew.WithHooks(hooks), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	reg, err := crewotel.Observe(meter, "skips", p)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	p.Pause()
	var ran atomic.Uint64
	fn := func(context.Context) error { ran.Add(1); return nil }
	var waits []func() error
	for i := range 6 {
		ctx, cancel := context.WithCancel(context.Background())
		g, _ := p.GroupAll(ctx)
		for range 3 {
			g.Go(fn)
		}
		if i%2 == 0 {
			cancel() // these three are skipped
		} else {
			defer cancel()
		}
		waits = append(waits, g.Wait)
	}
	f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 0, nil })
	if !f.Cancel() {
		t.Fatal("Cancel of a queued future = false")
	}
	p.Resume()
	advWithin(t, 5*time.Second, "the groups", func() {
		for _, w := range waits {
			_ = w()
		}
		p.Wait()
	})
	if n := ran.Load(); n != 9 {
		t.Fatalf("%d functions ran, want the 9 of the groups whose context did not end", n)
	}
	spans := 0
	for _, s := range rec.Ended() {
		if s.Name() == "crew.task" {
			spans++
		}
	}
	if spans != 9 || len(rec.Started()) != 9 {
		t.Errorf("%d crew.task spans ended, %d started; 9 functions ran, 10 were skipped", spans, len(rec.Started()))
	}
	c, err := advCollect(r)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if got := c.values[point{"crew.tasks.skipped", "pool=skips"}]; got != 10 || s.Skipped != 10 {
		t.Errorf("skipped reported %d, Stats %d, want 10", got, s.Skipped)
	}
	for _, hn := range advHists {
		dp := c.expl[point{hn.name, "pool=skips"}]
		if dp.Count != 9 {
			t.Errorf("hooks' %s counts %d, 9 functions ran", hn.name, dp.Count)
		}
		if err := advExplMatches(dp, *hn.of(s)); err != nil {
			t.Errorf("hooks' %s: %v", hn.name, err)
		}
	}
}
