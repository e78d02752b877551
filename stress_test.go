package crew_test

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/crewtest"
	"github.com/crewgo/crew/internal/racetest"
)

var stressDuration = flag.Duration("stress.duration", 2*time.Second,
	"how long each TestStress test keeps starting new rounds (go test -run Stress -stress.duration 5m)")

// ledger records, per task id, whether its submit accepted it and how often it ran.
type ledger struct {
	next     atomic.Int64
	accepted []atomic.Bool
	runs     []atomic.Int32
}

func newLedger(n int) *ledger {
	return &ledger{accepted: make([]atomic.Bool, n), runs: make([]atomic.Int32, n)}
}

// id returns a fresh task id, or -1 when the ledger is full.
func (l *ledger) id() int {
	id := l.next.Add(1) - 1
	if id >= int64(len(l.runs)) {
		return -1
	}
	return int(id)
}

// submitters starts n goroutines that wait for start and then each submit up to per tasks,
// until the ledger runs out of ids: submit gets the goroutine's own random source, seeded by
// seed and the goroutine's index, and a fresh id. wg counts the goroutines.
func (l *ledger) submitters(wg *sync.WaitGroup, start <-chan struct{}, n, per int, seed uint64, submit func(r *rand.Rand, id int)) {
	crewtest.Spawn(wg, n, start, func(s int) {
		r := rand.New(rand.NewPCG(seed, uint64(s)))
		for range per {
			id := l.id()
			if id < 0 {
				return
			}
			submit(r, id)
		}
	})
}

// check fails t unless every accepted task ran exactly once and no refused task ran. It
// returns the number of accepted tasks.
func (l *ledger) check(t *testing.T, what string) (accepted uint64) {
	t.Helper()
	n := min(int(l.next.Load()), len(l.runs))
	for id := range n {
		runs, ok := l.runs[id].Load(), l.accepted[id].Load()
		switch {
		case ok && runs != 1:
			t.Fatalf("%s: accepted task %d ran %d times, want exactly once", what, id, runs)
		case !ok && runs != 0:
			t.Fatalf("%s: refused task %d ran %d times, want never", what, id, runs)
		}
		if ok {
			accepted++
		}
	}
	return accepted
}

// stressRound is one round's random configuration.
type stressRound struct {
	workers, queueSize int
	nonBlocking        bool
	minWorkers         int
	sub                bool // half the traffic goes to a sub-pool with a limit of its own
	subWorkers         int
	stop               int // 0 none, 1 Stop, 2 Shutdown, 3 StopAndWait, 4 the pool's context ends
	panicEvery         int // one task in panicEvery panics; 0: none
}

func randomRound(r *rand.Rand) stressRound {
	s := stressRound{workers: 1 + r.IntN(16)}
	if r.IntN(2) == 0 {
		s.queueSize = 1 + r.IntN(64)
		s.nonBlocking = r.IntN(2) == 0
	}
	s.minWorkers = r.IntN(s.workers + 1)
	if r.IntN(3) == 0 {
		s.sub, s.subWorkers = true, 1+r.IntN(24)
	}
	s.stop = r.IntN(5)
	if r.IntN(2) == 0 {
		s.panicEvery = 1 + r.IntN(500)
	}
	return s
}

// TestStressEveryAcceptedTaskRunsExactlyOnce proves the first two guarantees under load:
// rounds of 64 submitters, released together, submit through a random mix of Submit,
// TrySubmit and SubmitContext (with contexts canceled from another goroutine), to a pool and
// a sub-pool, while a resizer storms Resize, the pool is stopped, shut down or has its context
// canceled mid-burst, tasks panic, and tasks submit into their own pool. After every round:
// each accepted task ran exactly once, none refused ran, neither limit was ever exceeded,
// Stats add up, and no goroutine is left.
func TestStressEveryAcceptedTaskRunsExactlyOnce(t *testing.T) {
	submitters, perSubmitter := stressSize()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	deadline := time.Now().Add(*stressDuration)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		cfg := randomRound(r)
		runStressRound(t, round, r.Uint64(), cfg, submitters, perSubmitter)
		if t.Failed() {
			t.Fatalf("round %d failed with %+v", round, cfg)
		}
	}
}

