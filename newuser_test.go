package crew_test

// Tests written the way a newcomer from ants, pond, errgroup, conc or workerpool would use crew:
// one common task per test, done as README.md and the package documentation suggest, asserting
// what they promise.

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
)

// nuWait fails t unless ch is closed within 10 s.
func nuWait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// nuGauge records the most calls inside enter/exit at once.
type nuGauge struct {
	cur, max atomic.Int64
}

func (g *nuGauge) enter() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *nuGauge) exit() { g.cur.Add(-1) }

// nuPanicMessage returns what f panics with, as a string, or "" if it does not panic.
func nuPanicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// The README's first snippet, as a newcomer pastes it: 100 tasks on a pool of 4 sum to 5050.
func TestNewUserReadmeSnippetSums(t *testing.T) {
	pool := crew.New(4) // at most 4 tasks run at once
	defer pool.StopAndWait()

	var sum atomic.Int64
	for i := 1; i <= 100; i++ {
		pool.Submit(func() { sum.Add(int64(i)) })
	}
	pool.Wait()
	if got := sum.Load(); got != 5050 {
		t.Fatalf("sum = %d, want 5050", got)
	}
}

// Bounded fan-out (ants/pond/workerpool's basic use): never more than the limit at once, every
// task runs once, Stats counts each exactly, and Running is 0 once Wait returned.
func TestNewUserBoundedFanOutRespectsLimit(t *testing.T) {
	const limit, tasks = 3, 60
	p := crew.New(limit)
	defer p.StopAndWait()
	var g nuGauge
	var ran [tasks]atomic.Int32
	for i := range tasks {
		if err := p.Submit(func() {
			g.enter()
			defer g.exit()
			time.Sleep(200 * time.Microsecond)
			ran[i].Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	for i := range ran {
		if n := ran[i].Load(); n != 1 {
			t.Fatalf("task %d ran %d times", i, n)
		}
	}
	if m := g.max.Load(); m > limit {
		t.Fatalf("%d tasks ran at once on New(%d)", m, limit)
	}
	s := p.Stats()
	if s.Accepted != tasks || s.Completed != tasks || s.Running != 0 || s.Waiting != 0 || s.MaxWorkers != limit {
		t.Fatalf("stats after Wait: %+v", s)
	}
}

// A typed pool (ants' PoolWithFunc): every argument reaches fn once; a nil pointer is an
// argument like any other; StopAndWait leaves nothing running.
func TestNewUserFuncPoolInvokesEveryArgument(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	nils := 0
	fp := crew.NewFunc(2, func(v *int) {
		mu.Lock()
		defer mu.Unlock()
		if v == nil {
			nils++
			return
		}
		seen[*v]++
	})
	for i := range 50 {
		if err := fp.Invoke(&i); err != nil {
			t.Fatal(err)
		}
	}
	if err := fp.Invoke(nil); err != nil {
		t.Fatalf("Invoke(nil) = %v, want nil (a nil pointer is an argument)", err)
	}
	fp.StopAndWait()
	if len(seen) != 50 || nils != 1 {
		t.Fatalf("saw %d distinct arguments and %d nils, want 50 and 1", len(seen), nils)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("argument %d seen %d times", k, n)
		}
	}
	if err := fp.Invoke(new(int)); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Invoke after StopAndWait = %v, want ErrStopped", err)
	}
}

// Collect results in submission order (conc's ResultPool / pond's result pool): Results and Map
// give the values in the order of the inputs, whatever order the functions finish in.
func TestNewUserCollectResultsInSubmissionOrder(t *testing.T) {
	ctx := context.Background()
	p := crew.New(4)
	defer p.StopAndWait()

	r, _ := crew.NewResults[int](ctx, p)
	for i := range 20 {
		r.Go(func(context.Context) (int, error) {
			time.Sleep(time.Duration(20-i) * 100 * time.Microsecond) // later ones finish first
			return i * i, nil
		})
	}
	vals, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v != i*i {
			t.Fatalf("Results.Wait()[%d] = %d, want %d", i, v, i*i)
		}
	}

	in := []string{"a", "bb", "ccc", "dddd"}
	lens, err := crew.Map(ctx, p, in, func(_ context.Context, s string) (int, error) { return len(s), nil })
	if err != nil || fmt.Sprint(lens) != "[1 2 3 4]" {
		t.Fatalf("Map = %v, %v; want [1 2 3 4], nil", lens, err)
	}
}

// Futures (pond's Submit, conc's future-like uses): Wait returns the value; Completed yields in
// completion order; Cancel on a function that has not started keeps it from running.
func TestNewUserFuturesAndCancel(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	hold := make(chan struct{})
	started := make(chan struct{})
	first := crew.Go(p, func() (string, error) { close(started); <-hold; return "first", nil })
	nuWait(t, "first future to start", started)
	var ranSecond atomic.Bool
	second := crew.Go(p, func() (string, error) { ranSecond.Store(true); return "second", nil })
	if !second.Cancel() {
		t.Fatal("Cancel of a queued function = false, want true")
	}
	if second.Cancel() {
		t.Fatal("second Cancel = true, want false")
	}
	if first.Cancel() {
		t.Fatal("Cancel of a running function = true, want false")
	}
	close(hold)
	if v, err := first.Wait(); v != "first" || err != nil {
		t.Fatalf("first.Wait() = %q, %v", v, err)
	}
	if _, err := second.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled future's Wait error = %v, want context.Canceled", err)
	}
	p.Wait()
	if ranSecond.Load() {
		t.Fatal("a canceled function ran")
	}
	if s := p.Stats(); s.Skipped != 1 || s.Completed != 1 || s.Accepted != 2 {
		t.Fatalf("stats: %+v, want Accepted 2, Completed 1, Skipped 1", s)
	}

	// Completed: a future that ends first is yielded first.
	slowGo := make(chan struct{})
	q := crew.New(2)
	defer q.StopAndWait()
	slow := crew.Go(q, func() (int, error) { <-slowGo; return 1, nil })
	fast := crew.Go(q, func() (int, error) { return 2, nil })
	var order []int
	for f := range crew.Completed(slow, fast) {
		v, _ := f.Wait()
		order = append(order, v)
		if v == 2 {
			close(slowGo)
		}
	}
	if fmt.Sprint(order) != "[2 1]" {
		t.Fatalf("Completed order = %v, want [2 1]", order)
	}
}

