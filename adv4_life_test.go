package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// ownCtx is a context.Context of the caller's own type, not built by package context: its
// Done, Err and Value are its own, so package context and crew can rely on nothing but the
// interface. Its Err is set before Done is closed, as the interface requires.
type ownCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
	key  any
	val  any
}

func newOwnCtx(key, val any) *ownCtx { return &ownCtx{done: make(chan struct{}), key: key, val: val} }

func (c *ownCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *ownCtx) Done() <-chan struct{}       { return c.done }

func (c *ownCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *ownCtx) Value(key any) any {
	if key == c.key {
		return c.val
	}
	return nil
}

// end ends c with err; a second end does nothing.
func (c *ownCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}

// wrapCtx is a context of the caller's own type wrapping another, as a framework's request
// context does: it adds a value and delegates the rest.
type wrapCtx struct {
	context.Context
	tag string
}

type wrapKey struct{}

func (c wrapCtx) Value(key any) any {
	if key == (wrapKey{}) {
		return c.tag
	}
	return c.Context.Value(key)
}

type ownKey struct{}

// TestAdvLifeOwnContextTypeSkipsQueuedFunctionsWithItsError: GoContext, Group.Go, Results.Go,
// Map and ForEach: "a function given with a context whose context has ended before a worker
// takes it never runs; it is counted in Stats.Skipped ... and its future, group or map sees
// context.Cause of that context". The context is of the caller's own type (its Err is its
// own error, which is then its cause), on a sub-pool and a sub-pool of it, whose parent's one
// worker is held by a plain task. Once released, nothing skipped runs, every wait returns
// the context's error, each pool counts its own skipped functions, and a function that was
// running when the context ended sees its context end with that error.
func TestAdvLifeOwnContextTypeSkipsQueuedFunctionsWithItsError(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	defer root.StopAndWait()
	mid := root.Sub(2)
	leaf := mid.Sub(1, crew.WithPriority(2))
	gone := errors.New("the caller's context went away")
	ctx := newOwnCtx(ownKey{}, "mine")

	// One function runs, watching its context, and takes one of root's two workers; a plain
	// task takes the other.
	watching := make(chan struct{})
	watcher := crew.GoContext(ctx, leaf, func(ctx context.Context) (string, error) {
		if v, _ := ctx.Value(ownKey{}).(string); v != "mine" {
			t.Errorf("the function's context lost the caller's value: %v", ctx.Value(ownKey{}))
		}
		close(watching)
		<-ctx.Done()
		return "watched", context.Cause(ctx)
	})
	awaitReturn(t, "the watching function to start", watching)
	release := holdWorkers(t, plainPool{root}, 1, 0)

	var ran atomic.Int64
	fn := func(context.Context) error { ran.Add(1); return nil }
	futures := []*crew.Future[int]{
		crew.GoContext(ctx, mid, func(context.Context) (int, error) { ran.Add(1); return 1, nil }),
		crew.GoContext(ctx, leaf, func(context.Context) (int, error) { ran.Add(1); return 1, nil }),
	}
	g, _ := mid.Group(ctx)
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
	var mapped []int
	mapDone := goRun(func() {
		mapped, mapErr = crew.Map(ctx, mid, []int{1, 2, 3, 4}, func(ctx context.Context, v int) (int, error) { return v, fn(ctx) })
	})
	eachDone := goRun(func() {
		eachErr = crew.ForEach(ctx, leaf, countTo(4), func(ctx context.Context, _ int) error { return fn(ctx) })
	})
	// mid: a future, 3 of g, Map's 2 (mid's limit); leaf: a future, 3 of all, 2 of r, ForEach's 1.
	awaitStats(t, mid, "mid's functions queued", func(s crew.Stats) bool { return s.Waiting >= 1+3+2 })
	awaitStats(t, leaf, "leaf's functions queued", func(s crew.Stats) bool { return s.Waiting == 1+3+2+1 })
	var plainRan atomic.Int32
	must(t, leaf.Submit(func() { plainRan.Add(1) }))
	must(t, mid.Submit(func() { plainRan.Add(1) }))

	ctx.end(gone)
	if v, err := watcher.Wait(); v != "watched" || !errors.Is(err, gone) {
		t.Errorf("the running function: (%q, %v), want its context ended with the caller's error", v, err)
	}
	release()

	waits := map[string]error{"Group": g.Wait(), "GroupAll": all.Wait()}
	_, waits["Results"] = r.Wait()
	for i, f := range futures {
		_, err := f.Wait()
		waits["future "+string(rune('0'+i))] = err
	}
	awaitReturn(t, "Map", mapDone)
	awaitReturn(t, "ForEach", eachDone)
	waits["Map"], waits["ForEach"] = mapErr, eachErr
	for name, err := range waits {
		if !errors.Is(err, gone) {
			t.Errorf("%s: %v, want the context's own error", name, err)
		}
	}
	if len(mapped) != 4 {
		t.Errorf("Map returned %d values, want 4", len(mapped))
	}
	awaitReturn(t, "root.Wait", goRun(root.Wait))
	if ran.Load() != 0 || plainRan.Load() != 2 {
		t.Fatalf("%d skipped functions ran; %d of 2 plain tasks ran", ran.Load(), plainRan.Load())
	}
	ms, ls := mid.Stats(), leaf.Stats()
	idleIdentity(t, "mid", ms)
	idleIdentity(t, "leaf", ls)
	idleIdentity(t, "root", root.Stats())
	// leaf: the future, 3 of all, 2 of r and 1 of ForEach skipped; the watcher completed.
	if ls.Skipped != 1+3+2+1 || ls.Completed != 2 {
		t.Errorf("leaf: %+v, want 7 skipped, 2 completed (the watcher and the plain task)", ls)
	}
	// mid counts leaf's workers among its tasks too.
	if ms.Skipped < 1+3+2 || ms.Completed < 1 {
		t.Errorf("mid: %+v, want at least 6 skipped and the plain task completed", ms)
	}
}

