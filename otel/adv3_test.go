package crewotel_test

// Adversarial tests: Observe, Histograms and Hooks for every pool of a tree (a pool, a
// sub-pool, sub-pools of that one, a Keyed on the sub-pool) after traffic whose every count is
// known in advance, so each reported value is checked against crew.Stats and against the
// count the traffic implies.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	crewotel "github.com/crewgo/crew/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// adv3Tree is a pool; its sub-pool "sub" with a Keyed; and five sub-pools of sub: "dis"
// (DiscardOldest), "cr" (CallerRuns), "rej" (non-blocking), "stp" (paused, then StopNow) and
// "tt" (WithTaskTimeout). All but the Keyed have latency histograms and crewotel's Hooks, and
// the reader has a Histograms producer for each of them.
type adv3Tree struct {
	root, sub, dis, cr, rej, stp, tt *crew.Pool
	keyed                            *crew.Keyed[int]
	srcs                             map[string]crewotel.StatsSource
	pools                            map[string]*crew.Pool
	reader                           *sdkmetric.ManualReader // Observe and the Histograms producers
	hooks                            *sdkmetric.ManualReader // the Hooks
	regs                             map[string]*crewotel.Registration
}

// adv3PoolNames are the names of the tree's pools.
var adv3PoolNames = []string{"root", "sub", "dis", "cr", "rej", "stp", "tt"}

func newAdv3Tree(t *testing.T) *adv3Tree {
	t.Helper()
	tr := &adv3Tree{pools: map[string]*crew.Pool{}, srcs: map[string]crewotel.StatsSource{}}
	var opts []sdkmetric.ManualReaderOption
	for _, name := range adv3PoolNames {
		// The pools do not exist yet: the producer reads them through the tree.
		opts = append(opts, sdkmetric.WithProducer(crewotel.Histograms(name,
			crewotel.StatsFunc(func() crew.Stats { return tr.pools[name].Stats() }))))
	}
	tr.reader = sdkmetric.NewManualReader(opts...)
	meter := advMeterProvider(t, tr.reader)
	// The package doc: use Histograms or Hooks for a pool, not both; so the hooks record
	// through a meter of their own, collected apart.
	tr.hooks = sdkmetric.NewManualReader()
	hookMeter := advMeterProvider(t, tr.hooks)
	with := func(name string, o ...crew.Option) []crew.Option {
		h, err := crewotel.Hooks(hookMeter, name)
		if err != nil {
			t.Fatal(err)
		}
		return append(o, crew.WithLatencyHistograms(), crew.WithHooks(h))
	}
	root := crew.New(3, with("root", crew.WithPanicHandler(func(any, []byte) {}))...)
	t.Cleanup(root.StopAndWait)
	sub := root.Sub(3, with("sub")...)
	tr.root, tr.sub = root, sub
	tr.dis = sub.Sub(1, with("dis", crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))...)
	tr.cr = sub.Sub(1, with("cr", crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))...)
	tr.rej = sub.Sub(1, with("rej", crew.WithQueueSize(1), crew.WithNonBlocking())...)
	tr.stp = sub.Sub(1, with("stp")...)
	tr.tt = sub.Sub(1, with("tt", crew.WithTaskTimeout(20*time.Millisecond))...)
	tr.keyed = crew.NewKeyed[int](sub)
	for name, p := range map[string]*crew.Pool{"root": tr.root, "sub": tr.sub, "dis": tr.dis, "cr": tr.cr,
		"rej": tr.rej, "stp": tr.stp, "tt": tr.tt} {
		tr.pools[name] = p
		tr.srcs[name] = p
	}
	tr.srcs["keyed"] = tr.keyed
	tr.regs = map[string]*crewotel.Registration{}
	for name, src := range tr.srcs {
		reg, err := crewotel.Observe(meter, name, src)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Unregister() })
		tr.regs[name] = reg
	}
	return tr
}

// adv3Compare fails t unless the collection's scalar data points of pool hold want, by
// instrument name; the names not in want are not checked.
func adv3Compare(t *testing.T, what string, c advCollection, pool string, want map[string]int64) {
	t.Helper()
	for name, w := range want {
		if g, ok := c.values[point{name, "pool=" + pool}]; !ok || g != w {
			t.Errorf("%s: %s of %s = %v (present %v), want %v", what, name, pool, g, ok, w)
		}
	}
}

