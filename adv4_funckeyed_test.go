package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

// TestAdvFKDiscardedFutureArgumentGoesToTheHandler: WithDiscardHandler promises that a
// dropped FuncPool argument goes to the handler, whatever its type; a *Future is an argument
// like any other, and dropping it must leave the future (of another pool) alone.
func TestAdvFKDiscardedFutureArgumentGoesToTheHandler(t *testing.T) {
	src := crew.New(1)
	defer src.StopAndWait()
	done := crew.Go(src, func() (int, error) { return 42, nil })
	if v, err := done.Wait(); v != 42 || err != nil {
		t.Fatalf("future: %v, %v", v, err)
	}
	var mu sync.Mutex
	var got []any
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	fp := crew.NewFunc(1, func(f *crew.Future[int]) {
		if f == nil {
			started <- struct{}{}
			<-release
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { mu.Lock(); got = append(got, v); mu.Unlock() }))
	defer fp.StopAndWait()
	defer close(release)
	must(t, fp.Invoke(nil))
	awaitReturn(t, "the first call to start", recvOne(started))
	must(t, fp.Invoke(done))
	must(t, fp.Invoke(done)) // drops the first
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != any(done) {
		t.Fatalf("discard handler got %v, want the dropped *Future", got)
	}
	if v, err := done.Wait(); v != 42 || err != nil {
		t.Fatalf("the dropped argument's future changed: %v, %v", v, err)
	}
}

// recvOne returns a channel closed once one value has come from ch.
func recvOne[T any](ch <-chan T) <-chan struct{} {
	return goRun(func() { <-ch })
}

// panicText runs f and returns what it panicked with, as text, or "" if it returned.
func panicText(f func()) (s string) {
	defer func() {
		if v := recover(); v != nil {
			s = fmt.Sprint(v)
		}
	}()
	f()
	return ""
}

// TestAdvFKNewFuncResizeAndNilReceiverPanicClearly: NewFunc panics for maxWorkers < 1 (not
// CPUs) and for a nil fn, Resize for a size < 1 (not CPUs), the methods of a nil *FuncPool
// name the call, and a nil ctx panics in InvokeContext, Shutdown (which then stops nothing)
// and PauseAndWait (which then pauses nothing).
func TestAdvFKNewFuncResizeAndNilReceiverPanicClearly(t *testing.T) {
	fn := func(int) {}
	for _, c := range []struct {
		name, want string
		call       func()
	}{
		{"zero", "NewFunc", func() { crew.NewFunc(0, fn) }},
		{"negative", "NewFunc", func() { crew.NewFunc(-2, fn) }},
		{"min", "NewFunc", func() { crew.NewFunc(math.MinInt, fn) }},
		{"nilfn", "NewFunc", func() { crew.NewFunc[int](1, nil) }},
		{"minworkers", "NewFunc", func() { crew.NewFunc(1, fn, crew.WithMinWorkers(2)) }},
		{"nilInvoke", "Invoke", func() { var p *crew.FuncPool[int]; _ = p.Invoke(1) }},
		{"nilStopNow", "StopNow", func() { var p *crew.FuncPool[int]; p.StopNow() }},
		{"nilPause", "Pause", func() { var p *crew.FuncPool[int]; p.Pause() }},
		{"nilStats", "Stats", func() { var p *crew.FuncPool[int]; p.Stats() }},
		{"nilResize", "Resize", func() { var p *crew.FuncPool[int]; p.Resize(1) }},
	} {
		if got := panicText(c.call); !strings.Contains(got, c.want) {
			t.Errorf("%s: panic %q, want one naming %s", c.name, got, c.want)
		}
	}
	p := crew.NewFunc(crew.CPUs, fn)
	defer p.StopAndWait()
	if got := p.Stats().MaxWorkers; got != runtime.GOMAXPROCS(0) {
		t.Fatalf("NewFunc(CPUs): MaxWorkers %d, want GOMAXPROCS %d", got, runtime.GOMAXPROCS(0))
	}
	for _, n := range []int{0, -2, math.MinInt} {
		if got := panicText(func() { p.Resize(n) }); !strings.Contains(got, "Resize") {
			t.Errorf("Resize(%d): panic %q, want one naming Resize", n, got)
		}
	}
	if got := p.Stats().MaxWorkers; got != runtime.GOMAXPROCS(0) {
		t.Fatalf("a refused Resize changed MaxWorkers to %d", got)
	}
	p.Resize(3)
	p.Resize(crew.CPUs)
	if got := p.Stats().MaxWorkers; got != runtime.GOMAXPROCS(0) {
		t.Fatalf("Resize(CPUs): MaxWorkers %d", got)
	}
	//lint:ignore SA1012 a nil context is the mistake under test
	if got := panicText(func() { _ = p.InvokeContext(nil, 1) }); got == "" { //nolint:staticcheck
		t.Errorf("InvokeContext(nil ctx) did not panic")
	}
	//lint:ignore SA1012 a nil context is the mistake under test
	if got := panicText(func() { _ = p.PauseAndWait(nil) }); got == "" { //nolint:staticcheck
		t.Errorf("PauseAndWait(nil) did not panic")
	}
	if p.Stats().Paused {
		t.Errorf("PauseAndWait(nil) paused the pool")
	}
	//lint:ignore SA1012 a nil context is the mistake under test
	if got := panicText(func() { _ = p.Shutdown(nil) }); got == "" { //nolint:staticcheck
		t.Errorf("Shutdown(nil) did not panic")
	}
	if p.Stopped() {
		t.Errorf("Shutdown(nil) stopped the pool")
	}
	for _, c := range []struct {
		r float64
		b int
	}{{0, 1}, {-1, 1}, {math.NaN(), 1}, {1, 0}} {
		if got := panicText(func() { p.SetRateLimit(c.r, c.b) }); got == "" {
			t.Errorf("SetRateLimit(%v, %d) did not panic", c.r, c.b)
		}
	}
	must(t, p.Invoke(1))
	p.Wait()
	idleIdentity(t, "after the panics", p.Stats())
}

// TestAdvFKInvokeContextWithEndedContextNeverAccepts: an ended ctx makes InvokeContext return
// its error at once, with room in the queue, without accepting the call; it counts in
// Canceled, and the Queued and Rejected hooks see it.
func TestAdvFKInvokeContextWithEndedContextNeverAccepts(t *testing.T) {
	var ran, queued, rejected atomic.Int32
	var errMu sync.Mutex
	var rejErr error
	p := crew.NewFunc(2, func(int) { ran.Add(1) }, crew.WithHooks(crew.Hooks{
		Queued:   func(crew.TaskInfo) { queued.Add(1) },
		Rejected: func(err error) { rejected.Add(1); errMu.Lock(); rejErr = err; errMu.Unlock() },
	}))
	defer p.StopAndWait()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("gone")
	cancel(cause)
	err := p.InvokeContext(ctx, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext(ended ctx) = %v, want context.Canceled", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	if err := p.InvokeContext(dctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("InvokeContext(expired ctx) = %v, want DeadlineExceeded", err)
	}
	p.Wait()
	s := p.Stats()
	if ran.Load() != 0 || s.Accepted != 0 || s.Canceled != 2 || s.Rejected != 0 {
		t.Fatalf("ran %d; stats %+v: want nothing accepted and 2 canceled", ran.Load(), s)
	}
	if queued.Load() != 2 || rejected.Load() != 2 {
		t.Fatalf("hooks: Queued %d, Rejected %d, want 2 and 2", queued.Load(), rejected.Load())
	}
	errMu.Lock()
	if !errors.Is(rejErr, context.DeadlineExceeded) {
		t.Fatalf("Rejected hook got %v", rejErr)
	}
	errMu.Unlock()
	// After Stop, an ended ctx: refused either way, never accepted.
	p.Stop()
	if err := p.InvokeContext(ctx, 3); err == nil {
		t.Fatalf("InvokeContext on a stopped pool accepted")
	}
	if p.TryInvoke(4) || p.Invoke(5) != crew.ErrStopped {
		t.Fatalf("a stopped FuncPool accepted a call")
	}
	p.StopAndWait()
	if ran.Load() != 0 {
		t.Fatalf("a refused call ran")
	}
	idleIdentity(t, "ended contexts", p.Stats())
}

// TestAdvFKNilArgumentsAreArguments: a nil pointer, interface, func, map or slice given to
// Invoke, TryInvoke or InvokeContext is an argument like any other: accepted and passed to fn.
func TestAdvFKNilArgumentsAreArguments(t *testing.T) {
	var n atomic.Int32
	check := func(name string, ok bool) {
		if !ok {
			t.Errorf("%s: fn did not get the nil argument", name)
		}
		n.Add(1)
	}
	ctx := context.Background()
	pp := crew.NewFunc(1, func(v *int) { check("*int", v == nil) })
	pa := crew.NewFunc(1, func(v any) { check("any", v == nil) })
	pe := crew.NewFunc(1, func(v error) { check("error", v == nil) })
	pf := crew.NewFunc(1, func(v func()) { check("func", v == nil) })
	pm := crew.NewFunc(1, func(v map[int]int) { check("map", v == nil) })
	ps := crew.NewFunc(1, func(v []int) { check("slice", v == nil) })
	must(t, pp.Invoke(nil))
	must(t, pa.Invoke(nil))
	must(t, pe.Invoke(nil))
	must(t, pf.Invoke(nil))
	must(t, pm.Invoke(nil))
	must(t, ps.Invoke(nil))
	must(t, pp.InvokeContext(ctx, nil))
	must(t, pa.InvokeContext(ctx, nil))
	must(t, pf.InvokeContext(ctx, nil))
	if !pp.TryInvoke(nil) || !pa.TryInvoke(nil) || !pf.TryInvoke(nil) {
		t.Fatalf("TryInvoke(nil) refused")
	}
	for _, stop := range []func(){pp.StopAndWait, pa.StopAndWait, pe.StopAndWait, pf.StopAndWait, pm.StopAndWait, ps.StopAndWait} {
		stop()
	}
	if n.Load() != 12 {
		t.Fatalf("%d calls ran, want 12", n.Load())
	}
	for _, s := range []crew.Stats{pp.Stats(), pa.Stats(), pf.Stats()} {
		if s.Accepted != 3 || s.Completed != 3 {
			t.Fatalf("stats %+v, want 3 accepted and completed", s)
		}
	}
}

// TestAdvFKStopNowHandsBackArgsInOrderAndCounts: StopNow returns the arguments not started in
// Invoke order, counts them in Returned, gives them no hook, and the idle identity holds.
func TestAdvFKStopNowHandsBackArgsInOrderAndCounts(t *testing.T) {
	var started, finished, discarded atomic.Int32
	release := make(chan struct{})
	running := make(chan struct{}, 4)
	var ran sync.Map
	p := crew.NewFunc(2, func(i int) {
		if _, dup := ran.LoadOrStore(i, true); dup {
			t.Errorf("call %d ran twice", i)
		}
		if i < 2 {
			running <- struct{}{}
			<-release
		}
	}, crew.WithHooks(crew.Hooks{
		Started:   func(crew.TaskInfo) { started.Add(1) },
		Finished:  func(crew.TaskInfo) { finished.Add(1) },
		Discarded: func(crew.TaskInfo) { discarded.Add(1) },
	}), crew.WithLatencyHistograms())
	must(t, p.Invoke(0))
	must(t, p.Invoke(1))
	<-running
	<-running
	const n = 50
	for i := 2; i < n; i++ {
		must(t, p.Invoke(i))
	}
	out := p.StopNow()
	if len(out) != n-2 {
		t.Fatalf("StopNow returned %d, want %d", len(out), n-2)
	}
	for j, v := range out {
		if v != j+2 {
			t.Fatalf("StopNow[%d] = %d, want %d (Invoke order)", j, v, j+2)
		}
	}
	if p.Invoke(99) != crew.ErrStopped || p.TryInvoke(99) {
		t.Fatalf("a call accepted after StopNow")
	}
	if again := p.StopNow(); len(again) != 0 {
		t.Fatalf("a second StopNow returned %v", again)
	}
	close(release)
	p.StopAndWait()
	s := p.Stats()
	idleIdentity(t, "after StopNow", s)
	if s.Returned != n-2 || s.Completed != 2 || started.Load() != 2 || finished.Load() != 2 || discarded.Load() != 0 {
		t.Fatalf("stats %+v; hooks started %d finished %d discarded %d", s, started.Load(), finished.Load(), discarded.Load())
	}
	if s.WaitTime.Count != 2 || s.RunTime.Count != 2 {
		t.Fatalf("histograms count %d and %d, want 2: returned calls never started", s.WaitTime.Count, s.RunTime.Count)
	}
}

// TestAdvFKPausedBacklogRunsOnStopAndWaitWaits: calls invoked on a paused FuncPool are
// accepted and wait; Wait waits for them; Pause after Stop does nothing; Stop resumes the pool
// and every call runs exactly once.
func TestAdvFKPausedBacklogRunsOnStopAndWaitWaits(t *testing.T) {
	const n = 40
	runs := make([]atomic.Int32, n)
	p := crew.NewFunc(3, func(i int) { runs[i].Add(1) })
	p.Pause()
	p.Pause()
	for i := range n {
		must(t, p.Invoke(i))
	}
	waited := goRun(p.Wait)
	stillBlocked(t, "Wait on a paused backlog", waited)
	if s := p.Stats(); !s.Paused || s.Waiting != n || s.Running != 0 {
		t.Fatalf("paused pool stats %+v", s)
	}
	p.Stop()
	p.Pause() // does nothing once stopped
	awaitReturn(t, "Wait after Stop resumed", waited)
	p.StopAndWait()
	ranOnce(t, runs)
	s := p.Stats()
	idleIdentity(t, "paused backlog", s)
	if s.Paused {
		t.Fatalf("a stopped pool reports Paused")
	}
}

// TestAdvFKCallerRunsWaitsForResume: under CallerRuns, an Invoke into a full queue of a paused
// FuncPool waits for Resume before it runs the call on the submitter.
func TestAdvFKCallerRunsWaitsForResume(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	var onCaller atomic.Int32
	p := crew.NewFunc(1, func(i int) {
		switch i {
		case 0:
			running <- struct{}{}
			<-release
		case 2:
			onCaller.Add(1)
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	must(t, p.Invoke(0))
	<-running
	must(t, p.Invoke(1)) // fills the queue
	p.Pause()
	invoked := goRun(func() { must(t, p.Invoke(2)) })
	stillBlocked(t, "a CallerRuns Invoke on a paused pool", invoked)
	if onCaller.Load() != 0 {
		t.Fatalf("CallerRuns ran a call while the pool was paused")
	}
	p.Resume()
	awaitReturn(t, "the CallerRuns Invoke after Resume", invoked)
	close(release)
	p.Wait()
	s := p.Stats()
	idleIdentity(t, "caller runs", s)
	if s.Accepted != 3 || onCaller.Load() != 1 {
		t.Fatalf("stats %+v, calls on the caller %d", s, onCaller.Load())
	}
}

// TestAdvFKRateLimitHoldsCallsAndKeyedTasks: with a burst of 3 and a rate that gives no more
// token during the test, exactly 3 calls of a FuncPool start, and exactly 3 keyed tasks of one
// key start (a turn asks the rate before each task); removing the limit runs the rest.
func TestAdvFKRateLimitHoldsCallsAndKeyedTasks(t *testing.T) {
	const n = 12
	var calls atomic.Int32
	fp := crew.NewFunc(4, func(int) { calls.Add(1) }, crew.WithRateLimit(1e-6, 3))
	defer fp.StopAndWait()
	for i := range n {
		must(t, fp.Invoke(i))
	}
	awaitStats(t, fp, "3 calls to run", func(s crew.Stats) bool { return s.Completed == 3 })
	time.Sleep(30 * time.Millisecond)
	if got := calls.Load(); got != 3 {
		t.Fatalf("%d calls ran under a burst of 3", got)
	}
	fp.SetRateLimit(math.Inf(1), 1)
	fp.Wait()
	if got := calls.Load(); got != n {
		t.Fatalf("%d calls ran after the limit was lifted, want %d", got, n)
	}

	p := crew.New(4, crew.WithRateLimit(1e-6, 3))
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	var keyed atomic.Int32
	for range n {
		must(t, k.Submit("a", func() { keyed.Add(1) }))
	}
	awaitStats(t, k, "3 keyed tasks to run", func(s crew.Stats) bool { return s.Completed == 3 })
	time.Sleep(30 * time.Millisecond)
	if got := keyed.Load(); got != 3 {
		t.Fatalf("%d keyed tasks ran under a burst of 3", got)
	}
	if s := k.Stats(); s.Waiting != n-3 || s.Running != 0 {
		t.Fatalf("keyed stats %+v", s)
	}
	p.SetRateLimit(math.Inf(1), 1)
	awaitReturn(t, "Keyed.Wait after the limit was lifted", goRun(k.Wait))
	if got := keyed.Load(); got != n {
		t.Fatalf("%d keyed tasks ran, want %d", got, n)
	}
	p.Wait()
	idleIdentity(t, "keyed", k.Stats())
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvFKKeyedPauseHoldsTheTurnsNextTask: once Pause has returned, no keyed task starts,
// also the next task of a key whose turn is running; Resume runs the rest in order.
func TestAdvFKKeyedPauseHoldsTheTurnsNextTask(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	var order []int // written by the key's tasks only, one at a time
	must(t, k.Submit("a", func() { running <- struct{}{}; <-release; order = append(order, 0) }))
	const n = 6
	for i := 1; i < n; i++ {
		must(t, k.Submit("a", func() { order = append(order, i) }))
	}
	awaitReturn(t, "the key's first task to start", recvOne(running))
	p.Pause()
	close(release)
	awaitStats(t, k, "the first task to end", func(s crew.Stats) bool { return s.Completed == 1 })
	time.Sleep(20 * time.Millisecond)
	if s := k.Stats(); s.Completed != 1 || s.Running != 0 || s.Waiting != n-1 || !s.Paused {
		t.Fatalf("a keyed task started after Pause returned: %+v", s)
	}
	p.Resume()
	awaitReturn(t, "Keyed.Wait after Resume", goRun(k.Wait))
	for i, v := range order {
		if v != i {
			t.Fatalf("order %v", order)
		}
	}
	if len(order) != n {
		t.Fatalf("order %v", order)
	}
	p.Wait()
	idleIdentity(t, "keyed", k.Stats())
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvFKKeyedShrinkHoldsTheTurnsNextTask: after a Resize down returns, no keyed task starts
// while the new limit or more run, also the next task of a turn that is running.
func TestAdvFKKeyedShrinkHoldsTheTurnsNextTask(t *testing.T) {
	for _, sub := range []bool{false, true} {
		t.Run(fmt.Sprint("sub=", sub), func(t *testing.T) {
			root := crew.New(2)
			defer root.StopAndWait()
			p := root
			if sub {
				p = root.Sub(2)
			}
			k := crew.NewKeyed[int](p)
			release := make(chan struct{})
			running := make(chan struct{}, 2)
			var h highWater
			const n = 20
			for key := range 2 {
				must(t, k.Submit(key, func() { running <- struct{}{}; <-release }))
				for range n {
					must(t, k.Submit(key, func() {
						h.enter()
						time.Sleep(100 * time.Microsecond)
						h.exit()
					}))
				}
			}
			<-running
			<-running
			root.Resize(1)
			close(release)
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			if got := h.high.Load(); got > 1 {
				t.Fatalf("%d keyed tasks ran at once after Resize(1)", got)
			}
			root.Wait()
			idleIdentity(t, "keyed", k.Stats())
			idleIdentity(t, "root", root.Stats())
		})
	}
}

// TestAdvFKKeyedRefusalsAndNilArguments: NewKeyed(nil) panics; a nil task is ErrNilTask (or
// false) and counts nowhere, a nil ctx panics; an ended ctx returns its error without
// accepting, counted in Canceled; a full bounded Keyed queue blocks Submit, refuses TrySubmit
// (Rejected) and ends a SubmitContext at its deadline (Canceled); a stopped pool refuses with
// ErrStopped, counted in neither.
func TestAdvFKKeyedRefusalsAndNilArguments(t *testing.T) {
	if got := panicText(func() { crew.NewKeyed[int](nil) }); !strings.Contains(got, "NewKeyed") {
		t.Fatalf("NewKeyed(nil): panic %q", got)
	}
	var queued, rejected atomic.Int32
	p := crew.New(2, crew.WithHooks(crew.Hooks{
		Queued:   func(crew.TaskInfo) { queued.Add(1) },
		Rejected: func(error) { rejected.Add(1) },
	}))
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p, crew.WithQueueSize(1))
	kn := crew.NewKeyed[string](p, crew.WithQueueSize(1), crew.WithNonBlocking())
	ctx := context.Background()
	if k.Submit("a", nil) != crew.ErrNilTask || k.TrySubmit("a", nil) || k.SubmitContext(ctx, "a", nil) != crew.ErrNilTask {
		t.Fatalf("a nil task was not refused with ErrNilTask")
	}
	//lint:ignore SA1012 a nil context is the mistake under test
	if got := panicText(func() { _ = k.SubmitContext(nil, "a", func() {}) }); got == "" { //nolint:staticcheck
		t.Fatalf("SubmitContext(nil ctx) did not panic")
	}
	if s := k.Stats(); s.Accepted != 0 || s.Rejected != 0 || s.Canceled != 0 || queued.Load() != 0 {
		t.Fatalf("nil tasks counted: %+v, Queued %d", s, queued.Load())
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	var ran atomic.Int32
	if err := k.SubmitContext(ended, "a", func() { ran.Add(1) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext(ended ctx) = %v", err)
	}
	if s := k.Stats(); s.Accepted != 0 || s.Canceled != 1 || queued.Load() != 1 || rejected.Load() != 1 {
		t.Fatalf("after an ended ctx: %+v, Queued %d Rejected %d", s, queued.Load(), rejected.Load())
	}
	release := make(chan struct{})
	running := make(chan struct{}, 2)
	block := func() { running <- struct{}{}; <-release; ran.Add(1) }
	must(t, k.Submit("a", block))
	<-running
	must(t, k.Submit("a", func() { ran.Add(1) })) // the queue's one place
	if k.TrySubmit("b", func() { ran.Add(1) }) {
		t.Fatalf("TrySubmit into a full Keyed queue accepted")
	}
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer dcancel()
	if err := k.SubmitContext(dctx, "c", func() { ran.Add(1) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SubmitContext on a full queue = %v", err)
	}
	blocked := goRun(func() { must(t, k.Submit("d", func() { ran.Add(1) })) })
	stillBlocked(t, "Submit into a full Keyed queue", blocked)
	must(t, kn.Submit("x", block))
	<-running
	must(t, kn.Submit("x", func() { ran.Add(1) }))
	if err := kn.Submit("y", func() { ran.Add(1) }); err != crew.ErrQueueFull {
		t.Fatalf("Submit under WithNonBlocking = %v, want ErrQueueFull", err)
	}
	if s := k.Stats(); s.Rejected != 1 || s.Canceled != 2 {
		t.Fatalf("k: %+v, want Rejected 1 and Canceled 2", s)
	}
	if s := kn.Stats(); s.Rejected != 1 {
		t.Fatalf("kn: %+v, want Rejected 1", s)
	}
	close(release)
	awaitReturn(t, "the blocked Submit", blocked)
	k.Wait()
	kn.Wait()
	if ran.Load() != 5 {
		t.Fatalf("%d keyed tasks ran, want 5", ran.Load())
	}
	p.Stop()
	if k.Submit("a", func() {}) != crew.ErrStopped || k.TrySubmit("a", func() {}) || k.SubmitContext(ended, "a", func() {}) == nil {
		t.Fatalf("a stopped pool's Keyed accepted a task")
	}
	s := k.Stats()
	if s.Rejected != 1 || s.Canceled != 2 && s.Canceled != 3 {
		t.Fatalf("ErrStopped counted: %+v", s)
	}
	p.StopAndWait()
	idleIdentity(t, "k", k.Stats())
	idleIdentity(t, "kn", kn.Stats())
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvFKKeyedStopNowFromInsideAKeyedTask: a keyed task calls StopNow on its pool (safe from
// a task). Every accepted keyed task either ran exactly once or was handed back, never both;
// per key, what ran is a prefix in submit order; Returned counts the handed back; every Wait
// returns.
func TestAdvFKKeyedStopNowFromInsideAKeyedTask(t *testing.T) {
	for _, sub := range []bool{false, true} {
		t.Run(fmt.Sprint("sub=", sub), func(t *testing.T) {
			root := crew.New(3)
			p := root
			if sub {
				p = root.Sub(3, crew.WithPriority(1))
			}
			k := crew.NewKeyed[int](p)
			const keys, each = 8, 30
			var identifying atomic.Bool
			var mu sync.Mutex
			ran := map[[2]int]int{}
			back := map[[2]int]int{}
			var handed []func()
			c := newKeyChecker()
			accepted := map[[2]int]bool{}
			// Keys 1 and 2 hold the other two slots until StopNow has returned, and key 0's
			// turn calls it once every task is submitted: the later keys' turns are then
			// queued, and StopNow hands them back.
			submitted, gate := make(chan struct{}), make(chan struct{})
			for key := range keys {
				for seq := range each {
					err := k.Submit(key, func() {
						if identifying.Load() {
							back[[2]int{key, seq}]++
							return
						}
						c.enter(key, seq)
						mu.Lock()
						ran[[2]int{key, seq}]++
						mu.Unlock()
						switch {
						case key == 0 && seq == 5:
							<-submitted
							out := p.StopNow()
							mu.Lock()
							handed = out
							mu.Unlock()
							close(gate)
						case (key == 1 || key == 2) && seq == 0:
							<-gate
						}
						c.exit(key)
					})
					if err == nil {
						accepted[[2]int{key, seq}] = true
					} else if err != crew.ErrStopped {
						t.Fatal(err)
					}
				}
			}
			close(submitted)
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "root StopAndWait", goRun(root.StopAndWait))
			c.check(t, "StopNow from a keyed task")
			identifying.Store(true)
			for _, f := range handed {
				f()
			}
			for id := range accepted {
				if ran[id]+back[id] != 1 {
					t.Fatalf("keyed task %v: ran %d, handed back %d", id, ran[id], back[id])
				}
			}
			if !sub && len(back) < (keys-3)*each {
				t.Fatalf("StopNow handed back %d keyed tasks, want the %d of the queued keys at least", len(back), (keys-3)*each)
			}
			if len(ran)+len(back) != len(accepted) {
				t.Fatalf("ran %d + handed back %d, accepted %d", len(ran), len(back), len(accepted))
			}
			for key := range keys {
				gap := false
				for seq := range each {
					id := [2]int{key, seq}
					if !accepted[id] {
						continue
					}
					if ran[id] == 0 {
						gap = true
					} else if gap {
						t.Fatalf("key %d: task %d ran after an earlier one was handed back", key, seq)
					}
				}
			}
			s := k.Stats()
			idleIdentity(t, "keyed", s)
			if s.Returned != uint64(len(back)) || s.Accepted != uint64(len(accepted)) {
				t.Fatalf("keyed stats %+v, handed back %d, accepted %d", s, len(back), len(accepted))
			}
			idleIdentity(t, "root", root.Stats())
			idleIdentity(t, "p", p.Stats())
		})
	}
}

// TestAdvFKKeyedUnhashableKeyLeavesTheKeyedUsable: a Keyed[any] given a key whose dynamic type
// is not comparable panics, as a map does; the Keyed must stay usable (safe for concurrent
// use: no lock left held), and the task must not be counted.
func TestAdvFKKeyedUnhashableKeyLeavesTheKeyedUsable(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	k := crew.NewKeyed[any](p)
	if got := panicText(func() { _ = k.Submit([]int{1}, func() {}) }); got == "" {
		t.Fatalf("an unhashable key did not panic")
	}
	var ran atomic.Int32
	err := returnsWithin(t, "a Submit after the panic", func() error { return k.Submit("ok", func() { ran.Add(1) }) })
	must(t, err)
	awaitReturn(t, "Keyed.Wait after the panic", goRun(k.Wait))
	if ran.Load() != 1 {
		t.Fatalf("the later task did not run")
	}
	idleIdentity(t, "keyed", k.Stats())
}

// TestAdvFKKeyedGoexitAndPanicNilKeepEveryKeyGoing: on a Keyed two sub-pools down, with
// priorities, keyed tasks that call runtime.Goexit, panic(nil) or panic, and hooks whose
// Started panics with nil and whose Finished calls runtime.Goexit or panics with nil: every
// keyed task runs exactly once, in order, one at a time per key; Keyed.Stats counts each
// task's own outcome; the panic handler gets the panics of tasks and hooks; every Wait
// returns, and each pool of the tree and the Keyed end idle with the identity holding.
func TestAdvFKKeyedGoexitAndPanicNilKeepEveryKeyGoing(t *testing.T) {
	var handled, nilPanics atomic.Int32
	handler := func(v any, _ []byte) {
		handled.Add(1)
		if _, ok := v.(*runtime.PanicNilError); ok || v == nil {
			nilPanics.Add(1)
		}
	}
	var starts, finishes atomic.Int32
	hooks := crew.Hooks{
		Started: func(crew.TaskInfo) {
			if starts.Add(1)%7 == 0 {
				panic(nil)
			}
		},
		Finished: func(ti crew.TaskInfo) {
			switch finishes.Add(1) % 11 {
			case 3:
				runtime.Goexit()
			case 5:
				if !ti.Panicked {
					panic(nil)
				}
			}
		},
	}
	root := crew.New(3, crew.WithPanicHandler(handler))
	mid := root.Sub(2, crew.WithPriority(1), crew.WithPanicHandler(handler))
	leaf := mid.Sub(2, crew.WithPriority(-1), crew.WithHooks(hooks), crew.WithPanicHandler(handler), crew.WithLatencyHistograms())
	other := root.Sub(1, crew.WithPriority(2))
	k := crew.NewKeyed[int](leaf)
	km := crew.NewKeyed[int](mid)
	c, cm := newKeyChecker(), newKeyChecker()
	keys, each := 6, 40
	if testing.Short() {
		each = 15
	}
	task := func(c *keyChecker, key, seq int) func() {
		return func() {
			c.enter(key, seq)
			defer c.exit(key)
			switch seq % 5 {
			case 1:
				runtime.Goexit()
			case 2:
				panic(nil)
			case 3:
				panic(fmt.Sprint("boom ", key, seq))
			}
		}
	}
	var other1 atomic.Int32
	together(keys, each, func(key, seq int) {
		must(t, k.Submit(key, task(c, key, seq)))
		must(t, km.Submit(key, task(cm, key, seq)))
		if seq%10 == 0 {
			must(t, other.Submit(func() { other1.Add(1) }))
		}
	})
	awaitReturn(t, "leaf Keyed.Wait", goRun(k.Wait))
	awaitReturn(t, "mid Keyed.Wait", goRun(km.Wait))
	awaitReturn(t, "root StopAndWait", goRun(root.StopAndWait))
	c.check(t, "leaf keyed")
	cm.check(t, "mid keyed")
	total := keys * each
	if c.ranCount() != total || cm.ranCount() != total {
		t.Fatalf("ran %d and %d keyed tasks, want %d each", c.ranCount(), cm.ranCount(), total)
	}
	perKind := uint64(total / 5 * 2) // seq%5 of 2 or 3 panic
	for _, x := range []struct {
		name string
		k    *crew.Keyed[int]
	}{{"leaf", k}, {"mid", km}} {
		s := x.k.Stats()
		idleIdentity(t, x.name, s)
		if s.Accepted != uint64(total) || s.Panicked != perKind || s.Completed != uint64(total)-perKind {
			t.Fatalf("%s keyed stats %+v, want %d panicked of %d", x.name, s, perKind, total)
		}
	}
	for _, x := range []struct {
		name string
		p    *crew.Pool
	}{{"root", root}, {"mid", mid}, {"leaf", leaf}, {"other", other}} {
		idleIdentity(t, x.name, x.p.Stats())
	}
	if s := leaf.Stats(); s.WaitTime.Count != uint64(total) || s.RunTime.Count != uint64(total) {
		t.Fatalf("leaf histograms count %d and %d, want one per keyed task, %d", s.WaitTime.Count, s.RunTime.Count, total)
	}
	if got := starts.Load(); got != int32(total) {
		t.Fatalf("Started called %d times, want %d", got, total)
	}
	if handled.Load() == 0 || nilPanics.Load() == 0 {
		t.Fatalf("panic handler: %d calls, %d nil panics", handled.Load(), nilPanics.Load())
	}
	if other1.Load() != int32(keys*((each+9)/10)) {
		t.Fatalf("other sub-pool ran %d", other1.Load())
	}
}

// TestAdvFKShutdownOfAPausedFuncPoolWithAnEndingContext: Shutdown resumes a paused FuncPool,
// returns ctx.Err() when ctx ends first, and the plain calls still run, each once; a later
// StopAndWait waits for them.
func TestAdvFKShutdownOfAPausedFuncPoolWithAnEndingContext(t *testing.T) {
	const n = 30
	runs := make([]atomic.Int32, n)
	release := make(chan struct{})
	p := crew.NewFunc(2, func(i int) {
		if i == 0 {
			<-release
		}
		runs[i].Add(1)
	}, crew.WithQueueSize(n))
	p.Pause()
	for i := range n {
		must(t, p.Invoke(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if s := p.Stats(); s.Paused {
		t.Fatalf("Shutdown left the pool paused: %+v", s)
	}
	awaitStats(t, p, "every call but the first to run", func(s crew.Stats) bool { return s.Completed == n-1 })
	if p.Invoke(0) != crew.ErrStopped {
		t.Fatalf("Invoke after Shutdown accepted")
	}
	close(release)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	ranOnce(t, runs)
	idleIdentity(t, "shutdown", p.Stats())
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of an exited pool = %v", err)
	}
}

// TestAdvFKAdaptiveFuncPoolResizeSetsTheCeiling: on a FuncPool with WithAdaptiveLimit, Resize
// sets the ceiling: a limit above it comes down at once, a min above it counts as it, and no
// call starts while MaxWorkers or more run.
func TestAdvFKAdaptiveFuncPoolResizeSetsTheCeiling(t *testing.T) {
	var h highWater
	var limit atomic.Int32
	var over atomic.Int32
	p := crew.NewFunc(8, func(int) {
		h.enter()
		if h.running.Load() > limit.Load() {
			over.Add(1)
		}
		time.Sleep(50 * time.Microsecond)
		h.exit()
	}, crew.WithAdaptiveLimit(4))
	defer p.StopAndWait()
	if got := p.Stats().MaxWorkers; got != 8 {
		t.Fatalf("an adaptive pool starts at its ceiling: MaxWorkers %d", got)
	}
	limit.Store(2)
	p.Resize(2)
	if got := p.Stats().MaxWorkers; got != 2 {
		t.Fatalf("after Resize(2) under a min of 4: MaxWorkers %d, want 2", got)
	}
	n := 400
	if testing.Short() {
		n = 100
	}
	for i := range n {
		must(t, p.Invoke(i))
	}
	p.Wait()
	if h.high.Load() > 2 || over.Load() != 0 {
		t.Fatalf("%d calls ran at once under a ceiling of 2", h.high.Load())
	}
	limit.Store(5)
	p.Resize(5)
	for i := range n {
		must(t, p.Invoke(i))
		if m := p.Stats().MaxWorkers; m < 4 || m > 5 {
			t.Fatalf("MaxWorkers %d outside [min 4, ceiling 5]", m)
		}
	}
	p.Wait()
	if h.high.Load() > 5 {
		t.Fatalf("%d calls ran at once under a ceiling of 5", h.high.Load())
	}
	idleIdentity(t, "adaptive", p.Stats())
}

// TestAdvFKShrinkBelowMinWorkersLetsIdleWorkersGo: Resize below WithMinWorkers makes the idle
// workers above the new limit exit; StopAndWait leaves none.
func TestAdvFKShrinkBelowMinWorkersLetsIdleWorkersGo(t *testing.T) {
	p := crew.NewFunc(4, func(int) {}, crew.WithMinWorkers(3), crew.WithIdleTimeout(0))
	if p.MinWorkers() != 3 || p.IdleTimeout() != 0 {
		t.Fatalf("MinWorkers %d IdleTimeout %v", p.MinWorkers(), p.IdleTimeout())
	}
	awaitStats(t, p, "3 idle workers", func(s crew.Stats) bool { return s.Idle == 3 })
	p.Resize(1)
	awaitStats(t, p, "idle workers above the limit to exit", func(s crew.Stats) bool { return s.Idle <= 1 })
	for i := range 20 {
		must(t, p.Invoke(i))
	}
	p.Wait()
	if s := p.Stats(); s.Idle > 1 || s.Running != 0 {
		t.Fatalf("after calls on a shrunk pool: %+v", s)
	}
	p.StopAndWait()
	if s := p.Stats(); s.Idle != 0 {
		t.Fatalf("after StopAndWait: %+v", s)
	}
	idleIdentity(t, "min workers", p.Stats())
}

// TestAdvFKFuncPoolStormKeepsEveryCallExactlyOnce: Invoke, TryInvoke and InvokeContext from
// many goroutines, under each overflow policy, while Pause/Resume, PauseAndWait, Resize (CPUs
// included), SetRateLimit and Stats run beside them, with calls that panic(nil) or call
// runtime.Goexit, ended by StopAndWait or StopNow: every accepted call runs exactly once or
// is accounted as dropped (to the discard handler) or handed back (by StopNow), never both;
// refused calls never run; snapshots never go back; the idle identity holds at the end.
func TestAdvFKFuncPoolStormKeepsEveryCallExactlyOnce(t *testing.T) {
	for _, pol := range []crew.Overflow{crew.Block, crew.Reject, crew.CallerRuns, crew.DiscardOldest} {
		for _, stopNow := range []bool{false, true} {
			t.Run(fmt.Sprint(pol, "/stopNow=", stopNow), func(t *testing.T) {
				fkFuncStorm(t, pol, stopNow)
			})
		}
	}
}

func fkFuncStorm(t *testing.T, pol crew.Overflow, stopNow bool) {
	submitters, each := 4, 150
	if testing.Short() {
		each = 50
	}
	n := submitters * each
	runs := make([]atomic.Int32, n)
	dropped := make([]atomic.Int32, n)
	var accepted sync.Map
	var started, finished atomic.Int32
	var handled atomic.Int32
	p := crew.NewFunc(3, func(i int) {
		runs[i].Add(1)
		switch i % 23 {
		case 5:
			panic(nil)
		case 7:
			if pol != crew.CallerRuns { // on its caller, it would end the submitter
				runtime.Goexit()
			}
		}
		if i%3 == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}, crew.WithQueueSize(8), crew.WithOverflow(pol),
		crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithDiscardHandler(func(v any) { dropped[v.(int)].Add(1) }),
		crew.WithHooks(crew.Hooks{
			Started:  func(crew.TaskInfo) { started.Add(1) },
			Finished: func(crew.TaskInfo) { finished.Add(1) },
		}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() {
		p.Pause()
		time.Sleep(200 * time.Microsecond)
		p.Resume()
		time.Sleep(500 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Microsecond)
		_ = p.PauseAndWait(ctx)
		cancel()
		p.Resume()
		time.Sleep(time.Millisecond)
	})
	sizes := []int{1, 2, 4, crew.CPUs, 3}
	var si atomic.Int32
	repeatUntil(&wg, stop, func() {
		p.Resize(sizes[int(si.Add(1))%len(sizes)])
		time.Sleep(300 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		p.SetRateLimit(5000, 4)
		time.Sleep(300 * time.Microsecond)
		p.SetRateLimit(math.Inf(1), 1)
		time.Sleep(300 * time.Microsecond)
	})
	errc := make(chan error, 1)
	repeatUntil(&wg, stop, func() {
		prev := p.Stats()
		for range 50 {
			s := p.Stats()
			if countersWentBack(s, prev) || s.Completed+s.Panicked > s.Accepted {
				select {
				case errc <- fmt.Errorf("snapshot %+v after %+v", s, prev):
				default:
				}
			}
			prev = s
		}
		time.Sleep(100 * time.Microsecond)
	})
	var back []int
	var backMu sync.Mutex
	together(submitters, each, func(c, j int) {
		i := c*each + j
		if stopNow && c == 0 && j == each/2 {
			// StopNow in the middle of the submits, on a pool paused with a backlog.
			p.Pause()
			out := p.StopNow()
			backMu.Lock()
			back = out
			backMu.Unlock()
		}
		var ok bool
		switch j % 3 {
		case 0:
			ok = p.Invoke(i) == nil
		case 1:
			ok = p.TryInvoke(i)
		default:
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			ok = p.InvokeContext(ctx, i) == nil
			cancel()
		}
		if ok {
			accepted.Store(i, true)
		}
	})
	close(stop)
	wg.Wait()
	p.Resume()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	backMu.Lock()
	defer backMu.Unlock()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("StopNow handed back %d calls", len(back))
	handedBack := make([]int, n)
	for _, i := range back {
		handedBack[i]++
	}
	var nAccepted, nRan, nDropped int
	for i := range n {
		_, acc := accepted.Load(i)
		r, d, b := int(runs[i].Load()), int(dropped[i].Load()), handedBack[i]
		if !acc {
			if r+d+b != 0 {
				t.Fatalf("call %d was refused but ran %d, dropped %d, handed back %d", i, r, d, b)
			}
			continue
		}
		nAccepted++
		nRan += r
		nDropped += d
		if r+d+b != 1 {
			t.Fatalf("accepted call %d: ran %d, dropped %d, handed back %d", i, r, d, b)
		}
	}
	s := p.Stats()
	idleIdentity(t, "storm", s)
	if s.Accepted != uint64(nAccepted) || s.Discarded != uint64(nDropped) || s.Returned != uint64(len(back)) ||
		s.Completed+s.Panicked != uint64(nRan) {
		t.Fatalf("stats %+v: accepted %d, ran %d, dropped %d, handed back %d", s, nAccepted, nRan, nDropped, len(back))
	}
	if int(started.Load()) != nRan || int(finished.Load()) != nRan {
		t.Fatalf("hooks: Started %d, Finished %d, calls that ran %d", started.Load(), finished.Load(), nRan)
	}
	if pol == crew.CallerRuns && s.CallerRan == 0 && s.Rejected == 0 {
		t.Logf("no call ran on its caller: %+v", s)
	}
}

// TestAdvFKKeyedStormOnATreeKeepsOrderAndExactlyOnce: Keyeds on a root, on a sub-pool with a
// priority and on a sub-pool of it (one bounded), fed from many goroutines while pools pause
// and resume, the root resizes, the middle pool's rate limit comes and goes, and snapshots are
// taken, ended by Stop or by the root's StopNow: per key, tasks run one at a time, in submit
// order, each accepted one exactly once or handed back, never both, what ran of a key being a
// prefix of it; every Wait returns; each Keyed and pool ends idle with the identity holding.
func TestAdvFKKeyedStormOnATreeKeepsOrderAndExactlyOnce(t *testing.T) {
	for _, stopNow := range []bool{false, true} {
		t.Run(fmt.Sprint("stopNow=", stopNow), func(t *testing.T) { fkKeyedStorm(t, stopNow) })
	}
}

func fkKeyedStorm(t *testing.T, stopNow bool) {
	root := crew.New(3)
	mid := root.Sub(2, crew.WithPriority(1))
	leaf := mid.Sub(3, crew.WithPriority(-1))
	side := root.Sub(1)
	type keyed struct {
		name string
		k    *crew.Keyed[int]
		c    *keyChecker
	}
	ks := []keyed{
		{"root", crew.NewKeyed[int](root), newKeyChecker()},
		{"mid", crew.NewKeyed[int](mid, crew.WithQueueSize(4)), newKeyChecker()},
		{"leaf", crew.NewKeyed[int](leaf), newKeyChecker()},
	}
	keys, each := 5, 60
	if testing.Short() {
		each = 20
	}
	var identifying atomic.Bool
	var mu sync.Mutex
	// plain is written by the tasks of one key without a lock: the return of each
	// synchronizes before the start of the next, and before the return of Keyed.Wait.
	plain := make([][]int, len(ks))
	for i := range plain {
		plain[i] = make([]int, keys)
	}
	ran := map[[3]int]int{}
	back := map[[3]int]int{}
	accepted := map[[3]int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 300*time.Microsecond, root, mid, leaf)
	var rs atomic.Int32
	repeatUntil(&wg, stop, func() {
		root.Resize(1 + int(rs.Add(1))%3)
		time.Sleep(400 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		mid.SetRateLimit(4000, 3)
		time.Sleep(300 * time.Microsecond)
		mid.SetRateLimit(math.Inf(1), 1)
		time.Sleep(300 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		_ = side.Submit(func() { time.Sleep(50 * time.Microsecond) })
		for _, x := range ks {
			s := x.k.Stats()
			if s.Completed+s.Panicked+s.Returned+s.Discarded > s.Accepted || s.Running < 0 || s.Waiting < 0 {
				t.Errorf("%s keyed snapshot %+v", x.name, s)
			}
		}
		time.Sleep(200 * time.Microsecond)
	})
	var handed []func()
	together(len(ks)*keys, each, func(c, seq int) {
		ki, key := c/keys, c%keys
		if stopNow && c == 0 && seq == each/2 {
			out := root.StopNow() // in the middle of the submits
			mu.Lock()
			handed = out
			mu.Unlock()
		}
		x := ks[ki]
		id := [3]int{ki, key, seq}
		task := func() {
			if identifying.Load() {
				back[id]++
				return
			}
			x.c.enter(key, seq)
			mu.Lock()
			ran[id]++
			mu.Unlock()
			plain[ki][key]++
			if seq%9 == 4 {
				time.Sleep(30 * time.Microsecond)
			}
			x.c.exit(key)
		}
		var err error
		switch seq % 3 {
		case 0:
			err = x.k.Submit(key, task)
		case 1:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			err = x.k.SubmitContext(ctx, key, task)
			cancel()
		default:
			if !x.k.TrySubmit(key, task) {
				err = crew.ErrQueueFull
			}
		}
		if err == nil {
			mu.Lock()
			accepted[id] = true
			mu.Unlock()
		}
	})
	close(stop)
	wg.Wait()
	root.Stop()
	for _, x := range ks {
		awaitReturn(t, x.name+" Keyed.Wait", goRun(x.k.Wait))
	}
	awaitReturn(t, "root StopAndWait", goRun(root.StopAndWait))
	identifying.Store(true)
	for _, f := range handed {
		f()
	}
	t.Logf("StopNow handed back %d keyed tasks", len(handed))
	for ki, x := range ks {
		x.c.check(t, x.name)
		var nAcc, nBack int
		for key := range keys {
			nRan := 0
			for seq := range each {
				nRan += ran[[3]int{ki, key, seq}]
			}
			if plain[ki][key] != nRan {
				t.Fatalf("%s key %d: the tasks counted %d runs, %d ran", x.name, key, plain[ki][key], nRan)
			}
			gap := false
			for seq := range each {
				id := [3]int{ki, key, seq}
				if !accepted[id] {
					if ran[id]+back[id] != 0 {
						t.Fatalf("%s task %v refused but ran %d, handed back %d", x.name, id, ran[id], back[id])
					}
					continue
				}
				nAcc++
				nBack += back[id]
				if ran[id]+back[id] != 1 {
					t.Fatalf("%s task %v: ran %d, handed back %d", x.name, id, ran[id], back[id])
				}
				if ran[id] == 0 {
					gap = true
				} else if gap {
					t.Fatalf("%s key %d: task %d ran after an earlier one was handed back", x.name, key, seq)
				}
			}
		}
		s := x.k.Stats()
		idleIdentity(t, x.name+" keyed", s)
		if s.Accepted != uint64(nAcc) || s.Returned != uint64(nBack) {
			t.Fatalf("%s keyed stats %+v: accepted %d, handed back %d", x.name, s, nAcc, nBack)
		}
	}
	for _, x := range []struct {
		name string
		p    *crew.Pool
	}{{"root", root}, {"mid", mid}, {"leaf", leaf}, {"side", side}} {
		s := x.p.Stats()
		idleIdentity(t, x.name, s)
		if s.Paused || s.Idle != 0 {
			t.Fatalf("%s after StopAndWait: %+v", x.name, s)
		}
	}
}

// TestAdvFKKeyedTurnYieldsToAHigherLevel: a key's turn goes on to its next task only if no task
// of a higher level waits: on a root, a leveled sub-pool's task waiting overtakes the key's
// next task; on a sub-pool of level -1, a plain task of the root does.
func TestAdvFKKeyedTurnYieldsToAHigherLevel(t *testing.T) {
	for _, onSub := range []bool{false, true} {
		t.Run(fmt.Sprint("keyedOnLowSub=", onSub), func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			hi := root.Sub(1, crew.WithPriority(1))
			kp := root
			if onSub {
				kp = root.Sub(1, crew.WithPriority(-1))
			}
			k := crew.NewKeyed[string](kp)
			var mu sync.Mutex
			var order []string
			note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			release := make(chan struct{})
			running := make(chan struct{}, 1)
			must(t, k.Submit("a", func() { running <- struct{}{}; <-release; note("a0") }))
			for i := 1; i < 4; i++ {
				must(t, k.Submit("a", func() { note(fmt.Sprint("a", i)) }))
			}
			awaitReturn(t, "a0 to start", recvOne(running))
			if onSub {
				must(t, root.Submit(func() { note("x") }))
			} else {
				must(t, hi.Submit(func() { note("x") }))
			}
			awaitStats(t, root, "the other task to wait", func(s crew.Stats) bool { return s.Waiting >= 1 })
			close(release)
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			root.Wait()
			mu.Lock()
			defer mu.Unlock()
			want := []string{"a0", "x", "a1", "a2", "a3"}
			if fmt.Sprint(order) != fmt.Sprint(want) {
				t.Fatalf("order %v, want %v", order, want)
			}
		})
	}
}

// TestAdvFKInvokeAllocatesNothingWithEveryOption: Invoke allocates nothing per call in steady
// state, also on a FuncPool built with a bounded queue, hooks, histograms, a rate limit that
// does not hold, CPUs, a watched context, options New and NewFunc ignore, or an overflow
// policy that never comes into play.
func TestAdvFKInvokeAllocatesNothingWithEveryOption(t *testing.T) {
	fkInvokeAllocs(t, false)
}

// TestAdvFKAdaptiveFuncPoolInvokeAllocatesNothing: Invoke allocates nothing in steady state, and
// WithAdaptiveLimit says a task costs two clock readings and a few atomic operations.
func TestAdvFKAdaptiveFuncPoolInvokeAllocatesNothing(t *testing.T) {
	fkInvokeAllocs(t, true)
}

func fkInvokeAllocs(t *testing.T, adaptive bool) {
	if racetest.Enabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		max  int
		opts []crew.Option
	}{
		{"plain", 2, nil},
		{"bounded", 2, []crew.Option{crew.WithQueueSize(1 << 14)}},
		{"hooks", 2, []crew.Option{crew.WithHooks(crew.Hooks{Queued: func(crew.TaskInfo) {}, Started: func(crew.TaskInfo) {}, Finished: func(crew.TaskInfo) {}})}},
		{"histograms", 2, []crew.Option{crew.WithLatencyHistograms()}},
		{"rate", 2, []crew.Option{crew.WithRateLimit(1e9, 1<<20)}},
		{"cpus", crew.CPUs, nil},
		{"context", 2, []crew.Option{crew.WithContext(ctx)}},
		{"priority+timeout", 2, []crew.Option{crew.WithPriority(3), crew.WithTaskTimeout(time.Second)}},
		{"callerRuns", 2, []crew.Option{crew.WithQueueSize(1 << 14), crew.WithOverflow(crew.CallerRuns)}},
		{"discardOldest", 2, []crew.Option{crew.WithQueueSize(1 << 14), crew.WithOverflow(crew.DiscardOldest)}},
	} {
		if adaptive {
			c.opts = append(c.opts, crew.WithAdaptiveLimit(1))
		}
		t.Run(c.name, func(t *testing.T) {
			var sink atomic.Int64
			p := crew.NewFunc(c.max, func(i int) { sink.Add(int64(i)) }, c.opts...)
			defer p.StopAndWait()
			per := allocsPerItem(t, func(n int) {
				for i := range n {
					if err := p.Invoke(i); err != nil {
						t.Fatal(err)
					}
				}
				p.Wait()
			})
			if per > 0.01 {
				t.Fatalf("Invoke allocates %.3f times per call", per)
			}
		})
	}
}

// TestAdvFKStopNowHandsBackKeyedTasksInStartOrder: StopNow returns the plain tasks and the
// keyed tasks that had not started in the order they would have started: a key's waiting
// tasks together, where its turn waits in the queue. A sub-pool's StopNow leaves its parent,
// and a Keyed on the parent, working.
func TestAdvFKStopNowHandsBackKeyedTasksInStartOrder(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(1)
	kr := crew.NewKeyed[string](root)
	ks := crew.NewKeyed[string](sub)
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	must(t, root.Submit(func() { running <- struct{}{}; <-release }))
	<-running
	var mu sync.Mutex
	var got []string
	mark := func(s string) func() { return func() { mu.Lock(); got = append(got, s); mu.Unlock() } }
	must(t, root.Submit(mark("x")))
	must(t, ks.Submit("a", mark("a1")))
	must(t, ks.Submit("b", mark("b1")))
	must(t, sub.Submit(mark("s1")))
	must(t, ks.Submit("a", mark("a2")))
	must(t, ks.Submit("b", mark("b2")))
	must(t, kr.Submit("r", mark("r1")))
	must(t, root.Submit(mark("y")))
	out := sub.StopNow()
	for _, f := range out {
		f()
	}
	mu.Lock()
	if want := "[a1 a2 b1 b2 s1]"; fmt.Sprint(got) != want {
		t.Fatalf("sub.StopNow handed back %v, want %s", got, want)
	}
	got = nil
	mu.Unlock()
	if ks.Submit("a", mark("no")) != crew.ErrStopped {
		t.Fatalf("the stopped sub-pool's Keyed accepted a task")
	}
	must(t, kr.Submit("r", mark("r2")))
	out = root.StopNow()
	for _, f := range out {
		f()
	}
	mu.Lock()
	if want := "[x r1 r2 y]"; fmt.Sprint(got) != want {
		t.Fatalf("root.StopNow handed back %v, want %s", got, want)
	}
	mu.Unlock()
	close(release)
	root.Wait()
	for _, s := range []crew.Stats{ks.Stats(), kr.Stats(), sub.Stats(), root.Stats()} {
		idleIdentity(t, "after StopNow", s)
	}
	if s := ks.Stats(); s.Returned != 4 || s.Completed != 0 {
		t.Fatalf("sub Keyed stats %+v", s)
	}
	// The pools count turns: a's and b's turns and s1 in the sub-pool; x, r's turn and y in
	// the root, beside its blocker.
	if s := sub.Stats(); s.Returned != 3 || s.Accepted != 3 {
		t.Fatalf("sub stats %+v, want 3 accepted and returned: two turns and a task", s)
	}
	if s := root.Stats(); s.Returned != 4 || s.Accepted != 5 {
		t.Fatalf("root stats %+v, want 5 accepted, 4 returned: the sub-pool's worker, x, r's turn, y", s)
	}
}

// TestAdvFKStuckKeyDelaysOnlyItsOwnTasks: a key whose task never returns (until the end) holds
// one worker and delays only its own later tasks: every other key's tasks run meanwhile, on
// the pool and on a sub-pool, with interface and struct keys.
func TestAdvFKStuckKeyDelaysOnlyItsOwnTasks(t *testing.T) {
	type pair struct {
		a int
		b string
	}
	root := crew.New(3)
	defer root.StopAndWait()
	sub := root.Sub(2)
	ka := crew.NewKeyed[any](root)
	kp := crew.NewKeyed[pair](sub)
	release := make(chan struct{})
	defer close(release)
	var stuckLater atomic.Int32
	must(t, ka.Submit(nil, func() { <-release }))
	must(t, ka.Submit(nil, func() { stuckLater.Add(1) }))
	must(t, kp.Submit(pair{0, "stuck"}, func() { <-release }))
	must(t, kp.Submit(pair{0, "stuck"}, func() { stuckLater.Add(1) }))
	var ran atomic.Int32
	keys, each := 30, 10
	for i := range keys * each {
		key := i % keys
		var k any = key
		if key%3 == 1 {
			k = fmt.Sprint("k", key)
		}
		must(t, ka.Submit(k, func() { ran.Add(1) }))
		must(t, kp.Submit(pair{key + 1, "x"}, func() { ran.Add(1) }))
	}
	waitFor(t, "every other key's tasks", func() bool { return ran.Load() == int32(2*keys*each) })
	if stuckLater.Load() != 0 {
		t.Fatalf("a stuck key's later task ran before the stuck one returned")
	}
	// The stuck tasks hold their places (their workers may be slow to reach them).
	awaitStats(t, ka, "the root Keyed's stuck task running, its successor waiting",
		func(s crew.Stats) bool { return s.Running == 1 && s.Waiting == 1 })
	awaitStats(t, kp, "the sub-pool Keyed's stuck task running, its successor waiting",
		func(s crew.Stats) bool { return s.Running == 1 && s.Waiting == 1 })
	if stuckLater.Load() != 0 {
		t.Fatalf("a stuck key's later task ran before the stuck one returned")
	}
}

// TestAdvFKTryInvokeNeverRunsInlineNorDrops: on a full queue TryInvoke reports false under
// every policy: it never runs the call on its caller (CallerRuns) and never drops another
// (DiscardOldest); the refusal counts in Rejected. The getters report the options.
func TestAdvFKTryInvokeNeverRunsInlineNorDrops(t *testing.T) {
	for _, c := range []struct {
		opt  crew.Option
		want crew.Overflow
	}{
		{crew.WithOverflow(crew.Block), crew.Block},
		{crew.WithNonBlocking(), crew.Reject},
		{crew.WithOverflow(crew.CallerRuns), crew.CallerRuns},
		{crew.WithOverflow(crew.DiscardOldest), crew.DiscardOldest},
	} {
		t.Run(fmt.Sprint(c.want), func(t *testing.T) {
			release := make(chan struct{})
			running := make(chan struct{}, 1)
			var ran, dropped atomic.Int32
			p := crew.NewFunc(1, func(i int) {
				if i == 0 {
					running <- struct{}{}
					<-release
				}
				ran.Add(1)
			}, crew.WithQueueSize(2), c.opt, crew.WithIdleTimeout(crew.NoIdleTimeout),
				crew.WithDiscardHandler(func(any) { dropped.Add(1) }))
			if p.Overflow() != c.want || p.QueueSize() != 2 || p.IdleTimeout() != crew.NoIdleTimeout || p.MinWorkers() != 0 {
				t.Fatalf("getters: %v %d %v %d", p.Overflow(), p.QueueSize(), p.IdleTimeout(), p.MinWorkers())
			}
			must(t, p.Invoke(0))
			<-running
			must(t, p.Invoke(1))
			if !p.TryInvoke(2) {
				t.Fatalf("TryInvoke refused with room in the queue")
			}
			for i := 3; i < 6; i++ {
				if p.TryInvoke(i) {
					t.Fatalf("TryInvoke accepted into a full queue")
				}
			}
			if ran.Load() != 0 || dropped.Load() != 0 {
				t.Fatalf("TryInvoke ran %d calls inline or dropped %d", ran.Load(), dropped.Load())
			}
			close(release)
			p.StopAndWait()
			s := p.Stats()
			idleIdentity(t, "try", s)
			if s.Rejected != 3 || s.Accepted != 3 || s.CallerRan != 0 || s.Discarded != 0 || ran.Load() != 3 {
				t.Fatalf("stats %+v, ran %d", s, ran.Load())
			}
		})
	}
	p := crew.NewFunc(1, func(int) {})
	defer p.StopAndWait()
	if p.Overflow() != crew.Block || p.QueueSize() != 0 || p.IdleTimeout() != crew.DefaultIdleTimeout {
		t.Fatalf("default getters: %v %d %v", p.Overflow(), p.QueueSize(), p.IdleTimeout())
	}
}

// TestAdvFKKeyedTaskThatPausesAndWaitsHoldsItsKey: a keyed task calls PauseAndWait on its pool;
// it returns ctx.Err() (it waits for its own task too) and the pool stays paused: the key's
// next task does not start until Resume, and then runs in order.
func TestAdvFKKeyedTaskThatPausesAndWaitsHoldsItsKey(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var got error
	var order []int
	must(t, k.Submit(1, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		got = p.PauseAndWait(ctx)
		order = append(order, 0)
	}))
	for i := 1; i < 4; i++ {
		must(t, k.Submit(1, func() { order = append(order, i) }))
	}
	awaitStats(t, k, "the pausing task to end", func(s crew.Stats) bool { return s.Completed == 1 })
	time.Sleep(20 * time.Millisecond)
	if s := k.Stats(); s.Completed != 1 || s.Waiting != 3 || !s.Paused {
		t.Fatalf("a keyed task started on a paused pool: %+v", s)
	}
	p.Resume()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if !errors.Is(got, context.DeadlineExceeded) {
		t.Fatalf("PauseAndWait from a keyed task = %v", got)
	}
	if fmt.Sprint(order) != "[0 1 2 3]" {
		t.Fatalf("order %v", order)
	}
	p.Wait()
	idleIdentity(t, "keyed", k.Stats())
	idleIdentity(t, "pool", p.Stats())
}

// TestAdvFKContextEndOfAPausedPoolRunsTheBacklog: when the WithContext context of a paused
// FuncPool, or of a paused pool under a Keyed, ends, the pool stops as if by Stop, which
// resumes it: every accepted call and keyed task still runs, once; later ones are refused.
func TestAdvFKContextEndOfAPausedPoolRunsTheBacklog(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	const n = 20
	runs := make([]atomic.Int32, n)
	fp := crew.NewFunc(2, func(i int) { runs[i].Add(1) }, crew.WithContext(ctx))
	p := crew.New(2, crew.WithContext(ctx))
	sub := p.Sub(1, crew.WithPriority(2))
	k := crew.NewKeyed[int](sub)
	keyed := make([]atomic.Int32, n)
	fp.Pause()
	p.Pause()
	for i := range n {
		must(t, fp.Invoke(i))
		must(t, k.Submit(i%3, func() { keyed[i].Add(1) }))
	}
	stillBlocked(t, "Wait on the paused FuncPool", goRun(fp.Wait))
	cancel()
	awaitReturn(t, "FuncPool.Wait after its context ended", goRun(fp.Wait))
	awaitReturn(t, "Keyed.Wait after the pool's context ended", goRun(k.Wait))
	if fp.Invoke(0) != crew.ErrStopped || k.Submit(0, func() {}) != crew.ErrStopped {
		t.Fatalf("a pool whose context ended accepted work")
	}
	fp.StopAndWait()
	p.StopAndWait()
	ranOnce(t, runs)
	ranOnce(t, keyed)
	for _, s := range []crew.Stats{fp.Stats(), p.Stats(), sub.Stats(), k.Stats()} {
		idleIdentity(t, "context end", s)
		if s.Paused {
			t.Fatalf("paused after the context ended: %+v", s)
		}
	}
}

// TestAdvFKKeyedTaskThatStopsItsPoolLetsTheAcceptedRun: a keyed task calls Stop on its pool (a
// sub-pool's parent, on a paused sub-pool's tree): the accepted keyed tasks, of its key and of
// others, still run exactly once, in order; submits after Stop return ErrStopped.
func TestAdvFKKeyedTaskThatStopsItsPoolLetsTheAcceptedRun(t *testing.T) {
	root := crew.New(2)
	sub := root.Sub(1, crew.WithPriority(1))
	kr := crew.NewKeyed[int](root)
	ks := crew.NewKeyed[int](sub)
	const keys, each = 4, 12
	c, cs := newKeyChecker(), newKeyChecker()
	stopped, submitted := make(chan struct{}), make(chan struct{})
	sub.Pause()
	for seq := range each {
		for key := range keys {
			must(t, ks.Submit(key, func() { cs.enter(key, seq); cs.exit(key) }))
			must(t, kr.Submit(key, func() {
				c.enter(key, seq)
				if key == 1 && seq == 3 {
					<-submitted
					root.Stop()
					close(stopped)
				}
				c.exit(key)
			}))
		}
	}
	close(submitted)
	awaitReturn(t, "a keyed task to stop the root", stopped)
	if kr.Submit(0, func() {}) != crew.ErrStopped || ks.Submit(0, func() {}) != crew.ErrStopped {
		t.Fatalf("a Keyed accepted a task after its pool's parent stopped")
	}
	awaitReturn(t, "root StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(kr.Wait))
	awaitReturn(t, "sub Keyed.Wait", goRun(ks.Wait))
	c.check(t, "root keyed")
	cs.check(t, "sub keyed")
	if c.ranCount() != keys*each || cs.ranCount() != keys*each {
		t.Fatalf("ran %d and %d keyed tasks, want %d each", c.ranCount(), cs.ranCount(), keys*each)
	}
	for _, s := range []crew.Stats{kr.Stats(), ks.Stats(), root.Stats(), sub.Stats()} {
		idleIdentity(t, "after Stop from a keyed task", s)
	}
}

// TestAdvFKPoolWaitWaitsForKeyedTasks: a pool's Wait (of the root, for a Keyed two sub-pools
// down) waits for every accepted keyed task, and their returns synchronize before its return:
// counters the tasks write without a lock are read after it (the race detector checks it).
func TestAdvFKPoolWaitWaitsForKeyedTasks(t *testing.T) {
	root := crew.New(3)
	defer root.StopAndWait()
	leaf := root.Sub(2).Sub(2, crew.WithPriority(1))
	k := crew.NewKeyed[int](leaf)
	fp := crew.NewFunc(2, func(p *int) { *p++ })
	defer fp.StopAndWait()
	const keys, each = 6, 50
	counts := make([]int, keys)
	args := make([]int, keys*each)
	for round := range 3 {
		for seq := range each {
			for key := range keys {
				must(t, k.Submit(key, func() { counts[key]++ }))
				must(t, fp.Invoke(&args[key*each+seq]))
			}
		}
		root.Wait()
		fp.Wait()
		for key, n := range counts {
			if n != (round+1)*each {
				t.Fatalf("round %d: key %d ran %d tasks before the root's Wait returned, want %d", round, key, n, (round+1)*each)
			}
		}
		for i, n := range args {
			if n != round+1 {
				t.Fatalf("round %d: call %d ran %d times before Wait returned", round, i, n)
			}
		}
		if s := k.Stats(); s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("Keyed stats after the root's Wait: %+v", s)
		}
	}
}

// TestAdvFKStopNowOvertakesWaitingInvokers: Invokes waiting when StopNow is called (for room
// under Block, with WithMaxWait or on a paused pool, or for Resume under CallerRuns on a
// paused pool) return ErrStopped, and their calls never run; StopNow hands back the queued
// ones.
func TestAdvFKStopNowOvertakesWaitingInvokers(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  []crew.Option
		pause bool
	}{
		{"block", []crew.Option{crew.WithMaxWait(time.Minute)}, false},
		{"callerRunsPaused", []crew.Option{crew.WithOverflow(crew.CallerRuns)}, true},
		{"blockPaused", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			running := make(chan struct{}, 1)
			var ran sync.Map
			p := crew.NewFunc(1, func(i int) {
				ran.Store(i, true)
				if i == 0 {
					running <- struct{}{}
					<-release
				}
			}, append([]crew.Option{crew.WithQueueSize(2)}, c.opts...)...)
			must(t, p.Invoke(0))
			<-running
			must(t, p.Invoke(1))
			must(t, p.Invoke(2))
			if c.pause {
				p.Pause()
			}
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for j := range errs {
				wg.Add(1)
				go func() { defer wg.Done(); errs[j] = p.Invoke(10 + j) }()
			}
			// Let them reach their wait; one that comes later is refused all the same.
			time.Sleep(20 * time.Millisecond)
			out := p.StopNow()
			awaitReturn(t, "the waiting Invokes", goRun(wg.Wait))
			close(release)
			p.StopAndWait()
			for j, err := range errs {
				if err != crew.ErrStopped {
					t.Fatalf("waiting Invoke %d returned %v, want ErrStopped", j, err)
				}
				if _, ok := ran.Load(10 + j); ok {
					t.Fatalf("the call of a refused Invoke ran")
				}
			}
			if fmt.Sprint(out) != "[1 2]" {
				t.Fatalf("StopNow handed back %v, want [1 2]", out)
			}
			s := p.Stats()
			idleIdentity(t, c.name, s)
			if s.Accepted != 3 || s.Returned != 2 || s.CallerRan != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestAdvFKCallerRunsTakesARateToken: under CallerRuns and a rate limit, a call run on its
// submitter takes a token too: with the burst spent, the submitter waits for one, and runs
// the call once the limit is lifted.
func TestAdvFKCallerRunsTakesARateToken(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	var ran sync.Map
	p := crew.NewFunc(1, func(i int) {
		ran.Store(i, true)
		if i == 0 {
			running <- struct{}{}
			<-release
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithRateLimit(1e-6, 2))
	defer p.StopAndWait()
	must(t, p.Invoke(0)) // the first token
	<-running
	must(t, p.Invoke(1)) // queued
	must(t, p.Invoke(2)) // the second token, on the caller
	if _, ok := ran.Load(2); !ok {
		t.Fatalf("CallerRuns returned before running the call")
	}
	third := goRun(func() { must(t, p.Invoke(3)) })
	stillBlocked(t, "a CallerRuns Invoke with no token left", third)
	if _, ok := ran.Load(3); ok {
		t.Fatalf("a call ran on its caller without a token")
	}
	p.SetRateLimit(math.Inf(1), 1)
	awaitReturn(t, "the CallerRuns Invoke once the limit is lifted", third)
	close(release)
	p.Wait()
	s := p.Stats()
	idleIdentity(t, "caller runs under a rate", s)
	if s.CallerRan != 2 || s.Accepted != 4 {
		t.Fatalf("stats %+v", s)
	}
}

// TestAdvFKNewFuncWithAnEndedContextIsStopped: NewFunc with a context that has already ended
// returns a stopped pool, also with minimum workers: every call is refused, nothing runs, and
// StopAndWait leaves no goroutine.
func TestAdvFKNewFuncWithAnEndedContextIsStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	p := crew.NewFunc(3, func(int) { ran.Add(1) }, crew.WithContext(ctx), crew.WithMinWorkers(2))
	if !p.Stopped() {
		t.Fatalf("NewFunc with an ended context returned a pool that is not stopped")
	}
	if p.Invoke(1) != crew.ErrStopped || p.TryInvoke(2) || p.InvokeContext(context.Background(), 3) != crew.ErrStopped {
		t.Fatalf("a stopped pool accepted a call")
	}
	if out := p.StopNow(); len(out) != 0 {
		t.Fatalf("StopNow returned %v", out)
	}
	p.Pause()
	p.Resize(5)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of an exited pool = %v", err)
	}
	s := p.Stats()
	idleIdentity(t, "ended context", s)
	if ran.Load() != 0 || s.Accepted != 0 || s.Idle != 0 || s.Paused {
		t.Fatalf("ran %d; stats %+v", ran.Load(), s)
	}
}

// TestAdvFKSeveralHooksAllApplyInOrderForCallsAndKeyedTasks: several WithHooks options all
// apply, in the order given, each guarded on its own (a first hook's nil panic keeps the
// second from nothing), for a FuncPool's calls and a Keyed's tasks alike.
func TestAdvFKSeveralHooksAllApplyInOrderForCallsAndKeyedTasks(t *testing.T) {
	type event struct {
		hook int
		what string
	}
	var mu sync.Mutex
	var events []event
	hooks := func(n int) crew.Hooks {
		rec := func(what string) {
			mu.Lock()
			events = append(events, event{n, what})
			mu.Unlock()
		}
		return crew.Hooks{
			Queued: func(crew.TaskInfo) { rec("queued") },
			Started: func(crew.TaskInfo) {
				rec("started")
				if n == 1 {
					panic(nil)
				}
			},
			Finished: func(crew.TaskInfo) { rec("finished") },
			Rejected: func(error) { rec("rejected") },
		}
	}
	var handled atomic.Int32
	ph := crew.WithPanicHandler(func(any, []byte) { handled.Add(1) })
	var calls atomic.Int32
	fp := crew.NewFunc(1, func(int) { calls.Add(1) }, crew.WithHooks(hooks(1)), crew.WithHooks(hooks(2)), ph)
	p := crew.New(1, crew.WithHooks(hooks(1)), crew.WithHooks(hooks(2)), ph)
	k := crew.NewKeyed[int](p)
	check := func(name string, want int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		counts := map[event]int{}
		for i, e := range events {
			counts[e]++
			if e.hook == 2 && (i == 0 || events[i-1] != event{1, e.what}) {
				t.Fatalf("%s: hook 2's %s not right after hook 1's: %v", name, e.what, events)
			}
		}
		for _, what := range []string{"queued", "started", "finished"} {
			if counts[event{1, what}] != want || counts[event{2, what}] != want {
				t.Fatalf("%s: %s seen %d and %d times, want %d: %v", name, what, counts[event{1, what}], counts[event{2, what}], want, events)
			}
		}
		events = nil
	}
	for i := range 5 {
		must(t, fp.Invoke(i))
		fp.Wait()
	}
	check("FuncPool", 5)
	for i := range 5 {
		must(t, k.Submit(i%2, func() { calls.Add(1) }))
		k.Wait()
	}
	p.Wait()
	check("Keyed", 5)
	fp.StopAndWait()
	p.StopAndWait()
	if fp.Invoke(0) != crew.ErrStopped || k.Submit(0, func() {}) != crew.ErrStopped {
		t.Fatalf("accepted after stop")
	}
	mu.Lock()
	if fmt.Sprint(events) != "[{1 queued} {2 queued} {1 rejected} {2 rejected} {1 queued} {2 queued} {1 rejected} {2 rejected}]" {
		t.Fatalf("refusals: %v", events)
	}
	mu.Unlock()
	if calls.Load() != 10 || handled.Load() != 10 {
		t.Fatalf("%d calls ran, %d hook panics handled; want 10 and 10", calls.Load(), handled.Load())
	}
}

// TestAdvFKParentRateLimitCountsKeyedTasksOfASubPool: a parent's rate limit counts the starts
// of its sub-pools' tasks, keyed tasks included, each one: with a burst of 3 and no more
// tokens, at most 3 keyed tasks of a Keyed two sub-pools down start, whatever turns they take;
// lifting the limit runs the rest, in order.
func TestAdvFKParentRateLimitCountsKeyedTasksOfASubPool(t *testing.T) {
	root := crew.New(4, crew.WithRateLimit(1e-6, 3))
	defer root.StopAndWait()
	leaf := root.Sub(3).Sub(2, crew.WithPriority(1))
	k := crew.NewKeyed[int](leaf)
	const n = 12
	var ran atomic.Int32
	var order [2][]int
	for i := range n {
		key := i % 2
		must(t, k.Submit(key, func() { ran.Add(1); order[key] = append(order[key], i) }))
	}
	awaitStats(t, k, "a keyed task to run", func(s crew.Stats) bool { return s.Completed >= 1 })
	time.Sleep(30 * time.Millisecond)
	if got := ran.Load(); got > 3 {
		t.Fatalf("%d keyed tasks started under the root's burst of 3", got)
	}
	root.SetRateLimit(math.Inf(1), 1)
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if ran.Load() != n {
		t.Fatalf("%d keyed tasks ran, want %d", ran.Load(), n)
	}
	for key, o := range order {
		for j, i := range o {
			if i != key+2*j {
				t.Fatalf("key %d ran %v", key, o)
			}
		}
	}
	root.Wait()
	idleIdentity(t, "keyed", k.Stats())
	idleIdentity(t, "root", root.Stats())
}