func runStressRound(t *testing.T, round int, seed uint64, cfg stressRound, submitters, perSubmitter int) {
	base := runtime.NumGoroutine()
	what := "round " + itoa(round)
	var panics atomic.Uint64
	poolCtx, cancelPool := context.WithCancel(context.Background())
	defer cancelPool()
	opts := []crew.Option{
		crew.WithMinWorkers(cfg.minWorkers),
		crew.WithIdleTimeout(time.Millisecond),
		crew.WithPanicHandler(func(any, []byte) { panics.Add(1) }),
		crew.WithContext(poolCtx),
	}
	if cfg.queueSize > 0 {
		opts = append(opts, crew.WithQueueSize(cfg.queueSize))
	}
	if cfg.nonBlocking {
		opts = append(opts, crew.WithNonBlocking())
	}
	p := crew.New(cfg.workers, opts...)
	tree := &limitGauge{}
	tree.limit.Store(int64(cfg.workers))
	var sub *crew.Pool
	subGauge := &limitGauge{}
	if cfg.sub {
		sub = p.Sub(cfg.subWorkers)
		subGauge.limit.Store(int64(cfg.subWorkers))
	}

	l := newLedger(submitters * perSubmitter * 2)
	var mainAccepted, subAccepted, fullRejects atomic.Uint64
	threshold := int64(submitters * perSubmitter / (2 + int(seed%4)))
	var accepts atomic.Int64
	crossed := make(chan struct{})
	record := func(id int, onSub, ok bool) {
		if !ok {
			return
		}
		l.accepted[id].Store(true)
		if onSub {
			subAccepted.Add(1)
		} else {
			mainAccepted.Add(1)
		}
		if accepts.Add(1) == threshold {
			close(crossed)
		}
	}

	var task func(id int, onSub bool) func()
	task = func(id int, onSub bool) func() {
		return func() {
			tree.enter()
			defer tree.leave()
			if onSub {
				subGauge.enter()
				defer subGauge.leave()
			}
			l.runs[id].Add(1)
			if id%61 == 0 {
				// A task that submits into its own pool; TrySubmit never blocks a worker.
				target := p
				if onSub {
					target = sub
				}
				if child := l.id(); child >= 0 {
					// The child may start before TrySubmit returns; mark it first and take
					// the mark back if the submit was refused.
					l.accepted[child].Store(true)
					ok := target.TrySubmit(task(child, onSub))
					l.accepted[child].Store(ok)
					if ok {
						if onSub {
							subAccepted.Add(1)
						} else {
							mainAccepted.Add(1)
						}
					}
				}
			}
			if cfg.panicEvery > 0 && id%cfg.panicEvery == 0 {
				panic("stress: planned panic")
			}
		}
	}

	start := make(chan struct{})
	submitted := make(chan struct{})
	cancels := make(chan context.CancelFunc, 64)
	var wg sync.WaitGroup
	l.submitters(&wg, start, submitters, perSubmitter, seed, func(r *rand.Rand, id int) {
		onSub := sub != nil && r.IntN(2) == 0
		target := p
		if onSub {
			target = sub
		}
		fn := task(id, onSub)
		// Mark before submitting: the task may run before the submit returns.
		l.accepted[id].Store(true)
		var ok bool
		switch r.IntN(3) {
		case 0:
			err := target.Submit(fn)
			ok = err == nil
			if errors.Is(err, crew.ErrQueueFull) {
				fullRejects.Add(1)
			} else if err != nil && !errors.Is(err, crew.ErrStopped) {
				t.Errorf("%s: Submit: %v", what, err)
			}
		case 1:
			ok = target.TrySubmit(fn)
		default:
			ctx, cancel := context.WithCancel(context.Background())
			select {
			case cancels <- cancel: // canceled by the storm, at any moment
			default:
				if r.IntN(2) == 0 {
					cancel()
				}
			}
			err := target.SubmitContext(ctx, fn)
			cancel()
			ok = err == nil
			if errors.Is(err, crew.ErrQueueFull) {
				fullRejects.Add(1)
			}
			if err != nil && !errors.Is(err, context.Canceled) &&
				!errors.Is(err, crew.ErrStopped) && !errors.Is(err, crew.ErrQueueFull) {
				t.Errorf("%s: SubmitContext: %v", what, err)
			}
		}
		l.accepted[id].Store(ok)
		record(id, onSub, ok)
	})

	// The cancellation storm, the resize storm and the stopper run until the burst ends.
	var helpers sync.WaitGroup
	helpers.Add(3)
	go func() {
		defer helpers.Done()
		for {
			select {
			case cancel := <-cancels:
				cancel()
			case <-submitted:
				for {
					select {
					case cancel := <-cancels:
						cancel()
					default:
						return
					}
				}
			}
		}
	}()
	go func() {
		defer helpers.Done()
		r := rand.New(rand.NewPCG(seed, 1<<32))
		for {
			select {
			case <-submitted:
				return
			default:
			}
			// Growing Resize is safe from anywhere; shrinking waits for busy workers, which
			// always finish, since no task here blocks.
			tree.resize(p, 1+r.IntN(16))
			if sub != nil {
				subGauge.resize(sub, 1+r.IntN(24))
			}
			runtime.Gosched()
		}
	}()
	go func() {
		defer helpers.Done()
		select {
		case <-crossed:
		case <-submitted:
			return
		}
		switch cfg.stop {
		case 1:
			p.Stop()
		case 2:
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			err := p.Shutdown(ctx)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: Shutdown: %v", what, err)
			}
		case 3:
			p.StopAndWait()
		case 4:
			cancelPool()
		}
	}()

	watchDone := make(chan struct{})
	errc := watchStats(t, what, p, max(cfg.workers, 16), watchDone)
	close(start)
	wg.Wait()
	close(submitted)
	helpers.Wait()
	if sub != nil {
		sub.Wait()
	}
	p.Wait()
	close(watchDone)
	<-errc
	if sub != nil {
		sub.StopAndWait()
	}
	p.StopAndWait()

	total := l.check(t, what)
	if got := mainAccepted.Load() + subAccepted.Load(); got != total {
		t.Fatalf("%s: pools accepted %d tasks by their submits, ledger holds %d", what, got, total)
	}
	if h := tree.high.Load(); h > 0 {
		t.Fatalf("%s: %d tasks above the pool's limit ran at once", what, h)
	}
	if h := subGauge.high.Load(); h > 0 {
		t.Fatalf("%s: %d tasks above the sub-pool's limit ran at once", what, h)
	}
	ps := p.Stats()
	checkFinalStats(t, what+" pool", ps)
	if ps.Rejected < fullRejects.Load() {
		t.Fatalf("%s: Rejected %d, but %d submits got ErrQueueFull", what, ps.Rejected, fullRejects.Load())
	}
	gotPanics := ps.Panicked
	if sub != nil {
		ss := sub.Stats()
		checkFinalStats(t, what+" sub-pool", ss)
		if ss.Accepted != subAccepted.Load() {
			t.Fatalf("%s: sub-pool Accepted %d, accepted %d", what, ss.Accepted, subAccepted.Load())
		}
		if ps.Accepted < mainAccepted.Load() {
			t.Fatalf("%s: pool Accepted %d < accepted %d", what, ps.Accepted, mainAccepted.Load())
		}
		gotPanics += ss.Panicked
	} else if ps.Accepted != mainAccepted.Load() {
		t.Fatalf("%s: Accepted %d, accepted %d", what, ps.Accepted, mainAccepted.Load())
	}
	if gotPanics != panics.Load() {
		t.Fatalf("%s: Stats count %d panics, the handler saw %d", what, gotPanics, panics.Load())
	}
	awaitGoroutines(t, what, base)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestStressInvokeRunsEachArgumentExactlyOnce is the stress round for FuncPool: 64 invokers
