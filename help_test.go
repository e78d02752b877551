package crew_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// active counts the functions of a fork/join that hold a slot and are not lending it: a
// function stops counting while it waits for its children, since a wait that helps runs them
// in its slot. At every start the count must stay within the limit.
type active struct {
	limit int
	n     atomic.Int32
	max   atomic.Int32
	over  atomic.Int32
}

func (a *active) start() {
	n := a.n.Add(1)
	if n > int32(a.limit) {
		a.over.Add(1)
	}
	for m := a.max.Load(); n > m && !a.max.CompareAndSwap(m, n); m = a.max.Load() {
	}
}

func (a *active) stop() { a.n.Add(-1) }

// fibShapes are the ways a function can fork its two children and join them: each made from
// the context crew gave the function, on the pool p.
type fibShape struct {
	name string
	fork func(ctx context.Context, p *crew.Pool, a *active, depth int) (int, error)
}

// fibShapes is set by init: its functions call fib, which reads it.
var fibShapes []fibShape

func init() { fibShapes = shapes() }

func shapes() []fibShape {
	return []fibShape{
		{"Group", func(ctx context.Context, p *crew.Pool, a *active, depth int) (int, error) {
			var l, r int
			a.stop() // Go may run a child in this function's slot, if the queue is full
			g, _ := p.Group(ctx)
			g.Go(func(ctx context.Context) (err error) { l, err = fib(ctx, p, a, depth-1, 0); return err })
			g.Go(func(ctx context.Context) (err error) { r, err = fib(ctx, p, a, depth-2, 0); return err })
			err := g.Wait()
			a.start()
			return l + r, err
		}},
		{"Results", func(ctx context.Context, p *crew.Pool, a *active, depth int) (int, error) {
			a.stop()
			rs, _ := crew.NewResults[int](ctx, p)
			rs.Go(func(ctx context.Context) (int, error) { return fib(ctx, p, a, depth-1, 1) })
			rs.Go(func(ctx context.Context) (int, error) { return fib(ctx, p, a, depth-2, 1) })
			vals, err := rs.Wait()
			a.start()
			return vals[0] + vals[1], err
		}},
		{"Map", func(ctx context.Context, p *crew.Pool, a *active, depth int) (int, error) {
			a.stop()
			vals, err := crew.Map(ctx, p, []int{depth - 1, depth - 2}, func(ctx context.Context, d int) (int, error) {
				return fib(ctx, p, a, d, 2)
			})
			a.start()
			return vals[0] + vals[1], err
		}},
		{"GoContext", func(ctx context.Context, p *crew.Pool, a *active, depth int) (int, error) {
			a.stop()
			l := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return fib(ctx, p, a, depth-1, 3) })
			r := crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return fib(ctx, p, a, depth-2, 3) })
			lv, lerr := l.Wait()
			rv, rerr := r.Wait()
			a.start()
			return lv + rv, errors.Join(lerr, rerr)
		}},
		{"MapSeq", func(ctx context.Context, p *crew.Pool, a *active, depth int) (int, error) {
			a.stop()
			defer a.start()
			sum := 0
			for v, err := range crew.MapSeq(ctx, p, slices.Values([]int{depth - 1, depth - 2}), func(ctx context.Context, d int) (int, error) {
				return fib(ctx, p, a, d, 4)
			}) {
				if err != nil {
					return 0, err
				}
				sum += v
			}
			return sum, nil
		}},
	}
}

// fib computes the Fibonacci number of depth by forking and joining on p with fibShapes[shape]:
// every level waits, inside a function of p, for work it gave p.
func fib(ctx context.Context, p *crew.Pool, a *active, depth, shape int) (int, error) {
	a.start()
	defer a.stop()
	if depth < 2 {
		return depth, nil
	}
	return fibShapes[shape].fork(ctx, p, a, depth)
}

