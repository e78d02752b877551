package prom_test

// Adversarial tests: collectors for every pool of a tree (a pool, a sub-pool, sub-pools of
// that one, a Keyed on the sub-pool) after traffic whose every count is known in advance, so
// each exported value is checked against crew.Stats and against the count the traffic
// implies.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/prom"
	"github.com/prometheus/client_golang/prometheus"
)

// adv3Tree is a pool; its sub-pool "sub" with a Keyed; and five sub-pools of sub: "dis"
// (DiscardOldest), "cr" (CallerRuns), "rej" (non-blocking), "stp" (paused, then StopNow) and
// "tt" (WithTaskTimeout). All but the Keyed have latency histograms.
type adv3Tree struct {
	root, sub, dis, cr, rej, stp, tt *crew.Pool
	keyed                            *crew.Keyed[int]
	srcs                             map[string]prom.StatsSource
	pools                            map[string]*crew.Pool
}

func newAdv3Tree(t *testing.T) *adv3Tree {
	t.Helper()
	h := crew.WithLatencyHistograms()
	root := crew.New(3, h, crew.WithPanicHandler(func(any, []byte) {}))
	t.Cleanup(root.StopAndWait)
	sub := root.Sub(3, h)
	tr := &adv3Tree{
		root: root, sub: sub,
		dis:   sub.Sub(1, h, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest)),
		cr:    sub.Sub(1, h, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns)),
		rej:   sub.Sub(1, h, crew.WithQueueSize(1), crew.WithNonBlocking()),
		stp:   sub.Sub(1, h),
		tt:    sub.Sub(1, h, crew.WithTaskTimeout(20*time.Millisecond)),
		keyed: crew.NewKeyed[int](sub),
	}
	tr.pools = map[string]*crew.Pool{"root": tr.root, "sub": tr.sub, "dis": tr.dis, "cr": tr.cr,
		"rej": tr.rej, "stp": tr.stp, "tt": tr.tt}
	tr.srcs = map[string]prom.StatsSource{"keyed": tr.keyed}
	for name, p := range tr.pools {
		tr.srcs[name] = p
	}
	return tr
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
func (tr *adv3Tree) traffic(t *testing.T) (want map[string]map[string]float64, hists map[string]uint64) {
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

	counts := func(acc, comp, pan, rej, can, dis, cr, ret, skip float64) map[string]float64 {
		return map[string]float64{
			"crew_tasks_accepted_total": acc, "crew_tasks_completed_total": comp,
			"crew_tasks_panicked_total": pan, "crew_tasks_rejected_total": rej,
			"crew_tasks_canceled_total": can, "crew_tasks_discarded_total": dis,
			"crew_tasks_caller_ran_total": cr, "crew_tasks_returned_total": ret,
			"crew_tasks_skipped_total": skip,
			"crew_tasks_running":       0, "crew_tasks_waiting": 0, "crew_workers_idle": 0,
			"crew_workers_max": 1,
		}
	}
	want = map[string]map[string]float64{
		//                acc comp pan rej can dis cr ret skip
		"dis": counts(4, 2, 1, 0, 0, 1, 0, 0, 0),
		"cr":  counts(3, 3, 0, 0, 0, 0, 1, 0, 0),
		"rej": counts(2, 2, 0, 2, 1, 0, 0, 0, 0),
		"stp": counts(3, 0, 0, 0, 0, 0, 0, 3, 0),
		"tt":  counts(5, 2, 0, 0, 0, 0, 0, 0, 3),
	}
	want["keyed"] = map[string]float64{"crew_tasks_accepted_total": 5, "crew_tasks_completed_total": 4,
		"crew_tasks_panicked_total": 1, "crew_tasks_running": 0, "crew_tasks_waiting": 0,
		"crew_tasks_discarded_total": 0, "crew_tasks_returned_total": 0, "crew_tasks_skipped_total": 0}
	hists = map[string]uint64{"dis": 3, "cr": 3, "rej": 2, "stp": 0, "tt": 2,
		"sub":  2 + 5, // its own tasks and the keyed ones, not its sub-pools'
		"root": 2,
	}
	return want, hists
}

