package crew_test

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
)

// adv6Wait fails t unless ch is closed or receives within 10 s, and returns what it received.
func adv6Wait[E any](t *testing.T, what string, ch <-chan E) E {
	t.Helper()
	var v E
	select {
	case v = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	return v
}

// adv6Held is a FuncPool of one worker whose fn counts the calls made with each argument and,
// called with 0, holds the worker until release is closed.
type adv6Held struct {
	*crew.FuncPool[int]
	release chan struct{}
	mu      sync.Mutex
	calls   map[int]int
}

// newAdv6Held makes an adv6Held with opts, invokes it with 0, and returns once that call has
// started: the worker is held and the queue is empty.
func newAdv6Held(t *testing.T, opts ...crew.Option) *adv6Held {
	t.Helper()
	h := &adv6Held{release: make(chan struct{}), calls: map[int]int{}}
	started := make(chan struct{}, 1)
	h.FuncPool = crew.NewFunc(1, func(v int) {
		h.mu.Lock()
		h.calls[v]++
		h.mu.Unlock()
		if v == 0 {
			select {
			case started <- struct{}{}:
			default:
			}
			<-h.release
		}
	}, opts...)
	must(t, h.Invoke(0))
	adv6Wait(t, "call 0 to start", started)
	return h
}

// ranTimes fails t unless fn was called want times with each of vs; what says which
// arguments vs are.
func (h *adv6Held) ranTimes(t *testing.T, what string, want int, vs ...int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range vs {
		if got := h.calls[v]; got != want {
			t.Fatalf("fn ran %d times with argument %d (%s), want %d", got, v, what, want)
		}
	}
}

// adv6InvokeAll invokes p with each of 0 to n-1, n a multiple of 4, from 4 goroutines
// released together, and fails t if an Invoke returns an error.
func adv6InvokeAll(t *testing.T, p *crew.FuncPool[int], n int) {
	together(4, n/4, func(c, i int) { must(t, p.Invoke(c*(n/4)+i)) })
}

// adv6MaxWorkers fails t unless p's Stats report a MaxWorkers within [lo, hi]; when names
// the moment of the check.
func adv6MaxWorkers(t *testing.T, p interface{ Stats() crew.Stats }, when string, lo, hi int) {
	t.Helper()
	got := p.Stats().MaxWorkers
	switch {
	case lo == hi && got != lo:
		t.Fatalf("%s: MaxWorkers = %d, want %d", when, got, lo)
	case got < lo || got > hi:
		t.Fatalf("%s: MaxWorkers = %d, want within [%d, %d]", when, got, lo, hi)
	}
}

// StopNow on a paused FuncPool hands back the queued arguments in the order they would
// have started; fn is never called with them, and Stats accounts for each once.
func TestAdv6FuncStopNowReturnsPausedArgsInOrder(t *testing.T) {
	p := newAdv6Held(t, crew.WithQueueSize(8))
	p.Pause()
	for i := 1; i <= 5; i++ {
		must(t, p.Invoke(i))
	}
	got := p.StopNow()
	if want := []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("StopNow = %v, want %v", got, want)
	}
	if err := p.Invoke(9); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Invoke after StopNow = %v, want ErrStopped", err)
	}
	close(p.release)
	p.StopAndWait()
	p.ranTimes(t, "handed back by StopNow", 0, 1, 2, 3, 4, 5)
	s := p.Stats()
	if s.Accepted != 6 || s.Completed != 1 || s.Returned != 5 || s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v: want Accepted 6, Completed 1, Returned 5, nothing running or waiting", s)
	}
}

// StopNow called from inside fn returns the queued arguments and does not deadlock.
func TestAdv6FuncStopNowFromInsideFn(t *testing.T) {
	var p *crew.FuncPool[int]
	gotCh := make(chan []int, 1)
	proceed := make(chan struct{})
	p = crew.NewFunc(1, func(v int) {
		if v == 0 {
			<-proceed
			gotCh <- p.StopNow()
		}
	})
	for i := 0; i < 4; i++ {
		must(t, p.Invoke(i))
	}
	close(proceed)
	got := adv6Wait(t, "StopNow from inside fn to return", gotCh)
	p.StopAndWait()
	if want := []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("StopNow = %v, want %v", got, want)
	}
	if s := p.Stats(); s.Accepted != s.Completed+s.Returned {
		t.Fatalf("stats %+v: Accepted != Completed+Returned", s)
	}
}

// DiscardOldest on a FuncPool gives the discard handler the dropped argument (a T, not a
// func), calls the Discarded hook, and fn never runs with it.
func TestAdv6FuncDiscardOldestHandsArgumentToHandler(t *testing.T) {
	var mu sync.Mutex
	var dropped []any
	var hooked atomic.Int32
	p := newAdv6Held(t, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { mu.Lock(); dropped = append(dropped, v); mu.Unlock() }),
		crew.WithHooks(crew.Hooks{Discarded: func(crew.TaskInfo) { hooked.Add(1) }}))
	for i := 1; i <= 4; i++ {
		must(t, p.Invoke(i))
	}
	close(p.release)
	p.StopAndWait()
	mu.Lock()
	defer mu.Unlock()
	if want := []any{1, 2}; !slices.Equal(dropped, want) {
		t.Fatalf("discard handler got %v, want %v (the int arguments)", dropped, want)
	}
	if hooked.Load() != 2 {
		t.Fatalf("Discarded hook called %d times, want 2", hooked.Load())
	}
	p.ranTimes(t, "discarded", 0, 1, 2)
	s := p.Stats()
	if s.Accepted != 5 || s.Completed != 3 || s.Discarded != 2 {
		t.Fatalf("stats %+v: want Accepted 5, Completed 3, Discarded 2", s)
	}
}

