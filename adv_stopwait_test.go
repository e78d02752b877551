package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// advLog collects the faults that goroutines of a test find, for the test goroutine to report.
type advLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *advLog) add(format string, args ...any) {
	l.mu.Lock()
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *advLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 {
		t.Fatalf("%d faults, the first ones: %q", len(l.errs), l.errs[:min(8, len(l.errs))])
	}
}

// advFuture is a future made inside a task, with what became of it: whether a Cancel racing
// with its start took it (cancel: 1 true, 2 false or not tried), how often its function ran,
// and what its Wait returned.
type advFuture struct {
	f      *crew.Future[int]
	runs   *atomic.Int32
	cancel atomic.Int32
	err    error
	waited bool
}

// advNest is the state that nested waits made inside tasks share: every function they give a
// pool counts its runs in a counter kept here, checked again once everything has stopped.
type advNest struct {
	log      advLog
	mu       sync.Mutex
	runs     []*[]atomic.Int32
	futures  []*advFuture
	cancels  chan *advFuture // futures offered to a goroutine that cancels half of them
	notRunOK []error         // what a function that never ran may fail with
	watch    bool            // the functions wait for their context to end (at most 5 s)
	first    func()          // if set, every function calls it first
	// unordered: the MapSeq wait is MapSeqUnordered. Where the pool may refuse a value
	// mid-range, MapSeq in a task runs into the fault TestAdvMapSeqInATaskRunsNoValueItsPoolRefused
	// shows, at random; MapSeqUnordered yields a refusal at once and does not.
	unordered bool
}

func newAdvNest(notRunOK ...error) *advNest {
	return &advNest{cancels: make(chan *advFuture, 4096), notRunOK: notRunOK}
}

func (a *advNest) counters(n int) []atomic.Int32 {
	runs := make([]atomic.Int32, n)
	a.mu.Lock()
	a.runs = append(a.runs, &runs)
	a.mu.Unlock()
	return runs
}

// allowed reports whether err is what a function that did not run may fail with.
func (a *advNest) allowed(err error) bool {
	for _, ok := range a.notRunOK {
		if errors.Is(err, ok) {
			return true
		}
	}
	return false
}

// cancelHalf cancels every other future offered on a.cancels until it is closed.
func (a *advNest) cancelHalf() <-chan struct{} {
	return goRun(func() {
		i := 0
		for af := range a.cancels {
			i++
			if i%2 == 0 {
				if af.f.Cancel() {
					af.cancel.Store(1)
					continue
				}
			}
			af.cancel.Store(2)
		}
	})
}

