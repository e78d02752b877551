//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// Adversarial tests on a testing/synctest bubble's fake clock: the timing promises of the
// rate limit, the task timeout, the idle timeout, Shutdown's and PauseAndWait's deadlines and
// futures' deadlines, two or three at once, asserted to the nanosecond where the docs make
// the time computable. synctest.Test fails if any goroutine of a pool outlives the bubble.

// bubClock records named moments as durations since the start of a bubble's test.
type bubClock struct {
	t0 time.Time
	mu sync.Mutex
	at map[string]time.Duration
}

func newBubClock() *bubClock { return &bubClock{t0: time.Now(), at: map[string]time.Duration{}} }

// now is the fake time since t0.
func (c *bubClock) now() time.Duration { return time.Since(c.t0) }

// mark records name at the present moment; a name marked twice is an error.
func (c *bubClock) mark(t *testing.T, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.at[name]; ok {
		t.Errorf("%s happened twice", name)
	}
	c.at[name] = time.Since(c.t0)
}

// expect fails t unless name was marked exactly at want.
func (c *bubClock) expect(t *testing.T, name string, want time.Duration) {
	t.Helper()
	c.mu.Lock()
	got, ok := c.at[name]
	c.mu.Unlock()
	if !ok {
		t.Errorf("%s never happened, want it at %v", name, want)
	} else if got != want {
		t.Errorf("%s at %v, want exactly %v", name, got, want)
	}
}

// sleepUntil sleeps until the fake clock reads t0+d, and then until the bubble is quiet.
func (c *bubClock) sleepUntil(d time.Duration) {
	time.Sleep(d - time.Since(c.t0))
	synctest.Wait()
}

// bubIdle fails t unless p's Stats show idle live workers and waiting tasks, at the moment
// what describes.
func bubIdle(t *testing.T, p *crew.Pool, what string, idle, waiting int) {
	t.Helper()
	if s := p.Stats(); s.Idle != idle || s.Waiting != waiting {
		t.Errorf("%s: Idle %d, Waiting %d; want %d and %d (%+v)", what, s.Idle, s.Waiting, idle, waiting, s)
	}
}

// TestAdvBubbleRateLimitAndIdleTimeoutOnOneWorker: New(1) with WithRateLimit(4, 2) and a
// 100 ms idle timeout, given six instant tasks at once. The bucket starts full, so two start
// at 0 and then one every 250 ms, each exactly when its token comes (WithRateLimit: a held
// task waits in the queue and starts when its token comes). Between two tokens the worker is
// idle, and it is gone exactly 100 ms after it parked (WithIdleTimeout), not a nanosecond
// before; the next token starts a new one. Nothing runs a worker while it waits for a token:
// Waiting counts the held tasks and Idle the parked worker.
func TestAdvBubbleRateLimitAndIdleTimeoutOnOneWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(1, crew.WithRateLimit(4, 2), crew.WithIdleTimeout(100*time.Millisecond))
		for i := range 6 {
			must(t, p.Submit(func() { c.mark(t, fmt.Sprint("task ", i)) }))
		}
		synctest.Wait()
		bubIdle(t, p, "at 0", 1, 4)
		const tick = 250 * time.Millisecond
		for k := range 5 {
			at := time.Duration(k) * tick
			c.sleepUntil(at + 100*time.Millisecond - time.Nanosecond)
			bubIdle(t, p, fmt.Sprintf("1ns before the idle timeout after %v", at), 1, 4-k)
			c.sleepUntil(at + 100*time.Millisecond)
			bubIdle(t, p, fmt.Sprintf("at the idle timeout after %v", at), 0, 4-k)
			c.sleepUntil(at + tick - time.Nanosecond)
			bubIdle(t, p, fmt.Sprintf("1ns before the token at %v", at+tick), 0, 4-k)
		}
		p.StopAndWait()
		c.expect(t, "task 0", 0)
		c.expect(t, "task 1", 0)
		for i := 2; i < 6; i++ {
			c.expect(t, fmt.Sprint("task ", i), time.Duration(i-1)*tick)
		}
		if s := p.Stats(); s.Completed != 6 || s.Accepted != 6 || s.Running != 0 || s.Idle != 0 {
			t.Errorf("stats after StopAndWait: %+v", s)
		}
	})
}

// bubFn records, for a function given a context, its start, the deadline of its context,
// when the context ended and with what cause.
type bubFn struct {
	name             string
	start, end, dl   time.Duration
	hasDeadline, ran bool
	err, cause       error
}

// watch returns a function that records itself in f, then waits for its context to end (or
// returns at once if instant).
func (f *bubFn) watch(c *bubClock, instant bool) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		f.ran = true
		f.start = c.now()
		if dl, ok := ctx.Deadline(); ok {
			f.hasDeadline, f.dl = true, dl.Sub(c.t0)
		}
		if instant {
			return 0, nil
		}
		<-ctx.Done()
		f.end = c.now()
		f.err, f.cause = ctx.Err(), context.Cause(ctx)
		return 0, nil
	}
}

