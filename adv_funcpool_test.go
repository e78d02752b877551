package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// afpLedger records, for each numbered task, whether its submit accepted it, how often it ran
// and how often it was handed back or failed unrun, and checks them against each other.
type afpLedger struct {
	accepted []atomic.Bool
	refused  []atomic.Bool
	ran      []atomic.Int32
	back     []atomic.Int32 // handed back by StopNow or discarded: never run
	next     atomic.Int64
}

func newAfpLedger(n int) *afpLedger {
	return &afpLedger{accepted: make([]atomic.Bool, n), refused: make([]atomic.Bool, n),
		ran: make([]atomic.Int32, n), back: make([]atomic.Int32, n)}
}

// id takes the next number, or -1 when the ledger is full.
func (l *afpLedger) id() int {
	i := int(l.next.Add(1) - 1)
	if i >= len(l.ran) {
		return -1
	}
	return i
}

// settle records the outcome of the submit of task i.
func (l *afpLedger) settle(i int, ok bool) {
	if ok {
		l.accepted[i].Store(true)
	} else {
		l.refused[i].Store(true)
	}
}

// check fails t unless each accepted task ran once or was handed back once, never both, and
// no refused task did either. unrunOK, if set, lets an accepted task end without running and
// without being handed back (a skipped function).
func (l *afpLedger) check(t *testing.T, what string, unrunOK func(i int) bool) (ran, back int) {
	t.Helper()
	n := min(int(l.next.Load()), len(l.ran))
	bad := 0
	for i := range n {
		r, b := l.ran[i].Load(), l.back[i].Load()
		ran += int(r)
		back += int(b)
		var fault string
		switch {
		case l.accepted[i].Load() == l.refused[i].Load():
			fault = "neither accepted nor refused, or both"
		case l.refused[i].Load() && r+b != 0:
			fault = fmt.Sprintf("refused, but ran %d and handed back %d", r, b)
		case l.accepted[i].Load() && r+b != 1 && !(r+b == 0 && unrunOK != nil && unrunOK(i)):
			fault = fmt.Sprintf("accepted, but ran %d and handed back %d", r, b)
		}
		if fault != "" {
			if bad++; bad <= 8 {
				t.Errorf("%s: task %d: %s", what, i, fault)
			}
		}
	}
	return ran, back
}