// mix Invoke, TryInvoke and InvokeContext while the pool is resized and stopped; each argument
// accepted was passed to fn exactly once and the limit held.
func TestStressInvokeRunsEachArgumentExactlyOnce(t *testing.T) {
	submitters, perSubmitter := stressSize()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	deadline := time.Now().Add(*stressDuration / 2)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		base := runtime.NumGoroutine()
		what := "invoke round " + itoa(round)
		l := newLedger(submitters * perSubmitter)
		gauge := &limitGauge{}
		workers := 1 + r.IntN(8)
		gauge.limit.Store(int64(workers))
		opts := []crew.Option{crew.WithIdleTimeout(0)}
		if r.IntN(2) == 0 {
			opts = append(opts, crew.WithQueueSize(1+r.IntN(32)))
		}
		p := crew.NewFunc(workers, func(id int) {
			gauge.enter()
			l.runs[id].Add(1)
			gauge.leave()
		}, opts...)
		stopAt := int64(submitters * perSubmitter * (1 + r.IntN(4)) / 4)
		var calls atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		l.submitters(&wg, start, submitters, perSubmitter, seed, func(r *rand.Rand, id int) {
			l.accepted[id].Store(true)
			var ok bool
			switch r.IntN(3) {
			case 0:
				ok = p.Invoke(id) == nil
			case 1:
				ok = p.TryInvoke(id)
			default:
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(4) == 0 {
					cancel()
				}
				ok = p.InvokeContext(ctx, id) == nil
				cancel()
			}
			l.accepted[id].Store(ok)
			if n := calls.Add(1); n%997 == 0 {
				// Invokers resize concurrently, so the gauge keeps the largest limit
				// ever set: it is stored before a growing Resize, and a shrink
				// leaves it alone.
				n := 1 + r.IntN(8)
				if int64(n) > gauge.limit.Load() {
					gauge.limit.Store(int64(n))
				}
				p.Resize(n)
			} else if n == stopAt {
				p.Stop()
			}
		})
		close(start)
		wg.Wait()
		p.StopAndWait()
		accepted := l.check(t, what)
		s := p.Stats()
		if s.Accepted != accepted || s.Completed != accepted || s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("%s: stats %+v, want Accepted = Completed = %d accepted", what, s, accepted)
		}
		if h := gauge.high.Load(); h > 0 {
			t.Fatalf("%s: %d calls above the limit ran at once", what, h)
		}
		awaitGoroutines(t, what, base)
	}
}

