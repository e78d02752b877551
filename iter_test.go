package crew_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

func TestMapKeepsInputOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	in := make([]int, 500)
	for i := range in {
		in[i] = i
	}
	out, err := crew.Map(context.Background(), p, in, func(_ context.Context, v int) (string, error) {
		time.Sleep(time.Duration(v%7) * time.Microsecond)
		return strconv.Itoa(v), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range out {
		if s != strconv.Itoa(i) {
			t.Fatalf("out[%d] = %q", i, s)
		}
	}
}

func TestMapStopsSchedulingAtFirstError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	in := make([]int, 10000)
	var calls atomic.Int32
	boom := errors.New("boom")
	out, err := crew.Map(context.Background(), p, in, func(ctx context.Context, v int) (int, error) {
		switch n := calls.Add(1); {
		case n == 10:
			return 0, boom
		case n > 10:
			// Started while call 10 ran: return only once its error has been recorded (the
			// context ends then), so that a worker descheduled between call 10's return and
			// the recording cannot let calls go through meanwhile.
			<-ctx.Done()
		}
		return 1, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Map error = %v, want boom", err)
	}
	if len(out) != len(in) {
		t.Fatalf("len(out) = %d, want %d", len(out), len(in))
	}
	// At most the pool's limit of calls were in flight when the error came.
	if c := calls.Load(); c > 10+2 {
		t.Fatalf("%d calls made; scheduling went on after the first error", c)
	}
}

func TestMapLeavesZeroForFailedAndUnscheduled(t *testing.T) {
	t.Parallel()
	p := crew.New(1) // one worker: elements are called one after another, in order
	defer p.StopAndWait()
	boom := errors.New("boom")
	in := []int{1, 2, 3, 4, 5, 6}
	out, err := crew.Map(context.Background(), p, in, func(_ context.Context, v int) (int, error) {
		if v == 3 {
			return 30, boom
		}
		return v * 10, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Map error = %v, want boom", err)
	}
	// Elements 1 and 2 ran and succeeded; 3 failed; at most one more (the limit) was
	// scheduled before the error was seen, and it may have run and succeeded.
	if out[0] != 10 || out[1] != 20 || out[2] != 0 {
		t.Fatalf("out = %v, want [10 20 0 ...]", out)
	}
	if out[3] != 0 && out[3] != 40 {
		t.Fatalf("out[3] = %d, want 0 (not scheduled) or 40", out[3])
	}
	if out[4] != 0 || out[5] != 0 {
		t.Fatalf("out = %v: elements after the first error were scheduled", out)
	}
}

func TestMapLeavesZeroForPanicked(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	out, err := crew.Map(context.Background(), p, []int{1}, func(context.Context, int) (int, error) {
		panic("boom")
	})
	var pe *crew.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Map error = %v, want *PanicError", err)
	}
	if len(out) != 1 || out[0] != 0 {
		t.Fatalf("out = %v, want [0]", out)
	}
}

func TestMapPanicBecomesPanicError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	_, err := crew.Map(context.Background(), p, []int{1, 2, 3}, func(_ context.Context, v int) (int, error) {
		if v == 2 {
			panic("map boom")
		}
		return v, nil
	})
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Value != "map boom" {
		t.Fatalf("Map error = %v, want *PanicError", err)
	}
}

func TestMapOnStoppedPoolReturnsErrStopped(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	p.StopAndWait()
	_, err := crew.Map(context.Background(), p, []int{1}, func(context.Context, int) (int, error) {
		t.Error("ran on a stopped pool")
		return 0, nil
	})
	if !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Map = %v, want ErrStopped", err)
	}
}

func TestForEachReturnsFirstError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	var pulled atomic.Int64
	boom := errors.New("boom")
	err := crew.ForEach(context.Background(), p, endless(&pulled), func(_ context.Context, v int) error {
		if v == 100 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("ForEach = %v, want boom", err)
	}
}

func TestForEachVisitsEveryValue(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	var sum atomic.Int64
	err := crew.ForEach(context.Background(), p, slices.Values([]int64{1, 2, 3, 4, 5}), func(_ context.Context, v int64) error {
		sum.Add(v)
		return nil
	})
	if err != nil || sum.Load() != 15 {
		t.Fatalf("ForEach = %v, sum %d; want nil, 15", err, sum.Load())
	}
}

