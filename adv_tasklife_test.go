package crew_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestAdvLifeHelpedStartHeldByPause: a function run in a lent slot is a start like any other:
// once Pause has returned, none starts (package documentation, "Waits that help"; Pool.Pause).
// A function on New(1) waits on a group of many short functions, which it runs itself one
// after another (the pool's one slot is its own, so no worker takes them), while another
// goroutine pauses the pool. The one start the waiting function may have decided before
// Pause returned may still begin after; a second one may not.
func TestAdvLifeHelpedStartHeldByPause(t *testing.T) {
	t.Parallel()
	rounds, n := 80, 400
	if testing.Short() {
		rounds = 20
	}
	var late atomic.Int64
	for r := 0; r < rounds && late.Load() <= 1; r++ {
		late.Store(0)
		p := crew.New(1)
		var pausedAt atomic.Bool
		var began atomic.Int64
		half := make(chan struct{})
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			g, _ := p.Group(ctx)
			for range n {
				g.Go(func(context.Context) error {
					if pausedAt.Load() {
						late.Add(1)
					}
					if began.Add(1) == int64(n/4) {
						close(half)
					}
					return nil
				})
			}
			return 0, g.Wait()
		})
		select {
		case <-half:
		case <-time.After(10 * time.Second):
			t.Fatal("the group's functions did not start")
		}
		p.Pause()
		pausedAt.Store(true)
		time.Sleep(2 * time.Millisecond)
		pausedAt.Store(false)
		p.Resume()
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		p.StopAndWait()
		idleIdentity(t, "pool", p.Stats())
	}
	if l := late.Load(); l > 1 {
		t.Fatalf("%d functions run in a lent slot began after Pause had returned, want at most 1", l)
	}
}

// timeoutProbe is a function given with a context that reports how its context ended: it
// waits for the end (at most 10 s) and returns the cause, or errNoDeadline at once if its
// context has no deadline.
func timeoutProbe(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		return errNoDeadline
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		return errors.New("the context did not end within 10 s")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("ctx.Err() = %v, want DeadlineExceeded", ctx.Err())
	}
	return probeCause{context.Cause(ctx)}
}

var errNoDeadline = errors.New("no deadline")

// probeCause carries a context's cause back as a function's error.
type probeCause struct{ cause error }

func (c probeCause) Error() string { return "cause: " + c.cause.Error() }

// checkTimeoutCause fails t unless err is a probeCause whose cause matches ErrTaskTimeout and
// DeadlineExceeded and names want, or, for want 0, errNoDeadline.
func checkTimeoutCause(t *testing.T, what string, err error, want time.Duration) {
	t.Helper()
	if want == 0 {
		if !errors.Is(err, errNoDeadline) {
			t.Errorf("%s: %v, want no deadline", what, err)
		}
		return
	}
	var pc probeCause
	if !errors.As(err, &pc) {
		t.Errorf("%s: %v, want the context to end by its task timeout", what, err)
		return
	}
	if !errors.Is(pc.cause, crew.ErrTaskTimeout) || !errors.Is(pc.cause, context.DeadlineExceeded) ||
		!strings.Contains(pc.cause.Error(), want.String()) {
		t.Errorf("%s: cause %v, want one matching ErrTaskTimeout and DeadlineExceeded naming %v", what, pc.cause, want)
	}
}

// TestAdvLifeTaskTimeoutOfEachPoolInTheTree: WithTaskTimeout: "A sub-pool has its parent's task
// timeout unless given its own." In a tree of pools and sub-pools of sub-pools, some with an
// option of their own and some without, and a root without any, the context each door
// (GoContext, Group.Go, GroupAll, Results.Go, Map, ForEach, MapSeq, MapSeqUnordered) passes to a
// function ends by the timeout of the nearest pool on its path that has one, with a cause
// naming it, and a function on a pool with none above it has no deadline.
func TestAdvLifeTaskTimeoutOfEachPoolInTheTree(t *testing.T) {
	t.Parallel()
	const (
		rootD = 40 * time.Millisecond
		ownD  = 70 * time.Millisecond
		leafD = 90 * time.Millisecond
		lateD = 50 * time.Millisecond
	)
	root := crew.New(4, crew.WithTaskTimeout(rootD))
	defer root.StopAndWait()
	bare := crew.New(4)
	defer bare.StopAndWait()
	a := root.Sub(3)
	b := root.Sub(3, crew.WithTaskTimeout(ownD))
	late := bare.Sub(3, crew.WithTaskTimeout(lateD))
	pools := []struct {
		name string
		p    *crew.Pool
		want time.Duration
	}{
		{"root", root, rootD},
		{"root.Sub", a, rootD},
		{"root.Sub.Sub", a.Sub(2), rootD},
		{"root.Sub(own)", b, ownD},
		{"root.Sub(own).Sub", b.Sub(2), ownD},
		{"root.Sub(own).Sub(own)", b.Sub(2, crew.WithTaskTimeout(leafD)), leafD},
		{"root.Sub(own).Sub(own).Sub", b.Sub(2, crew.WithTaskTimeout(leafD)).Sub(1), leafD},
		{"bare", bare, 0},
		{"bare.Sub", bare.Sub(2), 0},
		{"bare.Sub(own)", late, lateD},
		{"bare.Sub(own).Sub", late.Sub(2), lateD},
	}
	probe := func(ctx context.Context, _ int) (int, error) { return 0, timeoutProbe(ctx) }
	var wg sync.WaitGroup
	for _, pc := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, want := pc.p, pc.want
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) { return 0, timeoutProbe(ctx) })
			g, _ := p.Group(context.Background())
			g.Go(timeoutProbe)
			all, _ := p.GroupAll(context.Background())
			all.Go(timeoutProbe)
			r, _ := crew.NewResults[int](context.Background(), p)
			r.Go(func(ctx context.Context) (int, error) { return 0, timeoutProbe(ctx) })
			_, err := f.Wait()
			checkTimeoutCause(t, pc.name+": GoContext", err, want)
			checkTimeoutCause(t, pc.name+": Group", g.Wait(), want)
			checkTimeoutCause(t, pc.name+": GroupAll", all.Wait(), want)
			_, err = r.Wait()
			checkTimeoutCause(t, pc.name+": Results", err, want)
			_, err = crew.Map(context.Background(), p, []int{1}, probe)
			checkTimeoutCause(t, pc.name+": Map", err, want)
			err = crew.ForEach(context.Background(), p, countTo(1), func(ctx context.Context, _ int) error { return timeoutProbe(ctx) })
			checkTimeoutCause(t, pc.name+": ForEach", err, want)
			for _, m := range seqModes {
				for _, err := range m.mapSeq(context.Background(), p, countTo(1), probe) {
					checkTimeoutCause(t, pc.name+": "+m.name, err, want)
				}
			}
		}()
	}
	wg.Wait()
	for _, pc := range pools {
		pc.p.Wait()
		idleIdentity(t, pc.name, pc.p.Stats())
	}
}