// work is a function's work: short, and of varying length; or, with a.watch, a wait for its
// context to end.
func (a *advNest) work(ctx context.Context, i int) {
	if a.first != nil {
		a.first()
	}
	if a.watch {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	advWork(i)
}

// advWork is a function's work: short, and of varying length.
func advWork(i int) {
	switch i % 3 {
	case 0:
		runtime.Gosched()
	case 1:
		time.Sleep(20 * time.Microsecond)
	}
}

// joined returns the errors err joins (errors.Join), or err alone.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// nested runs, from ctx (the context crew gave a running function), one helping wait of kind
// on p over n functions, and checks what it returns against what ran: each function ran at
// most once, and every function that did not run is reported as documented.
func (a *advNest) nested(ctx context.Context, p *crew.Pool, kind, n int) error {
	runs := a.counters(n)
	switch kind % 5 {
	case 0: // GroupAll: every function's refusal or skip is in the joined error
		g, _ := p.GroupAll(ctx)
		for i := range n {
			g.Go(func(ctx context.Context) error { runs[i].Add(1); a.work(ctx, i); return nil })
		}
		err := g.Wait()
		errs := joined(err)
		ran := 0
		for i := range runs {
			ran += int(runs[i].Load())
		}
		if ran+len(errs) != n {
			a.log.add("GroupAll on %p: %d ran and %d errors (%v), want %d in all", p, ran, len(errs), err, n)
		}
		for _, e := range errs {
			if !a.allowed(e) {
				a.log.add("GroupAll: error %v of a function that did not run", e)
			}
		}
		return err
	case 1: // Map: a function that ran left its value, one that did not the zero value
		in := make([]int, n)
		for i := range in {
			in[i] = i
		}
		res, err := crew.Map(ctx, p, in, func(ctx context.Context, i int) (int, error) {
			runs[i].Add(1)
			a.work(ctx, i)
			return i + 1, nil
		})
		for i, v := range res {
			r := runs[i].Load()
			if r > 1 || (v != 0 && v != i+1) || (v == i+1 && r != 1) || (err == nil && r != 1) {
				a.log.add("Map: element %d = %d after %d runs, Map error %v", i, v, r, err)
			}
		}
		if err != nil && !a.allowed(err) {
			a.log.add("Map = %v", err)
		}
		return err
	case 2: // ForEach
		err := crew.ForEach(ctx, p, countTo(n), func(ctx context.Context, i int) error {
			runs[i].Add(1)
			a.work(ctx, i)
			return nil
		})
		for i := range runs {
			if r := runs[i].Load(); r > 1 || (err == nil && r != 1) {
				a.log.add("ForEach: value %d ran %d times, ForEach = %v", i, r, err)
			}
		}
		if err != nil && !a.allowed(err) {
			a.log.add("ForEach = %v", err)
		}
		return err
	case 3: // MapSeq: results in order (or in completion order), each of a function that ran once
		mapSeq := crew.MapSeq[int, int]
		if a.unordered {
			mapSeq = crew.MapSeqUnordered[int, int]
		}
		got := 0
		yielded := make([]bool, n)
		var serr error
		for v, err := range mapSeq(ctx, p, countTo(n), func(ctx context.Context, i int) (int, error) {
			runs[i].Add(1)
			a.work(ctx, i)
			return i + 1, nil
		}) {
			if err != nil {
				serr = err
				break
			}
			switch {
			case v < 1 || v > n || yielded[v-1]:
				a.log.add("MapSeq yielded %d twice or out of range", v)
			case !a.unordered && v != got+1:
				a.log.add("MapSeq yielded %d, want %d", v, got+1)
			default:
				yielded[v-1] = true
			}
			got++
		}
		if serr == nil && got != n {
			a.log.add("MapSeq yielded %d of %d and no error", got, n)
		}
		if serr != nil && !a.allowed(serr) {
			a.log.add("MapSeq failure %v", serr)
		}
		for i := range yielded {
			if r := runs[i].Load(); yielded[i] && r != 1 {
				a.log.add("MapSeq: yielded value %d whose call ran %d times", i, r)
			}
		}
		for i := range runs {
			if runs[i].Load() > 1 {
				a.log.add("MapSeq: value %d ran %d times", i, runs[i].Load())
			}
		}
		return serr
	default: // futures, half of them canceled by another goroutine while this one waits
		fs := make([]*advFuture, n)
		for i := range n {
			af := &advFuture{runs: &runs[i]}
			af.f = crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { runs[i].Add(1); a.work(ctx, i); return i + 1, nil })
			fs[i] = af
			a.cancels <- af
		}
		var first error
		for i, af := range fs {
			v, err := af.f.Wait()
			af.err, af.waited = err, true
			if err == nil && v != i+1 {
				a.log.add("future %d = %d", i, v)
			}
			if first == nil {
				first = err
			}
		}
		a.mu.Lock()
		a.futures = append(a.futures, fs...)
		a.mu.Unlock()
		return first
	}
}

// final checks, once every pool has stopped and drained, that no function ran twice and that
// each future's outcome is one the docs allow.
func (a *advNest) final(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, runs := range a.runs {
		for i := range *runs {
			if r := (*runs)[i].Load(); r > 1 {
				a.log.add("a function ran %d times", r)
			}
		}
	}
	for _, af := range a.futures {
		r := af.runs.Load()
		switch {
		case !af.waited:
			a.log.add("a future was never waited for")
		case af.cancel.Load() == 1:
			// Future.Cancel: "true: it had not started and never will; Wait returns
			// context.Canceled"
			if r != 0 || !errors.Is(af.err, context.Canceled) {
				a.log.add("canceled future: ran %d times, Wait = %v", r, af.err)
			}
		case r == 1:
			if af.err != nil {
				a.log.add("future ran, Wait = %v", af.err)
			}
		case r == 0:
			if !a.allowed(af.err) {
				a.log.add("future did not run, Wait = %v", af.err)
			}
		default:
			a.log.add("future ran %d times", r)
		}
	}
	a.log.check(t)
}

// advPlain counts plain tasks: accepted, run by a worker, handed back by StopNow.
type advPlain struct {
	mu   sync.Mutex
	runs []*atomic.Int32
}

// task returns a plain task that counts its runs.
func (ap *advPlain) task() (func(), *atomic.Int32) {
	r := new(atomic.Int32)
	return func() { r.Add(1) }, r
}

func (ap *advPlain) accepted(r *atomic.Int32) {
	ap.mu.Lock()
	ap.runs = append(ap.runs, r)
	ap.mu.Unlock()
}