// errgroup's pattern: the first error cancels the group's context, Wait returns that error, and
// (unlike errgroup) the functions still queued are skipped and counted in Stats.Skipped.
func TestNewUserGroupFirstErrorCancelsTheRest(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	boom := errors.New("boom")
	g, gctx := p.Group(context.Background())
	release := make(chan struct{})
	started := make(chan struct{})
	g.Go(func(context.Context) error { close(started); <-release; return boom })
	nuWait(t, "first function to start", started)
	var ran atomic.Int32
	for range 9 {
		g.Go(func(context.Context) error { ran.Add(1); return nil })
	}
	close(release)
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want boom", err)
	}
	if context.Cause(gctx) != boom {
		t.Fatalf("group context cause = %v, want boom", context.Cause(gctx))
	}
	p.Wait()
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d queued functions ran after the first error, want 0", n)
	}
	if s := p.Stats(); s.Skipped != 9 || s.Completed != 1 {
		t.Fatalf("stats %+v, want Skipped 9, Completed 1", s)
	}
}

// conc's pool.WithErrors / errgroup users who need every function to run: GroupAll runs all of
// them and joins every error.
func TestNewUserGroupAllJoinsEveryError(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	g, _ := p.GroupAll(context.Background())
	errs := make([]error, 5)
	var ran atomic.Int32
	for i := range errs {
		errs[i] = fmt.Errorf("err %d", i)
		g.Go(func(context.Context) error { ran.Add(1); return errs[i] })
	}
	err := g.Wait()
	if ran.Load() != 5 {
		t.Fatalf("GroupAll ran %d of 5", ran.Load())
	}
	for _, e := range errs {
		if !errors.Is(err, e) {
			t.Fatalf("joined error %v lacks %v", err, e)
		}
	}
}

// TryGo never blocks and its refusal is not the group's error.
func TestNewUserGroupTryGoRefusalIsNotTheGroupsError(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1))
	defer p.StopAndWait()
	hold := make(chan struct{})
	started := make(chan struct{})
	g, _ := p.Group(context.Background())
	if !g.TryGo(func(context.Context) error { close(started); <-hold; return nil }) {
		t.Fatal("TryGo on an idle pool = false")
	}
	nuWait(t, "first to start", started)
	if !g.TryGo(func(context.Context) error { return nil }) {
		t.Fatal("TryGo into an empty queue of one = false")
	}
	if g.TryGo(func(context.Context) error { return nil }) {
		t.Fatal("TryGo into a full queue = true")
	}
	close(hold)
	if err := g.Wait(); err != nil {
		t.Fatalf("Wait = %v, want nil: a TryGo refusal is not the group's error", err)
	}
}

// The fork/join snippet of the package documentation ("Waits that help"), on New(1) with a queue
// of one, as it promises: it completes and visits every node.
func TestNewUserDocForkJoinSnippetOnOneWorker(t *testing.T) {
	type Node struct{ Children []*Node }
	var build func(depth int) *Node
	build = func(depth int) *Node {
		n := &Node{}
		if depth > 0 {
			for range 3 {
				n.Children = append(n.Children, build(depth-1))
			}
		}
		return n
	}
	root := build(4) // 1+3+9+27+81 = 121 nodes
	pool := crew.New(1, crew.WithQueueSize(1))
	defer pool.StopAndWait()
	ctx := context.Background()
	var visited atomic.Int64

	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		var walk func(ctx context.Context, n *Node) error
		walk = func(ctx context.Context, n *Node) error {
			visited.Add(1)
			g, _ := pool.Group(ctx) // ctx: the context crew gave this function
			for _, c := range n.Children {
				g.Go(func(ctx context.Context) error { return walk(ctx, c) })
			}
			return g.Wait() // runs the children no worker has taken
		}
		g, _ := pool.Group(ctx)
		g.Go(func(ctx context.Context) error { return walk(ctx, root) })
		err = g.Wait()
	}()
	nuWait(t, "the fork/join walk on New(1)", done)
	if err != nil || visited.Load() != 121 {
		t.Fatalf("walk: err %v, visited %d, want nil and 121", err, visited.Load())
	}
}