// check fails t unless f ran from start until its context ended at end, with a deadline at
// dl (0: none) and a cause matching every one of causes and none of notCauses.
func (f *bubFn) check(t *testing.T, start, end, dl time.Duration, causes []error, notCauses ...error) {
	t.Helper()
	if !f.ran {
		t.Errorf("%s never ran", f.name)
		return
	}
	if f.start != start || f.end != end {
		t.Errorf("%s ran from %v until its context ended at %v; want %v and %v", f.name, f.start, f.end, start, end)
	}
	if (dl != 0) != f.hasDeadline || f.dl != dl {
		t.Errorf("%s: deadline %v (set %v), want %v", f.name, f.dl, f.hasDeadline, dl)
	}
	for _, want := range causes {
		if !errors.Is(f.cause, want) {
			t.Errorf("%s: cause %v, want one matching %v", f.name, f.cause, want)
		}
	}
	for _, not := range notCauses {
		if errors.Is(f.cause, not) {
			t.Errorf("%s: cause %v matches %v, want it not to", f.name, f.cause, not)
		}
	}
}

// TestAdvBubbleTaskTimeoutUnderRateLimit: WithTaskTimeout(300ms) and WithRateLimit(2, 1) on
// New(2): four functions of a group (which return nil, so the group cancels nothing) start
// at 0, 500, 1000 and 1500 ms, one per token; each one's context has its deadline exactly
// 300 ms after that function's own start (not after its submit, not after the group was
// made) and ends exactly then, with a cause matching ErrTaskTimeout and
// context.DeadlineExceeded. A function given with a context whose own deadline comes first
// keeps that deadline, and its cause is not the task timeout.
func TestAdvBubbleTaskTimeoutUnderRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(2, crew.WithRateLimit(2, 1), crew.WithTaskTimeout(300*time.Millisecond))
		g, gctx := p.Group(context.Background())
		fns := make([]*bubFn, 4)
		for i := range fns {
			fns[i] = &bubFn{name: fmt.Sprint("function ", i)}
			w := fns[i].watch(c, false)
			g.Go(func(ctx context.Context) error { _, err := w(ctx); return err })
		}
		// A future whose own context ends 2.1 s in, before its task timeout would (it starts
		// at 2 s): its deadline stays its own.
		early, cancel := context.WithDeadline(context.Background(), c.t0.Add(2100*time.Millisecond))
		defer cancel()
		own := &bubFn{name: "future with an earlier deadline of its own"}
		f := crew.GoContext(early, p, own.watch(c, false))
		if err := returnsWithin(t, "Group.Wait", g.Wait); err != nil {
			t.Fatalf("Group.Wait: %v", err)
		}
		if _, err := f.Wait(); err != nil {
			t.Fatalf("future: %v", err)
		}
		// Wait cancels the group's context, with no cause of its own: no function failed.
		if cause := context.Cause(gctx); cause != context.Canceled {
			t.Errorf("group context's cause %v after Wait, want context.Canceled", cause)
		}
		for i, fn := range fns {
			start := time.Duration(i) * 500 * time.Millisecond
			fn.check(t, start, start+300*time.Millisecond, start+300*time.Millisecond,
				[]error{crew.ErrTaskTimeout, context.DeadlineExceeded})
		}
		own.check(t, 2*time.Second, 2100*time.Millisecond, 2100*time.Millisecond,
			[]error{context.DeadlineExceeded}, crew.ErrTaskTimeout)
		p.StopAndWait()
		if s := p.Stats(); s.Accepted != 5 || s.Completed != 5 || s.Skipped != 0 {
			t.Errorf("stats %+v, want 5 accepted and completed, none skipped", s)
		}
	})
}