// TestAdvLifeWaitsHelpThroughAContextOfTheCallersOwnType: "Waits that help: when a function
// running on pool P (or on a sub-pool of P) makes a group, results, map, stream or future on P
// from the context crew gave it (or one derived from it), that call's wait ... runs its own
// not-yet-started functions on the calling goroutine ... So nested fork/join of any depth
// completes on New(1), also with WithQueueSize(1)". Here each level wraps the context it was
// given in a context type of its own (as a framework's request context does) before it makes
// its group, results, future or map, on a sub-pool of a one-worker pool with a queue of one.
func TestAdvLifeWaitsHelpThroughAContextOfTheCallersOwnType(t *testing.T) {
	t.Parallel()
	root := crew.New(1, crew.WithQueueSize(1))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithQueueSize(1))
	var leaves atomic.Int64
	var walk func(ctx context.Context, p *crew.Pool, depth int) error
	walk = func(ctx context.Context, p *crew.Pool, depth int) error {
		if ctx.Value(wrapKey{}) == nil && depth < 3 {
			return errors.New("lost the wrapper's value")
		}
		if depth == 0 {
			leaves.Add(1)
			return nil
		}
		own := wrapCtx{ctx, "level"}
		switch depth % 4 {
		case 3:
			g, _ := p.Group(own)
			for range 3 {
				g.Go(func(ctx context.Context) error { return walk(ctx, p, depth-1) })
			}
			return g.Wait()
		case 2:
			r, _ := crew.NewResults[int](own, p)
			for range 3 {
				r.Go(func(ctx context.Context) (int, error) { return 1, walk(ctx, p, depth-1) })
			}
			_, err := r.Wait()
			return err
		case 1:
			fs := make([]*crew.Future[int], 3)
			for i := range fs {
				fs[i] = crew.GoContext(own, p, func(ctx context.Context) (int, error) { return 1, walk(ctx, p, depth-1) })
			}
			for _, f := range fs {
				if _, err := f.Wait(); err != nil {
					return err
				}
			}
			return nil
		default:
			_, err := crew.Map(own, p, []int{1, 2, 3}, func(ctx context.Context, _ int) (int, error) { return 1, walk(ctx, p, depth-1) })
			return err
		}
	}
	for _, p := range []*crew.Pool{root, sub} {
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			return 0, walk(wrapCtx{ctx, "top"}, p, 3)
		})
		var err error
		awaitReturn(t, "a nested fork/join through wrapped contexts", goRun(func() { _, err = f.Wait() }))
		must(t, err)
	}
	if got := leaves.Load(); got != 2*27 {
		t.Fatalf("%d leaves ran, want %d", got, 2*27)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// endLog records, for one function, the order in which its Context hooks' end functions ran.
type endLog struct {
	mu    sync.Mutex
	order []string
	err   error
}

type endLogKey struct{}
type innerKey struct{}

// TestAdvLifeContextHooksSeeEachRunOnceWhateverRunsIt: Hooks.Context "is called for each
// function given with a context ... on the goroutine that runs it, just before it runs ...
// A skipped function is not seen. The end function it returns ... is called on that
// goroutine once the function has ended, with the error it returned, or with a non-nil error
// if it panicked or called runtime.Goexit"; "Several WithHooks options all apply, in the
// order given": each Context hook is given what the one before returned, and the function
// receives the last. Functions of every door (GoContext, GroupAll, Results, Map, ForEach,
// MapSeq) end every way (nil, an error, panic(nil), runtime.Goexit) on a pool whose full
// queue makes submitters run them (CallerRuns) and whose functions make nested groups whose
// waits run them: each function that runs is seen by both hooks once, receives both values,
// and both ends run once, the later hook's first, with its outcome; none is skipped. A
// function that calls runtime.Goexit while its submitter runs it ends the submitter's
// goroutine, whose later calls are then never made; what it had submitted still runs, and
// p.Wait waits for it.
func TestAdvLifeContextHooksSeeEachRunOnceWhateverRunsIt(t *testing.T) {
	t.Parallel()
	var entered, ended, endedNil, started, finished, bodies, bodyErrs atomic.Int64
	outer := crew.Hooks{
		Context: func(ctx context.Context) (context.Context, func(error)) {
			entered.Add(1)
			log := &endLog{}
			return context.WithValue(ctx, endLogKey{}, log), func(err error) {
				log.mu.Lock()
				defer log.mu.Unlock()
				log.order = append(log.order, "outer")
				if len(log.order) != 2 || log.order[0] != "inner" {
					t.Errorf("ends ran in the order %v, want inner, then outer", log.order)
				}
				if (err == nil) != (log.err == nil) {
					t.Errorf("the two ends got %v and %v", log.err, err)
				}
				ended.Add(1)
				if err == nil {
					endedNil.Add(1)
				}
			}
		},
		Started:  func(crew.TaskInfo) { started.Add(1) },
		Finished: func(crew.TaskInfo) { finished.Add(1) },
	}
	inner := crew.Hooks{
		Context: func(ctx context.Context) (context.Context, func(error)) {
			log, _ := ctx.Value(endLogKey{}).(*endLog)
			if log == nil {
				t.Error("the second Context hook was not given the first one's context")
				return nil, nil
			}
			return context.WithValue(ctx, innerKey{}, true), func(err error) {
				log.mu.Lock()
				defer log.mu.Unlock()
				log.order = append(log.order, "inner")
				log.err = err
			}
		},
	}
	p := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(outer), crew.WithHooks(inner))
	defer p.StopAndWait()

	errBody := errors.New("body error")
	// body ends the i-th function one of four ways; it counts the ones that return nil.
	body := func(ctx context.Context, i int) error {
		bodies.Add(1)
		if ctx.Value(endLogKey{}) == nil || ctx.Value(innerKey{}) == nil {
			t.Errorf("function %d did not receive the hooks' context", i)
		}
		switch i % 4 {
		case 1:
			bodyErrs.Add(1)
			return errBody
		case 2:
			bodyErrs.Add(1)
			panic(nil)
		case 3:
			bodyErrs.Add(1)
			runtime.Goexit()
		}
		return nil
	}
	const n = 12
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bg := context.Background()
			fs := make([]*crew.Future[int], n)
			for i := range fs {
				fs[i] = crew.GoContext(bg, p, func(ctx context.Context) (int, error) { return i, body(ctx, i) })
			}
			all, _ := p.GroupAll(bg)
			for i := range n {
				all.Go(func(ctx context.Context) error { return body(ctx, i) })
			}
			// A nested group made inside a function: its wait runs what no worker took. The
			// function is counted as the others are; it ends with an error when a function of
			// its group that it ran itself (CallerRuns) calls runtime.Goexit on its goroutine.
			all.Go(func(ctx context.Context) error {
				bodies.Add(1)
				returned := false
				defer func() {
					if !returned {
						bodyErrs.Add(1)
					}
				}()
				inner, _ := p.GroupAll(ctx)
				for i := range n {
					inner.Go(func(ctx context.Context) error { return body(ctx, i) })
				}
				if err := inner.Wait(); err == nil {
					t.Error("the nested group's Wait returned nil, want the joined errors")
				}
				returned = true
				return nil
			})
			r, _ := crew.NewResults[int](bg, p)
			for i := range n {
				r.Go(func(ctx context.Context) (int, error) { return i, body(ctx, 4*i) }) // returns nil
			}
			_, _ = crew.Map(bg, p, make([]int, n), func(ctx context.Context, _ int) (int, error) { return 0, body(ctx, 0) })
			_ = crew.ForEach(bg, p, countTo(n), func(ctx context.Context, i int) error { return body(ctx, 4*i) })
			for v, err := range crew.MapSeq(bg, p, countTo(n), func(ctx context.Context, i int) (int, error) { return i, body(ctx, 4*i) }) {
				if err != nil {
					t.Errorf("MapSeq yielded (%d, %v)", v, err)
				}
			}
			for i, f := range fs {
				if _, err := f.Wait(); (err == nil) != (i%4 == 0) {
					t.Errorf("caller %d: future %d: %v", c, i, err)
				}
			}
			if err := all.Wait(); err == nil {
				t.Error("GroupAll's Wait returned nil, want the joined errors")
			}
			if _, err := r.Wait(); err != nil {
				t.Errorf("Results: %v", err)
			}
		}()
	}
	awaitReturn(t, "the callers", goRun(wg.Wait))
	awaitReturn(t, "Wait", goRun(p.Wait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	b := bodies.Load()
	if entered.Load() != b || ended.Load() != b || endedNil.Load() != b-bodyErrs.Load() {
		t.Fatalf("%d functions ran, %d with an error; Context hook called %d times, ends %d times (%d with nil)",
			b, bodyErrs.Load(), entered.Load(), ended.Load(), endedNil.Load())
	}
	if s.Skipped != 0 || started.Load() != finished.Load() || started.Load() != b {
		t.Fatalf("Stats %+v; Started %d, Finished %d, for %d functions", s, started.Load(), finished.Load(), b)
	}
	t.Logf("%d functions, %d caller-ran", b, s.CallerRan)
}

// infoLog keeps the TaskInfo of every Started and Finished hook call of a pool.
type infoLog struct {
	mu                sync.Mutex
	started, finished []crew.TaskInfo
}

func (l *infoLog) option() crew.Option {
	return crew.WithHooks(crew.Hooks{
		Started: func(ti crew.TaskInfo) {
			l.mu.Lock()
			l.started = append(l.started, ti)
			l.mu.Unlock()
		},
		Finished: func(ti crew.TaskInfo) {
			l.mu.Lock()
			l.finished = append(l.finished, ti)
			l.mu.Unlock()
		},
	})
}

func (l *infoLog) snapshot() (started, finished []crew.TaskInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]crew.TaskInfo(nil), l.started...), append([]crew.TaskInfo(nil), l.finished...)
}

// TestAdvLifePanicNilAndGoexitEndEachDoorOnceWithTheirTaskInfo: on a sub-pool of a sub-pool
// held by its grandparent's Pause, one task of each door ends in panic(nil) or
// runtime.Goexit. A plain task's panic(nil) "goes to the panic handler", counts in Panicked
// and its Finished has Panicked set; a future's, group's or map's "becomes a *PanicError
// returned by Wait" and its Finished has Panicked false ("Panicked is false for a function
// whose panic goes to its own Wait"); a Goexit ends the function, its Wait returns an error,
// and it counts in Completed. Started's TaskInfo.Wait covers the pause ("the time from its
// submit to this moment"), Finished's Run covers the time the task ran. The group's other
// queued function is skipped once the panic canceled the group's context.
func TestAdvLifePanicNilAndGoexitEndEachDoorOnceWithTheirTaskInfo(t *testing.T) {
	t.Parallel()
	const held, ran = 30 * time.Millisecond, 20 * time.Millisecond
	var handled atomic.Int32
	var handledValue atomic.Value
	root := crew.New(1)
	defer root.StopAndWait()
	mid := root.Sub(1)
	var log infoLog
	leaf := mid.Sub(1, log.option(), crew.WithPanicHandler(func(v any, _ []byte) {
		handled.Add(1)
		handledValue.Store([]any{v})
	}))
	root.Pause()
	paused := time.Now()
	must(t, leaf.Submit(func() { time.Sleep(ran); panic(nil) }))
	goPanics := crew.Go(leaf, func() (int, error) { panic(nil) })
	ctxPanics := crew.GoContext(context.Background(), leaf, func(context.Context) (int, error) { panic(nil) })
	ctxExits := crew.GoContext(context.Background(), leaf, func(context.Context) (int, error) { runtime.Goexit(); return 1, nil })
	goExits := crew.Go(leaf, func() (int, error) { runtime.Goexit(); return 1, nil })
	g, _ := leaf.Group(context.Background())
	var groupRan atomic.Int32
	g.Go(func(context.Context) error { groupRan.Add(1); panic(nil) })
	g.Go(func(context.Context) error { groupRan.Add(1); return nil }) // skipped
	var mapErr error
	mapDone := goRun(func() {
		_, mapErr = crew.Map(context.Background(), leaf, []int{1}, func(context.Context, int) (int, error) { runtime.Goexit(); return 1, nil })
	})
	awaitStats(t, leaf, "the tasks queued", func(s crew.Stats) bool { return s.Waiting == 8 })
	for time.Since(paused) < held {
		time.Sleep(held - time.Since(paused))
	}
	root.Resume()

	want := panicNilValue()
	for name, f := range map[string]*crew.Future[int]{"Go": goPanics, "GoContext": ctxPanics} {
		_, err := f.Wait()
		var pe *crew.PanicError
		if !errors.As(err, &pe) || pe.Value != want {
			t.Errorf("%s of a panic(nil): %v, want a *PanicError of %v", name, err, want)
		}
	}
	for name, f := range map[string]*crew.Future[int]{"Go": goExits, "GoContext": ctxExits} {
		if v, err := f.Wait(); err == nil || v != 0 {
			t.Errorf("%s of a Goexit: (%d, %v), want an error", name, v, err)
		}
	}
	var pe *crew.PanicError
	if err := g.Wait(); !errors.As(err, &pe) || pe.Value != want || groupRan.Load() != 1 {
		t.Errorf("Group: %v with %d functions run, want the *PanicError of panic(nil) and the other skipped", err, groupRan.Load())
	}
	awaitReturn(t, "Map", mapDone)
	if mapErr == nil {
		t.Error("Map of a Goexit returned nil")
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	if handled.Load() != 1 || handledValue.Load().([]any)[0] != want {
		t.Errorf("the panic handler got %d panics (%v), want 1 of %v", handled.Load(), handledValue.Load(), want)
	}
	s := leaf.Stats()
	idleIdentity(t, "leaf", s)
	if s.Panicked != 1 || s.Skipped != 1 || s.Accepted != 8 {
		t.Errorf("Stats %+v, want 8 accepted, the plain task panicked, the group's second skipped", s)
	}
	started, finished := log.snapshot()
	if len(started) != 7 || len(finished) != 7 {
		t.Fatalf("%d Started and %d Finished, want 7 each (all but the skipped)", len(started), len(finished))
	}
	panicked := 0
	for _, ti := range finished {
		if ti.Panicked {
			panicked++
			if ti.Run < ran {
				t.Errorf("the plain task's Finished: Run %v, want at least %v", ti.Run, ran)
			}
		}
		if ti.Wait < held {
			t.Errorf("Finished %+v: Wait below the %v the pause held it", ti, held)
		}
	}
	for _, ti := range started {
		if ti.Wait < held || ti.Run != 0 || ti.Panicked {
			t.Errorf("Started %+v: want Wait of at least %v, nothing else", ti, held)
		}
	}
	if panicked != 1 {
		t.Errorf("%d Finished with Panicked, want 1 (the plain task's): %+v", panicked, finished)
	}
}

// TestAdvLifeStopNowOfTheRootFailsAGrandchildsQueuedFunctions: StopNow "includes the tasks of
// the pool's sub-pools and of theirs, at any depth ... Functions of Go, Group, Results, Map and
// ForEach taken out fail with ErrStopped, so their Wait returns"; each counts in
// Stats.Returned of its own pool; "no task is both run and accounted as not run". A paused
// root holds a backlog of plain, keyed and context functions in a sub-pool of a sub-pool (at
// a priority), and of its own; StopNow of the root hands back the plain ones, fails the
// others, a later Cancel reports false, none of them runs after Resume, and every pool
// accounts for every task once.
func TestAdvLifeStopNowOfTheRootFailsAGrandchildsQueuedFunctions(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	defer root.StopAndWait()
	mid := root.Sub(2)
	var tally hookTally
	leaf := mid.Sub(2, crew.WithPriority(1), tally.option())
	keyed := crew.NewKeyed[int](leaf)
	root.Pause()
	var ran atomic.Int64
	plain := func() { ran.Add(1) }
	fn := func(context.Context) error { ran.Add(1); return nil }
	bg := context.Background()
	for range 2 {
		must(t, root.Submit(plain))
		must(t, leaf.Submit(plain))
		must(t, keyed.Submit(1, plain))
	}
	futures := []*crew.Future[int]{
		crew.GoContext(bg, leaf, func(context.Context) (int, error) { ran.Add(1); return 1, nil }),
		crew.Go(leaf, func() (int, error) { ran.Add(1); return 1, nil }),
		crew.GoContext(bg, mid, func(context.Context) (int, error) { ran.Add(1); return 1, nil }),
	}
	g, _ := leaf.Group(bg)
	all, _ := mid.GroupAll(bg)
	for range 2 {
		g.Go(fn)
		all.Go(fn)
	}
	r, _ := crew.NewResults[int](bg, leaf)
	r.Go(func(ctx context.Context) (int, error) { return 1, fn(ctx) })
	var mapErr, eachErr error
	mapDone := goRun(func() {
		_, mapErr = crew.Map(bg, leaf, []int{1, 2, 3}, func(ctx context.Context, v int) (int, error) { return v, fn(ctx) })
	})
	eachDone := goRun(func() {
		eachErr = crew.ForEach(bg, mid, countTo(5), func(ctx context.Context, _ int) error { return fn(ctx) })
	})
	// leaf: 2 plain, a keyed turn, 2 futures, 2 of g, 1 of r, 2 of Map (leaf's limit).
	awaitStats(t, leaf, "leaf's backlog", func(s crew.Stats) bool { return s.Waiting == 2+1+2+2+1+2 })
	awaitStats(t, mid, "mid's backlog", func(s crew.Stats) bool { return s.Waiting >= 1+2+2 })

	out := root.StopNow()
	for _, task := range out {
		task() // handed back: the caller may run them; they count as ran here
	}
	if len(out) != 2+2+2 { // root's 2, leaf's 2 and the 2 keyed ones, each on its own
		t.Errorf("StopNow handed back %d tasks, want 6", len(out))
	}
	for i, f := range futures {
		if f.Cancel() {
			t.Errorf("future %d: Cancel after StopNow reported true", i)
		}
		if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("future %d: %v, want ErrStopped", i, err)
		}
	}
	for name, err := range map[string]error{"Group": g.Wait(), "GroupAll": all.Wait()} {
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("%s: %v, want ErrStopped", name, err)
		}
	}
	if _, err := r.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Results: %v, want ErrStopped", err)
	}
	awaitReturn(t, "Map", mapDone)
	awaitReturn(t, "ForEach", eachDone)
	if !errors.Is(mapErr, crew.ErrStopped) || !errors.Is(eachErr, crew.ErrStopped) {
		t.Errorf("Map: %v, ForEach: %v, want ErrStopped", mapErr, eachErr)
	}
	ranByHand := ran.Load()
	root.Resume()
	awaitReturn(t, "Wait", goRun(root.Wait))
	if ran.Load() != ranByHand || ranByHand != 2+2+2 {
		t.Errorf("%d tasks ran by hand (want the 6 plain and keyed ones), %d after Resume", ranByHand, ran.Load()-ranByHand)
	}
	if st, f := tally.started.Load(), tally.finished.Load(); st != 0 || f != 0 {
		t.Errorf("leaf's hooks: Started %d, Finished %d, want none", st, f)
	}
	ks := keyed.Stats()
	idleIdentity(t, "keyed", ks)
	if ks.Returned != 2 {
		t.Errorf("keyed: %+v, want its 2 tasks returned", ks)
	}
	for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
		s := p.Stats()
		idleIdentity(t, name, s)
		if s.Completed != 0 || s.Skipped != 0 || s.Returned == 0 {
			t.Errorf("%s: %+v, want every task returned, none completed or skipped", name, s)
		}
	}
}