// Per-key ordering: tasks of one key run one at a time, in submission order, and may share state
// without locks (the race detector checks that), while keys proceed in parallel.
func TestNewUserKeyedRunsEachKeyInOrder(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	keys := []string{"alice", "bob", "carol"}
	logs := map[string]*[]int{}
	for _, key := range keys {
		logs[key] = new([]int)
	}
	const each = 40
	for i := range each {
		for _, key := range keys {
			log := logs[key]
			if err := k.Submit(key, func() { *log = append(*log, i) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	k.Wait()
	for _, key := range keys {
		got := *logs[key]
		if len(got) != each {
			t.Fatalf("key %s ran %d tasks, want %d", key, len(got), each)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("key %s: position %d ran task %d", key, i, v)
			}
		}
	}
	s := k.Stats()
	if s.Accepted != each*3 || s.Completed != each*3 {
		t.Fatalf("Keyed.Stats = %+v, want Accepted and Completed %d", s, each*3)
	}
}

// Rate-limited calls: with WithRateLimit(r, b), n tasks cannot all start in less than (n-b)/r
// (over any window of length T at most b + r·T start). Only a lower bound is asserted.
func TestNewUserRateLimitPacesStarts(t *testing.T) {
	const perSecond, burst, n = 100.0, 5, 25
	p := crew.New(8, crew.WithRateLimit(perSecond, burst))
	defer p.StopAndWait()
	var mu sync.Mutex
	var starts []time.Time
	for range n {
		p.Submit(func() {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
		})
	}
	p.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != n {
		t.Fatalf("%d of %d started", len(starts), n)
	}
	first, last := starts[0], starts[0]
	for _, s := range starts {
		if s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	// n <= burst + perSecond*T  =>  T >= (n-burst)/perSecond = 200 ms; allow timer slack.
	if span := last.Sub(first); span < 150*time.Millisecond {
		t.Fatalf("%d starts under WithRateLimit(%v, %d) spanned %v, want at least ~200ms", n, perSecond, burst, span)
	}

	// SetRateLimit(+Inf) removes the limit: the next batch needs no pacing (only that it
	// completes is asserted).
	p.SetRateLimit(math.Inf(1), 1)
	var ran atomic.Int32
	for range 200 {
		p.Submit(func() { ran.Add(1) })
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	nuWait(t, "200 tasks after SetRateLimit(+Inf)", done)
	if ran.Load() != 200 {
		t.Fatalf("ran %d of 200", ran.Load())
	}
}

// Graceful shutdown with a deadline: Shutdown returns ctx.Err() when the deadline passes; the
// running function's context ends with cause ErrStopped; a queued function with a context is
// skipped and its future fails with ErrStopped; a queued plain task still runs.
func TestNewUserShutdownWithDeadline(t *testing.T) {
	p := crew.New(1)
	started := make(chan struct{})
	running := crew.GoContext(context.Background(), p, func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
	nuWait(t, "running function", started)
	queued := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
	var plainRan atomic.Bool
	if err := p.Submit(func() { plainRan.Store(true) }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	if _, err := running.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("running function's context cause = %v, want ErrStopped", err)
	}
	if _, err := queued.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("queued function's Wait = %v, want ErrStopped", err)
	}
	done := make(chan struct{})
	go func() { p.StopAndWait(); close(done) }()
	nuWait(t, "StopAndWait after a Shutdown that gave up", done)
	if !plainRan.Load() {
		t.Fatal("a queued plain task did not run after Shutdown gave up")
	}
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after Shutdown = %v, want ErrStopped", err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of a drained pool = %v, want nil", err)
	}
}

// Shutdown that drains in time returns nil and ran everything.
func TestNewUserShutdownDrainsInTime(t *testing.T) {
	p := crew.New(2)
	var ran atomic.Int32
	for range 20 {
		p.Submit(func() { ran.Add(1) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v, want nil", err)
	}
	if ran.Load() != 20 {
		t.Fatalf("ran %d of 20", ran.Load())
	}
}

// Panics: a plain task's panic goes to the handler with its stack, the worker keeps serving and
// Stats counts it; a future, a group and Map report *PanicError; panic(err) unwraps to err.
func TestNewUserPanicsAreHandled(t *testing.T) {
	var mu sync.Mutex
	var gotValue any
	var gotStack string
	p := crew.New(1, crew.WithPanicHandler(func(v any, stack []byte) {
		mu.Lock()
		gotValue, gotStack = v, string(stack)
		mu.Unlock()
	}))
	defer p.StopAndWait()
	p.Submit(nuPanickyTask)
	var after atomic.Bool
	p.Submit(func() { after.Store(true) })
	p.Wait()
	mu.Lock()
	if gotValue != "plain boom" || !strings.Contains(gotStack, "nuPanickyTask") {
		t.Errorf("handler got %v and a stack without nuPanickyTask:\n%s", gotValue, gotStack)
	}
	mu.Unlock()
	if !after.Load() {
		t.Fatal("the task after a panic did not run")
	}
	if s := p.Stats(); s.Panicked != 1 || s.Completed != 1 {
		t.Fatalf("stats %+v, want Panicked 1, Completed 1", s)
	}

	sentinel := errors.New("sentinel")
	_, err := crew.Go(p, func() (int, error) { panic(sentinel) }).Wait()
	var pe *crew.PanicError
	if !errors.As(err, &pe) || !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "sentinel") {
		t.Fatalf("Go's panic error = %v, want a *PanicError wrapping sentinel", err)
	}
	g, _ := p.Group(context.Background())
	g.Go(func(context.Context) error { panic("group boom") })
	if err := g.Wait(); !errors.As(err, &pe) || pe.Value != "group boom" {
		t.Fatalf("group Wait = %v, want *PanicError of \"group boom\"", err)
	}
	_, err = crew.Map(context.Background(), p, []int{1}, func(context.Context, int) (int, error) { panic("map boom") })
	if !errors.As(err, &pe) {
		t.Fatalf("Map = %v, want *PanicError", err)
	}
}

func nuPanickyTask() { panic("plain boom") }

// Streaming with MapSeq: results arrive in input order; an early break leaves no call running;
// a failure yields the results before it, then the failure once, then ends.
func TestNewUserMapSeqStreamsInOrder(t *testing.T) {
	ctx := context.Background()
	p := crew.New(4)
	defer p.StopAndWait()
	square := func(_ context.Context, x int) (int, error) {
		time.Sleep(time.Duration(x%3) * 200 * time.Microsecond)
		return x * x, nil
	}
	want := 0
	for v, err := range crew.MapSeq(ctx, p, countTo(50), square) {
		if err != nil || v != want*want {
			t.Fatalf("result %d = %d, %v; want %d", want, v, err, want*want)
		}
		want++
	}
	if want != 50 {
		t.Fatalf("got %d results, want 50", want)
	}

	var inFlight atomic.Int32
	slow := func(ctx context.Context, x int) (int, error) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
		return x, nil
	}
	for v := range crew.MapSeq(ctx, p, countTo(1000), slow) {
		if v == 3 {
			break
		}
	}
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("%d calls still running after break", n)
	}

	bad := errors.New("bad 5")
	var got []int
	var errs []error
	for v, err := range crew.MapSeq(ctx, p, countTo(20), func(_ context.Context, x int) (int, error) {
		if x == 5 {
			return 0, bad
		}
		return x, nil
	}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, v)
	}
	if fmt.Sprint(got) != "[0 1 2 3 4]" || len(errs) != 1 || !errors.Is(errs[0], bad) {
		t.Fatalf("MapSeq with a failure at 5: results %v, errors %v; want [0 1 2 3 4] and [bad 5]", got, errs)
	}

	seen := map[int]bool{}
	for v, err := range crew.MapSeqUnordered(ctx, p, countTo(30), square) {
		if err != nil {
			t.Fatal(err)
		}
		seen[v] = true
	}
	if len(seen) != 30 {
		t.Fatalf("MapSeqUnordered yielded %d distinct results, want 30", len(seen))
	}
}

// ForEach over an endless iterator stops at the first error and returns it.
func TestNewUserForEachStopsAtFirstError(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	stop := errors.New("stop at 10")
	var pulled atomic.Int64
	err := crew.ForEach(context.Background(), p, count(-1, &pulled), func(_ context.Context, x int) error {
		if x == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("ForEach over an endless sequence = %v, want the first error", err)
	}
	// How many values follow the failing one depends on when its call runs: the other slot
	// keeps pulling until then, so only the return of ForEach is asserted.
}

// Sub-pools with priority: with the parent's only worker busy, tasks queued on a low and then a
// high sub-pool start high first once it frees up.
func TestNewUserSubPoolPriorityStartsHigherFirst(t *testing.T) {
	parent := crew.New(1)
	defer parent.StopAndWait()
	low := parent.Sub(1, crew.WithPriority(0))
	high := parent.Sub(1, crew.WithPriority(10))
	hold := make(chan struct{})
	started := make(chan struct{})
	parent.Submit(func() { close(started); <-hold })
	nuWait(t, "the parent's worker to be busy", started)
	var mu sync.Mutex
	var order []string
	rec := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	for range 3 {
		low.Submit(rec("L"))
	}
	for range 3 {
		high.Submit(rec("H"))
	}
	close(hold)
	parent.Wait()
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, ""); got != "HHHLLL" {
		t.Fatalf("start order %q, want HHHLLL", got)
	}
}

// A sub-pool's own limit holds, and so does its parent's when the sub-pool's is larger.
func TestNewUserSubPoolLimits(t *testing.T) {
	parent := crew.New(6)
	defer parent.StopAndWait()
	small := parent.Sub(2)
	var g nuGauge
	for range 30 {
		small.Submit(func() { g.enter(); time.Sleep(100 * time.Microsecond); g.exit() })
	}
	small.Wait()
	if m := g.max.Load(); m > 2 {
		t.Fatalf("Sub(2) ran %d at once", m)
	}

	tight := crew.New(2)
	defer tight.StopAndWait()
	wide := tight.Sub(10)
	var g2 nuGauge
	for range 30 {
		wide.Submit(func() { g2.enter(); time.Sleep(100 * time.Microsecond); g2.exit() })
	}
	wide.Wait()
	if m := g2.max.Load(); m > 2 {
		t.Fatalf("Sub(10) of New(2) ran %d at once", m)
	}
	// Stopping a sub-pool leaves the parent working.
	wide.Stop()
	if err := wide.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit on a stopped sub-pool = %v", err)
	}
	if err := tight.Submit(func() {}); err != nil {
		t.Fatalf("parent refused after its sub-pool stopped: %v", err)
	}
}