// TestAdvFuncPanicsGoexitAndHooksOnEveryDoor: a FuncPool whose fn panics, panics with nil or
// calls runtime.Goexit, reached through Invoke, TryInvoke, InvokeContext and CallerRuns (on a
// submitter goroutine of its own, which Goexit ends), with hooks that panic on some calls:
// each accepted argument is called once, the panic handler receives each panic (panic(nil)
// as the value recover gives for it), a hook's panic goes to the panic handler too and leaves
// its call alone, workers survive, and Stats, hooks and histograms agree.
func TestAdvFuncPanicsGoexitAndHooksOnEveryDoor(t *testing.T) {
	const n = 240
	var calls [n]atomic.Int32
	var handled, nilPanics, hookPanics atomic.Int64
	var started, finished, finishedPanicked atomic.Int64
	fn := func(i int) {
		calls[i].Add(1)
		switch i % 6 {
		case 1:
			panic(fmt.Sprint("boom ", i))
		case 2:
			panic(nil)
		case 3:
			runtime.Goexit()
		}
	}
	want := panicNilValue()
	p := crew.NewFunc(2, fn, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns), crew.WithLatencyHistograms(),
		crew.WithPanicHandler(func(v any, stack []byte) {
			handled.Add(1)
			switch {
			case v == "hook":
				hookPanics.Add(1)
			case fmt.Sprint(v) == fmt.Sprint(want):
				nilPanics.Add(1)
			}
			if len(stack) == 0 {
				t.Error("panic handler got no stack")
			}
		}),
		crew.WithHooks(crew.Hooks{
			Started: func(crew.TaskInfo) {
				if started.Add(1)%7 == 0 {
					panic("hook")
				}
			},
			Finished: func(ti crew.TaskInfo) {
				finished.Add(1)
				if ti.Panicked {
					finishedPanicked.Add(1)
				}
			},
		}))
	var accepted [n]atomic.Bool
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < n; i += 4 {
				// each submit on a goroutine of its own, as a caller-run Goexit ends it
				done := goRun(func() {
					var ok bool
					switch i % 4 {
					case 0, 3:
						accepted[i].Store(true) // a caller-run Goexit never returns from Invoke
						ok = p.Invoke(i) == nil
					case 1:
						ok = p.TryInvoke(i)
					case 2:
						accepted[i].Store(true)
						ok = p.InvokeContext(context.Background(), i) == nil
					}
					accepted[i].Store(ok)
				})
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Errorf("a submit of arg %d did not return", i)
					return
				}
			}
		}()
	}
	wg.Wait()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	var acc, panics int64
	for i := range n {
		c := calls[i].Load()
		if accepted[i].Load() != (c == 1) || c > 1 {
			t.Errorf("arg %d: accepted %v, called %d times", i, accepted[i].Load(), c)
		}
		if c == 1 {
			acc++
			if i%6 == 1 || i%6 == 2 {
				panics++
			}
		}
	}
	s := p.Stats()
	idleIdentity(t, "FuncPool", s)
	if s.Accepted != uint64(acc) || s.Panicked != uint64(panics) || s.Completed != uint64(acc-panics) {
		t.Errorf("stats %+v, want %d accepted, %d panicked", s, acc, panics)
	}
	if handled.Load() != panics+hookPanics.Load() {
		t.Errorf("panic handler called %d times, want %d panics + %d hook panics", handled.Load(), panics, hookPanics.Load())
	}
	if hookPanics.Load() == 0 || nilPanics.Load() == 0 {
		t.Errorf("no hook panic (%d) or panic(nil) (%d) reached the handler", hookPanics.Load(), nilPanics.Load())
	}
	if started.Load() != acc || finished.Load() != acc || finishedPanicked.Load() != panics {
		t.Errorf("hooks started %d finished %d (panicked %d), want %d, %d, %d", started.Load(), finished.Load(), finishedPanicked.Load(), acc, acc, panics)
	}
	if s.WaitTime.Count != uint64(acc) || s.RunTime.Count != uint64(acc) {
		t.Errorf("histograms %d, %d, want %d", s.WaitTime.Count, s.RunTime.Count, acc)
	}
}

// TestAdvFuncStopNowAndPauseAndWaitFromInsideFn: fn calls StopNow on its own pool (safe from a
// task): the arguments not yet started come back, in submission order, never called; running
// calls finish; later Invokes return ErrStopped. Another round: fn calls PauseAndWait with a
// short context (it waits for itself, so it returns ctx.Err() and the pool stays paused), and
// the pool resumes from outside: every argument is called once.
func TestAdvFuncStopNowAndPauseAndWaitFromInsideFn(t *testing.T) {
	t.Run("StopNow", func(t *testing.T) {
		const n = 200
		var calls [n]atomic.Int32
		var p *crew.FuncPool[int]
		var back []int
		var once sync.Once
		var ready = make(chan struct{})
		p = crew.NewFunc(2, func(i int) {
			<-ready
			calls[i].Add(1)
			if i == 50 {
				once.Do(func() { back = p.StopNow() })
			}
		}, crew.WithQueueSize(n), crew.WithRateLimit(5000, 3))
		accepted := 0
		for i := range n {
			if p.Invoke(i) == nil {
				accepted++
			}
		}
		close(ready)
		awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
		if err := p.Invoke(0); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Invoke after StopNow = %v", err)
		}
		handed := make(map[int]bool)
		for k, i := range back {
			if k > 0 && i <= back[k-1] {
				t.Errorf("StopNow handed back %d after %d: not in submission order", i, back[k-1])
			}
			handed[i] = true
		}
		for i := range n {
			c := calls[i].Load()
			if c > 1 || (c == 1) == handed[i] {
				t.Errorf("arg %d: called %d, handed back %v", i, c, handed[i])
			}
		}
		s := p.Stats()
		idleIdentity(t, "FuncPool", s)
		if int(s.Returned) != len(back) || int(s.Accepted) != accepted {
			t.Errorf("stats %+v, want Returned %d Accepted %d", s, len(back), accepted)
		}
	})
	t.Run("PauseAndWait", func(t *testing.T) {
		const n = 60
		var calls [n]atomic.Int32
		var p *crew.FuncPool[int]
		pawErr := make(chan error, 1)
		p = crew.NewFunc(3, func(i int) {
			calls[i].Add(1)
			if i == 10 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				pawErr <- p.PauseAndWait(ctx)
			}
		})
		defer p.StopAndWait()
		for i := range n {
			must(t, p.Invoke(i))
		}
		select {
		case err := <-pawErr:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("PauseAndWait from fn = %v, want DeadlineExceeded", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("PauseAndWait from fn did not return when its ctx ended")
		}
		if s := p.Stats(); !s.Paused {
			t.Errorf("pool not paused after PauseAndWait gave up: %+v", s)
		}
		p.Resume()
		awaitReturn(t, "Wait", goRun(p.Wait))
		for i := range n {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("arg %d called %d times", i, c)
			}
		}
		idleIdentity(t, "FuncPool", p.Stats())
	})
}