func TestForEachPanicBecomesPanicError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	err := crew.ForEach(context.Background(), p, slices.Values([]int{1, 2}), func(context.Context, int) error {
		panic("each boom")
	})
	var pe *crew.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("ForEach = %v, want *PanicError", err)
	}
}

func TestForEachOnSubPoolRespectsSubPoolLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	sub := p.Sub(2)
	var h highWater
	err := crew.ForEach(context.Background(), sub, slices.Values(make([]int, 300)), func(context.Context, int) error {
		h.enter()
		time.Sleep(10 * time.Microsecond)
		h.exit()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := h.high.Load(); m > 2 {
		t.Fatalf("%d calls at once on a sub-pool of 2", m)
	}
}

// iterCall runs fn over the values 0..n-1 through ForEach or Map.
type iterCall struct {
	name string
	run  func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) error) error
}

var iterCalls = []iterCall{
	{"ForEach", func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) error) error {
		return crew.ForEach(ctx, p, countTo(n), fn)
	}},
	{"Map", func(ctx context.Context, p *crew.Pool, n int, fn func(context.Context, int) error) error {
		_, err := crew.Map(ctx, p, slices.Collect(countTo(n)), func(ctx context.Context, v int) (int, error) {
			return v, fn(ctx, v)
		})
		return err
	}},
}

// TestForEachCallInFlightSeesContextCanceledAtFirstError: a call blocked on its context when
// another call fails is released by the cancellation, before ForEach (or Map) returns.
func TestForEachCallInFlightSeesContextCanceledAtFirstError(t *testing.T) {
	t.Parallel()
	for _, c := range iterCalls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := crew.New(2)
			defer p.StopAndWait()
			boom := errors.New("boom")
			inFlight := make(chan struct{})
			var sawCanceled atomic.Bool
			err := c.run(context.Background(), p, 2, func(ctx context.Context, v int) error {
				if v == 1 {
					<-inFlight // the other call is running
					return boom
				}
				close(inFlight)
				select {
				case <-ctx.Done():
					sawCanceled.Store(true)
				case <-time.After(10 * time.Second):
				}
				return nil
			})
			if !errors.Is(err, boom) {
				t.Fatalf("%s = %v, want boom", c.name, err)
			}
			if !sawCanceled.Load() {
				t.Fatal("the call in flight did not see its context canceled at the first error")
			}
		})
	}
}

// TestForEachCallStartedAfterFirstErrorSeesContextCanceled: a call accepted before the first
// error but started after it runs with the canceled context.
func TestForEachSkipsTheCallsQueuedAtTheFirstError(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	// One worker is held, so of ForEach's two calls in flight one runs and one waits.
	defer holdWorkers(t, plainPool{p}, 1, 0)() // released before StopAndWait
	submitted := make(chan struct{})
	seq := func(yield func(int) bool) {
		if yield(0) && yield(1) {
			close(submitted) // the loop body, which submits 1, has returned
		}
	}
	boom := errors.New("boom")
	var ran atomic.Bool
	err := crew.ForEach(context.Background(), p, seq, func(ctx context.Context, v int) error {
		if v == 0 {
			<-submitted
			return boom // 1 would start on this worker once this call has returned
		}
		ran.Store(true)
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("ForEach = %v, want boom", err)
	}
	if ran.Load() {
		t.Fatal("the call still queued at the first error ran; want it skipped")
	}
}

func TestForEachReturnsCtxErrWhenCtxEndsFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ctx  func() (ctx context.Context, cancel func())
	}{
		{"ends during the calls", func() (context.Context, func()) {
			return context.WithCancel(context.Background())
		}},
		{"ended before", func() (context.Context, func()) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := crew.New(2)
			defer p.StopAndWait()
			ctx, cancel := tt.ctx()
			defer cancel()
			var pulled atomic.Int64
			// The sequence is endless, so only the end of ctx can stop ForEach.
			err := crew.ForEach(ctx, p, endless(&pulled), func(_ context.Context, v int) error {
				if v == 0 {
					cancel()
				}
				return nil
			})
			if err == nil || err != ctx.Err() {
				t.Fatalf("ForEach = %v, want ctx.Err() = %v", err, ctx.Err())
			}
		})
	}
}