// CallerRuns on a FuncPool calls fn on the invoker before Invoke returns, counted in
// CallerRan; while paused the invoker waits for Resume first; from inside fn, an Invoke
// into its own full queue runs the call itself. Hooks see every call.
func TestAdv6FuncCallerRunsRunsOnInvoker(t *testing.T) {
	var p *crew.FuncPool[int]
	var started atomic.Int32
	var ran sync.Map
	ranInline := make(chan error, 2)
	zeroStarted := make(chan struct{}, 1)
	zeroGate := make(chan struct{})
	p = crew.NewFunc(1, func(v int) {
		ran.Store(v, true)
		if v == 0 {
			zeroStarted <- struct{}{}
			<-zeroGate
			// The queue holds 1 already: this Invoke runs 100 inline on this goroutine.
			ranInline <- p.Invoke(100)
			if _, ok := ran.Load(100); !ok {
				ranInline <- errors.New("Invoke returned before running 100")
			}
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
		crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { started.Add(1) }}))
	p.Pause()
	must(t, p.Invoke(1)) // queued: the queue is now full
	done := make(chan error, 1)
	go func() { done <- p.Invoke(2) }()
	time.Sleep(20 * time.Millisecond)
	if _, ok := ran.Load(2); ok || len(done) != 0 {
		t.Fatal("CallerRuns ran a call on its invoker while the pool was paused")
	}
	p.Resume()
	must(t, adv6Wait(t, "the CallerRuns Invoke to return after Resume", done))
	if _, ok := ran.Load(2); !ok {
		t.Fatal("CallerRuns Invoke returned before fn ran with its argument")
	}
	p.Wait()
	if s := p.Stats(); s.CallerRan != 1 || s.Completed != 2 {
		t.Fatalf("stats %+v: want CallerRan 1, Completed 2", s)
	}
	must(t, p.Invoke(0))
	adv6Wait(t, "call 0 to start", zeroStarted)
	must(t, p.Invoke(1))
	close(zeroGate)
	if err := adv6Wait(t, "Invoke from inside fn into its own full queue", ranInline); err != nil {
		t.Fatalf("Invoke from inside fn = %v", err)
	}
	p.StopAndWait()
	if len(ranInline) != 0 {
		t.Fatal(<-ranInline)
	}
	s := p.Stats()
	if s.Accepted != s.Completed+s.Panicked || s.Accepted != 5 || s.CallerRan != 2 {
		t.Fatalf("stats %+v: want 5 accepted and completed, CallerRan 2", s)
	}
	if int(started.Load()) != int(s.Accepted) {
		t.Fatalf("Started hook called %d times, want %d", started.Load(), s.Accepted)
	}
}

// Invoke and TryInvoke from inside fn into its own full queue under Reject return
// ErrQueueFull / false at once, counted in Rejected; fn is never called with the argument.
func TestAdv6FuncInvokeFromOwnFnRejectsOnFullQueue(t *testing.T) {
	var p *crew.FuncPool[int]
	type result struct {
		err error
		ok  bool
	}
	res := make(chan result, 1)
	proceed := make(chan struct{})
	var ran sync.Map
	p = crew.NewFunc(1, func(v int) {
		ran.Store(v, true)
		if v == 0 {
			<-proceed
			err := p.Invoke(50)
			ok := p.TryInvoke(51)
			res <- result{err, ok}
		}
	}, crew.WithQueueSize(1), crew.WithNonBlocking())
	must(t, p.Invoke(0))
	must(t, p.Invoke(1))
	close(proceed)
	r := adv6Wait(t, "Invoke from inside fn into its own full queue", res)
	p.StopAndWait()
	if !errors.Is(r.err, crew.ErrQueueFull) || r.ok {
		t.Fatalf("Invoke = %v, TryInvoke = %v; want ErrQueueFull, false", r.err, r.ok)
	}
	if _, ok := ran.Load(50); ok {
		t.Fatal("fn ran with a rejected argument")
	}
	if s := p.Stats(); s.Rejected != 2 || s.Accepted != 2 || s.Completed != 2 {
		t.Fatalf("stats %+v: want Rejected 2, Accepted 2, Completed 2", s)
	}
}

// Shutdown whose context ends returns ctx.Err(), and every accepted call still runs exactly
// once (a FuncPool's calls carry no context, so none is skipped).
func TestAdv6FuncShutdownEndingContextStillRunsEveryCall(t *testing.T) {
	p := newAdv6Held(t)
	for i := 1; i <= 10; i++ {
		must(t, p.Invoke(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if err := p.Invoke(0); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Invoke after Shutdown = %v, want ErrStopped", err)
	}
	close(p.release)
	p.StopAndWait()
	p.ranTimes(t, "accepted before Shutdown", 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	if s := p.Stats(); s.Accepted != 11 || s.Completed != 11 || s.Skipped != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v: want 11 accepted and completed, none skipped", s)
	}
}

// No call starts while paused, even when Resize grows the limit; Stats shows them all
// Waiting; Resume starts them all.
func TestAdv6FuncPauseHoldsAcrossResize(t *testing.T) {
	var ran atomic.Int32
	p := crew.NewFunc(1, func(int) { ran.Add(1) }, crew.WithMinWorkers(1))
	defer p.StopAndWait()
	p.Pause()
	for i := 0; i < 20; i++ {
		must(t, p.Invoke(i))
	}
	p.Resize(4)
	p.Resize(crew.CPUs)
	time.Sleep(20 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d calls ran while paused", n)
	}
	if s := p.Stats(); s.Waiting != 20 || s.Running != 0 || !s.Paused {
		t.Fatalf("stats %+v: want 20 waiting, none running, paused", s)
	}
	p.Resume()
	p.Wait()
	if n := ran.Load(); n != 20 {
		t.Fatalf("%d calls ran after Resume, want 20", n)
	}
}

// A storm of Resize concurrent with Invoke never lets more calls run than the largest limit
// set, and every accepted call runs exactly once; after the storm, a final limit holds for
// every start after it.
func TestAdv6FuncResizeStormKeepsLimitAndExactlyOnce(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 800
	}
	// all sees every call; final only those of phase 2, which starts with nothing running.
	var all, final highWater
	var phase2 atomic.Bool
	runs := make([]atomic.Int32, n+1)
	p := crew.NewFunc(2, func(v int) {
		all.enter()
		defer all.exit()
		if phase2.Load() {
			final.enter()
			defer final.exit()
		}
		runs[v].Add(1)
		if v%16 == 0 {
			runtime.Gosched()
		}
	}, crew.WithQueueSize(32))
	endResizes := crewtest.Churn(t, "the resizer", func(i int) {
		p.Resize(1 + i%4)
		if s := p.Stats(); s.Completed+s.Panicked > s.Accepted {
			panic("Completed+Panicked > Accepted")
		}
		runtime.Gosched()
	})
	adv6InvokeAll(t, p, n)
	endResizes()
	p.Wait()
	p.Resize(1)
	phase2.Store(true)
	for i := 0; i < 50; i++ {
		must(t, p.Invoke(n))
	}
	p.StopAndWait()
	if h := all.high.Load(); h > 4 {
		t.Fatalf("%d calls ran at once, above every limit set (4)", h)
	}
	if h := final.high.Load(); h > 1 {
		t.Fatalf("%d calls ran at once after Resize(1) with nothing running", h)
	}
	ranOnce(t, runs[:n])
	if got := runs[n].Load(); got != 50 {
		t.Fatalf("final argument ran %d times, want 50", got)
	}
}

// Under WithAdaptiveLimit, handlers that panic (with a value and with nil) or call
// runtime.Goexit are counted exactly (Completed, Panicked), the panic handler sees each
// panic, the pool keeps serving, and the limit stays within [min, ceiling].
func TestAdv6FuncAdaptiveLimitUnderPanicsAndGoexit(t *testing.T) {
	n := 800
	if testing.Short() {
		n = 200
	}
	var handled atomic.Int32
	var nilPanics atomic.Int32
	var bad atomic.Value
	p := crew.NewFunc(8, func(v int) {
		switch v % 4 {
		case 1:
			panic("boom")
		case 2:
			panic(nil)
		case 3:
			runtime.Goexit()
		}
	}, crew.WithAdaptiveLimit(2), crew.WithPanicHandler(func(v any, _ []byte) {
		handled.Add(1)
		if v == nil {
			nilPanics.Add(1)
			return
		}
		if _, ok := v.(*runtime.PanicNilError); ok {
			nilPanics.Add(1)
		}
	}))
	endWatch := crewtest.Churn(t, "the watcher", func(int) {
		s := p.Stats()
		if s.MaxWorkers < 2 || s.MaxWorkers > 8 {
			bad.Store(s)
		}
		runtime.Gosched()
	})
	adv6InvokeAll(t, p, n)
	p.Wait()
	endWatch()
	if v := bad.Load(); v != nil {
		t.Fatalf("MaxWorkers outside [2, 8]: %+v", v)
	}
	s := p.Stats()
	p.StopAndWait()
	panics := uint64(n / 2)
	if s.Accepted != uint64(n) || s.Panicked != panics || s.Completed != uint64(n)-panics ||
		s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v: want Accepted %d, Panicked %d, Completed %d", s, n, panics, uint64(n)-panics)
	}
	if int(handled.Load()) != n/2 || int(nilPanics.Load()) != n/4 {
		t.Fatalf("panic handler saw %d panics (%d nil), want %d (%d nil)", handled.Load(), nilPanics.Load(), n/2, n/4)
	}
}

