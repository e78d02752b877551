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
	"github.com/crewgo/crew/internal/racetest"
)

// TestCancelRacingStartIsDecidedOnce races Future.Cancel with the start of the function, many
// times: every future either ran once (Cancel false, Wait its value) or never ran (Cancel
// true, Wait context.Canceled), never both; and once the pool is idle, Accepted is the sum of
// the outcomes, the canceled ones in Skipped.
func TestCancelRacingStartIsDecidedOnce(t *testing.T) {
	t.Parallel()
	n := 100_000
	if testing.Short() && racetest.Enabled {
		n = 20_000
	}
	p := crew.New(2)
	defer p.StopAndWait()
	const batch = 64
	futures := make([]*crew.Future[int], batch)
	runs := make([]atomic.Int32, batch)
	canceled := 0
	for done := 0; done < n; done += batch {
		for i := range batch {
			runs[i].Store(0)
			futures[i] = crew.Go(p, func() (int, error) { runs[i].Add(1); return i, nil })
		}
		for i, f := range futures {
			if i%2 == 1 {
				continue // half are left alone: the workers run them while the others are canceled
			}
			won := f.Cancel()
			v, err := f.Wait()
			switch {
			case won && (!errors.Is(err, context.Canceled) || runs[i].Load() != 0):
				t.Fatalf("Cancel = true, yet Wait = %d, %v and the function ran %d times", v, err, runs[i].Load())
			case !won && (err != nil || v != i || runs[i].Load() != 1):
				t.Fatalf("Cancel = false, yet Wait = %d, %v and the function ran %d times", v, err, runs[i].Load())
			case won:
				canceled++
				if f.Cancel() {
					t.Fatal("a second Cancel reported true")
				}
			}
		}
		for i, f := range futures {
			if _, err := f.Wait(); i%2 == 1 && (err != nil || runs[i].Load() != 1) {
				t.Fatalf("a future left alone: Wait error %v, ran %d times", err, runs[i].Load())
			}
		}
	}
	p.Wait()
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Skipped != uint64(canceled) {
		t.Fatalf("Skipped = %d, want the %d futures canceled", s.Skipped, canceled)
	}
	t.Logf("%d of %d canceled before they started", canceled, n/2)
}

// TestGroupSkipsItsQueuedFunctionsAtItsFirstError: a group of 10,000 functions whose 10th
// fails runs none of those still queued at that moment; Stats.Skipped counts them.
func TestGroupSkipsItsQueuedFunctionsAtItsFirstError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.Group(context.Background())
	boom := errors.New("the 10th failed")
	var ran, ranAfter atomic.Int64
	var failed atomic.Bool
	gate := make(chan struct{})
	for i := range 10_000 {
		g.Go(func(ctx context.Context) error {
			if i == 0 {
				<-gate // every function is queued before the first ends
			}
			ran.Add(1)
			if failed.Load() {
				ranAfter.Add(1) // started after the failure: it was taken before it
			}
			if i == 9 {
				failed.Store(true)
				return boom
			}
			return nil
		})
	}
	close(gate)
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want the 10th's error", err)
	}
	p.Wait()
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if got := uint64(ran.Load()) + s.Skipped; got != 10_000 || s.Accepted != 10_000 {
		t.Fatalf("%d ran and %d were skipped of %d accepted, want 10,000", ran.Load(), s.Skipped, s.Accepted)
	}
	// Two workers: at most the one other function taken when the 10th failed starts after it.
	if n := ranAfter.Load(); n > 1 || s.Skipped < 10_000-12 {
		t.Fatalf("%d functions started after the failure, %d were skipped; want at most 1, at least 9,988", n, s.Skipped)
	}
}