// TestNestedForkJoinCompletesOnOneWorker proves "Waits that help": fork/join of depth 8, each
// level a Group, a Results, a Map, two GoContext futures or a MapSeq made from the caller's
// context, completes on a pool of one worker, also with a queue of one, and on a sub-pool of
// limit 1, with never more functions holding a slot than the limit.
func TestNestedForkJoinCompletesOnOneWorker(t *testing.T) {
	t.Parallel()
	pools := []struct {
		name string
		make func() (p *crew.Pool, done func())
	}{
		{"New(1)", func() (*crew.Pool, func()) { p := crew.New(1); return p, p.StopAndWait }},
		{"New(1,WithQueueSize(1))", func() (*crew.Pool, func()) {
			p := crew.New(1, crew.WithQueueSize(1))
			return p, p.StopAndWait
		}},
		{"Sub(1)", func() (*crew.Pool, func()) {
			parent := crew.New(4)
			return parent.Sub(1), parent.StopAndWait
		}},
		{"Sub(1,WithQueueSize(1))", func() (*crew.Pool, func()) {
			parent := crew.New(2, crew.WithQueueSize(1))
			return parent.Sub(1, crew.WithQueueSize(1)), parent.StopAndWait
		}},
	}
	const depth, want = 8, 21
	for _, pc := range pools {
		for shape, sc := range fibShapes {
			t.Run(pc.name+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				p, done := pc.make()
				defer done()
				a := &active{limit: 1}
				var got int
				var err error
				root := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
					return fib(ctx, p, a, depth, shape)
				})
				finished := goRun(func() { got, err = root.Wait() })
				select {
				case <-finished:
				case <-time.After(20 * time.Second):
					t.Fatalf("fork/join of depth %d did not complete in 20 s: stats %+v", depth, p.Stats())
				}
				if err != nil || got != want {
					t.Fatalf("fib(%d) = %d, %v; want %d, nil", depth, got, err, want)
				}
				if n := a.over.Load(); n != 0 {
					t.Fatalf("%d starts found more than 1 function holding a slot (at most %d)", n, a.max.Load())
				}
				p.Wait()
				s := p.Stats()
				idleIdentity(t, "pool", s)
				if s.Accepted < 2 {
					t.Fatalf("Stats = %+v: the functions were not tasks of the pool", s)
				}
			})
		}
	}
}

// TestHelpingWaitRunsItsOwnFunctionsOnly: a group made inside a function helps only with its
// own queued functions, never with other tasks of the pool, so the limit holds for them too.
func TestHelpingWaitRunsItsOwnFunctionsOnly(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	var otherRan atomic.Bool
	var ranOn sync.Map // function name -> true if it ran while the parent waited
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		must(t, p.Submit(func() { otherRan.Store(true) })) // queued: the one worker runs this function
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { ranOn.Store("child", otherRan.Load()); return nil })
		err := g.Wait()
		if otherRan.Load() {
			t.Error("the wait ran a plain task of the pool that was not its own")
		}
		return 0, err
	})
	if _, err := f.Wait(); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if v, ok := ranOn.Load("child"); !ok || v.(bool) {
		t.Fatalf("child ran: %v, with the other task already run: %v", ok, v)
	}
	if !otherRan.Load() {
		t.Fatal("the plain task never ran")
	}
}

// TestGroupMadeOutsideAnyTaskDoesNotHelp: a wait made from a context crew did not give to a
// running function (here the Group's own, handed back to its maker) runs nothing itself, so a
// goroutine outside the pool never runs its functions beside the pool's workers.
func TestGroupMadeOutsideAnyTaskDoesNotHelp(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	task, started, release := blocker()
	must(t, p.Submit(task))
	<-started
	g, gctx := p.Group(context.Background())
	inner, _ := p.Group(gctx) // the group's context is not a function's
	var ran atomic.Bool
	inner.Go(func(context.Context) error { ran.Store(true); return nil })
	done := goRun(func() { inner.Wait() })
	stillBlocked(t, "Wait of a group made outside any task, with the one worker busy", done)
	if ran.Load() {
		t.Fatal("the function ran on the waiting goroutine, outside the pool")
	}
	close(release)
	awaitReturn(t, "Wait once the worker is free", done)
	g.Wait()
}

