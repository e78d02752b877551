package crew_test

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// adv6Seqs are the two mapped sequences, for tests that attack both.
var adv6Seqs = []struct {
	name    string
	ordered bool
	seq     func(context.Context, *crew.Pool, iter.Seq[int], func(context.Context, int) (int, error)) iter.Seq2[int, error]
}{
	{"MapSeq", true, crew.MapSeq[int, int]},
	{"MapSeqUnordered", false, crew.MapSeqUnordered[int, int]},
}

// adv6Bounded runs f on its own goroutine and fails the test unless it returns within 10 s.
func adv6Bounded(t *testing.T, what string, f func()) {
	t.Helper()
	awaitReturn(t, what, goRun(f))
}

// adv6Ranging is a range over a mapped sequence on a goroutine of its own, keeping what it
// yields.
type adv6Ranging struct {
	vals []int
	errs []error
	done <-chan struct{}
}

// adv6Range ranges over seq on a goroutine of its own, keeping the values and the failures
// it yields; read them after wait.
func adv6Range(seq iter.Seq2[int, error]) *adv6Ranging {
	r := &adv6Ranging{}
	r.done = goRun(func() {
		for v, err := range seq {
			if err != nil {
				r.errs = append(r.errs, err)
			} else {
				r.vals = append(r.vals, v)
			}
		}
	})
	return r
}

// wait fails t unless the range ends within 10 s.
func (r *adv6Ranging) wait(t *testing.T) {
	t.Helper()
	awaitReturn(t, "the range to end", r.done)
}

// adv6RangeAll ranges over seq, failing t unless the range ends within 10 s having yielded
// no failure and, when ordered, the values 0, 1, 2, ... in that order. It calls each with
// every value yielded and the count of values yielded so far, that one included, and returns
// the count.
func adv6RangeAll(t *testing.T, ordered bool, seq iter.Seq2[int, error], each func(v, n int)) int {
	t.Helper()
	next := 0
	adv6Bounded(t, "range", func() {
		for v, err := range seq {
			if err != nil {
				t.Errorf("failure %v", err)
				return
			}
			if ordered && v != next {
				t.Errorf("got %d, want %d", v, next)
			}
			next++
			each(v, next)
		}
	})
	return next
}

// adv6HoldFirst returns a function for a range whose first call closes first and then waits
// for release, and the count of the calls made.
func adv6HoldFirst(release <-chan struct{}) (fn func(context.Context, int) (int, error), first <-chan struct{}, calls *atomic.Int64) {
	firstc := make(chan struct{})
	calls = new(atomic.Int64)
	return func(_ context.Context, v int) (int, error) {
		if calls.Add(1) == 1 {
			close(firstc)
			<-release
		}
		return v, nil
	}, firstc, calls
}

// Breaking out of a range leaves no call running when the range statement ends, and no call
// of fn starts after it.
func TestAdv6StrmBreakLeavesNoCallRunningOrStarting(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(4)
			defer p.StopAndWait()
			var running, started atomic.Int64
			fn := func(ctx context.Context, v int) (int, error) {
				started.Add(1)
				running.Add(1)
				defer running.Add(-1)
				if v > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
				}
				return v, nil
			}
			adv6Bounded(t, "range", func() {
				for range m.seq(context.Background(), p, countTo(1000), fn) {
					break
				}
			})
			if n := running.Load(); n != 0 {
				t.Fatalf("%d calls still running after the range statement ended", n)
			}
			after := started.Load()
			p.Wait()
			if n := started.Load(); n != after {
				t.Fatalf("%d calls started after the range ended (had %d)", n-after, after)
			}
			if after > 5 {
				t.Fatalf("%d calls started, more than W+1", after)
			}
		})
	}
}

// A runtime.Goexit in the input sequence, or in the loop body, ends the range with no call
// still running.
func TestAdv6StrmGoexitInSequenceOrBodyLeavesNoCallRunning(t *testing.T) {
	for _, m := range adv6Seqs {
		for _, where := range []string{"in", "body"} {
			t.Run(m.name+"/"+where, func(t *testing.T) {
				p := crew.New(3)
				defer p.StopAndWait()
				var running atomic.Int64
				fn := func(ctx context.Context, v int) (int, error) {
					running.Add(1)
					defer running.Add(-1)
					if v > 0 {
						<-ctx.Done()
					}
					return v, nil
				}
				in := func(yield func(int) bool) {
					for i := range 100 {
						if where == "in" && i == 3 {
							runtime.Goexit()
						}
						if !yield(i) {
							return
						}
					}
				}
				var atEnd atomic.Int64
				atEnd.Store(-1)
				adv6Bounded(t, "range", func() {
					defer func() { atEnd.Store(running.Load()) }()
					for v, err := range m.seq(context.Background(), p, in, fn) {
						if err != nil {
							return
						}
						if where == "body" && v == 0 {
							runtime.Goexit()
						}
					}
				})
				if n := atEnd.Load(); n != 0 {
					t.Fatalf("%d calls running when the range statement ended", n)
				}
			})
		}
	}
}