// TestAdvLifeShutdownGivingUpEndsEveryRunningFunctionsContext: "Shutdown(ctx), when ctx ends
// before the pool has drained: queued functions with a context are skipped, and the contexts
// crew passed to running functions are canceled with cause ErrStopped; Shutdown returns
// ctx.Err() as now. Plain tasks still run." The running functions are of every kind crew
// runs: one on a sub-pool's worker, one a waiting function runs in its own slot, and one its
// submitter runs under CallerRuns, under WithTaskTimeout and a Context hook; each sees
// ErrStopped as its context's cause. A GoContext function queued in the sub-pool fails with
// ErrStopped, and the queued plain and keyed tasks run afterwards.
func TestAdvLifeShutdownGivingUpEndsEveryRunningFunctionsContext(t *testing.T) {
	t.Parallel()
	var hooked atomic.Int32
	p := crew.New(3, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns), crew.WithTaskTimeout(time.Hour),
		crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
			hooked.Add(1)
			return context.WithValue(ctx, innerKey{}, true), nil
		}}))
	sub := p.Sub(1)
	bg := context.Background()
	causes := make(chan error, 8)
	watching := make(chan struct{}, 8)
	watch := func(ctx context.Context) (int, error) {
		watching <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return 0, context.Cause(ctx)
	}
	awaitWatch := func(what string) {
		t.Helper()
		select {
		case <-watching:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not start; stats %+v", what, p.Stats())
		}
	}
	release := make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	defer released()
	plainStarted := make(chan struct{})
	must(t, p.Submit(func() { close(plainStarted); <-release })) // worker 1
	awaitReturn(t, "the plain task to start", plainStarted)
	onSub := crew.GoContext(bg, sub, watch) // worker 2
	awaitWatch("the sub-pool's function")
	lender := crew.GoContext(bg, p, func(ctx context.Context) (int, error) { // worker 3
		// No worker is free: the wait runs f itself, in this function's slot.
		return crew.GoContext(ctx, p, watch).Wait()
	})
	awaitWatch("the lent function")
	queued := crew.GoContext(bg, sub, func(context.Context) (int, error) { return 1, nil })
	var plainRan atomic.Int32
	keyed := crew.NewKeyed[string](sub)
	must(t, keyed.Submit("k", func() { plainRan.Add(1) }))
	for p.TrySubmit(func() { plainRan.Add(1) }) { // fills p's queue
	}
	var callerErr error
	callerDone := goRun(func() { _, callerErr = crew.GoContext(bg, p, watch).Wait() })
	awaitWatch("the caller-run function")

	sctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	for range 3 {
		select {
		case c := <-causes:
			if !errors.Is(c, crew.ErrStopped) {
				t.Errorf("a running function's context ended with %v, want ErrStopped", c)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a running function's context did not end")
		}
	}
	var err error
	awaitReturn(t, "the queued function to fail", goRun(func() { _, err = queued.Wait() }))
	if !errors.Is(err, crew.ErrStopped) {
		t.Errorf("the queued function: %v, want ErrStopped", err)
	}
	for name, f := range map[string]*crew.Future[int]{"sub-pool": onSub, "lender": lender} {
		if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("%s: %v, want ErrStopped", name, err)
		}
	}
	awaitReturn(t, "the caller-run function", callerDone)
	if !errors.Is(callerErr, crew.ErrStopped) {
		t.Errorf("the caller-run function: %v, want ErrStopped", callerErr)
	}
	released()
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if plainRan.Load() < 2 {
		t.Errorf("%d queued plain and keyed tasks ran after the Shutdown gave up, want them all", plainRan.Load())
	}
	// The lender, its lent function and the caller-run one; the sub-pool has no hooks.
	if hooked.Load() != 3 {
		t.Errorf("the Context hook saw %d functions, want 3", hooked.Load())
	}
	ps := p.Stats()
	idleIdentity(t, "pool", ps)
	if ps.CallerRan != 1 {
		t.Errorf("pool: %+v, want one function run by its caller", ps)
	}
	ss := sub.Stats()
	idleIdentity(t, "sub", ss)
	if ss.Skipped != 1 {
		t.Errorf("sub: %+v, want the queued function skipped", ss)
	}
	idleIdentity(t, "keyed", keyed.Stats())
}

// TestAdvLifeWithContextEndingStopsButCancelsNothing: WithContext: "when ctx ends, the pool
// stops as if by Pool.Stop, sub-pools included. Tasks already accepted still run; a submit
// ... made after ctx has ended returns ErrStopped"; Stop cancels nothing. So the functions
// given with a context of their own that are queued still run (they are not skipped), and a
// running function's context does not end, on the pool and on a sub-pool tied to a context
// of its own, whose end leaves the parent accepting.
func TestAdvLifeWithContextEndingStopsButCancelsNothing(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	pctx, pcancel := context.WithCancel(bg)
	defer pcancel()
	sctx, scancel := context.WithCancel(bg)
	defer scancel()
	p := crew.New(2, crew.WithContext(pctx))
	defer p.StopAndWait()
	sub := p.Sub(1, crew.WithContext(sctx))
	var ran atomic.Int32
	ctxErrs := make(chan error, 2)
	proceed := make(chan struct{})
	running := make(chan struct{}, 2)
	runner := func(ctx context.Context) (int, error) {
		running <- struct{}{}
		<-proceed
		ctxErrs <- ctx.Err()
		return 1, nil
	}
	held := []*crew.Future[int]{crew.GoContext(bg, p, runner), crew.GoContext(bg, sub, runner)}
	for range 2 {
		<-running
	}
	fn := func(context.Context) error { ran.Add(1); return nil }
	var futures []*crew.Future[int]
	var groups []*crew.Group
	for _, q := range []*crew.Pool{p, sub} {
		futures = append(futures, crew.GoContext(bg, q, func(context.Context) (int, error) { ran.Add(1); return 1, nil }))
		g, _ := q.Group(bg)
		g.Go(fn)
		groups = append(groups, g)
		must(t, q.Submit(func() { ran.Add(1) }))
	}
	awaitStats(t, sub, "sub's backlog", func(s crew.Stats) bool { return s.Waiting == 3 })

	scancel()
	waitFor(t, "the sub-pool to stop", sub.Stopped)
	if p.Stopped() {
		t.Fatal("the parent stopped with its sub-pool's context")
	}
	if err := sub.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("sub.Submit after its context ended = %v, want ErrStopped", err)
	}
	must(t, p.Submit(func() { ran.Add(1) }))
	pcancel()
	if _, err := crew.GoContext(bg, p, func(context.Context) (int, error) { return 1, nil }).Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("GoContext after the pool's context ended: %v, want ErrStopped", err)
	}
	close(proceed)
	for i, f := range held {
		must(t, returnsWithin(t, "a running function", func() error { _, err := f.Wait(); return err }))
		if err := <-ctxErrs; err != nil {
			t.Errorf("running function %d: its context ended (%v) when the pool's did", i, err)
		}
	}
	for i, f := range futures {
		if _, err := f.Wait(); err != nil {
			t.Errorf("queued future %d: %v, want it run", i, err)
		}
	}
	for i, g := range groups {
		if err := g.Wait(); err != nil {
			t.Errorf("group %d: %v, want its function run", i, err)
		}
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	if ran.Load() != 2*3+1 {
		t.Errorf("%d of 7 queued tasks ran", ran.Load())
	}
	for name, q := range map[string]*crew.Pool{"pool": p, "sub": sub} {
		s := q.Stats()
		idleIdentity(t, name, s)
		if s.Skipped != 0 {
			t.Errorf("%s: %+v, want nothing skipped", name, s)
		}
	}
}

