package crew_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

var stressDuration = flag.Duration("stress.duration", 2*time.Second,
	"how long each TestStress test keeps starting rounds (go test -run Stress -stress.duration 5m)")

// stressBudget returns the time each stress test runs: the flag, cut to a quarter in -short mode.
func stressBudget() time.Duration {
	if testing.Short() {
		return *stressDuration / 4
	}
	return *stressDuration
}

// ledger records, per task id, whether its submit accepted it and how often it ran.
type ledger struct {
	accepted []atomic.Bool
	runs     []atomic.Int32
}

func newLedger(n int) *ledger {
	return &ledger{accepted: make([]atomic.Bool, n), runs: make([]atomic.Int32, n)}
}

// check fails t unless every accepted task ran exactly once and no other task ran.
func (l *ledger) check(t *testing.T, round int) (accepted int) {
	t.Helper()
	for id := range l.runs {
		runs, ok := l.runs[id].Load(), l.accepted[id].Load()
		switch {
		case ok && runs != 1:
			t.Fatalf("round %d: accepted task %d ran %d times", round, id, runs)
		case !ok && runs != 0:
			t.Fatalf("round %d: rejected task %d ran %d times", round, id, runs)
		}
		if ok {
			accepted++
		}
	}
	return accepted
}

// stressRound is one round's random configuration.
type stressRound struct {
	workers     int
	queueSize   int
	nonBlocking bool
	minWorkers  int
	stopEarly   bool // Stop or Shutdown fires in the middle of the burst
	useContext  bool // the pool has a WithContext context canceled mid-burst
}

func randomRound(r *rand.Rand) stressRound {
	s := stressRound{workers: 1 + r.IntN(16)}
	if r.IntN(2) == 0 {
		s.queueSize = 1 + r.IntN(64)
		s.nonBlocking = r.IntN(2) == 0
	}
	s.minWorkers = r.IntN(s.workers + 1)
	s.stopEarly = r.IntN(3) == 0
	s.useContext = r.IntN(4) == 0
	return s
}

// TestStressSubmittersExactlyOnceUnderResizeStopAndCancel runs rounds of 64 submitters, each
// submitting its share of tasks through a random mix of Submit, TrySubmit and SubmitContext,
// while a storm of Resize calls, canceled contexts, panicking tasks, tasks that submit into
// their own pool, sub-pool and group traffic, and (in some rounds) Stop, Shutdown or the end
// of the pool's context hit the pool. After each round it checks that every accepted task ran
// exactly once, no rejected task ran, the worker limit held, the Stats add up and no worker is
// left.
func TestStressSubmittersExactlyOnceUnderResizeStopAndCancel(t *testing.T) {
	const submitters = 64
	perSubmitter := 10_000
	if testing.Short() {
		perSubmitter = 500
	}
	deadline := time.Now().Add(stressBudget())
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		seed := uint64(time.Now().UnixNano())
		cfg := randomRound(rand.New(rand.NewPCG(seed, uint64(round))))
		t.Run(fmt.Sprintf("round=%d", round), func(t *testing.T) {
			runStressRound(t, round, seed, cfg, submitters, perSubmitter)
		})
		if t.Failed() {
			return
		}
	}
}