// A call that panics with nil, or calls runtime.Goexit, is a failure yielded once, after the
// results before it; neither reaches the panic handler.
func TestAdv6StrmPanicNilAndGoexitAreYieldedAsFailures(t *testing.T) {
	for _, m := range adv6Seqs {
		for _, kind := range []string{"panicnil", "goexit"} {
			t.Run(m.name+"/"+kind, func(t *testing.T) {
				var handled atomic.Int64
				p := crew.New(2, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }))
				defer p.StopAndWait()
				fn := func(_ context.Context, v int) (int, error) {
					if v == 2 {
						if kind == "goexit" {
							runtime.Goexit()
						}
						panic(nil)
					}
					return v, nil
				}
				var got []int
				var fail error
				fails := 0
				adv6Bounded(t, "range", func() {
					for v, err := range m.seq(context.Background(), p, countTo(5), fn) {
						if err != nil {
							fail = err
							fails++
							continue
						}
						got = append(got, v)
					}
				})
				// panic(nil) is a *PanicError; a Goexit is a failure of its own (the package
				// reports it as an error naming Goexit, never as a panic).
				var pe *crew.PanicError
				if fails != 1 || errors.As(fail, &pe) != (kind == "panicnil") {
					t.Fatalf("failures %d, last %v (%T)", fails, fail, fail)
				}
				if m.ordered && (len(got) != 2 || got[0] != 0 || got[1] != 1) {
					t.Fatalf("MapSeq yielded %v before the failure, want [0 1]", got)
				}
				if n := handled.Load(); n != 0 {
					t.Fatalf("panic handler called %d times", n)
				}
			})
		}
	}
}

// ForEach and Map report a function's runtime.Goexit or panic(nil) as an error, and return.
func TestAdv6StrmForEachAndMapReportGoexitAndPanicNil(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	for _, kind := range []string{"panicnil", "goexit"} {
		bad := func(v int) {
			if v == 3 {
				if kind == "goexit" {
					runtime.Goexit()
				}
				panic(nil)
			}
		}
		var err error
		adv6Bounded(t, "ForEach", func() {
			err = crew.ForEach(context.Background(), p, countTo(10), func(_ context.Context, v int) error {
				bad(v)
				return nil
			})
		})
		if err == nil {
			t.Fatalf("%s: ForEach returned nil", kind)
		}
		var out []int
		adv6Bounded(t, "Map", func() {
			out, err = crew.Map(context.Background(), p, []int{0, 1, 2, 3, 4}, func(_ context.Context, v int) (int, error) {
				bad(v)
				return v + 1, nil
			})
		})
		if err == nil || len(out) != 5 || out[3] != 0 {
			t.Fatalf("%s: Map returned %v, %v", kind, out, err)
		}
	}
}

// A MapSeq range on a sub-pool of a sub-pool with priority levels yields every value in the
// order of in, while another level keeps the root busy.
func TestAdv6StrmMapSeqOnLeveledSubSubPoolKeepsOrder(t *testing.T) {
	root := crew.New(2)
	defer root.StopAndWait()
	hi := root.Sub(2, crew.WithPriority(1))
	lo := root.Sub(2, crew.WithPriority(-1), crew.WithQueueSize(8))
	leaf := hi.Sub(2, crew.WithPriority(2))
	other := hi.Sub(1, crew.WithQueueSize(8))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := lo.TrySubmit(func() { time.Sleep(100 * time.Microsecond) })
				b := other.TrySubmit(func() {})
				if !a && !b {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}
	n := 300
	if testing.Short() {
		n = 100
	}
	want := 0
	adv6Bounded(t, "range", func() {
		for v, err := range crew.MapSeq(context.Background(), leaf, countTo(n), func(_ context.Context, v int) (int, error) {
			if v%7 == 0 {
				runtime.Gosched()
			}
			return v * 2, nil
		}) {
			if err != nil || v != want*2 {
				t.Errorf("got (%d, %v), want (%d, nil)", v, err, want*2)
				break
			}
			want++
		}
	})
	close(stop)
	wg.Wait()
	if want != n {
		t.Fatalf("yielded %d values, want %d", want, n)
	}
}

