package crew_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// afHooks counts what a pool's hooks saw.
type afHooks struct {
	queued, started, finished, rejected, discarded atomic.Int64
}

func (h *afHooks) hooks() crew.Hooks {
	return crew.Hooks{
		Queued:    func(crew.TaskInfo) { h.queued.Add(1) },
		Started:   func(crew.TaskInfo) { h.started.Add(1) },
		Finished:  func(crew.TaskInfo) { h.finished.Add(1) },
		Rejected:  func(error) { h.rejected.Add(1) },
		Discarded: func(crew.TaskInfo) { h.discarded.Add(1) },
	}
}

// afQuiet waits, with a bound, for each pool's Wait and then for its Stats to show nothing
// running or waiting. A pool's Wait does not wait for its sub-pools' tasks that a pause or a
// rate limit of the sub-pool holds in the sub-pool's queue, so each pool is waited for.
func afQuiet(t *testing.T, pools ...*crew.Pool) {
	t.Helper()
	for _, p := range pools {
		awaitReturn(t, "Wait", goRun(p.Wait))
	}
	for _, p := range pools {
		awaitStats(t, p, "quiet", func(s crew.Stats) bool { return s.Running == 0 && s.Waiting == 0 })
	}
}

// afWait waits for f with a bound, and returns what its Wait returned.
func afWait[R any](t *testing.T, what string, f *crew.Future[R]) (R, error) {
	t.Helper()
	var v R
	var err error
	awaitReturn(t, what, goRun(func() { v, err = f.Wait() }))
	return v, err
}

// afLeaf checks a quiet leaf pool (one without sub-pools) against its hooks and histograms:
// the identity of Stats, the hooks that saw ran tasks start and finish, and histograms that
// counted each of them once.
func afLeaf(t *testing.T, what string, s crew.Stats, h *afHooks, ran int64) {
	t.Helper()
	idleIdentity(t, what, s)
	if got := int64(s.Completed + s.Panicked); got != ran {
		t.Errorf("%s: Completed+Panicked = %d, want %d ran; %+v", what, got, ran, s)
	}
	if h != nil {
		if h.started.Load() != ran || h.finished.Load() != ran {
			t.Errorf("%s: hooks Started %d Finished %d, want %d each", what, h.started.Load(), h.finished.Load(), ran)
		}
		if q, want := h.queued.Load(), int64(s.Accepted)+h.rejected.Load(); q != want {
			t.Errorf("%s: hooks Queued %d, want Accepted+Rejected hooks %d; %+v", what, q, want, s)
		}
		if d := h.discarded.Load(); d != int64(s.Discarded) {
			t.Errorf("%s: Discarded hooks %d, Stats.Discarded %d", what, d, s.Discarded)
		}
	}
	if s.WaitTime != nil && (int64(s.WaitTime.Count) != ran || int64(s.RunTime.Count) != ran) {
		t.Errorf("%s: histograms count wait %d run %d, want %d", what, s.WaitTime.Count, s.RunTime.Count, ran)
	}
}

// TestAdvFutCancelAcrossAPriorityTree queues GoContext futures on a root of one worker and on
// sub-pools at three levels (one a sub-pool of a sub-pool) while the worker is held, cancels
// every other one, and releases: a canceled function never runs and its Wait returns
// context.Canceled; the others run once, by level, highest first; each pool counts its
// canceled futures in Skipped, its hooks see only the functions that ran and its histograms
// count them once.
func TestAdvFutCancelAcrossAPriorityTree(t *testing.T) {
	const n = 12
	root := crew.New(1)
	defer root.StopAndWait()
	hk := make([]*afHooks, 4)
	for i := range hk {
		hk[i] = new(afHooks)
	}
	hi := root.Sub(1, crew.WithPriority(2), crew.WithHooks(hk[1].hooks()), crew.WithLatencyHistograms())
	lo := root.Sub(2, crew.WithPriority(-1), crew.WithHooks(hk[2].hooks()), crew.WithLatencyHistograms())
	lolo := lo.Sub(1, crew.WithHooks(hk[3].hooks()), crew.WithLatencyHistograms())
	pools := []*crew.Pool{root, hi, lo, lolo}
	levels := []int{0, 2, -1, -1}
	release := holdWorkers(t, plainPool{root}, 1, 0)

	var mu sync.Mutex
	var order []int // the level of each function that ran, in start order
	var running, high atomic.Int32
	runs := make([][n]atomic.Int32, len(pools))
	futures := make([][n]*crew.Future[int], len(pools))
	for pi, p := range pools {
		for i := range n {
			futures[pi][i] = crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				r := running.Add(1)
				defer running.Add(-1)
				if r > high.Load() {
					high.Store(r)
				}
				runs[pi][i].Add(1)
				mu.Lock()
				order = append(order, levels[pi])
				mu.Unlock()
				return pi*100 + i, nil
			})
		}
	}
	for pi := range pools {
		for i := 0; i < n; i += 2 {
			if !futures[pi][i].Cancel() {
				t.Fatalf("pool %d: Cancel of queued future %d = false", pi, i)
			}
			if futures[pi][i].Cancel() {
				t.Fatalf("pool %d: second Cancel of future %d = true", pi, i)
			}
		}
	}
	release()
	for pi := range pools {
		for i := range n {
			v, err := afWait(t, "Wait", futures[pi][i])
			if i%2 == 0 {
				if !errors.Is(err, context.Canceled) || v != 0 {
					t.Errorf("pool %d: canceled future %d: Wait = %v, %v; want 0, context.Canceled", pi, i, v, err)
				}
				continue
			}
			if err != nil || v != pi*100+i {
				t.Errorf("pool %d: future %d: Wait = %v, %v", pi, i, v, err)
			}
		}
	}
	afQuiet(t, pools...)
	for pi := range pools {
		for i := range n {
			want := int32(i % 2)
			if got := runs[pi][i].Load(); got != want {
				t.Errorf("pool %d: function %d ran %d times, want %d", pi, i, got, want)
			}
		}
	}
	if high.Load() > 1 {
		t.Errorf("%d functions ran at once on a root of 1", high.Load())
	}
	mu.Lock()
	for i := 1; i < len(order); i++ {
		if order[i] > order[i-1] {
			t.Errorf("a function of level %d started after one of level %d: %v", order[i], order[i-1], order)
			break
		}
	}
	mu.Unlock()
	awaitStats(t, root, "root quiet", func(s crew.Stats) bool { return s.Running == 0 && s.Waiting == 0 })
	for pi, p := range pools[1:] {
		s := p.Stats()
		idleIdentity(t, fmt.Sprintf("pool %d", pi+1), s)
		if s.Skipped != n/2 {
			t.Errorf("pool %d: Skipped = %d, want %d canceled", pi+1, s.Skipped, n/2)
		}
	}
	for pi := 1; pi < len(pools); pi++ {
		h := hk[pi]
		if h.started.Load() != n/2 || h.finished.Load() != n/2 || h.queued.Load() != n {
			t.Errorf("pool %d: hooks queued %d started %d finished %d, want %d, %d, %d",
				pi, h.queued.Load(), h.started.Load(), h.finished.Load(), n, n/2, n/2)
		}
		s := pools[pi].Stats()
		if s.WaitTime.Count != n/2 || s.RunTime.Count != n/2 {
			t.Errorf("pool %d: histograms count %d, %d, want %d", pi, s.WaitTime.Count, s.RunTime.Count, n/2)
		}
	}
	idleIdentity(t, "root", root.Stats())
}

