package crew_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// pausedFull is a pool (or a sub-pool of a paused pool) under CallerRuns whose one worker is
// held and whose queue of one is full, and whose pool (or parent) is paused: a submit into
// full must wait for Resume before it runs its task on the submitter.
type pausedFull struct {
	paused, full *crew.Pool
	release      func()
}

func newPausedFull(t *testing.T, sub bool, opts ...crew.Option) pausedFull {
	t.Helper()
	opts = append([]crew.Option{crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns)}, opts...)
	var ps pausedFull
	if sub {
		ps.paused = crew.New(1)
		ps.full = ps.paused.Sub(1, opts...)
	} else {
		ps.paused = crew.New(1, opts...)
		ps.full = ps.paused
	}
	t.Cleanup(ps.paused.StopAndWait)
	ps.release = holdWorkers(t, plainPool{ps.full}, 1, 1)
	ps.paused.Pause()
	return ps
}

// notYet fails t if flag is set within 30 ms: what sets it must wait.
func notYet(t *testing.T, what string, flag *atomic.Bool) {
	t.Helper()
	time.Sleep(30 * time.Millisecond)
	if flag.Load() {
		t.Fatalf("%s ran while the pool was paused", what)
	}
}

// CallerRuns doc: with WithMaxWait the submitter first waits up to that long for room, and
// then runs the task itself only when a worker's start could: not while paused.
func TestAdvNewCallerRunsMaxWaitExpiryStillWaitsForResume(t *testing.T) {
	for _, sub := range []bool{false, true} {
		ps := newPausedFull(t, sub, crew.WithMaxWait(time.Millisecond))
		var ran atomic.Bool
		done := goRun(func() { must(t, ps.full.Submit(func() { ran.Store(true) })) })
		notYet(t, "a caller-run task after MaxWait", &ran)
		ps.paused.Resume()
		awaitReturn(t, "Submit after Resume", done)
		if !ran.Load() {
			t.Fatal("task did not run on the caller after Resume")
		}
		ps.release()
		ps.paused.StopAndWait()
		s := ps.full.Stats()
		if s.CallerRan != 1 {
			t.Fatalf("sub %v: CallerRan %d, want 1", sub, s.CallerRan)
		}
		idleIdentity(t, "MaxWait", s)
	}
}

// CallerRuns doc: with WithMaxBlocked, a submitter that finds that many already waiting runs
// its task at once, but a paused pool still holds it until Resume; a Stop meanwhile refuses it.
func TestAdvNewCallerRunsMaxBlockedWaitsForResumeAndStopRefuses(t *testing.T) {
	for _, sub := range []bool{false, true} {
		ps := newPausedFull(t, sub, crew.WithMaxBlocked(0))
		var ran atomic.Bool
		var err error
		done := goRun(func() { err = ps.full.Submit(func() { ran.Store(true) }) })
		notYet(t, "a caller-run task over MaxBlocked", &ran)
		ps.full.Stop() // the sub-pool first: a parent's Stop resumes it before stopping its sub-pools (TestAdvNewCallerRunsParentStopRefusesSubPoolsWaitingSubmitters)
		ps.paused.Stop()
		awaitReturn(t, "Submit after Stop", done)
		if !errors.Is(err, crew.ErrStopped) || ran.Load() {
			t.Fatalf("sub %v: Submit = %v, ran %v; want ErrStopped, unrun", sub, err, ran.Load())
		}
		ps.release()
		ps.paused.StopAndWait()
		s := ps.full.Stats()
		if s.CallerRan != 0 || s.Accepted != 2 || s.Rejected != 0 || s.Canceled != 0 {
			t.Fatalf("sub %v: stats %+v; want 2 accepted, no caller-run, no refusal counted", sub, s)
		}
		idleIdentity(t, "MaxBlocked", s)
	}
}

// CallerRuns doc on a FuncPool: InvokeContext waits for Resume; its context ending returns the
// context's error with the call never made; Invoke then runs once resumed.
func TestAdvNewCallerRunsFuncPoolInvokeWaitsForResume(t *testing.T) {
	var calls sync.Map
	gate := make(chan struct{})
	started := make(chan struct{}, 4)
	p := crew.NewFunc(1, func(i int) {
		calls.Store(i, true)
		if i == 0 {
			started <- struct{}{}
			<-gate
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	must(t, p.Invoke(0))
	<-started
	must(t, p.Invoke(1))
	p.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	done := goRun(func() { err = p.InvokeContext(ctx, 2) })
	stillBlocked(t, "InvokeContext on a paused full pool", done)
	cancel()
	awaitReturn(t, "InvokeContext after cancel", done)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext = %v, want context.Canceled", err)
	}
	if _, ok := calls.Load(2); ok {
		t.Fatal("a canceled InvokeContext's call was made")
	}
	var ran3 atomic.Bool
	done = goRun(func() {
		must(t, p.Invoke(3))
		_, ok := calls.Load(3)
		ran3.Store(ok)
	})
	stillBlocked(t, "Invoke on a paused full pool", done)
	if _, ok := calls.Load(3); ok {
		t.Fatal("Invoke ran its call while paused")
	}
	p.Resume()
	awaitReturn(t, "Invoke after Resume", done)
	if !ran3.Load() {
		t.Fatal("Invoke returned before its call ran on the caller")
	}
	close(gate)
	p.StopAndWait()
	s := p.Stats()
	if s.CallerRan != 1 || s.Canceled != 1 || s.Accepted != 3 {
		t.Fatalf("stats %+v; want 3 accepted, 1 caller-ran, 1 canceled", s)
	}
	idleIdentity(t, "FuncPool", s)
}

// CallerRuns doc and Group.Go, Results.Go, GoContext: their functions wait for Resume too,
// and a Stop meanwhile makes their Wait return ErrStopped with the function unrun.
func TestAdvNewCallerRunsGroupResultsFutureWaitForResumeThenStop(t *testing.T) {
	for _, sub := range []bool{false, true} {
		ps := newPausedFull(t, sub)
		var ran atomic.Int32
		g, _ := ps.full.Group(context.Background())
		r, _ := crew.NewResults[int](context.Background(), ps.full)
		var f *crew.Future[int]
		doneG := goRun(func() { g.Go(func(context.Context) error { ran.Add(1); return nil }) })
		doneR := goRun(func() { r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil }) })
		doneF := goRun(func() {
			f = crew.GoContext(context.Background(), ps.full, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
		})
		time.Sleep(30 * time.Millisecond)
		if ran.Load() != 0 {
			t.Fatalf("sub %v: %d functions ran on their callers while paused", sub, ran.Load())
		}
		ps.full.Stop() // the sub-pool first: a parent's Stop resumes it before stopping its sub-pools (TestAdvNewCallerRunsParentStopRefusesSubPoolsWaitingSubmitters)
		ps.paused.Stop()
		awaitReturn(t, "Group.Go after Stop", doneG)
		awaitReturn(t, "Results.Go after Stop", doneR)
		awaitReturn(t, "GoContext after Stop", doneF)
		if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("sub %v: Group.Wait = %v, want ErrStopped", sub, err)
		}
		if _, err := r.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("sub %v: Results.Wait = %v, want ErrStopped", sub, err)
		}
		if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("sub %v: Future.Wait = %v, want ErrStopped", sub, err)
		}
		if ran.Load() != 0 {
			t.Fatalf("sub %v: %d refused functions ran", sub, ran.Load())
		}
		ps.release()
		ps.paused.StopAndWait()
		s := ps.full.Stats()
		if s.CallerRan != 0 || s.Accepted != 2 {
			t.Fatalf("sub %v: stats %+v; want the 2 held tasks accepted only", sub, s)
		}
		idleIdentity(t, "group", s)
	}
}