// checkHandedBack runs the tasks StopNow handed back, after every pool has drained, and
// checks that each accepted task ran exactly once in all (StopNow: "Every accepted task
// either runs exactly once or is returned (or failed) by StopNow, never both").
func (ap *advPlain) checkHandedBack(t *testing.T, out []func()) {
	t.Helper()
	for _, f := range out {
		f()
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	for i, r := range ap.runs {
		if n := r.Load(); n != 1 {
			t.Fatalf("accepted plain task %d ran %d times counting the %d StopNow handed back", i, n, len(out))
		}
	}
}

// TestAdvStopNowAmidEveryHelpingWaitOnSubSubPools attacks StopNow ("Every accepted task
// either runs exactly once or is returned (or failed) by StopNow, never both"; "Functions of
// Go, Group, Results, Map and ForEach taken out fail with ErrStopped, so their Wait returns")
// of a root, a rate-limited sub-pool or its sub-pool, while functions on the sub-pools are
// inside waits that help ("runs the functions it waits for that no worker has taken yet
// itself") on their own pool or one above, over GroupAll, Map, ForEach, MapSeqUnordered and GoContext
// futures that another goroutine cancels meanwhile (Future.Cancel: "true: it had not
// started and never will"), and with the contexts of some of the waiting functions ending
// meanwhile ("If that context ends before a worker takes the function, the function never
// runs: it is skipped"). Every wait returns, each function ran at most once and one that
// did not run failed with ErrStopped or context.Canceled, each plain task ran once or was
// handed back, and each pool's Stats add up once idle (Stats.Returned, Skipped).
func TestAdvStopNowAmidEveryHelpingWaitOnSubSubPools(t *testing.T) {
	t.Parallel()
	for iter := range 30 {
		a := newAdvNest(crew.ErrStopped, context.Canceled)
		a.unordered = true // see advNest.unordered
		canceller := a.cancelHalf()
		var plain advPlain
		var h advCounts
		root := crew.New(2)
		mid := root.Sub(2, crew.WithPriority(1), crew.WithRateLimit(40000, 8))
		leaf := mid.Sub(2, crew.WithHooks(h.hooks()))
		side := root.Sub(1, crew.WithPriority(2))
		pools := []*crew.Pool{root, mid, leaf, side}

		type outer struct {
			f    *crew.Future[int]
			runs *atomic.Int32
		}
		watching := make(chan struct{})
		var watchers []<-chan struct{}
		for i, p := range pools {
			watchers = append(watchers, advWatch(t, fmt.Sprintf("iter %d pool %d", iter, i), p.Stats, watching))
		}
		var outers []outer
		var cancels []context.CancelFunc // of outer functions' contexts, which end amid StopNow
		for i := range 14 {
			on := []*crew.Pool{mid, leaf}[i%2]
			// a wait helps only with work on its own pool or one above it
			targets := []*crew.Pool{root, mid, leaf}[:2+i%2]
			target := targets[rand.IntN(len(targets))]
			runs := new(atomic.Int32)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%4 == 3 {
				cancels = append(cancels, cancel)
			}
			f := crew.GoContext(ctx, on, func(ctx context.Context) (int, error) {
				runs.Add(1)
				return 0, a.nested(ctx, target, i, 6)
			})
			outers = append(outers, outer{f, runs})
			for _, p := range []*crew.Pool{on, side, root} {
				task, r := plain.task()
				must(t, p.Submit(task))
				plain.accepted(r)
			}
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		victim := []*crew.Pool{root, mid, leaf}[iter%3]
		canceled := goRun(func() {
			for _, cancel := range cancels {
				cancel()
				runtime.Gosched()
			}
		})
		out := victim.StopNow()
		<-canceled
		for i, o := range outers {
			var err error
			awaitReturn(t, fmt.Sprintf("outer function %d's Wait (StopNow of pool %d)", i, iter%3), goRun(func() { _, err = o.f.Wait() }))
			if o.runs.Load() == 0 && !errors.Is(err, crew.ErrStopped) && !errors.Is(err, context.Canceled) {
				t.Fatalf("outer function %d never ran, Wait = %v, want ErrStopped or context.Canceled", i, err)
			}
			if o.runs.Load() > 1 {
				t.Fatalf("outer function %d ran %d times", i, o.runs.Load())
			}
		}
		awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
		close(watching)
		for _, w := range watchers {
			awaitReturn(t, "a Stats watcher", w)
		}
		close(a.cancels)
		awaitReturn(t, "the canceller", canceller)
		a.final(t)
		plain.checkHandedBack(t, out)
		for i, p := range pools {
			idleIdentity(t, fmt.Sprintf("iter %d pool %d", iter, i), p.Stats())
		}
		h.check(t, fmt.Sprintf("iter %d leaf", iter), leaf.Stats())
	}
}

// advCounts counts each hook of a pool that has no sub-pool and no Keyed, whose hooks then
// see every task that Stats counts.
type advCounts struct{ queued, started, finished, rejected atomic.Int64 }

func (h *advCounts) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:   func(crew.TaskInfo) { h.queued.Add(1) },
		Started:  func(crew.TaskInfo) { h.started.Add(1) },
		Finished: func(crew.TaskInfo) { h.finished.Add(1) },
		Rejected: func(error) { h.rejected.Add(1) },
	}
}

// check checks the hooks' counts against s, the idle pool's Stats. Hooks: "A pool's hooks see
// every task of the pool, whatever the door it came through"; "For each task, Queued happens
// before Started, and Started before Finished"; Rejected is told of each submit that did not
// accept its task; and a function skipped, canceled or taken out by StopNow is never started.
func (h *advCounts) check(t *testing.T, what string, s crew.Stats) {
	t.Helper()
	q, st, f, r := h.queued.Load(), h.started.Load(), h.finished.Load(), h.rejected.Load()
	if st != f || uint64(st) != s.Completed+s.Panicked || uint64(q) != s.Accepted+uint64(r) {
		t.Fatalf("%s: hooks Queued %d Started %d Finished %d Rejected %d; Stats %+v", what, q, st, f, r, s)
	}
}