// TestAdvFuncWithContextEndStopsBlockedInvokers: InvokeContext and Invoke blocked on a full
// queue of a FuncPool return ErrStopped when the pool's WithContext context ends (not their
// own context's error); the refusal counts in neither Rejected nor Canceled, the Rejected hook
// sees ErrStopped, and the calls accepted before still run once.
func TestAdvFuncWithContextEndStopsBlockedInvokers(t *testing.T) {
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	gate := make(chan struct{})
	var calls [8]atomic.Int32
	var rejected []error
	var mu sync.Mutex
	p := crew.NewFunc(1, func(i int) { <-gate; calls[i].Add(1) }, crew.WithQueueSize(1), crew.WithContext(pctx),
		crew.WithHooks(crew.Hooks{Rejected: func(err error) { mu.Lock(); rejected = append(rejected, err); mu.Unlock() }}))
	must(t, p.Invoke(0))
	must(t, p.Invoke(1))
	errs := make(chan error, 4)
	for i := 2; i < 6; i++ {
		go func() {
			if i%2 == 0 {
				errs <- p.Invoke(i)
			} else {
				errs <- p.InvokeContext(context.Background(), i)
			}
		}()
	}
	waitFor(t, "4 blocked invokers", func() bool {
		s := p.Stats()
		return s.Accepted == 2 && blockedFuncInvokers(p) == 4
	})
	pcancel()
	for range 4 {
		select {
		case err := <-errs:
			if !errors.Is(err, crew.ErrStopped) {
				t.Errorf("blocked invoker = %v, want ErrStopped", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a blocked invoker did not return when the pool's context ended")
		}
	}
	close(gate)
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	for i := range 8 {
		want := int32(0)
		if i < 2 {
			want = 1
		}
		if c := calls[i].Load(); c != want {
			t.Errorf("arg %d called %d times, want %d", i, c, want)
		}
	}
	s := p.Stats()
	idleIdentity(t, "FuncPool", s)
	if s.Rejected != 0 || s.Canceled != 0 || s.Accepted != 2 {
		t.Errorf("stats %+v: ErrStopped counts in neither Rejected nor Canceled", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rejected) != 4 {
		t.Errorf("Rejected hook called %d times, want 4", len(rejected))
	}
	for _, err := range rejected {
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Rejected hook got %v, want ErrStopped", err)
		}
	}
}

// blockedFuncInvokers guesses how many goroutines are blocked in an Invoke of p, from the
// goroutine dump: the FuncPool has no BlockedSubmitters hook.
func blockedFuncInvokers(*crew.FuncPool[int]) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "FuncPool[...]).Invoke") && strings.Contains(g, "TestAdvFuncWithContextEndStopsBlockedInvokers") {
			n++
		}
	}
	return n
}