// TestAdvFutCanceledPlaceMakesRoomUnderDiscardOldest: on a full bounded queue under
// DiscardOldest, the place of a canceled future is dropped first, so the next submit takes it
// and nothing is discarded; a later full queue drops the oldest function that can still run,
// whose future fails with ErrDiscarded. Counters, hooks and the discard handler agree.
func TestAdvFutCanceledPlaceMakesRoomUnderDiscardOldest(t *testing.T) {
	h := new(afHooks)
	var handed atomic.Int64
	p := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(h.hooks()),
		crew.WithLatencyHistograms(), crew.WithDiscardHandler(func(any) { handed.Add(1) }))
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 0) // one task ran: the holder
	var ran [4]atomic.Int32
	fn := func(i int) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) { ran[i].Add(1); return i, nil }
	}
	f0 := crew.GoContext(context.Background(), p, fn(0))
	f1 := crew.Go(p, func() (int, error) { ran[1].Add(1); return 1, nil })
	if !f0.Cancel() {
		t.Fatal("Cancel of a queued future = false")
	}
	f2 := crew.GoContext(context.Background(), p, fn(2)) // takes f0's place
	if s := p.Stats(); s.Discarded != 0 {
		t.Fatalf("a submit into the place of a canceled future discarded a task: %+v", s)
	}
	select {
	case <-f1.Done():
		t.Fatalf("f1 finished while its worker was held: it was dropped")
	default:
	}
	f3 := crew.GoContext(context.Background(), p, fn(3)) // drops f1, the oldest that can run
	if _, err := afWait(t, "f1", f1); !errors.Is(err, crew.ErrDiscarded) {
		t.Fatalf("f1: Wait = %v, want ErrDiscarded", err)
	}
	// TryGo never drops another task: false on the full queue, the group untouched.
	g, gctx := p.Group(context.Background())
	if g.TryGo(func(context.Context) error { t.Error("a refused TryGo function ran"); return nil }) {
		t.Fatal("TryGo on a full DiscardOldest queue = true")
	}
	if err := g.Wait(); err != nil || gctx.Err() == nil || p.Stats().Discarded != 1 {
		t.Fatalf("after a refused TryGo: Wait = %v, stats %+v", err, p.Stats())
	}
	release()
	for i, f := range []*crew.Future[int]{f2, f3} {
		if v, err := afWait(t, "f", f); err != nil || v != i+2 {
			t.Errorf("future %d: Wait = %v, %v", i+2, v, err)
		}
	}
	if _, err := afWait(t, "f0", f0); !errors.Is(err, context.Canceled) {
		t.Errorf("f0: Wait = %v, want context.Canceled", err)
	}
	p.Wait()
	for i, want := range []int32{0, 0, 1, 1} {
		if got := ran[i].Load(); got != want {
			t.Errorf("function %d ran %d times, want %d", i, got, want)
		}
	}
	s := p.Stats()
	afLeaf(t, "pool", s, h, 3) // the holder, f2, f3
	if s.Discarded != 1 || s.Skipped != 1 || handed.Load() != 0 {
		t.Errorf("Discarded %d Skipped %d handler calls %d, want 1, 1, 0 (a future goes to its Wait, not the handler)",
			s.Discarded, s.Skipped, handed.Load())
	}
}

// TestAdvGrpDiscardedFunctionCancelsGroupNotGroupAll: on a sub-pool at a priority level with
// DiscardOldest, a group whose oldest queued function is dropped fails with ErrDiscarded and
// skips its other queued functions (its context ended with that cause); a GroupAll group on a
// sibling runs every function still queued and joins ErrDiscarded to the other errors.
func TestAdvGrpDiscardedFunctionCancelsGroupNotGroupAll(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprint("all=", all), func(t *testing.T) {
			sub := root.Sub(1, crew.WithPriority(1), crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest))
			defer sub.StopAndWait()
			release := holdWorkers(t, plainPool{root}, 1, 0)
			var g *crew.Group
			var gctx context.Context
			if all {
				g, gctx = sub.GroupAll(context.Background())
			} else {
				g, gctx = sub.Group(context.Background())
			}
			var ran [5]atomic.Int32
			boom := errors.New("boom")
			for i := range 5 {
				// 0 is handed to the sub-pool's worker, waiting in root's queue; 1, 2, 3 fill
				// the sub-pool's queue; 4 drops 1.
				g.Go(func(ctx context.Context) error {
					ran[i].Add(1)
					if i == 3 {
						return boom
					}
					return nil
				})
			}
			if !all {
				select {
				case <-gctx.Done():
					if !errors.Is(context.Cause(gctx), crew.ErrDiscarded) {
						t.Errorf("group context cause = %v, want ErrDiscarded", context.Cause(gctx))
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the discard of a group's function did not cancel the group's context")
				}
			} else if gctx.Err() != nil {
				t.Fatalf("a GroupAll context ended on a discard: %v", context.Cause(gctx))
			}
			release()
			err := returnsWithin(t, "Group.Wait", g.Wait)
			if !errors.Is(err, crew.ErrDiscarded) {
				t.Fatalf("Wait = %v, want ErrDiscarded", err)
			}
			if ran[1].Load() != 0 {
				t.Errorf("the discarded function ran")
			}
			s := sub.Stats()
			idleIdentity(t, "sub", s)
			if all {
				if !errors.Is(err, boom) {
					t.Errorf("GroupAll Wait = %v, want boom joined too", err)
				}
				for _, i := range []int{0, 2, 3, 4} {
					if ran[i].Load() != 1 {
						t.Errorf("GroupAll function %d ran %d times, want 1", i, ran[i].Load())
					}
				}
				if s.Discarded != 1 || s.Skipped != 0 || s.Completed != 4 {
					t.Errorf("GroupAll sub stats %+v, want 1 discarded, 4 completed", s)
				}
			} else {
				if errors.Is(err, boom) {
					t.Errorf("Group Wait = %v: a skipped function ran", err)
				}
				// 0 was handed to the sub-pool's worker before the discard: it may be skipped
				// too, as its context had ended when it was taken.
				for _, i := range []int{2, 3, 4} {
					if ran[i].Load() != 0 {
						t.Errorf("Group function %d ran after the group's context ended", i)
					}
				}
				if s.Discarded != 1 || s.Skipped+s.Completed != 4 || s.Skipped < 3 {
					t.Errorf("Group sub stats %+v, want 1 discarded and 3 or 4 skipped", s)
				}
			}
		})
	}
}