// quietMatch collects until a collection falls between two equal Stats of every source (so
// nothing moved while it ran), and requires it to report exactly those Stats, the
// exponential histograms included.
func (tr *adv3Tree) quietMatch(t *testing.T) advCollection {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		before := map[string]crew.Stats{}
		for name, src := range tr.srcs {
			before[name] = src.Stats()
		}
		c, err := advCollect(tr.reader)
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
				if err := advMatches(c, name, before[name], name != "keyed"); err != nil {
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

// check collects once the tree is quiet and requires every value to equal its Stats field,
// the hand counts in want, the counts of the producers' and the hooks' histograms to be
// hists, and each leaf pool's run histogram to count Completed+Panicked.
func (tr *adv3Tree) check(t *testing.T, want map[string]map[string]int64, hists map[string]uint64) advCollection {
	t.Helper()
	c := tr.quietMatch(t)
	hc, err := advCollect(tr.hooks)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		adv3Compare(t, "quiet", c, name, w)
	}
	for name, n := range hists {
		for _, hn := range []string{"crew.task.wait.duration", "crew.task.run.duration"} {
			p := point{hn, "pool=" + name}
			if dp, ok := c.exp[p]; !ok || dp.Count != n {
				t.Errorf("%s: Histograms' %s counts %d (present %v), want %d", name, hn, dp.Count, ok, n)
			}
			// The hooks record nothing for a pool where no task started.
			if dp, ok := hc.expl[p]; (n > 0 || ok) && dp.Count != n {
				t.Errorf("%s: Hooks' %s counts %d (present %v), want %d", name, hn, dp.Count, ok, n)
			}
		}
	}
	for name, src := range tr.srcs {
		s := src.Stats()
		if s.Running != 0 || s.Waiting != 0 || advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, Stats %+v break Accepted = Completed+Panicked+Discarded+Returned+Skipped", name, s)
		}
	}
	for _, name := range []string{"dis", "cr", "rej", "stp", "tt"} {
		ran := c.values[point{"crew.tasks.completed", "pool=" + name}] + c.values[point{"crew.tasks.panicked", "pool=" + name}]
		if dp := c.exp[point{"crew.task.run.duration", "pool=" + name}]; int64(dp.Count) != ran {
			t.Errorf("%s: the run histogram counts %d, completed+panicked %d", name, dp.Count, ran)
		}
	}
	return c
}

// adv3Blocker returns a task that reports its start on started and returns once release is
// closed.
func adv3Blocker() (task func(), started, release chan struct{}) {
	started, release = make(chan struct{}, 1), make(chan struct{})
	return func() {
		started <- struct{}{}
		<-release
	}, started, release
}