// Resizing: growing starts queued tasks without a new submit; Stats reports the new limit at
// once; after shrinking, no more than the new limit run.
func TestNewUserResizeGrowsAndShrinks(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	hold := make(chan struct{})
	started := make(chan struct{}, 8)
	for range 4 {
		p.Submit(func() { started <- struct{}{}; <-hold })
	}
	<-started
	p.Resize(4)
	if got := p.Stats().MaxWorkers; got != 4 {
		t.Fatalf("MaxWorkers after Resize(4) = %d", got)
	}
	for i := 1; i < 4; i++ {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 4 started after Resize(4)", i)
		}
	}
	p.Resize(2)
	var g nuGauge
	for range 20 {
		p.Submit(func() { g.enter(); time.Sleep(100 * time.Microsecond); g.exit() })
	}
	close(hold) // the four running may finish; what starts now obeys 2
	p.Wait()
	if m := g.max.Load(); m > 2 {
		t.Fatalf("%d tasks started after Resize(2) ran at once", m)
	}
}

// Pause and resume: once Pause returned, nothing starts; submits are still accepted and counted
// as Waiting; Resume runs them all. PauseAndWait waits for the running task.
func TestNewUserPauseHoldsStartsUntilResume(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	p.Pause()
	var ran atomic.Int32
	for range 10 {
		if err := p.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d tasks ran on a paused pool", n)
	}
	if s := p.Stats(); !s.Paused || s.Waiting != 10 {
		t.Fatalf("paused stats %+v, want Paused and Waiting 10", s)
	}
	p.Resume()
	p.Wait()
	if ran.Load() != 10 {
		t.Fatalf("ran %d of 10 after Resume", ran.Load())
	}

	hold := make(chan struct{})
	started := make(chan struct{})
	var finished atomic.Bool
	p.Submit(func() { close(started); <-hold; finished.Store(true) })
	nuWait(t, "task to start", started)
	errc := make(chan error, 1)
	go func() { errc <- p.PauseAndWait(context.Background()) }()
	select {
	case err := <-errc:
		t.Fatalf("PauseAndWait returned %v while a task ran", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(hold)
	select {
	case err := <-errc:
		if err != nil || !finished.Load() {
			t.Fatalf("PauseAndWait = %v, finished %v", err, finished.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PauseAndWait did not return")
	}
	p.Resume()
}

// PauseAndWait called from a task waits for that task too: it returns only when ctx ends.
func TestNewUserPauseAndWaitFromTaskReturnsCtxErr(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	errc := make(chan error, 1)
	p.Submit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		errc <- p.PauseAndWait(ctx)
	})
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PauseAndWait from a task = %v, want DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PauseAndWait from a task did not return at its deadline")
	}
	if !p.Stats().Paused {
		t.Fatal("pool not paused after PauseAndWait gave up (doc: it stays paused)")
	}
	p.Resume()
}

// Metrics via Stats: each counter counts what its name says, exactly.
func TestNewUserStatsCountExactly(t *testing.T) {
	var discarded atomic.Int32
	p := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(any) { discarded.Add(1) }))
	defer p.StopAndWait()
	hold := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-hold })
	nuWait(t, "the worker to be busy", started)
	var ran atomic.Int32
	for range 4 { // queue of 2: the first two are dropped
		if err := p.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if p.TrySubmit(func() {}) {
		t.Fatal("TrySubmit on a full queue = true")
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(canceled, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with an ended ctx = %v", err)
	}
	close(hold)
	p.Wait()
	if discarded.Load() != 2 || ran.Load() != 2 {
		t.Fatalf("discarded %d, ran %d; want 2 and 2", discarded.Load(), ran.Load())
	}
	s := p.Stats()
	want := crew.Stats{MaxWorkers: 1, Idle: s.Idle, Accepted: 5, Completed: 3, Rejected: 1, Canceled: 1, Discarded: 2}
	if s != want {
		t.Fatalf("Stats = %+v\nwant    %+v", s, want)
	}
	if s.Accepted != s.Completed+s.Panicked+s.Discarded+s.Returned+s.Skipped {
		t.Fatalf("idle pool: Accepted != sum of outcomes: %+v", s)
	}
}

// StopNow hands back the queued plain tasks in order and counts them in Returned.
func TestNewUserStopNowHandsBackQueued(t *testing.T) {
	p := crew.New(1)
	hold := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-hold })
	nuWait(t, "the worker to be busy", started)
	var order []int
	for i := range 3 {
		p.Submit(func() { order = append(order, i) })
	}
	back := p.StopNow()
	if len(back) != 3 {
		t.Fatalf("StopNow returned %d tasks, want 3", len(back))
	}
	for _, f := range back {
		f() // run them ourselves, in the order given
	}
	if fmt.Sprint(order) != "[0 1 2]" {
		t.Fatalf("StopNow's order %v, want [0 1 2]", order)
	}
	close(hold)
	p.StopAndWait()
	if s := p.Stats(); s.Returned != 3 || s.Completed != 1 {
		t.Fatalf("stats %+v, want Returned 3, Completed 1", s)
	}
}