// TestShutdownPastItsDeadlineCancelsRunningFunctions: Shutdown with a 50 ms deadline over
// functions that run until their context ends cancels their context with cause ErrStopped
// and returns context.DeadlineExceeded within the deadline and a margin; queued functions
// with a context are skipped; plain tasks still run; nothing is lost or run twice.
func TestShutdownPastItsDeadlineCancelsRunningFunctions(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	sub := p.Sub(2)
	g, _ := p.Group(context.Background())
	sg, _ := sub.Group(context.Background())
	var causes sync.Map
	var started sync.WaitGroup
	var ranQueued, plainRan atomic.Int32
	for i := range 2 {
		started.Add(2)
		g.Go(func(ctx context.Context) error {
			started.Done()
			<-ctx.Done()
			causes.Store(i, context.Cause(ctx))
			return ctx.Err()
		})
		sg.Go(func(ctx context.Context) error {
			started.Done()
			<-ctx.Done()
			causes.Store(10+i, context.Cause(ctx))
			return ctx.Err()
		})
	}
	started.Wait() // the four slots are taken
	for range 5 {
		g.Go(func(context.Context) error { ranQueued.Add(1); return nil })
		must(t, p.Submit(func() { plainRan.Add(1) }))
	}
	future := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ranQueued.Add(1); return 0, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := p.Shutdown(ctx)
	took := time.Since(begin)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	if took > 50*time.Millisecond+margin {
		t.Fatalf("Shutdown took %v with a 50 ms deadline", took)
	}
	g.Wait()
	sg.Wait()
	if _, err := future.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("a queued GoContext future: Wait = %v, want ErrStopped (skipped)", err)
	}
	p.StopAndWait()
	for _, k := range []int{0, 1, 10, 11} {
		c, _ := causes.Load(k)
		if err, _ := c.(error); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("running function %d saw cause %v, want ErrStopped", k, c)
		}
	}
	if n := ranQueued.Load(); n != 0 {
		t.Fatalf("%d queued functions ran after the deadline, want them skipped", n)
	}
	if n := plainRan.Load(); n != 5 {
		t.Fatalf("%d of 5 plain tasks ran: they cannot be told, and must run", n)
	}
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Skipped != 6 || s.Completed != 5+2+2 {
		t.Fatalf("Stats = %+v: want 6 skipped, 9 completed (5 plain, 2 of the group, the sub-pool's 2 workers)", s)
	}
	idleIdentity(t, "sub-pool", sub.Stats())
}

// TestShutdownThatGivesUpFailsQueuedFunctionsAtOnce: once a Shutdown past its deadline has
// returned, the functions with a context still queued on the pool and its sub-pools (a paused
// one, one below a sub-pool, one whose worker waits in its parent's queue) have failed with
// ErrStopped, though no worker reaches their places while a plain task holds the only slot.
// Their places count as Waiting until one does, then as Skipped.
func TestShutdownThatGivesUpFailsQueuedFunctionsAtOnce(t *testing.T) {
	root := crew.New(1)
	mid := root.Sub(1)
	leaf := mid.Sub(1, crew.WithPriority(1))
	paused := root.Sub(1)
	paused.Pause()
	gate := make(chan struct{})
	defer close(gate)
	release := sync.OnceFunc(func() { gate <- struct{}{} })
	defer release()
	started := make(chan struct{})
	must(t, root.Submit(func() { close(started); <-gate }))
	<-started
	never := func(context.Context) (int, error) {
		t.Error("a skipped function ran")
		return 0, nil
	}
	var futures []*crew.Future[int]
	var groups []*crew.Group
	for _, p := range []*crew.Pool{root, mid, leaf, paused} {
		futures = append(futures, crew.GoContext(context.Background(), p, never))
		g, _ := p.Group(context.Background())
		g.Go(func(ctx context.Context) error { _, err := never(ctx); return err })
		groups = append(groups, g)
	}
	mapped := goRun(func() {
		_, err := crew.Map(context.Background(), leaf, []int{1, 2, 3}, func(ctx context.Context, _ int) (int, error) { return never(ctx) })
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Map = %v, want ErrStopped", err)
		}
	})
	// Map gives the pool as many functions at once as its limit, one here.
	waitFor(t, "the Map's function to queue", func() bool { return leaf.Stats().Accepted == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := root.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	for i, f := range futures {
		if _, err := returnsWithin2(t, "a queued future's Wait", f.Wait); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("future %d: Wait = %v, want ErrStopped", i, err)
		}
	}
	for i, g := range groups {
		if err := returnsWithin(t, "a group's Wait", g.Wait); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("group %d: Wait = %v, want ErrStopped", i, err)
		}
	}
	awaitReturn(t, "Map", mapped)
	if s := root.Stats(); s.Running != 1 || s.Skipped != 0 {
		t.Errorf("root %+v: want the plain task running, nothing counted skipped before a worker met it", s)
	}
	release()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	var skipped uint64
	for _, p := range []*crew.Pool{root, mid, leaf, paused} {
		s := p.Stats()
		idleIdentity(t, "pool", s)
		skipped += s.Skipped
	}
	if skipped != 4+4+1 {
		t.Errorf("%d skipped over the tree, want 9 (4 futures, 4 groups' functions, 1 of the Map)", skipped)
	}
}