// TestAdvBubbleShutdownDeadlineMeetsTaskTimeoutsOfSubPools: New(4, WithTaskTimeout(5s))
// with a sub-pool that has a task timeout of its own (1 s) and one that inherits the
// parent's, and a queue behind four running functions. Shutdown with a 3 s deadline returns
// context.DeadlineExceeded exactly at 3 s. Until then each function's context ends at its
// own deadline with its own cause: the sub-pool's 1 s task timeout, a caller's 2 s deadline;
// the functions queued behind them start exactly as those slots free. At 3 s the contexts of
// every function still running end with cause ErrStopped (the parent's and the inheriting
// sub-pool's 5 s timeouts never fire), the function still queued is skipped (its Wait
// returns ErrStopped, Stats.Skipped counts it, no Started hook sees it), and the plain task
// queued behind it still runs, at 3 s. Shutdown's pool has exited by 3 s and its Stats add
// up.
func TestAdvBubbleShutdownDeadlineMeetsTaskTimeoutsOfSubPools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		var started atomic.Int64
		p := crew.New(4, crew.WithTaskTimeout(5*time.Second),
			crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { started.Add(1) }}))
		short := p.Sub(2, crew.WithTaskTimeout(time.Second))
		inherit := p.Sub(2)
		bg := context.Background()
		callerCtx, cancel := context.WithDeadline(bg, c.t0.Add(2*time.Second))
		defer cancel()
		fn := func(name string) *bubFn { return &bubFn{name: name} }
		fA, fB, fC, fD := fn("A on the parent"), fn("B on the 1s sub-pool"), fn("C on the inheriting sub-pool"), fn("D with a 2s caller deadline")
		q1, q3, q4 := fn("queued 1"), fn("queued 3"), fn("queued 4")
		futures := []*crew.Future[int]{
			crew.GoContext(bg, p, fA.watch(c, false)),
			crew.GoContext(bg, short, fB.watch(c, false)),
			crew.GoContext(bg, inherit, fC.watch(c, false)),
			crew.GoContext(callerCtx, p, fD.watch(c, false)),
			crew.GoContext(bg, p, q1.watch(c, false)),
		}
		must(t, p.Submit(func() { c.mark(t, "queued 2, plain") }))
		futures = append(futures, crew.GoContext(bg, p, q3.watch(c, false)))
		skippedF := crew.GoContext(bg, p, q4.watch(c, false))
		must(t, p.Submit(func() { c.mark(t, "queued 5, plain") }))
		synctest.Wait()
		if s := p.Stats(); s.Running != 4 || s.Waiting != 5 {
			t.Fatalf("before Shutdown: %+v, want 4 running and 5 waiting", s)
		}
		var shutdownErr error
		shut := goRun(func() {
			ctx, cancel := context.WithTimeout(bg, 3*time.Second)
			defer cancel()
			shutdownErr = p.Shutdown(ctx)
			c.mark(t, "Shutdown returned")
		})
		c.sleepUntil(10 * time.Second)
		select {
		case <-shut:
		default:
			t.Fatal("Shutdown has not returned 10 s in, with a 3 s deadline")
		}
		if !errors.Is(shutdownErr, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want context.DeadlineExceeded", shutdownErr)
		}
		c.expect(t, "Shutdown returned", 3*time.Second)
		p.StopAndWait()
		for _, f := range futures {
			if _, err := f.Wait(); err != nil {
				t.Errorf("a future that ran: %v", err)
			}
		}
		if _, err := skippedF.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("the queued function's future: %v, want ErrStopped", err)
		}
		if q4.ran {
			t.Error("the function still queued at Shutdown's deadline ran")
		}
		s3 := 3 * time.Second
		fA.check(t, 0, s3, 5*time.Second, []error{crew.ErrStopped}, crew.ErrTaskTimeout)
		fB.check(t, 0, time.Second, time.Second, []error{crew.ErrTaskTimeout, context.DeadlineExceeded})
		fC.check(t, 0, s3, 5*time.Second, []error{crew.ErrStopped}, crew.ErrTaskTimeout)
		fD.check(t, 0, 2*time.Second, 2*time.Second, []error{context.DeadlineExceeded}, crew.ErrTaskTimeout)
		q1.check(t, time.Second, s3, 6*time.Second, []error{crew.ErrStopped}, crew.ErrTaskTimeout)
		c.expect(t, "queued 2, plain", 2*time.Second)
		q3.check(t, 2*time.Second, s3, 7*time.Second, []error{crew.ErrStopped}, crew.ErrTaskTimeout)
		c.expect(t, "queued 5, plain", s3)
		s := p.Stats()
		// The parent's own tasks: A, D, queued 1-5; the sub-pools' workers count once each.
		if s.Skipped != 1 || s.Accepted != s.Completed+s.Skipped || s.Running != 0 || s.Waiting != 0 {
			t.Errorf("parent stats %+v, want one skipped and the rest completed", s)
		}
		if started.Load() != 6 {
			t.Errorf("the parent's Started hook saw %d tasks, want 6 (A, D, queued 1, 2, 3 and 5)", started.Load())
		}
		for name, sub := range map[string]*crew.Pool{"1s": short, "inheriting": inherit} {
			if s := sub.Stats(); s.Accepted != 1 || s.Completed != 1 {
				t.Errorf("%s sub-pool stats %+v", name, s)
			}
		}
	})
}