// Bounded queue back-pressure: WithQueueSize(n) lets n tasks wait; the next Submit blocks, or is
// rejected with ErrQueueFull under WithNonBlocking; Stop releases a blocked Submit with
// ErrStopped.
func TestNewUserBoundedQueueBackPressure(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(2), crew.WithNonBlocking())
	hold := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-hold })
	nuWait(t, "worker busy", started)
	must(t, p.Submit(func() {}))
	must(t, p.Submit(func() {}))
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("third queued Submit = %v, want ErrQueueFull", err)
	}
	close(hold)
	p.StopAndWait()

	b := crew.New(1, crew.WithQueueSize(1))
	hold2 := make(chan struct{})
	started2 := make(chan struct{})
	b.Submit(func() { close(started2); <-hold2 })
	nuWait(t, "worker busy", started2)
	must(t, b.Submit(func() {}))
	errc := make(chan error, 1)
	go func() { errc <- b.Submit(func() {}) }()
	select {
	case err := <-errc:
		t.Fatalf("Submit into a full queue returned %v, want it to block", err)
	case <-time.After(20 * time.Millisecond):
	}
	b.Stop()
	select {
	case err := <-errc:
		if !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("blocked Submit after Stop = %v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked Submit did not return after Stop")
	}
	close(hold2)
	b.StopAndWait()
}