// CallerRuns doc and Group.Go: once resumed, a group's function waiting on a paused full
// pool runs on its caller, and Group.Wait returns its error.
func TestAdvNewCallerRunsGroupGoRunsOnResume(t *testing.T) {
	ps := newPausedFull(t, true)
	g, _ := ps.full.Group(context.Background())
	boom := errors.New("boom")
	var ran atomic.Bool
	done := goRun(func() { g.Go(func(context.Context) error { ran.Store(true); return boom }) })
	notYet(t, "Group.Go's function", &ran)
	ps.paused.Resume()
	awaitReturn(t, "Group.Go after Resume", done)
	if !ran.Load() {
		t.Fatal("Group.Go returned before its function ran on the caller")
	}
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, boom) {
		t.Fatalf("Group.Wait = %v, want boom", err)
	}
	ps.release()
	ps.paused.StopAndWait()
	s := ps.full.Stats()
	if s.CallerRan != 1 {
		t.Fatalf("stats %+v; want 1 caller-ran", s)
	}
	idleIdentity(t, "group resume", s)
}

// CallerRuns doc and hooks: a submit waiting for Resume has had its Queued hook called, gets
// no Started hook while paused, and a Stop meanwhile calls Rejected once with ErrStopped.
func TestAdvNewCallerRunsHooksWhileWaitingForResume(t *testing.T) {
	var queued, started, finished, rejectedStopped, rejectedOther atomic.Int32
	hooks := crew.Hooks{
		Queued:   func(crew.TaskInfo) { queued.Add(1) },
		Started:  func(crew.TaskInfo) { started.Add(1) },
		Finished: func(crew.TaskInfo) { finished.Add(1) },
		Rejected: func(err error) {
			if errors.Is(err, crew.ErrStopped) {
				rejectedStopped.Add(1)
			} else {
				rejectedOther.Add(1)
			}
		},
	}
	ps := newPausedFull(t, false, crew.WithHooks(hooks))
	waitFor(t, "the held task's Started hook", func() bool { return started.Load() == 1 })
	var ran atomic.Bool
	var err1, err2 error
	ctx, cancel := context.WithCancel(context.Background())
	d1 := goRun(func() { err1 = ps.full.Submit(func() { ran.Store(true) }) })
	d2 := goRun(func() { err2 = ps.full.SubmitContext(ctx, func() { ran.Store(true) }) })
	waitFor(t, "the Queued hooks", func() bool { return queued.Load() == 4 })
	notYet(t, "a caller-run task", &ran)
	if n := started.Load(); n != 1 {
		t.Fatalf("%d Started hooks while paused, want only the held task's", n)
	}
	cancel()
	awaitReturn(t, "SubmitContext after cancel", d2)
	ps.paused.Stop()
	awaitReturn(t, "Submit after Stop", d1)
	if !errors.Is(err1, crew.ErrStopped) || !errors.Is(err2, context.Canceled) || ran.Load() {
		t.Fatalf("Submit = %v, SubmitContext = %v, ran %v; want ErrStopped, Canceled, unrun", err1, err2, ran.Load())
	}
	ps.release()
	ps.paused.StopAndWait()
	if rejectedStopped.Load() != 1 || rejectedOther.Load() != 1 {
		t.Fatalf("Rejected hooks: %d ErrStopped, %d other; want 1 and 1", rejectedStopped.Load(), rejectedOther.Load())
	}
	if started.Load() != 2 || finished.Load() != 2 {
		t.Fatalf("Started %d, Finished %d; want 2 and 2 (the held tasks)", started.Load(), finished.Load())
	}
	s := ps.full.Stats()
	if s.Canceled != 1 || s.Rejected != 0 || s.CallerRan != 0 {
		t.Fatalf("stats %+v; want 1 canceled, none rejected or caller-ran", s)
	}
	idleIdentity(t, "hooks", s)
}

// CallerRuns doc, under a rate limit of the parent and a pause: the submitter waits for
// Resume, then for a token, and the task starts once.
func TestAdvNewCallerRunsPausedAndRateLimitedParent(t *testing.T) {
	root := crew.New(1, crew.WithRateLimit(1000, 1))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	release := holdWorkers(t, plainPool{sub}, 1, 1)
	root.Pause()
	var ran atomic.Int32
	done := goRun(func() { must(t, sub.Submit(func() { ran.Add(1) })) })
	time.Sleep(30 * time.Millisecond)
	if ran.Load() != 0 {
		t.Fatal("ran while the parent was paused")
	}
	root.Resume()
	awaitReturn(t, "Submit after Resume", done)
	release()
	root.StopAndWait()
	if ran.Load() != 1 {
		t.Fatalf("ran %d times, want 1", ran.Load())
	}
	idleIdentity(t, "rate", sub.Stats())
	idleIdentity(t, "rate root", root.Stats())
}

// Pause doc and Resize, Shutdown, StopNow: neither a Resize nor a growing limit lets a
// caller-run task start while paused; Shutdown and StopNow refuse the waiting submitters
// with ErrStopped, and nothing hangs.
func TestAdvNewCallerRunsResizeShutdownStopNowWhileWaiting(t *testing.T) {
	for _, how := range []string{"Shutdown", "StopNow", "ShutdownEnded"} {
		ps := newPausedFull(t, false)
		var ran atomic.Int32
		errs := make([]error, 4)
		var dones []<-chan struct{}
		for i := range errs {
			dones = append(dones, goRun(func() { errs[i] = ps.full.Submit(func() { ran.Add(1) }) }))
		}
		ps.full.Resize(4)
		time.Sleep(30 * time.Millisecond)
		if ran.Load() != 0 {
			t.Fatalf("%s: %d caller-run tasks ran while paused after Resize", how, ran.Load())
		}
		var back []func()
		switch how {
		case "Shutdown":
			ps.release()
			if err := returnsWithin(t, "Shutdown", func() error { return ps.full.Shutdown(context.Background()) }); err != nil {
				t.Fatalf("Shutdown = %v", err)
			}
		case "ShutdownEnded":
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := returnsWithin(t, "Shutdown", func() error { return ps.full.Shutdown(ctx) }); !errors.Is(err, context.Canceled) {
				t.Fatalf("Shutdown = %v, want Canceled", err)
			}
			ps.release()
		case "StopNow":
			back = ps.full.StopNow()
			ps.release()
		}
		for i, d := range dones {
			awaitReturn(t, how+": a waiting Submit", d)
			if !errors.Is(errs[i], crew.ErrStopped) {
				t.Fatalf("%s: waiting Submit = %v, want ErrStopped", how, errs[i])
			}
		}
		if ran.Load() != 0 {
			t.Fatalf("%s: %d refused tasks ran", how, ran.Load())
		}
		ps.full.StopAndWait()
		s := ps.full.Stats()
		if how == "StopNow" && (len(back) != 1 || s.Returned != 1) {
			t.Fatalf("StopNow handed back %d, stats %+v; want the queued one", len(back), s)
		}
		idleIdentity(t, how, s)
	}
}