// TestAdvFutRefusedByEveryDoorOfANonBlockingQueue: with the worker busy and the queue full
// under WithNonBlocking, Go, GoContext, Group.Go, GroupAll's Go and Results.Go are refused
// with ErrQueueFull, their functions never run, Cancel of a refused future reports false,
// TryGo reports false without failing its group; each refusal counts once in Rejected and
// once in the Rejected hook, none in Accepted.
func TestAdvFutRefusedByEveryDoorOfANonBlockingQueue(t *testing.T) {
	h := new(afHooks)
	p := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking(), crew.WithHooks(h.hooks()), crew.WithLatencyHistograms())
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 1, 1)
	var ran atomic.Int32
	f := crew.Go(p, func() (int, error) { ran.Add(1); return 1, nil })
	fc := crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	for _, ff := range []*crew.Future[int]{f, fc} {
		if _, err := afWait(t, "refused future", ff); !errors.Is(err, crew.ErrQueueFull) {
			t.Errorf("refused future: Wait = %v, want ErrQueueFull", err)
		}
		if ff.Cancel() {
			t.Error("Cancel of a refused future = true")
		}
	}
	g, gctx := p.Group(context.Background())
	if g.TryGo(func(context.Context) error { ran.Add(1); return nil }) {
		t.Fatal("TryGo on a full queue = true")
	}
	if gctx.Err() != nil {
		t.Fatal("a refused TryGo ended the group's context")
	}
	g.Go(func(context.Context) error { ran.Add(1); return nil })
	if !errors.Is(context.Cause(gctx), crew.ErrQueueFull) {
		t.Errorf("group cause = %v, want ErrQueueFull", context.Cause(gctx))
	}
	ga, _ := p.GroupAll(context.Background())
	ga.Go(func(context.Context) error { ran.Add(1); return nil })
	ga.Go(func(context.Context) error { ran.Add(1); return nil })
	r, _ := crew.NewResults[int](context.Background(), p)
	r.Go(func(context.Context) (int, error) { ran.Add(1); return 1, nil })
	release()
	if err := returnsWithin(t, "Group.Wait", g.Wait); !errors.Is(err, crew.ErrQueueFull) {
		t.Errorf("Group.Wait = %v", err)
	}
	if err := returnsWithin(t, "GroupAll.Wait", ga.Wait); !errors.Is(err, crew.ErrQueueFull) {
		t.Errorf("GroupAll.Wait = %v", err)
	} else if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Errorf("GroupAll.Wait joined %d errors, want 2: %v", n, err)
	}
	var vals []int
	if err := returnsWithin(t, "Results.Wait", func() (err error) { vals, err = r.Wait(); return err }); !errors.Is(err, crew.ErrQueueFull) || len(vals) != 1 || vals[0] != 0 {
		t.Errorf("Results.Wait = %v, %v", vals, err)
	}
	p.Wait()
	if ran.Load() != 0 {
		t.Errorf("%d refused functions ran", ran.Load())
	}
	s := p.Stats()
	afLeaf(t, "pool", s, h, 2)
	// Go, GoContext, Group.Go, TryGo, 2 GroupAll.Go, Results.Go
	if s.Rejected != 7 || h.rejected.Load() != 7 {
		t.Errorf("Rejected %d, hooks %d, want 7", s.Rejected, h.rejected.Load())
	}
}

// TestAdvFutCallerRunsStartsObeyTheRateLimit: the rate limit bounds task starts, over any
// window, at burst + perSecond·T. With a bounded queue under CallerRuns, a full queue makes the
// submitter run its task: that start counts as one like any other (it is seen by the Started
// hook and counted in Stats), so it must obey the bound too, or be held.
func TestAdvFutCallerRunsStartsObeyTheRateLimit(t *testing.T) {
	const perSecond, burst = 20.0, 2
	var starts atomic.Int64
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns), crew.WithRateLimit(perSecond, burst),
		crew.WithHooks(crew.Hooks{Started: func(crew.TaskInfo) { starts.Add(1) }}))
	defer p.StopAndWait()
	begin := time.Now()
	for range 30 {
		crew.Go(p, func() (int, error) { return 1, nil })
	}
	el := time.Since(begin)
	if max := burst + perSecond*el.Seconds() + 1; float64(starts.Load()) > max {
		t.Fatalf("%d starts in %v under a limit of %v/s, burst %d: at most %.1f allowed; stats %+v",
			starts.Load(), el, perSecond, burst, max, p.Stats())
	}
}