// TestHelpingWaitAfterTheFunctionReturnedDoesNotHelp: a context kept past the return of the
// function it was given to no longer lends a slot: that function's slot is gone.
func TestHelpingWaitAfterTheFunctionReturnedDoesNotHelp(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	kept := make(chan context.Context, 1)
	g, _ := p.Group(context.Background())
	g.Go(func(ctx context.Context) error { kept <- ctx; return nil })
	must(t, g.Wait())
	ctx := <-kept
	task, started, release := blocker()
	must(t, p.Submit(task))
	<-started
	late := crew.GoContext(context.WithoutCancel(ctx), p, func(context.Context) (int, error) { return 1, nil })
	done := goRun(func() { late.Wait() })
	stillBlocked(t, "Wait from a context whose function has returned, with the one worker busy", done)
	close(release)
	awaitReturn(t, "Wait once the worker is free", done)
}

// TestSubmitFromAFunctionIntoItsFullQueueRunsOnTheCaller: Group.Go, Results.Go, GoContext and
// SubmitContext from a function, with that function's context, into its pool's full bounded
// queue run the function on the caller, counted as caller-run, instead of blocking for ever.
func TestSubmitFromAFunctionIntoItsFullQueueRunsOnTheCaller(t *testing.T) {
	t.Parallel()
	submits := []struct {
		name string
		give func(ctx context.Context, p *crew.Pool, fn func()) (wait func() error)
	}{
		{"Group.Go", func(ctx context.Context, p *crew.Pool, fn func()) func() error {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { fn(); return nil })
			return g.Wait
		}},
		{"Results.Go", func(ctx context.Context, p *crew.Pool, fn func()) func() error {
			r, _ := crew.NewResults[int](ctx, p)
			r.Go(func(context.Context) (int, error) { fn(); return 0, nil })
			return func() error { _, err := r.Wait(); return err }
		}},
		{"GoContext", func(ctx context.Context, p *crew.Pool, fn func()) func() error {
			f := crew.GoContext(ctx, p, func(context.Context) (int, error) { fn(); return 0, nil })
			return func() error { _, err := f.Wait(); return err }
		}},
		{"SubmitContext", func(ctx context.Context, p *crew.Pool, fn func()) func() error {
			err := p.SubmitContext(ctx, fn)
			return func() error { return err }
		}},
	}
	for _, c := range submits {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := crew.New(1, crew.WithQueueSize(1))
			defer p.StopAndWait()
			var inner atomic.Int32
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				must(t, p.Submit(func() {})) // fills the queue: the one worker runs this function
				wait := c.give(ctx, p, func() { inner.Add(1) })
				if inner.Load() != 1 {
					t.Error("the function had not run on the caller when the submit returned")
				}
				return 0, wait()
			})
			done := goRun(func() {
				if _, err := f.Wait(); err != nil {
					t.Error(err)
				}
			})
			awaitReturn(t, c.name+" from a function into its full queue", done)
			p.Wait()
			s := p.Stats()
			if inner.Load() != 1 || s.CallerRan != 1 {
				t.Fatalf("the inner function ran %d times, CallerRan %d; want 1 and 1", inner.Load(), s.CallerRan)
			}
			idleIdentity(t, "pool", s)
		})
	}
}

// TestCrawlerCompletes is the shape of a crawler that hangs on a pool whose workers all block
// adding links to a full queue: each page's links are a group made from the page's context,
// so a page that waits for its links runs the queued ones itself, and a page whose link
// does not fit the queue crawls it itself.
func TestCrawlerCompletes(t *testing.T) {
	t.Parallel()
	p := crew.New(8, crew.WithQueueSize(16))
	defer p.StopAndWait()
	// A site of 4 levels, 6 links a page: 1555 pages.
	var pages atomic.Int64
	var crawl func(ctx context.Context, url string, level int) error
	crawl = func(ctx context.Context, url string, level int) error {
		pages.Add(1)
		if level == 4 {
			return nil
		}
		g, _ := p.Group(ctx)
		for i := range 6 {
			link := fmt.Sprintf("%s/%d", url, i)
			g.Go(func(ctx context.Context) error { return crawl(ctx, link, level+1) })
		}
		return g.Wait()
	}
	g, _ := p.Group(context.Background())
	g.Go(func(ctx context.Context) error { return crawl(ctx, "https://a.example", 0) })
	done := goRun(func() { must(t, g.Wait()) })
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the crawl hung after %d pages: stats %+v", pages.Load(), p.Stats())
	}
	if n := pages.Load(); n != 1555 {
		t.Fatalf("crawled %d pages, want 1555", n)
	}
}