// CallerRuns doc: a task that submits into its own full paused pool waits for Resume (the
// running task does not count as a start) and then runs the new task itself; PauseAndWait,
// which waits for that running task, ends by its context meanwhile, and nothing hangs.
func TestAdvNewCallerRunsTaskSubmittingIntoItsOwnPausedPool(t *testing.T) {
	p := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0) // one worker held
	var inner atomic.Bool
	in, goOn := make(chan struct{}), make(chan struct{})
	outer := make(chan struct{})
	must(t, p.Submit(func() {
		defer close(outer)
		close(in)
		<-goOn
		must(t, p.Submit(func() { inner.Store(true) }))
	}))
	<-in
	must(t, p.Submit(func() {})) // the queue of one is full
	p.Pause()
	close(goOn)
	notYet(t, "the inner task", &inner)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := p.PauseAndWait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PauseAndWait = %v, want DeadlineExceeded (the outer task still runs)", err)
	}
	if inner.Load() {
		t.Fatal("inner task ran while paused")
	}
	p.Resume()
	awaitReturn(t, "the outer task", outer)
	if !inner.Load() {
		t.Fatal("inner task never ran")
	}
	release()
	p.StopAndWait()
	s := p.Stats()
	if s.CallerRan != 1 {
		t.Fatalf("stats %+v; want 1 caller-ran", s)
	}
	idleIdentity(t, "own pool", s)
}

// CallerRuns doc and waits that help: a group function submitting with its crew context into
// its own full paused pool waits for Resume, and a Stop meanwhile refuses it; the group's
// Wait returns.
func TestAdvNewCallerRunsHelpingSubmitIntoPausedPoolStop(t *testing.T) {
	p := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0)
	var inner atomic.Bool
	in, goOn := make(chan struct{}), make(chan struct{})
	var innerErr error
	g, _ := p.Group(context.Background())
	g.Go(func(ctx context.Context) error {
		close(in)
		<-goOn
		innerErr = p.SubmitContext(ctx, func() { inner.Store(true) })
		return nil
	})
	<-in
	must(t, p.Submit(func() {})) // the queue of one is full
	p.Pause()
	close(goOn)
	notYet(t, "the inner task", &inner)
	p.Stop()
	if err := returnsWithin(t, "Group.Wait", g.Wait); err != nil {
		t.Fatalf("Group.Wait = %v", err)
	}
	if !errors.Is(innerErr, crew.ErrStopped) || inner.Load() {
		t.Fatalf("inner SubmitContext = %v, ran %v; want ErrStopped, unrun", innerErr, inner.Load())
	}
	release()
	p.StopAndWait()
	idleIdentity(t, "helping", p.Stats())
}

// Pause doc: once Pause has returned, no task starts, a caller-run one included: submitters
// racing Pause on a full CallerRuns pool start no task after it returned.
func TestAdvNewCallerRunsNoTaskBeginsAfterPauseReturns(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	for round := range rounds {
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
		release := holdWorkers(t, plainPool{p}, 1, 1)
		var pausedNow atomic.Bool
		var late, ran atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 20 {
					if p.Submit(func() {
						if pausedNow.Load() {
							late.Add(1)
						}
						ran.Add(1)
					}) != nil {
						return
					}
				}
			}()
		}
		close(start)
		for ran.Load() == 0 {
			time.Sleep(10 * time.Microsecond)
		}
		p.Pause()
		pausedNow.Store(true)
		time.Sleep(time.Millisecond)
		pausedNow.Store(false) // Stop resumes: a start after it is fine
		p.Stop()
		wg.Wait()
		release()
		p.StopAndWait()
		// A task starts when its submitter takes it to run, under the pool's lock, which
		// Pause takes too; one taken just before Pause may enter its function a moment after
		// Pause returned: at most one per submitter.
		if n := late.Load(); n > 4 {
			t.Fatalf("round %d: %d caller-run tasks began after Pause returned, more than the 4 submitters", round, n)
		}
	}
}

// giveUp calls Shutdown on p with a context that has ended, and fails t unless it returns
// ctx.Err() (p has not drained) within 10 s.
func giveUp(t *testing.T, p *crew.Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := returnsWithin(t, "Shutdown", func() error { return p.Shutdown(ctx) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown = %v, want context.Canceled", err)
	}
}

// Shutdown doc: once it gives up, the functions with a context still queued on the pool and
// on its sub-pools of sub-pools fail with ErrStopped at once, while a plain task that never
// returns holds the only worker: groups, Results, futures, Map, ForEach, MapSeq and
// MapSeqUnordered return; plain and keyed tasks still run once the worker is free; the
// skipped places count as Waiting until a worker drops them, then in Skipped.
func TestAdvNewShutdownGivenUpFailsQueuedFunctionsAcrossTheTreeAtOnce(t *testing.T) {
	root := crew.New(1)
	sub := root.Sub(1)
	subsub := sub.Sub(1)
	release := holdWorkers(t, plainPool{root}, 1, 0)
	var fnRan, plainRan, keyedRan atomic.Int32
	fn := func(context.Context) error { fnRan.Add(1); return nil }
	bg := context.Background()
	g, _ := subsub.Group(bg)
	for range 3 {
		g.Go(fn)
	}
	r, _ := crew.NewResults[int](bg, sub)
	for range 2 {
		r.Go(func(ctx context.Context) (int, error) { return 1, fn(ctx) })
	}
	f := crew.GoContext(bg, root, func(ctx context.Context) (int, error) { return 1, fn(ctx) })
	must(t, subsub.Submit(func() { plainRan.Add(1) }))
	k := crew.NewKeyed[int](sub)
	for i := range 4 {
		must(t, k.Submit(i%2, func() { keyedRan.Add(1) }))
	}
	errs := make(chan error, 8)
	var calls sync.WaitGroup
	// What waits before the calls: the only worker is held, so nothing leaves the queues.
	before := []int{root.Stats().Waiting, sub.Stats().Waiting, subsub.Stats().Waiting}
	call := func(f func() error) {
		calls.Add(1)
		go func() { defer calls.Done(); errs <- f() }()
	}
	call(func() error {
		_, err := crew.Map(bg, sub, []int{1, 2, 3}, func(ctx context.Context, int int) (int, error) { return 0, fn(ctx) })
		return err
	})
	call(func() error {
		return crew.ForEach(bg, subsub, countTo(3), func(ctx context.Context, _ int) error { return fn(ctx) })
	})
	seq := func(ordered bool) func() error {
		return func() error {
			m := crew.MapSeq[int, int]
			if !ordered {
				m = crew.MapSeqUnordered[int, int]
			}
			for _, err := range m(bg, root, countTo(3), func(ctx context.Context, _ int) (int, error) { return 0, fn(ctx) }) {
				if err != nil {
					return err
				}
			}
			return nil
		}
	}
	call(seq(true))
	call(seq(false))
	// Each call queues a function at least before the Shutdown: the two ranges on root, Map
	// on sub, ForEach on subsub.
	waitFor(t, "the calls to queue some of their functions", func() bool {
		return root.Stats().Waiting >= before[0]+2 && sub.Stats().Waiting >= before[1]+1 &&
			subsub.Stats().Waiting >= before[2]+1
	})
	giveUp(t, root)
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Group.Wait = %v, want ErrStopped", err)
	}
	if err := returnsWithin(t, "Results.Wait", func() error { _, err := r.Wait(); return err }); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Results.Wait = %v, want ErrStopped", err)
	}
	if err := returnsWithin(t, "Future.Wait", func() error { _, err := f.Wait(); return err }); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Future.Wait = %v, want ErrStopped", err)
	}
	awaitReturn(t, "Map, ForEach, MapSeq, MapSeqUnordered", goRun(calls.Wait))
	close(errs)
	for err := range errs {
		if !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("a call ended with %v, want ErrStopped", err)
		}
	}
	if n := fnRan.Load(); n != 0 {
		t.Fatalf("%d functions ran while the only worker was held", n)
	}
	for _, p := range []*crew.Pool{root, sub, subsub} {
		if s := p.Stats(); s.Skipped != 0 || s.Waiting == 0 {
			t.Fatalf("before a worker reached them: %+v; want the skipped places Waiting, none in Skipped", s)
		}
	}
	release()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	if fnRan.Load() != 0 || plainRan.Load() != 1 || keyedRan.Load() != 4 {
		t.Fatalf("ran: %d functions, %d plain, %d keyed; want 0, 1, 4", fnRan.Load(), plainRan.Load(), keyedRan.Load())
	}
	var skipped uint64
	for name, p := range map[string]*crew.Pool{"root": root, "sub": sub, "subsub": subsub} {
		s := p.Stats()
		idleIdentity(t, name, s)
		skipped += s.Skipped
	}
	if skipped < 7 {
		t.Fatalf("Skipped over the tree %d, want at least the 7 functions of the group, results and future", skipped)
	}
}