// TestAdvFutHelpingWaitsOnATreeUnderCallerRunsAndPauseStorms: fork/join with GoContext futures
// made inside functions of a sub-pool with a priority and of its sub-pool, on a root of two
// workers with a bounded queue under CallerRuns, while the pools are paused and resumed and
// resized: every wait completes (waits help, submits run on the caller), every function runs
// once, and each pool's Stats add up once quiet.
func TestAdvFutHelpingWaitsOnATreeUnderCallerRunsAndPauseStorms(t *testing.T) {
	root := crew.New(2, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	defer root.StopAndWait()
	sub := root.Sub(2, crew.WithPriority(1), crew.WithQueueSize(1))
	subsub := sub.Sub(1, crew.WithQueueSize(1))
	pools := []*crew.Pool{root, sub, subsub}
	unwatch := afWatch(t, pools...)
	defer unwatch()
	var calls atomic.Int64
	// walk computes the number of nodes of a tree of depth d and fan-out 3, forking each
	// child as a future on one of the pools the function may wait on without a deadlock: its
	// own or one above it.
	var walk func(ctx context.Context, at int, d int) (int, error)
	walk = func(ctx context.Context, at int, d int) (int, error) {
		calls.Add(1)
		if d == 0 {
			return 1, nil
		}
		var fs []*crew.Future[int]
		for c := range 3 {
			on := (at + c) % (at + 1) // at or a pool above it
			fs = append(fs, crew.GoContext(ctx, pools[on], func(ctx context.Context) (int, error) {
				return walk(ctx, on, d-1)
			}))
		}
		sum := 1
		for _, f := range fs {
			v, err := f.Wait()
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 200*time.Microsecond, root, sub, subsub)
	repeatUntil(&wg, stop, func() {
		pools[rand.IntN(3)].Resize(1 + rand.IntN(3))
		time.Sleep(100 * time.Microsecond)
	})
	const depth = 4 // 1+3+9+27+81 = 121 nodes
	var tops []*crew.Future[int]
	for at := range pools {
		tops = append(tops, crew.GoContext(context.Background(), pools[at], func(ctx context.Context) (int, error) {
			return walk(ctx, at, depth)
		}))
	}
	for at, f := range tops {
		var v int
		var err error
		done := goRun(func() { v, err = f.Wait() })
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			close(stop)
			wg.Wait()
			t.Fatalf("walk on pool %d did not complete; stats %+v %+v %+v", at, root.Stats(), sub.Stats(), subsub.Stats())
		}
		if err != nil || v != 121 {
			t.Errorf("walk on pool %d = %d, %v; want 121", at, v, err)
		}
	}
	close(stop)
	wg.Wait()
	for _, p := range pools {
		p.Resume()
	}
	if calls.Load() != 3*121 {
		t.Errorf("%d calls, want %d", calls.Load(), 3*121)
	}
	afQuiet(t, pools...)
	for i, p := range pools {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
}

// TestAdvFutTaskTimeoutFollowsTheTreeAndStartsAtTheStart: WithTaskTimeout is inherited by a
// sub-pool given none, replaced by one given its own, and inherited from that by its
// sub-pool; the deadline is counted from the function's start (not its submit), in a lent
// slot too; Go's functions and plain tasks are unaffected.
func TestAdvFutTaskTimeoutFollowsTheTreeAndStartsAtTheStart(t *testing.T) {
	root := crew.New(1, crew.WithTaskTimeout(150*time.Millisecond))
	defer root.StopAndWait()
	inherit := root.Sub(1)
	own := root.Sub(1, crew.WithTaskTimeout(40*time.Millisecond))
	ownsub := own.Sub(1)
	type got struct {
		left  time.Duration
		cause error
	}
	measure := func(ctx context.Context) got {
		dl, ok := ctx.Deadline()
		if !ok {
			return got{left: -1}
		}
		left := time.Until(dl)
		<-ctx.Done()
		return got{left, context.Cause(ctx)}
	}
	// a plain task holds the one worker for 100 ms: the functions queued behind it wait that
	// long, which must not count against their timeouts
	must(t, root.Submit(func() { time.Sleep(100 * time.Millisecond) }))
	cases := []struct {
		name string
		p    *crew.Pool
		want time.Duration
	}{{"root", root, 150 * time.Millisecond}, {"inherit", inherit, 150 * time.Millisecond},
		{"own", own, 40 * time.Millisecond}, {"ownsub", ownsub, 40 * time.Millisecond}}
	fs := make([]*crew.Future[got], len(cases))
	for i, c := range cases {
		fs[i] = crew.GoContext(context.Background(), c.p, func(ctx context.Context) (got, error) { return measure(ctx), nil })
	}
	for i, c := range cases {
		g, err := afWait(t, c.name, fs[i])
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if g.left < 0 {
			t.Errorf("%s: the function's context has no deadline", c.name)
			continue
		}
		if g.left > c.want || g.left < c.want/2 {
			t.Errorf("%s: deadline %v after the start, want about %v", c.name, g.left, c.want)
		}
		if !errors.Is(g.cause, crew.ErrTaskTimeout) || !errors.Is(g.cause, context.DeadlineExceeded) {
			t.Errorf("%s: cause %v, want ErrTaskTimeout", c.name, g.cause)
		}
	}
	// In a lent slot: a function of ownsub waits for a future on own, which it runs itself.
	lent := crew.GoContext(context.Background(), ownsub, func(ctx context.Context) (got, error) {
		inner := crew.GoContext(ctx, own, func(ctx context.Context) (got, error) { return measure(ctx), nil })
		return inner.Wait()
	})
	if g, err := afWait(t, "lent", lent); err != nil || g.left < 0 || g.left > 40*time.Millisecond ||
		!errors.Is(g.cause, crew.ErrTaskTimeout) {
		t.Errorf("lent slot: %+v, %v; want a deadline of at most 40ms, cause ErrTaskTimeout", g, err)
	}
	plain := crew.Go(own, func() (bool, error) { return true, nil })
	if _, err := afWait(t, "Go", plain); err != nil {
		t.Errorf("Go on a pool with a task timeout: %v", err)
	}
}

// TestAdvFutStopNowAndShutdownOnATreeOfFutures: StopNow on a paused parent fails the queued
// futures of the tree with ErrStopped, counts them in Returned (a canceled one in Skipped) and
// hands back the plain tasks; Shutdown past its deadline on a second tree skips the queued
// functions with a context (ErrStopped), ends the running one's context with cause
// ErrStopped, and still runs its plain tasks and Go's functions.
func TestAdvFutStopNowAndShutdownOnATreeOfFutures(t *testing.T) {
	t.Run("StopNow", func(t *testing.T) {
		root := crew.New(2)
		sub := root.Sub(1, crew.WithPriority(1))
		subsub := sub.Sub(1)
		root.Pause()
		var ran atomic.Int32
		var fs []*crew.Future[int]
		plain := 0
		for i, p := range []*crew.Pool{root, sub, subsub, root, sub, subsub} {
			fs = append(fs, crew.GoContext(context.Background(), p, func(context.Context) (int, error) { ran.Add(1); return i, nil }))
			fs = append(fs, crew.Go(p, func() (int, error) { ran.Add(1); return i, nil }))
			must(t, p.Submit(func() { ran.Add(1) }))
			plain++
		}
		if !fs[2].Cancel() { // sub's GoContext
			t.Fatal("Cancel of a future on a paused tree = false")
		}
		back := root.StopNow()
		if len(back) != plain {
			t.Errorf("StopNow handed back %d plain tasks, want %d", len(back), plain)
		}
		for i, f := range fs {
			_, err := afWait(t, "future", f)
			if i == 2 {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("canceled future: %v", err)
				}
			} else if !errors.Is(err, crew.ErrStopped) {
				t.Errorf("future %d: Wait = %v, want ErrStopped", i, err)
			}
		}
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		if ran.Load() != 0 {
			t.Errorf("%d tasks ran after StopNow", ran.Load())
		}
		var returned, skipped uint64
		for i, p := range []*crew.Pool{sub, subsub} {
			s := p.Stats()
			idleIdentity(t, fmt.Sprint("sub ", i), s)
			returned += s.Returned
			skipped += s.Skipped
		}
		rs := root.Stats()
		idleIdentity(t, "root", rs)
		if returned+rs.Returned < uint64(len(fs)+plain-1) || skipped+rs.Skipped != 1 {
			t.Errorf("Returned %d+%d, Skipped %d+%d; want %d returned and 1 skipped", rs.Returned, returned, rs.Skipped, skipped, len(fs)+plain-1)
		}
	})
	t.Run("Shutdown", func(t *testing.T) {
		root := crew.New(1)
		sub := root.Sub(1)
		started := make(chan struct{})
		running := crew.GoContext(context.Background(), sub, func(ctx context.Context) (error, error) {
			close(started)
			select {
			case <-ctx.Done():
				return context.Cause(ctx), nil
			case <-time.After(5 * time.Second):
				return nil, errors.New("context never ended")
			}
		})
		<-started
		var ran atomic.Int32
		queued := crew.GoContext(context.Background(), root, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
		queuedSub := crew.GoContext(context.Background(), sub, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
		goFn := crew.Go(sub, func() (int, error) { ran.Add(10); return 1, nil })
		must(t, root.Submit(func() { ran.Add(100) }))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := returnsWithin(t, "Shutdown", func() error { return root.Shutdown(ctx) }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
		}
		if cause, err := afWait(t, "running", running); err != nil || !errors.Is(cause, crew.ErrStopped) {
			t.Errorf("running function's cause = %v, %v; want ErrStopped", cause, err)
		}
		for _, f := range []*crew.Future[int]{queued, queuedSub} {
			if _, err := afWait(t, "queued", f); !errors.Is(err, crew.ErrStopped) {
				t.Errorf("queued function after Shutdown gave up: Wait = %v, want ErrStopped", err)
			}
		}
		if _, err := afWait(t, "Go", goFn); err != nil {
			t.Errorf("Go's function after Shutdown gave up: %v, want it run", err)
		}
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		if ran.Load() != 110 {
			t.Errorf("ran = %d, want the plain task and Go's function only (110)", ran.Load())
		}
		idleIdentity(t, "root", root.Stats())
		idleIdentity(t, "sub", sub.Stats())
	})
}

// TestAdvFutCancelStormUnderEveryFeature: submitters make GoContext futures, Go futures,
// group and results functions on a tree whose root has a bounded queue, hooks, histograms, a
// rate limit and a task timeout, while other goroutines cancel futures, resize, pause and
// resume, and change the rate; at the end every function ran at most once, a future whose
// Cancel reported true never ran and its Wait returned context.Canceled, every other accepted
// function ran once, the pools' Stats add up and no goroutine is left.
func TestAdvFutCancelStormUnderEveryFeature(t *testing.T) {
	base := runtime.NumGoroutine()
	h := new(afHooks)
	hs := new(afHooks)
	root := crew.New(3, crew.WithQueueSize(8), crew.WithHooks(h.hooks()), crew.WithLatencyHistograms(),
		crew.WithRateLimit(20000, 4), crew.WithTaskTimeout(time.Second))
	sub := root.Sub(2, crew.WithPriority(1), crew.WithHooks(hs.hooks()), crew.WithLatencyHistograms())
	subsub := sub.Sub(1, crew.WithQueueSize(4))
	pools := []*crew.Pool{root, sub, subsub}
	unwatch := afWatch(t, pools...)
	defer unwatch()
	const submitters, each = 4, 60
	type rec struct {
		f        *crew.Future[int]
		runs     atomic.Int32
		canceled atomic.Bool
	}
	recs := make([]*rec, submitters*each)
	cancels := make(chan *rec, len(recs))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 300*time.Microsecond, pools...)
	repeatUntil(&wg, stop, func() {
		pools[rand.IntN(3)].Resize(1 + rand.IntN(4))
		time.Sleep(200 * time.Microsecond)
	})
	repeatUntil(&wg, stop, func() {
		root.SetRateLimit(5000+float64(rand.IntN(20000)), 1+rand.IntN(4))
		time.Sleep(time.Millisecond)
	})
	repeatUntil(&wg, stop, func() {
		select {
		case r := <-cancels:
			if r.f.Cancel() {
				r.canceled.Store(true)
			}
		case <-time.After(time.Millisecond):
		}
	})
	var groupRuns, groupWant atomic.Int64
	storm := func() {
		together(submitters, each, func(c, i int) {
			r := &rec{}
			recs[c*each+i] = r
			p := pools[(c+i)%3]
			if i%2 == 0 {
				r.f = crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) { r.runs.Add(1); return i, nil })
			} else {
				r.f = crew.Go(p, func() (int, error) { r.runs.Add(1); return i, nil })
			}
			if i%3 == 0 {
				cancels <- r
			}
			if i%10 == 0 {
				g, _ := p.GroupAll(context.Background())
				res, _ := crew.NewResults[int](context.Background(), p)
				for k := range 3 {
					g.Go(func(context.Context) error { groupRuns.Add(1); return nil })
					res.Go(func(context.Context) (int, error) { groupRuns.Add(1); return k, nil })
				}
				groupWant.Add(6)
				if err := g.Wait(); err != nil {
					t.Errorf("GroupAll: %v", err)
				}
				vals, err := res.Wait()
				if err != nil || len(vals) != 3 || vals[0] != 0 || vals[1] != 1 || vals[2] != 2 {
					t.Errorf("Results: %v, %v", vals, err)
				}
			}
		})
	}
	awaitReturn(t, "submitters", goRun(storm))
	close(stop)
	wg.Wait()
	for _, p := range pools {
		p.Resume()
	}
	root.SetRateLimit(math.Inf(1), 1)
	for i, r := range recs {
		v, err := afWait(t, "future", r.f)
		switch {
		case r.canceled.Load():
			if !errors.Is(err, context.Canceled) || r.runs.Load() != 0 {
				t.Errorf("future %d: Cancel true, but Wait = %v, %v and %d runs", i, v, err, r.runs.Load())
			}
		case err != nil || r.runs.Load() != 1:
			t.Errorf("future %d: Wait = %v, %v, %d runs", i, v, err, r.runs.Load())
		}
	}
	if groupRuns.Load() != groupWant.Load() {
		t.Errorf("group functions ran %d times, want %d", groupRuns.Load(), groupWant.Load())
	}
	afQuiet(t, pools...)
	for i, p := range pools {
		idleIdentity(t, fmt.Sprint("pool ", i), p.Stats())
	}
	ss := sub.Stats()
	// sub's Completed also counts the workers of subsub, which its hooks do not see
	if hs.started.Load() != hs.finished.Load() || int64(ss.RunTime.Count) != hs.finished.Load() ||
		int64(ss.WaitTime.Count) != hs.started.Load() || hs.started.Load() > int64(ss.Completed+ss.Panicked) {
		t.Errorf("sub: hooks started %d finished %d, histogram %d, stats %+v", hs.started.Load(), hs.finished.Load(), ss.RunTime.Count, ss)
	}
	unwatch()
	awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
	awaitGoroutines(t, "after StopAndWait", base)
}