// TestAdvFuncAdaptiveUnderResizeStopNowAndShutdown: an adaptive FuncPool, resized and paused
// while submitters invoke, ended by StopNow racing Shutdown with a short deadline (a FuncPool's
// calls carry no context, so Shutdown skips none): each accepted argument is called once or
// handed back once; Stats add up; no gauge goes negative.
func TestAdvFuncAdaptiveUnderResizeStopNowAndShutdown(t *testing.T) {
	const n = 3000
	l := newAfpLedger(n)
	p := crew.NewFunc(8, func(i int) {
		l.ran[i].Add(1)
		if i%5 == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}, crew.WithAdaptiveLimit(2), crew.WithQueueSize(32), crew.WithMaxWait(time.Millisecond))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() { p.Resize(2 + rand.IntN(8)); time.Sleep(100 * time.Microsecond) })
	repeatUntil(&wg, stop, func() {
		p.Pause()
		time.Sleep(100 * time.Microsecond)
		p.Resume()
		time.Sleep(100 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		s := p.Stats()
		if s.Running < 0 || s.Waiting < 0 || s.Idle < 0 || s.Running > 9 {
			t.Errorf("bad snapshot %+v", s)
		}
	})
	var subWG sync.WaitGroup
	for range 4 {
		subWG.Add(1)
		go func() {
			defer subWG.Done()
			for i := l.id(); i >= 0; i = l.id() {
				var ok bool
				switch i % 3 {
				case 0:
					ok = p.Invoke(i) == nil
				case 1:
					ok = p.TryInvoke(i)
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					ok = p.InvokeContext(ctx, i) == nil
					cancel()
				}
				l.settle(i, ok)
			}
		}()
	}
	time.Sleep(30 * time.Millisecond)
	var back []int
	var shutErr error
	together(2, 1, func(c, _ int) {
		if c == 0 {
			back = p.StopNow()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		shutErr = p.Shutdown(ctx)
	})
	subWG.Wait()
	close(stop)
	wg.Wait()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if shutErr != nil && !errors.Is(shutErr, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v", shutErr)
	}
	for _, i := range back {
		l.back[i].Add(1)
	}
	ran, returned := l.check(t, "FuncPool", nil)
	s := p.Stats()
	idleIdentity(t, "FuncPool", s)
	if s.Returned != uint64(returned) || s.Completed != uint64(ran) {
		t.Errorf("stats %+v, want Returned %d Completed %d", s, returned, ran)
	}
}

// afpPools is the tree of the concurrency test and a FuncPool beside it.
type afpPools struct {
	tree []*crew.Pool
	fp   *crew.FuncPool[int]
}

// TestAdvConcEveryMethodFromManyGoroutines calls every exported method of a tree of pools and
// of a FuncPool from many goroutines at once: submits of every kind (plain, weighted, futures,
// groups, results), Stats, Resize, Pause, Resume, PauseAndWait, SetRateLimit, Wait, Stop,
// StopNow, StopAndWait and Shutdown. Nothing panics, nothing hangs, every accepted task runs
// once or is handed back (or, for a function given with a context, skipped by Shutdown), no
// snapshot shows a negative gauge, and every pool's Stats add up once quiet.
func TestAdvConcEveryMethodFromManyGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	const n = 4000
	l := newAfpLedger(n)
	fl := newAfpLedger(n)
	root := crew.New(4, crew.WithQueueSize(16), crew.WithLatencyHistograms())
	sub := root.Sub(3, crew.WithPriority(1), crew.WithQueueSize(8))
	subsub := sub.Sub(2)
	low := root.Sub(2, crew.WithPriority(-1))
	ps := afpPools{
		tree: []*crew.Pool{root, sub, subsub, low},
		fp:   crew.NewFunc(3, func(i int) { fl.ran[i].Add(1) }, crew.WithQueueSize(8)),
	}
	unwatch := afWatch(t, ps.tree...)
	defer unwatch()
	// skipped: functions given with a context that Shutdown past its deadline may skip
	var skipped sync.Map
	var futMu sync.Mutex
	type fut struct {
		i int
		f *crew.Future[int]
	}
	var futs []fut

	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 200*time.Microsecond, ps.tree...)
	repeatUntil(&wg, stop, func() {
		ps.fp.Pause()
		time.Sleep(150 * time.Microsecond)
		ps.fp.Resume()
		time.Sleep(150 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		ps.tree[rand.IntN(4)].Resize(1 + rand.IntN(4))
		ps.fp.Resize(1 + rand.IntN(4))
		time.Sleep(100 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		r := float64(20000 + rand.IntN(50000))
		if rand.IntN(3) == 0 {
			r = math.Inf(1)
		}
		ps.tree[rand.IntN(4)].SetRateLimit(r, 1+rand.IntN(8))
		ps.fp.SetRateLimit(r, 1+rand.IntN(8))
		time.Sleep(500 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		for _, p := range ps.tree {
			s := p.Stats()
			_ = p.Stopped()
			_, _, _ = p.QueueSize(), p.MinWorkers(), p.IdleTimeout()
			if s.Running < 0 || s.Waiting < 0 || s.Idle < 0 {
				t.Errorf("negative gauge %+v", s)
			}
		}
		fs := ps.fp.Stats()
		if fs.Running < 0 || fs.Waiting < 0 || fs.Idle < 0 {
			t.Errorf("FuncPool: negative gauge %+v", fs)
		}
		runtime.Gosched()
	})
	repeatUntil(&wg, stop, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Microsecond)
		p := ps.tree[rand.IntN(4)]
		_ = p.PauseAndWait(ctx)
		p.Resume()
		_ = ps.fp.PauseAndWait(ctx)
		ps.fp.Resume()
		cancel()
		time.Sleep(300 * time.Microsecond)
	})
	// Sub-pools come and go: made on any pool of the tree (stopped or not), given tasks, then
	// stopped, stopped with StopNow (what it hands back is recorded), or left to the root's end.
	var churnMu sync.Mutex
	var churned []*crew.Pool
	var churnBack []func()
	repeatUntil(&wg, stop, func() {
		parent := ps.tree[rand.IntN(4)]
		var c *crew.Pool
		if rand.IntN(2) == 0 {
			c = parent.Sub(1+rand.IntN(2), crew.WithPriority(rand.IntN(3)-1))
		} else {
			c = parent.Sub(1 + rand.IntN(2))
		}
		churnMu.Lock()
		churned = append(churned, c)
		churnMu.Unlock()
		for range 3 {
			i := l.id()
			if i < 0 {
				break
			}
			l.settle(i, c.Submit(func() { l.ran[i].Add(1) }) == nil)
		}
		switch rand.IntN(3) {
		case 0:
			c.Stop()
		case 1:
			back := c.StopNow()
			churnMu.Lock()
			churnBack = append(churnBack, back...)
			churnMu.Unlock()
		}
		time.Sleep(200 * time.Microsecond)
	})
	// Waits: each must return once the submitters stop; they run on goroutines of their own.
	var waitWG sync.WaitGroup
	for _, w := range []func(){root.Wait, sub.Wait, subsub.Wait, low.Wait, ps.fp.Wait} {
		waitWG.Add(1)
		go func() {
			defer waitWG.Done()
			for k := 0; k < 50; k++ {
				select {
				case <-stop:
					return
				default:
				}
				w()
			}
		}()
	}

	var subWG sync.WaitGroup
	for c := range 6 {
		subWG.Add(1)
		go func() {
			defer subWG.Done()
			for i := l.id(); i >= 0; i = l.id() {
				p := ps.tree[(c+i)%4]
				task := func() { l.ran[i].Add(1) }
				var ok bool
				switch i % 9 {
				case 0:
					ok = p.Submit(task) == nil
				case 1:
					ok = p.TrySubmit(task)
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
					ok = p.SubmitContext(ctx, task) == nil
					cancel()
				case 3:
					ok = p.SubmitN(2, task) == nil
				case 4:
					ok = p.TrySubmitN(2, task)
				case 5:
					f := crew.Go(p, func() (int, error) { l.ran[i].Add(1); return i, nil })
					futMu.Lock()
					futs = append(futs, fut{i, f})
					futMu.Unlock()
					ok = true // settled from Wait below
				case 6:
					skipped.Store(i, true)
					f := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { l.ran[i].Add(1); return i, nil })
					futMu.Lock()
					futs = append(futs, fut{i, f})
					futMu.Unlock()
					ok = true
				case 7:
					skipped.Store(i, true)
					g, _ := p.GroupAll(context.Background())
					accepted := g.TryGo(func(context.Context) error { l.ran[i].Add(1); return nil })
					err := g.Wait()
					ok = accepted
					if accepted && err != nil && !errors.Is(err, crew.ErrStopped) {
						t.Errorf("GroupAll.Wait = %v", err)
					}
				case 8:
					skipped.Store(i, true)
					r, _ := crew.NewResults[int](context.Background(), p)
					r.Go(func(context.Context) (int, error) { l.ran[i].Add(1); return i, nil })
					vals, err := r.Wait()
					if err == nil && (len(vals) != 1 || vals[0] != i) {
						t.Errorf("Results = %v, want [%d]", vals, i)
					}
					if err != nil && !errors.Is(err, crew.ErrStopped) && !errors.Is(err, crew.ErrQueueFull) {
						t.Errorf("Results.Wait = %v", err)
					}
					// a failure is a refusal, StopNow or a skip: never run, all allowed below
					ok = err == nil || l.ran[i].Load() != 0
				}
				if i%9 != 5 && i%9 != 6 {
					l.settle(i, ok)
				}
				// the FuncPool, beside the tree
				if j := fl.id(); j >= 0 {
					switch j % 3 {
					case 0:
						fl.settle(j, ps.fp.Invoke(j) == nil)
					case 1:
						fl.settle(j, ps.fp.TryInvoke(j))
					case 2:
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
						fl.settle(j, ps.fp.InvokeContext(ctx, j) == nil)
						cancel()
					}
				}
			}
		}()
	}
	// The ends, racing the submitters and each other.
	time.Sleep(80 * time.Millisecond)
	var back []func()
	var fback []int
	var endWG sync.WaitGroup
	for k, end := range []func(){
		func() {
			subsub.Pause()
			time.Sleep(2 * time.Millisecond)
			back = append(back, subsub.StopNow()...)
		},
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
			defer cancel()
			_ = sub.Shutdown(ctx)
		},
		func() { low.Stop() },
		func() { root.StopAndWait() },
		func() { fback = ps.fp.StopNow() },
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			_ = ps.fp.Shutdown(ctx)
		},
		func() { ps.fp.Stop() },
	} {
		endWG.Add(1)
		go func() {
			defer endWG.Done()
			time.Sleep(time.Duration(k) * 300 * time.Microsecond)
			end()
		}()
	}
	endsDone := make(chan struct{})
	go func() { endWG.Wait(); close(endsDone) }()
	select {
	case <-endsDone:
	case <-time.After(10 * time.Second):
		close(stop)
		t.Fatalf("the ends did not return; root %+v sub %+v subsub %+v low %+v fp %+v",
			root.Stats(), sub.Stats(), subsub.Stats(), low.Stats(), ps.fp.Stats())
	}
	awaitReturn(t, "submitters", goRun(subWG.Wait))
	close(stop)
	awaitReturn(t, "storms", goRun(wg.Wait))
	awaitReturn(t, "waits", goRun(waitWG.Wait))
	awaitReturn(t, "fp.StopAndWait", goRun(ps.fp.StopAndWait))
	awaitReturn(t, "root.StopAndWait", goRun(root.StopAndWait))

	// Futures: nil and one run, or a failure and no run.
	for _, f := range futs {
		v, err := afWait(t, "future", f.f)
		switch {
		case err == nil:
			l.settle(f.i, true)
			if v != f.i {
				t.Errorf("future %d = %d", f.i, v)
			}
		case errors.Is(err, crew.ErrStopped) || errors.Is(err, crew.ErrQueueFull):
			// refused, or taken out by StopNow, or skipped by Shutdown
			l.settle(f.i, l.ran[f.i].Load() != 0)
			if l.ran[f.i].Load() != 0 {
				t.Errorf("future %d failed with %v but ran", f.i, err)
			}
		default:
			t.Errorf("future %d: %v", f.i, err)
			l.settle(f.i, true)
		}
	}
	// plain tasks handed back: identify them by running them into the ledger's back count
	ranBefore := make([]int32, n)
	for i := range n {
		ranBefore[i] = l.ran[i].Load()
	}
	for _, task := range append(back, churnBack...) {
		task()
	}
	for i := range n {
		if d := l.ran[i].Load() - ranBefore[i]; d != 0 {
			l.ran[i].Add(-d)
			l.back[i].Add(d)
		}
	}
	for _, j := range fback {
		fl.back[j].Add(1)
	}
	ran, returned := l.check(t, "tree", func(i int) bool { _, ok := skipped.Load(i); return ok })
	fran, freturned := fl.check(t, "FuncPool", nil)
	t.Logf("tree: %d of %d ran, %d handed back; FuncPool: %d of %d ran, %d handed back", ran, n, returned, fran, n, freturned)
	unwatch()
	for i, p := range ps.tree {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
	idleIdentity(t, "FuncPool", ps.fp.Stats())
	for i, c := range churned {
		idleIdentity(t, fmt.Sprint("churned sub-pool ", i), c.Stats())
	}
	awaitGoroutines(t, "after StopAndWait", base)
}