// adv6Fill occupies p's workers and fills its bounded queue with plain tasks; the returned
// function frees them.
func adv6Fill(t *testing.T, p *crew.Pool, workers, queued int) func() {
	t.Helper()
	release := make(chan struct{})
	var startedWG sync.WaitGroup
	startedWG.Add(workers)
	for range workers {
		must(t, p.Submit(func() { startedWG.Done(); <-release }))
	}
	startedWG.Wait()
	for range queued {
		if !p.TrySubmit(func() { <-release }) {
			t.Fatal("queue full too early")
		}
	}
	var once sync.Once
	return func() { once.Do(func() { close(release) }) }
}

// A range on a pool whose bounded queue is full behaves as each overflow policy says: Reject
// yields ErrQueueFull as the failure of the value refused, CallerRuns runs the calls on the
// ranging goroutine, DiscardOldest accepts and the range ends, Block waits for room.
func TestAdv6StrmRangeOnFullQueueFollowsOverflowPolicy(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name+"/Reject", func(t *testing.T) {
			p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.Reject))
			defer p.StopAndWait()
			free := adv6Fill(t, p, 2, 2)
			defer free()
			var errs []error
			calls := 0
			adv6Bounded(t, "range", func() {
				for _, err := range m.seq(context.Background(), p, countTo(5), func(_ context.Context, v int) (int, error) {
					calls++
					return v, nil
				}) {
					errs = append(errs, err)
				}
			})
			if len(errs) != 1 || !errors.Is(errs[0], crew.ErrQueueFull) {
				t.Fatalf("yielded %v, want one ErrQueueFull", errs)
			}
			free()
			p.Wait()
			if calls != 0 {
				t.Fatalf("%d calls ran for refused values", calls)
			}
		})
		t.Run(m.name+"/CallerRuns", func(t *testing.T) {
			p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.CallerRuns))
			defer p.StopAndWait()
			free := adv6Fill(t, p, 2, 2)
			defer free()
			sum := 0
			adv6RangeAll(t, false, m.seq(context.Background(), p, countTo(10), identity), func(v, _ int) { sum += v })
			if sum != 45 {
				t.Fatalf("sum %d, want 45", sum)
			}
		})
		t.Run(m.name+"/DiscardOldest", func(t *testing.T) {
			var dropped atomic.Int64
			p := crew.New(2, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
				crew.WithDiscardHandler(func(any) { dropped.Add(1) }))
			defer p.StopAndWait()
			free := adv6Fill(t, p, 2, 2)
			r := adv6Range(m.seq(context.Background(), p, countTo(6), identity))
			awaitStats(t, p, "the queued plain tasks dropped", func(s crew.Stats) bool { return s.Discarded >= 2 })
			free()
			r.wait(t)
			for _, err := range r.errs {
				if !errors.Is(err, crew.ErrDiscarded) {
					t.Fatalf("failure %v, want ErrDiscarded", err)
				}
			}
			if len(r.errs) > 1 {
				t.Fatalf("%d failures yielded, want at most one", len(r.errs))
			}
			if len(r.errs) == 0 && len(r.vals) != 6 {
				t.Fatalf("yielded %v and no failure", r.vals)
			}
		})
		t.Run(m.name+"/Block", func(t *testing.T) {
			p := crew.New(2, crew.WithQueueSize(2))
			defer p.StopAndWait()
			free := adv6Fill(t, p, 2, 2)
			r := adv6Range(m.seq(context.Background(), p, countTo(10), identity))
			stillBlocked(t, "the range on a full queue", r.done)
			free()
			r.wait(t)
			sum := 0
			for _, v := range r.vals {
				sum += v
			}
			if len(r.errs) != 0 || sum != 45 {
				t.Fatalf("sum %d and failures %v, want 45 and none", sum, r.errs)
			}
		})
	}
}

// A range whose pool is paused mid-range yields every result once the pool is resumed, in the
// order of in for MapSeq.
func TestAdv6StrmPauseResumeMidRangeYieldsEverything(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(3)
			defer p.StopAndWait()
			n := 60
			paused := make(chan struct{})
			resumed := make(chan struct{})
			go func() {
				<-paused
				time.Sleep(5 * time.Millisecond)
				p.Resume()
				close(resumed)
			}()
			seen := make([]bool, n)
			adv6RangeAll(t, m.ordered, m.seq(context.Background(), p, countTo(n), identity), func(v, yielded int) {
				seen[v] = true
				if yielded == 10 {
					p.Pause()
					close(paused)
				}
			})
			<-resumed
			for i, ok := range seen {
				if !ok {
					t.Fatalf("value %d never yielded", i)
				}
			}
		})
	}
}