// TestAdvLifeTaskTimeoutInALentSlotIsTheWaitedPools: a function of a sub-pool with a long task
// timeout of its own waits on a group made on its parent (timeout 40 ms) from its context; the
// parent's one slot is the waiting function's, so the group's functions run in it, lent, or on
// the caller where the parent's full queue would make Go wait. Each is a function of the
// parent's group, and its context ends by the parent's task timeout, not the waiting
// function's.
func TestAdvLifeTaskTimeoutInALentSlotIsTheWaitedPools(t *testing.T) {
	t.Parallel()
	const d = 40 * time.Millisecond
	p := crew.New(1, crew.WithQueueSize(1), crew.WithTaskTimeout(d))
	defer p.StopAndWait()
	sub := p.Sub(1, crew.WithTaskTimeout(time.Hour))
	inside := make(chan struct{})
	filled := make(chan struct{})
	var plainRan atomic.Bool
	f := crew.GoContext(context.Background(), sub, func(ctx context.Context) ([]error, error) {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < time.Minute {
			return nil, fmt.Errorf("the sub-pool's function has deadline %v (%v), want its own hour", dl, ok)
		}
		close(inside)
		<-filled // p's queue of one holds a plain task: Go runs on the caller
		g, _ := p.GroupAll(ctx)
		g.Go(timeoutProbe) // on the caller: the queue is full
		errs := []error{g.Wait()}
		r, _ := crew.NewResults[int](ctx, p)
		fs := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return 0, timeoutProbe(ctx) })
		_, err := fs.Wait()
		errs = append(errs, err)
		r.Go(func(ctx context.Context) (int, error) { return 0, timeoutProbe(ctx) })
		_, err = r.Wait()
		errs = append(errs, err)
		return errs, nil
	})
	<-inside
	must(t, p.Submit(func() { plainRan.Store(true) }))
	close(filled)
	errs, err := f.Wait()
	must(t, err)
	for i, err := range errs {
		checkTimeoutCause(t, fmt.Sprintf("function %d of the parent's", i), err, d)
	}
	p.Wait()
	if !plainRan.Load() {
		t.Fatal("the plain task in the queue never ran")
	}
	if s := p.Stats(); s.CallerRan < 1 {
		t.Errorf("parent Stats %+v, want the Go into the full queue run on its caller", s)
	}
	idleIdentity(t, "parent", p.Stats())
	idleIdentity(t, "sub-pool", sub.Stats())
}

// TestAdvLifeTaskTimeoutStartsAtTheStartAndYieldsToAnEarlierCause: the deadline is d after the
// function starts, not after its submit: a function held on a paused parent for longer than d
// still gets its own d. A context given with an earlier deadline of its own, or canceled with
// a cause, ends the function's context with that cause, not the task timeout's.
func TestAdvLifeTaskTimeoutStartsAtTheStartAndYieldsToAnEarlierCause(t *testing.T) {
	t.Parallel()
	const d = 60 * time.Millisecond
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithTaskTimeout(d)).Sub(2)
	root.Pause()
	submitted := time.Now()
	late := crew.GoContext(context.Background(), sub, func(ctx context.Context) (time.Time, error) {
		dl, _ := ctx.Deadline()
		return dl, timeoutProbe(ctx)
	})
	time.Sleep(3 * d)
	root.Resume()
	dl, err := late.Wait()
	checkTimeoutCause(t, "function held by a pause", err, d)
	if dl.Before(submitted.Add(3 * d)) {
		t.Errorf("deadline %v after the submit, want at least %v: d counts from the start", dl.Sub(submitted), 3*d)
	}

	mine := errors.New("the caller's own deadline")
	ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(d/4), mine)
	defer cancel()
	early := crew.GoContext(ctx, sub, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, context.Cause(ctx)
	})
	if _, err := early.Wait(); !errors.Is(err, mine) {
		t.Errorf("a context with an earlier deadline of its own ended with %v, want its own cause", err)
	}
	stop := errors.New("stopped by the caller")
	cctx, ccancel := context.WithCancelCause(context.Background())
	running := make(chan struct{})
	g, _ := sub.Group(cctx)
	g.Go(func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		return context.Cause(ctx)
	})
	<-running
	ccancel(stop)
	if err := g.Wait(); !errors.Is(err, stop) {
		t.Errorf("a group canceled with a cause: Wait = %v, want that cause", err)
	}
}

// lifeFuture is a future under test, with the pool it was given to and how often its
// function ran.
type lifeFuture struct {
	f        *crew.Future[int]
	pool     int
	ran      atomic.Int32
	canceled bool
}

// goFutures gives n functions to p, as pool number i: by Go and by GoContext in turn.
func goFutures(p *crew.Pool, i, n int) []*lifeFuture {
	out := make([]*lifeFuture, n)
	for j := range out {
		lf := &lifeFuture{pool: i}
		if j%2 == 0 {
			lf.f = crew.Go(p, func() (int, error) { lf.ran.Add(1); return 1, nil })
		} else {
			lf.f = crew.GoContext(context.Background(), p, func(context.Context) (int, error) { lf.ran.Add(1); return 1, nil })
		}
		out[j] = lf
	}
	return out
}

// futureErr waits at most 10 s for f and returns its error.
func futureErr(t *testing.T, f *crew.Future[int]) error {
	t.Helper()
	var err error
	awaitReturn(t, "Future.Wait", goRun(func() { _, err = f.Wait() }))
	return err
}

// TestAdvLifeCancelRacingStopNowIsDecidedOnce: Future.Cancel and StopNow race for the queued
// functions of a pool, its sub-pool and a sub-pool of that. Each one is claimed once: a Cancel
// that reports true leaves it unrun, Wait returning context.Canceled, counted in Skipped; one
// that reports false lost it to StopNow, which fails it with ErrStopped, counted in Returned.
// None runs, StopNow hands back the plain tasks, and every pool's Stats add up.
func TestAdvLifeCancelRacingStopNowIsDecidedOnce(t *testing.T) {
	t.Parallel()
	rounds, per := 40, 8
	if testing.Short() {
		rounds = 10
	}
	for range rounds {
		root := crew.New(1)
		mid := root.Sub(1)
		leaf := mid.Sub(1, crew.WithPriority(1))
		pools := []*crew.Pool{root, mid, leaf}
		release := holdWorkers(t, plainPool{root}, 1, 0)
		var fs []*lifeFuture
		var plainRan atomic.Int32
		for i, p := range pools {
			fs = append(fs, goFutures(p, i, per)...)
			for range 2 {
				must(t, p.Submit(func() { plainRan.Add(1) }))
			}
		}
		start := make(chan struct{})
		canceller := goRun(func() {
			<-start
			for j := len(fs) - 1; j >= 0; j-- {
				fs[j].canceled = fs[j].f.Cancel()
			}
		})
		var handed []func()
		stopper := goRun(func() {
			<-start
			handed = root.StopNow()
		})
		close(start)
		awaitReturn(t, "the cancels", canceller)
		awaitReturn(t, "StopNow", stopper)
		release()
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		cancels := make([]uint64, len(pools))
		for j, lf := range fs {
			err := futureErr(t, lf.f)
			if lf.ran.Load() != 0 {
				t.Fatalf("future %d (pool %d, Cancel %v) ran", j, lf.pool, lf.canceled)
			}
			if lf.canceled {
				cancels[lf.pool]++
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("future %d: Cancel true, Wait = %v, want context.Canceled", j, err)
				}
			} else if !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("future %d: Cancel false before StopNow took it, Wait = %v, want ErrStopped", j, err)
			}
		}
		if len(handed) != 2*len(pools) || plainRan.Load() != 0 {
			t.Fatalf("StopNow handed back %d plain tasks and %d ran, want %d and 0", len(handed), plainRan.Load(), 2*len(pools))
		}
		for i, p := range pools {
			s := p.Stats()
			idleIdentity(t, fmt.Sprintf("pool %d", i), s)
			if s.Skipped != cancels[i] {
				t.Fatalf("pool %d: Stats %+v, want Skipped %d: the canceled futures", i, s, cancels[i])
			}
		}
		if s := leaf.Stats(); s.Returned != uint64(per+2)-cancels[2] {
			t.Fatalf("leaf: Stats %+v, want Returned %d", s, uint64(per+2)-cancels[2])
		}
	}
}