// adv3Check scrapes reg once the tree is quiet, requires every value to equal its Stats field
// (advQuietMatch), the hand counts in want, the histogram counts in hists, and each quiet
// pool's histograms to agree with its own counters.
func (tr *adv3Tree) adv3Check(t *testing.T, reg prometheus.Gatherer, want map[string]map[string]float64, hists map[string]uint64) advScrape {
	t.Helper()
	sc := advQuietMatch(t, reg, tr.srcs)
	for name, w := range want {
		adv2Compare(t, name, sc.values[name], w)
	}
	for name, n := range hists {
		for _, hn := range []string{"crew_task_wait_seconds", "crew_task_run_seconds"} {
			h := sc.hists[name][hn]
			if h == nil || h.GetSampleCount() != n {
				t.Errorf("%s: %s counts %d (present %v), want %d", name, hn, h.GetSampleCount(), h != nil, n)
			}
		}
	}
	for name, src := range tr.srcs {
		s := src.Stats()
		if s.Running != 0 || s.Waiting != 0 || advEnded(s) != s.Accepted {
			t.Errorf("%s: quiet, Stats %+v break Accepted = Completed+Panicked+Discarded+Returned+Skipped", name, s)
		}
	}
	// A leaf pool's histograms count exactly the tasks that ran on it: Completed+Panicked.
	for _, name := range []string{"dis", "cr", "rej", "stp", "tt"} {
		v := sc.values[name]
		ran := v["crew_tasks_completed_total"] + v["crew_tasks_panicked_total"]
		if h := sc.hists[name]["crew_task_run_seconds"]; h == nil || float64(h.GetSampleCount()) != ran {
			t.Errorf("%s: the run histogram counts %d, completed+panicked %v", name, h.GetSampleCount(), ran)
		}
	}
	return sc
}

// TestAdvTreeKnownTrafficReadsBackEveryFieldOfEveryPool exports every pool of a tree (a pool,
// its sub-pool, five sub-pools of that, a Keyed on the sub-pool) and puts on them traffic with
// known counts: completions, panics, runtime.Goexit (also in a caller-run task), a discard by
// DiscardOldest, a caller-run by CallerRuns, rejections, a canceled submit, a paused backlog
// StopNow hands back, a canceled future and functions skipped after a WithTaskTimeout error.
// Every value read back from a real registry equals the Stats field it exports and the count
// the traffic implies; the histograms count the tasks that ran on each pool (a sub-pool's
// own and its Keyed's, not its sub-pools'). Then StopNow of the sub-pool with a paused backlog
// in itself, its Keyed and a sub-pool of it: each pool exports what it lost, the root works on;
// and once the root has been shut down, its metrics still read, unchanged.
func TestAdvTreeKnownTrafficReadsBackEveryFieldOfEveryPool(t *testing.T) {
	tr := newAdv3Tree(t)
	reg := prometheus.NewPedanticRegistry()
	for name, src := range tr.srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	want, hists := tr.traffic(t)
	tr.adv3Check(t, reg, want, hists)

	// A paused backlog in sub, its Keyed and its sub-pool cr; StopNow of sub hands all back.
	tr.sub.Pause()
	var ran atomic.Int64
	adv3Must(t, "keyed", tr.keyed.Submit(3, func() { ran.Add(1) }))
	adv3Must(t, "sub", tr.sub.Submit(func() { ran.Add(1) }))
	adv3Must(t, "cr", tr.cr.Submit(func() { ran.Add(1) }))
	sc, err := advGather(reg)
	if err != nil {
		t.Fatal(err)
	}
	adv2Compare(t, "sub paused", sc.values["sub"], map[string]float64{"crew_pool_paused": 1})
	adv2Compare(t, "keyed under a paused pool", sc.values["keyed"], map[string]float64{"crew_tasks_waiting": 1})
	adv2Compare(t, "cr under a paused pool", sc.values["cr"], map[string]float64{"crew_tasks_waiting": 1, "crew_pool_paused": 0})
	back := tr.sub.StopNow()
	if len(back) != 3 {
		t.Fatalf("sub.StopNow returned %d tasks, want 3 (its own, its Keyed's, its sub-pool's)", len(back))
	}
	adv2Await(t, "sub", crewtest.Go(tr.sub.Wait))
	if err := tr.cr.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit on a sub-pool of a sub-pool StopNow stopped = %v", err)
	}
	adv3Must(t, "root after its sub-pool stopped", tr.root.Submit(func() {}))
	adv2Await(t, "root", crewtest.Go(tr.root.Wait))
	if n := ran.Load(); n != 0 {
		t.Errorf("%d tasks StopNow returned ran", n)
	}
	want["cr"]["crew_tasks_accepted_total"]++
	want["cr"]["crew_tasks_returned_total"]++
	want["keyed"]["crew_tasks_accepted_total"]++
	want["keyed"]["crew_tasks_returned_total"]++
	hists["root"]++
	sc = tr.adv3Check(t, reg, want, hists)
	if got := sc.values["sub"]["crew_tasks_returned_total"]; got < 1 {
		t.Errorf("sub: returned %v, want at least its own task", got)
	}

	// Shut down: the same values, read twice.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adv3Must(t, "Shutdown", tr.root.Shutdown(ctx))
	hists["root"] = 3
	after := tr.adv3Check(t, reg, want, hists)
	again := tr.adv3Check(t, reg, want, hists)
	for name := range tr.srcs {
		for m, v := range after.values[name] {
			if again.values[name][m] != v {
				t.Errorf("%s: %s moved on a shut-down tree: %v, then %v", name, m, v, again.values[name][m])
			}
		}
	}
}