// adv3Must fails t on a non-nil error.
func adv3Must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// traffic puts on the tree the traffic whose counts want reports, one pool at a time, and
// returns when every pool is quiet. want holds, per pool of the leaves and the Keyed, every
// counter and gauge; hists the count of each pool's histograms.
func (tr *adv3Tree) traffic(t *testing.T) (want map[string]map[string]int64, hists map[string]uint64) {
	t.Helper()
	bg := context.Background()
	wait := func(what string, p interface{ Wait() }) {
		t.Helper()
		adv2Await(t, what, crewtest.Go(p.Wait))
	}

	// dis: a blocker runs, a queued task is dropped by a panicking one, a Goexit task after.
	block, started, release := adv3Blocker()
	adv3Must(t, "dis blocker", tr.dis.Submit(block))
	adv2Await(t, "dis blocker start", started)
	var dropped atomic.Bool
	adv3Must(t, "dis queued", tr.dis.Submit(func() { dropped.Store(true) }))
	adv3Must(t, "dis dropping", tr.dis.Submit(func() { panic("planned") }))
	close(release)
	wait("dis", tr.dis)
	adv3Must(t, "dis goexit", tr.dis.Submit(func() { runtime.Goexit() }))
	wait("dis", tr.dis)
	if dropped.Load() {
		t.Error("a task DiscardOldest dropped ran")
	}

	// cr: a blocker runs, a task waits, a task run on its submitter calls runtime.Goexit.
	block, started, release = adv3Blocker()
	adv3Must(t, "cr blocker", tr.cr.Submit(block))
	adv2Await(t, "cr blocker start", started)
	adv3Must(t, "cr queued", tr.cr.Submit(func() {}))
	var inline atomic.Bool
	adv2Await(t, "the caller-run submit", crewtest.Go(func() {
		_ = tr.cr.Submit(func() { inline.Store(true); runtime.Goexit() })
	}))
	if !inline.Load() {
		t.Error("the submit into cr's full queue did not run the task on its submitter")
	}
	close(release)
	wait("cr", tr.cr)

	// rej: a blocker runs, a task waits, TrySubmit and Submit are refused, a SubmitContext
	// with an ended context is canceled.
	block, started, release = adv3Blocker()
	adv3Must(t, "rej blocker", tr.rej.Submit(block))
	adv2Await(t, "rej blocker start", started)
	adv3Must(t, "rej queued", tr.rej.Submit(func() {}))
	if tr.rej.TrySubmit(func() {}) {
		t.Error("TrySubmit accepted into a full queue")
	}
	if err := tr.rej.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Errorf("Submit into a full non-blocking queue = %v", err)
	}
	ended, cancel := context.WithCancel(bg)
	cancel()
	if err := tr.rej.SubmitContext(ended, func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("SubmitContext with an ended context = %v", err)
	}
	close(release)
	wait("rej", tr.rej)

	// stp: a paused backlog of three, which StopNow hands back.
	tr.stp.Pause()
	var stpRan atomic.Int64
	for range 3 {
		adv3Must(t, "stp", tr.stp.Submit(func() { stpRan.Add(1) }))
	}
	if s := tr.stp.Stats(); !s.Paused || s.Waiting != 3 {
		t.Errorf("stp paused with 3 queued: %+v", s)
	}
	if back := tr.stp.StopNow(); len(back) != 3 {
		t.Errorf("stp.StopNow returned %d tasks, want 3", len(back))
	}
	wait("stp", tr.stp)

	// tt: a blocker runs; a future canceled while queued; a group whose first function outlives
	// the task timeout, so its error cancels the group and its two queued functions are skipped.
	block, started, release = adv3Blocker()
	adv3Must(t, "tt blocker", tr.tt.Submit(block))
	adv2Await(t, "tt blocker start", started)
	var ttRan atomic.Int64
	f := crew.GoContext(bg, tr.tt, func(context.Context) (int, error) { ttRan.Add(1); return 0, nil })
	if !f.Cancel() {
		t.Error("Cancel of a queued future = false")
	}
	g, _ := tr.tt.Group(bg)
	g.Go(func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return errors.New("the task timeout did not end the context")
		}
	})
	for range 2 {
		g.Go(func(context.Context) error { ttRan.Add(1); return nil })
	}
	close(release)
	var gerr error
	adv2Await(t, "the group", crewtest.Go(func() { gerr = g.Wait() }))
	if !errors.Is(gerr, context.DeadlineExceeded) {
		t.Errorf("the group's error %v, want the task timeout's", gerr)
	}
	if _, err := f.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled future's Wait = %v", err)
	}
	wait("tt", tr.tt)
	if n := ttRan.Load(); n != 0 {
		t.Errorf("%d skipped functions ran", n)
	}

	// keyed on sub: a panic and a Goexit on key 1, three plain tasks on key 2; and two tasks of
	// sub itself, one panicking; and two of the root, one calling Goexit.
	adv3Must(t, "keyed", tr.keyed.Submit(1, func() { panic("planned") }))
	adv3Must(t, "keyed", tr.keyed.Submit(1, func() { runtime.Goexit() }))
	for range 3 {
		adv3Must(t, "keyed", tr.keyed.Submit(2, func() {}))
	}
	adv3Must(t, "sub", tr.sub.Submit(func() {}))
	adv3Must(t, "sub", tr.sub.Submit(func() { panic("planned") }))
	adv3Must(t, "root", tr.root.Submit(func() {}))
	adv3Must(t, "root", tr.root.Submit(func() { runtime.Goexit() }))
	wait("keyed", tr.keyed)
	wait("sub", tr.sub)
	wait("root", tr.root)

	counts := func(acc, comp, pan, rej, can, dis, cr, ret, skip int64) map[string]int64 {
		return map[string]int64{
			"crew.tasks.accepted": acc, "crew.tasks.completed": comp,
			"crew.tasks.panicked": pan, "crew.tasks.rejected": rej,
			"crew.tasks.canceled": can, "crew.tasks.discarded": dis,
			"crew.tasks.caller_ran": cr, "crew.tasks.returned": ret,
			"crew.tasks.skipped": skip,
			"crew.tasks.running": 0, "crew.tasks.waiting": 0, "crew.workers.idle": 0,
			"crew.workers.max": 1,
		}
	}
	want = map[string]map[string]int64{
		//                acc comp pan rej can dis cr ret skip
		"dis": counts(4, 2, 1, 0, 0, 1, 0, 0, 0),
		"cr":  counts(3, 3, 0, 0, 0, 0, 1, 0, 0),
		"rej": counts(2, 2, 0, 2, 1, 0, 0, 0, 0),
		"stp": counts(3, 0, 0, 0, 0, 0, 0, 3, 0),
		"tt":  counts(5, 2, 0, 0, 0, 0, 0, 0, 3),
	}
	want["keyed"] = map[string]int64{"crew.tasks.accepted": 5, "crew.tasks.completed": 4,
		"crew.tasks.panicked": 1, "crew.tasks.running": 0, "crew.tasks.waiting": 0,
		"crew.tasks.discarded": 0, "crew.tasks.returned": 0, "crew.tasks.skipped": 0}
	hists = map[string]uint64{"dis": 3, "cr": 3, "rej": 2, "stp": 0, "tt": 2,
		"sub":  2 + 5, // its own tasks and the keyed ones, not its sub-pools'
		"root": 2,
	}
	return want, hists
}