// TestAdvLifeCancelRacingStartIsDecidedOnceAmidStorms: Future.Cancel races with the start of
// functions on a pool, its sub-pool and a sub-pool of that (with a priority), while their
// pools are paused and resumed and resized up and down. A Cancel that reports true leaves its
// function unrun and Wait returns context.Canceled; one that reports false lets it run once,
// and Wait returns what it returned. Each pool counts in Skipped exactly its canceled
// futures, and its Stats add up once idle.
func TestAdvLifeCancelRacingStartIsDecidedOnceAmidStorms(t *testing.T) {
	t.Parallel()
	per := 1000
	if testing.Short() {
		per = 200
	}
	root := crew.New(3)
	mid := root.Sub(2)
	leaf := mid.Sub(2, crew.WithPriority(1))
	pools := []*crew.Pool{root, mid, leaf}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 200*time.Microsecond, pools...)
	n := 0
	repeatUntil(&wg, stop, func() {
		n++
		root.Resize(1 + n%3)
		leaf.Resize(1 + n%2)
		time.Sleep(300 * time.Microsecond)
	})
	// Producers give functions to the pools while a canceller chases them, canceling every
	// other one as soon as it is given: racing with its start.
	chased := make(chan *lifeFuture, 64)
	var fs []*lifeFuture
	canceller := goRun(func() {
		k := 0
		for lf := range chased {
			fs = append(fs, lf)
			if k++; k%2 == 0 {
				lf.canceled = lf.f.Cancel()
			}
		}
	})
	together(len(pools), per, func(c, _ int) {
		lf := goFutures(pools[c], c, 1)[0]
		chased <- lf
		if c == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	})
	close(chased)
	awaitReturn(t, "the canceller", canceller)
	close(stop)
	wg.Wait()
	for _, p := range pools {
		p.Resume()
	}
	root.Resize(3)
	cancels := make([]uint64, len(pools))
	for j, lf := range fs {
		err := futureErr(t, lf.f)
		ran := lf.ran.Load()
		if lf.canceled {
			cancels[lf.pool]++
			if ran != 0 || !errors.Is(err, context.Canceled) {
				t.Fatalf("future %d (pool %d): Cancel true, ran %d times, Wait = %v; want unrun, context.Canceled", j, lf.pool, ran, err)
			}
		} else if ran != 1 || err != nil {
			t.Fatalf("future %d (pool %d): Cancel false, ran %d times, Wait = %v; want run once, nil", j, lf.pool, ran, err)
		}
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	for i, p := range pools {
		awaitReturn(t, "Wait", goRun(p.Wait))
		s := p.Stats()
		idleIdentity(t, fmt.Sprintf("pool %d", i), s)
		if s.Skipped != cancels[i] {
			t.Errorf("pool %d: Stats %+v, want Skipped %d: its canceled futures", i, s, cancels[i])
		}
	}
	root.StopAndWait()
}

// TestAdvLifeCancelRacingShutdownPastItsDeadline: Future.Cancel races with a Shutdown whose
// context ends while the functions of GoContext wait on the pool and its sub-pool behind a
// plain task and a running function. A Cancel that reports true: Wait returns
// context.Canceled. False: the Shutdown skipped it, Wait returns ErrStopped. None runs, all
// count in Skipped; the running function's context ends with cause ErrStopped, and the plain
// tasks still queued run.
func TestAdvLifeCancelRacingShutdownPastItsDeadline(t *testing.T) {
	t.Parallel()
	rounds, per := 20, 10
	if testing.Short() {
		rounds = 6
	}
	for range rounds {
		root := crew.New(2)
		sub := root.Sub(1)
		hold, began, release := blocker()
		must(t, root.Submit(hold))
		<-began
		running := make(chan struct{})
		live := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
			close(running)
			select {
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			case <-time.After(10 * time.Second):
				return 0, errors.New("the running function's context never ended")
			}
		})
		<-running
		var fs []*lifeFuture
		var plainRan atomic.Int32
		for i, p := range []*crew.Pool{root, sub} {
			for j := range per {
				fs = append(fs, &lifeFuture{pool: i})
				lf := fs[len(fs)-1]
				lf.f = crew.GoContext(context.Background(), p, func(context.Context) (int, error) { lf.ran.Add(1); return 1, nil })
				if j%3 == 0 {
					must(t, p.Submit(func() { plainRan.Add(1) }))
				}
			}
		}
		start := make(chan struct{})
		canceller := goRun(func() {
			<-start
			for j := len(fs) - 1; j >= 0; j-- {
				fs[j].canceled = fs[j].f.Cancel()
			}
		})
		var shutErr error
		shut := goRun(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			<-start
			shutErr = root.Shutdown(ctx)
		})
		close(start)
		awaitReturn(t, "the cancels", canceller)
		awaitReturn(t, "Shutdown", shut)
		if !errors.Is(shutErr, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want DeadlineExceeded", shutErr)
		}
		if _, err := live.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("running function: its context's cause %v, want ErrStopped", err)
		}
		close(release)
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		var skipped [2]uint64
		for j, lf := range fs {
			err := futureErr(t, lf.f)
			skipped[lf.pool]++
			switch {
			case lf.ran.Load() != 0:
				t.Fatalf("future %d (Cancel %v) ran after Shutdown gave up", j, lf.canceled)
			case lf.canceled && !errors.Is(err, context.Canceled):
				t.Fatalf("future %d: Cancel true, Wait = %v, want context.Canceled", j, err)
			case !lf.canceled && !errors.Is(err, crew.ErrStopped):
				t.Fatalf("future %d: Cancel false, Wait = %v, want ErrStopped", j, err)
			}
		}
		if want := int32(2 * ((per + 2) / 3)); plainRan.Load() != want {
			t.Fatalf("%d plain tasks ran, want %d: plain tasks still run", plainRan.Load(), want)
		}
		for i, p := range []*crew.Pool{root, sub} {
			s := p.Stats()
			idleIdentity(t, fmt.Sprintf("pool %d", i), s)
			if s.Skipped != skipped[i] {
				t.Fatalf("pool %d: Stats %+v, want Skipped %d", i, s, skipped[i])
			}
		}
	}
}

// hookTally counts the hooks a pool calls.
type hookTally struct{ queued, started, finished atomic.Int64 }

func (h *hookTally) option() crew.Option {
	return crew.WithHooks(crew.Hooks{
		Queued:   func(crew.TaskInfo) { h.queued.Add(1) },
		Started:  func(crew.TaskInfo) { h.started.Add(1) },
		Finished: func(crew.TaskInfo) { h.finished.Add(1) },
	})
}