// returnsWithin2 is returnsWithin for a call with a value.
func returnsWithin2[V any](t *testing.T, what string, f func() (V, error)) (V, error) {
	t.Helper()
	var v V
	err := returnsWithin(t, what, func() (err error) { v, err = f(); return err })
	return v, err
}

// TestShutdownWithinItsDeadlineCancelsNothing: a Shutdown whose context outlives the drain
// leaves every context alone.
func TestShutdownWithinItsDeadlineCancelsNothing(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	g, gctx := p.Group(context.Background())
	var sawEnd atomic.Bool
	g.Go(func(ctx context.Context) error {
		time.Sleep(time.Millisecond)
		sawEnd.Store(ctx.Err() != nil)
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, p.Shutdown(ctx))
	must(t, g.Wait())
	if sawEnd.Load() {
		t.Fatal("a function's context ended during a Shutdown that met its deadline")
	}
	if cause := context.Cause(gctx); !errors.Is(cause, context.Canceled) || errors.Is(cause, crew.ErrStopped) {
		t.Fatalf("the group's cause after Wait = %v, want context.Canceled", cause)
	}
}

// TestGoContextSkipsWhenItsContextEndsWhileQueued: a GoContext function whose context ends
// before a worker takes it never runs; Wait returns the context's cause; Stats count it in
// Skipped and the hooks never see it start.
func TestGoContextSkipsWhenItsContextEndsWhileQueued(t *testing.T) {
	t.Parallel()
	var started, finished, queued atomic.Int32
	p := crew.New(1, crew.WithHooks(crew.Hooks{
		Queued:   func(crew.TaskInfo) { queued.Add(1) },
		Started:  func(crew.TaskInfo) { started.Add(1) },
		Finished: func(crew.TaskInfo) { finished.Add(1) },
	}))
	defer p.StopAndWait()
	task, began, release := blocker()
	must(t, p.Submit(task))
	<-began
	why := errors.New("the request went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	var ran atomic.Bool
	f := crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
	cancel(why)
	close(release)
	if _, err := f.Wait(); !errors.Is(err, why) {
		t.Fatalf("Wait = %v, want the context's cause", err)
	}
	p.Wait()
	if ran.Load() {
		t.Fatal("the function ran after its context ended")
	}
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Skipped != 1 || queued.Load() != 2 || started.Load() != 1 || finished.Load() != 1 {
		t.Fatalf("Skipped %d, hooks Queued %d Started %d Finished %d; want 1, 2, 1, 1",
			s.Skipped, queued.Load(), started.Load(), finished.Load())
	}

	// A context that has already ended: the function is not accepted.
	f = crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Store(true); return 1, nil })
	if _, err := f.Wait(); !errors.Is(err, why) {
		t.Fatalf("GoContext with an ended context: Wait = %v, want its cause", err)
	}
	if s := p.Stats(); s.Canceled != 1 || s.Accepted != 2 {
		t.Fatalf("Stats = %+v, want the refused call counted in Canceled", s)
	}
	if f.Cancel() {
		t.Fatal("Cancel of a function never accepted reported true")
	}
}

// TestGoContextGivesItsFunctionAContextOfItsOwn: the context ends when the function returns,
// carries the caller's values, and the function's panic comes back from Wait.
func TestGoContextGivesItsFunctionAContextOfItsOwn(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	var kept context.Context
	f := crew.GoContext(parent, p, func(ctx context.Context) (string, error) {
		kept = ctx
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return ctx.Value(key{}).(string), nil
	})
	if v, err := f.Wait(); v != "v" || err != nil {
		t.Fatalf("Wait = %q, %v", v, err)
	}
	if kept.Err() == nil {
		t.Fatal("the function's context is live after it returned")
	}
	f = crew.GoContext(parent, p, func(context.Context) (string, error) { panic("boom") })
	var pe *crew.PanicError
	if _, err := f.Wait(); !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("Wait = %v, want a *PanicError", err)
	}
	f = crew.GoContext[string](parent, p, nil)
	if _, err := f.Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("nil fn: Wait = %v, want ErrNilTask", err)
	}
	p.Stop()
	f = crew.GoContext(parent, p, func(context.Context) (string, error) { return "", nil })
	if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("on a stopped pool: Wait = %v, want ErrStopped", err)
	}
	checkPanics(t, []panicCase{
		{"nil ctx", func() {
			//lint:ignore SA1012 a nil context is the bad input under test
			crew.GoContext(nil, p, func(context.Context) (int, error) { return 0, nil })
		}, "crew: GoContext: ctx must not be nil"},
		{"nil pool", func() { crew.GoContext(parent, nil, func(context.Context) (int, error) { return 0, nil }) }, "crew: GoContext: p must not be nil"},
	})
}