// TestAdvFutHeldHigherLevelDoesNotHoldLowerLevels: a higher-level sub-pool whose futures cannot
// start (it is paused, or its rate limit has no token) must not keep the lower levels from
// starting: "a worker never takes a lower-level task while a higher-level one that may start
// waits". Once the higher level may start again, its futures complete.
func TestAdvFutHeldHigherLevelDoesNotHoldLowerLevels(t *testing.T) {
	for _, how := range []string{"paused", "rate", "parent-of-paused"} {
		t.Run(how, func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			var hi, hiTop *crew.Pool
			switch how {
			case "paused":
				hi = root.Sub(1, crew.WithPriority(3))
				hiTop = hi
			case "rate":
				hi = root.Sub(1, crew.WithPriority(3), crew.WithRateLimit(0.01, 1)) // no second token for 100 s
				hiTop = hi
			case "parent-of-paused":
				hiTop = root.Sub(2, crew.WithPriority(3))
				hi = hiTop.Sub(1)
			}
			lo := root.Sub(1, crew.WithPriority(-2))
			release := holdWorkers(t, plainPool{root}, 1, 0)
			if how != "rate" {
				hiTop.Pause()
			}
			var his []*crew.Future[int]
			for i := range 3 {
				his = append(his, crew.GoContext(context.Background(), hi, func(context.Context) (int, error) { return i, nil }))
			}
			var los []*crew.Future[int]
			for i := range 5 {
				los = append(los, crew.Go(lo, func() (int, error) { return i, nil }))
				los = append(los, crew.Go(root, func() (int, error) { return i, nil }))
			}
			release()
			deadline := time.After(10 * time.Second)
			for _, f := range los {
				select {
				case <-f.Done():
				case <-deadline:
					t.Fatalf("lower levels held back by a higher level that cannot start; root %+v hi %+v lo %+v",
						root.Stats(), hi.Stats(), lo.Stats())
				}
			}
			if how != "rate" {
				for _, f := range his {
					select {
					case <-f.Done():
						t.Fatal("a future of a paused sub-pool completed")
					default:
					}
				}
				hiTop.Resume()
			} else {
				hi.SetRateLimit(math.Inf(1), 1)
			}
			for i, f := range his {
				if v, err := afWait(t, "hi", f); err != nil || v != i {
					t.Errorf("hi future %d = %v, %v", i, v, err)
				}
			}
		})
	}
}

// TestAdvFutSubPoolSubmitsDoNotBlockOnTheParentsFullQueue: a sub-pool's queue is its own
// (unbounded by default); its workers wait in the parent's queue beyond the parent's bound.
// So Go, GoContext, Submit and TrySubmit on a sub-pool return at once while the parent's
// bounded queue is full, and everything runs once the parent frees up.
func TestAdvFutSubPoolSubmitsDoNotBlockOnTheParentsFullQueue(t *testing.T) {
	root := crew.New(1, crew.WithQueueSize(1))
	defer root.StopAndWait()
	sub := root.Sub(2)
	subsub := sub.Sub(1, crew.WithQueueSize(1), crew.WithNonBlocking())
	release := holdWorkers(t, plainPool{root}, 1, 1)
	var ran atomic.Int32
	var fs []*crew.Future[int]
	done := goRun(func() {
		for i := range 4 {
			fs = append(fs, crew.Go(sub, func() (int, error) { ran.Add(1); return i, nil }))
			fs = append(fs, crew.GoContext(context.Background(), sub, func(context.Context) (int, error) { ran.Add(1); return i, nil }))
			if err := sub.Submit(func() { ran.Add(1) }); err != nil {
				t.Errorf("sub.Submit = %v", err)
			}
			if !sub.TrySubmit(func() { ran.Add(1) }) {
				t.Errorf("sub.TrySubmit = false on an unbounded sub-pool")
			}
		}
		// subsub: one handed to its worker, one in its queue of one, then full
		fs = append(fs, crew.Go(subsub, func() (int, error) { ran.Add(1); return 0, nil }))
		fs = append(fs, crew.Go(subsub, func() (int, error) { ran.Add(1); return 1, nil }))
	})
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		release()
		t.Fatalf("submits to a sub-pool blocked on the parent's full queue; root %+v", root.Stats())
	}
	release()
	for i, f := range fs {
		if _, err := afWait(t, "future", f); err != nil {
			t.Errorf("future %d: %v", i, err)
		}
	}
	afQuiet(t, root, sub, subsub)
	if ran.Load() != 4*4+2 {
		t.Errorf("ran %d, want %d", ran.Load(), 4*4+2)
	}
	for _, p := range []*crew.Pool{root, sub, subsub} {
		idleIdentity(t, "pool", p.Stats())
	}
}