// Shutdown doc: a sub-pool's Shutdown that gives up fails its queued functions at once even
// when they wait, carried by its workers, in the queue of a paused parent; their places count
// as Waiting until the parent is resumed and a worker drops them.
func TestAdvNewShutdownOfSubPoolUnderPausedParentFailsAtOnce(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(2)
	root.Pause()
	var ran atomic.Int32
	g, _ := sub.Group(context.Background())
	for range 4 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	futs := make([]*crew.Future[int], 3)
	for i := range futs {
		futs[i] = crew.GoContext(context.Background(), sub, func(context.Context) (int, error) { ran.Add(1); return i, nil })
	}
	giveUp(t, sub)
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Group.Wait = %v, want ErrStopped", err)
	}
	for _, f := range futs {
		if err := returnsWithin(t, "Future.Wait", func() error { _, err := f.Wait(); return err }); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("Future.Wait = %v, want ErrStopped", err)
		}
	}
	if s := sub.Stats(); s.Waiting != 7 || s.Skipped != 0 {
		t.Fatalf("sub under a paused parent: %+v; want 7 Waiting, 0 Skipped", s)
	}
	root.Resume()
	awaitStats(t, sub, "the skipped places dropped", func(s crew.Stats) bool { return s.Skipped == 7 && s.Waiting == 0 })
	root.StopAndWait()
	if ran.Load() != 0 {
		t.Fatalf("%d skipped functions ran", ran.Load())
	}
	idleIdentity(t, "sub", sub.Stats())
	idleIdentity(t, "root", root.Stats())
}

// Shutdown doc and Future.Cancel: a Cancel racing a Shutdown that gives up decides each
// function once: Cancel reports true exactly when Wait returns context.Canceled, otherwise
// Wait returns ErrStopped; every function counts once in Skipped.
func TestAdvNewShutdownGivingUpRacingCancelDecidesOnce(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		p := crew.New(1)
		sub := p.Sub(1)
		release := holdWorkers(t, plainPool{p}, 1, 0)
		const n = 16
		futs := make([]*crew.Future[int], n)
		for i := range futs {
			q := p
			if i%2 == 1 {
				q = sub
			}
			futs[i] = crew.GoContext(context.Background(), q, func(context.Context) (int, error) { return i, nil })
		}
		canceled := make([]bool, n)
		start := make(chan struct{})
		done := goRun(func() {
			<-start
			for i, f := range futs {
				canceled[i] = f.Cancel()
			}
		})
		close(start)
		giveUp(t, p)
		awaitReturn(t, "Cancels", done)
		for i, f := range futs {
			_, err := f.Wait()
			want := crew.ErrStopped
			if canceled[i] {
				want = context.Canceled
			}
			if !errors.Is(err, want) || (canceled[i] && errors.Is(err, crew.ErrStopped)) {
				t.Fatalf("round %d: future %d: Cancel %v, Wait = %v; want %v", round, i, canceled[i], err, want)
			}
		}
		release()
		p.StopAndWait()
		sp, ss := p.Stats(), sub.Stats()
		idleIdentity(t, "root", sp)
		idleIdentity(t, "sub", ss)
		if got := sp.Skipped + ss.Skipped; got < n {
			t.Fatalf("round %d: Skipped %d over the tree, want at least %d", round, got, n)
		}
	}
}

// Shutdown and StopNow docs: a StopNow right after a Shutdown that gave up hands back the
// queued plain tasks, in order, and none of the skipped functions; those count in Skipped,
// never in Returned, and fail once.
func TestAdvNewStopNowAfterShutdownGaveUp(t *testing.T) {
	p := crew.New(1)
	sub := p.Sub(1)
	release := holdWorkers(t, plainPool{p}, 1, 0)
	var order []int
	var fnRan atomic.Int32
	g, _ := sub.Group(context.Background())
	for i := range 6 {
		if i%2 == 0 {
			must(t, sub.Submit(func() { order = append(order, i) }))
		} else {
			g.Go(func(context.Context) error { fnRan.Add(1); return nil })
		}
	}
	futs := []*crew.Future[int]{
		crew.GoContext(context.Background(), p, func(context.Context) (int, error) { fnRan.Add(1); return 0, nil }),
	}
	giveUp(t, p)
	back := p.StopNow()
	if len(back) != 3 {
		t.Fatalf("StopNow handed back %d tasks, want the 3 plain ones", len(back))
	}
	for _, f := range back {
		f()
	}
	if len(order) != 3 || order[0] != 0 || order[1] != 2 || order[2] != 4 {
		t.Fatalf("handed back in order %v, want [0 2 4]", order)
	}
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Group.Wait = %v, want ErrStopped", err)
	}
	if _, err := futs[0].Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Future.Wait = %v, want ErrStopped", err)
	}
	release()
	p.StopAndWait()
	if fnRan.Load() != 0 {
		t.Fatalf("%d skipped functions ran", fnRan.Load())
	}
	sp, ss := p.Stats(), sub.Stats()
	idleIdentity(t, "root", sp)
	idleIdentity(t, "sub", ss)
	if ss.Returned != 3 || ss.Skipped != 3 || sp.Skipped < 1 {
		t.Fatalf("sub %+v, root %+v; want the sub's 3 plain tasks Returned, its 3 functions and the root's future Skipped", ss, sp)
	}
}

// Shutdown doc and waits that help: a function waiting for its own nested group, helping,
// sees its running nested function's context end with ErrStopped, and the nested functions
// still queued are skipped, so every Wait returns while a plain task holds the other worker.
func TestAdvNewShutdownGaveUpEndsAHelpingWait(t *testing.T) {
	p := crew.New(2)
	release := holdWorkers(t, plainPool{p}, 1, 0)
	var nestedRan atomic.Int32
	in := make(chan struct{})
	var nestedErr error
	g, _ := p.Group(context.Background())
	g.Go(func(ctx context.Context) error {
		g2, _ := p.Group(ctx)
		for range 4 {
			g2.Go(func(ctx context.Context) error {
				if nestedRan.Add(1) == 1 {
					close(in)
				}
				<-ctx.Done()
				return context.Cause(ctx)
			})
		}
		nestedErr = g2.Wait()
		return nestedErr
	})
	awaitReturn(t, "a nested function to run", in)
	giveUp(t, p)
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Group.Wait = %v, want ErrStopped", err)
	}
	if n := nestedRan.Load(); n != 1 {
		t.Fatalf("%d nested functions ran, want only the one running when Shutdown gave up", n)
	}
	release()
	p.StopAndWait()
	s := p.Stats()
	idleIdentity(t, "helping", s)
	if s.Skipped != 3 {
		t.Fatalf("stats %+v; want the 3 queued nested functions Skipped", s)
	}
}