// A FuncPool sized CPUs takes a new GOMAXPROCS once a second has passed on its clock, when
// Stats is called; a Resize to a number stops the following. Under WithAdaptiveLimit the
// ceiling follows it.
func TestAdv6FuncCPUsFollowsGOMAXPROCS(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	p := crew.NewFunc(crew.CPUs, func(int) {}, crew.WithClock(clock))
	defer p.StopAndWait()
	a := crew.NewFunc(crew.CPUs, func(int) {}, crew.WithClock(clock), crew.WithAdaptiveLimit(1))
	defer a.StopAndWait()
	adv6MaxWorkers(t, p, "a new pool, at GOMAXPROCS", old, old)
	runtime.GOMAXPROCS(old + 3)
	advance(2 * time.Second)
	adv6MaxWorkers(t, p, "after a raised GOMAXPROCS and a second", old+3, old+3)
	adv6MaxWorkers(t, a, "adaptive, after a raised GOMAXPROCS and a second", 1, old+3)
	// Work still runs at the new limit.
	must(t, p.Invoke(1))
	p.Wait()
	p.Resize(2)
	runtime.GOMAXPROCS(old + 1)
	advance(2 * time.Second)
	adv6MaxWorkers(t, p, "after Resize(2), no longer following", 2, 2)
	// Resize(CPUs) follows again, reading GOMAXPROCS at once.
	p.Resize(crew.CPUs)
	adv6MaxWorkers(t, p, "after Resize(CPUs)", old+1, old+1)
	// Lower GOMAXPROCS: the adaptive pool's limit comes down to it.
	runtime.GOMAXPROCS(1)
	advance(2 * time.Second)
	adv6MaxWorkers(t, a, "adaptive, after GOMAXPROCS 1", 1, 1)
	adv6MaxWorkers(t, p, "after GOMAXPROCS 1", 1, 1)
}

// nil pointers and nil interfaces are arguments like any other; NewFunc, InvokeContext and
// methods of a nil *FuncPool panic with messages that name the call.
func TestAdv6FuncNilArgumentsAndMisuse(t *testing.T) {
	var ptrs, errs atomic.Int32
	pp := crew.NewFunc(1, func(v *int) {
		if v == nil {
			ptrs.Add(1)
		}
	})
	pe := crew.NewFunc(1, func(v error) {
		if v == nil {
			errs.Add(1)
		}
	})
	must(t, pp.Invoke(nil))
	if !pp.TryInvoke(nil) {
		t.Fatal("TryInvoke(nil) refused")
	}
	must(t, pp.InvokeContext(context.Background(), nil))
	must(t, pe.Invoke(nil))
	pp.StopAndWait()
	pe.StopAndWait()
	if ptrs.Load() != 3 || errs.Load() != 1 {
		t.Fatalf("nil arguments ran %d and %d times, want 3 and 1", ptrs.Load(), errs.Load())
	}
	var nilPool *crew.FuncPool[int]
	live := crew.NewFunc(1, func(int) {})
	defer live.StopAndWait()
	var nilCtx context.Context
	checkPanics(t, []panicCase{
		{"NewFunc nil fn", func() { crew.NewFunc[int](1, nil) }, "crew: NewFunc: fn must not be nil"},
		{"NewFunc zero", func() { crew.NewFunc(0, func(int) {}) }, "crew: NewFunc: maxWorkers must be >= 1 or CPUs, got 0"},
		{"InvokeContext nil ctx", func() { _ = live.InvokeContext(nilCtx, 1) }, "crew: InvokeContext: ctx must not be nil"},
		{"nil Invoke", func() { _ = nilPool.Invoke(1) }, "crew: Invoke: nil *FuncPool"},
		{"nil StopNow", func() { nilPool.StopNow() }, "crew: StopNow: nil *FuncPool"},
		{"nil Pause", func() { nilPool.Pause() }, "crew: Pause: nil *FuncPool"},
		{"nil Stats", func() { nilPool.Stats() }, "crew: Stats: nil *FuncPool"},
		{"nil Shutdown", func() { _ = nilPool.Shutdown(context.Background()) }, "crew: Shutdown: nil *FuncPool"},
		{"Shutdown nil ctx", func() { _ = live.Shutdown(nilCtx) }, "crew: Shutdown: ctx must not be nil"},
	})
	if live.Stopped() {
		t.Fatal("Shutdown(nil) stopped the pool")
	}
}