func runStressRound(t *testing.T, round int, seed uint64, cfg stressRound, submitters, perSubmitter int) {
	n := submitters * perSubmitter
	l := newLedger(2 * n) // ids n..2n-1 are tasks submitted by tasks
	var panicked atomic.Int64
	opts := []crew.Option{
		crew.WithMinWorkers(cfg.minWorkers),
		crew.WithIdleTimeout(time.Duration(rand.IntN(3)) * time.Millisecond),
		crew.WithPanicHandler(func(any, []byte) { panicked.Add(1) }),
	}
	if cfg.queueSize > 0 {
		opts = append(opts, crew.WithQueueSize(cfg.queueSize))
	}
	if cfg.nonBlocking {
		opts = append(opts, crew.WithNonBlocking())
	}
	poolCtx, cancelPool := context.WithCancel(context.Background())
	defer cancelPool()
	if cfg.useContext {
		opts = append(opts, crew.WithContext(poolCtx))
	}
	p := crew.New(cfg.workers, opts...)
	sub := p.Sub(1 + rand.IntN(4))

	// maxLimit is the largest limit the pool has had: no more tasks may ever run at once.
	var maxLimit atomic.Int32
	maxLimit.Store(int32(cfg.workers))
	var running, high atomic.Int32
	var selfRejected, wantPanics atomic.Int64

	var body func(id int) func()
	body = func(id int) func() {
		return func() {
			r := running.Add(1)
			for h := high.Load(); r > h && !high.CompareAndSwap(h, r); h = high.Load() {
			}
			l.runs[id].Add(1)
			if id < n && id%97 == 0 {
				// A task that submits into its own pool, without blocking.
				child := n + id
				if p.TrySubmit(body(child)) {
					l.accepted[child].Store(true)
					if child%101 == 0 {
						wantPanics.Add(1)
					}
				} else {
					selfRejected.Add(1)
				}
			}
			running.Add(-1)
			if id%101 == 0 {
				panic("stress panic")
			}
		}
	}

	start := make(chan struct{})
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(s)))
			<-start
			for i := range perSubmitter {
				id := s*perSubmitter + i
				var ok bool
				var err error
				switch rng.IntN(4) {
				case 0:
					err = p.Submit(body(id))
					ok = err == nil
				case 1:
					ok = p.TrySubmit(body(id))
				case 2:
					ctx, cancel := context.WithCancel(context.Background())
					if rng.IntN(2) == 0 {
						cancel() // a cancellation storm: some contexts end before or while waiting
					}
					err = p.SubmitContext(ctx, body(id))
					cancel()
					ok = err == nil
				case 3:
					err = sub.Submit(body(id))
					ok = err == nil
				}
				if ok {
					l.accepted[id].Store(true)
					if id%101 == 0 {
						wantPanics.Add(1)
					}
					continue
				}
				if err != nil && !errors.Is(err, crew.ErrQueueFull) && !errors.Is(err, crew.ErrStopped) &&
					!errors.Is(err, context.Canceled) {
					t.Errorf("round %d: unexpected submit error %v", round, err)
				}
			}
		}()
	}

	// The storm: resizes, and in some rounds a stop, from other goroutines.
	stormDone := make(chan struct{})
	go func() {
		defer close(stormDone)
		rng := rand.New(rand.NewPCG(seed, 1<<32))
		<-start
		for i := 0; i < 200; i++ {
			size := 1 + rng.IntN(16)
			for m := maxLimit.Load(); int32(size) > m && !maxLimit.CompareAndSwap(m, int32(size)); m = maxLimit.Load() {
			}
			p.Resize(size)
			if i == 100 && cfg.stopEarly {
				if rng.IntN(2) == 0 {
					p.Stop()
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					_ = p.Shutdown(ctx) // may give up; the tasks still drain
					cancel()
				}
			}
			if i == 150 && cfg.useContext {
				cancelPool()
			}
			time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
		}
	}()

	// A group on the same pool, next to the plain traffic.
	var groupRan atomic.Int64
	groupDone := make(chan error, 1)
	go func() {
		<-start
		g, _ := p.Group(context.Background())
		for range 100 {
			g.Go(func(context.Context) error { groupRan.Add(1); return nil })
		}
		groupDone <- g.Wait()
	}()

	close(start)
	wg.Wait()
	<-stormDone
	gerr := <-groupDone
	p.StopAndWait()

	accepted := l.check(t, round)
	if h, m := high.Load(), maxLimit.Load(); h > m {
		t.Fatalf("round %d: %d tasks ran at once, limit never above %d", round, h, m)
	}
	if gerr != nil && !errors.Is(gerr, crew.ErrStopped) && !errors.Is(gerr, crew.ErrQueueFull) {
		t.Fatalf("round %d: group error %v", round, gerr)
	}
	if gerr == nil && groupRan.Load() != 100 {
		t.Fatalf("round %d: group returned nil with %d of 100 tasks run", round, groupRan.Load())
	}
	if got := panicked.Load(); got != wantPanics.Load() {
		t.Fatalf("round %d: panic handler saw %d panics, want %d", round, got, wantPanics.Load())
	}
	// The parent's Stats count its own tasks: plain, self-submitted, sub-pool workers and
	// group tasks. Every one of them has finished.
	s := p.Stats()
	if s.Completed+s.Panicked != s.Submitted || s.Running != 0 || s.Idle != 0 || s.Waiting != 0 {
		t.Fatalf("round %d: Stats after StopAndWait = %+v", round, s)
	}
	ss := sub.Stats()
	if ss.Completed+ss.Panicked != ss.Submitted || ss.Running != 0 || ss.Waiting != 0 {
		t.Fatalf("round %d: sub-pool Stats after StopAndWait = %+v", round, ss)
	}
	if accepted == 0 && !cfg.stopEarly && !cfg.useContext {
		t.Fatalf("round %d: no task accepted", round)
	}
}