// TestAdvStopParentWithPausedSubSubPoolWhoseWaitNaps attacks Pause ("Pool.Stop,
// Pool.StopAndWait and Pool.Shutdown resume the pool, since every accepted task must still
// run") where the pool paused is a sub-pool of a sub-pool, its parent or the root, and the
// one stopped is the root (Stop: "Stop also stops the pool's sub-pools and theirs";
// StopAndWait: "waits until every accepted task has finished ... That includes the tasks of
// its sub-pools"), while functions running on the sub-pool of the sub-pool are inside waits
// that help (GroupAll, Map, ForEach, MapSeq, futures) on their own pool or one above, which
// the pause holds back ("none runs while the pool (or a pool above it) is paused").
// StopAndWait, Shutdown with a long deadline (it returns nil), or Stop followed by Wait of
// the root returns, every function ran exactly once, plain tasks ran, nothing stays paused
// and the pools' Stats add up.
func TestAdvStopParentWithPausedSubSubPoolWhoseWaitNaps(t *testing.T) {
	t.Parallel()
	for _, pt := range [][2]string{{"leaf", "leaf"}, {"mid", "leaf"}, {"mid", "mid"}, {"root", "root"}, {"root", "leaf"}} {
		paused, target := pt[0], pt[1]
		for _, stop := range []string{"StopAndWait", "Shutdown", "Stop"} {
			t.Run(paused+"/"+target+"/"+stop, func(t *testing.T) {
				root := crew.New(6)
				mid := root.Sub(6, crew.WithPriority(1))
				leaf := mid.Sub(5)
				pools := map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf}
				var in sync.WaitGroup
				in.Add(5)
				gate := make(chan struct{})
				a := newAdvNest()
				var kinds []*crew.Future[int]
				for kind := range 5 {
					kinds = append(kinds, crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
						in.Done()
						<-gate // the pause comes while the functions run
						return 0, a.nested(ctx, pools[target], kind, 4)
					}))
				}
				awaitReturn(t, "the five functions to start", goRun(in.Wait))
				pools[paused].Pause()
				close(gate)
				// every wait has given its 4 functions to the target, which the pause holds
				awaitStats(t, pools[target], "the nested functions to queue", func(s crew.Stats) bool { return s.Waiting == 5*4 })
				var plainRan atomic.Int32
				for range 3 {
					must(t, leaf.Submit(func() { plainRan.Add(1) }))
				}
				time.Sleep(time.Millisecond) // let the waits find their functions held
				switch stop {
				case "StopAndWait":
					awaitReturn(t, "root.StopAndWait with a paused "+paused, goRun(root.StopAndWait))
				case "Shutdown":
					ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
					defer cancel()
					if err := returnsWithin(t, "root.Shutdown", func() error { return root.Shutdown(ctx) }); err != nil {
						t.Fatalf("Shutdown = %v, want nil: the pool drains once it is resumed", err)
					}
				case "Stop":
					root.Stop()
					awaitReturn(t, "leaf.Wait after root.Stop", goRun(leaf.Wait))
					awaitReturn(t, "root.Wait after root.Stop", goRun(root.Wait))
					awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
				}
				for i, f := range kinds {
					var err error
					awaitReturn(t, "a function's Wait", goRun(func() { _, err = f.Wait() }))
					if err != nil {
						t.Errorf("kind %d: %v, want nil: Stop runs every accepted task", i, err)
					}
				}
				a.final(t)
				for _, runs := range a.runs {
					for i := range *runs {
						if (*runs)[i].Load() != 1 {
							t.Fatalf("a nested function ran %d times, want 1", (*runs)[i].Load())
						}
					}
				}
				if plainRan.Load() != 3 {
					t.Errorf("%d of 3 plain tasks ran", plainRan.Load())
				}
				for _, p := range []*crew.Pool{root, mid, leaf} {
					s := p.Stats()
					idleIdentity(t, paused+"/"+stop, s)
					if s.Paused {
						t.Errorf("a pool still paused after its root stopped: %+v", s)
					}
				}
			})
		}
	}
}