// TestAdvFuncHooksCallBackIntoTheirPool: a FuncPool under DiscardOldest whose hooks call the
// pool (hooks run with no lock held, so they may): Queued reads Stats, Started resizes and
// changes the rate and, once, calls StopNow; Finished and Discarded invoke follow-up
// arguments (TryInvoke and Invoke: the latter may drop another argument, whose Discarded hook
// invokes again). Nothing deadlocks, and every argument a submit accepted was called once,
// dropped once (to the discard handler) or handed back once by StopNow, never two of these.
func TestAdvFuncHooksCallBackIntoTheirPool(t *testing.T) {
	const n = 3000
	l := newAfpLedger(n)
	var p *crew.FuncPool[int]
	var stopAt atomic.Int64
	stopAt.Store(-1)
	var back []int
	var backMu sync.Mutex
	var followed atomic.Int64
	follow := func(try bool) {
		if followed.Add(1) > n/3 {
			return
		}
		i := l.id()
		if i < 0 {
			return
		}
		if try {
			l.settle(i, p.TryInvoke(i))
		} else {
			l.settle(i, p.Invoke(i) == nil)
		}
	}
	var starts atomic.Int64
	var stopped atomic.Bool
	p = crew.NewFunc(3, func(i int) {
		l.ran[i].Add(1)
		if i%7 == 0 {
			time.Sleep(10 * time.Microsecond)
		}
	}, crew.WithQueueSize(4), crew.WithOverflow(crew.DiscardOldest), crew.WithLatencyHistograms(),
		crew.WithDiscardHandler(func(v any) { l.back[v.(int)].Add(1) }),
		crew.WithHooks(crew.Hooks{
			Queued: func(crew.TaskInfo) {
				if s := p.Stats(); s.Running < 0 || s.Waiting < 0 {
					t.Errorf("negative gauge in a Queued hook: %+v", s)
				}
			},
			Started: func(crew.TaskInfo) {
				k := starts.Add(1)
				switch {
				case k%50 == 0:
					p.Resize(1 + int(k/50)%4)
				case k%75 == 0:
					p.SetRateLimit(float64(50000+k), 2)
				case k%101 == 0:
					p.SetRateLimit(math.Inf(1), 1)
				}
				if k == stopAt.Load() {
					stopped.Store(true)
					b := p.StopNow()
					backMu.Lock()
					back = append(back, b...)
					backMu.Unlock()
				}
			},
			Finished:  func(crew.TaskInfo) { follow(true) },
			Discarded: func(crew.TaskInfo) { follow(false) },
		}))
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				if k == n/8 {
					stopAt.CompareAndSwap(-1, starts.Load()+5)
				}
				i := l.id()
				if i < 0 {
					return
				}
				l.settle(i, p.Invoke(i) == nil)
			}
		}()
	}
	awaitReturn(t, "submitters", goRun(wg.Wait))
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	backMu.Lock()
	for _, i := range back {
		l.back[i].Add(1)
	}
	backMu.Unlock()
	ran, dropped := l.check(t, "FuncPool", nil)
	s := p.Stats()
	idleIdentity(t, "FuncPool", s)
	if s.Completed != uint64(ran) || s.Discarded+s.Returned != uint64(dropped) || s.RunTime.Count != uint64(ran) {
		t.Errorf("stats %+v, want Completed %d, Discarded+Returned %d", s, ran, dropped)
	}
	if s.Returned != uint64(len(back)) {
		t.Errorf("Returned %d, but StopNow handed back %d", s.Returned, len(back))
	}
	t.Logf("ran %d, dropped or handed back %d (StopNow called %v, handed back %d); %+v", ran, dropped, stopped.Load(), len(back), s)
}