// TestHelpedFunctionThatPanicsOrExits: a function run in a lent slot that panics, with a value
// or with nil, fails its group with a *PanicError, as on a worker, and the waiting function
// goes on; one that calls
// runtime.Goexit ends the goroutine it runs on, the waiting function's, which then counts as
// a function that called Goexit, and the pool keeps serving.
func TestHelpedFunctionThatPanicsOrExits(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (string, error) {
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { panic("helped boom") })
		err := g.Wait()
		var pe *crew.PanicError
		if !errors.As(err, &pe) || pe.Value != "helped boom" {
			return "", fmt.Errorf("group Wait = %v, want the helped function's panic", err)
		}
		return "went on", nil
	})
	if v, err := f.Wait(); err != nil || v != "went on" {
		t.Fatalf("Wait = %q, %v", v, err)
	}

	f = crew.GoContext(context.Background(), p, func(ctx context.Context) (string, error) {
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { panic(nil) })
		var pe *crew.PanicError
		if err := g.Wait(); !errors.As(err, &pe) {
			return "", fmt.Errorf("group Wait = %v, want panic(nil) as a *PanicError", err)
		}
		return "went on", nil
	})
	if v, err := f.Wait(); err != nil || v != "went on" {
		t.Fatalf("panic(nil) in a lent slot: Wait = %q, %v", v, err)
	}

	f = crew.GoContext(context.Background(), p, func(ctx context.Context) (string, error) {
		g, _ := p.Group(ctx)
		g.Go(func(context.Context) error { runtime.Goexit(); return nil })
		g.Wait()
		return "not reached", nil
	})
	done := goRun(func() {
		if _, err := f.Wait(); err == nil || !strings.Contains(err.Error(), "Goexit") {
			t.Errorf("Wait = %v, want an error naming Goexit", err)
		}
	})
	awaitReturn(t, "Wait of a function whose helped child called Goexit", done)
	if _, err := crew.Go(p, func() (int, error) { return 1, nil }).Wait(); err != nil {
		t.Fatalf("the pool stopped serving: %v", err)
	}
	p.Wait()
	idleIdentity(t, "pool", p.Stats())
}

// TestHelpingAcrossSubPoolsOfSubPools: a function on a sub-pool of a sub-pool, each of limit
// 1, forks on its own pool, on its parent and on the root, and joins; every wait lends the one
// slot they all share.
func TestHelpingAcrossSubPoolsOfSubPools(t *testing.T) {
	t.Parallel()
	root := crew.New(1, crew.WithQueueSize(1))
	defer root.StopAndWait()
	mid := root.Sub(1)
	leaf := mid.Sub(1, crew.WithQueueSize(1))
	var ran atomic.Int32
	f := crew.GoContext(context.Background(), leaf, func(ctx context.Context) (int, error) {
		for _, pool := range []*crew.Pool{leaf, mid, root} {
			g, _ := pool.Group(ctx)
			for range 3 {
				g.Go(func(ctx context.Context) error {
					inner, _ := pool.Group(ctx)
					inner.Go(func(context.Context) error { ran.Add(1); return nil })
					return inner.Wait()
				})
			}
			if err := g.Wait(); err != nil {
				return 0, err
			}
		}
		return int(ran.Load()), nil
	})
	done := goRun(func() {
		if n, err := f.Wait(); err != nil || n != 9 {
			t.Errorf("Wait = %d, %v; want 9 inner functions run", n, err)
		}
	})
	awaitReturn(t, "fork/join across sub-pools of sub-pools of limit 1", done)
	for _, pool := range []*crew.Pool{leaf, mid, root} {
		pool.Wait()
		idleIdentity(t, "pool", pool.Stats())
	}
}