// TestAdvTreeKnownTrafficReportsEveryFieldOfEveryPool observes every pool of a tree (a pool,
// its sub-pool, five sub-pools of that, a Keyed on the sub-pool), with a Histograms producer
// and crewotel's Hooks for each pool, and puts on them traffic with known counts:
// completions, panics, runtime.Goexit (also in a caller-run task), a discard by DiscardOldest,
// a caller-run by CallerRuns, rejections, a canceled submit, a paused backlog StopNow hands
// back, a canceled future and functions skipped after a WithTaskTimeout error. Every value a
// manual reader collects equals the Stats field it reports and the count the traffic implies;
// the producers' and the hooks' histograms (through a meter of their own) count the tasks that ran on each pool (a sub-pool's
// own and its Keyed's, not its sub-pools'). Then StopNow of the sub-pool with a paused backlog
// in itself, its Keyed and a sub-pool of it; and once the root has been shut down, every
// value still reads, unchanged.
func TestAdvTreeKnownTrafficReportsEveryFieldOfEveryPool(t *testing.T) {
	tr := newAdv3Tree(t)
	want, hists := tr.traffic(t)
	tr.check(t, want, hists)

	tr.sub.Pause()
	var ran atomic.Int64
	adv3Must(t, "keyed", tr.keyed.Submit(3, func() { ran.Add(1) }))
	adv3Must(t, "sub", tr.sub.Submit(func() { ran.Add(1) }))
	adv3Must(t, "cr", tr.cr.Submit(func() { ran.Add(1) }))
	c, err := advCollect(tr.reader)
	if err != nil {
		t.Fatal(err)
	}
	adv3Compare(t, "sub paused", c, "sub", map[string]int64{"crew.pool.paused": 1})
	adv3Compare(t, "keyed under a paused pool", c, "keyed", map[string]int64{"crew.tasks.waiting": 1})
	adv3Compare(t, "cr under a paused pool", c, "cr", map[string]int64{"crew.tasks.waiting": 1, "crew.pool.paused": 0})
	if back := tr.sub.StopNow(); len(back) != 3 {
		t.Fatalf("sub.StopNow returned %d tasks, want 3 (its own, its Keyed's, its sub-pool's)", len(back))
	}
	adv2Await(t, "sub", crewtest.Go(tr.sub.Wait))
	adv3Must(t, "root after its sub-pool stopped", tr.root.Submit(func() {}))
	adv2Await(t, "root", crewtest.Go(tr.root.Wait))
	if n := ran.Load(); n != 0 {
		t.Errorf("%d tasks StopNow returned ran", n)
	}
	want["cr"]["crew.tasks.accepted"]++
	want["cr"]["crew.tasks.returned"]++
	want["keyed"]["crew.tasks.accepted"]++
	want["keyed"]["crew.tasks.returned"]++
	hists["root"]++
	tr.check(t, want, hists)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adv3Must(t, "Shutdown", tr.root.Shutdown(ctx))
	after := tr.check(t, want, hists)
	again := tr.check(t, want, hists)
	if !reflect.DeepEqual(after.values, again.values) {
		t.Errorf("values moved on a shut-down tree: %v, then %v", after.values, again.values)
	}
}