// TestAdvBubblePauseAndWaitDeadlineAndTaskTimeout: New(4, WithTaskTimeout(3s)) running two
// functions of a group that wait for their contexts and a plain task of 1 s. PauseAndWait
// whose context ends at 2 s returns context.DeadlineExceeded exactly then and leaves the pool
// paused; a plain task and a future submitted meanwhile wait. A second PauseAndWait returns
// nil exactly at 3 s, when the task timeout ends the functions' contexts and they return.
// Resume at 4 s starts the plain task exactly then; the future, whose own context ended at
// 3.5 s while it waited, is skipped (context.DeadlineExceeded from Wait, Stats.Skipped, no
// Started hook).
func TestAdvBubblePauseAndWaitDeadlineAndTaskTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		var started atomic.Int64
		p := crew.New(4, crew.WithTaskTimeout(3*time.Second),
			crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { started.Add(1) }}))
		g, _ := p.Group(context.Background())
		fns := []*bubFn{{name: "group function 0"}, {name: "group function 1"}}
		for _, f := range fns {
			w := f.watch(c, false)
			g.Go(func(ctx context.Context) error { _, err := w(ctx); return err })
		}
		must(t, p.Submit(func() { time.Sleep(time.Second); c.mark(t, "1s task returned") }))
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err1 error
		first := goRun(func() { err1 = p.PauseAndWait(ctx); c.mark(t, "first PauseAndWait returned") })
		c.sleepUntil(500 * time.Millisecond)
		must(t, p.Submit(func() { c.mark(t, "task submitted while paused") }))
		fctx, fcancel := context.WithDeadline(context.Background(), c.t0.Add(3500*time.Millisecond))
		defer fcancel()
		late := &bubFn{name: "future submitted while paused"}
		f := crew.GoContext(fctx, p, late.watch(c, true))
		c.sleepUntil(2 * time.Second)
		awaitReturn(t, "first PauseAndWait", first)
		if !errors.Is(err1, context.DeadlineExceeded) {
			t.Errorf("first PauseAndWait: %v, want context.DeadlineExceeded", err1)
		}
		c.expect(t, "first PauseAndWait returned", 2*time.Second)
		if s := p.Stats(); !s.Paused || s.Running != 2 || s.Waiting != 2 {
			t.Errorf("after the first PauseAndWait: %+v, want paused, 2 running, 2 waiting", s)
		}
		var err2 error
		second := goRun(func() {
			err2 = p.PauseAndWait(context.Background())
			c.mark(t, "second PauseAndWait returned")
		})
		c.sleepUntil(4 * time.Second)
		awaitReturn(t, "second PauseAndWait", second)
		if err2 != nil {
			t.Errorf("second PauseAndWait: %v", err2)
		}
		c.expect(t, "second PauseAndWait returned", 3*time.Second)
		if s := p.Stats(); !s.Paused || s.Running != 0 || s.Waiting != 2 {
			t.Errorf("after the second PauseAndWait: %+v, want paused, none running, 2 waiting", s)
		}
		p.Resume()
		if _, err := f.Wait(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("future whose context ended while paused: %v, want context.DeadlineExceeded", err)
		}
		if err := g.Wait(); err != nil {
			t.Errorf("Group.Wait: %v", err)
		}
		p.StopAndWait()
		c.expect(t, "1s task returned", time.Second)
		c.expect(t, "task submitted while paused", 4*time.Second)
		for _, fn := range fns {
			fn.check(t, 0, 3*time.Second, 3*time.Second, []error{crew.ErrTaskTimeout})
		}
		if late.ran {
			t.Error("the future whose context ended while it waited ran")
		}
		if s := p.Stats(); s.Skipped != 1 || s.Completed != 4 || s.Accepted != 5 {
			t.Errorf("stats %+v, want 5 accepted, 4 completed, 1 skipped", s)
		}
		if started.Load() != 4 {
			t.Errorf("Started hook saw %d tasks, want 4", started.Load())
		}
	})
}

// TestAdvBubbleFutureDeadlinesAndCancelUnderRateLimit: New(2, WithRateLimit(1, 1)). The
// first future starts at 0 on the full bucket; the rest wait for tokens. Cancel at 200 ms
// makes Wait return context.Canceled at 200 ms, at once, although no worker reaches the
// canceled function's place before its token. A future whose own context ends at 500 ms is
// skipped and never runs. Neither takes a start from the rate limit (the limit is on starts,
// and a skipped function never starts), so the live futures behind them start at 1 s and
// 2 s. Stats.Skipped counts both, once a worker has passed their places.
func TestAdvBubbleFutureDeadlinesAndCancelUnderRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		var started atomic.Int64
		p := crew.New(2, crew.WithRateLimit(1, 1),
			crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { started.Add(1) }}))
		bg := context.Background()
		dctx, cancel := context.WithDeadline(bg, c.t0.Add(500*time.Millisecond))
		defer cancel()
		first, canceled, expired, second, third := &bubFn{name: "first"}, &bubFn{name: "canceled"},
			&bubFn{name: "expired"}, &bubFn{name: "second"}, &bubFn{name: "third"}
		f0 := crew.GoContext(bg, p, first.watch(c, true))
		fc := crew.GoContext(bg, p, canceled.watch(c, true))
		fe := crew.GoContext(dctx, p, expired.watch(c, true))
		f1 := crew.GoContext(bg, p, second.watch(c, true))
		f2 := crew.GoContext(bg, p, third.watch(c, true))
		c.sleepUntil(200 * time.Millisecond)
		if !fc.Cancel() {
			t.Fatal("Cancel of a function waiting for a token reported false")
		}
		synctest.Wait()
		select {
		case <-fc.Done():
		default:
			t.Error("the canceled future is not done at once")
		}
		if _, err := fc.Wait(); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled future: %v, want context.Canceled", err)
		}
		for _, f := range []*crew.Future[int]{f0, f1, f2} {
			if _, err := f.Wait(); err != nil {
				t.Errorf("live future: %v", err)
			}
		}
		if _, err := fe.Wait(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("expired future: %v, want context.DeadlineExceeded", err)
		}
		p.StopAndWait()
		if canceled.ran || expired.ran {
			t.Errorf("canceled ran %v, expired ran %v; want neither", canceled.ran, expired.ran)
		}
		if first.start != 0 {
			t.Errorf("first future started at %v, want 0", first.start)
		}
		if second.start != time.Second || third.start != 2*time.Second {
			t.Errorf("live futures behind the canceled and the expired one started at %v and %v; want 1s and 2s",
				second.start, third.start)
		}
		if s := p.Stats(); s.Skipped != 2 || s.Completed != 3 || s.Accepted != 5 || started.Load() != 3 {
			t.Errorf("stats %+v, Started hooks %d; want 2 skipped, 3 completed and started", s, started.Load())
		}
	})
}