// WithTaskTimeout: a function's context ends d after it starts, with a cause that matches
// ErrTaskTimeout and context.DeadlineExceeded.
func TestNewUserTaskTimeoutCause(t *testing.T) {
	p := crew.New(1, crew.WithTaskTimeout(20*time.Millisecond))
	defer p.StopAndWait()
	_, err := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, context.Cause(ctx)
	}).Wait()
	if !errors.Is(err, crew.ErrTaskTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cause = %v, want ErrTaskTimeout and DeadlineExceeded", err)
	}
}

// WithContext: the pool stops when its context ends; submits then return ErrStopped.
func TestNewUserWithContextStopsThePool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := crew.New(2, crew.WithContext(ctx))
	defer p.StopAndWait()
	must(t, p.Submit(func() {}))
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for !p.Stopped() {
		if time.Now().After(deadline) {
			t.Fatal("pool not stopped 10 s after its context ended")
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after the pool's context ended = %v, want ErrStopped", err)
	}
}

// Misuse panics at the call, with a message that names it (package documentation, "Panics").
func TestNewUserMisusePanicsNameTheCall(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	var nilPool *crew.Pool
	var nilFunc *crew.FuncPool[int]
	var nuNilCtx context.Context // a nil context, as a caller might pass by mistake
	cases := []struct {
		name, want string
		f          func()
	}{
		{"New(0)", "crew: New: maxWorkers", func() { crew.New(0) }},
		{"New(-2)", "crew: New: maxWorkers", func() { crew.New(-2) }},
		{"Resize(0)", "crew: Resize: maxWorkers", func() { p.Resize(0) }},
		{"Sub(0)", "crew: Sub: maxWorkers", func() { p.Sub(0) }},
		{"NewFunc nil fn", "crew: NewFunc: fn", func() { crew.NewFunc[int](1, nil) }},
		{"WithQueueSize(-1)", "crew: WithQueueSize", func() { crew.WithQueueSize(-1) }},
		{"nil *Pool Submit", "crew: Submit: nil *Pool", func() { nilPool.Submit(func() {}) }},
		{"nil *Pool Wait", "crew: Wait: nil *Pool", func() { nilPool.Wait() }},
		{"nil *FuncPool Invoke", "crew: Invoke: nil *FuncPool", func() { nilFunc.Invoke(1) }},
		{"Go nil pool", "crew: Go", func() { crew.Go(nil, func() (int, error) { return 0, nil }) }},
		{"Map nil ctx", "crew: Map: ctx must not be nil", func() {
			crew.Map(nuNilCtx, p, []int{1}, func(context.Context, int) (int, error) { return 0, nil })
		}},
		{"Shutdown nil ctx", "crew: Shutdown: ctx", func() { p.Shutdown(nuNilCtx) }},
		{"SubmitN(0)", "crew: SubmitN", func() { p.SubmitN(0, func() {}) }},
		{"NewKeyed nil pool", "crew: NewKeyed", func() { crew.NewKeyed[int](nil) }},
	}
	for _, c := range cases {
		if msg := nuPanicMessage(c.f); !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s panicked with %q, want a message starting %q", c.name, msg, c.want)
		}
	}
}

// A nil function is refused with ErrNilTask (or an error matching it), not run, not counted.
func TestNewUserNilTaskIsRefused(t *testing.T) {
	ctx := context.Background()
	p := crew.New(1)
	defer p.StopAndWait()
	if err := p.Submit(nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Submit(nil) = %v", err)
	}
	if p.TrySubmit(nil) {
		t.Error("TrySubmit(nil) = true")
	}
	if _, err := crew.Go[int](p, nil).Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Go(p, nil).Wait() = %v", err)
	}
	g, _ := p.Group(ctx)
	g.Go(nil)
	if err := g.Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Group.Go(nil) then Wait = %v", err)
	}
	if _, err := crew.Map[int, int](ctx, p, []int{1}, nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Map with nil fn = %v, want an error matching ErrNilTask", err)
	}
	if err := crew.ForEach[int](ctx, p, countTo(1), nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("ForEach with nil fn = %v, want an error matching ErrNilTask", err)
	}
	k := crew.NewKeyed[int](p)
	if err := k.Submit(1, nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Keyed.Submit(nil) = %v", err)
	}
	if s := p.Stats(); s.Accepted != 0 || s.Rejected != 0 {
		t.Errorf("nil tasks counted: %+v", s)
	}
}

// Every door refuses with ErrStopped after Stop.
func TestNewUserCallsAfterStopReturnErrStopped(t *testing.T) {
	ctx := context.Background()
	p := crew.New(2)
	p.StopAndWait()
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Submit = %v", err)
	}
	if err := p.SubmitContext(ctx, func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("SubmitContext = %v", err)
	}
	if p.TrySubmit(func() {}) {
		t.Error("TrySubmit = true")
	}
	if _, err := crew.Go(p, func() (int, error) { return 1, nil }).Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Go.Wait = %v", err)
	}
	g, _ := p.Group(ctx)
	g.Go(func(context.Context) error { return nil })
	if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Group.Wait = %v", err)
	}
	if _, err := crew.Map(ctx, p, []int{1}, func(context.Context, int) (int, error) { return 1, nil }); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Map = %v", err)
	}
	if err := crew.ForEach(ctx, p, countTo(3), func(context.Context, int) error { return nil }); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("ForEach = %v", err)
	}
	for _, err := range crew.MapSeq(ctx, p, countTo(3), func(_ context.Context, x int) (int, error) { return x, nil }) {
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("MapSeq on a stopped pool yielded %v", err)
		}
	}
	if err := crew.NewKeyed[int](p).Submit(1, func() {}); !errors.Is(err, crew.ErrStopped) {
		t.Errorf("Keyed.Submit = %v", err)
	}
	if sub := p.Sub(1); !sub.Stopped() {
		t.Error("a sub-pool made on a stopped pool accepts tasks")
	}
	p.Stop() // a second Stop is a no-op
	if err := p.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown of a stopped, drained pool = %v", err)
	}
	if got := p.StopNow(); len(got) != 0 {
		t.Errorf("StopNow of a drained pool returned %d tasks", len(got))
	}
}