// TestHelpingWaitKeepsTheRateLimit: the functions a wait runs in its slot are starts like any
// other, so a rate limit paces them: fork/join of 25 functions at 500 starts a second with a
// burst of 1 takes at least 48 ms, and completes.
func TestHelpingWaitKeepsTheRateLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(1, crew.WithRateLimit(500, 1), crew.WithQueueSize(1))
	defer p.StopAndWait()
	a := &active{limit: 1}
	began := time.Now()
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		return fib(ctx, p, a, 6, 0) // 25 functions
	})
	done := goRun(func() {
		if v, err := f.Wait(); err != nil || v != 8 {
			t.Errorf("fib(6) = %d, %v", v, err)
		}
	})
	awaitReturn(t, "rate-limited fork/join", done)
	if took := time.Since(began); took < 48*time.Millisecond {
		t.Fatalf("25 starts at 500 a second, burst 1, took %v: the rate was not kept", took)
	}
	if n := a.over.Load(); n != 0 {
		t.Fatalf("%d starts over the limit", n)
	}
}

// TestHelpingWaitStartsAtResume: a wait whose functions a pause holds runs them when the pool
// is resumed (a Resume wakes it: worker.Engine.Resumed), also between the pauses of a storm
// that leaves the pool resumed for moments only, and runs none while it is paused.
func TestHelpingWaitStartsAtResume(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	inside := make(chan struct{})
	var ran atomic.Int32
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		p.Pause()
		close(inside)
		g, _ := p.Group(ctx)
		for range 200 {
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		return 0, g.Wait()
	})
	<-inside
	time.Sleep(5 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d functions ran in a lent slot while the pool was paused", n)
	}
	stop := make(chan struct{})
	var storm sync.WaitGroup
	repeatUntil(&storm, stop, func() {
		p.Resume()
		time.Sleep(20 * time.Microsecond)
		p.Pause()
		time.Sleep(200 * time.Microsecond)
	})
	waitFor(t, "the functions to run between the pauses", func() bool { return ran.Load() == 200 })
	close(stop)
	storm.Wait()
	p.Resume()
	if _, err := f.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestHooksThatMisbehaveAroundALentSlot: Started and Finished hooks that panic, with nil too,
// around functions run in a lent slot go to the panic handler, and each function still runs
// exactly once.
func TestHooksThatMisbehaveAroundALentSlot(t *testing.T) {
	t.Parallel()
	var handled atomic.Int32
	p := crew.New(1, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
		crew.WithHooks(crew.Hooks{
			Started:  func(crew.TaskInfo) { panic(nil) },
			Finished: func(crew.TaskInfo) { panic("finished") },
		}))
	defer p.StopAndWait()
	var ran atomic.Int32
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		g, _ := p.Group(ctx)
		for range 3 {
			g.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		return 0, g.Wait()
	})
	if _, err := f.Wait(); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if ran.Load() != 3 || handled.Load() != 8 {
		t.Fatalf("ran %d, panic handler called %d times; want 3 and 8 (two hooks of four tasks)", ran.Load(), handled.Load())
	}
	idleIdentity(t, "pool", p.Stats())
}