// TestAdvStopAmidPauseResizeStormsWithNestedWaits attacks Stop ("Tasks already accepted still
// run"), StopAndWait ("waits until every accepted task has finished and every worker
// goroutine of the pool has exited. That includes the tasks of its sub-pools") and Pause
// ("Stop, StopAndWait and Shutdown resume the pool") while Pause/Resume and Resize storms
// run on a root, a sub-pool with a priority and its sub-pool, and functions on the
// sub-pools are inside waits that help over GroupAll, Map, ForEach, MapSeqUnordered and futures half
// of which another goroutine cancels. Stop comes at a random moment; afterwards the storms
// go on (a Pause after Stop "does nothing once the pool is stopped"). Every wait returns,
// no function ran twice, one that did not run failed with ErrStopped (refused after Stop) or
// context.Canceled (canceled future), plain tasks all ran once, and every pool's Stats add
// up with nothing Returned.
func TestAdvStopAmidPauseResizeStormsWithNestedWaits(t *testing.T) {
	t.Parallel()
	refusedIters := 0
	for iter := range 10 {
		a := newAdvNest(crew.ErrStopped, context.Canceled)
		a.unordered = true // see advNest.unordered
		canceller := a.cancelHalf()
		root := crew.New(3)
		mid := root.Sub(2, crew.WithPriority(1))
		leaf := mid.Sub(2, crew.WithPriority(-1))
		side := root.Sub(2, crew.WithPriority(2))
		pools := []*crew.Pool{root, mid, leaf, side}

		stop := make(chan struct{})
		var storms sync.WaitGroup
		for _, p := range []*crew.Pool{root, mid, leaf} {
			repeatUntil(&storms, stop, func() {
				p.Pause()
				time.Sleep(time.Duration(50+rand.IntN(300)) * time.Microsecond)
				p.Resume()
				time.Sleep(time.Duration(100+rand.IntN(900)) * time.Microsecond)
			})
		}
		repeatUntil(&storms, stop, func() {
			pools[rand.IntN(3)].Resize(1 + rand.IntN(3))
			time.Sleep(200 * time.Microsecond)
		})

		watching := make(chan struct{})
		var watchers []<-chan struct{}
		for i, p := range pools {
			watchers = append(watchers, advWatch(t, fmt.Sprintf("iter %d pool %d", iter, i), p.Stats, watching))
		}
		var plainRan atomic.Int32
		plainAccepted := 0
		var outers []*crew.Future[int]
		for i := range 30 {
			on := []*crew.Pool{mid, leaf}[i%2]
			targets := []*crew.Pool{root, mid, leaf}[:2+i%2]
			target := targets[rand.IntN(len(targets))]
			outers = append(outers, crew.GoContext(context.Background(), on, func(ctx context.Context) (int, error) {
				return 0, a.nested(ctx, target, i, 8)
			}))
			for _, p := range []*crew.Pool{on, side} {
				if p.Submit(func() { plainRan.Add(1); runtime.Gosched() }) == nil {
					plainAccepted++
				}
			}
		}
		time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
		[]*crew.Pool{root, mid}[iter%2].Stop()
		refused := false
		for i, f := range outers {
			var err error
			awaitReturn(t, fmt.Sprintf("outer function %d's Wait", i), goRun(func() { _, err = f.Wait() }))
			if err != nil && !a.allowed(err) {
				t.Fatalf("outer function %d = %v", i, err)
			}
			refused = refused || errors.Is(err, crew.ErrStopped)
		}
		if refused {
			refusedIters++
		}
		close(stop)
		storms.Wait()
		awaitReturn(t, "root.StopAndWait after the storms", goRun(root.StopAndWait))
		close(watching)
		for _, w := range watchers {
			awaitReturn(t, "a Stats watcher", w)
		}
		close(a.cancels)
		awaitReturn(t, "the canceller", canceller)
		a.final(t)
		if int(plainRan.Load()) != plainAccepted {
			t.Fatalf("%d plain tasks ran, %d accepted", plainRan.Load(), plainAccepted)
		}
		for i, p := range pools {
			s := p.Stats()
			idleIdentity(t, fmt.Sprintf("iter %d pool %d", iter, i), s)
			if s.Returned != 0 || s.Paused {
				t.Fatalf("iter %d pool %d: %+v, want nothing Returned and not paused after Stop", iter, i, s)
			}
		}
	}
	t.Logf("in %d of 10 rounds the Stop came while waits still gave the pools work", refusedIters)
}