// doomedUnderParentRate builds root (one worker, rate 8/s, burst 1), with its worker held by a
// plain task, queues n functions on q (a pool of root's tree) that doom makes never run, then
// a plain task of root behind them, and reports how long that task waited after the worker
// was freed. Doomed functions take no token of the parent's rate: the live task waits at most
// about one token (125 ms), not n of them (n/8 s).
func doomedUnderParentRate(t *testing.T, n int, tree func(root *crew.Pool) *crew.Pool,
	queue func(q *crew.Pool, i int) func() error, doom func(root, q *crew.Pool)) time.Duration {
	t.Helper()
	root := crew.New(1, crew.WithRateLimit(8, 1))
	defer root.StopAndWait()
	q := tree(root)
	release := holdWorkers(t, plainPool{root}, 1, 0)
	waits := make([]func() error, n)
	for i := range waits {
		waits[i] = queue(q, i)
	}
	doom(root, q)
	live := make(chan time.Time, 1)
	must(t, root.Submit(func() { live <- time.Now() }))
	freed := time.Now()
	release()
	var at time.Time
	select {
	case at = <-live:
	case <-time.After(10 * time.Second):
		t.Fatal("the live task did not start within 10 s")
	}
	for _, w := range waits {
		if err := w(); err == nil {
			t.Fatal("a doomed function ran")
		}
	}
	return at.Sub(freed)
}

// Rate limit doc and Future.Cancel, group cancellation, Shutdown: a sub-pool's (and a sub-pool
// of a sub-pool's) canceled or skipped functions take no token of a parent's rate limit.
func TestAdvNewDoomedSubPoolFunctionsTakeNoParentRateToken(t *testing.T) {
	const n = 24 // at 8/s, 3 s if each took a token
	trees := map[string]func(*crew.Pool) *crew.Pool{
		"sub":    func(r *crew.Pool) *crew.Pool { return r.Sub(2) },
		"subsub": func(r *crew.Pool) *crew.Pool { return r.Sub(2).Sub(1) },
	}
	var futs []*crew.Future[int]
	for treeName, tree := range trees {
		// Future.Cancel.
		futs = nil
		d := doomedUnderParentRate(t, n, tree, func(q *crew.Pool, i int) func() error {
			f := crew.GoContext(context.Background(), q, func(context.Context) (int, error) { return i, nil })
			futs = append(futs, f)
			return func() error { _, err := f.Wait(); return err }
		}, func(_, _ *crew.Pool) {
			for _, f := range futs {
				if !f.Cancel() {
					t.Fatal("Cancel of a queued function reported false")
				}
			}
		})
		if d > 2*time.Second {
			t.Fatalf("%s/Cancel: the live task waited %v behind %d canceled functions", treeName, d, n)
		}
		// A group's context ending.
		var g *crew.Group
		ctx, cancel := context.WithCancel(context.Background())
		d = doomedUnderParentRate(t, n, tree, func(q *crew.Pool, i int) func() error {
			if i == 0 {
				g, _ = q.Group(ctx)
			}
			g.Go(func(context.Context) error { return nil })
			return func() error {
				if err := g.Wait(); err != nil {
					return err
				}
				return errors.New("group ended without error")
			}
		}, func(_, _ *crew.Pool) { cancel() })
		if d > 2*time.Second {
			t.Fatalf("%s/group context: the live task waited %v behind %d skipped functions", treeName, d, n)
		}
		// A Shutdown of the sub-pool that gave up.
		d = doomedUnderParentRate(t, n, tree, func(q *crew.Pool, i int) func() error {
			f := crew.GoContext(context.Background(), q, func(context.Context) (int, error) { return i, nil })
			return func() error { _, err := f.Wait(); return err }
		}, func(_, q *crew.Pool) { giveUp(t, q) })
		if d > 2*time.Second {
			t.Fatalf("%s/Shutdown: the live task waited %v behind %d skipped functions", treeName, d, n)
		}
	}
}

// DiscardOldest doc with priority levels: the task dropped is the longest-waiting of the
// lowest level whose longest-waiting task is not a sub-pool's worker; sub-pools' workers
// (here at levels above and below 0) are never dropped, and when every level's head is one,
// the submit waits for room as under Block, until a Stop refuses it.
func TestAdvNewDiscardOldestWithLevelsDropsFromLowestDroppableLevel(t *testing.T) {
	var mu sync.Mutex
	var dropped, ranOrder []string
	var handling atomic.Bool // set while the discard handler calls a dropped task
	rec := func(name string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			if handling.Load() {
				dropped = append(dropped, name)
			} else {
				ranOrder = append(ranOrder, name)
			}
		}
	}
	root := crew.New(1, crew.WithQueueSize(4), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) {
			handling.Store(true)
			defer handling.Store(false)
			v.(func())()
		}))
	defer root.StopAndWait()
	hi := root.Sub(1, crew.WithPriority(5))
	lo := root.Sub(1, crew.WithPriority(-5))
	release := holdWorkers(t, plainPool{root}, 1, 0)
	must(t, lo.Submit(rec("lo1"))) // lo's worker at level -5
	must(t, root.Submit(rec("a"))) // level 0
	must(t, hi.Submit(rec("hi1"))) // hi's worker at level 5
	must(t, root.Submit(rec("b"))) // level 0; the queue of 4 is full
	must(t, root.Submit(rec("c"))) // drops a: level -5's head is a worker
	must(t, root.Submit(rec("d"))) // drops b
	mu.Lock()
	got := append([]string(nil), dropped...)
	mu.Unlock()
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("dropped %v, want [a b]", got)
	}
	if s := root.Stats(); s.Discarded != 2 || s.Waiting != 4 {
		t.Fatalf("stats %+v; want 2 discarded, 4 waiting", s)
	}
	release()
	root.Wait()
	waitFor(t, "the sub-pools' tasks", func() bool { mu.Lock(); defer mu.Unlock(); return len(ranOrder) == 4 })
	mu.Lock()
	order := append([]string(nil), ranOrder...)
	mu.Unlock()
	want := []string{"hi1", "c", "d", "lo1"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("ran %v, want %v", order, want)
		}
	}
	root.StopAndWait()
	for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "lo": lo} {
		idleIdentity(t, name, p.Stats())
	}
}

