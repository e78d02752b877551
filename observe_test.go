package crew_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// manualClock is a clock for WithClock that moves only when a test advances it.
type manualClock struct{ ns atomic.Int64 }

var clockBase = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *manualClock) now() time.Time          { return clockBase.Add(time.Duration(c.ns.Load())) }
func (c *manualClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// hookLog records the hook calls of a pool in the order they happen.
type hookLog struct {
	mu     sync.Mutex
	events []string
	infos  []crew.TaskInfo
}

func (l *hookLog) add(event string, ti crew.TaskInfo) {
	l.mu.Lock()
	l.events = append(l.events, event)
	l.infos = append(l.infos, ti)
	l.mu.Unlock()
}

func (l *hookLog) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:   func(ti crew.TaskInfo) { l.add("queued", ti) },
		Started:  func(ti crew.TaskInfo) { l.add("started", ti) },
		Finished: func(ti crew.TaskInfo) { l.add("finished", ti) },
		Rejected: func(err error) { l.add("rejected: "+err.Error(), crew.TaskInfo{}) },
	}
}

// of returns the infos of one kind of event, in order.
func (l *hookLog) of(event string) []crew.TaskInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []crew.TaskInfo
	for i, e := range l.events {
		if e == event {
			out = append(out, l.infos[i])
		}
	}
	return out
}