// TestAFunctionRunInALentSlotCountsAsWaitingUntilItEnds: a group's function that the waiting
// function runs itself counts once in Running+Waiting until it ends, whichever comes first:
// a worker dropping its place in the queue (it still counts as Waiting while it runs), or its
// end (its place, still queued, no longer counts).
func TestAFunctionRunInALentSlotCountsAsWaitingUntilItEnds(t *testing.T) {
	unended := func(s crew.Stats) uint64 {
		return s.Accepted - (s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped)
	}
	check := func(what string, s crew.Stats) {
		t.Helper()
		if uint64(s.Running+s.Waiting) != unended(s) {
			t.Fatalf("%s: %d tasks accepted and not ended, Running+Waiting = %d: %+v", what, unended(s), s.Running+s.Waiting, s)
		}
	}
	for _, placeFirst := range []bool{true, false} {
		p := crew.New(2)
		// The second worker is busy, so the group's function stays queued.
		releaseB, bStarted := make(chan struct{}), make(chan struct{})
		must(t, p.Submit(func() { close(bStarted); <-releaseB }))
		<-bStarted
		inG, releaseG, releaseF := make(chan struct{}), make(chan struct{}), make(chan struct{})
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { close(inG); <-releaseG; return nil })
			err := g.Wait() // runs the function itself: no worker is free
			<-releaseF
			return 0, err
		})
		<-inG
		check("the group's function running in the lent slot", p.Stats())
		if placeFirst {
			close(releaseB) // the second worker reaches the function's place and drops it
			awaitStats(t, p, "B to end and the place to be dropped", func(s crew.Stats) bool {
				return s.Completed == 1 && s.Running == 1
			})
			check("the place dropped, the function running", p.Stats())
			close(releaseG)
			awaitStats(t, p, "the function to end", func(s crew.Stats) bool { return s.Completed == 2 })
			check("the function ended", p.Stats())
		} else {
			close(releaseG)
			awaitStats(t, p, "the function to end", func(s crew.Stats) bool { return s.Completed == 1 })
			check("the function ended, its place still queued", p.Stats())
			close(releaseB)
			awaitStats(t, p, "B to end and the place to be dropped", func(s crew.Stats) bool {
				return s.Completed == 2 && s.Running == 1
			})
			check("the place dropped", p.Stats())
		}
		close(releaseF)
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		p.StopAndWait()
		idleIdentity(t, "p", p.Stats())
	}
}

// TestLentPlaceAtTheHeadLeavesTheQueue: a function that a waiting function ran itself leaves
// its place in a bounded queue once it has ended, also when another task was queued behind it
// (its place is then the oldest, not the newest): a task submitted meanwhile from outside is
// accepted into the room made, whether it was blocked on the full queue already or tries
// then, while the waiting function still runs. Run at the root and on a prioritised sub-pool,
// with the lent function returning or panicking with nil. (A runtime.Goexit in a lent
// function ends the waiting goroutine too: TestHelpedFunctionThatPanicsOrExits.)
func TestLentPlaceAtTheHeadLeavesTheQueue(t *testing.T) {
	ends := map[string]func(){
		"returns":  func() {},
		"panicnil": func() { panic(nil) },
	}
	for _, sub := range []bool{false, true} {
		for name, end := range ends {
			t.Run(fmt.Sprintf("sub=%v/%s", sub, name), func(t *testing.T) {
				root := crew.New(1, crew.WithQueueSize(2), crew.WithPanicHandler(func(any, []byte) {}))
				defer root.StopAndWait()
				p := root
				if sub {
					p = root.Sub(1, crew.WithQueueSize(2), crew.WithPriority(2), crew.WithPanicHandler(func(any, []byte) {}))
				}
				queued, gate, helped := make(chan struct{}), make(chan struct{}), make(chan struct{})
				var release sync.Once
				defer release.Do(func() { close(gate) }) // before StopAndWait, on a failure too
				var ran atomic.Int32
				outer := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
					f := crew.GoContext(ctx, p, func(context.Context) (int, error) { end(); return 1, nil })
					if err := p.Submit(func() { ran.Add(1) }); err != nil { // queued behind f: the queue is full
						return 0, err
					}
					close(queued)
					<-gate
					f.Wait() // runs f here; its error depends on how f ended
					close(helped)
					<-gate
					return 0, nil
				})
				awaitReturn(t, "the outer function's submits", queued)
				blocked := goRun(func() {
					if err := p.Submit(func() { ran.Add(1) }); err != nil {
						t.Error(err)
					}
				})
				gate <- struct{}{}
				awaitReturn(t, "the helped wait", helped)
				awaitReturn(t, "a submit blocked on the full queue, after the lent function's place left", blocked)
				if s := p.Stats(); s.Waiting != 2 || s.Running != 1 {
					t.Errorf("Stats %+v after the lent function ended, want 1 running and 2 waiting", s)
				}
				if p.TrySubmit(func() { ran.Add(1) }) {
					t.Error("TrySubmit accepted a third task into a queue of 2 holding 2")
				}
				release.Do(func() { close(gate) })
				must(t, returnsWithin(t, "the outer function", func() error { _, err := outer.Wait(); return err }))
				awaitReturn(t, "Wait", goRun(p.Wait))
				if ran.Load() != 2 {
					t.Fatalf("%d of the 2 accepted tasks ran", ran.Load())
				}
				if s := p.Stats(); s.Accepted != s.Completed+s.Panicked+s.Skipped || s.Waiting != 0 {
					t.Fatalf("Stats %+v at the end: every accepted task must have ended once", s)
				}
			})
		}
	}
}