// TestAdvLifeContextOfAPlainSubmitNeverSkipsItsTask: "Plain Submit tasks carry no context and
// are never skipped"; SubmitContext: "The task itself carries no context: once accepted it
// runs." Tasks accepted by Pool.SubmitContext, Keyed.SubmitContext and FuncPool.InvokeContext
// on a sub-pool of a paused pool (and on a paused FuncPool), whose context then ends, all run
// once after Resume; nothing counts as skipped.
func TestAdvLifeContextOfAPlainSubmitNeverSkipsItsTask(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithPriority(2), crew.WithQueueSize(8))
	keyed := crew.NewKeyed[int](sub)
	var ran atomic.Int32
	fp := crew.NewFunc(1, func(int) { ran.Add(1) })
	defer fp.StopAndWait()
	root.Pause()
	fp.Pause()
	ctx, cancel := context.WithCancelCause(context.Background())
	own := newOwnCtx(ownKey{}, 1)
	for _, c := range []context.Context{ctx, own} {
		must(t, sub.SubmitContext(c, func() { ran.Add(1) }))
		must(t, root.SubmitContext(c, func() { ran.Add(1) }))
		must(t, keyed.SubmitContext(c, 1, func() { ran.Add(1) }))
		must(t, keyed.SubmitContext(c, 2, func() { ran.Add(1) }))
		must(t, fp.InvokeContext(c, 1))
	}
	cancel(errors.New("gone"))
	own.end(errors.New("gone too"))
	root.Resume()
	fp.Resume()
	awaitReturn(t, "Wait", goRun(root.Wait))
	awaitReturn(t, "FuncPool.Wait", goRun(fp.Wait))
	if ran.Load() != 2*5 {
		t.Fatalf("%d of 10 tasks ran", ran.Load())
	}
	for name, s := range map[string]crew.Stats{"root": root.Stats(), "sub": sub.Stats(), "keyed": keyed.Stats(), "FuncPool": fp.Stats()} {
		idleIdentity(t, name, s)
		if s.Skipped != 0 {
			t.Errorf("%s: %+v, want nothing skipped", name, s)
		}
	}
}