// DiscardOldest doc: when every level's longest-waiting task is a sub-pool's worker (level 0's
// included, from a sub-pool without a level), the submit drops nothing and waits for room;
// it is accepted once a worker frees room, and a Stop meanwhile refuses it.
func TestAdvNewDiscardOldestWaitsWhenEveryLevelHeadIsASubPoolWorker(t *testing.T) {
	for _, end := range []string{"room", "Stop"} {
		var discards atomic.Int32
		root := crew.New(1, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest),
			crew.WithDiscardHandler(func(any) { discards.Add(1) }))
		hi := root.Sub(1, crew.WithPriority(3))
		mid := root.Sub(1) // level 0
		lo := root.Sub(1, crew.WithPriority(-3))
		release := holdWorkers(t, plainPool{root}, 1, 0)
		var ran atomic.Int32
		count := func() { ran.Add(1) }
		must(t, hi.Submit(count))
		must(t, mid.Submit(count))
		must(t, lo.Submit(count)) // three workers, one per level: the queue of 3 is full
		var err error
		done := goRun(func() { err = root.Submit(count) })
		stillBlocked(t, "a DiscardOldest submit with only sub-pools' workers queued", done)
		if discards.Load() != 0 {
			t.Fatal("a sub-pool's worker was dropped")
		}
		switch end {
		case "room":
			release()
			awaitReturn(t, "the waiting submit", done)
			must(t, err)
			root.StopAndWait()
			if ran.Load() != 4 {
				t.Fatalf("ran %d tasks, want 4", ran.Load())
			}
		case "Stop":
			root.Stop()
			awaitReturn(t, "the waiting submit", done)
			if !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("Submit = %v, want ErrStopped", err)
			}
			release()
			root.StopAndWait()
			if ran.Load() != 3 {
				t.Fatalf("ran %d tasks, want the 3 sub-pools' tasks", ran.Load())
			}
		}
		if discards.Load() != 0 {
			t.Fatalf("%s: %d tasks dropped, want none", end, discards.Load())
		}
		for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "mid": mid, "lo": lo} {
			idleIdentity(t, end+" "+name, p.Stats())
		}
	}
}

// DiscardOldest doc with a sub-pool of a sub-pool: a sub-pool under DiscardOldest whose own
// queue holds its leveled sub-pools' workers drops its own longest-waiting task, never a
// worker, and a dropped function of a group fails with ErrDiscarded.
func TestAdvNewDiscardOldestOnSubPoolWithLeveledSubPools(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest))
	hi := sub.Sub(1, crew.WithPriority(1))
	lo := sub.Sub(1, crew.WithPriority(-1))
	release := holdWorkers(t, plainPool{sub}, 1, 0)
	var ran atomic.Int32
	count := func() { ran.Add(1) }
	must(t, lo.Submit(count))
	g, _ := sub.Group(context.Background())
	g.Go(func(context.Context) error { ran.Add(1); return nil }) // level 0 of sub
	must(t, hi.Submit(count))                                    // sub's queue of 3 is full
	must(t, sub.Submit(count))                                   // drops the group's function
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrDiscarded) {
		t.Fatalf("Group.Wait = %v, want ErrDiscarded", err)
	}
	release()
	root.StopAndWait()
	if ran.Load() != 3 {
		t.Fatalf("ran %d, want the 3 tasks not dropped", ran.Load())
	}
	s := sub.Stats()
	if s.Discarded != 1 {
		t.Fatalf("sub stats %+v; want 1 discarded", s)
	}
	for name, p := range map[string]*crew.Pool{"root": root, "sub": sub, "hi": hi, "lo": lo} {
		idleIdentity(t, name, p.Stats())
	}
}

// orderRec records the order in which named tasks begin.
type orderRec struct {
	mu    sync.Mutex
	names []string
}

func (o *orderRec) task(name string, then func()) func() {
	return func() {
		o.mu.Lock()
		o.names = append(o.names, name)
		o.mu.Unlock()
		if then != nil {
			then()
		}
	}
}

func (o *orderRec) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.names...)
}

// Keyed and SubmitN docs: a key's turn does not go on to the key's next task while a weighted
// task that does not fit waits at the head of the pool's queue (starts stay first in, first
// out), on the pool itself, on a sub-pool (the heavy task the sub-pool's), and with the heavy
// task submitted to the parent of the Keyed's sub-pool; and the weights running never exceed
// the limit.
func TestAdvNewKeyedTurnDoesNotOvertakeWeightedHead(t *testing.T) {
	for _, shape := range []string{"pool", "sub-pool", "parent's heavy task"} {
		t.Run(shape, func(t *testing.T) {
			if shape == "parent's heavy task" {
			}
			root := crew.New(2)
			defer root.StopAndWait()
			keyedOn, heavyOn := root, root
			switch shape {
			case "sub-pool":
				keyedOn = root.Sub(2)
				heavyOn = keyedOn
			case "parent's heavy task":
				keyedOn = root.Sub(2)
			}
			var slots, peak atomic.Int32
			hold := func(n int32) func() {
				if v := slots.Add(n); v > peak.Load() {
					peak.Store(v)
				}
				return func() { slots.Add(-n) }
			}
			var rec orderRec
			k := crew.NewKeyed[int](keyedOn)
			gate := make(chan struct{})
			open := sync.OnceFunc(func() { close(gate) })
			defer open()
			in := make(chan struct{})
			must(t, k.Submit(1, rec.task("k1", func() { defer hold(1)(); close(in); <-gate })))
			<-in
			must(t, heavyOn.SubmitN(2, rec.task("heavy", func() { defer hold(2)(); time.Sleep(5 * time.Millisecond) })))
			awaitStats(t, heavyOn, "the heavy task queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
			must(t, k.Submit(1, rec.task("k2", func() { defer hold(1)() })))
			open()
			awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
			awaitReturn(t, "Wait", goRun(root.Wait))
			got := rec.get()
			if len(got) != 3 || got[1] != "heavy" || got[2] != "k2" {
				t.Fatalf("began in order %v, want [k1 heavy k2]: the key's turn overtook the weighted task", got)
			}
			if p := peak.Load(); p > 2 {
				t.Fatalf("%d slots held at once, over the limit of 2", p)
			}
		})
	}
}

// SubmitN doc and Pool.Sub: a sub-pool's worker going on to its next task does not overtake a
// weighted task of the parent that heads the parent's queue: a task of the sub-pool submitted
// after the heavy one begins after it.
func TestAdvNewSubPoolNextTaskDoesNotOvertakeParentsWeightedHead(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(1)
	var rec orderRec
	gate := make(chan struct{})
	in := make(chan struct{})
	must(t, sub.Submit(rec.task("a", func() { close(in); <-gate })))
	<-in
	must(t, root.SubmitN(2, rec.task("heavy", nil)))
	must(t, sub.Submit(rec.task("b", nil)))
	close(gate)
	awaitReturn(t, "Wait", goRun(root.Wait))
	if got := rec.get(); len(got) != 3 || got[1] != "heavy" {
		t.Fatalf("began in order %v, want [a heavy b]", got)
	}
}

// NewKeyed doc: it panics, naming the call, if any option other than WithQueueSize and
// WithNonBlocking sets anything; those two (and WithOverflow(Reject), their shorthand's
// equal) are taken, alone and together, and a nil option is ignored.
func TestAdvNewNewKeyedPanicsOnEveryOtherOption(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	ctx := context.Background()
	others := map[string]crew.Option{
		"WithMinWorkers":           crew.WithMinWorkers(1),
		"WithIdleTimeout":          crew.WithIdleTimeout(time.Second),
		"WithIdleTimeout(0)":       crew.WithIdleTimeout(0),
		"WithPanicHandler":         crew.WithPanicHandler(func(any, []byte) {}),
		"WithPanicHandler(nil)":    crew.WithPanicHandler(nil),
		"WithContext":              crew.WithContext(ctx),
		"WithoutPanicRecovery":     crew.WithoutPanicRecovery(),
		"WithHooks":                crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) {}}),
		"WithHooks(empty)":         crew.WithHooks(crew.Hooks{}),
		"WithLatencyHistograms":    crew.WithLatencyHistograms(),
		"WithOverflow(CallerRuns)": crew.WithOverflow(crew.CallerRuns),
		"WithOverflow(Discard)":    crew.WithOverflow(crew.DiscardOldest),
		"WithMaxWait":              crew.WithMaxWait(time.Second),
		"WithMaxBlocked":           crew.WithMaxBlocked(1),
		"WithMaxBlocked(0)":        crew.WithMaxBlocked(0),
		"WithDiscardHandler":       crew.WithDiscardHandler(func(any) {}),
		"WithRateLimit":            crew.WithRateLimit(10, 1),
		"WithPriority":             crew.WithPriority(1),
		"WithPriority(0)":          crew.WithPriority(0),
		"WithAdaptiveLimit":        crew.WithAdaptiveLimit(1),
		"WithTaskTimeout":          crew.WithTaskTimeout(time.Second),
	}
	for name, opt := range others {
		combos := [][]crew.Option{{opt}, {crew.WithQueueSize(2), opt}}
		if !strings.HasPrefix(name, "WithOverflow") {
			// WithNonBlocking given after WithOverflow replaces the policy: the last wins.
			combos = append(combos, []crew.Option{opt, crew.WithNonBlocking()})
		}
		for _, opts := range combos {
			func() {
				defer func() {
					r := recover()
					msg, _ := r.(string)
					if r == nil || !strings.HasPrefix(msg, "crew: NewKeyed") {
						t.Errorf("NewKeyed with %s: recovered %v, want a panic naming NewKeyed", name, r)
					}
				}()
				crew.NewKeyed[int](p, opts...)
			}()
		}
	}
	for name, opts := range map[string][]crew.Option{
		"none":                 nil,
		"nil":                  {nil},
		"WithQueueSize":        {crew.WithQueueSize(1)},
		"WithNonBlocking":      {crew.WithNonBlocking()},
		"both":                 {crew.WithQueueSize(1), crew.WithNonBlocking()},
		"WithOverflow(Reject)": {crew.WithQueueSize(1), crew.WithOverflow(crew.Reject)},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("NewKeyed with %s panicked: %v", name, r)
				}
			}()
			k := crew.NewKeyed[int](p, opts...)
			must(t, k.Submit(1, func() {}))
			k.Wait()
		}()
	}
	// The two that apply do apply: a Keyed with a queue of one, non-blocking, refuses the
	// second waiting task.
	k := crew.NewKeyed[int](p, crew.WithQueueSize(1), crew.WithNonBlocking())
	gate := make(chan struct{})
	in := make(chan struct{})
	must(t, k.Submit(1, func() { close(in); <-gate }))
	<-in
	must(t, k.Submit(1, func() {}))
	if err := k.Submit(1, func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Errorf("Submit into a full non-blocking Keyed = %v, want ErrQueueFull", err)
	}
	close(gate)
	k.Wait()
}