// InvokeContext on a full queue gives up when ctx ends with an error matching ctx.Err(),
// counted in Canceled, and fn is never called with the argument; a done ctx is refused at
// once even with room.
func TestAdv6FuncInvokeContextEndsWhileBlocked(t *testing.T) {
	p := newAdv6Held(t, crew.WithQueueSize(1))
	must(t, p.Invoke(1))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.InvokeContext(ctx, 2) }()
	waitFor(t, "InvokeContext to block", func() bool { return !p.TryInvoke(-1) && len(errc) == 0 })
	cancel()
	if err := adv6Wait(t, "InvokeContext to give up", errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext = %v, want Canceled", err)
	}
	close(p.release)
	p.Wait()
	if err := p.InvokeContext(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext(done ctx) = %v, want Canceled", err)
	}
	p.StopAndWait()
	p.ranTimes(t, "refused", 0, 2, 3, -1)
	if s := p.Stats(); s.Canceled != 2 || s.Accepted != 2 || s.Completed != 2 {
		t.Fatalf("stats %+v: want Canceled 2, Accepted 2, Completed 2", s)
	}
}

// Every Stats snapshot of a FuncPool taken while calls are invoked, discarded, run, panic and
// are handed back counts each accepted unended call exactly once in Running+Waiting, and the
// counters add up once the pool is drained.
func TestAdv6FuncStatsRunningWaitingCountEachOnce(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 400
	}
	p := crew.NewFunc(3, func(v int) {
		if v%7 == 0 {
			panic("boom")
		}
		if v%5 == 0 {
			runtime.Gosched()
		}
	}, crew.WithQueueSize(8), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) {}), crew.WithPanicHandler(func(any, []byte) {}))
	var bad atomic.Value
	endWatch := crewtest.Churn(t, "the watcher", func(int) {
		s := p.Stats()
		ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
		if s.Accepted < ended || uint64(s.Running+s.Waiting) != s.Accepted-ended || s.Running > s.MaxWorkers {
			bad.Store(s)
		}
	})
	adv6InvokeAll(t, p, n)
	p.Pause()
	for i := 0; i < 6; i++ {
		must(t, p.Invoke(i))
	}
	back := p.StopNow()
	endWatch()
	p.StopAndWait()
	if v := bad.Load(); v != nil {
		t.Fatalf("inconsistent snapshot: %+v", v)
	}
	s := p.Stats()
	if s.Returned != uint64(len(back)) {
		t.Fatalf("Returned %d, StopNow handed back %d", s.Returned, len(back))
	}
	if s.Accepted != uint64(n+6) || s.Accepted != s.Completed+s.Panicked+s.Discarded+s.Returned ||
		s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v: counters do not add up to %d accepted", s, n+6)
	}
}

// With hooks, or with WithAdaptiveLimit, WithLatencySample has no effect: every call is
// timed and counted once in WaitTime and RunTime; hooks see every call.
func TestAdv6FuncLatencySampleIgnoredWithHooksOrAdaptive(t *testing.T) {
	const n = 200
	var started, finished atomic.Int32
	h := crew.NewFunc(2, func(int) {}, crew.WithLatencyHistograms(), crew.WithLatencySample(8),
		crew.WithHooks(crew.Hooks{
			Started:  func(crew.TaskInfo) { started.Add(1) },
			Finished: func(crew.TaskInfo) { finished.Add(1) },
		}))
	a := crew.NewFunc(2, func(int) {}, crew.WithLatencyHistograms(), crew.WithLatencySample(8),
		crew.WithAdaptiveLimit(1))
	s8 := crew.NewFunc(2, func(int) {}, crew.WithLatencyHistograms(), crew.WithLatencySample(8))
	for i := 0; i < n; i++ {
		must(t, h.Invoke(i))
		must(t, a.Invoke(i))
		must(t, s8.Invoke(i))
	}
	h.StopAndWait()
	a.StopAndWait()
	s8.StopAndWait()
	for name, p := range map[string]*crew.FuncPool[int]{"hooks": h, "adaptive": a} {
		s := p.Stats()
		if s.WaitTime == nil || s.RunTime == nil || s.WaitTime.Count != n || s.RunTime.Count != n {
			t.Fatalf("%s: WaitTime %+v RunTime %+v, want Count %d each", name, s.WaitTime, s.RunTime, n)
		}
	}
	if started.Load() != n || finished.Load() != n {
		t.Fatalf("hooks saw %d starts and %d finishes, want %d", started.Load(), finished.Load(), n)
	}
	s := s8.Stats()
	if s.WaitTime.Count%8 != 0 || s.RunTime.Count%8 != 0 || s.Completed != n {
		t.Fatalf("sampled: WaitTime.Count %d RunTime.Count %d Completed %d: want multiples of 8, %d completed",
			s.WaitTime.Count, s.RunTime.Count, s.Completed, n)
	}
}

// StopNow while invokers are blocked on a full queue: each blocked Invoke returns
// ErrStopped, never nil for an argument StopNow hands back; every accepted argument either
// ran once or was handed back.
func TestAdv6FuncStopNowRefusesBlockedInvokers(t *testing.T) {
	p := newAdv6Held(t, crew.WithQueueSize(2))
	must(t, p.Invoke(1))
	must(t, p.Invoke(2))
	errs := make(chan error, 7)
	for i := 3; i < 10; i++ {
		go func() { errs <- p.Invoke(i) }()
	}
	waitFor(t, "invokers to block", func() bool { return p.Stats().Accepted == 3 && len(errs) == 0 })
	time.Sleep(10 * time.Millisecond)
	back := p.StopNow()
	for i := 3; i < 10; i++ {
		if err := adv6Wait(t, "a blocked Invoke to return after StopNow", errs); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("blocked Invoke = %v, want ErrStopped", err)
		}
	}
	close(p.release)
	p.StopAndWait()
	if want := []int{1, 2}; !slices.Equal(back, want) {
		t.Fatalf("StopNow = %v, want %v", back, want)
	}
	p.ranTimes(t, "the call that held the worker", 1, 0)
	p.ranTimes(t, "handed back or refused", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	if s := p.Stats(); s.Accepted != 3 || s.Completed != 1 || s.Returned != 2 {
		t.Fatalf("stats %+v: want Accepted 3, Completed 1, Returned 2", s)
	}
}