// TestAdvBubbleShutdownGivesUpOnARateLimitedQueue: New(2, WithRateLimit(1, 1)) with ten
// functions given with a context, each instant. They start at 0 and 1 s. Shutdown with a
// 1.5 s deadline gives up at 1.5 s: the eight still queued are skipped with ErrStopped. The
// pool must not keep charging them to the rate limit, a token a second, as if they started:
// they never start. So every future is done, and the pool exited, by 1.5 s.
func TestAdvBubbleShutdownGivesUpOnARateLimitedQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(2, crew.WithRateLimit(1, 1))
		fns := make([]*bubFn, 10)
		futures := make([]*crew.Future[int], 10)
		for i := range fns {
			fns[i] = &bubFn{name: fmt.Sprint("function ", i)}
			futures[i] = crew.GoContext(context.Background(), p, fns[i].watch(c, true))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want context.DeadlineExceeded", err)
		}
		var lastDone time.Duration
		for i, f := range futures {
			_, err := f.Wait()
			lastDone = max(lastDone, c.now())
			switch {
			case i < 2 && (err != nil || !fns[i].ran || fns[i].start != time.Duration(i)*time.Second):
				t.Errorf("function %d: err %v, ran %v at %v; want it run at %ds", i, err, fns[i].ran, fns[i].start, i)
			case i >= 2 && (!errors.Is(err, crew.ErrStopped) || fns[i].ran):
				t.Errorf("function %d: err %v, ran %v; want it skipped with ErrStopped", i, err, fns[i].ran)
			}
		}
		p.StopAndWait()
		exited := c.now()
		if lastDone > 1500*time.Millisecond || exited > 1500*time.Millisecond {
			t.Errorf("the skipped functions' futures were done at %v and the pool exited at %v; "+
				"want both by 1.5s, when Shutdown gave up (skipped functions never start, so take no token)",
				lastDone, exited)
		}
		if s := p.Stats(); s.Skipped != 8 || s.Completed != 2 {
			t.Errorf("stats %+v, want 8 skipped, 2 completed", s)
		}
	})
}

// TestAdvBubbleKeyedQueueUnderRateLimit: a Keyed with WithQueueSize(2) on New(4,
// WithRateLimit(1, 1)). Each keyed task starts as a task of the pool would, within the rate
// limit: one key's five tasks start at 0, 1, 2, 3, 4 s, in order, one per token, and another
// key's task, submitted at 0, is one of those starts too. The keyed queue holds two waiting
// tasks: a Submit beyond them blocks until one starts, exactly at the next token, and a
// SubmitContext whose context ends at 500 ms gives up exactly then with
// context.DeadlineExceeded, counted in Keyed.Stats().Canceled.
func TestAdvBubbleKeyedQueueUnderRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(4, crew.WithRateLimit(1, 1))
		k := crew.NewKeyed[string](p, crew.WithQueueSize(2))
		var mu sync.Mutex
		var order []string
		task := func(name string) func() {
			return func() {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				c.mark(t, name)
			}
		}
		must(t, k.Submit("a", task("a0"))) // starts at 0 on the full bucket
		synctest.Wait()
		must(t, k.Submit("a", task("a1")))
		must(t, k.Submit("b", task("b0")))
		// The queue holds a1 and b0: the next submit waits for a start.
		blocked := goRun(func() {
			must(t, k.Submit("a", task("a2")))
			c.mark(t, "a2 accepted")
		})
		ctx, cancel := context.WithDeadline(context.Background(), c.t0.Add(500*time.Millisecond))
		defer cancel()
		var ctxErr error
		gaveUp := goRun(func() {
			ctxErr = k.SubmitContext(ctx, "c", task("c0"))
			c.mark(t, "c0 gave up")
		})
		c.sleepUntil(999 * time.Millisecond)
		awaitReturn(t, "the SubmitContext that gave up", gaveUp)
		if !errors.Is(ctxErr, context.DeadlineExceeded) {
			t.Errorf("SubmitContext: %v, want context.DeadlineExceeded", ctxErr)
		}
		c.expect(t, "c0 gave up", 500*time.Millisecond)
		select {
		case <-blocked:
			t.Fatal("a Submit beyond the keyed queue's two returned before any start")
		default:
		}
		c.sleepUntil(time.Second)
		awaitReturn(t, "the blocked Submit", blocked)
		c.expect(t, "a2 accepted", time.Second)
		must(t, k.Submit("a", task("a3")))
		must(t, k.Submit("a", task("a4")))
		k.Wait()
		p.StopAndWait()
		// Five starts of key a and one of key b, one per token, a's in submit order.
		var times []time.Duration
		var as []string
		for _, name := range order {
			c.mu.Lock()
			times = append(times, c.at[name])
			c.mu.Unlock()
			if name[0] == 'a' {
				as = append(as, name)
			}
		}
		if !slices.Equal(as, []string{"a0", "a1", "a2", "a3", "a4"}) {
			t.Errorf("key a ran %v, want a0 to a4 in order", as)
		}
		for i, d := range times {
			if d != time.Duration(i)*time.Second {
				t.Errorf("start %d (%s) at %v, want %v: one per token (order %v, times %v)", i, order[i], d, time.Duration(i)*time.Second, order, times)
				break
			}
		}
		if ks := k.Stats(); ks.Accepted != 6 || ks.Completed != 6 || ks.Canceled != 1 || ks.Waiting != 0 {
			t.Errorf("Keyed.Stats %+v, want 6 accepted and completed, 1 canceled", ks)
		}
	})
}