// TestAdvLifeContextEndsWhileQueuedOnAPausedPrioritySubPool: the functions of a Group, a
// GroupAll, a Results, a Map and a ForEach wait on a priority sub-pool, and a sub-pool of it,
// of a paused parent, while their context ends with a cause. After Resume none of them runs:
// they are skipped, counted in Skipped, told to no Started or Finished hook, and each wait
// returns the cause. The parent's own task at a lower level and the sub-pools' plain tasks
// still run.
func TestAdvLifeContextEndsWhileQueuedOnAPausedPrioritySubPool(t *testing.T) {
	t.Parallel()
	var hiHooks, leafHooks hookTally
	root := crew.New(2)
	defer root.StopAndWait()
	hi := root.Sub(2, crew.WithPriority(3), hiHooks.option())
	leaf := hi.Sub(1, crew.WithPriority(1), leafHooks.option())
	root.Pause()
	cause := errors.New("the request went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	var ran atomic.Int64
	fn := func(context.Context) error { ran.Add(1); return nil }
	g, _ := hi.Group(ctx)
	all, _ := leaf.GroupAll(ctx)
	for range 3 {
		g.Go(fn)
		all.Go(fn)
	}
	r, _ := crew.NewResults[int](ctx, leaf)
	for range 2 {
		r.Go(func(ctx context.Context) (int, error) { return 1, fn(ctx) })
	}
	var mapErr, eachErr error
	mapped := goRun(func() {
		_, mapErr = crew.Map(ctx, hi, []int{1, 2, 3, 4, 5}, func(ctx context.Context, _ int) (int, error) { return 1, fn(ctx) })
	})
	each := goRun(func() {
		eachErr = crew.ForEach(ctx, leaf, countTo(5), func(ctx context.Context, _ int) error { return fn(ctx) })
	})
	// Map keeps hi's limit (2) of calls in flight, ForEach leaf's (1); hi also holds a worker
	// of leaf.
	awaitStats(t, hi, "hi's functions queued", func(s crew.Stats) bool { return s.Waiting == 3+2+1 })
	awaitStats(t, leaf, "leaf's functions queued", func(s crew.Stats) bool { return s.Waiting == 3+2+1 })
	var plainRan, ownRan atomic.Int32
	must(t, hi.Submit(func() { plainRan.Add(1) }))
	must(t, leaf.Submit(func() { plainRan.Add(1) }))
	must(t, root.Submit(func() { ownRan.Add(1) }))
	cancel(cause)
	root.Resume()
	waits := map[string]error{"Group": g.Wait(), "GroupAll": all.Wait()}
	_, waits["Results"] = r.Wait()
	awaitReturn(t, "Map", mapped)
	awaitReturn(t, "ForEach", each)
	waits["Map"], waits["ForEach"] = mapErr, eachErr
	for name, err := range waits {
		if !errors.Is(err, cause) {
			t.Errorf("%s: %v, want the context's cause", name, err)
		}
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	if ran.Load() != 0 || plainRan.Load() != 2 || ownRan.Load() != 1 {
		t.Fatalf("%d skipped functions ran, %d of 2 plain tasks, %d of 1 of the parent's own", ran.Load(), plainRan.Load(), ownRan.Load())
	}
	for name, c := range map[string]struct {
		p    *crew.Pool
		h    *hookTally
		skip uint64
	}{"hi": {hi, &hiHooks, 3 + 2}, "leaf": {leaf, &leafHooks, 3 + 2 + 1}} {
		s := c.p.Stats()
		idleIdentity(t, name, s)
		if s.Skipped != c.skip || s.Completed < 1 {
			t.Errorf("%s: Stats %+v, want %d skipped, the plain task completed", name, s, c.skip)
		}
		if q, st, f := c.h.queued.Load(), c.h.started.Load(), c.h.finished.Load(); q != int64(c.skip)+1 || st != 1 || f != 1 {
			t.Errorf("%s: hooks Queued %d, Started %d, Finished %d; want %d, 1, 1", name, q, st, f, c.skip+1)
		}
	}
	idleIdentity(t, "root", root.Stats())
}

// TestAdvLifeSkippedBacklogOfASubPoolTakesNoTokenOfTheParentsRate: WithRateLimit: "A function
// that will not start (its future canceled, its context ended, or skipped by a Shutdown that
// gave up) takes no token: it leaves the queue as soon as its turn comes, without holding the
// live ones behind it back." A parent limited to 2 starts a second (burst 1) holds, paused, a
// backlog of 20 functions of a sub-pool (or of a sub-pool of one) whose context then ends, or
// whose futures are canceled, or which a Shutdown that gave up skips: the live function queued
// behind them runs, and the backlog leaves, in well under the 10 s that 20 tokens take.
func TestAdvLifeSkippedBacklogOfASubPoolTakesNoTokenOfTheParentsRate(t *testing.T) {
	t.Parallel()
	const backlog, within = 20, 4 * time.Second
	for _, mode := range []string{"context", "Cancel", "Shutdown"} {
		for _, depth := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/depth%d", mode, depth), func(t *testing.T) {
				t.Parallel()
				root := crew.New(1, crew.WithRateLimit(2, 1))
				defer root.StopAndWait()
				p := root
				for range depth {
					p = p.Sub(1)
				}
				root.Pause()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				fs := make([]*crew.Future[int], backlog)
				for i := range fs {
					fs[i] = crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil })
				}
				live := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 2, nil })
				begin := time.Now()
				switch mode {
				case "context":
					cancel()
					root.Resume()
				case "Cancel":
					for _, f := range fs {
						if !f.Cancel() {
							t.Fatal("Cancel of a function queued on a paused pool = false")
						}
					}
					root.Resume()
				case "Shutdown":
					sctx, scancel := context.WithTimeout(context.Background(), time.Millisecond)
					err := root.Shutdown(sctx)
					scancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
					}
				}
				v, err := live.Wait()
				for _, f := range fs {
					f.Wait()
				}
				root.Wait()
				if took := time.Since(begin); took > within {
					t.Errorf("the backlog took %v to leave the queue, want well under %v", took, within)
				}
				s := p.Stats()
				idleIdentity(t, "pool", s)
				if mode == "Shutdown" {
					// Shutdown resumes the pool, and the first function of the backlog may take
					// the one token there is before the Shutdown gives up.
					if (err != nil || v != 2) && !errors.Is(err, crew.ErrStopped) {
						t.Errorf("the function queued when Shutdown gave up: %v, want ErrStopped", err)
					}
					if s.Skipped < backlog {
						t.Errorf("Stats %+v, want the functions queued when Shutdown gave up skipped", s)
					}
					return
				}
				if v != 2 || err != nil {
					t.Errorf("the live function: %v, %v", v, err)
				}
				if s.Skipped != backlog {
					t.Errorf("Stats %+v, want the backlog skipped", s)
				}
			})
		}
	}
}

// nestedForkJoin is fork/join three levels deep under a function of sub, a sub-pool of p:
// the function makes a group on sub from its context; each of its two functions a group on
// p; each of theirs a Results on p and a Map on p, of one function each. Every wait is made
// from the context crew gave the waiting function, so it runs the functions no worker has
// taken in its own slot. began counts the functions that began (all levels), leaves the
// leaves that ran; at is called by the third leaf with its context, before it returns.
type nestedForkJoin struct {
	p, sub *crew.Pool
	began  atomic.Int64
	leaves atomic.Int64
	at     func(ctx context.Context)
}

func (n *nestedForkJoin) leaf(ctx context.Context) (int, error) {
	n.began.Add(1)
	if n.leaves.Add(1) == 3 && n.at != nil {
		n.at(ctx)
	}
	return 1, nil
}

func (n *nestedForkJoin) second(ctx context.Context) error {
	n.began.Add(1)
	r, _ := crew.NewResults[int](ctx, n.p)
	r.Go(n.leaf)
	_, err := r.Wait()
	_, merr := crew.Map(ctx, n.p, []int{1}, func(ctx context.Context, _ int) (int, error) { return n.leaf(ctx) })
	return errors.Join(err, merr)
}