// WithMaxWait on a FuncPool: a blocked Invoke gives up after the wait with ErrQueueFull,
// counted in Rejected and reported to the Rejected hook; fn never runs with it.
func TestAdv6FuncMaxWaitRejectsAfterWait(t *testing.T) {
	var rejected atomic.Value
	p := newAdv6Held(t, crew.WithQueueSize(1), crew.WithMaxWait(10*time.Millisecond),
		crew.WithHooks(crew.Hooks{Rejected: func(err error) { rejected.Store(err) }}))
	must(t, p.Invoke(1))
	err := returnsWithin(t, "Invoke with WithMaxWait", func() error { return p.Invoke(2) })
	if !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Invoke = %v, want ErrQueueFull", err)
	}
	if e, _ := rejected.Load().(error); !errors.Is(e, crew.ErrQueueFull) {
		t.Fatalf("Rejected hook got %v, want ErrQueueFull", e)
	}
	close(p.release)
	p.StopAndWait()
	p.ranTimes(t, "rejected", 0, 2)
	if s := p.Stats(); s.Rejected != 1 || s.Accepted != 2 || s.Completed != 2 {
		t.Fatalf("stats %+v: want Rejected 1, Accepted 2, Completed 2", s)
	}
}

// A Queued hook that calls runtime.Goexit ends the invoker inside Invoke: the call is not
// accepted and never runs. A Started hook that calls it keeps the call from running, and the
// call counts as completed; the pool keeps serving.
func TestAdv6FuncHooksGoexit(t *testing.T) {
	var ran sync.Map
	p := crew.NewFunc(1, func(v int) { ran.Store(v, true) },
		crew.WithHooks(crew.Hooks{
			Queued: func(crew.TaskInfo) {
				if goexitQueued.Load() {
					runtime.Goexit()
				}
			},
			Started: func(crew.TaskInfo) {
				if goexitStarted.Load() {
					runtime.Goexit()
				}
			},
		}))
	defer goexitQueued.Store(false)
	defer goexitStarted.Store(false)
	goexitQueued.Store(true)
	returned := make(chan struct{})
	exited := goRun(func() {
		_ = p.Invoke(1)
		close(returned)
	})
	adv6Wait(t, "invoker to end", exited)
	select {
	case <-returned:
		t.Fatal("Invoke returned although its Queued hook called runtime.Goexit")
	default:
	}
	goexitQueued.Store(false)
	goexitStarted.Store(true)
	must(t, p.Invoke(2))
	p.Wait()
	goexitStarted.Store(false)
	must(t, p.Invoke(3))
	p.StopAndWait()
	for v, want := range map[int]bool{1: false, 2: false, 3: true} {
		if _, ok := ran.Load(v); ok != want {
			t.Fatalf("argument %d ran: %v, want %v", v, ok, want)
		}
	}
	if s := p.Stats(); s.Accepted != 2 || s.Completed != 2 || s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v: want Accepted 2, Completed 2", s)
	}
}

var goexitQueued, goexitStarted atomic.Bool

// Everything at once on a FuncPool: invokers (blocking, Try, Context), Resize, Pause/Resume,
// Stats, then StopNow racing Shutdown. Every accepted argument runs exactly once or is
// handed back, never both; the counters add up.
func TestAdv6FuncConcurrentEverythingExactlyOnce(t *testing.T) {
	n := 1200
	if testing.Short() {
		n = 300
	}
	runs := make([]atomic.Int32, n)
	accepted := make([]atomic.Bool, n)
	p := crew.NewFunc(3, func(v int) {
		runs[v].Add(1)
		if v%9 == 0 {
			runtime.Gosched()
		}
	}, crew.WithQueueSize(16), crew.WithMinWorkers(1), crew.WithIdleTimeout(0))
	var bad atomic.Value
	endChurn := crewtest.Churn(t, "the churn", func(i int) {
		switch i % 4 {
		case 0:
			p.Resize(1 + i%5)
		case 1:
			p.Pause()
		case 2:
			p.Resume()
		case 3:
			s := p.Stats()
			ended := s.Completed + s.Panicked + s.Returned
			if ended > s.Accepted || uint64(s.Running+s.Waiting) != s.Accepted-ended {
				bad.Store(s)
			}
		}
		runtime.Gosched()
	})
	ctx := context.Background()
	together(4, n/4, func(c, i int) {
		v := c*(n/4) + i
		var err error
		switch v % 3 {
		case 0:
			err = p.Invoke(v)
		case 1:
			if !p.TryInvoke(v) {
				err = crew.ErrQueueFull
			}
		case 2:
			err = p.InvokeContext(ctx, v)
		}
		if err == nil {
			accepted[v].Store(true)
		} else if !errors.Is(err, crew.ErrQueueFull) && !errors.Is(err, crew.ErrStopped) {
			panic(err)
		}
	})
	endChurn()
	if v := bad.Load(); v != nil {
		t.Fatalf("inconsistent snapshot: %+v", v)
	}
	p.Pause()
	var back []int
	var shutErr error
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	both := goRun(func() { shutErr = p.Shutdown(sctx) })
	back = p.StopNow()
	adv6Wait(t, "Shutdown", both)
	p.StopAndWait()
	if shutErr != nil {
		t.Fatalf("Shutdown = %v", shutErr)
	}
	handed := make(map[int]bool, len(back))
	for _, v := range back {
		if handed[v] {
			t.Fatalf("StopNow handed back %d twice", v)
		}
		handed[v] = true
	}
	for v := range runs {
		r := runs[v].Load()
		switch {
		case !accepted[v].Load() && (r != 0 || handed[v]):
			t.Fatalf("refused argument %d ran %d times (handed back %v)", v, r, handed[v])
		case accepted[v].Load() && handed[v] && r != 0:
			t.Fatalf("argument %d both ran and was handed back", v)
		case accepted[v].Load() && !handed[v] && r != 1:
			t.Fatalf("accepted argument %d ran %d times", v, r)
		}
	}
	s := p.Stats()
	if s.Returned != uint64(len(back)) || s.Accepted != s.Completed+s.Returned || s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("stats %+v (handed back %d): counters do not add up", s, len(back))
	}
}