// TestAdvTreeUnregisterWhileTrafficRuns observes every pool of a tree and unregisters them one
// by one while tasks run on all of them and a goroutine collects: Unregister's doc says
// collections that start after it returns read no more Stats from the pool and report no data
// point for it. A Stats source that knows whether the collection calling it started after its
// Unregister returned catches a late read; every collection must be consistent in itself; the
// pools still observed report their Stats exactly once the traffic has stopped.
func TestAdvTreeUnregisterWhileTrafficRuns(t *testing.T) {
	tr := &adv3Tree{pools: map[string]*crew.Pool{}}
	reader := sdkmetric.NewManualReader()
	meter := advMeterProvider(t, reader)
	root := crew.New(3, crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(root.StopAndWait)
	sub := root.Sub(3)
	tr.pools = map[string]*crew.Pool{"root": root, "sub": sub,
		"dis": sub.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest)),
		"rej": sub.Sub(1, crew.WithQueueSize(1), crew.WithNonBlocking()),
		"cr":  sub.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns)),
	}
	keyed := crew.NewKeyed[int](sub)

	// gone[name] is set once name's Unregister has returned; late counts Stats reads made by a
	// collection that started after that.
	var mu sync.Mutex
	gone := map[string]bool{}
	startedGone := map[string]bool{} // what the collection in progress saw at its start
	var late atomic.Int64
	srcs := map[string]crewotel.StatsSource{}
	regs := map[string]*crewotel.Registration{}
	names := []string{"dis", "keyed", "rej", "sub", "cr", "root"}
	for _, name := range names {
		var inner crewotel.StatsSource = keyed
		if p, ok := tr.pools[name]; ok {
			inner = p
		}
		srcs[name] = inner
		reg, err := crewotel.Observe(meter, name, crewotel.StatsFunc(func() crew.Stats {
			mu.Lock()
			if startedGone[name] {
				late.Add(1)
			}
			mu.Unlock()
			return inner.Stats()
		}))
		if err != nil {
			t.Fatal(err)
		}
		regs[name] = reg
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for name, p := range tr.pools {
		crewtest.Repeat(&wg, stop, func(i int) {
			task := func() {
				switch i % 9 {
				case 2:
					panic("planned")
				case 5:
					if name != "cr" {
						runtime.Goexit()
					}
				}
			}
			if name == "rej" {
				p.TrySubmit(task)
			} else {
				_ = p.Submit(task)
			}
			if i%8 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	crewtest.Repeat(&wg, stop, func(i int) {
		_ = keyed.Submit(i%3, func() {})
		if i%8 == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	})
	var collections atomic.Int64
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			for n, g := range gone {
				startedGone[n] = g
			}
			mu.Unlock()
			c, err := advCollect(reader)
			if err != nil {
				t.Errorf("collection: %v", err)
				return
			}
			mu.Lock()
			for n, g := range startedGone {
				if g && len(c.of(n)) > 0 {
					t.Errorf("a collection started after %s was unregistered reports it: %v", n, c.of(n))
				}
			}
			mu.Unlock()
			for _, n := range names {
				if err := advConsistent(advCollection{}, c, n, 3); err != nil && len(c.of(n)) > 0 {
					t.Errorf("collection: %v", err)
				}
			}
			collections.Add(1)
		}
	}()
	for _, name := range names[:4] {
		time.Sleep(20 * time.Millisecond)
		if err := regs[name].Unregister(); err != nil {
			t.Fatalf("Unregister(%s): %v", name, err)
		}
		mu.Lock()
		gone[name] = true
		mu.Unlock()
	}
	// The collection in progress may have started before the last Unregister; the one after
	// it did not.
	after := collections.Load() + 2
	for deadline := time.Now().Add(10 * time.Second); collections.Load() < after && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	adv2Await(t, "the collector", collected)
	if collections.Load() < after {
		t.Fatal("no collection completed after the last Unregister")
	}
	if n := late.Load(); n > 0 {
		t.Errorf("%d Stats reads by collections that started after the pool's Unregister returned", n)
	}
	adv2Await(t, "the tree", crewtest.Go(func() {
		keyed.Wait()
		for _, p := range tr.pools {
			p.Wait()
		}
	}))
	// The two still observed read their Stats exactly; the others report nothing.
	for range 100 {
		before := map[string]crew.Stats{"cr": srcs["cr"].Stats(), "root": srcs["root"].Stats()}
		c, err := advCollect(reader)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before["cr"], srcs["cr"].Stats()) || !reflect.DeepEqual(before["root"], srcs["root"].Stats()) {
			time.Sleep(time.Millisecond)
			continue
		}
		for _, n := range []string{"cr", "root"} {
			if err := advMatches(c, n, before[n], false); err != nil {
				t.Error(err)
			}
		}
		for _, n := range names[:4] {
			if got := c.of(n); len(got) > 0 {
				t.Errorf("%s, unregistered, still reports %v", n, got)
			}
		}
		return
	}
	t.Fatal("the pools' Stats kept moving after they were quiet")
}