func (n *nestedForkJoin) first(ctx context.Context) error {
	n.began.Add(1)
	g, _ := n.p.Group(ctx)
	for range 2 {
		g.Go(n.second) // into p's full queue of one: on the caller
	}
	return g.Wait()
}

// run starts the fork/join and returns its future.
func (n *nestedForkJoin) run() *crew.Future[int] {
	return crew.GoContext(context.Background(), n.sub, func(ctx context.Context) (int, error) {
		n.began.Add(1)
		g, _ := n.sub.Group(ctx)
		for range 2 {
			g.Go(n.first)
		}
		return 0, g.Wait()
	})
}

// newNested returns a nested fork/join on New(1) with a queue of one, whose queue holds a plain
// task, and a sub-pool of it.
func newNested(t *testing.T) (n *nestedForkJoin, plainRan *atomic.Bool) {
	t.Helper()
	p := crew.New(1, crew.WithQueueSize(1))
	n = &nestedForkJoin{p: p, sub: p.Sub(1)}
	plainRan = new(atomic.Bool)
	return n, plainRan
}

// TestAdvLifeNestedWaitsThroughASubPoolCompleteOnOneWorker: "nested fork/join of any depth
// completes, even on New(1) with a queue of one", here three levels deep with a sub-pool
// between and a plain task offered to the queue of one; the limit holds, every function runs
// once, and both pools' Stats add up.
func TestAdvLifeNestedWaitsThroughASubPoolCompleteOnOneWorker(t *testing.T) {
	t.Parallel()
	n, plainRan := newNested(t)
	p := n.p
	defer p.StopAndWait()
	inside := make(chan struct{})
	n.at = func(context.Context) {
		close(inside)
	}
	f := n.run()
	<-inside
	// The queue of one may hold the plain task now or refuse it: the Go calls run on the caller.
	if p.TrySubmit(func() { plainRan.Store(true) }) {
		defer func() {
			awaitReturn(t, "Wait", goRun(p.Wait))
			if !plainRan.Load() {
				t.Error("the plain task never ran")
			}
		}()
	}
	done := make(chan struct{})
	errc := watchStats(t, "pool", p, 1, done)
	if _, err := futureResult(t, f); err != nil {
		t.Fatal(err)
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n.leaves.Load() != 8 || n.began.Load() != 1+2+4+8 {
		t.Fatalf("%d leaves ran, %d functions began; want 8 and 15", n.leaves.Load(), n.began.Load())
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	idleIdentity(t, "pool", p.Stats())
	idleIdentity(t, "sub-pool", n.sub.Stats())
}

// futureResult waits at most 10 s for f and returns what it returned.
func futureResult(t *testing.T, f *crew.Future[int]) (int, error) {
	t.Helper()
	var v int
	var err error
	awaitReturn(t, "Future.Wait", goRun(func() { v, err = f.Wait() }))
	return v, err
}

// TestAdvLifeNestedWaitsHoldWhileTheParentIsPaused: the nested fork/join of
// TestAdvLifeNestedWaitsThroughASubPoolCompleteOnOneWorker, with the pool (or the sub-pool)
// paused while its third leaf runs: "none runs while the pool (or a pool above it) is
// paused", not in a lent slot, nor on the caller of a Go into the full queue: a paused pool
// starts none of its functions, a paused sub-pool none of its own; after Resume it completes.
func TestAdvLifeNestedWaitsHoldWhileTheParentIsPaused(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"pool", "sub-pool"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			n, _ := newNested(t)
			p := n.p
			defer p.StopAndWait()
			paused := n.p
			if target == "sub-pool" {
				paused = n.sub
			}
			var frozen atomic.Bool
			var late atomic.Int64
			third := make(chan struct{})
			goOn := make(chan struct{})
			n.at = func(context.Context) {
				close(third)
				<-goOn
			}
			f := crew.GoContext(context.Background(), n.sub, func(ctx context.Context) (int, error) {
				g, _ := n.sub.Group(ctx)
				for range 2 {
					g.Go(func(ctx context.Context) error {
						if frozen.Load() {
							late.Add(1)
						}
						return n.first(ctx)
					})
				}
				return 0, g.Wait()
			})
			<-third
			paused.Pause()
			frozen.Store(true)
			before := n.began.Load()
			close(goOn)
			time.Sleep(30 * time.Millisecond)
			// A pause of the sub-pool holds the sub-pool's functions only: those of the
			// groups made on p run on.
			if after := n.began.Load(); (target == "pool" && after != before) || late.Load() != 0 {
				t.Fatalf("%d functions, %d of the sub-pool, began while the %s was paused", after-before, late.Load(), target)
			}
			frozen.Store(false)
			paused.Resume()
			if _, err := futureResult(t, f); err != nil {
				t.Fatal(err)
			}
			if n.leaves.Load() != 8 {
				t.Fatalf("%d leaves ran, want 8", n.leaves.Load())
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			idleIdentity(t, "pool", p.Stats())
			idleIdentity(t, "sub-pool", n.sub.Stats())
		})
	}
}

// TestAdvLifeNestedWaitsEndWhenStoppedNowOrShutDown: the nested fork/join of
// TestAdvLifeNestedWaitsThroughASubPoolCompleteOnOneWorker, stopped while its third leaf runs:
// by StopNow from outside, by StopNow from the leaf itself ("safe to call from a task"), or by
// a Shutdown whose context ends (the leaf watches its context, which ends with ErrStopped).
// Every wait returns; no function runs twice; what StopNow took out fails with ErrStopped, what
// the Shutdown found queued is skipped; after StopAndWait both pools' Stats add up.
func TestAdvLifeNestedWaitsEndWhenStoppedNowOrShutDown(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"StopNow", "StopNowInside", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			n, _ := newNested(t)
			p := n.p
			third := make(chan struct{})
			goOn := make(chan struct{})
			var cause error
			n.at = func(ctx context.Context) {
				close(third)
				switch how {
				case "StopNowInside":
					p.StopNow()
				case "Shutdown":
					select {
					case <-ctx.Done():
						cause = context.Cause(ctx)
					case <-time.After(10 * time.Second):
					}
				default:
					<-goOn
				}
			}
			f := n.run()
			<-third
			switch how {
			case "StopNow":
				if got := p.StopNow(); len(got) != 0 {
					t.Errorf("StopNow handed back %d plain tasks, want none", len(got))
				}
				close(goOn)
			case "Shutdown":
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				err := p.Shutdown(ctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
				}
			}
			_, err := futureResult(t, f)
			awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
			if how == "Shutdown" && !errors.Is(cause, crew.ErrStopped) {
				t.Errorf("the running leaf's context ended with %v, want ErrStopped", cause)
			}
			// A Map whose context the Shutdown ended returns ctx.Err() (ForEach), which may be
			// the first error a group above records.
			if !errors.Is(err, crew.ErrStopped) && (how != "Shutdown" || !errors.Is(err, context.Canceled)) {
				t.Errorf("the outer function: %v, want ErrStopped", err)
			}
			if l := n.leaves.Load(); l < 3 || l > 8 {
				t.Errorf("%d leaves ran", l)
			}
			for name, pool := range map[string]*crew.Pool{"pool": p, "sub-pool": n.sub} {
				s := pool.Stats()
				idleIdentity(t, name, s)
			}
		})
	}
}