// Wait from inside a task never returns (documented); the documented alternative, a group made
// from the task's context, completes even on a pool of one.
func TestNewUserNestedWaitUsesGroupFromTaskContext(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	res := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
		r, _ := crew.NewResults[int](ctx, p)
		for i := range 5 {
			r.Go(func(context.Context) (int, error) { return i, nil })
		}
		vals, err := r.Wait()
		sum := 0
		for _, v := range vals {
			sum += v
		}
		return sum, err
	})
	select {
	case <-res.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("nested Results on New(1) did not complete")
	}
	if v, err := res.Wait(); v != 10 || err != nil {
		t.Fatalf("nested sum = %d, %v; want 10", v, err)
	}
}

// SubmitN: a task heavier than the limit is refused with ErrTooHeavy; one that fits runs.
func TestNewUserSubmitNWeights(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	if err := p.SubmitN(5, func() {}); !errors.Is(err, crew.ErrTooHeavy) {
		t.Fatalf("SubmitN(5) on New(4) = %v, want ErrTooHeavy", err)
	}
	var ran atomic.Bool
	must(t, p.SubmitN(4, func() { ran.Store(true) }))
	p.Wait()
	if !ran.Load() {
		t.Fatal("SubmitN(4) on New(4) did not run")
	}
}

// Hooks: Queued, Started and Finished each see every task once.
func TestNewUserHooksSeeEveryTask(t *testing.T) {
	var q, s, f atomic.Int32
	p := crew.New(2, crew.WithHooks(crew.Hooks{
		Queued:   func(crew.TaskInfo) { q.Add(1) },
		Started:  func(crew.TaskInfo) { s.Add(1) },
		Finished: func(crew.TaskInfo) { f.Add(1) },
	}))
	defer p.StopAndWait()
	for range 10 {
		p.Submit(func() {})
	}
	crew.Go(p, func() (int, error) { return 0, nil }).Wait()
	p.Wait()
	if q.Load() != 11 || s.Load() != 11 || f.Load() != 11 {
		t.Fatalf("hooks Queued %d, Started %d, Finished %d; want 11 each", q.Load(), s.Load(), f.Load())
	}
}

// A sub-pool reports its parent's idle timeout and no minimum workers (Pool.IdleTimeout,
// Pool.MinWorkers), whatever options it was given: Pool.Sub says WithMinWorkers and
// WithIdleTimeout have no effect on it.
func TestNewUserSubPoolReportsParentsIdleTimeout(t *testing.T) {
	p := crew.New(4, crew.WithIdleTimeout(time.Minute))
	defer p.StopAndWait()
	if got := p.Sub(2).IdleTimeout(); got != time.Minute {
		t.Errorf("Sub(2).IdleTimeout() = %v, want the parent's 1m", got)
	}
	s := p.Sub(2, crew.WithIdleTimeout(time.Hour), crew.WithMinWorkers(1))
	if got := s.MinWorkers(); got != 0 {
		t.Errorf("sub-pool MinWorkers() = %d, want 0", got)
	}
	if got := s.IdleTimeout(); got != time.Minute {
		t.Errorf("Sub(2, WithIdleTimeout(1h)).IdleTimeout() = %v, want the parent's 1m", got)
	}
}

// Pool.Wait does not return while tasks are queued on a paused pool; Resume lets it return.
func TestNewUserWaitOnPausedPoolWaitsForResume(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	p.Pause()
	var ran atomic.Int32
	p.Submit(func() { ran.Add(1) })
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("Wait returned with a task queued on a paused pool")
	case <-time.After(20 * time.Millisecond):
	}
	p.Resume()
	nuWait(t, "Wait after Resume", done)
	if ran.Load() != 1 {
		t.Fatal("the queued task did not run")
	}
}

// CallerRuns: a submit into a full queue runs the task on the submitter before it returns, and
// counts it in CallerRan; WithMaxWait makes a blocking submit give up with ErrQueueFull.
func TestNewUserOverflowCallerRunsAndMaxWait(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	hold := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-hold })
	nuWait(t, "worker busy", started)
	must(t, p.Submit(func() {}))
	ranHere := false
	must(t, p.Submit(func() { ranHere = true })) // no race: runs on this goroutine
	if !ranHere {
		t.Fatal("CallerRuns submit returned before its task ran on the caller")
	}
	close(hold)
	p.StopAndWait()
	if s := p.Stats(); s.CallerRan != 1 || s.Accepted != 3 || s.Completed != 3 {
		t.Fatalf("stats %+v, want CallerRan 1, Accepted 3, Completed 3", s)
	}

	q := crew.New(1, crew.WithQueueSize(1), crew.WithMaxWait(20*time.Millisecond))
	hold2 := make(chan struct{})
	started2 := make(chan struct{})
	q.Submit(func() { close(started2); <-hold2 })
	nuWait(t, "worker busy", started2)
	must(t, q.Submit(func() {}))
	if err := q.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Submit past WithMaxWait = %v, want ErrQueueFull", err)
	}
	close(hold2)
	q.StopAndWait()
	if s := q.Stats(); s.Rejected != 1 {
		t.Fatalf("Rejected = %d, want 1", s.Rejected)
	}
}