// CallerRuns and WithContext docs: a submitter waiting for Resume on a paused full pool (or a
// sub-pool of one) returns ErrStopped when the pool's context ends, or when only the sub-pool
// is stopped, and its task never runs.
func TestAdvNewCallerRunsWaitingForResumeEndsWithPoolContextOrSubStop(t *testing.T) {
	for _, how := range []string{"context", "sub Stop"} {
		ctx, cancel := context.WithCancel(context.Background())
		root := crew.New(1, crew.WithContext(ctx))
		sub := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
		release := holdWorkers(t, plainPool{sub}, 1, 1)
		root.Pause()
		var ran atomic.Bool
		var err error
		done := goRun(func() { err = sub.Submit(func() { ran.Store(true) }) })
		notYet(t, "the caller-run task", &ran)
		if how == "context" {
			cancel()
		} else {
			sub.Stop()
		}
		awaitReturn(t, how+": the waiting Submit", done)
		if !errors.Is(err, crew.ErrStopped) || ran.Load() {
			t.Fatalf("%s: Submit = %v, ran %v; want ErrStopped, unrun", how, err, ran.Load())
		}
		release()
		root.Resume()
		root.StopAndWait()
		cancel()
		idleIdentity(t, how, sub.Stats())
	}
}

// Shutdown doc: a sub-pool's Shutdown that gives up skips only its own tree's functions: the
// parent's functions queued beside the sub-pool's workers still run, and the parent's group
// succeeds.
func TestAdvNewShutdownOfSubPoolGivingUpLeavesParentsFunctions(t *testing.T) {
	root := crew.New(1)
	sub := root.Sub(1)
	release := holdWorkers(t, plainPool{root}, 1, 0)
	var rootRan, subRan atomic.Int32
	gr, _ := root.Group(context.Background())
	gs, _ := sub.Group(context.Background())
	for range 3 {
		gr.Go(func(context.Context) error { rootRan.Add(1); return nil })
		gs.Go(func(context.Context) error { subRan.Add(1); return nil })
	}
	giveUp(t, sub)
	if err := returnsWithin(t, "the sub-pool's Group.Wait", gs.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("sub Group.Wait = %v, want ErrStopped", err)
	}
	release()
	if err := returnsWithin(t, "the parent's Group.Wait", gr.Wait); err != nil {
		t.Fatalf("parent Group.Wait = %v, want nil", err)
	}
	root.StopAndWait()
	if rootRan.Load() != 3 || subRan.Load() != 0 {
		t.Fatalf("ran %d of the parent's, %d of the sub-pool's; want 3 and 0", rootRan.Load(), subRan.Load())
	}
	idleIdentity(t, "root", root.Stats())
	s := sub.Stats()
	idleIdentity(t, "sub", s)
	if s.Skipped != 3 {
		t.Fatalf("sub stats %+v; want 3 skipped", s)
	}
}