// TestWithTaskTimeout: every function given a context gets a deadline d after its start,
// whose cause matches ErrTaskTimeout and context.DeadlineExceeded; a sub-pool inherits it.
func TestWithTaskTimeout(t *testing.T) {
	t.Parallel()
	p := crew.New(2, crew.WithTaskTimeout(20*time.Millisecond))
	defer p.StopAndWait()
	sub := p.Sub(1)
	for _, pool := range []*crew.Pool{p, sub} {
		g, _ := pool.Group(context.Background())
		var cause error
		var deadline time.Time
		began := time.Now()
		g.Go(func(ctx context.Context) error {
			deadline, _ = ctx.Deadline()
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil
		})
		must(t, g.Wait())
		if !errors.Is(cause, crew.ErrTaskTimeout) || !errors.Is(cause, context.DeadlineExceeded) ||
			!strings.Contains(cause.Error(), "20ms") {
			t.Fatalf("cause = %v, want one matching ErrTaskTimeout and DeadlineExceeded, naming 20ms", cause)
		}
		if deadline.Before(began) || deadline.After(began.Add(20*time.Millisecond+margin)) {
			t.Fatalf("deadline %v after the start, want 20ms", deadline.Sub(began))
		}
	}
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (bool, error) {
		_, ok := ctx.Deadline()
		return ok, nil
	})
	if has, _ := f.Wait(); !has {
		t.Fatal("a GoContext function has no deadline under WithTaskTimeout")
	}
	checkPanics(t, []panicCase{{"zero", func() { crew.WithTaskTimeout(0) }, "crew: WithTaskTimeout: d must be > 0, got 0s"}})
}

// TestCancelAroundOtherFeatures: a canceled future's place in the queue is dropped wherever
// the pool meets it (a worker, StopNow, DiscardOldest, a paused pool's Resume), counted once.
func TestCancelAroundOtherFeatures(t *testing.T) {
	t.Parallel()
	t.Run("StopNow", func(t *testing.T) {
		t.Parallel()
		p := crew.New(1)
		task, began, release := blocker()
		must(t, p.Submit(task))
		<-began
		f := crew.Go(p, func() (int, error) { return 1, nil })
		kept := crew.Go(p, func() (int, error) { return 2, nil })
		if !f.Cancel() {
			t.Fatal("Cancel of a queued function = false")
		}
		plain := p.StopNow()
		close(release)
		p.StopAndWait()
		if _, err := kept.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("the future StopNow took out: Wait = %v, want ErrStopped", err)
		}
		s := p.Stats()
		idleIdentity(t, "pool", s)
		if len(plain) != 0 || s.Skipped != 1 || s.Returned != 1 {
			t.Fatalf("StopNow returned %d tasks; Stats %+v; want 0, 1 skipped, 1 returned", len(plain), s)
		}
	})
	t.Run("DiscardOldest", func(t *testing.T) {
		t.Parallel()
		var dropped atomic.Int32
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
			crew.WithDiscardHandler(func(any) { dropped.Add(1) }))
		task, began, release := blocker()
		must(t, p.Submit(task))
		<-began
		f := crew.Go(p, func() (int, error) { return 1, nil })
		f.Cancel()
		var ran atomic.Bool
		must(t, p.Submit(func() { ran.Store(true) })) // takes the canceled one's place: nothing is dropped
		close(release)
		p.StopAndWait()
		s := p.Stats()
		idleIdentity(t, "pool", s)
		if !ran.Load() || dropped.Load() != 0 || s.Discarded != 0 || s.Skipped != 1 {
			t.Fatalf("ran %v, dropped %d, Stats %+v; want the new task run, nothing dropped, 1 skipped", ran.Load(), dropped.Load(), s)
		}
	})
	t.Run("PauseAndSubPool", func(t *testing.T) {
		t.Parallel()
		p := crew.New(2)
		sub := p.Sub(1, crew.WithPriority(1))
		p.Pause()
		var ran atomic.Int32
		var fs []*crew.Future[int]
		for range 4 {
			fs = append(fs, crew.Go(sub, func() (int, error) { ran.Add(1); return 0, nil }))
		}
		for _, f := range fs[:2] {
			if !f.Cancel() {
				t.Fatal("Cancel on a paused pool = false")
			}
		}
		if s := sub.Stats(); s.Waiting != 4 {
			t.Fatalf("sub-pool Waiting = %d, want 4: the canceled places are freed when reached", s.Waiting)
		}
		p.Resume()
		sub.Wait()
		p.StopAndWait()
		s := sub.Stats()
		idleIdentity(t, "sub-pool", s)
		if ran.Load() != 2 || s.Skipped != 2 || s.Completed != 2 {
			t.Fatalf("ran %d, Stats %+v; want 2 ran, 2 skipped", ran.Load(), s)
		}
	})
}