// TestAdvBubblePrioritySubPoolsUnderParentRateAndIdleTimeout: a parent New(1,
// WithRateLimit(10, 1), WithIdleTimeout(300ms)) with a sub-pool at level 1 and one at level
// 0, paused while each gets three tasks and the parent two of its own. After Resume, every
// task of level 1 starts before any of level 0 (WithPriority: no task of a higher level is
// waiting when a lower-level one starts), within each pool first in, first out; over any
// window T the starts stay within 1 + 10·T; and once the last task has returned the parent's
// worker is gone exactly 300 ms later, not before.
func TestAdvBubblePrioritySubPoolsUnderParentRateAndIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(1, crew.WithRateLimit(10, 1), crew.WithIdleTimeout(300*time.Millisecond))
		hi := p.Sub(1, crew.WithPriority(1))
		lo := p.Sub(1)
		var mu sync.Mutex
		var names []string
		var starts []time.Duration
		var last atomic.Int64
		task := func(name string) func() {
			return func() {
				mu.Lock()
				names = append(names, name)
				starts = append(starts, c.now())
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
				last.Store(int64(c.now()))
			}
		}
		p.Pause()
		for i := range 3 {
			must(t, lo.Submit(task(fmt.Sprint("lo", i))))
			must(t, hi.Submit(task(fmt.Sprint("hi", i))))
			if i < 2 {
				must(t, p.Submit(task(fmt.Sprint("p", i))))
			}
		}
		synctest.Wait()
		if s := p.Stats(); s.Running != 0 {
			t.Fatalf("a task started on a paused pool: %+v", s)
		}
		p.Resume()
		// Wait on the parent covers its sub-pools' tasks, which run on its workers.
		done := goRun(p.Wait)
		c.sleepUntil(10 * time.Second)
		awaitReturn(t, "Wait", done)
		mu.Lock()
		got := slices.Clone(names)
		at := slices.Clone(starts)
		mu.Unlock()
		if len(got) != 8 {
			t.Fatalf("%d tasks ran, want 8: %v", len(got), got)
		}
		if !slices.Equal(got[:3], []string{"hi0", "hi1", "hi2"}) {
			t.Errorf("start order %v: want the level-1 tasks first, in order", got)
		}
		var los, ps []string
		for _, n := range got[3:] {
			switch n[0] {
			case 'l':
				los = append(los, n)
			case 'p':
				ps = append(ps, n)
			}
		}
		if !slices.Equal(los, []string{"lo0", "lo1", "lo2"}) || !slices.Equal(ps, []string{"p0", "p1"}) {
			t.Errorf("start order %v: want each pool first in, first out", got)
		}
		for i := range at {
			for j := i; j < len(at); j++ {
				if n, limit := j-i+1, 1+10*(at[j]-at[i]).Seconds(); float64(n) > limit+1e-9 {
					t.Errorf("%d starts in %v (%v to %v), above 1 + 10·T = %.2f", n, at[j]-at[i], at[i], at[j], limit)
				}
			}
		}
		// The parent's worker went idle when the last task returned.
		lastEnd := time.Duration(last.Load())
		if s := p.Stats(); s.Idle != 0 && c.now() >= lastEnd+300*time.Millisecond {
			t.Errorf("10 s in, the worker idle since %v is still alive: %+v", lastEnd, s)
		}
		p.StopAndWait()

		// Again, watching the reaping to the nanosecond: one more round of tasks. (The
		// parent's rate also counts, conservatively, the starts of its sub-pools' workers, so
		// the second task's start is not computed here; its end is read.)
		q := crew.New(1, crew.WithRateLimit(10, 1), crew.WithIdleTimeout(300*time.Millisecond))
		qhi := q.Sub(1, crew.WithPriority(1))
		var qend atomic.Int64
		must(t, qhi.Submit(func() { time.Sleep(10 * time.Millisecond) }))
		must(t, q.Submit(func() { time.Sleep(10 * time.Millisecond); qend.Store(int64(c.now())) }))
		awaitReturn(t, "Wait on the second parent", goRun(q.Wait))
		end := time.Duration(qend.Load())
		if end == 0 {
			t.Fatal("the second parent's own task did not run")
		}
		c.sleepUntil(end + 300*time.Millisecond - time.Nanosecond)
		bubIdle(t, q, "1ns before the idle timeout", 1, 0)
		c.sleepUntil(end + 300*time.Millisecond)
		bubIdle(t, q, "at the idle timeout", 0, 0)
		q.StopAndWait()
	})
}