// TestAdvTreeRegisterAndUnregisterWhileTrafficRuns registers and unregisters collectors of
// every pool of a tree, over and over, while tasks run on all of them and other goroutines
// scrape: Register of a collector not registered succeeds, Unregister of a registered one
// reports true, no scrape fails, every scrape is consistent in itself, and once the traffic
// has stopped, every collector still registered reads its Stats exactly.
func TestAdvTreeRegisterAndUnregisterWhileTrafficRuns(t *testing.T) {
	tr := newAdv3Tree(t)
	reg := prometheus.NewPedanticRegistry()
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for name, p := range tr.pools {
		crewtest.Repeat(&wg, stop, func(i int) {
			task := func() {
				if i%7 == 3 {
					panic("planned")
				}
			}
			var err error
			switch name {
			case "cr":
				// A caller-run task that panics goes to the panic handler on the caller.
				err = p.Submit(task)
			case "rej":
				if !p.TrySubmit(task) {
					err = crew.ErrQueueFull
				}
			case "stp":
				if i%50 == 0 {
					p.Pause()
					err = p.Submit(task)
					p.Resume()
				} else {
					err = p.Submit(task)
				}
			default:
				err = p.Submit(task)
			}
			if err == nil {
				accepted.Add(1)
			}
			if i%8 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	crewtest.Repeat(&wg, stop, func(i int) {
		_ = tr.keyed.Submit(i%4, func() {})
		if i%8 == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	})
	var scrapers sync.WaitGroup
	var scrapes atomic.Int64
	for range 2 {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sc, err := advGather(reg)
				if err != nil {
					t.Errorf("scrape: %v", err)
					return
				}
				for name := range sc.values {
					if err := advConsistent(advScrape{}, sc, name, 3); err != nil {
						t.Errorf("scrape: %v", err)
						return
					}
				}
				scrapes.Add(1)
			}
		}()
	}
	collectors := map[string]*prom.Collector{}
	for name, src := range tr.srcs {
		collectors[name] = prom.NewCollector(name, src)
	}
	registered := map[string]bool{}
	names := []string{"root", "sub", "dis", "cr", "rej", "stp", "tt", "keyed"}
	for i := range rounds {
		name := names[i%len(names)]
		if registered[name] {
			if !reg.Unregister(collectors[name]) {
				t.Fatalf("round %d: Unregister(%s) = false for a registered collector", i, name)
			}
			registered[name] = false
		} else {
			if err := reg.Register(collectors[name]); err != nil {
				t.Fatalf("round %d: Register(%s): %v", i, name, err)
			}
			registered[name] = true
		}
		if i%3 == 0 {
			// A fresh collector of the same pool may take the place of the old one.
			if registered[name] {
				reg.Unregister(collectors[name])
				collectors[name] = prom.NewCollector(name, tr.srcs[name])
				if err := reg.Register(collectors[name]); err != nil {
					t.Fatalf("round %d: Register of a fresh collector of %s: %v", i, name, err)
				}
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	scrapers.Wait()
	tr.sub.Resume()
	adv2Await(t, "the tree", crewtest.Go(func() {
		tr.keyed.Wait()
		for _, p := range tr.pools {
			p.Wait()
		}
	}))
	if scrapes.Load() == 0 {
		t.Fatal("no scrape completed")
	}
	srcs := map[string]prom.StatsSource{}
	for name, ok := range registered {
		if ok {
			srcs[name] = tr.srcs[name]
		}
	}
	sc := advQuietMatch(t, reg, srcs)
	for name := range tr.srcs {
		if _, ok := sc.values[name]; ok != registered[name] {
			t.Errorf("%s: scraped %v, registered %v", name, ok, registered[name])
		}
	}
}

// TestAdvTreeTwoPoolsUnderOneNameAndNilSources: two live pools under the same name on one
// registry are refused with an error, not a panic, and the first goes on reading its own
// Stats; on two registries each reads its own. NewCollector panics with its documented message
// for a nil *crew.Keyed and a nil *crew.FuncPool as for a nil *crew.Pool.
func TestAdvTreeTwoPoolsUnderOneNameAndNilSources(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	q := p.Sub(1)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("same", p))
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("Register of a second pool under a taken name panicked: %v", v)
			}
		}()
		err = reg.Register(prom.NewCollector("same", q))
	}()
	if err == nil {
		t.Fatal("a second pool under a taken name was registered")
	}
	other := prometheus.NewPedanticRegistry()
	other.MustRegister(prom.NewCollector("same", q))
	for i := range 5 {
		adv3Must(t, "p", p.Submit(func() {}))
		if i < 2 {
			adv3Must(t, "q", q.Submit(func() {}))
		}
	}
	adv2Await(t, "Wait", crewtest.Go(func() { q.Wait(); p.Wait() }))
	advQuietMatch(t, reg, map[string]prom.StatsSource{"same": p})
	advQuietMatch(t, other, map[string]prom.StatsSource{"same": q})
	if got := q.Stats().Accepted; got != 2 {
		t.Errorf("q accepted %d, want 2", got)
	}

	for what, src := range map[string]prom.StatsSource{
		"a nil *crew.Keyed":    (*crew.Keyed[int])(nil),
		"a nil *crew.FuncPool": (*crew.FuncPool[int])(nil),
		"a nil *crew.Pool":     (*crew.Pool)(nil),
	} {
		v := func() (v any) {
			defer func() { v = recover() }()
			prom.NewCollector("nil", src)
			return nil
		}()
		if v != "prom: NewCollector: src must not be nil" {
			t.Errorf("NewCollector of %s: panic %v", what, fmt.Sprint(v))
		}
	}
}