// TestAdvFutCompletedOverEveryEnding: Completed yields every future once, whatever ended it: a
// return, a panic, panic(nil), runtime.Goexit, a Cancel, a discard, a refusal, a skip (its
// context ended), StopNow; Done is closed for each, and Wait says how it ended.
func TestAdvFutCompletedOverEveryEnding(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(3), crew.WithOverflow(crew.DiscardOldest))
	release := holdWorkers(t, plainPool{p}, 1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	fs := []*crew.Future[int]{
		crew.Go(p, func() (int, error) { return 0, nil }),                                          // discarded by the 4th
		crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil }),               // skipped
		crew.GoContext(context.Background(), p, func(context.Context) (int, error) { panic(nil) }), // panic(nil)
		crew.Go(p, func() (int, error) { runtime.Goexit(); return 3, nil }),                        // Goexit
	}
	cancel()
	fs = append(fs, crew.GoContext(ctx, p, func(context.Context) (int, error) { return 4, nil })) // refused: ctx ended
	release()
	if _, err := afWait(t, "discarded", fs[0]); !errors.Is(err, crew.ErrDiscarded) {
		t.Errorf("discarded: %v", err)
	}
	p.Wait()
	p.Pause()
	fs = append(fs, crew.Go(p, func() (int, error) { return 5, nil }))                                             // StopNow
	fs = append(fs, crew.GoContext(context.Background(), p, func(context.Context) (int, error) { return 6, nil })) // canceled
	if !fs[6].Cancel() {
		t.Fatal("Cancel = false")
	}
	if back := p.StopNow(); len(back) != 0 {
		t.Errorf("StopNow handed back %d plain tasks, want none", len(back))
	}
	seen := map[*crew.Future[int]]int{}
	awaitReturn(t, "Completed", goRun(func() {
		for f := range crew.Completed(fs...) {
			seen[f]++
		}
	}))
	for i, f := range fs {
		if seen[f] != 1 {
			t.Errorf("future %d yielded %d times", i, seen[f])
		}
		select {
		case <-f.Done():
		default:
			t.Errorf("future %d: Done not closed after Completed yielded it", i)
		}
	}
	var pe *crew.PanicError
	checks := []func(error) bool{
		func(err error) bool { return errors.Is(err, crew.ErrDiscarded) },
		func(err error) bool { return errors.Is(err, context.Canceled) },
		func(err error) bool {
			return errors.As(err, &pe) && fmt.Sprint(pe.Value) == fmt.Sprint(panicNilValue())
		},
		func(err error) bool { return err != nil && !errors.As(err, &pe) },
		func(err error) bool { return errors.Is(err, context.Canceled) },
		func(err error) bool { return errors.Is(err, crew.ErrStopped) },
		func(err error) bool { return errors.Is(err, context.Canceled) },
	}
	for i, f := range fs {
		if _, err := f.Wait(); !checks[i](err) {
			t.Errorf("future %d: Wait error %v", i, err)
		}
	}
	awaitReturn(t, "StopAndWait", goRun(p.StopAndWait))
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Discarded != 1 || s.Returned != 1 || s.Skipped != 2 || s.Canceled != 1 {
		t.Errorf("stats %+v, want 1 discarded, 1 returned, 2 skipped, 1 canceled submit", s)
	}
}

// afWatch checks every snapshot of each pool until stop is closed: "Running+Waiting counts
// each accepted task that has not ended exactly once" (Stats.Waiting), no gauge is negative
// and no counter goes backwards. It returns a function that stops it and reports.
func afWatch(t *testing.T, pools ...*crew.Pool) (stop func()) {
	t.Helper()
	return afWatchLimit(t, false, pools...)
}

// afWatchLimit is afWatch that also checks, if limit is set, that Running never exceeds
// MaxWorkers (for pools whose limit does not change), and checks the histograms: their
// counts never go backwards and WaitTime.Count is never less than RunTime.Count.
func afWatchLimit(t *testing.T, limit bool, pools ...*crew.Pool) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var faults []string
	for i, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := crew.Stats{WaitTime: new(crew.Histogram), RunTime: new(crew.Histogram)}
			for {
				s := p.Stats()
				ended := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped
				var err string
				switch {
				case s.Running < 0 || s.Waiting < 0 || s.Idle < 0:
					err = "a negative gauge"
				case ended > s.Accepted:
					err = "more ended than accepted"
				case uint64(s.Running+s.Waiting) != s.Accepted-ended:
					err = fmt.Sprintf("Running+Waiting = %d, but %d accepted tasks have not ended", s.Running+s.Waiting, s.Accepted-ended)
				case limit && s.Running > s.MaxWorkers:
					err = "Running above MaxWorkers on a pool never resized"
				case s.WaitTime != nil && (s.WaitTime.Count < s.RunTime.Count ||
					s.WaitTime.Count < prev.WaitTime.Count || s.RunTime.Count < prev.RunTime.Count):
					err = "histogram counts went backwards, or RunTime counted more than WaitTime"
				case countersWentBack(s, prev):
					err = "a counter went backwards"
				}
				if err != "" {
					mu.Lock()
					faults = append(faults, fmt.Sprintf("pool %d: %s: %+v after %+v", i, err, s, prev))
					mu.Unlock()
					return
				}
				prev = s
				if prev.WaitTime == nil {
					prev.WaitTime, prev.RunTime = new(crew.Histogram), new(crew.Histogram)
				}
				select {
				case <-done:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, f := range faults {
			t.Error(f)
		}
	})
}