// TestStressInvokeExactlyOnce hammers a FuncPool from 64 goroutines with Invoke, TryInvoke and
// InvokeContext while it is resized, then stopped, and checks exactly-once per argument.
func TestStressInvokeExactlyOnce(t *testing.T) {
	const submitters = 64
	per := 10_000
	if testing.Short() {
		per = 500
	}
	deadline := time.Now().Add(stressBudget())
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		n := submitters * per
		l := newLedger(n)
		var running, high atomic.Int32
		var maxLimit atomic.Int32
		maxLimit.Store(8)
		p := crew.NewFunc(8, func(id int) {
			r := running.Add(1)
			for h := high.Load(); r > h && !high.CompareAndSwap(h, r); h = high.Load() {
			}
			l.runs[id].Add(1)
			running.Add(-1)
		}, crew.WithQueueSize(128))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for s := range submitters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range per {
					id := s*per + i
					var ok bool
					switch id % 3 {
					case 0:
						ok = p.Invoke(id) == nil
					case 1:
						ok = p.TryInvoke(id)
					case 2:
						ctx, cancel := context.WithTimeout(context.Background(), time.Microsecond)
						ok = p.InvokeContext(ctx, id) == nil
						cancel()
					}
					l.accepted[id].Store(ok)
				}
			}()
		}
		stormDone := make(chan struct{})
		go func() {
			defer close(stormDone)
			<-start
			for i := range 100 {
				size := int32(1 + i%12)
				for m := maxLimit.Load(); size > m && !maxLimit.CompareAndSwap(m, size); m = maxLimit.Load() {
				}
				p.Resize(int(size))
			}
			if round%2 == 1 {
				p.Stop()
			}
		}()
		close(start)
		wg.Wait()
		<-stormDone
		p.StopAndWait()
		l.check(t, round)
		if h := high.Load(); h > maxLimit.Load() {
			t.Fatalf("round %d: %d calls at once, limit never above %d", round, h, maxLimit.Load())
		}
		if s := p.Stats(); s.Completed != s.Submitted || s.Running != 0 || s.Idle != 0 {
			t.Fatalf("round %d: Stats = %+v", round, s)
		}
	}
}

// TestStressStatsNeverInconsistent reads Stats continuously while submitters, a resizer and
// panicking tasks run, and checks every snapshot: Completed+Panicked <= Submitted, Running <=
// MaxWorkers, and no counter goes backwards.
func TestStressStatsNeverInconsistent(t *testing.T) {
	p := crew.New(4, crew.WithPanicHandler(func(any, []byte) {}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if (i+j)%13 == 0 {
					p.Submit(func() { panic("counted") })
				} else {
					p.Submit(func() {})
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				p.Resize(1 + i%6)
			}
		}
	}()
	var prev crew.Stats
	deadline := time.Now().Add(stressBudget() / 2)
	for time.Now().Before(deadline) {
		s := p.Stats()
		if s.Completed+s.Panicked > s.Submitted || s.Running > s.MaxWorkers ||
			s.Submitted < prev.Submitted || s.Completed < prev.Completed ||
			s.Panicked < prev.Panicked || s.Rejected < prev.Rejected {
			close(stop)
			wg.Wait()
			p.StopAndWait()
			t.Fatalf("inconsistent snapshot %+v after %+v", s, prev)
		}
		prev = s
	}
	close(stop)
	wg.Wait()
	p.StopAndWait()
}