// TestAdvTreeKeyedOnASubPoolReportsItsPoolsLimitPauseAndLosses: Keyed.Stats' doc says
// MaxWorkers and Paused are the pool's, Returned counts the keyed tasks StopNow handed back
// and Discarded those DiscardOldest dropped with their key's turn. A Keyed on a sub-pool of a
// sub-pool, exported: after Resize of its pool it reports the new limit; while its pool is
// paused it reports paused (and not while only an ancestor is); a turn of three keyed tasks
// dropped by DiscardOldest counts 3 in Discarded, each handed to the discard handler; a
// backlog StopNow of the root takes out counts in Returned, and StopNow hands each keyed task
// back. Each time, every metric read back equals Keyed.Stats and the hand count.
func TestAdvTreeKeyedOnASubPoolReportsItsPoolsLimitPauseAndLosses(t *testing.T) {
	var discarded atomic.Int64
	root := crew.New(2)
	defer root.StopAndWait()
	mid := root.Sub(2)
	leaf := mid.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { discarded.Add(1) }))
	k := crew.NewKeyed[int](leaf)
	reg := prometheus.NewPedanticRegistry()
	srcs := map[string]prom.StatsSource{"root": root, "mid": mid, "leaf": leaf, "keyed": k}
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	scrape := func() advScrape {
		t.Helper()
		sc, err := advGather(reg)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}

	leaf.Resize(3)
	adv2Compare(t, "after leaf.Resize(3)", scrape().values["keyed"], map[string]float64{"crew_workers_max": 3})
	leaf.Resize(1)
	mid.Pause()
	adv2Compare(t, "while mid is paused", scrape().values["keyed"], map[string]float64{"crew_pool_paused": 0})
	mid.Resume()
	leaf.Pause()
	adv2Compare(t, "while leaf is paused", scrape().values["keyed"], map[string]float64{"crew_pool_paused": 1})
	leaf.Resume()

	// A blocker holds leaf's one slot; a turn of three keyed tasks waits in leaf's queue of
	// one; a plain submit drops it.
	block, started, release := adv3Blocker()
	adv3Must(t, "leaf blocker", leaf.Submit(block))
	adv2Await(t, "leaf blocker start", started)
	var ran atomic.Int64
	for range 3 {
		adv3Must(t, "keyed", k.Submit(7, func() { ran.Add(1) }))
	}
	adv2Compare(t, "a turn queued", scrape().values["keyed"], map[string]float64{
		"crew_tasks_accepted_total": 3, "crew_tasks_waiting": 3, "crew_tasks_running": 0})
	adv3Must(t, "leaf dropping", leaf.Submit(func() {}))
	close(release)
	adv2Await(t, "leaf", crewtest.Go(func() { k.Wait(); leaf.Wait() }))
	if n := ran.Load(); n != 0 {
		t.Errorf("%d dropped keyed tasks ran", n)
	}
	if n := discarded.Load(); n != 3 {
		t.Errorf("the discard handler got %d tasks, want the 3 keyed ones", n)
	}
	sc := advQuietMatch(t, reg, srcs)
	adv2Compare(t, "after the drop", sc.values["keyed"], map[string]float64{
		"crew_tasks_accepted_total": 3, "crew_tasks_discarded_total": 3, "crew_tasks_completed_total": 0,
		"crew_tasks_waiting": 0, "crew_tasks_running": 0})
	adv2Compare(t, "after the drop", sc.values["leaf"], map[string]float64{
		"crew_tasks_discarded_total": 1, "crew_tasks_accepted_total": 3, "crew_tasks_completed_total": 2})

	// A paused backlog of keyed tasks on two keys; StopNow of the root hands them back.
	root.Pause()
	for i := range 4 {
		adv3Must(t, "keyed", k.Submit(i%2, func() { ran.Add(1) }))
	}
	adv2Compare(t, "a paused backlog", scrape().values["keyed"], map[string]float64{
		"crew_tasks_accepted_total": 7, "crew_tasks_waiting": 4})
	back := root.StopNow()
	if len(back) != 4 {
		t.Fatalf("root.StopNow returned %d tasks, want the 4 keyed ones", len(back))
	}
	adv2Await(t, "the tree", crewtest.Go(func() { k.Wait(); leaf.Wait(); mid.Wait(); root.Wait() }))
	if n := ran.Load(); n != 0 {
		t.Errorf("%d keyed tasks StopNow returned ran", n)
	}
	sc = advQuietMatch(t, reg, srcs)
	adv2Compare(t, "after StopNow", sc.values["keyed"], map[string]float64{
		"crew_tasks_accepted_total": 7, "crew_tasks_discarded_total": 3, "crew_tasks_returned_total": 4,
		"crew_tasks_waiting": 0, "crew_tasks_running": 0})
	for name, src := range srcs {
		if s := src.Stats(); advEnded(s) != s.Accepted {
			t.Errorf("%s: Stats %+v break the identity", name, s)
		}
	}
}