// TestAdvLifeAnEndedContextIsRefusedOrSkippedAndCountedOnce: a submit whose context has already
// ended: SubmitContext, InvokeContext, Keyed.SubmitContext and GoContext return its error at
// once without accepting the task, "counted in Canceled" (and told to Rejected with that
// error), never in Accepted; a group or results made from that context accept their
// functions and skip them (Skipped, no Started hook), Wait returning its cause; Map and
// ForEach accept nothing and return ctx.Err(). Every refused submit counts in exactly one of
// Rejected and Canceled, and the idle identity holds.
func TestAdvLifeAnEndedContextIsRefusedOrSkippedAndCountedOnce(t *testing.T) {
	t.Parallel()
	var queuedHooks, startedHooks atomic.Int32
	var rejected []error
	var mu sync.Mutex
	hooks := crew.WithHooks(crew.Hooks{
		Queued:  func(crew.TaskInfo) { queuedHooks.Add(1) },
		Started: func(crew.TaskInfo) { startedHooks.Add(1) },
		Rejected: func(err error) {
			mu.Lock()
			rejected = append(rejected, err)
			mu.Unlock()
		},
	})
	root := crew.New(2)
	defer root.StopAndWait()
	p := root.Sub(2, hooks)
	fp := crew.NewFunc(1, func(int) { t.Error("an invoke with an ended context ran") }, hooks)
	defer fp.StopAndWait()
	keyed := crew.NewKeyed[int](p)
	cause := errors.New("the caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	never := func() { t.Error("a task with an ended context ran") }

	if err := p.SubmitContext(ctx, never); !errors.Is(err, context.Canceled) {
		t.Errorf("SubmitContext = %v, want context.Canceled", err)
	}
	if err := fp.InvokeContext(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("InvokeContext = %v, want context.Canceled", err)
	}
	if err := keyed.SubmitContext(ctx, 1, never); !errors.Is(err, context.Canceled) {
		t.Errorf("Keyed.SubmitContext = %v, want context.Canceled", err)
	}
	f := crew.GoContext(ctx, p, func(context.Context) (int, error) { never(); return 1, nil })
	if _, err := f.Wait(); !errors.Is(err, cause) {
		t.Errorf("GoContext: %v, want the context's cause", err)
	}
	if f.Cancel() {
		t.Error("Cancel of a future never accepted reported true")
	}
	g, _ := p.Group(ctx)
	g.Go(func(context.Context) error { never(); return nil })
	if !g.TryGo(func(context.Context) error { never(); return nil }) {
		t.Error("TryGo on a group of an ended context reported false, want it accepted and skipped")
	}
	if err := g.Wait(); !errors.Is(err, cause) {
		t.Errorf("Group: %v, want the context's cause", err)
	}
	r, _ := crew.NewResults[int](ctx, p)
	r.Go(func(context.Context) (int, error) { never(); return 1, nil })
	if vals, err := r.Wait(); !errors.Is(err, cause) || len(vals) != 1 || vals[0] != 0 {
		t.Errorf("Results: (%v, %v), want ([0], the context's cause)", vals, err)
	}
	if _, err := crew.Map(ctx, p, []int{1, 2}, func(context.Context, int) (int, error) { never(); return 1, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Map: %v, want context.Canceled", err)
	}
	if err := crew.ForEach(ctx, p, countTo(2), func(context.Context, int) error { never(); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("ForEach: %v, want context.Canceled", err)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	// Refused: SubmitContext and GoContext (the keyed submit counts in the Keyed's); accepted and skipped: the
	// group's two and the results' one.
	if s.Canceled != 2 || s.Rejected != 0 || s.Accepted != 3 || s.Skipped != 3 {
		t.Errorf("Stats %+v, want the refused submits Canceled, 3 accepted and skipped", s)
	}
	fs := fp.Stats()
	if fs.Canceled != 1 || fs.Accepted != 0 || fs.Rejected != 0 {
		t.Errorf("FuncPool: %+v, want one submit Canceled, nothing accepted", fs)
	}
	ks := keyed.Stats()
	if ks.Accepted != 0 || ks.Rejected != 0 || ks.Canceled != 1 {
		t.Errorf("keyed: %+v, want one submit Canceled, nothing accepted or rejected", ks)
	}
	if startedHooks.Load() != 0 {
		t.Errorf("Started hooks: %d, want none", startedHooks.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	// Queued: every submit above but Map's and ForEach's, which submit nothing; Rejected:
	// the four refused.
	if queuedHooks.Load() != 7 || len(rejected) != 4 {
		t.Errorf("hooks: Queued %d, Rejected %v; want 7 and 4", queuedHooks.Load(), rejected)
	}
	for _, err := range rejected {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, cause) {
			t.Errorf("Rejected hook got %v, want the context's error", err)
		}
	}
}

// TestAdvLifeGroupsFirstErrorSkipsEveryQueuedFunctionAmidStorms: "A group whose first error
// canceled its context therefore runs none of its functions still queued." A group on a
// sub-pool of limit 1 (under a priority sub-pool of a root whose limit a Resize storm moves,
// beside a busy sibling at a higher level, with Pause/Resume of the root going on) queues n
// functions behind one that fails: none of the others runs, each is counted in Skipped and
// seen by no Started hook, Wait returns the first error, and every pool of the tree accounts
// for every task once.
func TestAdvLifeGroupsFirstErrorSkipsEveryQueuedFunctionAmidStorms(t *testing.T) {
	t.Parallel()
	n := 200
	if testing.Short() {
		n = 50
	}
	root := crew.New(3)
	defer root.StopAndWait()
	mid := root.Sub(4, crew.WithPriority(1))
	var tally hookTally
	leaf := mid.Sub(1, tally.option())
	sibling := root.Sub(2, crew.WithPriority(2))
	stop := make(chan struct{})
	var storms sync.WaitGroup
	repeatUntil(&storms, stop, func() { root.Resize(1 + int(time.Now().UnixNano()%4)); runtime.Gosched() })
	pauseStorm(&storms, stop, 200*time.Microsecond, root, mid)
	repeatUntil(&storms, stop, func() { _ = sibling.Submit(func() { runtime.Gosched() }); time.Sleep(50 * time.Microsecond) })

	for round := range 3 {
		failing := errors.New("the first error")
		gate := make(chan struct{})
		g, gctx := leaf.Group(context.Background())
		started := make(chan struct{})
		g.Go(func(context.Context) error { close(started); <-gate; return failing })
		awaitReturn(t, "the failing function to start", started)
		var ran atomic.Int32
		for range n {
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		before := leaf.Stats().Skipped
		close(gate)
		if err := returnsWithin(t, "the group's Wait", g.Wait); !errors.Is(err, failing) {
			t.Fatalf("round %d: Wait = %v, want the first error", round, err)
		}
		if ran.Load() != 0 || context.Cause(gctx) != failing {
			t.Fatalf("round %d: %d queued functions ran after the first error; the context's cause %v",
				round, ran.Load(), context.Cause(gctx))
		}
		awaitStats(t, leaf, "the skipped functions counted", func(s crew.Stats) bool { return s.Skipped-before == uint64(n) })
	}
	close(stop)
	storms.Wait()
	root.Resume()
	mid.Resume()
	awaitReturn(t, "Wait", goRun(root.Wait))
	if st := tally.started.Load(); st != 3 || tally.finished.Load() != 3 {
		t.Errorf("leaf's hooks: Started %d, Finished %d, want only the 3 failing functions", st, tally.finished.Load())
	}
	for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf, "sibling": sibling} {
		idleIdentity(t, name, p.Stats())
	}
}

// TestAdvLifeCancelRacingAHelpingWaitIsDecidedOnce: Future.Cancel: "a Cancel racing with the
// start is decided once: either it returns true and the function never runs, or it returns
// false and the function runs"; the start here is a wait that runs the function itself ("Waits
// that help"), on a pool of one worker with a queue of one, inside a sub-pool, while another
// goroutine cancels the futures the wait is about to run. Each future runs exactly once or
// reports Cancel true and Wait context.Canceled, never both, and Skipped counts the canceled.
func TestAdvLifeCancelRacingAHelpingWaitIsDecidedOnce(t *testing.T) {
	t.Parallel()
	rounds, n := 40, 16
	if testing.Short() {
		rounds = 10
	}
	root := crew.New(1, crew.WithQueueSize(1))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithQueueSize(1))
	var canceledTotal atomic.Int64
	for round := range rounds {
		p := root
		if round%2 == 1 {
			p = sub
		}
		runs := make([]atomic.Int32, n)
		canceled := make([]atomic.Bool, n)
		outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			fs := make([]*crew.Future[int], n)
			for i := range fs {
				// With the queue full, GoContext runs the function here; the rest wait.
				fs[i] = crew.GoContext(ctx, p, func(context.Context) (int, error) { runs[i].Add(1); return i, nil })
			}
			cancelDone := goRun(func() {
				for i := len(fs) - 1; i >= 0; i-- {
					if fs[i].Cancel() {
						canceled[i].Store(true)
					}
					runtime.Gosched()
				}
			})
			for i, f := range fs {
				v, err := f.Wait()
				<-cancelDone // so that canceled[i] is known
				switch {
				case canceled[i].Load() && !errors.Is(err, context.Canceled):
					return 0, errors.New("a canceled future's Wait did not return context.Canceled")
				case !canceled[i].Load() && (err != nil || v != i):
					return 0, err
				}
			}
			return 0, nil
		})
		if _, err := outer.Wait(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i := range runs {
			r, c := runs[i].Load(), canceled[i].Load()
			if (r == 1) == c || r > 1 {
				t.Fatalf("round %d: future %d ran %d times, Cancel reported %v", round, i, r, c)
			}
			if c {
				canceledTotal.Add(1)
			}
		}
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	rs, ss := root.Stats(), sub.Stats()
	idleIdentity(t, "root", rs)
	idleIdentity(t, "sub", ss)
	// root's Skipped holds its own canceled futures; sub's its own.
	if rs.Skipped+ss.Skipped != uint64(canceledTotal.Load()) {
		t.Fatalf("Skipped %d + %d, want the %d canceled futures", rs.Skipped, ss.Skipped, canceledTotal.Load())
	}
	t.Logf("%d futures canceled", canceledTotal.Load())
}

// TestAdvLifeTaskTimeoutRunsFromEachStartWhateverRunsIt: WithTaskTimeout "gives every context
// crew passes to a function a deadline d after that function's start (the cause says so)".
// Functions run on a worker after a pause held them, by a wait that helps, and by their
// submitter under CallerRuns each get a deadline no earlier than d after the moment they
// could first start (a nested function's context is derived from its caller's, whose
// deadline may come first), and the Context hook is given that context; with a short
// timeout, a function on a worker of the pool or of its sub-pool, and one run by its
// submitter, sees its context end with a cause that matches ErrTaskTimeout and
// DeadlineExceeded.
func TestAdvLifeTaskTimeoutRunsFromEachStartWhateverRunsIt(t *testing.T) {
	t.Parallel()
	const d = time.Hour
	var hookDeadlines atomic.Int32
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithTaskTimeout(d),
		crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
			if _, ok := ctx.Deadline(); ok {
				hookDeadlines.Add(1)
			}
			return nil, nil
		}}))
	defer p.StopAndWait()
	// deadlineAfter checks that ctx's deadline is at least d after from.
	deadlineAfter := func(ctx context.Context, from time.Time, what string) error {
		dl, ok := ctx.Deadline()
		if !ok || dl.Before(from.Add(d)) {
			return errors.New(what + ": the deadline is not d after the start")
		}
		return nil
	}
	p.Pause()
	var errs []error
	var mu sync.Mutex
	record := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	// A worker's function, queued while the pool is paused: it starts after the Resume.
	var resumed atomic.Int64
	worker := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		return 0, deadlineAfter(ctx, time.Unix(0, resumed.Load()), "a worker's function")
	})
	time.Sleep(20 * time.Millisecond)
	resumed.Store(time.Now().UnixNano())
	p.Resume()
	_, err := worker.Wait()
	record(err)
	// A helped function and a caller-run one, inside a function of the pool: their contexts
	// are derived from the outer function's, whose deadline comes first.
	made := time.Now()
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		held := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { // queued: the wait runs it
			return 0, deadlineAfter(ctx, made, "a helped function")
		})
		inline := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { // the queue is full: run here
			return 0, deadlineAfter(ctx, made, "a function run on its caller")
		})
		_, e1 := inline.Wait()
		_, e2 := held.Wait()
		return 0, errors.Join(e1, e2)
	})
	_, err = outer.Wait()
	record(err)
	// CallerRuns from outside: the worker busy, the queue full.
	release := fillOneWorkerAndQueue(t, p)
	before := time.Now()
	_, err = crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		return 0, deadlineAfter(ctx, before, "a caller-run function")
	}).Wait()
	record(err)
	release()
	for _, err := range errs {
		t.Error(err)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	if s := p.Stats(); hookDeadlines.Load() != 5 || s.CallerRan < 1 {
		t.Errorf("the Context hook saw %d contexts with a deadline, want 5; stats %+v", hookDeadlines.Load(), s)
	}
	idleIdentity(t, "pool", p.Stats())

	// The cause, on each path, with a short timeout.
	short := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithTaskTimeout(5*time.Millisecond))
	defer short.StopAndWait()
	sub := short.Sub(1)
	wait := func(ctx context.Context) (int, error) {
		<-ctx.Done()
		if c := context.Cause(ctx); !errors.Is(c, crew.ErrTaskTimeout) || !errors.Is(c, context.DeadlineExceeded) {
			return 0, errors.New("the cause does not match ErrTaskTimeout and DeadlineExceeded: " + c.Error())
		}
		return 1, nil
	}
	for _, q := range []*crew.Pool{short, sub} {
		f := crew.GoContext(context.Background(), q, wait)
		if err := returnsWithin(t, "a timed function", func() error { _, err := f.Wait(); return err }); err != nil {
			t.Error(err)
		}
	}
	free := fillOneWorkerAndQueue(t, short)
	if _, err := crew.GoContext(context.Background(), short, wait).Wait(); err != nil { // run here
		t.Error(err)
	}
	free()
	awaitReturn(t, "Wait", goRun(short.Wait))
	idleIdentity(t, "short", short.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// fillOneWorkerAndQueue keeps p's one worker busy and fills its bounded queue with TrySubmit,
// which never runs a task on its caller, until release is called (or the test ends).
func fillOneWorkerAndQueue(t *testing.T, p *crew.Pool) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	started := make(chan struct{}, 1)
	// A place left in the queue by a function a wait ran (or a canceled one) takes room
	// until a worker drops it: try until the worker has.
	waitFor(t, "room for the held task", func() bool { return p.TrySubmit(func() { started <- struct{}{}; <-gate }) })
	awaitReturn(t, "the held task to start", started)
	for p.TrySubmit(func() { <-gate }) {
	}
	return release
}

// TestAdvLifeAFunctionAWaitRanLeavesNoTaskWaiting: WithQueueSize(n) "bounds the number of
// accepted tasks that wait for a worker: with every worker busy and n tasks waiting, the next
// submit blocks ... or is rejected"; Stats.Waiting: "A function that a waiting function runs
// itself ... counts as Waiting until it has ended ... and then in Completed". On New(1) with a
// queue of one, a function's wait runs its queued future itself; once that future has ended,
// Stats shows nothing waiting, and while the waiting function goes on running, a TrySubmit
// (and a non-blocking Submit) must find room for one task.
func TestAdvLifeAFunctionAWaitRanLeavesNoTaskWaiting(t *testing.T) {
	t.Parallel()
	for _, nonBlocking := range []bool{false, true} {
		opts := []crew.Option{crew.WithQueueSize(1)}
		if nonBlocking {
			opts = append(opts, crew.WithNonBlocking())
		}
		p := crew.New(1, opts...)
		helped := make(chan struct{})
		gate := make(chan struct{})
		outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			v, err := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil }).Wait()
			close(helped)
			<-gate
			return v, err
		})
		awaitReturn(t, "the helped wait", helped)
		s := p.Stats()
		var ran atomic.Int32
		accepted := p.TrySubmit(func() { ran.Add(1) })
		if !accepted && nonBlocking {
			accepted = p.Submit(func() { ran.Add(1) }) == nil
		}
		close(gate)
		must(t, returnsWithin(t, "the outer function", func() error { _, err := outer.Wait(); return err }))
		awaitReturn(t, "Wait", goRun(p.Wait))
		p.StopAndWait()
		if s.Waiting != 0 || s.Running != 1 {
			t.Fatalf("Stats %+v while the outer function runs, want 1 running, nothing waiting", s)
		}
		if !accepted {
			t.Fatalf("non-blocking %v: with the one worker busy and nothing waiting (Stats %+v), a queue of one refused a task", nonBlocking, s)
		}
		if ran.Load() != 1 {
			t.Fatalf("the accepted task ran %d times", ran.Load())
		}
	}
}