// TestAdvShutdownPastDeadlineAmidPausedHelpingWaits attacks Shutdown ("if ctx ends first it
// returns ctx.Err(), and then stops firmly what it can: the functions given with a context
// ... on the pool or its sub-pools still queued are skipped, and the contexts of those
// running end with cause ErrStopped ... Plain tasks, which carry no context, still run in
// the background") of a root or of a sub-pool whose sub-pool is paused, while functions on
// that sub-pool are inside waits that help over GroupAll, Map, ForEach, MapSeq and futures,
// whose functions watch their context, so the pool cannot drain before the deadline. Every
// wait returns, each function ran at most once and one that did not run failed with
// ErrStopped, plain and keyed tasks all ran, and each pool's and the Keyed's Stats add up.
func TestAdvShutdownPastDeadlineAmidPausedHelpingWaits(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"root", "mid"} {
		t.Run(which, func(t *testing.T) {
			root := crew.New(6)
			mid := root.Sub(6, crew.WithPriority(1))
			leaf := mid.Sub(5, crew.WithPriority(1))
			k := crew.NewKeyed[int](leaf)
			var started sync.WaitGroup
			started.Add(5)
			gate := make(chan struct{})
			a := newAdvNest(crew.ErrStopped)
			a.watch = true
			var began atomic.Int32 // the nested functions that have started
			a.first = func() { began.Add(1) }
			var outers []*crew.Future[int]
			for kind := range 5 {
				outers = append(outers, crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
					started.Done()
					<-gate
					return 0, a.nested(ctx, []*crew.Pool{leaf, mid, root}[kind%3], kind, 4)
				}))
			}
			awaitReturn(t, "the outer functions to start", goRun(started.Wait))
			var plainRan, keyedRan atomic.Int32
			for i := range 4 {
				must(t, leaf.Submit(func() { plainRan.Add(1) }))
				must(t, k.Submit(i%2, func() { keyedRan.Add(1) }))
			}
			leaf.Pause()
			queued := leaf.Stats().Waiting
			close(gate)
			// The waits give their functions to the pools. On the paused leaf they queue:
			// GroupAll's 4 at once, MapSeq's first at least. The waits on mid (Map, futures)
			// and on the root (ForEach) each run one in the slot they lend, which watches its
			// context, so that the pools cannot drain before the deadline.
			waitFor(t, "the waits to give their functions", func() bool {
				return leaf.Stats().Waiting >= queued+5 && began.Load() >= 3
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			shut := map[string]*crew.Pool{"root": root, "mid": mid}[which]
			err := returnsWithin(t, which+".Shutdown", func() error { return shut.Shutdown(ctx) })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown = %v, want DeadlineExceeded: the functions watch their context", err)
			}
			for i, f := range outers {
				var err error
				awaitReturn(t, fmt.Sprintf("outer function %d's Wait", i), goRun(func() { _, err = f.Wait() }))
				if err != nil && !errors.Is(err, crew.ErrStopped) {
					t.Errorf("outer function %d = %v, want nil or ErrStopped", i, err)
				}
			}
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
			a.final(t)
			if plainRan.Load() != 4 || keyedRan.Load() != 4 {
				t.Errorf("plain %d of 4, keyed %d of 4 ran: Shutdown runs plain tasks", plainRan.Load(), keyedRan.Load())
			}
			idleIdentity(t, "keyed", k.Stats())
			for i, p := range []*crew.Pool{root, mid, leaf} {
				idleIdentity(t, fmt.Sprintf("pool %d", i), p.Stats())
			}
			if s := leaf.Stats(); s.Skipped == 0 {
				t.Errorf("leaf %+v: want queued functions skipped by the Shutdown that gave up", s)
			}
		})
	}
}