// TestAdvLifeShutdownOfAMiddleSubPoolGivingUp: Shutdown of a sub-pool (with a task timeout of
// an hour, and a sub-pool of its own) whose context ends first: the contexts of its running
// functions, and of its sub-pool's, end with cause ErrStopped, not the task timeout; its and
// its sub-pool's queued functions with a context (GoContext, Group, MapSeq) are skipped with
// ErrStopped; their plain tasks still run; the root's and a sibling's running functions go on,
// and new ones run there. Every pool's Stats add up once idle.
func TestAdvLifeShutdownOfAMiddleSubPoolGivingUp(t *testing.T) {
	t.Parallel()
	root := crew.New(6)
	defer root.StopAndWait()
	mid := root.Sub(3, crew.WithTaskTimeout(time.Hour))
	leaf := mid.Sub(1)
	sib := root.Sub(1)
	started := make(chan struct{}, 8)
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	defer releaseAll()
	watch := func(ctx context.Context) (int, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-release:
			return 1, nil
		case <-time.After(10 * time.Second):
			return 0, errors.New("neither ended nor released")
		}
	}
	fMid := crew.GoContext(context.Background(), mid, watch)
	fLeaf := crew.GoContext(context.Background(), leaf, watch)
	fSib := crew.GoContext(context.Background(), sib, watch)
	fRoot := crew.GoContext(context.Background(), root, watch)
	hold, held, freeHold := blocker()
	freeHeld := sync.OnceFunc(func() { close(freeHold) })
	defer freeHeld()
	must(t, mid.Submit(hold))
	for range 4 {
		<-started
	}
	<-held
	var ranQueued atomic.Int32
	var plainRan atomic.Int32
	qMid := crew.GoContext(context.Background(), mid, func(context.Context) (int, error) { ranQueued.Add(1); return 1, nil })
	g, _ := leaf.Group(context.Background())
	g.Go(func(context.Context) error { ranQueued.Add(1); return nil })
	var seqErrs []error
	seqDone := goRun(func() {
		for _, err := range crew.MapSeq(context.Background(), leaf, countTo(3), func(context.Context, int) (int, error) {
			ranQueued.Add(1)
			return 1, nil
		}) {
			seqErrs = append(seqErrs, err)
		}
	})
	must(t, mid.Submit(func() { plainRan.Add(1) }))
	must(t, leaf.Submit(func() { plainRan.Add(1) }))
	awaitStats(t, leaf, "leaf's functions queued", func(s crew.Stats) bool { return s.Waiting >= 3 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := mid.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	for name, f := range map[string]*crew.Future[int]{"mid": fMid, "leaf": fLeaf, "queued on mid": qMid} {
		if _, err := futureResult(t, f); !errors.Is(err, crew.ErrStopped) || errors.Is(err, crew.ErrTaskTimeout) {
			t.Errorf("%s: %v, want ErrStopped", name, err)
		}
	}
	// The root and the sibling go on, and run new functions.
	for name, f := range map[string]*crew.Future[int]{"root": fRoot, "sibling": fSib} {
		select {
		case <-f.Done():
			_, err := f.Wait()
			t.Errorf("%s's running function ended after the sub-pool's Shutdown: %v", name, err)
		default:
		}
	}
	releaseAll()
	for name, f := range map[string]*crew.Future[int]{"root": fRoot, "sibling": fSib} {
		if v, err := futureResult(t, f); v != 1 || err != nil {
			t.Errorf("%s: %v, %v; want released", name, v, err)
		}
	}
	if v, err := futureResult(t, crew.GoContext(context.Background(), sib, func(ctx context.Context) (int, error) { return 2, ctx.Err() })); v != 2 || err != nil {
		t.Errorf("a new function on the sibling: %v, %v", v, err)
	}
	freeHeld()
	if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("leaf group: %v, want ErrStopped", err)
	}
	awaitReturn(t, "the MapSeq", seqDone)
	if len(seqErrs) != 1 || !errors.Is(seqErrs[0], crew.ErrStopped) {
		t.Errorf("MapSeq yielded %v, want one ErrStopped", seqErrs)
	}
	awaitReturn(t, "the sub-pool's StopAndWait", goRun(mid.StopAndWait))
	if ranQueued.Load() != 0 || plainRan.Load() != 2 {
		t.Errorf("%d queued functions ran, %d of 2 plain tasks", ranQueued.Load(), plainRan.Load())
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf, "sibling": sib} {
		idleIdentity(t, name, p.Stats())
	}
	if s := leaf.Stats(); s.Skipped != 2 {
		t.Errorf("leaf Stats %+v, want the group's function and the MapSeq's call skipped", s)
	}
}