// TestAdvGrpAllJoinsErrorsInGoOrderWhateverRunsThem: a GroupAll group made inside a function
// (so its Wait runs its queued functions itself, newest first) on a pool with a bounded queue
// under DiscardOldest, with functions that fail, panic, are given nil, are dropped, and one
// given after Wait returned: Wait joins every error in the order of the Go calls, whatever
// order the functions ran or failed in.
func TestAdvGrpAllJoinsErrorsInGoOrderWhateverRunsThem(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(4), crew.WithOverflow(crew.DiscardOldest))
	defer p.StopAndWait()
	errAt := func(i int) error { return fmt.Errorf("error %d", i) }
	outer := crew.GoContext(context.Background(), p, func(ctx context.Context) ([]error, error) {
		g, _ := p.GroupAll(ctx)
		const n = 10
		for i := range n {
			switch {
			case i == 3:
				g.Go(nil) // ErrNilTask
			case i%3 == 1:
				g.Go(func(context.Context) error { panic(errAt(i)) })
			default:
				g.Go(func(context.Context) error { return errAt(i) })
			}
		}
		// 10 calls, 9 functions, a queue of 4 and this function on the only worker: the
		// first 5 functions were dropped as the last 4 came in (ErrDiscarded, in their
		// place), and the last 4 run in this function's slot, newest first.
		err := g.Wait()
		g.Go(func(context.Context) error { return errors.New("after Wait") })
		err2 := g.Wait()
		var list []error
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			list = u.Unwrap()
		}
		if !errors.Is(err2, context.Canceled) {
			return list, fmt.Errorf("a Go after Wait: second Wait = %v, want context.Canceled joined", err2)
		}
		return list, nil
	})
	list, err := afWait(t, "outer", outer)
	if err != nil {
		t.Fatal(err)
	}
	// Expected, in Go order: 0..2 dropped, 3 nil, 4..5 dropped (the first five functions: 0, 1,
	// 2, 4, 5), then 6, 7 (panic), 8, 9.
	want := []func(error) bool{
		func(e error) bool { return errors.Is(e, crew.ErrDiscarded) },
		func(e error) bool { return errors.Is(e, crew.ErrDiscarded) },
		func(e error) bool { return errors.Is(e, crew.ErrDiscarded) },
		func(e error) bool { return errors.Is(e, crew.ErrNilTask) },
		func(e error) bool { return errors.Is(e, crew.ErrDiscarded) },
		func(e error) bool { return errors.Is(e, crew.ErrDiscarded) },
		func(e error) bool { return e != nil && e.Error() == "error 6" },
		func(e error) bool {
			var pe *crew.PanicError
			return errors.As(e, &pe) && fmt.Sprint(pe.Value) == "error 7"
		},
		func(e error) bool { return e != nil && e.Error() == "error 8" },
		func(e error) bool { return e != nil && e.Error() == "error 9" },
	}
	if len(list) != len(want) {
		t.Fatalf("Wait joined %d errors, want %d: %v", len(list), len(want), list)
	}
	for i, ok := range want {
		if !ok(list[i]) {
			t.Errorf("error %d of the join = %v; joined %v", i, list[i], list)
		}
	}
	p.Wait()
	s := p.Stats()
	idleIdentity(t, "pool", s)
	if s.Discarded != 5 {
		t.Errorf("Discarded = %d, want 5", s.Discarded)
	}
}

// TestAdvFutLimitHoldsUnderOverloadPausesAndHelpingWaits: a tree whose limits never change (a
// root under CallerRuns with a bounded queue, a sub-pool at a level with a rate limit, its
// sub-pool under DiscardOldest), hooks and histograms on each, while pools are paused and
// resumed, the rates change, futures are canceled, and functions wait for futures and groups
// they made (waits that help): in no snapshot does Running exceed MaxWorkers, every
// snapshot accounts for every accepted task, and once quiet the histograms count exactly what
// the hooks saw start and finish.
func TestAdvFutLimitHoldsUnderOverloadPausesAndHelpingWaits(t *testing.T) {
	hr, hs, hss := new(afHooks), new(afHooks), new(afHooks)
	root := crew.New(3, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns), crew.WithHooks(hr.hooks()), crew.WithLatencyHistograms())
	defer root.StopAndWait()
	// DiscardOldest sits on the leaf: on a pool with sub-pools it trips the fault of
	// TestAdvFutHelpingSubmitBehindASubPoolWorkerUnderDiscardOldest.
	sub := root.Sub(2, crew.WithPriority(1), crew.WithQueueSize(3), crew.WithRateLimit(20000, 2),
		crew.WithHooks(hs.hooks()), crew.WithLatencyHistograms())
	subsub := sub.Sub(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest), crew.WithHooks(hss.hooks()), crew.WithLatencyHistograms())
	pools := []*crew.Pool{root, sub, subsub}
	unwatch := afWatchLimit(t, true, pools...)
	defer unwatch()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pauseStorm(&wg, stop, 150*time.Microsecond, pools...)
	repeatUntil(&wg, stop, func() {
		sub.SetRateLimit(float64(5000+rand.IntN(30000)), 1+rand.IntN(3))
		time.Sleep(300 * time.Microsecond)
	})
	var ran, canceled, failed atomic.Int64
	storm := func() {
		together(4, 40, func(c, i int) {
			p := pools[(c+i)%3]
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				ran.Add(1)
				// a nested future on the same pool and a group on the pool above (or the root)
				inner := crew.GoContext(ctx, p, func(context.Context) (int, error) { ran.Add(1); return 1, nil })
				g, _ := pools[max(0, (c+i)%3-1)].Group(ctx)
				for range 2 {
					g.Go(func(context.Context) error { ran.Add(1); return nil })
				}
				v, err := inner.Wait()
				if gerr := g.Wait(); err == nil {
					err = gerr
				}
				return v + 1, err
			})
			if i%4 == 0 && f.Cancel() {
				canceled.Add(1)
			}
			select {
			case <-f.Done():
			case <-time.After(10 * time.Second):
				t.Errorf("a future did not complete; root %+v sub %+v subsub %+v", root.Stats(), sub.Stats(), subsub.Stats())
				return
			}
			if _, err := f.Wait(); err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, crew.ErrDiscarded) {
					t.Errorf("future: %v", err)
				}
				failed.Add(1)
			}
		})
	}
	awaitReturn(t, "submitters", goRun(storm))
	close(stop)
	wg.Wait()
	for _, p := range pools {
		p.Resume()
	}
	// root.Wait does not wait for a sub-pool's tasks that its rate limit holds in its queue
	afQuiet(t, pools...)
	unwatch()
	for i, p := range pools {
		h := []*afHooks{hr, hs, hss}[i]
		s := p.Stats()
		idleIdentity(t, fmt.Sprint("pool ", i), s)
		if h.started.Load() != h.finished.Load() || int64(s.WaitTime.Count) != h.started.Load() || int64(s.RunTime.Count) != h.finished.Load() {
			t.Errorf("pool %d: hooks started %d finished %d, histograms %d, %d", i, h.started.Load(), h.finished.Load(), s.WaitTime.Count, s.RunTime.Count)
		}
		if int64(s.Discarded) != h.discarded.Load() {
			t.Errorf("pool %d: Discarded %d, hooks %d", i, s.Discarded, h.discarded.Load())
		}
	}
	t.Logf("ran %d, canceled %d, failed %d; root %+v", ran.Load(), canceled.Load(), failed.Load(), root.Stats())
}