// TestAdvBubbleIdleReapingWithMinWorkersShrinkAndSubPool: New(4, WithMinWorkers(1),
// WithIdleTimeout(1s)) whose four workers run tasks of the pool and of a sub-pool released
// 100 ms apart. Each worker is gone exactly 1 s after it went idle, the longest idle first,
// down to the minimum, which stays. Then a shrinking Resize makes idle workers above the new
// limit exit at once (Resize doc), and a grow starts queued tasks at once.
func TestAdvBubbleIdleReapingWithMinWorkersShrinkAndSubPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(4, crew.WithMinWorkers(1), crew.WithIdleTimeout(time.Second))
		sub := p.Sub(2)
		for i := range 4 {
			d := time.Duration(i+1) * 100 * time.Millisecond
			task := func() { time.Sleep(d) }
			if i%2 == 1 {
				must(t, sub.Submit(task))
			} else {
				must(t, p.Submit(task))
			}
		}
		synctest.Wait()
		if s := p.Stats(); s.Running != 4 || s.Idle != 0 {
			t.Fatalf("at 0: %+v, want 4 running", s)
		}
		// Idle since 100, 200, 300, 400 ms: reaped at 1.1, 1.2, 1.3 s; the last one is the
		// minimum and stays.
		c.sleepUntil(1100*time.Millisecond - time.Nanosecond)
		bubIdle(t, p, "just before 1.1s", 4, 0)
		for k, at := range []time.Duration{1100, 1200, 1300} {
			c.sleepUntil(at*time.Millisecond - time.Nanosecond)
			bubIdle(t, p, fmt.Sprintf("1ns before %vms", at), 4-k, 0)
			c.sleepUntil(at * time.Millisecond)
			bubIdle(t, p, fmt.Sprintf("at %vms", at), 3-k, 0)
		}
		c.sleepUntil(time.Hour)
		bubIdle(t, p, "an hour in", 1, 0)

		// Four workers busy again, then idle at once; a Resize to 2 leaves 2 at once.
		release := make(chan struct{})
		for range 4 {
			must(t, p.Submit(func() { <-release }))
		}
		synctest.Wait()
		close(release)
		synctest.Wait()
		bubIdle(t, p, "four idle workers", 4, 0)
		p.Resize(2)
		synctest.Wait()
		bubIdle(t, p, "after Resize(2)", 2, 0)
		// At the limit, a third task waits; a grow starts it at once.
		hold := make(chan struct{})
		for range 3 {
			must(t, p.Submit(func() { <-hold }))
		}
		synctest.Wait()
		if s := p.Stats(); s.Running != 2 || s.Waiting != 1 {
			t.Errorf("at the limit of 2: %+v, want 2 running, 1 waiting", s)
		}
		p.Resize(3)
		synctest.Wait()
		if s := p.Stats(); s.Running != 3 || s.Waiting != 0 {
			t.Errorf("after Resize(3): %+v, want 3 running at once", s)
		}
		close(hold)
		p.StopAndWait()
		if s := p.Stats(); s.Idle != 0 || s.Running != 0 {
			t.Errorf("after StopAndWait: %+v", s)
		}
	})
}

// TestAdvBubbleSetRateLimitAcrossPauseAndInf: New(2, WithRateLimit(1, 3)), paused before six
// instant tasks are submitted. Resumed at 10 s, the saved tokens are capped at the burst: three
// start at 10 s, the fourth at 11 s. SetRateLimit(+Inf) at 11.5 s removes the limit: the last
// two start at once. SetRateLimit(2, 1) at 12 s is a new limit, which starts with a full
// burst: three more tasks start at 12, 12.5 and 13 s.
func TestAdvBubbleSetRateLimitAcrossPauseAndInf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(2, crew.WithRateLimit(1, 3))
		p.Pause()
		for i := range 6 {
			must(t, p.Submit(func() { c.mark(t, fmt.Sprint("task ", i)) }))
		}
		c.sleepUntil(10 * time.Second)
		if s := p.Stats(); s.Completed != 0 || s.Waiting != 6 {
			t.Fatalf("a task ran on the paused pool: %+v", s)
		}
		p.Resume()
		c.sleepUntil(11500 * time.Millisecond)
		p.SetRateLimit(math.Inf(1), 1)
		c.sleepUntil(12 * time.Second)
		p.SetRateLimit(2, 1)
		for i := 6; i < 9; i++ {
			must(t, p.Submit(func() { c.mark(t, fmt.Sprint("task ", i)) }))
		}
		awaitReturn(t, "Wait", goRun(p.Wait))
		p.StopAndWait()
		want := []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second, 11 * time.Second,
			11500 * time.Millisecond, 11500 * time.Millisecond, 12 * time.Second, 12500 * time.Millisecond, 13 * time.Second}
		for i, at := range want {
			c.expect(t, fmt.Sprint("task ", i), at)
		}
	})
}

// TestAdvBubbleHelpingWaitUnderRateLimit: on New(1, WithRateLimit(10, 1)), a group's function
// makes a group from its context and waits for five functions of it: with the only slot
// held by the waiter, the wait runs them itself in the lent slot ("Waits that help"), and the
// rate limit paces them as any start: over every window T, at most 1 + 10·T starts, the
// outer function's included. All of them run, none twice, none skipped, by 1 s.
func TestAdvBubbleHelpingWaitUnderRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(1, crew.WithRateLimit(10, 1))
		var mu sync.Mutex
		var starts []time.Duration
		mark := func() {
			mu.Lock()
			starts = append(starts, c.now())
			mu.Unlock()
		}
		var runs [5]atomic.Int32
		g, _ := p.Group(context.Background())
		g.Go(func(ctx context.Context) error {
			mark()
			inner, _ := p.Group(ctx)
			for i := range runs {
				inner.Go(func(context.Context) error { mark(); runs[i].Add(1); return nil })
			}
			return inner.Wait()
		})
		var err error
		waited := goRun(func() { err = g.Wait() })
		c.sleepUntil(time.Second)
		awaitReturn(t, "Group.Wait", waited)
		if err != nil {
			t.Fatalf("Group.Wait: %v", err)
		}
		p.StopAndWait()
		for i := range runs {
			if n := runs[i].Load(); n != 1 {
				t.Errorf("inner function %d ran %d times", i, n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range starts {
			for j := i; j < len(starts); j++ {
				if n, limit := j-i+1, 1+10*(starts[j]-starts[i]).Seconds(); float64(n) > limit+1e-9 {
					t.Errorf("%d starts between %v and %v, above 1 + 10·T = %.2f (starts %v)", n, starts[i], starts[j], limit, starts)
				}
			}
		}
		if s := p.Stats(); s.Skipped != 0 || s.Accepted != 6 || s.Completed != 6 {
			t.Errorf("stats %+v, want 6 accepted and completed", s)
		}
	})
}