// TestAdvLifeLentFunctionIsWaitingNeverRunning: Stats: "A function that a waiting function
// runs itself ... counts as Waiting until it has ended ... and then in Completed or Panicked;
// it is never Running: it runs in the slot of the function that waits, which Running counts."
// On New(1), with the waiting function on the pool or on a sub-pool of it.
func TestAdvLifeLentFunctionIsWaitingNeverRunning(t *testing.T) {
	t.Parallel()
	for _, onSub := range []bool{false, true} {
		t.Run(fmt.Sprint("onSub=", onSub), func(t *testing.T) {
			t.Parallel()
			p := crew.New(1)
			defer p.StopAndWait()
			where := p
			if onSub {
				where = p.Sub(1)
			}
			inside := make(chan struct{})
			goOn := make(chan struct{})
			f := crew.GoContext(context.Background(), where, func(ctx context.Context) (int, error) {
				g, _ := p.Group(ctx)
				g.Go(func(context.Context) error {
					close(inside)
					<-goOn
					return nil
				})
				return 0, g.Wait()
			})
			<-inside
			s := p.Stats()
			close(goOn)
			if s.Running != 1 || s.Waiting != 1 || s.Completed != 0 {
				t.Errorf("Stats while the lent function runs %+v, want Running 1 (the waiting one), Waiting 1 (the lent one)", s)
			}
			if _, err := futureResult(t, f); err != nil {
				t.Fatal(err)
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			s = p.Stats()
			idleIdentity(t, "pool", s)
			if s.Completed != 2 {
				t.Errorf("Stats %+v, want both completed", s)
			}
			idleIdentity(t, "where", where.Stats())
		})
	}
}

// TestAdvLifeGoAfterWaitIsSkippedOnSubPools: Group.Go: "Go after Wait has returned skips fn,
// the group's context being canceled; a later Wait returns its cause", on a sub-pool of a
// sub-pool with hooks: the function is accepted, never runs, is told to no Started hook, and
// counts in Skipped; the same for Results.Go.
func TestAdvLifeGoAfterWaitIsSkippedOnSubPools(t *testing.T) {
	t.Parallel()
	var h hookTally
	root := crew.New(2)
	defer root.StopAndWait()
	leaf := root.Sub(2).Sub(1, h.option())
	g, _ := leaf.Group(context.Background())
	must(t, g.Wait())
	var ran atomic.Int32
	g.Go(func(context.Context) error { ran.Add(1); return nil })
	if err := g.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Group: a later Wait = %v, want context.Canceled", err)
	}
	r, _ := crew.NewResults[int](context.Background(), leaf)
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	if vals, err := r.Wait(); !errors.Is(err, context.Canceled) || len(vals) != 1 || vals[0] != 0 {
		t.Errorf("Results: a later Wait = %v, %v; want [0], context.Canceled", vals, err)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	s := leaf.Stats()
	idleIdentity(t, "leaf", s)
	if ran.Load() != 0 || s.Skipped != 2 || s.Accepted != 2 || h.started.Load() != 0 || h.queued.Load() != 2 {
		t.Errorf("ran %d; Stats %+v; hooks Queued %d Started %d; want 0 ran, 2 accepted and skipped, 2 Queued, 0 Started",
			ran.Load(), s, h.queued.Load(), h.started.Load())
	}
}

// lifeRecord is one function given to a pool in TestAdvLifeStormEndsInAShutdownGivingUp: how
// often it ran and how its door reported it.
type lifeRecord struct {
	ran      atomic.Int32
	canceled bool  // a Cancel of its future reported true
	err      error // what its future, group or call reported (for a group: of the whole)
	group    bool  // it shares its error with others (a group's, a Results', a Map's)
}

// TestAdvLifeStormEndsInAShutdownGivingUp: functions given by every door (GoContext with
// Cancel chasing some, Group and Results whose context ends mid-way, Map, plain Submit) to a
// tree of pools with task timeouts of their own, a priority and rate limits, while the pools
// are paused, resumed and resized; the storm ends in a Shutdown of the root whose context
// ends at once. No function runs twice; a future whose Cancel reported true never ran and
// reports context.Canceled; one that reports nil ran once; every plain task ran; and each
// pool's Stats add up once idle.
func TestAdvLifeStormEndsInAShutdownGivingUp(t *testing.T) {
	t.Parallel()
	per := 300
	if testing.Short() {
		per = 80
	}
	root := crew.New(4, crew.WithTaskTimeout(50*time.Millisecond))
	mid := root.Sub(3, crew.WithPriority(1), crew.WithQueueSize(64))
	leaf := mid.Sub(2, crew.WithTaskTimeout(20*time.Millisecond))
	side := root.Sub(2, crew.WithRateLimit(20000, 8))
	pools := []*crew.Pool{root, mid, leaf, side}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 300*time.Microsecond, pools...)
	k := 0
	repeatUntil(&wg, stop, func() {
		k++
		root.Resize(1 + k%4)
		mid.Resize(1 + k%3)
		time.Sleep(200 * time.Microsecond)
	})
	var mu sync.Mutex
	var recs []*lifeRecord
	var waits sync.WaitGroup
	var plainAccepted, plainRan atomic.Int64
	body := func(r *lifeRecord) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if r.ran.Add(1)%4 == 0 {
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
			}
			return nil
		}
	}
	together(4, per, func(c, i int) {
		if i%8 == 0 {
			time.Sleep(200 * time.Microsecond) // let the storm act between the submits
		}
		p := pools[(c+i)%len(pools)]
		switch i % 5 {
		case 0, 1:
			r := &lifeRecord{}
			fn := body(r)
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) { return 1, fn(ctx) })
			if i%2 == 1 {
				r.canceled = f.Cancel()
			}
			waits.Add(1)
			go func() {
				defer waits.Done()
				_, r.err = f.Wait()
			}()
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		case 2:
			ctx, cancel := context.WithCancel(context.Background())
			g, _ := p.Group(ctx)
			rs := []*lifeRecord{{group: true}, {group: true}, {group: true}}
			for j, r := range rs {
				g.Go(body(r))
				if j == 1 {
					cancel()
				}
			}
			res, _ := crew.NewResults[int](context.Background(), p)
			rr := &lifeRecord{group: true}
			fn := body(rr)
			res.Go(func(ctx context.Context) (int, error) { return 1, fn(ctx) })
			waits.Add(1)
			go func() {
				defer waits.Done()
				err := g.Wait()
				for _, r := range rs {
					r.err = err
				}
				_, rr.err = res.Wait()
				cancel()
			}()
			mu.Lock()
			recs = append(recs, append(rs, rr)...)
			mu.Unlock()
		case 3:
			rs := []*lifeRecord{{group: true}, {group: true}}
			waits.Add(1)
			go func() {
				defer waits.Done()
				_, err := crew.Map(context.Background(), p, rs, func(ctx context.Context, r *lifeRecord) (int, error) {
					return 1, body(r)(ctx)
				})
				for _, r := range rs {
					r.err = err
				}
			}()
			mu.Lock()
			recs = append(recs, rs...)
			mu.Unlock()
		case 4:
			if p.Submit(func() { plainRan.Add(1) }) == nil {
				plainAccepted.Add(1)
			}
		}
	})
	close(stop)
	wg.Wait()
	for _, p := range pools {
		p.Resume()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := root.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v", err)
	}
	awaitReturn(t, "the waits", goRun(waits.Wait))
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	for i, r := range recs {
		n := r.ran.Load()
		switch {
		case n > 1:
			t.Fatalf("function %d ran %d times", i, n)
		case r.canceled && (n != 0 || !errors.Is(r.err, context.Canceled)):
			t.Fatalf("function %d: Cancel true, ran %d times, Wait %v", i, n, r.err)
		case !r.group && r.err == nil && n != 1:
			t.Fatalf("function %d: Wait nil, ran %d times", i, n)
		case !r.group && r.err != nil && n == 0 && !r.canceled && !errors.Is(r.err, crew.ErrStopped):
			t.Fatalf("function %d: never ran, Wait %v, want ErrStopped", i, r.err)
		}
	}
	if plainRan.Load() != plainAccepted.Load() {
		t.Errorf("%d of %d accepted plain tasks ran", plainRan.Load(), plainAccepted.Load())
	}
	for i, p := range pools {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
}

// TestAdvLifeSkippedFunctionsAreNotTimed: Stats: "WaitTime counts every task that started,
// RunTime every task that finished"; a function skipped (its context ended, or its future
// canceled) never starts, so neither histogram of its sub-pool counts it, while the functions
// that ran, on a worker or in a lent slot, count in both.
func TestAdvLifeSkippedFunctionsAreNotTimed(t *testing.T) {
	t.Parallel()
	root := crew.New(1)
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithLatencyHistograms()).Sub(1, crew.WithLatencyHistograms())
	root.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	g, _ := sub.Group(ctx)
	for range 3 {
		g.Go(func(context.Context) error { return nil })
	}
	f := crew.Go(sub, func() (int, error) { return 1, nil })
	live := crew.GoContext(context.Background(), sub, func(ctx context.Context) (int, error) {
		lg, _ := sub.Group(ctx)
		lg.Go(func(context.Context) error { return nil }) // run in the lent slot
		return 1, lg.Wait()
	})
	cancel()
	if !f.Cancel() {
		t.Fatal("Cancel of a function queued on a paused pool = false")
	}
	root.Resume()
	if err := g.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("group: %v, want context.Canceled", err)
	}
	if _, err := futureResult(t, live); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	s := sub.Stats()
	idleIdentity(t, "sub-pool", s)
	if s.Skipped != 4 || s.Completed != 2 {
		t.Fatalf("Stats %+v, want 4 skipped, 2 completed", s)
	}
	if s.WaitTime == nil || s.RunTime == nil || s.WaitTime.Count != 2 || s.RunTime.Count != 2 {
		t.Fatalf("WaitTime %+v, RunTime %+v; want each to count the 2 functions that ran", s.WaitTime, s.RunTime)
	}
}