// A context that ends while the pool is paused: the calls still queued are skipped (none
// runs, also after Resume), and the range yields ctx.Err() alone and ends once the pool is
// resumed (a range, like Pool.Wait, waits for paused work).
func TestAdv6StrmContextEndingWhilePausedSkipsQueuedCalls(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(2)
			defer p.StopAndWait()
			p.Pause()
			defer p.Resume()
			ctx, cancel := context.WithCancel(context.Background())
			var calls atomic.Int64
			var errs []error
			go func() {
				awaitStats(t, p, "calls queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
				cancel()
				time.Sleep(5 * time.Millisecond)
				p.Resume()
			}()
			adv6Bounded(t, "range", func() {
				for _, err := range m.seq(ctx, p, countTo(10), func(_ context.Context, v int) (int, error) {
					calls.Add(1)
					return v, nil
				}) {
					errs = append(errs, err)
				}
			})
			if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
				t.Fatalf("yielded %v, want [context.Canceled]", errs)
			}
			p.Resume()
			p.Wait()
			if n := calls.Load(); n != 0 {
				t.Fatalf("%d calls ran after the range ended", n)
			}
		})
	}
}

// Resize to 1 in the middle of a range loses no value and keeps MapSeq's order.
func TestAdv6StrmResizeToOneMidRange(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(4)
			defer p.StopAndWait()
			n := 80
			sum := 0
			seq := m.seq(context.Background(), p, countTo(n), func(_ context.Context, v int) (int, error) {
				if v%5 == 0 {
					time.Sleep(time.Millisecond)
				}
				return v, nil
			})
			next := adv6RangeAll(t, m.ordered, seq, func(v, yielded int) {
				sum += v
				if yielded == 8 {
					p.Resize(1)
				}
			})
			if next != n || sum != n*(n-1)/2 {
				t.Fatalf("yielded %d values summing to %d", next, sum)
			}
			if s := p.Stats(); s.MaxWorkers != 1 {
				t.Fatalf("MaxWorkers %d", s.MaxWorkers)
			}
		})
	}
}

// StopNow mid-range: the calls it takes out fail with ErrStopped, the range yields that
// failure (after the results before it, for MapSeq) and ends; no call starts afterwards.
func TestAdv6StrmStopNowMidRangeYieldsErrStopped(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(2)
			release := make(chan struct{})
			blockStarted := make(chan struct{})
			must(t, p.Submit(func() { close(blockStarted); <-release }))
			<-blockStarted
			fn, first, started := adv6HoldFirst(release)
			r := adv6Range(m.seq(context.Background(), p, countTo(20), fn))
			<-first
			awaitStats(t, p, "a call queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
			if out := p.StopNow(); len(out) != 0 {
				t.Errorf("StopNow handed back %d plain tasks", len(out))
			}
			close(release)
			r.wait(t)
			p.StopAndWait()
			if len(r.errs) != 1 || !errors.Is(r.errs[0], crew.ErrStopped) {
				t.Fatalf("yielded values %v, failures %v; want one ErrStopped", r.vals, r.errs)
			}
			if m.ordered && (len(r.vals) != 1 || r.vals[0] != 0) {
				t.Fatalf("MapSeq yielded %v before ErrStopped, want [0]", r.vals)
			}
			if n := started.Load(); n != 1 {
				t.Fatalf("%d calls ran, want 1", n)
			}
		})
	}
}

// A Shutdown of the pool that gives up mid-range ends the calls' context with ErrStopped as
// its cause; the range yields the results of the calls made, then ErrStopped.
func TestAdv6StrmShutdownGivingUpMidRangeYieldsErrStopped(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(2)
			var causes []error
			var mu sync.Mutex
			running := make(chan struct{}, 100)
			r := adv6Range(m.seq(context.Background(), p, countTo(1000), func(ctx context.Context, v int) (int, error) {
				running <- struct{}{}
				<-ctx.Done()
				mu.Lock()
				causes = append(causes, context.Cause(ctx))
				mu.Unlock()
				return v, nil
			}))
			<-running
			<-running
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			err := p.Shutdown(sctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown = %v", err)
			}
			r.wait(t)
			p.StopAndWait()
			if len(r.errs) != 1 || !errors.Is(r.errs[0], crew.ErrStopped) {
				t.Fatalf("yielded %d values and failures %v; want ErrStopped last", len(r.vals), r.errs)
			}
			if len(r.vals) != 2 {
				t.Fatalf("yielded %d values, want the 2 calls made", len(r.vals))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, c := range causes {
				if !errors.Is(c, crew.ErrStopped) {
					t.Fatalf("a call's context ended with cause %v, want ErrStopped", c)
				}
			}
		})
	}
}