// TestAdvTreeShutdownThatGivesUpSkipsAcrossTheTreeAndExportsIt: Shutdown's doc says that when
// its ctx ends first, the functions given with a context still queued on the pool or its
// sub-pools are skipped at once, their futures and groups failing with ErrStopped. A plain
// task of a sub-pool of a sub-pool holds the root's only slot; a group of three functions
// waits on that leaf, two futures on the middle sub-pool, one on the root. Shutdown with a
// short deadline returns DeadlineExceeded, each future and the group fail with ErrStopped
// before the plain task returns, none of the functions runs, and each pool exports its own
// skipped functions in Skipped (or, until a worker reaches their places, in Waiting), equal to
// its Stats, and exactly in Skipped once the tree has drained.
func TestAdvTreeShutdownThatGivesUpSkipsAcrossTheTreeAndExportsIt(t *testing.T) {
	root := crew.New(1, crew.WithLatencyHistograms())
	defer root.StopAndWait()
	mid := root.Sub(1, crew.WithLatencyHistograms())
	leaf := mid.Sub(1, crew.WithLatencyHistograms())
	reg := prometheus.NewPedanticRegistry()
	srcs := map[string]prom.StatsSource{"root": root, "mid": mid, "leaf": leaf}
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	block, started, release := adv3Blocker()
	adv3Must(t, "leaf blocker", leaf.Submit(block))
	adv2Await(t, "leaf blocker start", started)
	var ran atomic.Int64
	bg := context.Background()
	g, _ := leaf.Group(bg)
	for range 3 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	fn := func(context.Context) (int, error) { ran.Add(1); return 0, nil }
	fs := []*crew.Future[int]{crew.GoContext(bg, mid, fn), crew.GoContext(bg, mid, fn), crew.GoContext(bg, root, fn)}
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := root.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a plain task holding the only slot = %v, want DeadlineExceeded", err)
	}
	for i, f := range fs {
		select {
		case <-f.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("future %d still waits after Shutdown gave up", i)
		}
		if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("future %d: %v, want ErrStopped", i, err)
		}
	}
	var gerr error
	adv2Await(t, "the group", crewtest.Go(func() { gerr = g.Wait() }))
	if !errors.Is(gerr, crew.ErrStopped) {
		t.Errorf("the group: %v, want ErrStopped", gerr)
	}
	// Stats' doc says a canceled future's place counts as Waiting until a worker reaches it;
	// the places of the functions Shutdown skipped may too, so here each pool's skipped
	// functions are in Skipped or Waiting, and nowhere else.
	want := map[string]map[string]float64{
		"leaf": {"crew_tasks_skipped_total": 3, "crew_tasks_running": 0, "crew_tasks_accepted_total": 4},
		"mid":  {"crew_tasks_skipped_total": 2},
		"root": {"crew_tasks_skipped_total": 1},
	}
	sc := advQuietMatch(t, reg, srcs)
	for name, w := range want {
		v := sc.values[name]
		if got := v["crew_tasks_skipped_total"] + v["crew_tasks_waiting"]; got != w["crew_tasks_skipped_total"] {
			t.Errorf("%s while the plain task runs: skipped %v + waiting %v, want %v", name,
				v["crew_tasks_skipped_total"], v["crew_tasks_waiting"], w["crew_tasks_skipped_total"])
		}
		if v["crew_tasks_running"] != 1 || v["crew_tasks_completed_total"] != 0 {
			t.Errorf("%s while the plain task runs: %v, want one task running, none completed", name, v)
		}
	}
	close(release)
	adv2Await(t, "StopAndWait", crewtest.Go(root.StopAndWait))
	want["leaf"]["crew_tasks_completed_total"] = 1
	sc = advQuietMatch(t, reg, srcs)
	for name, w := range want {
		adv2Compare(t, "after StopAndWait", sc.values[name], w)
		w := sc.values[name]
		ended := w["crew_tasks_completed_total"] + w["crew_tasks_panicked_total"] + w["crew_tasks_skipped_total"] +
			w["crew_tasks_discarded_total"] + w["crew_tasks_returned_total"]
		if ended != w["crew_tasks_accepted_total"] || w["crew_tasks_waiting"] != 0 {
			t.Errorf("%s after StopAndWait: %v do not add up", name, w)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d skipped functions ran", n)
	}
	for _, hn := range []string{"crew_task_wait_seconds", "crew_task_run_seconds"} {
		for name, n := range map[string]uint64{"leaf": 1, "mid": 0, "root": 0} {
			if h := sc.hists[name][hn]; h.GetSampleCount() != n {
				t.Errorf("%s: %s counts %d, want %d", name, hn, h.GetSampleCount(), n)
			}
		}
	}
}