// TestSkippedFunctionsAroundOtherFeatures: skipping holds with hooks, priorities, Keyed beside
// and sub-pools: a skipped function is never started, seen by no Started hook, and counted
// once in its own pool.
func TestSkippedFunctionsAroundOtherFeatures(t *testing.T) {
	t.Parallel()
	var started, finished atomic.Int32
	hooks := crew.WithHooks(crew.Hooks{
		Started:  func(crew.TaskInfo) { started.Add(1) },
		Finished: func(crew.TaskInfo) { finished.Add(1) },
	})
	p := crew.New(1)
	low := p.Sub(1, hooks)
	high := p.Sub(1, crew.WithPriority(2), hooks)
	k := crew.NewKeyed[int](p)
	task, began, release := blocker()
	must(t, p.Submit(task))
	<-began
	fail := errors.New("fail")
	var ran atomic.Int32
	for _, sp := range []*crew.Pool{low, high} {
		g, _ := sp.Group(context.Background())
		g.Go(func(context.Context) error { ran.Add(1); return fail })
		for range 3 {
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		must(t, k.Submit(1, func() {}))
		defer func() {
			if err := g.Wait(); !errors.Is(err, fail) {
				t.Errorf("Wait = %v", err)
			}
		}()
	}
	close(release)
	p.Wait()
	k.Wait()
	for _, sp := range []*crew.Pool{low, high} {
		sp.Wait()
		s := sp.Stats()
		idleIdentity(t, "sub-pool", s)
		if s.Skipped != 3 || s.Completed != 1 {
			t.Fatalf("sub-pool Stats %+v, want 1 completed and 3 skipped", s)
		}
	}
	if ran.Load() != 2 || started.Load() != 2 || finished.Load() != 2 {
		t.Fatalf("ran %d, Started %d, Finished %d; want 2 each (one per group)", ran.Load(), started.Load(), finished.Load())
	}
	p.StopAndWait()
}

// TestHelpingWaitAroundOtherFeatures: a helping wait's runs are seen by the hooks as the
// pool's tasks, keep a parent's limit and priorities, and a paused pool holds them.
func TestHelpingWaitAroundOtherFeatures(t *testing.T) {
	t.Parallel()
	var started, finished atomic.Int32
	p := crew.New(1, crew.WithHooks(crew.Hooks{
		Started:  func(crew.TaskInfo) { started.Add(1) },
		Finished: func(crew.TaskInfo) { finished.Add(1) },
	}))
	defer p.StopAndWait()
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		g, _ := p.Group(ctx)
		for range 3 {
			g.Go(func(context.Context) error { return nil })
		}
		return 0, g.Wait()
	})
	if _, err := f.Wait(); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if started.Load() != 4 || finished.Load() != 4 {
		t.Fatalf("Started %d, Finished %d; want 4 each: the helped runs are the pool's tasks", started.Load(), finished.Load())
	}
	idleIdentity(t, "pool", p.Stats())

	// A paused pool: the function given inside a function waits in the queue, unrun, while
	// the submit into a full queue blocks until Resume.
	q := crew.New(1, crew.WithQueueSize(1))
	defer q.StopAndWait()
	inside := make(chan struct{})
	var childRan atomic.Bool
	f = crew.GoContext(context.Background(), q, func(ctx context.Context) (int, error) {
		must(t, q.Submit(func() {}))
		q.Pause()
		close(inside)
		g, _ := q.Group(ctx)
		g.Go(func(context.Context) error { childRan.Store(true); return nil })
		return 0, g.Wait()
	})
	<-inside
	time.Sleep(10 * time.Millisecond)
	if childRan.Load() {
		t.Fatal("a function ran on its submitter while the pool was paused")
	}
	q.Resume()
	if _, err := f.Wait(); err != nil || !childRan.Load() {
		t.Fatalf("after Resume: Wait = %v, child ran %v", err, childRan.Load())
	}
}

// margin is how late a call with a deadline may return on a shared machine, under the race
// detector too.
const margin = 2 * time.Second