// ctx ending mid-range with every call made already running: the calls' context carries
// ctx's cause, their results are yielded, and ctx.Err() comes last.
func TestAdv6StrmContextEndingMidRangeYieldsCtxErrLast(t *testing.T) {
	cause := errors.New("adv6 cause")
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(2)
			defer p.StopAndWait()
			ctx, cancel := context.WithCancelCause(context.Background())
			running := make(chan struct{}, 2)
			causes := make(chan error, 2)
			go func() {
				<-running
				<-running
				cancel(cause)
			}()
			var errs []error
			got := 0
			adv6Bounded(t, "range", func() {
				for _, err := range m.seq(ctx, p, countTo(1000), func(cctx context.Context, v int) (int, error) {
					running <- struct{}{}
					<-cctx.Done()
					causes <- context.Cause(cctx)
					return v, nil
				}) {
					if err != nil {
						errs = append(errs, err)
					} else {
						got++
					}
				}
			})
			if len(errs) != 1 || errs[0] != context.Canceled || got != 2 {
				t.Fatalf("yielded %d values and failures %v, want 2 and [context.Canceled]", got, errs)
			}
			for range 2 {
				if c := <-causes; c != cause {
					t.Fatalf("a call's context cause %v, want %v", c, cause)
				}
			}
		})
	}
}

// ctx ending mid-range, with a cause, while a call is still queued: that call is skipped and
// fails with ctx's cause (context.Cause), which MapSeq, MapSeqUnordered and ForEach report, as
// their docs say.
func TestAdv6StrmContextEndingWithACallQueuedYieldsTheCause(t *testing.T) {
	cause := errors.New("adv6 cause")
	for _, name := range []string{"MapSeq", "MapSeqUnordered", "ForEach"} {
		t.Run(name, func(t *testing.T) {
			p := crew.New(2)
			defer p.StopAndWait()
			release := make(chan struct{})
			started := make(chan struct{})
			must(t, p.Submit(func() { close(started); <-release })) // hold one worker
			defer close(release)
			<-started
			ctx, cancel := context.WithCancelCause(context.Background())
			fn := func(_ context.Context, v int) (int, error) {
				if v == 0 { // value 1 waits in the queue behind the held worker
					awaitStats(t, p, "value 1 queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
					cancel(cause)
				}
				return v, nil
			}
			var last error
			adv6Bounded(t, name, func() {
				switch name {
				case "MapSeq", "MapSeqUnordered":
					seq := crew.MapSeq[int, int]
					if name == "MapSeqUnordered" {
						seq = crew.MapSeqUnordered[int, int]
					}
					for _, err := range seq(ctx, p, countTo(10), fn) {
						if err != nil {
							last = err
						}
					}
				case "ForEach":
					last = crew.ForEach(ctx, p, countTo(10), func(ctx context.Context, v int) error {
						_, err := fn(ctx, v)
						return err
					})
				}
			})
			if last != cause {
				t.Fatalf("%s reported %v, want ctx's cause, as a call skipped then fails with", name, last)
			}
		})
	}
}

// Ranges, ForEach, Map and Completed made inside a function of a pool of one worker, from the
// context crew gave it, complete: their waits run their own calls. The same holds for a range
// on the root made by a function of a sub-pool of a sub-pool.
func TestAdv6StrmNestedRangesOnOneWorkerComplete(t *testing.T) {
	root := crew.New(1)
	defer root.StopAndWait()
	leaf := root.Sub(1).Sub(1, crew.WithPriority(1))
	for _, p := range []*crew.Pool{root, leaf} {
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			sum := 0
			for _, m := range adv6Seqs {
				for v, err := range m.seq(ctx, root, countTo(10), func(ctx context.Context, v int) (int, error) {
					// A range inside a call of the range.
					inner := 0
					for w, err := range crew.MapSeq(ctx, root, countTo(3), func(_ context.Context, w int) (int, error) { return w, nil }) {
						if err != nil {
							return 0, err
						}
						inner += w
					}
					return v + inner - 3, nil
				}) {
					if err != nil {
						return 0, err
					}
					sum += v
				}
			}
			if err := crew.ForEach(ctx, root, countTo(5), func(context.Context, int) error { return nil }); err != nil {
				return 0, err
			}
			out, err := crew.Map(ctx, root, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) { return v, nil })
			if err != nil || out[2] != 3 {
				return 0, errors.New("map failed")
			}
			var fs []*crew.Future[int]
			for i := range 4 {
				fs = append(fs, crew.GoContext(ctx, root, func(context.Context) (int, error) { return i, nil }))
			}
			for f := range crew.Completed(fs...) {
				v, _ := f.Wait()
				sum += v
			}
			return sum, nil
		})
		select {
		case <-f.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("nested waits did not complete on one worker")
		}
		if v, err := f.Wait(); err != nil || v != 2*45+6 {
			t.Fatalf("Wait = %d, %v; want %d", v, err, 2*45+6)
		}
	}
}