// TestAdvFutHelpingSubmitBehindASubPoolWorkerUnderDiscardOldest: "Waits that help" promise
// that a function submitting with the context crew gave it into its own pool's full bounded
// queue (GoContext, Group.Go, Results.Go, SubmitContext) runs the function itself instead of
// blocking, so fork/join completes on New(1) with a queue of one. Under DiscardOldest, when
// the oldest queued task is a sub-pool's worker (never dropped), the submit "waits for room as
// under Block": it must then run on the caller as it does under Block, since the caller holds
// the only slot that could free the room.
func TestAdvFutHelpingSubmitBehindASubPoolWorkerUnderDiscardOldest(t *testing.T) {
	doors := []struct {
		name string
		use  func(ctx context.Context, p *crew.Pool) error
	}{
		{"GoContext", func(ctx context.Context, p *crew.Pool) error {
			_, err := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil }).Wait()
			return err
		}},
		{"Group.Go", func(ctx context.Context, p *crew.Pool) error {
			g, _ := p.Group(ctx)
			g.Go(func(context.Context) error { return nil })
			return g.Wait()
		}},
		{"Results.Go", func(ctx context.Context, p *crew.Pool) error {
			r, _ := crew.NewResults[int](ctx, p)
			r.Go(func(context.Context) (int, error) { return 1, nil })
			_, err := r.Wait()
			return err
		}},
		{"SubmitContext", func(ctx context.Context, p *crew.Pool) error {
			done := make(chan struct{})
			if err := p.SubmitContext(ctx, func() { close(done) }); err != nil {
				return err
			}
			<-done // run on the caller, or by a worker: the only one is ours
			return nil
		}},
	}
	for _, o := range []crew.Overflow{crew.Block, crew.DiscardOldest} {
		for _, d := range doors {
			t.Run(fmt.Sprintf("%s/overflow=%d", d.name, o), func(t *testing.T) {
				root := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(o))
				defer root.StopAndWait()
				sub := root.Sub(1)
				started, queued := make(chan struct{}), make(chan struct{})
				f := crew.GoContext(context.Background(), root, func(ctx context.Context) (int, error) {
					close(started)
					<-queued
					return 0, d.use(ctx, root)
				})
				<-started
				must(t, sub.Submit(func() {})) // sub's worker fills root's queue of one
				close(queued)
				select {
				case <-f.Done():
					if _, err := f.Wait(); err != nil {
						t.Errorf("%s = %v", d.name, err)
					}
				case <-time.After(time.Second):
					s := root.Stats()
					root.Stop() // frees the blocked submit, with ErrStopped
					t.Fatalf("%s from a function of a New(1) into its full queue, whose oldest task is a sub-pool's worker, blocked for 1 s; root %+v", d.name, s)
				}
			})
		}
	}
}

// TestAdvFutForkJoinOnAnAdaptivePoolWithResizeStorm: nested GoContext futures and Results
// made inside functions of an adaptive pool and of its adaptive sub-pool (the limits move on
// their own and under Resize), with functions that sleep like calls to a resource: every
// wait completes, values come back in submission order, and the Stats add up.
func TestAdvFutForkJoinOnAnAdaptivePoolWithResizeStorm(t *testing.T) {
	root := crew.New(6, crew.WithAdaptiveLimit(1), crew.WithQueueSize(2), crew.WithLatencyHistograms())
	defer root.StopAndWait()
	sub := root.Sub(3, crew.WithAdaptiveLimit(1), crew.WithQueueSize(1))
	unwatch := afWatch(t, root, sub)
	defer unwatch()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	repeatUntil(&wg, stop, func() {
		root.Resize(1 + rand.IntN(6))
		sub.Resize(1 + rand.IntN(3))
		time.Sleep(300 * time.Microsecond)
	})
	var tree func(ctx context.Context, p *crew.Pool, d int) (int, error)
	tree = func(ctx context.Context, p *crew.Pool, d int) (int, error) {
		time.Sleep(50 * time.Microsecond)
		if d == 0 {
			return 1, nil
		}
		r, _ := crew.NewResults[int](ctx, p)
		for k := range 3 {
			r.Go(func(ctx context.Context) (int, error) {
				if k == 0 {
					return crew.GoContext(ctx, p, func(ctx context.Context) (int, error) { return tree(ctx, p, d-1) }).Wait()
				}
				return tree(ctx, p, d-1)
			})
		}
		vals, err := r.Wait()
		sum := 1
		for _, v := range vals {
			sum += v
		}
		return sum, err
	}
	var fs []*crew.Future[int]
	for i := range 6 {
		p := []*crew.Pool{root, sub}[i%2]
		fs = append(fs, crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) { return tree(ctx, p, 4) }))
	}
	for i, f := range fs {
		v, err := afWait(t, "tree", f)
		if err != nil || v != 121 {
			t.Errorf("tree %d = %d, %v; want 121", i, v, err)
		}
	}
	close(stop)
	wg.Wait()
	afQuiet(t, root, sub)
	unwatch()
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "sub", sub.Stats())
}

// TestAdvFutDiscardOldestBesideAHigherLevelSubPool: under DiscardOldest a submit into a full
// queue drops the longest-waiting task of the lowest level whose longest-waiting task is not a
// sub-pool's worker (never dropped). With a sub-pool at any level, whose worker waits in the
// parent's queue beside an older future of the parent, a Go on the parent must drop that
// future (ErrDiscarded) and return at once.
func TestAdvFutDiscardOldestBesideAHigherLevelSubPool(t *testing.T) {
	for _, level := range []int{-1, 0, 1} {
		t.Run(fmt.Sprint("level=", level), func(t *testing.T) {
			root := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest))
			defer root.StopAndWait()
			sub := root.Sub(1, crew.WithPriority(level))
			release := holdWorkers(t, plainPool{root}, 1, 0)
			defer release()
			old := crew.Go(root, func() (int, error) { return 1, nil }) // the oldest waiting
			var subRan atomic.Int32
			must(t, sub.Submit(func() { subRan.Add(1) })) // its worker waits in root's queue: full
			var next *crew.Future[int]
			done := goRun(func() { next = crew.Go(root, func() (int, error) { return 2, nil }) })
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				s := root.Stats()
				release()
				<-done
				t.Fatalf("Go blocked on a full DiscardOldest queue whose oldest task is a future, not the sub-pool's worker; root %+v", s)
			}
			if _, err := afWait(t, "old", old); !errors.Is(err, crew.ErrDiscarded) {
				t.Errorf("oldest future: Wait = %v, want ErrDiscarded", err)
			}
			release()
			if v, err := afWait(t, "next", next); err != nil || v != 2 {
				t.Errorf("next future: %v, %v", v, err)
			}
			root.Wait()
			if subRan.Load() != 1 {
				t.Errorf("the sub-pool's task ran %d times", subRan.Load())
			}
			idleIdentity(t, "root", root.Stats())
		})
	}
}

// TestAdvFutDiscardOldestWaitsWhenEveryLevelKeepsItsHead: when the only tasks queued in a full
// DiscardOldest queue are sub-pools' workers, at a level above the pool's own and below it,
// none is dropped: the submit waits for room as under Block, and every task runs once.
func TestAdvFutDiscardOldestWaitsWhenEveryLevelKeepsItsHead(t *testing.T) {
	root := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest))
	defer root.StopAndWait()
	high := root.Sub(1, crew.WithPriority(1))
	low := root.Sub(1, crew.WithPriority(-1))
	release := holdWorkers(t, plainPool{root}, 1, 0)
	defer release()
	var ran atomic.Int32
	must(t, high.Submit(func() { ran.Add(1) }))
	must(t, low.Submit(func() { ran.Add(1) }))
	if s := root.Stats(); s.Waiting != 2 {
		t.Fatalf("root Waiting = %d, want the two sub-pools' workers", s.Waiting)
	}
	done := goRun(func() { must(t, root.Submit(func() { ran.Add(1) })) })
	select {
	case <-done:
		t.Fatal("the submit returned while the queue held only sub-pools' workers and no room")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the submit did not return once room was made")
	}
	root.Wait()
	high.Wait()
	low.Wait()
	if n := ran.Load(); n != 3 {
		t.Errorf("%d of 3 tasks ran", n)
	}
	if s := root.Stats(); s.Discarded != 0 {
		t.Errorf("root Discarded = %d, want 0", s.Discarded)
	}
	idleIdentity(t, "root", root.Stats())
	idleIdentity(t, "high", high.Stats())
	idleIdentity(t, "low", low.Stats())
}