// TestAdvTreeTwoPoolsUnderOneNameAndNilSources: two pools observed under one name through one
// meter are both accepted (the instruments are shared); once one is unregistered, the other
// reports its own Stats exactly. Observe and Histograms panic with their documented messages
// for a nil *crew.Keyed and a nil *crew.FuncPool as for a nil *crew.Pool.
func TestAdvTreeTwoPoolsUnderOneNameAndNilSources(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	meter := advMeterProvider(t, reader)
	p := crew.New(2)
	defer p.StopAndWait()
	q := p.Sub(1)
	regP, err := crewotel.Observe(meter, "same", p)
	if err != nil {
		t.Fatal(err)
	}
	defer regP.Unregister()
	regQ, err := crewotel.Observe(meter, "same", q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		adv3Must(t, "p", p.Submit(func() {}))
		if i < 2 {
			adv3Must(t, "q", q.Submit(func() {}))
		}
	}
	adv2Await(t, "Wait", crewtest.Go(func() { q.Wait(); p.Wait() }))
	if _, err := advCollect(reader); err != nil {
		t.Fatalf("a collection of two pools under one name: %v", err)
	}
	if err := regQ.Unregister(); err != nil {
		t.Fatal(err)
	}
	c, err := advCollect(reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := advMatches(c, "same", p.Stats(), false); err != nil {
		t.Error(err)
	}

	for what, src := range map[string]crewotel.StatsSource{
		"a nil *crew.Keyed":    (*crew.Keyed[int])(nil),
		"a nil *crew.FuncPool": (*crew.FuncPool[int])(nil),
		"a nil *crew.Pool":     (*crew.Pool)(nil),
	} {
		catch := func(fn func()) (v any) {
			defer func() { v = recover() }()
			fn()
			return nil
		}
		if v := catch(func() { _, _ = crewotel.Observe(meter, "nil", src) }); v != "crewotel: Observe: src must not be nil" {
			t.Errorf("Observe of %s: panic %v", what, fmt.Sprint(v))
		}
		if v := catch(func() { crewotel.Histograms("nil", src) }); v != "crewotel: Histograms: src must not be nil" {
			t.Errorf("Histograms of %s: panic %v", what, fmt.Sprint(v))
		}
	}
}