// Several ranges over Completed of the same futures, at the same time, each yield every future
// exactly once; one that breaks early disturbs none of the others.
func TestAdv6StrmConcurrentCompletedRangesEachYieldEveryFuture(t *testing.T) {
	p := crew.New(3)
	defer p.StopAndWait()
	const n = 20
	gate := make(chan struct{})
	fs := make([]*crew.Future[int], n)
	for i := range n {
		fs[i] = crew.Go(p, func() (int, error) {
			<-gate
			return i, nil
		})
	}
	const ranges = 6
	var wg sync.WaitGroup
	counts := make([][n]int, ranges)
	for r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := 0
			for f := range crew.Completed(fs...) {
				select {
				case <-f.Done():
				default:
					t.Errorf("range %d yielded a future not done", r)
				}
				v, _ := f.Wait()
				counts[r][v]++
				k++
				if r == 0 && k == 3 {
					break
				}
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	close(gate)
	adv6Bounded(t, "ranges over Completed", wg.Wait)
	for r := 1; r < ranges; r++ {
		for i, c := range counts[r] {
			if c != 1 {
				t.Fatalf("range %d yielded future %d %d times", r, i, c)
			}
		}
	}
	// A new range after all completed yields them in the order of fs.
	i := 0
	for f := range crew.Completed(fs...) {
		if f != fs[i] {
			t.Fatalf("completed futures not in the order of fs at %d", i)
		}
		i++
	}
}

// A Context hook (or its end function) that panics goes to the panic handler; the calls of a
// range, ForEach and a Results still run exactly once with the context they were to receive,
// and their results are yielded.
func TestAdv6StrmPanickingContextHookLeavesResultsIntact(t *testing.T) {
	type key struct{}
	for _, which := range []string{"hook", "end", "nil-panic"} {
		t.Run(which, func(t *testing.T) {
			var handled atomic.Int64
			p := crew.New(2, crew.WithPanicHandler(func(any, []byte) { handled.Add(1) }),
				crew.WithHooks(crew.Hooks{Context: func(ctx context.Context) (context.Context, func(error)) {
					switch which {
					case "hook":
						panic("hook")
					case "nil-panic":
						panic(nil)
					}
					return ctx, func(error) { panic("end") }
				}}))
			defer p.StopAndWait()
			ctx := context.WithValue(context.Background(), key{}, "v")
			fn := func(cctx context.Context, v int) (int, error) {
				if cctx == nil || cctx.Value(key{}) != "v" {
					return 0, errors.New("call received the wrong context")
				}
				return v, nil
			}
			calls := 0
			for _, m := range adv6Seqs {
				sum := 0
				for v, err := range m.seq(ctx, p, countTo(10), fn) {
					if err != nil {
						t.Fatalf("%s: %v", m.name, err)
					}
					sum += v
				}
				if sum != 45 {
					t.Fatalf("%s: sum %d", m.name, sum)
				}
				calls += 10
			}
			if err := crew.ForEach(ctx, p, countTo(10), func(c context.Context, v int) error { _, err := fn(c, v); return err }); err != nil {
				t.Fatalf("ForEach: %v", err)
			}
			calls += 10
			r, rctx := crew.NewResults[int](ctx, p)
			for i := range 5 {
				r.Go(func(c context.Context) (int, error) { return fn(c, i) })
			}
			_ = rctx
			vals, err := r.Wait()
			if err != nil || len(vals) != 5 || vals[4] != 4 {
				t.Fatalf("Results = %v, %v", vals, err)
			}
			calls += 5
			if h := handled.Load(); h != int64(calls) {
				t.Fatalf("panic handler called %d times, want %d", h, calls)
			}
		})
	}
}

// MapSeq yields in the order of in whatever order the calls return in, never holds more than
// W values pulled and not yet yielded, and a failure comes after every earlier result.
func TestAdv6StrmMapSeqOrderAndBoundUnderShuffledReturns(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	n := 200
	if testing.Short() {
		n = 80
	}
	var pulled atomic.Int64
	yielded := 0
	next := 0
	adv6Bounded(t, "range", func() {
		for v, err := range crew.MapSeq(context.Background(), p, count(n, &pulled), func(_ context.Context, v int) (int, error) {
			if v%3 == 0 {
				time.Sleep(time.Duration(v%5) * 100 * time.Microsecond)
			}
			if v == n-10 {
				return 0, errors.New("late failure")
			}
			return v, nil
		}) {
			if held := pulled.Load() - int64(yielded); held > 4 {
				t.Errorf("%d values pulled and not yet yielded, W is 4", held)
				return
			}
			if err != nil {
				if next != n-10 || err.Error() != "late failure" {
					t.Errorf("failure %v after %d results", err, next)
				}
				next = -1
				continue
			}
			if next < 0 {
				t.Errorf("result %d after the failure", v)
				return
			}
			if v != next {
				t.Errorf("got %d, want %d", v, next)
				return
			}
			next++
			yielded++
		}
	})
	if next != -1 {
		t.Fatalf("the failure was not yielded (next %d)", next)
	}
}

// A panic in the input sequence goes on from the range statement (and from ForEach) once the
// calls in flight have returned.
func TestAdv6StrmSequencePanicUnwindsAfterCallsReturn(t *testing.T) {
	p := crew.New(3)
	defer p.StopAndWait()
	type boom struct{}
	var running atomic.Int64
	in := func(yield func(int) bool) {
		for i := range 100 {
			if i == 4 {
				panic(boom{})
			}
			if !yield(i) {
				return
			}
		}
	}
	slow := func(ctx context.Context, v int) (int, error) {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return v, nil
	}
	check := func(name string, run func()) {
		var r any
		var atPanic int64 = -1
		adv6Bounded(t, name, func() {
			defer func() {
				atPanic = running.Load()
				r = recover()
			}()
			run()
		})
		if _, ok := r.(boom); !ok {
			t.Fatalf("%s: recovered %v, want the sequence's panic", name, r)
		}
		if atPanic != 0 {
			t.Fatalf("%s: %d calls running when the panic left", name, atPanic)
		}
	}
	for _, m := range adv6Seqs {
		check(m.name, func() {
			for range m.seq(context.Background(), p, in, slow) {
			}
		})
	}
	check("ForEach", func() {
		_ = crew.ForEach(context.Background(), p, in, func(ctx context.Context, v int) error {
			_, err := slow(ctx, v)
			return err
		})
	})
}

// StopNow of the root mid-range on a sub-pool of a sub-pool: the range's calls still queued
// fail with ErrStopped, the range yields that failure once and ends, and later ranges yield
// (zero, ErrStopped) once without pulling in.
func TestAdv6StrmStopNowOfRootEndsRangeOnSubSubPool(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			root := crew.New(1)
			leaf := root.Sub(2, crew.WithPriority(1)).Sub(2)
			release := make(chan struct{})
			fn, first, ran := adv6HoldFirst(release)
			r := adv6Range(m.seq(context.Background(), leaf, countTo(50), fn))
			<-first
			awaitStats(t, root, "a call queued", func(s crew.Stats) bool { return s.Waiting >= 1 })
			root.StopNow()
			close(release)
			r.wait(t)
			root.StopAndWait()
			if len(r.errs) != 1 || !errors.Is(r.errs[0], crew.ErrStopped) {
				t.Fatalf("failures %v, want one ErrStopped", r.errs)
			}
			if n := ran.Load(); n != 1 {
				t.Fatalf("%d calls ran, want 1", n)
			}
			var pulled atomic.Int64
			var again []error
			for _, err := range m.seq(context.Background(), leaf, count(5, &pulled), identity) {
				again = append(again, err)
			}
			if len(again) != 1 || !errors.Is(again[0], crew.ErrStopped) || pulled.Load() != 0 {
				t.Fatalf("range on the stopped sub-pool yielded %v, pulled %d", again, pulled.Load())
			}
		})
	}
}