// TestStressGroupRunsEachFunctionAtMostOnce drives groups on a pool and on a sub-pool while the
// pool is resized and stopped: every function runs at most once; when Wait returns nil every
// function ran exactly once, and otherwise the error is the pool's refusal.
func TestStressGroupRunsEachFunctionAtMostOnce(t *testing.T) {
	groups, perGroup := 16, 2000
	if racetest.Enabled {
		perGroup = 400
	}
	if testing.Short() {
		perGroup = 100
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	deadline := time.Now().Add(*stressDuration / 2)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		base := runtime.NumGoroutine()
		what := "group round " + itoa(round)
		p := crew.New(1+r.IntN(8), crew.WithIdleTimeout(0))
		sub := p.Sub(1 + r.IntN(4))
		stopAfter := r.IntN(groups * 2)
		var started atomic.Int64
		var wg sync.WaitGroup
		for gi := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				target := p
				if gi%2 == 1 {
					target = sub
				}
				g, _ := target.Group(context.Background())
				runs := make([]atomic.Int32, perGroup)
				for i := range perGroup {
					g.Go(func(context.Context) error {
						runs[i].Add(1)
						return nil
					})
					if i == perGroup/2 && started.Add(1) == int64(stopAfter) {
						p.Stop()
					}
				}
				err := g.Wait()
				for i := range runs {
					n := runs[i].Load()
					if n > 1 || (err == nil && n != 1) {
						t.Errorf("%s: group %d function %d ran %d times (Wait: %v)", what, gi, i, n, err)
						return
					}
				}
				if err != nil && !errors.Is(err, crew.ErrStopped) {
					t.Errorf("%s: group %d: Wait = %v, want nil or ErrStopped", what, gi, err)
				}
			}()
		}
		wg.Wait()
		p.StopAndWait()
		sub.StopAndWait()
		checkFinalStats(t, what+" pool", p.Stats())
		checkFinalStats(t, what+" sub-pool", sub.Stats())
		awaitGoroutines(t, what, base)
		if t.Failed() {
			return
		}
	}
}