// TestAdvLifeStopNowOfASubPoolTakesItsTaskBackFromThePausedParent: StopNow "includes the tasks
// of the pool's sub-pools ... the order is the pool's queue, where a sub-pool's worker waiting
// there stands for the task it carries"; a sub-pool's StopNow also takes out its workers
// waiting in the queues of the pools above it. Under a paused root, a middle sub-pool (at a
// priority) and its sub-pool each have a worker waiting in the queue above, carrying a
// GoContext function, then a plain task and a group's function. StopNow of the middle pool
// fails the functions with ErrStopped and hands back the plain tasks, in order, and after
// Resume nothing of theirs runs, while the root's own task does; every pool's counters add up.
func TestAdvLifeStopNowOfASubPoolTakesItsTaskBackFromThePausedParent(t *testing.T) {
	t.Parallel()
	root := crew.New(2)
	defer root.StopAndWait()
	mid := root.Sub(2, crew.WithPriority(1))
	leaf := mid.Sub(1)
	root.Pause()
	var ran atomic.Int32
	bg := context.Background()
	var order []int
	var mu sync.Mutex
	plain := func(i int) func() {
		return func() {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}
	}
	fmid := crew.GoContext(bg, mid, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	fleaf := crew.GoContext(bg, leaf, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	must(t, mid.Submit(plain(1)))
	must(t, leaf.Submit(plain(2)))
	gm, _ := mid.Group(bg)
	gm.Go(func(context.Context) error { ran.Add(1); return nil })
	gl, _ := leaf.Group(bg)
	gl.Go(func(context.Context) error { ran.Add(1); return nil })
	var ownRan atomic.Int32
	must(t, root.Submit(func() { ownRan.Add(1) }))
	awaitStats(t, leaf, "leaf's backlog", func(s crew.Stats) bool { return s.Waiting == 3 })
	awaitStats(t, mid, "mid's backlog", func(s crew.Stats) bool { return s.Waiting >= 3 })
	awaitStats(t, root, "a worker of mid queued in the root", func(s crew.Stats) bool { return s.Waiting >= 2 })

	out := mid.StopNow()
	for _, task := range out {
		task()
	}
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Errorf("StopNow handed back %v, want the middle pool's plain task, then its sub-pool's", order)
	}
	for name, err := range map[string]error{
		"mid's future":  errOf(fmid.Wait()),
		"leaf's future": errOf(fleaf.Wait()),
		"mid's group":   gm.Wait(),
		"leaf's group":  gl.Wait(),
	} {
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("%s: %v, want ErrStopped", name, err)
		}
	}
	root.Resume()
	awaitReturn(t, "Wait", goRun(root.Wait))
	if ran.Load() != 0 || ownRan.Load() != 1 {
		t.Errorf("%d taken-out functions ran; the root's own task ran %d times", ran.Load(), ownRan.Load())
	}
	for name, p := range map[string]*crew.Pool{"root": root, "mid": mid, "leaf": leaf} {
		s := p.Stats()
		idleIdentity(t, name, s)
		// mid counts leaf's worker among its tasks too.
		if name != "root" && (s.Returned < 3 || s.Completed != 0) {
			t.Errorf("%s: %+v, want its 3 tasks returned", name, s)
		}
	}
	if err := root.Submit(func() { ownRan.Add(1) }); err != nil {
		t.Errorf("the root refuses tasks after its sub-pool's StopNow: %v", err)
	}
}

func errOf[R any](_ R, err error) error { return err }

// TestAdvLifePanickingContextHookLeavesEachFunctionsOutcome: Hooks: "a hook that panics, with
// any value or with nil, has its panic sent to the pool's panic handler, and the task it was
// called for is unaffected: it still runs exactly once"; Context: "the function receives the
// context Context returns instead (the one it was to receive if that is nil)". A Context hook
// that panics (with nil, or a value) and an end function that panics, beside a second
// WithHooks whose Context hook works, on a sub-pool: each function runs once with the
// context it was to receive (plus the working hook's value), its future, group or map gets
// its own outcome, every hook panic reaches the handler, and nil functions are refused with
// ErrNilTask, counted nowhere, told to no hook.
func TestAdvLifePanickingContextHookLeavesEachFunctionsOutcome(t *testing.T) {
	t.Parallel()
	var handled, entered, ends, queued, rejected atomic.Int32
	var calls atomic.Int32
	root := crew.New(2)
	defer root.StopAndWait()
	p := root.Sub(2, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithHooks(crew.Hooks{
			Queued:   func(crew.TaskInfo) { queued.Add(1) },
			Rejected: func(error) { rejected.Add(1) },
			Context: func(ctx context.Context) (context.Context, func(error)) {
				switch calls.Add(1) % 3 {
				case 0:
					panic(nil)
				case 1:
					panic("hook")
				}
				return ctx, func(error) { panic("end") }
			},
		}),
		crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
			entered.Add(1)
			return context.WithValue(ctx, innerKey{}, true), func(error) { ends.Add(1) }
		}}))
	bg := context.WithValue(context.Background(), ownKey{}, "caller")
	var runs atomic.Int32
	check := func(ctx context.Context) error {
		runs.Add(1)
		if ctx.Value(ownKey{}) != "caller" || ctx.Value(innerKey{}) != true {
			return errors.New("the function did not receive the context it was to receive")
		}
		return nil
	}
	boom := errors.New("boom")
	const n = 9
	var futures []*crew.Future[int]
	for i := range n {
		futures = append(futures, crew.GoContext(bg, p, func(ctx context.Context) (int, error) {
			if err := check(ctx); err != nil {
				return 0, err
			}
			if i%2 == 1 {
				return 0, boom
			}
			return i, nil
		}))
	}
	all, _ := p.GroupAll(bg)
	for range n {
		all.Go(check)
	}
	vals, err := crew.Map(bg, p, make([]int, n), func(ctx context.Context, _ int) (int, error) { return 1, check(ctx) })
	if err != nil || len(vals) != n || vals[n-1] != 1 {
		t.Errorf("Map: (%v, %v)", vals, err)
	}
	for i, f := range futures {
		v, err := f.Wait()
		if (i%2 == 1) != errors.Is(err, boom) || (i%2 == 0 && (err != nil || v != i)) {
			t.Errorf("future %d: (%d, %v)", i, v, err)
		}
	}
	if err := all.Wait(); err != nil {
		t.Errorf("GroupAll: %v", err)
	}
	// Nil functions: refused, not counted.
	before := p.Stats()
	q0 := queued.Load()
	if _, err := crew.GoContext(bg, p, (func(context.Context) (int, error))(nil)).Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("GoContext(nil) = %v, want ErrNilTask", err)
	}
	if _, err := crew.Go(p, (func() (int, error))(nil)).Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Go(nil) = %v, want ErrNilTask", err)
	}
	g, _ := p.Group(bg)
	g.Go(nil)
	if g.TryGo(nil) {
		t.Error("TryGo(nil) = true")
	}
	if err := g.Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Group.Go(nil): Wait = %v, want ErrNilTask", err)
	}
	r, _ := crew.NewResults[int](bg, p)
	r.Go(nil)
	if vals, err := r.Wait(); !errors.Is(err, crew.ErrNilTask) || len(vals) != 1 {
		t.Errorf("Results.Go(nil): (%v, %v), want one zero value and ErrNilTask", vals, err)
	}
	if _, err := crew.Map[int, int](bg, p, []int{1}, nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Map(nil fn) = %v, want ErrNilTask", err)
	}
	if err := crew.ForEach[int](bg, p, countTo(1), nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("ForEach(nil fn) = %v, want ErrNilTask", err)
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	after := p.Stats()
	if after.Accepted != before.Accepted || after.Rejected != 0 || after.Canceled != 0 || rejected.Load() != 0 {
		t.Errorf("nil functions counted: %+v after %+v; Rejected hook %d", after, before, rejected.Load())
	}
	if queued.Load() != q0 {
		t.Logf("the Queued hook saw %d nil functions", queued.Load()-q0)
	}
	idleIdentity(t, "pool", after)
	total := int32(3 * n)
	// Two in three Context hook calls panic; every third's end panics.
	if runs.Load() != total || entered.Load() != total || ends.Load() != total || handled.Load() != total {
		t.Errorf("%d functions ran of %d; the working hook entered %d, ended %d; %d hook panics handled, want %d",
			runs.Load(), total, entered.Load(), ends.Load(), handled.Load(), total)
	}
}

// TestAdvLifeGoexitInALentFunctionIsReportedOnce: a function that a wait runs itself ("Waits
// that help") runs on the waiting function's goroutine; one that calls runtime.Goexit ends
// that goroutine, as a task that calls it does. Each function is still reported exactly once:
// the lent function's future, results or group gets an error, the Context hook's end sees a
// non-nil error once for it, the waiting function (ended with it) reports a Goexit to its own
// waiter, every waiter returns, the pool (of one worker, a sub-pool of one) keeps serving, and
// the counters add up.
func TestAdvLifeGoexitInALentFunctionIsReportedOnce(t *testing.T) {
	t.Parallel()
	var entered, endedErr, endedNil atomic.Int32
	root := crew.New(1, crew.WithQueueSize(1))
	defer root.StopAndWait()
	sub := root.Sub(1, crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
		entered.Add(1)
		return nil, func(err error) {
			if err != nil {
				endedErr.Add(1)
			} else {
				endedNil.Add(1)
			}
		}
	}}))
	doors := map[string]func(ctx context.Context, p *crew.Pool) error{
		"GoContext": func(ctx context.Context, p *crew.Pool) error {
			_, err := crew.GoContext(ctx, p, func(context.Context) (int, error) { runtime.Goexit(); return 1, nil }).Wait()
			return err
		},
		"Results": func(ctx context.Context, p *crew.Pool) error {
			r, _ := crew.NewResults[int](ctx, p)
			r.Go(func(context.Context) (int, error) { runtime.Goexit(); return 1, nil })
			_, err := r.Wait()
			return err
		},
		"Group": func(ctx context.Context, p *crew.Pool) error {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { runtime.Goexit(); return nil })
			return g.Wait()
		},
		"Map": func(ctx context.Context, p *crew.Pool) error {
			_, err := crew.Map(ctx, p, []int{1}, func(context.Context, int) (int, error) { runtime.Goexit(); return 1, nil })
			return err
		},
	}
	for name, door := range doors {
		for _, p := range []*crew.Pool{root, sub} {
			var after atomic.Bool
			outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				_ = door(ctx, p)
				after.Store(true) // a wait that ran the function itself does not get here
				return 1, nil
			})
			var err error
			awaitReturn(t, name+": the outer future", goRun(func() { _, err = outer.Wait() }))
			if after.Load() && err != nil {
				t.Errorf("%s: the outer function returned, yet its future has %v", name, err)
			}
			if !after.Load() && err == nil {
				t.Errorf("%s: the outer function was ended by the Goexit, yet its future has no error", name)
			}
			// The pool keeps serving.
			if v, err := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 7, nil }).Wait(); v != 7 || err != nil {
				t.Fatalf("%s: after the Goexit: (%d, %v)", name, v, err)
			}
		}
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
	// On sub: per door, the outer function, the one that called Goexit and the later one.
	if n := int32(len(doors)); entered.Load() != 3*n || endedErr.Load()+endedNil.Load() != 3*n || endedErr.Load() < n {
		t.Errorf("sub's Context hook: %d entered, ends %d with an error and %d with nil; want %d, at least %d with an error",
			entered.Load(), endedErr.Load(), endedNil.Load(), 3*n, n)
	}
}