// A range's call waiting in a sub-pool's bounded queue under DiscardOldest, dropped by a later
// submit, fails with ErrDiscarded: the range yields it once and ends.
func TestAdv6StrmDiscardedCallOfRangeOnSubPoolIsYielded(t *testing.T) {
	for _, m := range adv6Seqs {
		t.Run(m.name, func(t *testing.T) {
			root := crew.New(1)
			defer root.StopAndWait()
			sub := root.Sub(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest))
			release := make(chan struct{})
			started := make(chan struct{})
			must(t, root.Submit(func() { close(started); <-release })) // the only worker
			<-started
			must(t, sub.Submit(func() {})) // takes sub's one slot, waiting in root's queue
			var calls atomic.Int64
			r := adv6Range(m.seq(context.Background(), sub, countTo(3), func(_ context.Context, v int) (int, error) {
				calls.Add(1)
				return v, nil
			}))
			awaitStats(t, sub, "value 0 queued", func(s crew.Stats) bool { return s.Accepted >= 2 })
			must(t, sub.Submit(func() {})) // drops value 0, the oldest in sub's queue
			close(release)
			r.wait(t)
			if len(r.errs) != 1 || !errors.Is(r.errs[0], crew.ErrDiscarded) || len(r.vals) != 0 || calls.Load() != 0 {
				t.Fatalf("yielded %v and failures %v after %d calls, want one ErrDiscarded", r.vals, r.errs, calls.Load())
			}
		})
	}
}