// WithMinWorkers and WithIdleTimeout(0) on a FuncPool: after a burst the workers above the
// minimum exit, and the minimum stays alive while idle.
func TestAdv6FuncMinWorkersStayIdleTimeoutZeroReaps(t *testing.T) {
	p := crew.NewFunc(6, func(int) { time.Sleep(time.Millisecond) },
		crew.WithMinWorkers(2), crew.WithIdleTimeout(0))
	defer p.StopAndWait()
	if p.MinWorkers() != 2 || p.IdleTimeout() != 0 {
		t.Fatalf("MinWorkers %d IdleTimeout %v", p.MinWorkers(), p.IdleTimeout())
	}
	awaitStats(t, p, "the minimum workers to start", func(s crew.Stats) bool { return s.Idle == 2 })
	for i := 0; i < 60; i++ {
		must(t, p.Invoke(i))
	}
	p.Wait()
	awaitStats(t, p, "idle workers above the minimum to exit", func(s crew.Stats) bool {
		return s.Idle == 2 && s.Running == 0
	})
}

// Histograms and hooks on a FuncPool see every call that started, wherever it ran: on a
// worker, on its invoker (CallerRuns), one that panicked (also with nil) or called
// runtime.Goexit; none that was discarded or handed back. Finished reports Panicked.
func TestAdv6FuncHistogramsAndHooksCountEveryStart(t *testing.T) {
	var mu sync.Mutex
	finished := map[int]int{} // 0: returned, 1: panicked
	var startedN atomic.Int32
	gate := make(chan struct{})
	first := make(chan struct{}, 1)
	p := crew.NewFunc(1, func(v int) {
		switch {
		case v == 0:
			first <- struct{}{}
			<-gate
		case v%4 == 1:
			panic("boom")
		case v%4 == 2:
			panic(nil)
		case v%4 == 3:
			runtime.Goexit()
		}
	}, crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(any, []byte) {}),
		crew.WithHooks(crew.Hooks{
			Started: func(crew.TaskInfo) { startedN.Add(1) },
			Finished: func(i crew.TaskInfo) {
				mu.Lock()
				defer mu.Unlock()
				if i.Panicked {
					finished[1]++
				} else {
					finished[0]++
				}
			},
		}))
	must(t, p.Invoke(0))
	adv6Wait(t, "first call", first)
	// 1..4 fill the queue; 5..12 run on this goroutine (CallerRuns).
	for i := 1; i <= 12; i++ {
		done := goRun(func() { _ = p.Invoke(i) }) // Goexit inline ends that goroutine only
		adv6Wait(t, "Invoke", done)
	}
	close(gate)
	p.StopAndWait()
	s := p.Stats()
	if s.Accepted != 13 || s.CallerRan != 8 {
		t.Fatalf("stats %+v: want Accepted 13, CallerRan 8", s)
	}
	// 1..12: three each of panic, panic(nil), Goexit, return.
	if s.Panicked != 6 || s.Completed != 7 {
		t.Fatalf("stats %+v: want Panicked 6, Completed 7", s)
	}
	if s.WaitTime.Count != 13 || s.RunTime.Count != 13 {
		t.Fatalf("WaitTime.Count %d, RunTime.Count %d, want 13 each", s.WaitTime.Count, s.RunTime.Count)
	}
	mu.Lock()
	defer mu.Unlock()
	if startedN.Load() != 13 || finished[1] != 6 || finished[0] != 7 {
		t.Fatalf("hooks: %d started, finished %v; want 13 started, 6 panicked, 7 not", startedN.Load(), finished)
	}
}

// A CallerRuns invoker waiting on a paused FuncPool for Resume returns ErrStopped when
// StopNow (or Stop) overtakes it, and fn is never called with its argument.
func TestAdv6FuncCallerRunsWaitingOnPauseStopped(t *testing.T) {
	for _, how := range []string{"StopNow", "Stop"} {
		t.Run(how, func(t *testing.T) {
			var ran sync.Map
			p := crew.NewFunc(1, func(v int) { ran.Store(v, true) },
				crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
			p.Pause()
			must(t, p.Invoke(1))
			errc := make(chan error, 1)
			go func() { errc <- p.Invoke(2) }()
			time.Sleep(20 * time.Millisecond)
			if len(errc) != 0 {
				t.Fatal("CallerRuns Invoke returned on a paused pool")
			}
			if how == "StopNow" {
				if back := p.StopNow(); !slices.Equal(back, []int{1}) {
					t.Errorf("StopNow = %v, want [1]", back)
				}
			} else {
				p.Stop()
			}
			if err := adv6Wait(t, "the waiting CallerRuns Invoke", errc); !errors.Is(err, crew.ErrStopped) {
				t.Errorf("waiting CallerRuns Invoke = %v, want ErrStopped", err)
			}
			p.StopAndWait()
			if _, ok := ran.Load(2); ok {
				t.Error("fn ran with the argument of an Invoke that returned ErrStopped")
			}
			s := p.Stats()
			if s.Accepted != s.Completed+s.Returned || s.Accepted != 1 {
				t.Errorf("stats %+v: want Accepted 1 = Completed+Returned", s)
			}
		})
	}
}

// adv6Clock is a settable clock for WithClock.
type adv6Clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *adv6Clock) read() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *adv6Clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A CPUs-sized FuncPool that is running calls takes a raised GOMAXPROCS within a second of
// submits, without a Stats call, and starts queued calls up to it; lowered again (with
// WithMinWorkers above the new value), no more than the new value start at once.
func TestAdv6FuncCPUsGrowsWhileRunningWithoutStats(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the one-second reading of GOMAXPROCS")
	}
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	runtime.GOMAXPROCS(2)
	clock := &adv6Clock{now: time.Now()}
	var hw highWater
	gate := make(chan struct{})
	p := crew.NewFunc(crew.CPUs, func(v int) {
		hw.enter()
		defer hw.exit()
		if v < 100 {
			<-gate
		}
	}, crew.WithClock(clock.read), crew.WithMinWorkers(2))
	for i := 0; i < 8; i++ {
		must(t, p.Invoke(i))
	}
	waitFor(t, "two calls to run", func() bool { return hw.running.Load() == 2 })
	runtime.GOMAXPROCS(5)
	clock.advance(2 * time.Second)
	must(t, p.Invoke(8)) // a submit: the reading is due within a second
	waitFor(t, "five calls to run after GOMAXPROCS 5", func() bool { return hw.running.Load() == 5 })
	close(gate)
	p.Wait()
	if h := hw.high.Load(); h != 5 {
		t.Fatalf("%d calls ran at once, want 5", h)
	}
	runtime.GOMAXPROCS(1)
	clock.advance(2 * time.Second)
	adv6MaxWorkers(t, p, "after GOMAXPROCS 1", 1, 1)
	hw.high.Store(0)
	for i := 0; i < 40; i++ {
		must(t, p.Invoke(100+i))
	}
	p.StopAndWait()
	if h := hw.high.Load(); h != 1 {
		t.Fatalf("%d calls ran at once under a limit of 1 (WithMinWorkers(2))", h)
	}
}