// advWatch checks every snapshot that stats returns until done is closed, and returns a
// channel closed when it has stopped. Stats: "A snapshot is consistent: its fields were read
// together, so Completed+Panicked never exceeds Accepted ... and no counter goes backwards";
// Stats.Waiting: "Running+Waiting counts each accepted task that has not ended exactly
// once"; so Accepted = Completed+Panicked+Discarded+Returned+Skipped+Running+Waiting in each.
func advWatch(t *testing.T, name string, stats func() crew.Stats, done <-chan struct{}) <-chan struct{} {
	return goRun(func() {
		var prev crew.Stats
		for {
			s := stats()
			ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
			var fault string
			switch {
			case s.Running < 0 || s.Waiting < 0 || s.Idle < 0:
				fault = "a negative gauge"
			case ended+uint64(s.Running+s.Waiting) != s.Accepted:
				fault = fmt.Sprintf("Accepted %d != ended %d + Running %d + Waiting %d", s.Accepted, ended, s.Running, s.Waiting)
			case countersWentBack(s, prev):
				fault = "a counter went backwards"
			}
			if fault != "" {
				t.Errorf("%s: %s: %+v after %+v", name, fault, s, prev)
				return
			}
			prev = s
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	})
}

// TestAdvStopFromAFunctionInALentSlot attacks StopNow ("It is safe to call from a task";
// "Functions of Go, Group, Results, Map and ForEach taken out fail with ErrStopped, so their
// Wait returns"), Shutdown ("if ctx ends first it returns ctx.Err(), and then stops firmly
// what it can: the functions given with a context ... still queued are skipped") and Stop,
// each called by a function that a waiting function runs in its own slot ("Waits that
// help": "runs the functions it waits for that no worker has taken yet itself, on the
// waiting goroutine, in the slot the waiting function holds"), on a root of one worker whose
// slot the waiting function, on a prioritised sub-pool, holds. The wait is over a GroupAll,
// a Map, a ForEach, a MapSeq or futures. The wait returns, the function that stopped the
// pool ran once and its siblings never ran but failed with ErrStopped (StopNow, Shutdown;
// or context.Canceled where Shutdown ended the waiting function's context first), or all
// ran (Stop, where they were given to the pool before it stopped); StopNow hands back the
// plain tasks queued, Shutdown and Stop run them; every pool's Stats add up.
func TestAdvStopFromAFunctionInALentSlot(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"StopNow", "Shutdown", "Stop"} {
		for kind := range 5 {
			t.Run(fmt.Sprintf("%s/kind%d", how, kind), func(t *testing.T) {
				root := crew.New(1)
				sub := root.Sub(1, crew.WithPriority(1))
				var out []func()
				var shutErr error
				stopped := new(atomic.Int32)
				stopOnce := func() {
					if stopped.Add(1) != 1 {
						return
					}
					switch how {
					case "StopNow":
						out = root.StopNow()
					case "Shutdown":
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
						defer cancel()
						shutErr = root.Shutdown(ctx)
					default:
						root.Stop()
					}
				}
				// Map, ForEach and MapSeq give the pool a function only as a slot frees (W is
				// 1 here), so the rest are refused once the pool has stopped; and Shutdown,
				// past its deadline, ends the waiting function's own context ("on the pool or
				// its sub-pools"), which ends those calls with ctx.Err().
				a := newAdvNest(crew.ErrStopped, context.Canceled)
				a.first = stopOnce
				lazy := kind >= 1 && kind <= 3
				in, gate := make(chan struct{}), make(chan struct{})
				outer := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
					close(in)
					<-gate
					return 0, a.nested(ctx, root, kind, 5)
				})
				<-in
				var plainRan atomic.Int32
				for _, p := range []*crew.Pool{root, sub, root, sub} {
					must(t, p.Submit(func() { plainRan.Add(1) }))
				}
				close(gate)
				var err error
				awaitReturn(t, "the waiting function", goRun(func() { _, err = outer.Wait() }))
				awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))
				a.final(t)
				ran := 0
				for _, runs := range a.runs {
					for i := range *runs {
						ran += int((*runs)[i].Load())
					}
				}
				switch how {
				case "Stop":
					if lazy && (!errors.Is(err, crew.ErrStopped) || ran != 1) || !lazy && (err != nil || ran != 5) || plainRan.Load() != 4 {
						t.Errorf("after Stop: wait = %v, %d of 5 functions ran, %d of 4 plain tasks", err, ran, plainRan.Load())
					}
				case "StopNow":
					if !errors.Is(err, crew.ErrStopped) || ran != 1 || len(out) != 4 || plainRan.Load() != 0 {
						t.Errorf("after StopNow: wait = %v, %d functions ran (want the one that called it), %d plain tasks handed back and %d ran, want 4 and 0",
							err, ran, len(out), plainRan.Load())
					}
				case "Shutdown":
					if !errors.Is(shutErr, context.DeadlineExceeded) || !a.allowed(err) || ran != 1 || plainRan.Load() != 4 {
						t.Errorf("Shutdown = %v; wait = %v, %d functions ran (want the one that called it), %d of 4 plain tasks", shutErr, err, ran, plainRan.Load())
					}
				}
				for i, p := range []*crew.Pool{root, sub} {
					idleIdentity(t, fmt.Sprintf("pool %d", i), p.Stats())
				}
			})
		}
	}
}

// TestAdvStreamsOfAPoolWhoseShutdownGaveUpEndWithAFailure attacks MapSeq and
// MapSeqUnordered ("A refusal by p mid-range (ErrStopped once p is stopped ...) is the
// failure of the value that p refused"; "If ctx ends during the range, pulling stops ... and
// (zero, ctx.Err()) is yielded last if none of them failed"; "A call still queued when ctx
// ends (or Pool.Shutdown gives up) is skipped"), Map ("The returned slice always has len(in)
// elements: those whose call failed or was never scheduled hold the zero value") and ForEach
// ("returns the first error; ctx.Err() if ctx ended first and no call failed; or ErrStopped
// if p is stopped") over a pool whose Shutdown gives up mid-range (Shutdown: "if ctx ends
// first it returns ctx.Err(), and then stops firmly what it can"): the Shutdown is called
// by the loop body (or by a call), from outside any task or from a function of a sub-pool
// whose wait helps. A range, Map or ForEach that has not handled every value ends with a
// failure, never as if in had ended: either every value's result comes, or an error does.
func TestAdvStreamsOfAPoolWhoseShutdownGaveUpEndWithAFailure(t *testing.T) {
	t.Parallel()
	const n = 20
	shutdown := func(p *crew.Pool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded: a task holds the pool", err)
		}
		time.Sleep(time.Millisecond) // what Shutdown stops firmly, it stops after it returns
	}
	// run ranges over, or maps, n values on p from ctx, calling Shutdown of p once a result
	// (or a call) is in, and reports how many values were handled and the error at the end.
	run := func(ctx context.Context, door string, p *crew.Pool) (handled int, err error) {
		var once sync.Once
		stop := func() { once.Do(func() { shutdown(p) }) }
		fn := func(_ context.Context, i int) (int, error) { return i + 1, nil }
		switch door {
		case "Map":
			in := make([]int, n)
			for i := range in {
				in[i] = i
			}
			res, err := crew.Map(ctx, p, in, func(ctx context.Context, i int) (int, error) {
				if i == 0 {
					stop()
				}
				return fn(ctx, i)
			})
			for _, v := range res {
				if v != 0 {
					handled++
				}
			}
			return handled, err
		case "ForEach":
			var calls atomic.Int32
			err := crew.ForEach(ctx, p, countTo(n), func(context.Context, int) error {
				if calls.Add(1) == 1 {
					stop()
				}
				return nil
			})
			return int(calls.Load()), err
		}
		for _, mode := range seqModes {
			if mode.name != door {
				continue
			}
			for _, err := range mode.mapSeq(ctx, p, countTo(n), fn) {
				if err != nil {
					return handled, err
				}
				handled++
				stop()
			}
		}
		return handled, nil
	}
	for _, door := range []string{"MapSeq", "MapSeqUnordered", "Map", "ForEach"} {
		for _, where := range []string{"outside", "inside"} {
			t.Run(door+"/"+where, func(t *testing.T) {
				for range 10 {
					// One worker: the call (or, inside, the function waiting) that calls
					// Shutdown keeps the pool from draining, and no other call is in flight
					// then (W is 1). From outside a task a MapSeq's calls end before its loop
					// body runs: a task of its own holds the pool then.
					p := crew.New(1)
					gate := make(chan struct{})
					if where == "outside" && door != "Map" && door != "ForEach" {
						p.Resize(2)
						must(t, p.Submit(func() { <-gate }))
					}
					var handled int
					var err error
					if where == "outside" {
						handled, err = run(context.Background(), door, p)
					} else {
						sub := p.Sub(1, crew.WithPriority(1))
						f := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
							return run(ctx, door, p)
						})
						awaitReturn(t, "the function ranging", goRun(func() { handled, err = f.Wait() }))
					}
					close(gate)
					awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
					if err == nil && handled != n {
						t.Fatalf("%s %s: %d of %d values handled and no error: the values after them are lost silently", door, where, handled, n)
					}
					if err != nil && !errors.Is(err, crew.ErrStopped) && !errors.Is(err, context.Canceled) {
						t.Fatalf("%s %s: %v", door, where, err)
					}
					idleIdentity(t, door, p.Stats())
				}
			})
		}
	}
}