// Group, GroupAll and Results report a function's runtime.Goexit or panic(nil) and return;
// GroupAll runs every function and joins every error; Results leaves the zero value.
func TestAdv6StrmGroupsReportGoexitAndPanicNil(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	bad := func(kind string) {
		if kind == "goexit" {
			runtime.Goexit()
		}
		panic(nil)
	}
	for _, kind := range []string{"goexit", "panicnil"} {
		g, _ := p.GroupAll(context.Background())
		var ran atomic.Int64
		for i := range 6 {
			g.Go(func(context.Context) error {
				ran.Add(1)
				if i%2 == 0 {
					bad(kind)
				}
				return nil
			})
		}
		var err error
		adv6Bounded(t, "GroupAll.Wait", func() { err = g.Wait() })
		if err == nil || ran.Load() != 6 {
			t.Fatalf("%s: GroupAll.Wait = %v after %d ran", kind, err, ran.Load())
		}
		if u, ok := err.(interface{ Unwrap() []error }); !ok || len(u.Unwrap()) != 3 {
			t.Fatalf("%s: GroupAll.Wait = %v, want 3 errors joined", kind, err)
		}
		var pe *crew.PanicError
		if errors.As(err, &pe) != (kind == "panicnil") {
			t.Fatalf("%s: GroupAll error %v", kind, err)
		}
		r, _ := crew.NewResults[int](context.Background(), p)
		r.Go(func(context.Context) (int, error) { return 1, nil })
		r.Go(func(context.Context) (int, error) { bad(kind); return 2, nil })
		var vals []int
		adv6Bounded(t, "Results.Wait", func() { vals, err = r.Wait() })
		if err == nil || len(vals) != 2 || vals[1] != 0 {
			t.Fatalf("%s: Results.Wait = %v, %v", kind, vals, err)
		}
	}
}

// Shutdown giving up mid-ForEach makes ForEach return ErrStopped (no call failed), and
// mid-Group makes Wait return once every started function has returned.
func TestAdv6StrmShutdownGivingUpMidForEachReturnsErrStopped(t *testing.T) {
	p := crew.New(2)
	running := make(chan struct{}, 100)
	var err error
	done := goRun(func() {
		err = crew.ForEach(context.Background(), p, countTo(1000), func(ctx context.Context, v int) error {
			running <- struct{}{}
			<-ctx.Done()
			return nil
		})
	})
	<-running
	<-running
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	serr := p.Shutdown(sctx)
	cancel()
	awaitReturn(t, "ForEach to return", done)
	p.StopAndWait()
	if !errors.Is(serr, context.DeadlineExceeded) || !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Shutdown = %v, ForEach = %v; want DeadlineExceeded, ErrStopped", serr, err)
	}
}

// Two ranges over one sequence value at the same time each pull in anew and get every result.
func TestAdv6StrmConcurrentRangesOverOneSequence(t *testing.T) {
	p := crew.New(3)
	defer p.StopAndWait()
	for _, m := range adv6Seqs {
		seq := m.seq(context.Background(), p, countTo(50), func(_ context.Context, v int) (int, error) {
			runtime.Gosched()
			return v, nil
		})
		var wg sync.WaitGroup
		sums := make([]int, 4)
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := 0
				for v, err := range seq {
					if err != nil || (m.ordered && v != next) {
						t.Errorf("%s: range %d got (%d, %v) at %d", m.name, r, v, err, next)
						return
					}
					next++
					sums[r] += v
				}
			}()
		}
		adv6Bounded(t, "ranges", wg.Wait)
		for r, s := range sums {
			if s != 50*49/2 {
				t.Fatalf("%s: range %d summed %d", m.name, r, s)
			}
		}
	}
}