// TestCompletedHelpsInsideAFunctionAndWaitsOutAPause: a range over Completed inside a function
// of New(1) runs the futures' functions itself, newest first, as their Wait would; while the
// pool is paused it runs none, and once it is resumed it goes on.
func TestCompletedHelpsInsideAFunctionAndWaitsOutAPause(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	ranging, resumed := make(chan struct{}), make(chan struct{})
	var order []int
	f := crew.GoContext(context.Background(), p, func(ctx context.Context) ([]int, error) {
		var fs []*crew.Future[int]
		for i := range 3 {
			fs = append(fs, crew.GoContext(ctx, p, func(context.Context) (int, error) { return i, nil }))
		}
		p.Pause()
		close(ranging)
		for f := range crew.Completed(fs...) {
			select {
			case <-resumed:
			default:
				return nil, errors.New("a function ran while the pool was paused")
			}
			v, err := f.Wait()
			if err != nil {
				return nil, err
			}
			order = append(order, v)
		}
		return order, nil
	})
	awaitReturn(t, "the range to start", ranging)
	time.Sleep(3 * crew.PausePoll) // the range looks again a few times, paused
	close(resumed)
	p.Resume()
	got, err := returnsWithin2(t, "the function ranging over Completed", f.Wait)
	must(t, err)
	if !slices.Equal(got, []int{2, 1, 0}) {
		t.Fatalf("Completed yielded %v, want the functions run newest first: [2 1 0]", got)
	}
}

// TestLentSubPoolFunctionLeavesNoWorkerAbove: a function on a sub-pool of limit 2 under a root
// of limit 1 with a queue of one makes a group (or a future) on its sub-pool and waits, the
// wait running the function itself. The worker the sub-pool had started for it, waiting in
// the root's queue, leaves too: the root's Waiting is 0 and its TrySubmit is accepted, and
// every pool's counters add up at the end. With the sub-pool at a priority level, too.
func TestLentSubPoolFunctionLeavesNoWorkerAbove(t *testing.T) {
	for _, level := range []int{0, 3} {
		for _, how := range []string{"group", "future"} {
			what := fmt.Sprintf("level %d, %s", level, how)
			root := crew.New(1, crew.WithQueueSize(1))
			mid := root.Sub(2, crew.WithPriority(level))
			var rs, ms crew.Stats
			var tried bool
			f := crew.GoContext(context.Background(), mid, func(ctx context.Context) (int, error) {
				if how == "group" {
					g, _ := mid.Group(ctx)
					g.Go(func(context.Context) error { return nil })
					if err := g.Wait(); err != nil {
						return 0, err
					}
				} else if _, err := crew.GoContext(ctx, mid, func(context.Context) (int, error) { return 1, nil }).Wait(); err != nil {
					return 0, err
				}
				rs, ms = root.Stats(), mid.Stats()
				tried = root.TrySubmit(func() {})
				return 0, nil
			})
			_, err := returnsWithin2(t, what, f.Wait)
			must(t, err)
			if ms.Waiting != 0 || rs.Waiting != 0 || !tried {
				t.Errorf("%s: the sub-pool's Waiting %d, the root's %d, root TrySubmit %v; want 0, 0, true (root %+v)",
					what, ms.Waiting, rs.Waiting, tried, rs)
			}
			awaitReturn(t, what+": Wait", goRun(root.Wait))
			for name, p := range map[string]*crew.Pool{"root": root, "sub-pool": mid} {
				if s := p.Stats(); s.Accepted != s.Completed+s.Panicked+s.Skipped || s.Waiting != 0 || s.Running != 0 {
					t.Errorf("%s: %s Stats %+v at the end: every accepted task must have ended once", what, name, s)
				}
			}
			root.StopAndWait()
		}
	}
}