func TestForEachOnStoppedPoolReturnsErrStopped(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	p.StopAndWait()
	err := crew.ForEach(context.Background(), p, countTo(3), func(context.Context, int) error {
		t.Error("ran on a stopped pool")
		return nil
	})
	if !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("ForEach = %v, want ErrStopped", err)
	}
}

func TestResultsGoAllocatesOneResultHolder(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func(context.Context) (int, error) { return 1, nil }
	perGo := allocsPerItem(t, func(n int) {
		r, _ := crew.NewResults[int](context.Background(), p)
		for range n {
			r.Go(fn)
		}
		if vals, err := r.Wait(); len(vals) != n || err != nil {
			t.Fatalf("Wait = %d values, %v", len(vals), err)
		}
	})
	// The holders' slice grows by doubling, a few allocations in all.
	if perGo > 1.1 {
		t.Fatalf("Results.Go allocates %.2f times per call, want 1 (the result holder)", perGo)
	}
}

func TestForEachAllocatesOneTaskPerValue(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func(context.Context, int) error { return nil }
	perValue := allocsPerItem(t, func(n int) {
		if err := crew.ForEach(context.Background(), p, countTo(n), fn); err != nil {
			t.Fatal(err)
		}
	})
	if perValue > 1.1 {
		t.Fatalf("ForEach allocates %.2f times per value, want 1 (the task)", perValue)
	}
}

func TestMapAllocatesResultSliceAndOneTaskPerElement(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func(_ context.Context, v int) (int, error) { return v, nil }
	in := make([]int, 1000)
	perElement := allocsPerItem(t, func(n int) {
		if out, err := crew.Map(context.Background(), p, in[:n], fn); len(out) != n || err != nil {
			t.Fatalf("Map = %d results, %v", len(out), err)
		}
	})
	// The result slice is one allocation whatever its length, so it cancels out here.
	if perElement > 1.1 {
		t.Fatalf("Map allocates %.2f times per element, want 1 (the task)", perElement)
	}
}