// Stop ends the readings of GOMAXPROCS: a stopped CPUs pool keeps its last limit. The
// minimum workers are checked against GOMAXPROCS when the pool is made.
func TestAdv6FuncCPUsStopEndsFollowing(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	runtime.GOMAXPROCS(2)
	clock := &adv6Clock{now: time.Now()}
	p := crew.NewFunc(crew.CPUs, func(int) {}, crew.WithClock(clock.read))
	p.Stop()
	runtime.GOMAXPROCS(4)
	clock.advance(2 * time.Second)
	adv6MaxWorkers(t, p, "a stopped pool", 2, 2)
	p.StopAndWait()
	checkPanics(t, []panicCase{{"min above GOMAXPROCS", func() {
		crew.NewFunc(crew.CPUs, func(int) {}, crew.WithMinWorkers(5))
	}, "crew: NewFunc: WithMinWorkers(5) exceeds maxWorkers 4"}})
}

// Resize on an adaptive FuncPool sets the ceiling: a limit above it comes down at once, a
// lower one stays at or above min; a min above the ceiling counts as the ceiling.
func TestAdv6FuncAdaptiveResizeSetsCeiling(t *testing.T) {
	// resizes makes an adaptive pool of ceiling and minimum and checks its limit: the ceiling
	// when new, low after Resize(low), and within [minimum, 10] after Resize(10).
	resizes := func(ceiling, minimum, low int) *crew.FuncPool[int] {
		p := crew.NewFunc(ceiling, func(int) {}, crew.WithAdaptiveLimit(minimum))
		t.Cleanup(p.StopAndWait)
		what := fmt.Sprintf("ceiling %d, min %d", ceiling, minimum)
		adv6MaxWorkers(t, p, what+": a new pool", ceiling, ceiling)
		p.Resize(low)
		adv6MaxWorkers(t, p, fmt.Sprintf("%s: after Resize(%d)", what, low), low, low)
		p.Resize(10)
		adv6MaxWorkers(t, p, what+": after Resize(10)", minimum, 10)
		return p
	}
	resizes(8, 2, 3)
	q := resizes(2, 5, 1)
	for i := 0; i < 100; i++ {
		must(t, q.Invoke(i))
	}
	q.Wait()
	if s := q.Stats(); s.Completed != 100 || s.MaxWorkers < 5 || s.MaxWorkers > 10 {
		t.Fatalf("stats %+v: want 100 completed, MaxWorkers within [5, 10]", s)
	}
}

// A discard handler that panics, with a value or with nil, is reported to the panic
// handler, and the Invoke that caused the drop still returns nil; the dropped argument never
// runs and the pool keeps serving.
func TestAdv6FuncDiscardHandlerPanicGoesToPanicHandler(t *testing.T) {
	var reported atomic.Int32
	p := newAdv6Held(t, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithPanicHandler(func(any, []byte) { reported.Add(1) }),
		crew.WithDiscardHandler(func(v any) {
			if v.(int) == 1 {
				panic("discard boom")
			}
			panic(nil)
		}))
	must(t, p.Invoke(1))
	must(t, p.Invoke(2)) // drops 1: the handler panics with a value
	must(t, p.Invoke(3)) // drops 2: the handler panics with nil
	close(p.release)
	p.StopAndWait()
	if reported.Load() != 2 {
		t.Fatalf("panic handler got %d reports, want 2", reported.Load())
	}
	p.ranTimes(t, "accepted and not dropped", 1, 0, 3)
	p.ranTimes(t, "dropped", 0, 1, 2)
	if s := p.Stats(); s.Accepted != 4 || s.Discarded != 2 || s.Completed != 2 || s.Panicked != 0 {
		t.Fatalf("stats %+v: want Accepted 4, Discarded 2, Completed 2, Panicked 0", s)
	}
}

// PauseAndWait called from inside fn waits for that call too, so it returns ctx.Err() when
// ctx ends, and the pool stays paused: no queued call starts until Resume.
func TestAdv6FuncPauseAndWaitFromInsideFn(t *testing.T) {
	var p *crew.FuncPool[int]
	errc := make(chan error, 1)
	var ran atomic.Int32
	proceed := make(chan struct{})
	p = crew.NewFunc(2, func(v int) {
		ran.Add(1)
		if v == 0 {
			<-proceed
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			errc <- p.PauseAndWait(ctx)
		}
	}, crew.WithQueueSize(8))
	defer p.StopAndWait()
	must(t, p.Invoke(0))
	waitFor(t, "call 0 to start", func() bool { return ran.Load() == 1 })
	close(proceed)
	if err := adv6Wait(t, "PauseAndWait from inside fn to return when its ctx ends", errc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PauseAndWait from inside fn = %v, want DeadlineExceeded", err)
	}
	p.Wait() // call 0 has returned; nothing queued
	for i := 1; i <= 3; i++ {
		must(t, p.Invoke(i))
	}
	time.Sleep(20 * time.Millisecond)
	if s := p.Stats(); !s.Paused || s.Waiting != 3 || ran.Load() != 1 {
		t.Fatalf("stats %+v, ran %d: want paused with 3 waiting, 1 ran", s, ran.Load())
	}
	if err := p.PauseAndWait(context.Background()); err != nil {
		t.Fatalf("PauseAndWait with nothing running = %v", err)
	}
	p.Resume()
	p.Wait()
	if ran.Load() != 4 {
		t.Fatalf("%d calls ran after Resume, want 4", ran.Load())
	}
}

// Pause does nothing once the FuncPool is stopped: its accepted calls still run to the end
// and Stats does not report it paused.
func TestAdv6FuncPauseAfterStopDoesNothing(t *testing.T) {
	p := newAdv6Held(t)
	for i := 1; i < 5; i++ {
		must(t, p.Invoke(i))
	}
	p.Stop()
	p.Pause()
	if p.Stats().Paused {
		t.Fatal("a stopped pool reports Paused after Pause")
	}
	close(p.release)
	done := goRun(p.StopAndWait)
	adv6Wait(t, "StopAndWait of a pool paused after Stop", done)
	p.ranTimes(t, "accepted before Stop", 1, 0, 1, 2, 3, 4)
}