// TestAdvMapSeqInATaskRunsNoValueItsPoolRefused attacks MapSeq ("A refusal by p mid-range
// (ErrStopped once p is stopped, ErrQueueFull from a full queue under WithNonBlocking) is
// the failure of the value that p refused"; "The sequence then yields the results that come
// before the first failure in the order of in, yields that failure once with the zero R, and
// ends"), Stop ("After Stop, they return ErrStopped and the task never runs") and Stats
// ("Every task counts once in Accepted and ends in exactly one of Completed, Panicked,
// Discarded, Returned or Skipped"), for a range made inside a function running on the pool,
// whose waits help ("runs the functions it waits for that no worker has taken yet"). The
// range reuses the holder of a value that a worker ran (MapSeq: "it reuses W small task
// holders") for a later value that the pool refuses, while an earlier value still runs, so
// that the range waits, and helps, before it may yield the refusal. The refused value's
// call never runs, the range yields the earlier results and then the refusal, and the
// pool's Stats add up once idle.
func TestAdvMapSeqInATaskRunsNoValueItsPoolRefused(t *testing.T) {
	t.Parallel()
	for _, refusal := range []string{"Stop", "QueueFull"} {
		t.Run(refusal, func(t *testing.T) {
			var p *crew.Pool
			if refusal == "Stop" {
				p = crew.New(2)
			} else {
				p = crew.New(2, crew.WithQueueSize(1), crew.WithNonBlocking())
			}
			ran0, in1, gate := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var runs [3]atomic.Int32
			var got []int
			var serr error
			filler := make(chan struct{})
			outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				in := func(yield func(int) bool) {
					if !yield(0) {
						return
					}
					<-ran0 // value 0 was run by the other worker, not by this wait
					if !yield(1) {
						return
					}
					<-in1 // value 1 runs on the other worker, and holds it
					if refusal == "Stop" {
						p.Stop()
					} else if !p.TrySubmit(func() { <-filler }) { // fills the queue of one
						t.Error("TrySubmit into an empty queue of one = false")
					}
					time.AfterFunc(50*time.Millisecond, func() { close(gate) })
					yield(2) // refused
				}
				for v, err := range crew.MapSeq(ctx, p, in, func(_ context.Context, i int) (int, error) {
					runs[i].Add(1)
					switch i {
					case 0:
						close(ran0)
					case 1:
						close(in1)
						<-gate
					}
					return i + 1, nil
				}) {
					if err != nil {
						serr = err
						break
					}
					got = append(got, v)
				}
				return 0, nil
			})
			awaitReturn(t, "the function ranging", goRun(func() { outer.Wait() }))
			close(filler)
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			want := map[string]error{"Stop": crew.ErrStopped, "QueueFull": crew.ErrQueueFull}[refusal]
			if n := runs[2].Load(); n != 0 {
				t.Errorf("the call for value 2, which the pool refused, ran %d times", n)
			}
			if len(got) != 2 || !errors.Is(serr, want) {
				t.Errorf("the range yielded %v and then %v, want [1 2] and then %v", got, serr, want)
			}
			idleIdentity(t, "pool", p.Stats())
		})
	}
}