func TestBatchYieldsNewSlicesOfNInOrderAndTheRestLast(t *testing.T) {
	t.Parallel()
	var got [][]int
	for b := range crew.Batch(countTo(10), 4) {
		got = append(got, b) // kept: each slice is new
	}
	want := [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	for range crew.Batch(countTo(0), 4) {
		t.Fatal("an empty sequence yielded a batch")
	}
}

// TestBatchPullsLazilyAndStopsWithTheLoop: the first batch is yielded after n values, and
// breaking out pulls nothing more.
func TestBatchPullsLazilyAndStopsWithTheLoop(t *testing.T) {
	t.Parallel()
	var pulled atomic.Int64
	for b := range crew.Batch(count(-1, &pulled), 3) {
		if len(b) != 3 || pulled.Load() != 3 {
			t.Fatalf("first batch %v after pulling %d values, want 3 of 3", b, pulled.Load())
		}
		break
	}
	if n := pulled.Load(); n != 3 {
		t.Fatalf("pulled %d values, want 3", n)
	}
}

func TestBatchFeedsForEachEveryValueOnce(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	runs := make([]atomic.Int32, 1000)
	err := crew.ForEach(context.Background(), p, crew.Batch(countTo(len(runs)), 64), func(_ context.Context, b []int) error {
		for _, v := range b {
			runs[v].Add(1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ranOnce(t, runs)
}

func TestBatchPanicsOnBadArguments(t *testing.T) {
	checkPanics(t, []panicCase{
		{"nil in", func() { crew.Batch[int](nil, 2) }, "crew: Batch: in must not be nil"},
		{"n 0", func() { crew.Batch(countTo(1), 0) }, "crew: Batch: n must be >= 1, got 0"},
		{"n -2", func() { crew.Batch(countTo(1), -2) }, "crew: Batch: n must be >= 1, got -2"},
	})
}

// TestForEachAndMapHonourCtxWhileBlockedOnAFullQueue proves [crew.ForEach]'s "blocks ... while
// p's bounded queue is full, only until ctx ends", for ForEach and Map: with the pool's worker
// busy and its queue full, the call returns ctx.Err() once ctx ends, and fn never runs.
func TestForEachAndMapHonourCtxWhileBlockedOnAFullQueue(t *testing.T) {
	t.Parallel()
	for _, c := range iterCalls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, free := fullBoundedQueue(t)
			ctx, cancel := context.WithCancel(context.Background())
			var err error
			done := goRun(func() {
				err = c.run(ctx, p, 3, func(context.Context, int) error {
					t.Error("a call ran that the full queue never accepted")
					return nil
				})
			})
			waitFor(t, c.name+" to block on the full queue", func() bool { return crew.BlockedSubmitters(p) == 1 })
			cancel()
			awaitReturn(t, c.name+" after its ctx ended", done)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s = %v, want context.Canceled", c.name, err)
			}
			free()
		})
	}
}

// TestForEachSequencePanicLeavesNoCallRunning proves [crew.ForEach]'s "If in itself panics (or
// calls runtime.Goexit), ForEach cancels the calls' context, waits for the calls in flight,
// and lets the panic go on to its caller": a call waiting on its context is released, and has
// returned when the panic reaches the caller.
func TestForEachSequencePanicLeavesNoCallRunning(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"panic", "Goexit"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			p := crew.New(2)
			defer p.StopAndWait()
			started := make(chan struct{})
			var returned atomic.Bool
			seq := func(yield func(int) bool) {
				yield(0)
				<-started
				if how == "panic" {
					panic("sequence boom")
				}
				runtime.Goexit()
			}
			var recovered any
			var returnedFirst bool
			awaitReturn(t, "ForEach with a panicking sequence", goRun(func() {
				defer func() {
					recovered = recover()
					returnedFirst = returned.Load()
				}()
				crew.ForEach(context.Background(), p, seq, func(ctx context.Context, _ int) error {
					close(started)
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Second):
						t.Error("the call's context was not canceled when the sequence panicked")
					}
					returned.Store(true)
					return nil
				})
				t.Error("ForEach returned normally from a sequence that panicked")
			}))
			if how == "panic" && recovered != "sequence boom" {
				t.Fatalf("the caller recovered %v, want the sequence's panic", recovered)
			}
			if !returnedFirst {
				t.Fatal("the sequence's panic reached the caller before the call in flight returned")
			}
		})
	}
}

// TestForEachAndMapWithNilArgumentsReturnAnError proves the docs of [crew.ForEach] and
// [crew.Map] for a nil sequence or fn: an error naming the call and the argument, returned at
// once; a nil fn's matches ErrNilTask; Map's slice still has len(in) elements.
func TestForEachAndMapWithNilArgumentsReturnAnError(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	ctx := context.Background()
	tests := []struct {
		name     string
		call     func() error
		want     string
		isNilFun bool
	}{
		{"ForEach nil in", func() error {
			return crew.ForEach(ctx, p, nil, func(context.Context, int) error { return nil })
		}, "crew: ForEach: in must not be nil", false},
		{"ForEach nil fn", func() error {
			return crew.ForEach[int](ctx, p, countTo(3), nil)
		}, "crew: ForEach: fn must not be nil", true},
		{"Map nil fn", func() error {
			out, err := crew.Map[int, int](ctx, p, []int{1, 2, 3}, nil)
			if len(out) != 3 {
				t.Errorf("Map with a nil fn returned %d results, want 3", len(out))
			}
			return err
		}, "crew: Map: fn must not be nil", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
			if errors.Is(err, crew.ErrNilTask) != tt.isNilFun {
				t.Fatalf("errors.Is(%v, ErrNilTask) = %v, want %v", err, !tt.isNilFun, tt.isNilFun)
			}
		})
	}
	if s := p.Stats(); s.Accepted != 0 {
		t.Fatalf("Stats = %+v, want nothing submitted", s)
	}
}