// TestAdvTreeKeyedOnADiscardingSubPoolScrapesConsistentlyUnderChurn: a Keyed on a DiscardOldest
// sub-pool of a sub-pool, whose turns plain submits keep dropping, while the middle pool is
// paused and resumed and two goroutines scrape. Every scrape of every pool and of the Keyed
// is consistent in itself (Completed+Panicked+Discarded+Returned+Skipped, plus Running and
// Waiting, equals Accepted; no counter goes back); the keyed tasks that ran and those the
// discard handler got add up to what Keyed.Stats exports; at the end StopNow of the root
// hands back the rest, and every metric equals its Stats.
func TestAdvTreeKeyedOnADiscardingSubPoolScrapesConsistentlyUnderChurn(t *testing.T) {
	var handed atomic.Int64
	root := crew.New(3, crew.WithPanicHandler(func(any, []byte) {}))
	defer root.StopAndWait()
	mid := root.Sub(2)
	leaf := mid.Sub(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { handed.Add(1) }))
	k := crew.NewKeyed[int](leaf)
	reg := prometheus.NewPedanticRegistry()
	srcs := map[string]prom.StatsSource{"root": root, "mid": mid, "leaf": leaf, "keyed": k}
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	n := 400
	if testing.Short() {
		n = 100
	}
	var keyedRan, plainRan, plainAccepted atomic.Int64
	stop := make(chan struct{})
	var scrapers sync.WaitGroup
	for range 2 {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			var prev advScrape
			for {
				select {
				case <-stop:
					return
				default:
				}
				sc, err := advGather(reg)
				if err != nil {
					t.Errorf("scrape: %v", err)
					return
				}
				for name := range srcs {
					if err := advConsistent(prev, sc, name, 3); err != nil {
						t.Errorf("scrape: %v", err)
						return
					}
				}
				prev = sc
			}
		}()
	}
	var churn sync.WaitGroup
	crewtest.Repeat(&churn, stop, func(int) {
		mid.Pause()
		time.Sleep(100 * time.Microsecond)
		mid.Resume()
		time.Sleep(300 * time.Microsecond)
	})
	var submitters sync.WaitGroup
	for g := range 2 {
		submitters.Add(1)
		go func() {
			defer submitters.Done()
			for i := range n {
				if (i+g)%3 == 0 {
					if leaf.Submit(func() { plainRan.Add(1) }) == nil {
						plainAccepted.Add(1)
					}
				} else {
					_ = k.Submit(i%4, func() {
						keyedRan.Add(1)
						if i%11 == 5 {
							panic("planned")
						}
					})
				}
				if i%16 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
	}
	adv2Await(t, "the submitters", crewtest.Go(submitters.Wait))
	root.Pause()
	back := root.StopNow()
	close(stop)
	churn.Wait()
	mid.Resume() // the churn may have left it paused
	scrapers.Wait()
	adv2Await(t, "the tree", crewtest.Go(func() { k.Wait(); root.StopAndWait() }))
	sc := advQuietMatch(t, reg, srcs)
	ks := k.Stats()
	if got := uint64(keyedRan.Load()); got != ks.Completed+ks.Panicked {
		t.Errorf("%d keyed tasks ran, Keyed.Stats says %d completed and panicked", got, ks.Completed+ks.Panicked)
	}
	if advEnded(ks) != ks.Accepted || ks.Waiting != 0 || ks.Running != 0 {
		t.Errorf("Keyed.Stats %+v do not add up", ks)
	}
	// Tell the plain tasks StopNow handed back from the keyed ones by running them.
	plainBefore, keyedBefore := plainRan.Load(), keyedRan.Load()
	for _, f := range back {
		func() {
			defer func() { _ = recover() }()
			f()
		}()
	}
	plainBack, keyedBack := plainRan.Load()-plainBefore, keyedRan.Load()-keyedBefore
	if plainBack+keyedBack != int64(len(back)) {
		t.Errorf("StopNow handed back %d tasks, running them ran %d plain and %d keyed", len(back), plainBack, keyedBack)
	}
	if uint64(keyedBack) != ks.Returned {
		t.Errorf("StopNow handed back %d keyed tasks, Keyed.Stats.Returned %d", keyedBack, ks.Returned)
	}
	// The discard handler gets each dropped plain task and each keyed task of a dropped turn.
	plainDropped := plainAccepted.Load() - plainBefore - plainBack
	if got, want := handed.Load(), plainDropped+int64(ks.Discarded); got != want {
		t.Errorf("the discard handler got %d tasks; %d plain ones were dropped and Keyed.Stats.Discarded is %d",
			got, plainDropped, ks.Discarded)
	}
	if v := sc.values["keyed"]; v["crew_tasks_discarded_total"] != float64(ks.Discarded) || v["crew_tasks_returned_total"] != float64(ks.Returned) {
		t.Errorf("keyed exported %v, Stats %+v", v, ks)
	}
	ls := leaf.Stats()
	t.Logf("keyed %+v; leaf %+v; %d handed to the discard handler, %d back from StopNow", ks, ls, handed.Load(), len(back))
}

// TestAdvTreeShutdownOfASubPoolSkipsOnlyItsSubtree: Shutdown of a sub-pool whose ctx ends first
// skips the functions with a context queued on it and on its sub-pools, and cancels the
// contexts of those running with cause ErrStopped; its parent and siblings, not stopped, keep
// theirs and run them. A pool of 3 runs a plain task of its own and, in a sub-pool of a
// sub-pool, a plain task and a function watching its context; two functions wait in that
// leaf, one in the middle sub-pool, one in a sibling and one in the pool. Shutdown of the
// middle sub-pool returns DeadlineExceeded; the watcher sees ErrStopped; the three functions
// of the subtree fail with ErrStopped and never run; the sibling's and the pool's run and
// succeed. Every pool then exports exactly its Stats, and the counts the traffic implies.
func TestAdvTreeShutdownOfASubPoolSkipsOnlyItsSubtree(t *testing.T) {
	root := crew.New(3, crew.WithLatencyHistograms())
	defer root.StopAndWait()
	mid := root.Sub(2)
	leaf := mid.Sub(2, crew.WithLatencyHistograms())
	sib := root.Sub(1)
	reg := prometheus.NewPedanticRegistry()
	srcs := map[string]prom.StatsSource{"root": root, "mid": mid, "leaf": leaf, "sib": sib}
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	bg := context.Background()
	rootBlock, rootStarted, rootRelease := adv3Blocker()
	adv3Must(t, "root blocker", root.Submit(rootBlock))
	adv2Await(t, "root blocker start", rootStarted)
	leafBlock, leafStarted, leafRelease := adv3Blocker()
	adv3Must(t, "leaf blocker", leaf.Submit(leafBlock))
	adv2Await(t, "leaf blocker start", leafStarted)
	watching := make(chan struct{})
	watcher := crew.GoContext(bg, leaf, func(ctx context.Context) (int, error) {
		close(watching)
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return 0, errors.New("the context was not canceled")
		}
	})
	adv2Await(t, "the watcher's start", watching)
	var ran atomic.Int64
	skipped := func(context.Context) (int, error) { ran.Add(1); return 0, nil }
	doomed := []*crew.Future[int]{crew.GoContext(bg, leaf, skipped), crew.GoContext(bg, leaf, skipped), crew.GoContext(bg, mid, skipped)}
	kept := []*crew.Future[int]{
		crew.GoContext(bg, sib, func(context.Context) (int, error) { return 1, nil }),
		crew.GoContext(bg, root, func(context.Context) (int, error) { return 2, nil }),
	}
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := mid.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown of the middle sub-pool with a plain task running in it = %v, want DeadlineExceeded", err)
	}
	if _, err := watcher.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("the running function's context ended with %v, want cause ErrStopped", err)
	}
	for i, f := range doomed {
		select {
		case <-f.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("function %d of the subtree still waits after its Shutdown gave up", i)
		}
		if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("function %d of the subtree: %v, want ErrStopped", i, err)
		}
	}
	for i, f := range kept {
		var v int
		var err error
		adv2Await(t, "a function outside the subtree", crewtest.Go(func() { v, err = f.Wait() }))
		if err != nil || v != i+1 {
			t.Errorf("function %d outside the subtree: %d, %v; want %d, nil", i, v, err, i+1)
		}
	}
	if err := mid.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit on the shut-down sub-pool = %v", err)
	}
	if err := leaf.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit on a sub-pool of the shut-down sub-pool = %v", err)
	}
	close(leafRelease)
	close(rootRelease)
	adv2Await(t, "the tree", crewtest.Go(func() { leaf.Wait(); mid.Wait(); sib.Wait(); root.Wait() }))
	if n := ran.Load(); n != 0 {
		t.Errorf("%d skipped functions ran", n)
	}
	sc := advQuietMatch(t, reg, srcs)
	adv2Compare(t, "leaf", sc.values["leaf"], map[string]float64{"crew_tasks_accepted_total": 4,
		"crew_tasks_completed_total": 2, "crew_tasks_skipped_total": 2, "crew_tasks_waiting": 0, "crew_tasks_running": 0})
	adv2Compare(t, "mid", sc.values["mid"], map[string]float64{"crew_tasks_skipped_total": 1})
	adv2Compare(t, "sib", sc.values["sib"], map[string]float64{"crew_tasks_accepted_total": 1,
		"crew_tasks_completed_total": 1, "crew_tasks_skipped_total": 0})
	adv2Compare(t, "root", sc.values["root"], map[string]float64{"crew_tasks_skipped_total": 0})
	for name, src := range srcs {
		if s := src.Stats(); advEnded(s) != s.Accepted {
			t.Errorf("%s: %+v do not add up", name, s)
		}
	}
	// The leaf's histograms count its two tasks that ran; the root's its own two.
	for name, want := range map[string]uint64{"leaf": 2, "root": 2} {
		if h := sc.hists[name]["crew_task_run_seconds"]; h.GetSampleCount() != want {
			t.Errorf("%s: run histogram counts %d, want %d", name, h.GetSampleCount(), want)
		}
	}
}