// Every refused Invoke, whatever the door and the reason, has its Queued hook followed by
// Rejected with the error it returns, and fn never runs with it; Stats counts a full queue in
// Rejected and an ended context in Canceled, and neither in Accepted.
func TestAdv6FuncRefusalsReachRejectedHook(t *testing.T) {
	var mu sync.Mutex
	var queued int
	var rejected []error
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	p := newAdv6Held(t, crew.WithQueueSize(1), crew.WithNonBlocking(), crew.WithContext(pctx),
		crew.WithHooks(crew.Hooks{
			Queued:   func(crew.TaskInfo) { mu.Lock(); queued++; mu.Unlock() },
			Rejected: func(err error) { mu.Lock(); rejected = append(rejected, err); mu.Unlock() },
		}))
	must(t, p.Invoke(1))
	if err := p.Invoke(10); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Invoke on full queue = %v", err)
	}
	if p.TryInvoke(11) {
		t.Fatal("TryInvoke on full queue accepted")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.InvokeContext(done, 12); !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext(done) = %v", err)
	}
	pcancel() // the pool's context ends: it stops
	waitFor(t, "the pool to stop", p.Stopped)
	if err := p.Invoke(13); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Invoke after the pool's context ended = %v", err)
	}
	close(p.release)
	p.StopAndWait()
	p.ranTimes(t, "refused", 0, 10, 11, 12, 13)
	mu.Lock()
	defer mu.Unlock()
	want := []error{crew.ErrQueueFull, crew.ErrQueueFull, context.Canceled, crew.ErrStopped}
	if len(rejected) != len(want) {
		t.Fatalf("Rejected hook got %v, want %v", rejected, want)
	}
	for i := range want {
		if !errors.Is(rejected[i], want[i]) {
			t.Fatalf("Rejected hook got %v, want %v", rejected, want)
		}
	}
	if queued != 6 {
		t.Fatalf("Queued hook called %d times, want 6", queued)
	}
	if s := p.Stats(); s.Accepted != 2 || s.Completed != 2 || s.Rejected != 2 || s.Canceled != 1 {
		t.Fatalf("stats %+v: want Accepted 2, Completed 2, Rejected 2, Canceled 1", s)
	}
}

// Shutdown, StopAndWait and StopNow called at once from many goroutines on a FuncPool with
// a paused backlog all return; each queued argument is handed back once or runs once.
func TestAdv6FuncConcurrentStopsAllReturn(t *testing.T) {
	const n = 200
	runs := make([]atomic.Int32, n)
	p := crew.NewFunc(2, func(v int) { runs[v].Add(1) }, crew.WithQueueSize(n))
	p.Pause()
	for i := 0; i < n; i++ {
		must(t, p.Invoke(i))
	}
	var mu sync.Mutex
	var back []int
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 3 {
			case 0:
				got := p.StopNow()
				mu.Lock()
				back = append(back, got...)
				mu.Unlock()
			case 1:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				_ = p.Shutdown(ctx)
			case 2:
				p.StopAndWait()
			}
		}()
	}
	adv6Wait(t, "every stop to return", goRun(wg.Wait))
	p.StopAndWait()
	handed := map[int]int{}
	for _, v := range back {
		handed[v]++
	}
	for v := range runs {
		if got := int(runs[v].Load()) + handed[v]; got != 1 {
			t.Fatalf("argument %d ran %d times and was handed back %d times", v, runs[v].Load(), handed[v])
		}
	}
	if s := p.Stats(); s.Accepted != n || s.Completed+s.Returned != n || s.Returned != uint64(len(back)) {
		t.Fatalf("stats %+v (handed back %d): counters do not add up", s, len(back))
	}
}

// Calls that end their worker with runtime.Goexit (or a panic handler that does) are
// replaced: Running is 0 as soon as Wait returns, the minimum workers come back idle, and
// the pool keeps serving.
func TestAdv6FuncGoexitWorkersReplacedToMinimum(t *testing.T) {
	var done atomic.Int32
	p := crew.NewFunc(3, func(v int) {
		done.Add(1)
		switch v % 3 {
		case 0:
			runtime.Goexit()
		case 1:
			panic(v)
		}
	}, crew.WithMinWorkers(2), crew.WithIdleTimeout(0),
		crew.WithPanicHandler(func(any, []byte) { runtime.Goexit() }))
	defer p.StopAndWait()
	for i := 0; i < 60; i++ {
		must(t, p.Invoke(i))
	}
	p.Wait()
	if s := p.Stats(); s.Running != 0 || s.Waiting != 0 || s.Completed != 40 || s.Panicked != 20 {
		t.Fatalf("stats right after Wait %+v: want nothing running, Completed 40, Panicked 20", s)
	}
	awaitStats(t, p, "the two minimum workers idle", func(s crew.Stats) bool { return s.Idle == 2 })
	must(t, p.Invoke(2))
	p.Wait()
	if done.Load() != 61 {
		t.Fatalf("%d calls ran, want 61", done.Load())
	}
}

// Resize storms on an adaptive FuncPool whose calls panic: no more calls run than the
// highest ceiling set, every call runs once, and the limit ends within [1, last ceiling].
func TestAdv6FuncAdaptiveResizeStormWithPanics(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 400
	}
	var hw highWater
	runs := make([]atomic.Int32, n)
	p := crew.NewFunc(6, func(v int) {
		hw.enter()
		defer hw.exit()
		runs[v].Add(1)
		if v%3 == 0 {
			panic(nil)
		}
	}, crew.WithAdaptiveLimit(2), crew.WithQueueSize(16), crew.WithPanicHandler(func(any, []byte) {}))
	endStorm := crewtest.Churn(t, "the resize storm", func(i int) {
		p.Resize(1 + i%6)
		runtime.Gosched()
	})
	adv6InvokeAll(t, p, n)
	endStorm()
	p.Resize(3)
	p.Wait()
	adv6MaxWorkers(t, p, "after Resize(3)", 2, 3)
	p.StopAndWait()
	if h := hw.high.Load(); h > 6 {
		t.Fatalf("%d calls ran at once, above every ceiling set (6)", h)
	}
	ranOnce(t, runs)
	if s := p.Stats(); s.Accepted != uint64(n) || s.Completed+s.Panicked != uint64(n) {
		t.Fatalf("stats %+v: counters do not add up to %d", s, n)
	}
}