// TestAdvBubbleMaxWaitOnARateLimitedBoundedQueue: New(1, WithRateLimit(1, 1),
// WithQueueSize(1), WithMaxWait(700ms)). The first task starts at 0 and the second waits in
// the queue for its token at 1 s. A third Submit, made at 0.5 s, finds the queue full: room
// comes at 1 s, when the second starts, within its max wait, so it returns nil exactly then.
// A fourth, made at 1 s, would get room at 2 s, beyond its max wait: it returns ErrQueueFull
// exactly at 1.7 s, counted in Rejected, and its task never runs. The third starts at 2 s.
func TestAdvBubbleMaxWaitOnARateLimitedBoundedQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(1, crew.WithRateLimit(1, 1), crew.WithQueueSize(1), crew.WithMaxWait(700*time.Millisecond))
		must(t, p.Submit(func() { c.mark(t, "task 0") }))
		must(t, p.Submit(func() { c.mark(t, "task 1") }))
		c.sleepUntil(500 * time.Millisecond)
		var err2, err3 error
		third := goRun(func() {
			err2 = p.Submit(func() { c.mark(t, "task 2") })
			c.mark(t, "submit 2 returned")
		})
		c.sleepUntil(time.Second)
		fourth := goRun(func() {
			err3 = p.Submit(func() { c.mark(t, "task 3") })
			c.mark(t, "submit 3 returned")
		})
		c.sleepUntil(3 * time.Second)
		awaitReturn(t, "third Submit", third)
		awaitReturn(t, "fourth Submit", fourth)
		p.StopAndWait()
		if err2 != nil {
			t.Errorf("third Submit: %v, want nil (room came within its max wait)", err2)
		}
		if !errors.Is(err3, crew.ErrQueueFull) {
			t.Errorf("fourth Submit: %v, want ErrQueueFull", err3)
		}
		c.expect(t, "task 0", 0)
		c.expect(t, "task 1", time.Second)
		c.expect(t, "submit 2 returned", time.Second)
		c.expect(t, "submit 3 returned", 1700*time.Millisecond)
		c.expect(t, "task 2", 2*time.Second)
		c.mu.Lock()
		_, ran3 := c.at["task 3"]
		c.mu.Unlock()
		if ran3 {
			t.Error("the task of the rejected Submit ran")
		}
		if s := p.Stats(); s.Accepted != 3 || s.Completed != 3 || s.Rejected != 1 {
			t.Errorf("stats %+v, want 3 accepted and completed, 1 rejected", s)
		}
	})
}

// TestAdvBubbleSubPoolPauseAndWaitWithDeadline: a sub-pool's PauseAndWait waits for its own
// tasks only, which run on its parent's workers. Sub(2) of New(3) runs a task until 2 s;
// PauseAndWait with a 1 s deadline returns context.DeadlineExceeded exactly at 1 s and the
// sub-pool stays paused; its task submitted meanwhile waits, while the parent's own tasks
// still start at once. A second PauseAndWait returns nil exactly at 2 s; Resume at 3 s starts
// the waiting task exactly then.
func TestAdvBubbleSubPoolPauseAndWaitWithDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubClock()
		p := crew.New(3)
		sub := p.Sub(2)
		must(t, sub.Submit(func() { time.Sleep(2 * time.Second) }))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var err1 error
		first := goRun(func() { err1 = sub.PauseAndWait(ctx); c.mark(t, "first returned") })
		synctest.Wait()
		must(t, sub.Submit(func() { c.mark(t, "sub task") }))
		must(t, p.Submit(func() { c.mark(t, "parent task") }))
		c.sleepUntil(1500 * time.Millisecond)
		awaitReturn(t, "first PauseAndWait", first)
		if !errors.Is(err1, context.DeadlineExceeded) {
			t.Errorf("first PauseAndWait: %v, want context.DeadlineExceeded", err1)
		}
		if s := sub.Stats(); !s.Paused || s.Running != 1 || s.Waiting != 1 {
			t.Errorf("sub-pool at 1.5 s: %+v, want paused, 1 running, 1 waiting", s)
		}
		if s := p.Stats(); s.Paused {
			t.Errorf("the parent reports paused: %+v", s)
		}
		var err2 error
		second := goRun(func() { err2 = sub.PauseAndWait(context.Background()); c.mark(t, "second returned") })
		c.sleepUntil(3 * time.Second)
		awaitReturn(t, "second PauseAndWait", second)
		if err2 != nil {
			t.Errorf("second PauseAndWait: %v", err2)
		}
		sub.Resume()
		awaitReturn(t, "Wait", goRun(p.Wait))
		p.StopAndWait()
		c.expect(t, "first returned", time.Second)
		c.expect(t, "parent task", 0)
		c.expect(t, "second returned", 2*time.Second)
		c.expect(t, "sub task", 3*time.Second)
	})
}