func TestHooksSeeEachTaskQueuedThenStartedThenFinishedWithItsTimes(t *testing.T) {
	t.Parallel()
	var clock manualClock
	var l hookLog
	p := crew.New(1, crew.WithClock(clock.now), crew.WithHooks(l.hooks()))
	gate := make(chan struct{})
	if err := p.Submit(func() {
		<-gate
		clock.advance(3 * time.Second)
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(func() { clock.advance(time.Second) }); err != nil {
		t.Fatal(err)
	}
	close(gate)
	p.Wait()
	p.StopAndWait()

	// One worker runs the tasks in order, so the i-th Started and Finished are the i-th task's.
	l.mu.Lock()
	events := append([]string(nil), l.events...)
	l.mu.Unlock()
	seen := map[string]int{}
	for _, e := range events {
		seen[e]++
		// Every task's Queued comes before its Started, and Started before its Finished.
		if seen["started"] > seen["queued"] || seen["finished"] > seen["started"] {
			t.Fatalf("hook order %v", events)
		}
	}
	if seen["queued"] != 2 || seen["started"] != 2 || seen["finished"] != 2 || len(events) != 6 {
		t.Fatalf("hook calls %v, want 2 each of queued, started, finished", events)
	}
	started, finished := l.of("started"), l.of("finished")
	want := []crew.TaskInfo{{Wait: 0, Run: 3 * time.Second}, {Wait: 3 * time.Second, Run: time.Second}}
	for i, w := range want {
		if started[i] != (crew.TaskInfo{Wait: w.Wait}) {
			t.Errorf("task %d: Started got %+v, want Wait %v", i, started[i], w.Wait)
		}
		if finished[i] != w {
			t.Errorf("task %d: Finished got %+v, want %+v", i, finished[i], w)
		}
	}
}

func TestFinishedHookReportsAPanickedTaskBeforeThePanicHandler(t *testing.T) {
	t.Parallel()
	var l hookLog
	h := l.hooks()
	p := crew.New(1, crew.WithHooks(h), crew.WithPanicHandler(func(any, []byte) { l.add("handler", crew.TaskInfo{}) }))
	if err := p.Submit(func() { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	p.StopAndWait()
	f := l.of("finished")
	if len(f) != 1 || !f[0].Panicked {
		t.Fatalf("Finished calls %+v, want one with Panicked", f)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if got := strings.Join(l.events, ","); got != "queued,started,finished,handler" {
		t.Fatalf("events %s", got)
	}
}

func TestRejectedHookGetsTheErrorOfEveryRefusedSubmit(t *testing.T) {
	t.Parallel()
	var l hookLog
	p := crew.New(1, crew.WithQueueSize(1), crew.WithHooks(l.hooks()))
	release := make(chan struct{})
	if err := p.Submit(func() { <-release }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first task to run", func() bool { return p.Stats().Running == 1 })
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	if p.TrySubmit(func() { t.Error("refused task ran") }) {
		t.Fatal("TrySubmit on a full queue accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(ctx, func() { t.Error("refused task ran") }); err == nil {
		t.Fatal("SubmitContext with an ended context accepted")
	}
	close(release)
	p.StopAndWait()
	if err := p.Submit(func() { t.Error("refused task ran") }); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Submit after Stop = %v", err)
	}
	var rejected []string
	for _, e := range l.events {
		if strings.HasPrefix(e, "rejected: ") {
			rejected = append(rejected, strings.TrimPrefix(e, "rejected: "))
		}
	}
	want := []string{crew.ErrQueueFull.Error(), "crew: submit canceled: context canceled", crew.ErrStopped.Error()}
	if fmt.Sprint(rejected) != fmt.Sprint(want) {
		t.Fatalf("Rejected got %q, want %q", rejected, want)
	}
}

func TestHooksCallingBackIntoThePoolDoNotDeadlock(t *testing.T) {
	t.Parallel()
	var p *crew.Pool
	var extra atomic.Int32
	var ran atomic.Int32
	back := func(crew.TaskInfo) {
		_ = p.Stats()
		if extra.Add(1) <= 20 {
			p.TrySubmit(func() { ran.Add(1) })
			p.Resize(p.Stats().MaxWorkers + 1)
		}
	}
	ready := make(chan struct{})
	p = crew.New(2, crew.WithHooks(crew.Hooks{
		Queued: func(ti crew.TaskInfo) {
			<-ready
			back(ti)
		},
		Started:  back,
		Finished: back,
		Rejected: func(error) { _ = p.Stats() },
	}))
	close(ready)
	const n = 50
	for range n {
		if err := p.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		p.StopAndWait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("pool wedged by hooks calling back into it")
	}
	s := p.Stats()
	if int(ran.Load()) != int(s.Accepted) || s.Accepted < n {
		t.Fatalf("%d tasks ran, %d accepted", ran.Load(), s.Accepted)
	}
}

func TestPanickingHookGoesToThePanicHandlerAndItsTaskRunsOnce(t *testing.T) {
	t.Parallel()
	var panics atomic.Int32
	boom := func(crew.TaskInfo) { panic("hook") }
	p := crew.New(2,
		crew.WithHooks(crew.Hooks{Queued: boom, Started: boom, Finished: boom, Rejected: func(error) { panic(nil) }}),
		crew.WithPanicHandler(func(v any, _ []byte) { panics.Add(1) }))
	const n = 100
	var ran [n]atomic.Int32
	for i := range n {
		if err := p.Submit(func() { ran[i].Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	p.StopAndWait()
	_ = p.Submit(func() {}) // Queued panics, then Rejected with nil
	for i := range ran {
		if got := ran[i].Load(); got != 1 {
			t.Fatalf("task %d ran %d times", i, got)
		}
	}
	if got := panics.Load(); got != 3*n+2 {
		t.Fatalf("panic handler got %d panics, want %d", got, 3*n+2)
	}
	if s := p.Stats(); s.Completed != n || s.Panicked != 0 {
		t.Fatalf("Stats %+v, want %d completed and none panicked", s, n)
	}
}

func TestGoexitInHookDoesNotWedgeThePool(t *testing.T) {
	t.Parallel()
	var starts, finishes atomic.Int32
	p := crew.New(2, crew.WithMinWorkers(1), crew.WithHooks(crew.Hooks{
		Started: func(crew.TaskInfo) {
			if starts.Add(1) == 3 {
				runtime.Goexit()
			}
		},
		Finished: func(crew.TaskInfo) {
			if finishes.Add(1) == 5 {
				runtime.Goexit()
			}
		},
	}))
	var ran atomic.Int32
	const n = 50
	for range n {
		if err := p.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	// The task whose Started hook called Goexit never ran; every other did.
	if got := ran.Load(); got != n-1 {
		t.Fatalf("%d of %d tasks ran, want all but one", got, n)
	}
	if s := p.Stats(); s.Completed != n || s.Running != 0 {
		t.Fatalf("Stats %+v, want %d completed and none running", s, n)
	}
	if err := p.Submit(func() { ran.Add(1) }); err != nil {
		t.Fatal(err)
	}
	p.StopAndWait()
	if got := ran.Load(); got != n {
		t.Fatalf("task after the Goexits: %d ran, want %d", got, n)
	}
}

// TestGoexitInStartedHookEndsAFutureAndAGroupCall: a Started hook that calls runtime.Goexit
// keeps the task from running (see Hooks), and a future's or a group's task that never ran
// still ends: Wait returns an error naming Goexit instead of waiting forever.
func TestGoexitInStartedHookEndsAFutureAndAGroupCall(t *testing.T) {
	t.Parallel()
	var exit atomic.Bool
	p := crew.New(1, crew.WithHooks(crew.Hooks{
		Started: func(crew.TaskInfo) {
			if exit.CompareAndSwap(true, false) {
				runtime.Goexit()
			}
		},
	}))
	defer p.StopAndWait()
	var ran atomic.Int32
	exit.Store(true)
	_, err := crew.Go(p, func() (int, error) { ran.Add(1); return 1, nil }).Wait()
	if err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("future: Wait = %v, want an error naming Goexit", err)
	}
	exit.Store(true)
	g, _ := p.Group(context.Background())
	g.Go(func(context.Context) error { ran.Add(1); return nil })
	if err := g.Wait(); err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("group: Wait = %v, want an error naming Goexit", err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d functions ran after their Started hook called Goexit, want 0", n)
	}
}

// checkHistogram fails t unless h has the documented shape and counts want durations.
func checkHistogram(t *testing.T, name string, h crew.Histogram, want uint64) {
	t.Helper()
	if len(h.Buckets) != len(h.Counts)+1 {
		t.Fatalf("%s: %d buckets, %d counts", name, len(h.Buckets), len(h.Counts))
	}
	if h.Buckets[0] != 0 || !math.IsInf(h.Buckets[len(h.Buckets)-1], 1) {
		t.Fatalf("%s: boundaries run from %v to %v, want 0 to +Inf", name, h.Buckets[0], h.Buckets[len(h.Buckets)-1])
	}
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	if n != h.Count || h.Count != want {
		t.Fatalf("%s: Count %d, sum of Counts %d, want %d", name, h.Count, n, want)
	}
}

func TestLatencyHistogramsCountEveryTaskStartedAndFinished(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithLatencyHistograms(), crew.WithPanicHandler(func(any, []byte) {}))
	const n = 300
	for i := range n {
		if err := p.Submit(func() {
			switch i % 10 {
			case 0:
				panic("boom")
			case 1:
				runtime.Goexit()
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	s := p.Stats()
	checkHistogram(t, "WaitTime", *s.WaitTime, s.Accepted)
	checkHistogram(t, "RunTime", *s.RunTime, s.Completed+s.Panicked)
	if s.Accepted != n || s.Panicked != n/10 {
		t.Fatalf("Stats %+v", s)
	}
	p.StopAndWait()

	plain := crew.New(1)
	defer plain.StopAndWait()
	if s := plain.Stats(); s.WaitTime != nil || s.RunTime != nil {
		t.Fatalf("a pool without WithLatencyHistograms has histograms %+v", s.RunTime)
	}
}

func TestLatencyHistogramsPutDurationsInTheirBuckets(t *testing.T) {
	t.Parallel()
	var clock manualClock
	p := crew.NewFunc(1, func(d time.Duration) { clock.advance(d) },
		crew.WithClock(clock.now), crew.WithLatencyHistograms())
	runs := []time.Duration{0, 500 * time.Nanosecond, 2 * time.Millisecond, 3 * time.Second, 2 * time.Hour}
	var sum time.Duration
	for _, d := range runs {
		if err := p.Invoke(d); err != nil {
			t.Fatal(err)
		}
		p.Wait()
		sum += d
	}
	p.StopAndWait()
	h := p.Stats().RunTime
	checkHistogram(t, "RunTime", *h, uint64(len(runs)))
	if math.Abs(h.Sum-sum.Seconds()) > 1e-9 {
		t.Errorf("Sum %v s, want %v", h.Sum, sum.Seconds())
	}
	for _, d := range runs {
		s := d.Seconds()
		found := false
		for i, c := range h.Counts {
			if c > 0 && (s > h.Buckets[i] || i == 0) && s <= h.Buckets[i+1] {
				found = true
			}
		}
		if !found {
			t.Errorf("no counted bucket holds %v", d)
		}
	}
	if h.Counts[0] != 2 || h.Counts[len(h.Counts)-1] != 1 {
		t.Errorf("first bucket %d, last %d; want 2 (up to a microsecond) and 1 (above an hour)", h.Counts[0], h.Counts[len(h.Counts)-1])
	}
}

func TestStressStatsWhileRecordingNeverGoesBackwards(t *testing.T) {
	t.Parallel()
	p := crew.New(8, crew.WithLatencyHistograms())
	n := 20000
	if testing.Short() {
		n = 2000
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var prev crew.Stats
		for {
			s := p.Stats()
			if prev.RunTime != nil {
				for i := range s.RunTime.Counts {
					if s.RunTime.Counts[i] < prev.RunTime.Counts[i] || s.WaitTime.Counts[i] < prev.WaitTime.Counts[i] {
						t.Errorf("bucket %d went backwards", i)
						return
					}
				}
			}
			if s.RunTime.Count > s.WaitTime.Count {
				t.Errorf("RunTime counts %d tasks, WaitTime %d", s.RunTime.Count, s.WaitTime.Count)
				return
			}
			prev = s
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	const submitters = 64
	wg.Add(submitters)
	for range submitters {
		go func() {
			defer wg.Done()
			for range n / submitters {
				_ = p.Submit(func() {})
			}
		}()
	}
	wg.Wait()
	p.Wait()
	close(stop)
	<-done
	s := p.Stats()
	checkHistogram(t, "WaitTime", *s.WaitTime, s.Accepted)
	checkHistogram(t, "RunTime", *s.RunTime, s.Accepted)
	p.StopAndWait()
}

func TestSubPoolTasksAreObservedByTheSubPoolOnly(t *testing.T) {
	t.Parallel()
	var parentStarts atomic.Int32
	p := crew.New(2, crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { parentStarts.Add(1) }}))
	sub := p.Sub(2, crew.WithLatencyHistograms())
	const n = 40
	for range n {
		if err := sub.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	sub.Wait()
	p.StopAndWait()
	s := sub.Stats()
	checkHistogram(t, "sub-pool WaitTime", *s.WaitTime, n)
	checkHistogram(t, "sub-pool RunTime", *s.RunTime, n)
	if got := parentStarts.Load(); got != 1 {
		t.Fatalf("parent's Started hook called %d times, want once for its own task", got)
	}
}

func TestInvokeWithLatencyHistogramsAllocatesNothing(t *testing.T) {
	var ran atomic.Int64
	p := crew.NewFunc(2, func(int) { ran.Add(1) }, crew.WithLatencyHistograms())
	defer p.StopAndWait()
	for range 1000 {
		_ = p.Invoke(1)
	}
	p.Wait()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := p.Invoke(1); err != nil {
			t.Fatal(err)
		}
	})
	p.Wait()
	if allocs != 0 {
		t.Fatalf("Invoke with histograms allocates %v times per call", allocs)
	}
}

func TestDefaultPanicHandlerLogsOneFrameALine(t *testing.T) {
	// Not parallel: it redirects the log package's output, which slog's default logger uses.
	if h := fmt.Sprintf("%T", slog.Default().Handler()); h != "*slog.defaultHandler" {
		t.Fatalf("slog's default logger was replaced (%s)", h)
	}
	var buf bytes.Buffer
	var mu sync.Mutex
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(lockedWriter{&mu, &buf})
	defer func() {
		log.SetOutput(out)
		log.SetFlags(flags)
	}()
	p := crew.New(1)
	if err := p.Submit(panicsWithBoom); err != nil {
		t.Fatal(err)
	}
	p.StopAndWait()
	mu.Lock()
	text := buf.String()
	mu.Unlock()
	lines := strings.Split(text, "\n")
	if !strings.Contains(lines[0], "crew: task panicked: boom") {
		t.Fatalf("first line %q lacks the message", lines[0])
	}
	var goroutine, frame bool
	for _, l := range lines[1:] {
		goroutine = goroutine || strings.HasPrefix(l, "goroutine ")
		frame = frame || strings.HasPrefix(l, "github.com/crewgo/crew_test.panicsWithBoom(")
	}
	if !goroutine || !frame || strings.Contains(text, `\n`) {
		t.Fatalf("stack not logged one frame a line:\n%s", text)
	}
}

// TestQueuedTasksWaitTheirOwnTime: each task's wait runs from its own submit to its own start,
// also for tasks queued behind others and taken one after another by a busy worker, the path
// most tasks of a loaded pool take.
func TestQueuedTasksWaitTheirOwnTime(t *testing.T) {
	t.Parallel()
	var clock manualClock
	var mu sync.Mutex
	var waits []time.Duration
	p := crew.NewFunc(1, func(f func()) { f() }, crew.WithClock(clock.now), crew.WithLatencyHistograms(), crew.WithHooks(crew.Hooks{
		Started: func(ti crew.TaskInfo) {
			mu.Lock()
			waits = append(waits, ti.Wait)
			mu.Unlock()
		},
	}))
	defer p.StopAndWait()
	started, release := make(chan struct{}), make(chan struct{})
	if err := p.Invoke(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	for range 4 {
		clock.advance(time.Millisecond)
		if err := p.Invoke(func() {}); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(6 * time.Millisecond) // 10 ms after the first submit
	close(release)
	p.Wait()
	want := []time.Duration{0, 9 * time.Millisecond, 8 * time.Millisecond, 7 * time.Millisecond, 6 * time.Millisecond}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
}

// hookKey is the context key of the value a Context hook adds.
type hookKey struct{}

// TestContextHookWrapsEachFunctionGivenWithAContext: Hooks.Context sees every function given
// with a context, on every door, each function receives the context it returns, and end gets
// each function's error, or a non-nil one for a panic or a Goexit; plain tasks are not seen.
func TestContextHookWrapsEachFunctionGivenWithAContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var entered int
	var ended []error
	p := crew.New(2, crew.WithHooks(crew.Hooks{
		Context: func(ctx context.Context) (context.Context, func(error)) {
			mu.Lock()
			entered++
			mu.Unlock()
			return context.WithValue(ctx, hookKey{}, "wrapped"), func(err error) {
				mu.Lock()
				ended = append(ended, err)
				mu.Unlock()
			}
		},
	}))
	defer p.StopAndWait()
	errPlanned := errors.New("planned")
	check := func(ctx context.Context) error {
		if ctx.Value(hookKey{}) != "wrapped" {
			t.Error("a function did not receive the context the hook returned")
		}
		return nil
	}
	ctx := context.Background()
	g, _ := p.Group(ctx)
	g.Go(check)
	g.Go(func(ctx context.Context) error { _ = check(ctx); return errPlanned })
	if err := g.Wait(); !errors.Is(err, errPlanned) {
		t.Fatalf("Group.Wait = %v", err)
	}
	ga, _ := p.GroupAll(ctx)
	ga.Go(func(ctx context.Context) error { _ = check(ctx); panic("planned panic") })
	ga.Go(func(ctx context.Context) error { _ = check(ctx); runtime.Goexit(); return nil })
	if err := ga.Wait(); err == nil {
		t.Fatal("GroupAll.Wait = nil, want the panic and the Goexit")
	}
	r, _ := crew.NewResults[int](ctx, p)
	r.Go(func(ctx context.Context) (int, error) { return 1, check(ctx) })
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	in := []int{1, 2}
	if _, err := crew.Map(ctx, p, in, func(ctx context.Context, _ int) (int, error) { return 0, check(ctx) }); err != nil {
		t.Fatal(err)
	}
	if err := crew.ForEach(ctx, p, slices.Values(in), func(ctx context.Context, _ int) error { return check(ctx) }); err != nil {
		t.Fatal(err)
	}
	for _, err := range crew.MapSeq(ctx, p, slices.Values(in), func(ctx context.Context, _ int) (int, error) { return 0, check(ctx) }) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(func() {}); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	mu.Lock()
	defer mu.Unlock()
	const functions = 11 // 2 + 2 + 1 + 2 + 2 + 2
	if entered != functions || len(ended) != functions {
		t.Fatalf("Context called %d times, end %d times; want %d each", entered, len(ended), functions)
	}
	var planned, failed int
	for _, err := range ended {
		switch {
		case errors.Is(err, errPlanned):
			planned++
		case err != nil:
			failed++
		}
	}
	if planned != 1 || failed != 2 {
		t.Fatalf("end got %v: want one planned error, two for a panic and a Goexit, and nil for the rest", ended)
	}
}

// TestPanickingContextHookGoesToThePanicHandler: a Context hook that panics, or whose end
// does, has its panic sent to the panic handler, and the function runs once, with the context
// it was to receive.
func TestPanickingContextHookGoesToThePanicHandler(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"Context", "end"} {
		t.Run(where, func(t *testing.T) {
			panics := make(chan any, 2)
			p := crew.New(1, crew.WithPanicHandler(func(v any, _ []byte) { panics <- v }),
				crew.WithHooks(crew.Hooks{
					Context: func(ctx context.Context) (context.Context, func(error)) {
						if where == "Context" {
							panic("hook panic")
						}
						return ctx, func(error) { panic("end panic") }
					},
				}))
			defer p.StopAndWait()
			ctx := context.WithValue(context.Background(), hookKey{}, "mine")
			g, _ := p.Group(ctx)
			var ran atomic.Int32
			g.Go(func(ctx context.Context) error {
				ran.Add(1)
				if ctx.Value(hookKey{}) != "mine" {
					t.Error("the function did not receive its own context")
				}
				return nil
			})
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if ran.Load() != 1 {
				t.Fatalf("the function ran %d times", ran.Load())
			}
			want := map[string]string{"Context": "hook panic", "end": "end panic"}[where]
			if v := <-panics; v != want {
				t.Fatalf("panic handler got %v, want %q", v, want)
			}
		})
	}
}

// TestQueuedTasksWaitTheirOwnTimeAcrossLevels: a pool whose queue serves a prioritised
// sub-pool first still gives each of its own tasks the wait since its own submit. A higher
// level's worker, queued later, starts first; its submit time must not pass to the pool's task
// queued before it, nor the other way round. The same for tasks RemoveIf (via the sub-pool's
// StopNow) leaves queued.
func TestQueuedTasksWaitTheirOwnTimeAcrossLevels(t *testing.T) {
	t.Parallel()
	var clock manualClock
	var mu sync.Mutex
	var waits []time.Duration
	p := crew.New(1, crew.WithClock(clock.now), crew.WithHooks(crew.Hooks{
		Started: func(ti crew.TaskInfo) {
			mu.Lock()
			waits = append(waits, ti.Wait)
			mu.Unlock()
		},
	}))
	defer p.StopAndWait()
	high := p.Sub(1, crew.WithPriority(1))
	started, release := make(chan struct{}), make(chan struct{})
	if err := p.Submit(func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	var order []string
	note := func(s string) func() {
		return func() {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
		}
	}
	if err := p.Submit(note("own")); err != nil { // queued at 0
		t.Fatal(err)
	}
	clock.advance(4 * time.Millisecond)
	if err := high.Submit(note("high")); err != nil { // its worker queued at 4 ms, level 1
		t.Fatal(err)
	}
	clock.advance(6 * time.Millisecond) // 10 ms after the pool's task was queued
	close(release)
	p.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []string{"high", "own"}) {
		t.Fatalf("tasks ran in the order %v, want the higher level first", order)
	}
	// The blocked task's wait (0), then the pool's own task's: 10 ms. The sub-pool's worker is
	// not the pool's task, and the sub-pool times its own.
	if want := []time.Duration{0, 10 * time.Millisecond}; !slices.Equal(waits, want) {
		t.Fatalf("the pool's tasks waited %v, want %v", waits, want)
	}
}