// TestAdvTreeCallerRunsUnderAPausedAncestorIsExportedWhenItEnds: CallerRuns' doc says a task
// run on its submitter starts only when a worker's start could (it waits while a pool above
// is paused), counts in Accepted, Completed and CallerRan once it has ended, and never runs
// when its SubmitContext's context ends or a stop overtakes it meanwhile. A CallerRuns
// sub-pool of a sub-pool, full, under a paused root: one submitter waits and runs its task
// after Resume; one whose context ends while it waits returns that error (counted in
// Canceled); one overtaken by StopNow of the root returns ErrStopped. Each step's export
// equals Stats and the hand count.
func TestAdvTreeCallerRunsUnderAPausedAncestorIsExportedWhenItEnds(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	mid := root.Sub(2)
	leaf := mid.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	reg := prometheus.NewPedanticRegistry()
	srcs := map[string]prom.StatsSource{"root": root, "mid": mid, "leaf": leaf}
	for name, src := range srcs {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	check := func(what string, want map[string]float64) {
		t.Helper()
		sc := advQuietMatch(t, reg, srcs)
		adv2Compare(t, what, sc.values["leaf"], want)
	}
	block, started, release := adv3Blocker()
	adv3Must(t, "leaf blocker", leaf.Submit(block))
	adv2Await(t, "leaf blocker start", started)
	var ran atomic.Int64
	adv3Must(t, "leaf queued", leaf.Submit(func() { ran.Add(1) }))
	root.Pause()

	var inline atomic.Int64
	var err1 error
	s1 := crewtest.Go(func() { err1 = leaf.Submit(func() { inline.Add(1) }) })
	ctx, cancel := context.WithCancel(context.Background())
	var err2 error
	s2 := crewtest.Go(func() { err2 = leaf.SubmitContext(ctx, func() { inline.Add(100) }) })
	select {
	case <-s1:
		t.Fatalf("a caller-run submit under a paused root returned (%v) before Resume", err1)
	case <-time.After(30 * time.Millisecond):
	}
	if n := inline.Load(); n != 0 {
		t.Fatalf("a caller-run task ran under a paused root (%d)", n)
	}
	check("waiting on the pause", map[string]float64{"crew_tasks_accepted_total": 2, "crew_tasks_caller_ran_total": 0,
		"crew_tasks_running": 1, "crew_tasks_waiting": 1, "crew_tasks_canceled_total": 0})
	cancel()
	adv2Await(t, "the SubmitContext", s2)
	if !errors.Is(err2, context.Canceled) {
		t.Errorf("SubmitContext whose context ended while it waited on a pause = %v", err2)
	}
	check("a waiting caller-run canceled", map[string]float64{"crew_tasks_accepted_total": 2,
		"crew_tasks_caller_ran_total": 0, "crew_tasks_canceled_total": 1})
	root.Resume()
	adv2Await(t, "the caller-run submit", s1)
	if err1 != nil || inline.Load() != 1 {
		t.Fatalf("caller-run submit after Resume = %v, inline %d", err1, inline.Load())
	}
	check("a caller-run ended", map[string]float64{"crew_tasks_accepted_total": 3, "crew_tasks_caller_ran_total": 1,
		"crew_tasks_completed_total": 1, "crew_tasks_running": 1, "crew_tasks_waiting": 1})

	root.Pause()
	var err3 error
	s3 := crewtest.Go(func() { err3 = leaf.Submit(func() { inline.Add(1000) }) })
	select {
	case <-s3:
		t.Fatalf("a caller-run submit under a paused root returned (%v) before Resume", err3)
	case <-time.After(30 * time.Millisecond):
	}
	back := root.StopNow()
	adv2Await(t, "the overtaken submit", s3)
	if !errors.Is(err3, crew.ErrStopped) {
		t.Errorf("a caller-run submit overtaken by StopNow = %v, want ErrStopped", err3)
	}
	if len(back) != 1 {
		t.Errorf("StopNow of the root returned %d tasks, want the one queued in the leaf", len(back))
	}
	close(release)
	adv2Await(t, "StopAndWait", crewtest.Go(root.StopAndWait))
	if n := inline.Load(); n != 1 {
		t.Errorf("caller-run tasks added %d, want only the first (1)", n)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the task StopNow returned ran")
	}
	check("after StopNow", map[string]float64{"crew_tasks_accepted_total": 3, "crew_tasks_caller_ran_total": 1,
		"crew_tasks_completed_total": 2, "crew_tasks_returned_total": 1, "crew_tasks_canceled_total": 1,
		"crew_tasks_rejected_total": 0, "crew_tasks_running": 0, "crew_tasks_waiting": 0})
}