// TestAdvLifeCancelRacingDiscardOldestIsDecidedOnce: Future.Cancel races with DiscardOldest
// for the futures waiting in a full queue of a sub-pool, while plain submits push them out.
// Each is claimed once: a Cancel that reports true leaves it unrun with context.Canceled,
// counted in Skipped; otherwise it was dropped (ErrDiscarded, counted in Discarded, never
// handed to the discard handler, which gets the plain tasks only) or it ran once. Stats add up.
func TestAdvLifeCancelRacingDiscardOldestIsDecidedOnce(t *testing.T) {
	t.Parallel()
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for range rounds {
		var handed atomic.Int32
		root := crew.New(1)
		sub := root.Sub(1, crew.WithQueueSize(4), crew.WithOverflow(crew.DiscardOldest),
			crew.WithDiscardHandler(func(v any) {
				if _, ok := v.(func()); !ok {
					t.Errorf("the discard handler got %T, want a plain task", v)
				}
				handed.Add(1)
			}))
		release := holdWorkers(t, plainPool{sub}, 1, 0)
		fs := goFutures(sub, 0, 4)
		var plainRan atomic.Int32
		start := make(chan struct{})
		canceller := goRun(func() {
			<-start
			for _, lf := range fs {
				lf.canceled = lf.f.Cancel()
			}
		})
		pusher := goRun(func() {
			<-start
			for range 4 {
				if err := sub.Submit(func() { plainRan.Add(1) }); err != nil {
					t.Errorf("Submit = %v", err)
				}
			}
		})
		close(start)
		awaitReturn(t, "the cancels", canceller)
		awaitReturn(t, "the submits", pusher)
		release()
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		var canceled, dropped, ran uint64
		for j, lf := range fs {
			err := futureErr(t, lf.f)
			n := lf.ran.Load()
			switch {
			case lf.canceled:
				canceled++
				if n != 0 || !errors.Is(err, context.Canceled) {
					t.Fatalf("future %d: Cancel true, ran %d times, Wait = %v", j, n, err)
				}
			case errors.Is(err, crew.ErrDiscarded):
				dropped++
				if n != 0 {
					t.Fatalf("future %d: dropped, ran %d times", j, n)
				}
			default:
				ran++
				if n != 1 || err != nil {
					t.Fatalf("future %d: Cancel false, ran %d times, Wait = %v", j, n, err)
				}
			}
		}
		s := sub.Stats()
		idleIdentity(t, "sub-pool", s)
		plainDropped := uint64(4 - plainRan.Load())
		if s.Skipped != canceled || s.Discarded != dropped+plainDropped || uint64(handed.Load()) != plainDropped {
			t.Fatalf("Stats %+v; %d canceled, %d futures and %d plain tasks dropped, %d handed to the handler",
				s, canceled, dropped, plainDropped, handed.Load())
		}
		idleIdentity(t, "root", root.Stats())
	}
}

// TestAdvLifeContextEndingWhileBlockedOnAFullSubPoolQueue: GoContext on a sub-pool whose
// bounded queue is full "waits for room until ctx ends": when ctx ends with a cause, fn is not
// accepted, Wait returns the cause, and the sub-pool counts the submit in Canceled, not in
// Accepted. A Group.Go blocked the same way waits for room as Submit does, and its function,
// accepted after its group's context ended, is skipped with the cause.
func TestAdvLifeContextEndingWhileBlockedOnAFullSubPoolQueue(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(2).Sub(1, crew.WithQueueSize(1))
	release := holdWorkers(t, plainPool{sub}, 1, 1)
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	var ran atomic.Int32
	var f *crew.Future[int]
	blockedGo := goRun(func() {
		f = crew.GoContext(ctx, sub, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	})
	g, _ := sub.Group(ctx)
	blockedGroup := goRun(func() { g.Go(func(context.Context) error { ran.Add(1); return nil }) })
	waitFor(t, "two submitters blocked", func() bool { return crew.BlockedSubmitters(sub) == 2 })
	cancel(cause)
	awaitReturn(t, "GoContext", blockedGo)
	if _, err := futureResult(t, f); !errors.Is(err, cause) {
		t.Errorf("GoContext whose ctx ended while it waited for room: %v, want the cause", err)
	}
	if s := sub.Stats(); s.Canceled != 1 || s.Accepted != 2 {
		t.Errorf("Stats %+v, want 1 canceled submit, 2 accepted (the held tasks)", s)
	}
	stillBlocked(t, "Group.Go on a full queue", blockedGroup)
	release()
	awaitReturn(t, "Group.Go", blockedGroup)
	if err := g.Wait(); !errors.Is(err, cause) {
		t.Errorf("Group.Wait = %v, want the cause", err)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	s := sub.Stats()
	idleIdentity(t, "sub-pool", s)
	if ran.Load() != 0 || s.Skipped != 1 || s.Canceled != 1 {
		t.Errorf("%d functions ran; Stats %+v; want none, 1 skipped, 1 canceled", ran.Load(), s)
	}
}

// TestAdvLifeStopNowRacingShutdownGivingUp: StopNow and a Shutdown whose context has ended
// race over a pool and its sub-pools with plain tasks and functions of GoContext and a Group
// waiting behind a held worker. Every plain task is handed back by StopNow or runs, never
// both; no function runs, each fails with ErrStopped (taken out by StopNow, or skipped by the
// Shutdown); Returned and Skipped split them, and every pool's Stats add up.
func TestAdvLifeStopNowRacingShutdownGivingUp(t *testing.T) {
	t.Parallel()
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for range rounds {
		root := crew.New(1)
		mid := root.Sub(1, crew.WithPriority(2))
		leaf := mid.Sub(1)
		pools := []*crew.Pool{root, mid, leaf}
		release := holdWorkers(t, plainPool{root}, 1, 0)
		var fs []*lifeFuture
		var plain [3]atomic.Int32
		var groups []*crew.Group
		var fnRan atomic.Int32
		for i, p := range pools {
			fs = append(fs, goFutures(p, i, 4)...)
			g, _ := p.Group(context.Background())
			g.Go(func(context.Context) error { fnRan.Add(1); return nil })
			groups = append(groups, g)
			for range 3 {
				must(t, p.Submit(func() { plain[i].Add(1) }))
			}
		}
		start := make(chan struct{})
		var handed []func()
		stopper := goRun(func() {
			<-start
			handed = root.StopNow()
		})
		var shutErr error
		shutter := goRun(func() {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			<-start
			shutErr = root.Shutdown(ctx)
		})
		close(start)
		awaitReturn(t, "StopNow", stopper)
		awaitReturn(t, "Shutdown", shutter)
		if shutErr != nil && !errors.Is(shutErr, context.Canceled) {
			t.Fatalf("Shutdown = %v", shutErr)
		}
		release()
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		for j, lf := range fs {
			// A Go future has no context: the Shutdown cannot skip it, so StopNow took it or
			// it ran.
			if err := futureErr(t, lf.f); errors.Is(err, crew.ErrStopped) == (lf.ran.Load() == 1) {
				t.Fatalf("future %d: ran %d times, Wait = %v", j, lf.ran.Load(), err)
			}
		}
		for i, g := range groups {
			if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("group on pool %d: %v, want ErrStopped", i, err)
			}
		}
		ranPlain := int(plain[0].Load() + plain[1].Load() + plain[2].Load())
		if fnRan.Load() != 0 || ranPlain+len(handed) != 9 {
			t.Fatalf("%d group functions ran; %d plain tasks ran and %d were handed back, want 9 in all",
				fnRan.Load(), ranPlain, len(handed))
		}
		for i, p := range pools {
			idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
		}
	}
}