// TestAdvLifeDiscardOldestNeverDropsAFunctionAWaitRan: DiscardOldest "accept it and drop the
// task that has waited longest"; "no task is both run and accounted as not run". On New(1)
// with a queue of one under DiscardOldest, a function's wait runs its queued future itself;
// while the function goes on, submits from outside find the future's place still in the
// queue. The future, which ran, is never handed to the discard handler or the Discarded hook
// nor counted in Discarded; the submitted tasks each run once or are dropped once, and the
// counters add up.
func TestAdvLifeDiscardOldestNeverDropsAFunctionAWaitRan(t *testing.T) {
	t.Parallel()
	var handed, hooked atomic.Int32
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { handed.Add(1) }),
		crew.WithHooks(crew.Hooks{Discarded: func(crew.TaskInfo) { hooked.Add(1) }}))
	defer p.StopAndWait()
	helped := make(chan struct{})
	gate := make(chan struct{})
	var futureRan atomic.Int32
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		v, err := crew.GoContext(ctx, p, func(context.Context) (int, error) { futureRan.Add(1); return 1, nil }).Wait()
		close(helped)
		<-gate
		return v, err
	})
	awaitReturn(t, "the helped wait", helped)
	var ran atomic.Int32
	const n = 3
	for range n {
		must(t, p.Submit(func() { ran.Add(1) }))
	}
	close(gate)
	if _, err := outer.Wait(); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if futureRan.Load() != 1 {
		t.Fatalf("the future ran %d times", futureRan.Load())
	}
	// Of the n plain tasks, the last runs and the others are dropped: each dropped one is
	// handed to the handler and the hook once; the future, which ran, never is.
	if int32(s.Discarded) != handed.Load() || int32(s.Discarded) != hooked.Load() || ran.Load()+int32(s.Discarded) != n {
		t.Fatalf("Stats %+v: %d plain tasks ran, %d handed to the discard handler, %d to the hook; want ran+Discarded = %d",
			s, ran.Load(), handed.Load(), hooked.Load(), n)
	}
}

// TestAdvLifeGoAfterWaitIsSkippedEvenWhereItWouldRunOnTheCaller: Group.Go: "Go after Wait has
// returned skips fn, the group's context being canceled; a later Wait returns its cause."
// Skipped functions are counted in Skipped and seen by no Started hook. Here the groups
// (a Group, a GroupAll, a Results) are made inside a function of a pool of one worker with a
// full queue of one under CallerRuns, where a Go would otherwise run fn on its caller: after
// Wait, fn still never runs, and the next Wait reports context.Canceled.
func TestAdvLifeGoAfterWaitIsSkippedEvenWhereItWouldRunOnTheCaller(t *testing.T) {
	t.Parallel()
	var tally hookTally
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), tally.option())
	defer p.StopAndWait()
	var ran atomic.Int32
	fn := func(context.Context) error { ran.Add(1); return nil }
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		var errs []error
		g, _ := p.Group(ctx)
		all, _ := p.GroupAll(ctx)
		r, _ := crew.NewResults[int](ctx, p)
		for _, w := range []func() error{g.Wait, all.Wait, func() error { _, err := r.Wait(); return err }} {
			errs = append(errs, w())
		}
		// The queue is free: fill it so that the next Go would run on this goroutine.
		hold := make(chan struct{})
		defer close(hold)
		for p.TrySubmit(func() { <-hold }) {
		}
		g.Go(fn)
		all.Go(fn)
		r.Go(func(ctx context.Context) (int, error) { return 1, fn(ctx) })
		errs = append(errs, g.Wait(), all.Wait())
		vals, err := r.Wait()
		if len(vals) != 1 || vals[0] != 0 {
			errs = append(errs, errors.New("Results kept a value of a skipped function"))
		}
		errs = append(errs, err)
		for i, err := range errs {
			if i < 3 && err != nil {
				return 0, err
			}
			if i >= 3 && !errors.Is(err, context.Canceled) {
				return 0, errors.New("a Wait after a Go made after Wait: " + errorText(err) + ", want context.Canceled")
			}
		}
		return 0, nil
	})
	if err := returnsWithin(t, "the outer function", func() error { _, err := outer.Wait(); return err }); err != nil {
		t.Fatal(err)
	}
	awaitReturn(t, "Wait", goRun(p.Wait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if ran.Load() != 0 || s.Skipped != 3 || s.CallerRan != 0 {
		t.Fatalf("%d functions given after Wait ran; Stats %+v, want 3 skipped, none caller-ran", ran.Load(), s)
	}
	// The outer function and the held plain task started; the skipped ones did not.
	if st := tally.started.Load(); st != 2 {
		t.Fatalf("Started hooks: %d, want 2", st)
	}
}

func errorText(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestAdvLifeStopNowLeavesALentFunctionRunning: StopNow takes out "every accepted task that has
// not started ... Tasks already running go on"; "no task is both run and accounted as not
// run". A function that a wait runs itself has started, though its place is still in the
// queue (it counts as Waiting): StopNow, of the pool or of its parent, called while it runs
// neither hands it back nor fails its future or group with ErrStopped; it runs to its end,
// its outcome reaches its waiter, and it counts once, in Completed, never in Returned.
func TestAdvLifeStopNowLeavesALentFunctionRunning(t *testing.T) {
	t.Parallel()
	for _, viaParent := range []bool{false, true} {
		root := crew.New(1, crew.WithQueueSize(1))
		p := root
		if viaParent {
			p = root.Sub(1, crew.WithQueueSize(1))
		}
		lentStarted := make(chan struct{})
		gate := make(chan struct{})
		var innerErr, groupErr error
		outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			// Queued (the queue has room), then run by the wait, as no worker is free.
			f := crew.GoContext(ctx, p, func(context.Context) (int, error) {
				close(lentStarted)
				<-gate
				return 5, nil
			})
			var v int
			v, innerErr = f.Wait()
			if v != 5 {
				innerErr = errors.Join(innerErr, errors.New("the lent function's value was lost"))
			}
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { return nil })
			groupErr = g.Wait() // StopNow has stopped the pool
			return 1, nil
		})
		awaitReturn(t, "the lent function to start", lentStarted)
		if st := p.Stats(); st.Running != 1 || st.Waiting != 1 {
			t.Fatalf("Stats %+v, want the outer function running and the lent one waiting", st)
		}
		out := root.StopNow()
		close(gate)
		if err := returnsWithin(t, "the outer function", func() error { _, err := outer.Wait(); return err }); err != nil {
			t.Fatalf("viaParent %v: outer: %v", viaParent, err)
		}
		if innerErr != nil {
			t.Errorf("viaParent %v: the running function's future: %v, want its own value", viaParent, innerErr)
		}
		if len(out) != 0 {
			t.Errorf("viaParent %v: StopNow handed back %d plain tasks, want none", viaParent, len(out))
		}
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		s := p.Stats()
		idleIdentity(t, "pool", s)
		idleIdentity(t, "root", root.Stats())
		if !errors.Is(groupErr, crew.ErrStopped) || s.Returned != 0 {
			t.Errorf("viaParent %v: a group made after StopNow: %v; Stats %+v, want ErrStopped and nothing returned", viaParent, groupErr, s)
		}
		if s.Completed < 2 {
			t.Errorf("viaParent %v: Stats %+v, want the outer and the running function completed", viaParent, s)
		}
	}
}

// TestAdvLifeStormEndsInAStopNowOfTheRoot: the Guarantees: "Every task whose submit returned
// nil runs exactly once ... unless it is accounted for as not run: dropped by DiscardOldest,
// handed back by StopNow, or skipped because its own context ended before it started ... no
// task is both run and accounted as not run, and none is silently lost", across a tree (a
// priority sub-pool under DiscardOldest, a CallerRuns sub-pool of it, a rate-limited
// sibling) while Pause/Resume and Resize storms run, with futures on contexts of the caller's
// own type that end at random, Cancel calls, groups whose functions fail, and plain tasks; a
// StopNow of the root comes while the submitters are half way. Each function ran exactly
// once or its waiter got one non-run outcome (context ended, canceled, discarded, stopped);
// each accepted plain task ran once, was handed back once or was dropped once; every waiter
// returns; and every pool's counters add up.
func TestAdvLifeStormEndsInAStopNowOfTheRoot(t *testing.T) {
	t.Parallel()
	per := 150
	if testing.Short() {
		per = 40
	}
	root := crew.New(3)
	mid := root.Sub(3, crew.WithPriority(1), crew.WithQueueSize(16), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { v.(func())() })) // a dropped plain task counts itself
	leaf := mid.Sub(2, crew.WithQueueSize(4), crew.WithOverflow(crew.CallerRuns))
	side := root.Sub(2, crew.WithRateLimit(20000, 8))
	pools := []*crew.Pool{root, mid, leaf, side}
	stop := make(chan struct{})
	var storms sync.WaitGroup
	pauseStorm(&storms, stop, 300*time.Microsecond, root, mid, leaf)
	k := 0
	repeatUntil(&storms, stop, func() {
		k++
		root.Resize(1 + k%4)
		time.Sleep(200 * time.Microsecond)
	})

	var plains []*atomic.Int32
	var futures []*crew.Future[int]
	var fruns []*atomic.Int32
	var canceled []bool
	var groups []*crew.Group
	var gruns []*atomic.Int32
	var mu sync.Mutex
	var subs sync.WaitGroup
	var made atomic.Int64
	for w := range 3 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := range per {
				made.Add(1)
				p := pools[(w+i)%len(pools)]
				own := newOwnCtx(ownKey{}, i)
				if i%5 == 0 {
					own.end(errors.New("ended before"))
				}
				runs := new(atomic.Int32)
				f := crew.GoContext(context.Context(own), p, func(context.Context) (int, error) { runs.Add(1); return i, nil })
				if i%7 == 3 {
					own.end(errors.New("ended while queued"))
				}
				c := i%3 == 1 && f.Cancel()
				pr := new(atomic.Int32)
				accepted := p.Submit(func() { pr.Add(1) }) == nil
				g, _ := p.Group(context.Background())
				gr := new(atomic.Int32)
				for j := range 3 {
					g.Go(func(context.Context) error {
						gr.Add(1)
						if j == 0 && i%4 == 0 {
							return errors.New("the group's first error")
						}
						return nil
					})
				}
				mu.Lock()
				futures, fruns, canceled = append(futures, f), append(fruns, runs), append(canceled, c)
				if accepted {
					plains = append(plains, pr)
				}
				groups, gruns = append(groups, g), append(gruns, gr)
				mu.Unlock()
			}
		}()
	}
	var out []func()
	stopped := goRun(func() {
		for made.Load() < int64(3*per/2) {
			time.Sleep(100 * time.Microsecond)
		}
		out = root.StopNow()
	})
	awaitReturn(t, "the submitters", goRun(subs.Wait))
	awaitReturn(t, "StopNow", stopped)
	close(stop)
	storms.Wait()
	for _, task := range out {
		task() // handed back: counts itself
	}
	for i, f := range futures {
		var v int
		var err error
		awaitReturn(t, "a future's Wait", goRun(func() { v, err = f.Wait() }))
		r := fruns[i].Load()
		switch {
		case r > 1:
			t.Fatalf("future %d ran %d times", i, r)
		case r == 1 && (err != nil || canceled[i]):
			t.Fatalf("future %d ran, yet Wait = %v, Cancel %v", i, err, canceled[i])
		case r == 0 && err == nil:
			t.Fatalf("future %d never ran, yet Wait = (%d, nil)", i, v)
		case canceled[i] && !errors.Is(err, context.Canceled):
			t.Fatalf("future %d was canceled, yet Wait = %v", i, err)
		}
	}
	for i, g := range groups {
		var err error
		awaitReturn(t, "a group's Wait", goRun(func() { err = g.Wait() }))
		if r := gruns[i].Load(); r > 3 || (r < 3 && err == nil) {
			t.Fatalf("group %d: %d of 3 functions ran, Wait = %v", i, r, err)
		}
	}
	root.Resume()
	mid.Resume()
	leaf.Resume()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	for i, pr := range plains {
		if pr.Load() != 1 {
			t.Fatalf("accepted plain task %d ran, was handed back or dropped %d times in all, want once", i, pr.Load())
		}
	}
	for i, p := range pools {
		idleIdentity(t, "pool "+string(rune('0'+i)), p.Stats())
	}
	t.Logf("%d futures, %d plain tasks accepted, %d handed back by StopNow", len(futures), len(plains), len(out))
}