// WithLatencyHistograms: every task that ran is counted once in WaitTime and RunTime.
func TestNewUserLatencyHistogramsCountEveryTask(t *testing.T) {
	p := crew.New(2, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	for range 25 {
		p.Submit(func() {})
	}
	p.Wait()
	s := p.Stats()
	if s.WaitTime == nil || s.RunTime == nil {
		t.Fatal("histograms are nil under WithLatencyHistograms")
	}
	if s.WaitTime.Count != 25 || s.RunTime.Count != 25 {
		t.Fatalf("WaitTime.Count %d, RunTime.Count %d; want 25 each", s.WaitTime.Count, s.RunTime.Count)
	}
	if len(s.RunTime.Buckets) != len(s.RunTime.Counts)+1 {
		t.Fatalf("len(Buckets) %d, len(Counts) %d", len(s.RunTime.Buckets), len(s.RunTime.Counts))
	}
}

// README: "an idle pool has no goroutine beyond its minimum workers": with WithIdleTimeout(0)
// and WithMinWorkers(1), an idle pool keeps exactly one worker.
func TestNewUserIdlePoolKeepsOnlyMinWorkers(t *testing.T) {
	p := crew.New(4, crew.WithIdleTimeout(0), crew.WithMinWorkers(1))
	defer p.StopAndWait()
	hold := make(chan struct{})
	started := make(chan struct{}, 4)
	for range 4 {
		p.Submit(func() { started <- struct{}{}; <-hold })
	}
	for range 4 {
		<-started
	}
	close(hold)
	p.Wait()
	awaitStats(t, p, "one idle worker", func(s crew.Stats) bool { return s.Idle == 1 && s.Running == 0 })
}

// Pool.Wait on a parent waits for the tasks of its sub-pools too (they run as the parent's
// tasks), and SubmitContext gives up on a full queue when its context ends, counted in Canceled.
func TestNewUserParentWaitCoversSubPoolAndSubmitContextGivesUp(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1))
	defer p.StopAndWait()
	sub := p.Sub(1)
	var subRan atomic.Bool
	hold := make(chan struct{})
	started := make(chan struct{})
	must(t, sub.Submit(func() { close(started); <-hold; subRan.Store(true) }))
	nuWait(t, "sub-pool task to start", started)
	must(t, p.Submit(func() {})) // fills the parent's queue of one
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.SubmitContext(ctx, func() {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SubmitContext on a full queue = %v, want DeadlineExceeded", err)
	}
	if s := p.Stats(); s.Canceled != 1 {
		t.Fatalf("Canceled = %d, want 1", s.Canceled)
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("parent's Wait returned while its sub-pool's task ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(hold)
	nuWait(t, "parent's Wait", done)
	if !subRan.Load() {
		t.Fatal("parent's Wait returned before the sub-pool's task finished")
	}
}

// README: "crew.NewFunc(8, handle).Invoke(req) queues the argument unboxed and allocates
// nothing".
func TestNewUserInvokeAllocatesNothing(t *testing.T) {
	skipMemoryUnderRace(t)
	var sum atomic.Int64
	fp := crew.NewFunc(2, func(v int) { sum.Add(int64(v)) })
	defer fp.StopAndWait()
	for i := range 1000 { // warm the queue
		fp.Invoke(i)
	}
	fp.Wait()
	allocs := testing.AllocsPerRun(1000, func() { fp.Invoke(1) })
	fp.Wait()
	if allocs != 0 {
		t.Fatalf("Invoke allocates %v per call, want 0", allocs)
	}
}

// WithMaxBlocked(1): one submitter may wait for room in a full queue; the next is rejected at
// once with ErrQueueFull; Stop releases the waiting one with ErrStopped.
func TestNewUserMaxBlockedRejectsTheSecondWaiter(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxBlocked(1))
	hold := make(chan struct{})
	started := make(chan struct{})
	p.Submit(func() { close(started); <-hold })
	nuWait(t, "worker busy", started)
	must(t, p.Submit(func() {}))
	errc := make(chan error, 2)
	for range 2 {
		go func() { errc <- p.Submit(func() {}) }()
	}
	select {
	case err := <-errc:
		if !errors.Is(err, crew.ErrQueueFull) {
			t.Fatalf("first submit to return = %v, want ErrQueueFull", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("neither submitter returned: WithMaxBlocked(1) let two wait")
	}
	p.Stop()
	select {
	case err := <-errc:
		if !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("waiting submit after Stop = %v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting submitter did not return after Stop")
	}
	close(hold)
	p.StopAndWait()
}

// New(CPUs) reports GOMAXPROCS as its limit.
func TestNewUserCPUsLimitIsGOMAXPROCS(t *testing.T) {
	p := crew.New(crew.CPUs)
	defer p.StopAndWait()
	if got, want := p.Stats().MaxWorkers, runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("New(CPUs) MaxWorkers = %d, want GOMAXPROCS %d", got, want)
	}
}