// CallerRuns, Pause and exactly-once: submitters into full CallerRuns pools (a pool and a
// sub-pool) under a storm of pauses and rate changes, then Stop: every submit that returned nil
// ran its task exactly once, every refused one never, and each pool's Stats add up at idle.
func TestAdvNewCallerRunsPauseStormExactlyOnce(t *testing.T) {
	const submitters = 8
	each := 60
	if testing.Short() {
		each = 20
	}
	root := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns))
	sub := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	runs := make([]atomic.Int32, submitters*each)
	accepted := make([]atomic.Bool, submitters*each)
	stop := make(chan struct{})
	var storm sync.WaitGroup
	pauseStorm(&storm, stop, time.Millisecond, root, sub)
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := root
			if s%2 == 1 {
				q = sub
			}
			for i := range each {
				n := s*each + i
				if q.Submit(func() { runs[n].Add(1); time.Sleep(50 * time.Microsecond) }) == nil {
					accepted[n].Store(true)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	storm.Wait()
	root.Stop()
	awaitReturn(t, "the submitters", goRun(wg.Wait))
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	for n := range runs {
		want := int32(0)
		if accepted[n].Load() {
			want = 1
		}
		if got := runs[n].Load(); got != want {
			t.Fatalf("task %d: accepted %v, ran %d times", n, accepted[n].Load(), got)
		}
	}
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// Shutdown and Pause docs: a paused sub-pool's queued functions are skipped at once by a
// Shutdown of its parent that gives up, while a plain task holds the parent's only worker;
// its plain tasks still run once that worker is free, and nothing hangs.
func TestAdvNewShutdownGivenUpSkipsAPausedSubPoolsFunctions(t *testing.T) {
	root := crew.New(1)
	sub := root.Sub(2)
	release := holdWorkers(t, plainPool{root}, 1, 0)
	sub.Pause()
	var fnRan, plainRan atomic.Int32
	g, _ := sub.Group(context.Background())
	for i := range 4 {
		g.Go(func(context.Context) error { fnRan.Add(1); return nil })
		if i%2 == 0 {
			must(t, sub.Submit(func() { plainRan.Add(1) }))
		}
	}
	giveUp(t, root)
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Group.Wait = %v, want ErrStopped", err)
	}
	if s := sub.Stats(); s.Waiting != 6 || s.Skipped != 0 {
		t.Fatalf("sub %+v; want its 6 tasks Waiting, none Skipped yet", s)
	}
	release()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	if fnRan.Load() != 0 || plainRan.Load() != 2 {
		t.Fatalf("ran %d functions, %d plain tasks; want 0 and 2", fnRan.Load(), plainRan.Load())
	}
	s := sub.Stats()
	idleIdentity(t, "sub", s)
	if s.Skipped != 4 || s.Completed != 2 {
		t.Fatalf("sub %+v; want 4 skipped, 2 completed", s)
	}
}

// DiscardOldest doc and Keyed: with leveled sub-pools' workers at the heads of the other
// levels, the task dropped is a key's turn waiting at level 0; its keyed tasks go to the
// discard handler, count in Keyed.Stats' Discarded, never run, and the key runs later tasks.
func TestAdvNewDiscardOldestWithLevelsDropsAKeysTurn(t *testing.T) {
	var handled atomic.Int32
	root := crew.New(1, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { handled.Add(1) }))
	defer root.StopAndWait()
	hi := root.Sub(1, crew.WithPriority(2))
	lo := root.Sub(1, crew.WithPriority(-2))
	release := holdWorkers(t, plainPool{root}, 1, 0)
	var ran atomic.Int32
	count := func() { ran.Add(1) }
	must(t, lo.Submit(count))
	k := crew.NewKeyed[int](root)
	var keyedRan atomic.Int32
	must(t, k.Submit(7, func() { keyedRan.Add(1) }))
	must(t, k.Submit(7, func() { keyedRan.Add(1) })) // waits in the key's turn
	must(t, hi.Submit(count))                        // the queue of 3 is full
	must(t, root.Submit(count))                      // drops the key's turn
	if h := handled.Load(); h != 2 {
		t.Fatalf("discard handler got %d tasks, want the key's 2", h)
	}
	must(t, k.Submit(7, func() { keyedRan.Add(100) }))
	release()
	awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
	root.StopAndWait()
	if keyedRan.Load() != 100 || ran.Load() != 3 {
		t.Fatalf("keyed ran %d (want only the later task, 100), plain ran %d (want 3)", keyedRan.Load(), ran.Load())
	}
	ks := k.Stats()
	if ks.Discarded != 2 {
		t.Fatalf("Keyed.Stats %+v; want 2 discarded", ks)
	}
	idleIdentity(t, "keyed", ks)
	for name, p := range map[string]*crew.Pool{"root": root, "hi": hi, "lo": lo} {
		idleIdentity(t, name, p.Stats())
	}
}

// CallerRuns and Pool.Stop docs: a submit into a full sub-pool under CallerRuns that waits for
// its paused parent's Resume, and that the parent's Stop overtakes, returns ErrStopped with
// its task unrun: the stop does not let it run on its submitter.
func TestAdvNewCallerRunsParentStopRefusesSubPoolsWaitingSubmitters(t *testing.T) {
	rounds, submitters := 100, 50
	if testing.Short() {
		rounds = 10
	}
	var ranAfterStop atomic.Int32
	for range rounds {
		root := crew.New(1)
		sub := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
		release := holdWorkers(t, plainPool{sub}, 1, 1)
		root.Pause()
		var wg sync.WaitGroup
		for range submitters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := sub.Submit(func() { ranAfterStop.Add(1) }); err == nil {
					ranAfterStop.Add(1000)
				}
			}()
		}
		time.Sleep(3 * time.Millisecond) // let the submitters wait; none may run while paused
		if n := ranAfterStop.Load(); n != 0 {
			t.Fatalf("%d caller-run tasks ran while the parent was paused", n)
		}
		root.Stop()
		awaitReturn(t, "the waiting submitters", goRun(wg.Wait))
		release()
		root.StopAndWait()
		if n := ranAfterStop.Load(); n != 0 {
			t.Fatalf("%d submits returned nil (x1000) and ran (x1) after the parent's Stop overtook them: got %d", n/1000, n)
		}
		idleIdentity(t, "sub", sub.Stats())
	}
}

// DiscardOldest doc and Future.Cancel, with priority levels: a canceled function's place at
// the head of level 0 is dropped first and makes room, so the submit discards nothing (no
// handler call, no Discarded); the canceled function counts in Skipped, and the sub-pools'
// workers at the other levels stay.
func TestAdvNewDiscardOldestDropsACanceledPlaceFirstWithLevels(t *testing.T) {
	var handled atomic.Int32
	root := crew.New(1, crew.WithQueueSize(4), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { handled.Add(1) }))
	defer root.StopAndWait()
	hi := root.Sub(1, crew.WithPriority(1))
	lo := root.Sub(1, crew.WithPriority(-1))
	release := holdWorkers(t, plainPool{root}, 1, 0)
	var ran atomic.Int32
	count := func() { ran.Add(1) }
	must(t, lo.Submit(count))
	f := crew.GoContext(context.Background(), root, func(context.Context) (int, error) { ran.Add(100); return 0, nil })
	must(t, root.Submit(count))
	must(t, hi.Submit(count)) // full
	if !f.Cancel() {
		t.Fatal("Cancel of a queued function reported false")
	}
	must(t, root.Submit(count)) // takes the canceled function's place
	if h := handled.Load(); h != 0 {
		t.Fatalf("the discard handler got %d tasks, want none: a canceled place made room", h)
	}
	release()
	root.StopAndWait()
	if ran.Load() != 4 {
		t.Fatalf("ran %d, want the 4 tasks (and not the canceled function)", ran.Load())
	}
	s := root.Stats()
	if s.Discarded != 0 || s.Skipped != 1 {
		t.Fatalf("stats %+v; want none discarded, 1 skipped", s)
	}
	idleIdentity(t, "root", s)
}

// SubmitN doc ("a heavy task is never overtaken") and Pool.Sub: a sub-pool's backlog, all of
// it submitted after a weighted task of the parent, does not keep that task from starting
// until the backlog has drained.
func TestAdvNewSubPoolBacklogDoesNotStarveParentsWeightedTask(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(1)
	var subDone atomic.Int32
	gate := make(chan struct{})
	in := make(chan struct{})
	must(t, sub.Submit(func() { close(in); <-gate }))
	<-in
	heavyAt := make(chan int32, 1)
	must(t, root.SubmitN(2, func() { heavyAt <- subDone.Load() }))
	const later = 200
	for range later {
		must(t, sub.Submit(func() { subDone.Add(1) }))
	}
	close(gate)
	select {
	case n := <-heavyAt:
		if n != 0 {
			t.Fatalf("the weighted task began after %d of the sub-pool's %d later tasks, want before any", n, later)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the weighted task did not begin within 10 s")
	}
}