// TestAdvLifeWithContextEndingResumesAPausedTree: WithContext: "when ctx ends, the pool stops
// as if by Pool.Stop, sub-pools included. Tasks already accepted still run"; Pause: "Stop,
// StopAndWait and Shutdown resume the pool, since every accepted task must still run". A
// paused pool tied to a context, with a paused sub-pool, holds a backlog of plain tasks and of
// functions whose own contexts stay live; when the pool's context ends, the backlog runs
// without a Resume: Wait returns, every task ran once, nothing is skipped.
func TestAdvLifeWithContextEndingResumesAPausedTree(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := crew.New(2, crew.WithContext(ctx))
	defer p.StopAndWait()
	sub := p.Sub(1, crew.WithPriority(1))
	p.Pause()
	sub.Pause()
	var ran atomic.Int32
	var futures []*crew.Future[int]
	for _, q := range []*crew.Pool{p, sub} {
		must(t, q.Submit(func() { ran.Add(1) }))
		futures = append(futures, crew.GoContext(context.Background(), q, func(context.Context) (int, error) { ran.Add(1); return 1, nil }))
	}
	cancel()
	waitFor(t, "the pool to stop", p.Stopped)
	awaitReturn(t, "Wait without a Resume", goRun(p.Wait))
	for i, f := range futures {
		if _, err := f.Wait(); err != nil {
			t.Errorf("future %d: %v", i, err)
		}
	}
	if ran.Load() != 4 {
		t.Fatalf("%d of 4 tasks ran", ran.Load())
	}
	for name, q := range map[string]*crew.Pool{"pool": p, "sub": sub} {
		s := q.Stats()
		idleIdentity(t, name, s)
		if s.Skipped != 0 || s.Paused {
			t.Errorf("%s: %+v, want nothing skipped and the pool not paused", name, s)
		}
	}
}

// TestAdvLifeContextHooksEndComesBeforeTheWaitReturns: Hooks.Context's end "is called on that
// goroutine once the function has ended, with the error it returned, or with a non-nil error
// if it panicked or called runtime.Goexit"; the return of the function synchronizes before
// the return of Wait. A tracer relies on the end having run (its span ended) when the wait
// for the function returns: for each way a function ends (nil, an error, a panic, panic(nil),
// runtime.Goexit), through GoContext, a Group and Map, on a worker and in a wait that runs
// the function itself, the end has run, once, with a matching error, when Wait returns.
func TestAdvLifeContextHooksEndComesBeforeTheWaitReturns(t *testing.T) {
	t.Parallel()
	type endKey struct{}
	type endRec struct {
		n   atomic.Int32
		err atomic.Value
	}
	root := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
		rec, _ := ctx.Value(endKey{}).(*endRec)
		if rec == nil {
			return nil, nil
		}
		return nil, func(err error) {
			rec.err.Store([]error{err})
			rec.n.Add(1)
		}
	}}))
	defer root.StopAndWait()
	boom := errors.New("boom")
	ends := map[string]func() error{
		"nil":     func() error { return nil },
		"error":   func() error { return boom },
		"panic":   func() error { panic(boom) },
		"nil-pan": func() error { panic(nil) },
		"goexit":  func() error { runtime.Goexit(); return nil },
	}
	doors := map[string]func(ctx context.Context, body func() error) error{
		"GoContext": func(ctx context.Context, body func() error) error {
			_, err := crew.GoContext(ctx, root, func(context.Context) (int, error) { return 1, body() }).Wait()
			return err
		},
		"Group": func(ctx context.Context, body func() error) error {
			g, _ := root.Group(ctx)
			g.Go(func(context.Context) error { return body() })
			return g.Wait()
		},
		"Map": func(ctx context.Context, body func() error) error {
			_, err := crew.Map(ctx, root, []int{1}, func(context.Context, int) (int, error) { return 1, body() })
			return err
		},
	}
	check := func(where, name string, rec *endRec, err error) error {
		if rec.n.Load() != 1 {
			return errors.New(where + " " + name + ": the end had not run once when the wait returned")
		}
		got, _ := rec.err.Load().([]error)
		if (name == "nil") != (got[0] == nil) || (name == "nil") != (err == nil) {
			return errors.New(where + " " + name + ": the end's error and the wait's disagree with the outcome")
		}
		return nil
	}
	for door, call := range doors {
		for name, body := range ends {
			// On a worker: waited for from outside.
			rec := new(endRec)
			var err error
			awaitReturn(t, door+" "+name, goRun(func() { err = call(context.WithValue(context.Background(), endKey{}, rec), body) }))
			if e := check("worker: "+door, name, rec, err); e != nil {
				t.Error(e)
			}
			// In a wait that runs it itself, inside a function of the one-worker pool (a
			// Goexit ends the outer function too).
			rec = new(endRec)
			outer := crew.GoContext(context.Background(), root, func(ctx context.Context) (int, error) {
				err := call(context.WithValue(ctx, endKey{}, rec), body)
				return 0, check("lent: "+door, name, rec, err)
			})
			var outerErr error
			awaitReturn(t, "lent "+door+" "+name, goRun(func() { _, outerErr = outer.Wait() }))
			if name != "goexit" && outerErr != nil {
				t.Error(outerErr)
			}
			if rec.n.Load() != 1 {
				t.Errorf("lent %s %s: the end ran %d times", door, name, rec.n.Load())
			}
		}
	}
	awaitReturn(t, "Wait", goRun(root.Wait))
	idleIdentity(t, "pool", root.Stats())
}

// TestAdvLifeStopNowAfterAHelpedFunctionEndedCountsItOnce: a function that a wait ran itself
// and that has ended leaves its place in the queue for a worker to drop. StopNow called then
// (the waiting function still running) must not hand it back, fail it, or count it in
// Returned: it counts once, in Completed; the plain task queued behind it is handed back
// and counted in Returned; the counters add up.
func TestAdvLifeStopNowAfterAHelpedFunctionEndedCountsItOnce(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithQueueSize(2))
	helped := make(chan struct{})
	gate := make(chan struct{})
	var innerErr error
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		_, innerErr = crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil }).Wait()
		close(helped)
		<-gate
		return 1, nil
	})
	awaitReturn(t, "the helped wait", helped)
	var plainRan atomic.Int32
	must(t, p.Submit(func() { plainRan.Add(1) }))
	out := p.StopNow()
	close(gate)
	if _, err := outer.Wait(); err != nil || innerErr != nil {
		t.Fatalf("outer: %v, inner: %v", err, innerErr)
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if len(out) != 1 || plainRan.Load() != 0 || s.Returned != 1 || s.Completed != 2 {
		t.Fatalf("StopNow handed back %d tasks, the plain task ran %d times; Stats %+v, want 1 returned, 2 completed",
			len(out), plainRan.Load(), s)
	}
}

// TestAdvLifeALentFunctionsEndMovesABlockedSubmitterIn: on a bounded queue, the end of a
// function that a waiting function ran itself makes room at once: a submitter blocked on
// the full queue is accepted then, with the one worker still busy, and the waiting function
// itself can submit after its wait returns. Also on a sub-pool at a priority level.
func TestAdvLifeALentFunctionsEndMovesABlockedSubmitterIn(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{"root", "sub"} {
		t.Run(shape, func(t *testing.T) {
			root := crew.New(1, crew.WithQueueSize(1))
			p := root
			if shape == "sub" {
				p = root.Sub(1, crew.WithQueueSize(1), crew.WithPriority(2))
			}
			filled, helping := make(chan struct{}), make(chan struct{})
			blocked := make(chan error, 1)
			var ran atomic.Int32
			outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				inner := crew.GoContext(ctx, p, func(context.Context) (int, error) {
					close(helping)
					<-filled // a submitter blocks on the full queue meanwhile
					return 1, nil
				})
				v, err := inner.Wait()
				if err != nil {
					return 0, err
				}
				// The wait returned: its place is gone, and the blocked submitter moved in.
				select {
				case err := <-blocked:
					if err != nil {
						return 0, err
					}
				case <-time.After(10 * time.Second):
					return 0, errors.New("the blocked submitter is still blocked after the lent function ended")
				}
				return v, nil
			})
			awaitReturn(t, "the lent function's start", helping)
			go func() { blocked <- p.Submit(func() { ran.Add(1) }) }()
			waitFor(t, "a blocked submitter", func() bool { return crew.BlockedSubmitters(p) == 1 })
			close(filled)
			var v int
			err := returnsWithin(t, "the outer function", func() (err error) { v, err = outer.Wait(); return err })
			if err != nil || v != 1 {
				t.Fatalf("outer = %d, %v; want 1, nil", v, err)
			}
			awaitReturn(t, "Wait", goRun(p.Wait))
			root.StopAndWait()
			if ran.Load() != 1 {
				t.Fatalf("the blocked submitter's task ran %d times, want 1", ran.Load())
			}
			idleIdentity(t, shape, p.Stats())
		})
	}
}
