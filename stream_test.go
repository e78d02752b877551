package crew_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// forEachMode runs test as a parallel subtest for MapSeq and for MapSeqUnordered.
func forEachMode(t *testing.T, test func(t *testing.T, ordered bool, mapSeq mapSeqFunc)) {
	t.Helper()
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			test(t, m.ordered, m.mapSeq)
		})
	}
}

// ranged is what one range over a mapped sequence saw: the values yielded with a nil error,
// the last error yielded, how many errors were yielded and how many pairs came after the
// first error.
type ranged struct {
	vals     []int
	err      error
	errs     int
	afterErr int
}

// rangeAll ranges over seq to its end, going on after an error, so that a sequence that
// yields anything after its error is caught.
func rangeAll(seq iter.Seq2[int, error]) ranged { return rangeEach(seq, func(int) {}) }

// rangeEach is rangeAll that calls each in the loop body after the n-th value.
func rangeEach(seq iter.Seq2[int, error], each func(n int)) ranged {
	var r ranged
	for v, err := range seq {
		if r.errs > 0 {
			r.afterErr++
		}
		if err != nil {
			r.errs++
			r.err = err
			continue
		}
		r.vals = append(r.vals, v)
		each(len(r.vals))
	}
	return r
}

// heldCount counts the values a sequence made by seq has pulled and the results the loop
// body has taken, and keeps the most values ever pulled and not yet taken.
type heldCount struct{ pulled, taken, worst atomic.Int64 }

// seq yields 0, 1, ..., n-1 (endless if n < 0), noting each pull.
func (h *heldCount) seq(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := 0; n < 0 || i < n; i++ {
			held := h.pulled.Add(1) - h.taken.Load()
			for m := h.worst.Load(); held > m && !h.worst.CompareAndSwap(m, held); m = h.worst.Load() {
			}
			if !yield(i) {
				return
			}
		}
	}
}

// take notes a result taken by the loop body and returns how many have been.
func (h *heldCount) take() int64 { return h.taken.Add(1) }

// startGate is closed by the n-th call of started.
type startGate struct {
	n     int64
	count atomic.Int64
	all   chan struct{}
}

func newStartGate(n int) *startGate { return &startGate{n: int64(n), all: make(chan struct{})} }

func (g *startGate) started() {
	if g.count.Add(1) == g.n {
		close(g.all)
	}
}

// endsWith fails t unless the range yielded exactly one error, matching want, and nothing
// after it.
func (r ranged) endsWith(t *testing.T, want error) {
	t.Helper()
	if r.errs != 1 || r.afterErr != 0 || !errors.Is(r.err, want) {
		t.Fatalf("range yielded %d errors (last %v) and %d pairs after the first, want one error %v, last",
			r.errs, r.err, r.afterErr, want)
	}
}

func identity(_ context.Context, v int) (int, error) { return v, nil }

func TestMapSeqYieldsInInputOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	var pulled atomic.Int64
	r := rangeAll(crew.MapSeq(context.Background(), p, count(2000, &pulled), func(_ context.Context, v int) (int, error) {
		time.Sleep(time.Duration(v%5) * 10 * time.Microsecond) // later values often finish first
		return v * 2, nil
	}))
	if r.errs != 0 {
		t.Fatalf("range yielded %d errors, last %v", r.errs, r.err)
	}
	for i, v := range r.vals {
		if v != 2*i {
			t.Fatalf("result %d = %d, want %d", i, v, 2*i)
		}
	}
	if len(r.vals) != 2000 {
		t.Fatalf("%d results, want 2000", len(r.vals))
	}
}

func TestMapSeqUnorderedYieldsEveryResultOnce(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	var pulled atomic.Int64
	r := rangeAll(crew.MapSeqUnordered(context.Background(), p, count(2000, &pulled), func(_ context.Context, v int) (int, error) {
		time.Sleep(time.Duration(v%5) * 10 * time.Microsecond)
		return v, nil
	}))
	if r.errs != 0 {
		t.Fatalf("range yielded %d errors, last %v", r.errs, r.err)
	}
	slices.Sort(r.vals)
	for i, v := range r.vals {
		if v != i {
			t.Fatalf("sorted result %d = %d: a result is missing or doubled", i, v)
		}
	}
	if len(r.vals) != 2000 {
		t.Fatalf("%d results, want 2000", len(r.vals))
	}
}

// TestMapSeqUnorderedYieldsInCompletionOrder: a call that returns early is yielded before
// a slow call pulled before it.
func TestMapSeqUnorderedYieldsInCompletionOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	secondDone := make(chan struct{})
	var pulled atomic.Int64
	var got []int
	for v, err := range crew.MapSeqUnordered(context.Background(), p, count(2, &pulled), func(_ context.Context, v int) (int, error) {
		if v == 0 {
			return v, within(secondDone, "the second result")
		}
		return v, nil
	}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
		if v == 1 {
			close(secondDone)
		}
	}
	if !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("results %v, want [1 0]", got)
	}
}

// TestMapSeqHoldsAtMostWValuesPulledAndNotYielded: an endless sequence and a slow loop body:
// whenever in produces a value, fewer than W+1 values have been pulled and not yielded.
func TestMapSeqHoldsAtMostWValuesPulledAndNotYielded(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		const w = 4
		p := crew.New(w)
		defer p.StopAndWait()
		var h heldCount
		var hw highWater
		for v, err := range mapSeq(context.Background(), p, h.seq(-1), func(_ context.Context, v int) (int, error) {
			hw.enter()
			defer hw.exit()
			time.Sleep(time.Duration(v%3) * 20 * time.Microsecond)
			return v, nil
		}) {
			n := h.take()
			if err != nil {
				t.Fatal(err)
			}
			if ordered && v != int(n-1) {
				t.Fatalf("result %d = %d", n-1, v)
			}
			if n == 300 {
				break
			}
			time.Sleep(50 * time.Microsecond) // a slow consumer, so the calls get ahead of it
		}
		if m := h.worst.Load(); m > w {
			t.Fatalf("%d values pulled and not yet yielded, want at most %d", m, w)
		}
		if m := hw.high.Load(); m > w {
			t.Fatalf("%d calls ran at once, want at most %d", m, w)
		}
	})
}

// TestMapSeqCallsNeverWaitForTheLoopBody: while the loop body holds the first result, the
// calls for the values pulled meanwhile return, and the workers are free.
func TestMapSeqCallsNeverWaitForTheLoopBody(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		const w = 4
		p := crew.New(w)
		defer p.StopAndWait()
		var returned, pulled atomic.Int64
		gate := newStartGate(w)
		first := true
		for _, err := range mapSeq(context.Background(), p, count(100, &pulled), func(_ context.Context, v int) (int, error) {
			defer returned.Add(1)
			gate.started()
			if v == 0 {
				// Let W values be pulled before the first result is ready.
				return v, within(gate.all, "W calls to start")
			}
			return v, nil
		}) {
			if err != nil {
				t.Fatal(err)
			}
			if first {
				first = false
				waitFor(t, "the calls in flight to return while the body holds a result", func() bool {
					return returned.Load() >= w
				})
				awaitStats(t, p, "the workers to be free", func(s crew.Stats) bool { return s.Running == 0 })
			}
		}
	})
}

// TestMapSeqYieldsAResultWithoutWaitingForLaterCalls: the first result reaches the loop body
// while the calls after it are still running.
func TestMapSeqYieldsAResultWithoutWaitingForLaterCalls(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(4)
		defer p.StopAndWait()
		gotFirst := make(chan struct{})
		var pulled atomic.Int64
		n := 0
		for _, err := range mapSeq(context.Background(), p, count(4, &pulled), func(_ context.Context, v int) (int, error) {
			if v == 0 {
				return v, nil
			}
			return v, within(gotFirst, "the first result to be yielded")
		}) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 1 {
				close(gotFirst)
			}
		}
		if n != 4 {
			t.Fatalf("%d results, want 4", n)
		}
	})
}

// TestMapSeqBreakCancelsAndWaitsForCallsInFlight: when the range statement that broke out
// ends, the calls in flight have seen their context canceled and returned.
func TestMapSeqBreakCancelsAndWaitsForCallsInFlight(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		const w = 4
		p := crew.New(w)
		defer p.StopAndWait()
		var inFlight, canceled, pulled atomic.Int64
		gate := newStartGate(w)
		for _, err := range mapSeq(context.Background(), p, count(-1, &pulled), func(ctx context.Context, v int) (int, error) {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			gate.started()
			if v == 0 {
				return v, within(gate.all, "W calls to start")
			}
			if err := within(ctx.Done(), "the break to cancel the context"); err != nil {
				return v, err
			}
			canceled.Add(1)
			return v, nil
		}) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if n := inFlight.Load(); n != 0 {
			t.Fatalf("%d calls still running after the range statement", n)
		}
		if n := canceled.Load(); n != w-1 {
			t.Fatalf("%d calls saw the context canceled, want %d", n, w-1)
		}
		if n := pulled.Load(); n > w+1 {
			t.Fatalf("pulled %d values, want at most %d", n, w+1)
		}
	})
}

func TestMapSeqYieldsEarlierResultsThenTheFailureAndEnds(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		const w = 4
		p := crew.New(w)
		defer p.StopAndWait()
		boom := errors.New("boom")
		var pulled atomic.Int64
		r := rangeAll(mapSeq(context.Background(), p, count(-1, &pulled), func(_ context.Context, v int) (int, error) {
			if v == 50 {
				return -1, boom
			}
			return v, nil
		}))
		r.endsWith(t, boom)
		if ordered && !slices.Equal(r.vals, slices.Collect(countTo(50))) {
			t.Fatalf("results %v, want 0 to 49 in order", r.vals)
		}
		// In completion order, every call that returned before value 50 failed is yielded
		// first, and a descheduled call for 50 lets any number of later values return.
		if slices.Contains(r.vals, 50) || slices.Contains(r.vals, -1) {
			t.Fatalf("results %v hold the failed value", r.vals)
		}
		// Pulling stopped at the failure, with at most W values pulled and not yet yielded:
		// the failed one among them. In completion order the results yielded before it may
		// include values pulled after it.
		bound := 51 + w
		if !ordered {
			bound = len(r.vals) + w
		}
		if n := pulled.Load(); n > int64(bound) {
			t.Fatalf("pulled %d values with %d results yielded, want at most %d", n, len(r.vals), bound)
		}
	})
}

// TestMapSeqYieldsTheFirstFailureInInputOrder: value 3 fails after value 6 did; MapSeq
// yields 0, 1, 2 and then 3's error.
func TestMapSeqYieldsTheFirstFailureInInputOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	errThree, errSix := errors.New("three"), errors.New("six")
	sixFailed := make(chan struct{})
	r := rangeAll(crew.MapSeq(context.Background(), p, countTo(8), func(_ context.Context, v int) (int, error) {
		switch v {
		case 3:
			if err := within(sixFailed, "value 6 to fail"); err != nil {
				return 0, err
			}
			return 0, errThree
		case 6:
			defer close(sixFailed)
			return 0, errSix
		}
		return v, nil
	}))
	r.endsWith(t, errThree)
	if !slices.Equal(r.vals, []int{0, 1, 2}) {
		t.Fatalf("results %v, want [0 1 2]", r.vals)
	}
}

// TestMapSeqUnorderedYieldsTheFirstFailureInTime: value 6 fails first and is yielded, even
// though value 3's failure may be collected at the same time.
func TestMapSeqUnorderedYieldsTheFirstFailureInTime(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	errThree, errSix := errors.New("three"), errors.New("six")
	r := rangeAll(crew.MapSeqUnordered(context.Background(), p, countTo(8), func(ctx context.Context, v int) (int, error) {
		switch v {
		case 3:
			if err := within(ctx.Done(), "value 6's failure to cancel the context"); err != nil {
				return 0, err
			}
			return 0, errThree
		case 6:
			return 0, errSix
		}
		return v, nil
	}))
	r.endsWith(t, errSix)
}

// TestMapSeqCancellationDoesNotHideTheFailureThatCausedIt: value 2 returns its context's
// error when value 5's failure cancels it; 5's failure is yielded, not 2's context.Canceled,
// and the calls' context has that failure as its cause.
func TestMapSeqCancellationDoesNotHideTheFailureThatCausedIt(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(8)
		defer p.StopAndWait()
		boom := errors.New("boom")
		var cause atomic.Value
		var ran2 atomic.Bool
		r := rangeAll(mapSeq(context.Background(), p, countTo(8), func(ctx context.Context, v int) (int, error) {
			switch v {
			case 2:
				ran2.Store(true)
				if err := within(ctx.Done(), "the failure to cancel the context"); err != nil {
					return 0, err
				}
				cause.Store(context.Cause(ctx))
				return 0, ctx.Err()
			case 5:
				return 0, boom
			}
			return v, nil
		}))
		r.endsWith(t, boom)
		if ordered && !slices.Equal(r.vals, []int{0, 1}) {
			t.Fatalf("results %v, want [0 1]", r.vals)
		}
		// Unordered, value 2 may still be queued when 5 fails (a loaded machine starts the
		// workers late), and is then skipped.
		if !ordered && !ran2.Load() {
			return
		}
		if c, _ := cause.Load().(error); c != boom {
			t.Fatalf("context.Cause of the calls' context = %v, want boom", c)
		}
	})
}

// TestMapSeqEarlierFailureOfItsOwnIsYieldedFirst: value 2 fails with an error of its own
// (not its context's) once value 5's failure canceled its context: in input order 2's failure
// comes first, so MapSeq yields it.
func TestMapSeqEarlierFailureOfItsOwnIsYieldedFirst(t *testing.T) {
	t.Parallel()
	p := crew.New(8)
	defer p.StopAndWait()
	boom, own := errors.New("boom"), errors.New("own")
	r := rangeAll(crew.MapSeq(context.Background(), p, countTo(8), func(ctx context.Context, v int) (int, error) {
		switch v {
		case 2:
			if err := within(ctx.Done(), "the failure to cancel the context"); err != nil {
				return 0, err
			}
			return 0, own
		case 5:
			return 0, boom
		}
		return v, nil
	}))
	r.endsWith(t, own)
	if !slices.Equal(r.vals, []int{0, 1}) {
		t.Fatalf("results %v, want [0 1]", r.vals)
	}
}

func TestMapSeqPanicIsYieldedAsPanicError(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(2, crew.WithPanicHandler(func(any, []byte) { t.Error("the panic reached the panic handler") }))
		defer p.StopAndWait()
		r := rangeAll(mapSeq(context.Background(), p, countTo(100), func(_ context.Context, v int) (int, error) {
			if v == 10 {
				panic("seq boom")
			}
			return v, nil
		}))
		var pe *crew.PanicError
		if r.errs != 1 || r.afterErr != 0 || !errors.As(r.err, &pe) || pe.Value != "seq boom" {
			t.Fatalf("range yielded %d errors, last %v, %d after; want one *PanicError(seq boom), last", r.errs, r.err, r.afterErr)
		}
		if !strings.Contains(string(pe.Stack), "stream_test.go") {
			t.Fatalf("the panic's stack lacks the frame that panicked:\n%s", pe.Stack)
		}
		if ordered && !slices.Equal(r.vals, slices.Collect(countTo(10))) {
			t.Fatalf("results %v, want 0 to 9", r.vals)
		}
	})
}

func TestMapSeqPanicNilIsYieldedAsPanicError(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(2)
		defer p.StopAndWait()
		r := rangeAll(mapSeq(context.Background(), p, countTo(100), func(_ context.Context, v int) (int, error) {
			if v == 10 {
				panic(nil)
			}
			return v, nil
		}))
		var pe *crew.PanicError
		var pn *runtime.PanicNilError
		// Under GODEBUG=panicnil=1, recover returns nil for panic(nil): then so is Value.
		isPanic := errors.As(r.err, &pe)
		holdsIt := errors.As(r.err, &pn) || isPanic && pe.Value == nil && panicNilValue() == nil
		if r.errs != 1 || r.afterErr != 0 || !isPanic || !holdsIt {
			t.Fatalf("range yielded %d errors, last %v; want one *PanicError holding what recover returns for panic(nil)", r.errs, r.err)
		}
	})
}

func TestMapSeqGoexitInCallIsYieldedAsFailure(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(2)
		defer p.StopAndWait()
		var r ranged
		done := goRun(func() {
			r = rangeAll(mapSeq(context.Background(), p, countTo(100), func(_ context.Context, v int) (int, error) {
				if v == 10 {
					runtime.Goexit()
				}
				return v, nil
			}))
		})
		awaitReturn(t, "the range over a sequence whose call called runtime.Goexit", done)
		if r.errs != 1 || r.afterErr != 0 || !strings.Contains(fmt.Sprint(r.err), "Goexit") {
			t.Fatalf("range yielded %d errors, last %v; want one naming runtime.Goexit, last", r.errs, r.err)
		}
		if ordered && !slices.Equal(r.vals, slices.Collect(countTo(10))) {
			t.Fatalf("results %v, want 0 to 9", r.vals)
		}
	})
}

func TestMapSeqOnEndedContextYieldsCtxErrOnceWithoutPulling(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(2)
		defer p.StopAndWait()
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		for _, ctx := range []context.Context{canceled, expired} {
			var pulled atomic.Int64
			r := rangeAll(mapSeq(ctx, p, count(-1, &pulled), func(context.Context, int) (int, error) {
				t.Error("fn called with an ended context")
				return 0, nil
			}))
			if r.errs != 1 || r.err != ctx.Err() || len(r.vals) != 0 {
				t.Fatalf("range yielded %v and %d errors (last %v), want only ctx.Err() = %v", r.vals, r.errs, r.err, ctx.Err())
			}
			if pulled.Load() != 0 {
				t.Fatal("in was pulled")
			}
		}
	})
}

func TestMapSeqOnStoppedPoolYieldsErrStoppedOnceWithoutPulling(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		stopped := crew.New(2)
		stopped.Stop()
		ctx, cancel := context.WithCancel(context.Background())
		ended := crew.New(2, crew.WithContext(ctx))
		cancel()
		defer ended.StopAndWait()
		for _, p := range []*crew.Pool{stopped, ended, stopped.Sub(2)} {
			var pulled atomic.Int64
			r := rangeAll(mapSeq(context.Background(), p, count(-1, &pulled), func(context.Context, int) (int, error) {
				t.Error("fn called on a stopped pool")
				return 0, nil
			}))
			if r.errs != 1 || r.err != crew.ErrStopped || len(r.vals) != 0 {
				t.Fatalf("range yielded %v and %d errors (last %v), want only ErrStopped", r.vals, r.errs, r.err)
			}
			if pulled.Load() != 0 {
				t.Fatal("in was pulled")
			}
		}
	})
}

// TestMapSeqPoolStoppedMidwayYieldsErrStopped: the values p accepted are yielded, then
// ErrStopped for the first value it refused.
func TestMapSeqPoolStoppedMidwayYieldsErrStopped(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(2)
		defer p.StopAndWait()
		var pulled atomic.Int64
		r := rangeEach(mapSeq(context.Background(), p, count(-1, &pulled), identity), func(n int) {
			if n == 5 {
				p.Stop()
			}
		})
		r.endsWith(t, crew.ErrStopped)
		if ordered && !slices.Equal(r.vals, slices.Collect(countTo(len(r.vals)))) {
			t.Fatalf("results %v, want 0, 1, ... in order", r.vals)
		}
		if len(r.vals) > 5+2 {
			t.Fatalf("%d results after the pool stopped at the 5th, want at most 2 more", len(r.vals))
		}
	})
}

// TestMapSeqContextEndingMidwayYieldsCtxErrLast: after ctx ends, no value is pulled, the
// calls already made are yielded, and then ctx.Err().
func TestMapSeqContextEndingMidwayYieldsCtxErrLast(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		const w = 4
		p := crew.New(w)
		defer p.StopAndWait()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var pulled, atCancel atomic.Int64
		r := rangeEach(mapSeq(ctx, p, count(-1, &pulled), identity), func(n int) {
			if n == 10 {
				atCancel.Store(pulled.Load())
				cancel()
			}
		})
		if r.errs != 1 || r.afterErr != 0 || r.err != context.Canceled {
			t.Fatalf("range yielded %d errors (last %v), %d after the first; want context.Canceled once, last", r.errs, r.err, r.afterErr)
		}
		if n := pulled.Load(); n > atCancel.Load()+1 {
			t.Fatalf("pulled %d values, %d when ctx ended: pulling went on", n, atCancel.Load())
		}
		if ordered && !slices.Equal(r.vals, slices.Collect(countTo(len(r.vals)))) {
			t.Fatalf("results %v, want 0, 1, ... in order", r.vals)
		}
		if len(r.vals) > 10+w {
			t.Fatalf("%d results, want at most %d", len(r.vals), 10+w)
		}
	})
}

// TestMapSeqGivesUpWaitingForQueueRoomWhenCtxEnds: a range blocked on p's full bounded queue
// returns when ctx ends, having yielded ctx.Err(), and its value never runs.
func TestMapSeqGivesUpWaitingForQueueRoomWhenCtxEnds(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p, _ := fullBoundedQueue(t)
		ctx, cancel := context.WithCancel(context.Background())
		var r ranged
		var pulled atomic.Int64
		done := goRun(func() {
			r = rangeAll(mapSeq(ctx, p, count(-1, &pulled), func(context.Context, int) (int, error) {
				t.Error("fn ran although its submit gave up")
				return 0, nil
			}))
		})
		waitFor(t, "the range to block on the full queue", func() bool { return crew.BlockedSubmitters(p) == 1 })
		cancel()
		awaitReturn(t, "the range whose ctx ended", done)
		if r.errs != 1 || r.err != context.Canceled || len(r.vals) != 0 {
			t.Fatalf("range yielded %v and %d errors (last %v), want only context.Canceled", r.vals, r.errs, r.err)
		}
	})
}

func TestMapSeqOnFullNonBlockingQueueYieldsErrQueueFull(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p, _ := fullBoundedQueue(t, crew.WithNonBlocking())
		var pulled atomic.Int64
		r := rangeAll(mapSeq(context.Background(), p, count(-1, &pulled), func(context.Context, int) (int, error) {
			t.Error("fn ran although the queue refused it")
			return 0, nil
		}))
		r.endsWith(t, crew.ErrQueueFull)
		if len(r.vals) != 0 || pulled.Load() != 1 {
			t.Fatalf("results %v after pulling %d values, want none after 1", r.vals, pulled.Load())
		}
	})
}

// TestMapSeqOnSubPoolKeepsBothLimits: on a sub-pool, W is the sub-pool's limit, and the
// calls never exceed either the sub-pool's or the parent's.
func TestMapSeqOnSubPoolKeepsBothLimits(t *testing.T) {
	for _, tc := range []struct{ parent, sub, running int }{{8, 2, 2}, {2, 6, 2}} {
		t.Run(fmt.Sprintf("parent=%d/sub=%d", tc.parent, tc.sub), func(t *testing.T) {
			forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
				p := crew.New(tc.parent)
				defer p.StopAndWait()
				sub := p.Sub(tc.sub)
				var h heldCount
				var hw highWater
				n := 0
				for v, err := range mapSeq(context.Background(), sub, h.seq(400), func(_ context.Context, v int) (int, error) {
					hw.enter()
					defer hw.exit()
					time.Sleep(time.Duration(v%3) * 10 * time.Microsecond)
					return v, nil
				}) {
					h.take()
					if err != nil {
						t.Fatal(err)
					}
					if ordered && v != n {
						t.Fatalf("result %d = %d", n, v)
					}
					n++
				}
				if n != 400 {
					t.Fatalf("%d results, want 400", n)
				}
				if m := hw.high.Load(); m > int32(tc.running) {
					t.Fatalf("%d calls ran at once, want at most %d", m, tc.running)
				}
				if m := h.worst.Load(); m > int64(tc.sub) {
					t.Fatalf("%d values pulled and not yielded, want at most the sub-pool's %d", m, tc.sub)
				}
			})
		})
	}
}

// blockedCalls returns fn for a range whose first value returns at once while every later
// call blocks until its context is canceled, counting the calls in flight.
func blockedCalls(inFlight *atomic.Int64) func(context.Context, int) (int, error) {
	return func(ctx context.Context, v int) (int, error) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		if v == 0 {
			return v, nil
		}
		return v, within(ctx.Done(), "the range to cancel its calls")
	}
}

func TestMapSeqPanicInLoopBodyPropagatesAfterTheCallsReturn(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(4)
		defer p.StopAndWait()
		var inFlight, pulled atomic.Int64
		func() {
			defer func() {
				if v := recover(); v != "body boom" {
					t.Fatalf("recovered %v, want the loop body's panic", v)
				}
				if n := inFlight.Load(); n != 0 {
					t.Fatalf("%d calls running when the panic left the range statement", n)
				}
			}()
			for range mapSeq(context.Background(), p, count(3, &pulled), blockedCalls(&inFlight)) {
				panic("body boom")
			}
		}()
	})
}

func TestMapSeqPanicInSequencePropagatesAfterTheCallsReturn(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(4)
		defer p.StopAndWait()
		var inFlight atomic.Int64
		in := func(yield func(int) bool) {
			for i := range 3 {
				if !yield(i) {
					return
				}
			}
			panic("in boom")
		}
		func() {
			defer func() {
				if v := recover(); v != "in boom" {
					t.Fatalf("recovered %v, want in's panic", v)
				}
				if n := inFlight.Load(); n != 0 {
					t.Fatalf("%d calls running when the panic left the range statement", n)
				}
			}()
			for _, err := range mapSeq(context.Background(), p, in, blockedCalls(&inFlight)) {
				if err != nil {
					t.Errorf("yielded %v", err)
				}
			}
		}()
	})
}

func TestMapSeqGoexitInLoopBodyOrSequenceLeavesNothingRunning(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(4)
		defer p.StopAndWait()
		var inFlight, pulled atomic.Int64
		inGoexits := func(yield func(int) bool) {
			for i := range 3 {
				if !yield(i) {
					return
				}
			}
			runtime.Goexit()
		}
		for name, in := range map[string]iter.Seq[int]{"body": count(3, &pulled), "in": inGoexits} {
			var after atomic.Bool
			done := goRun(func() {
				for range mapSeq(context.Background(), p, in, blockedCalls(&inFlight)) {
					if name == "body" {
						runtime.Goexit()
					}
				}
				after.Store(true)
			})
			awaitReturn(t, "the goroutine that called runtime.Goexit in the "+name, done)
			if after.Load() {
				t.Fatalf("%s: the range statement ended normally", name)
			}
			if n := inFlight.Load(); n != 0 {
				t.Fatalf("%s: %d calls running after the goroutine exited", name, n)
			}
		}
	})
}

// TestMapSeqRangesRunConcurrentlyAndAgain: one sequence, ranged by eight goroutines at once
// and then once more, gives each range every result.
func TestMapSeqRangesRunConcurrentlyAndAgain(t *testing.T) {
	forEachMode(t, func(t *testing.T, ordered bool, mapSeq mapSeqFunc) {
		p := crew.New(4)
		defer p.StopAndWait()
		var calls atomic.Int64
		seq := mapSeq(context.Background(), p, countTo(300), func(_ context.Context, v int) (int, error) {
			calls.Add(1)
			return v * 3, nil
		})
		check := func(r ranged) error {
			if r.errs != 0 {
				return fmt.Errorf("%d errors, last %v", r.errs, r.err)
			}
			if !ordered {
				slices.Sort(r.vals)
			}
			for i, v := range r.vals {
				if v != 3*i {
					return fmt.Errorf("result %d = %d", i, v)
				}
			}
			if len(r.vals) != 300 {
				return fmt.Errorf("%d results, want 300", len(r.vals))
			}
			return nil
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := check(rangeAll(seq)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if err := check(rangeAll(seq)); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 9*300 {
			t.Fatalf("%d calls, want %d: each range calls fn once per value", n, 9*300)
		}
	})
}

func TestMapSeqPanicsOnNilArguments(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	ctx := context.Background()
	in, fn := countTo(1), identity
	checkPanics(t, []panicCase{
		//lint:ignore SA1012 a nil context is the bad input under test
		{"MapSeq nil ctx", func() { crew.MapSeq(nil, p, in, fn) }, "crew: MapSeq: ctx must not be nil"},
		{"MapSeq nil p", func() { crew.MapSeq(ctx, nil, in, fn) }, "crew: MapSeq: p must not be nil"},
		{"MapSeq nil in", func() { crew.MapSeq(ctx, p, nil, fn) }, "crew: MapSeq: in must not be nil"},
		{"MapSeq nil fn", func() { crew.MapSeq[int, int](ctx, p, in, nil) }, "crew: MapSeq: fn must not be nil"},
		//lint:ignore SA1012 a nil context is the bad input under test
		{"MapSeqUnordered nil ctx", func() { crew.MapSeqUnordered(nil, p, in, fn) }, "crew: MapSeqUnordered: ctx must not be nil"},
		{"MapSeqUnordered nil p", func() { crew.MapSeqUnordered(ctx, nil, in, fn) }, "crew: MapSeqUnordered: p must not be nil"},
		{"MapSeqUnordered nil in", func() { crew.MapSeqUnordered(ctx, p, nil, fn) }, "crew: MapSeqUnordered: in must not be nil"},
		{"MapSeqUnordered nil fn", func() { crew.MapSeqUnordered[int, int](ctx, p, in, nil) }, "crew: MapSeqUnordered: fn must not be nil"},
	})
}

func TestMapSeqAllocatesNothingPerValue(t *testing.T) {
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			p := crew.New(2)
			defer p.StopAndWait()
			perValue := allocsPerItem(t, func(n int) {
				got := 0
				for _, err := range m.mapSeq(context.Background(), p, countTo(n), identity) {
					if err != nil {
						t.Fatal(err)
					}
					got++
				}
				if got != n {
					t.Fatalf("%d results, want %d", got, n)
				}
			})
			if perValue > 0.05 {
				t.Fatalf("a range allocates %.3f times per value, want 0", perValue)
			}
		})
	}
}

// TestMapSeqRangeInATaskMissesNoReturnWhileItHelps: a MapSeq range made inside a function of
// the pool, from the context crew gave it (so its waits help), whose one call a worker takes
// and finishes while the ranging goroutine looks for a queued call to run itself. The call's
// return, finding no one asleep, sends no wake: the range must see it all the same, or it
// waits for ever. Repeated for a second, sweeping the call's length across that window.
func TestMapSeqRangeInATaskMissesNoReturnWhileItHelps(t *testing.T) {
	p := crew.New(2)
	deadline := time.Now().Add(time.Second)
	for iter := 0; time.Now().Before(deadline); iter++ {
		g, _ := p.Group(context.Background())
		g.Go(func(ctx context.Context) error {
			for _, err := range crew.MapSeq(ctx, p, countTo(1), func(ctx context.Context, v int) (int, error) {
				for i := 0; i < iter%64; i++ { // a few ns to a few µs, to sweep the window
					_ = i * i
				}
				return v, nil
			}) {
				if err != nil {
					return err
				}
			}
			return nil
		})
		done := goRun(func() { g.Wait() })
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s := p.Stats()
			// The stuck range holds a worker for ever: no StopAndWait (it would hang too).
			t.Fatalf("iteration %d: a MapSeq range inside a task never ended; Stats %+v (its call has ended: Running counts only the ranging function)", iter, s)
		}
	}
	p.StopAndWait()
}

// TestMapSeqUnderATaskTimeoutReusesNoHolderATimerReads: each call waits for its context to
// end by the pool's task timeout and returns at that moment, when the timer's goroutine
// still reads the call's context, its parent. The range must not have cleared and reused the
// call's holder meanwhile (the race detector, and a nil pointer, said so).
func TestMapSeqUnderATaskTimeoutReusesNoHolderATimerReads(t *testing.T) {
	p := crew.New(4, crew.WithTaskTimeout(200*time.Microsecond))
	defer p.StopAndWait()
	for _, ordered := range []bool{true, false} {
		seq := crew.MapSeq[int, int]
		if !ordered {
			seq = crew.MapSeqUnordered[int, int]
		}
		n := 0
		for _, err := range seq(context.Background(), p, countTo(200), func(ctx context.Context, v int) (int, error) {
			<-ctx.Done()
			return v, nil
		}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 200 {
			t.Fatalf("ordered=%v: %d of 200 results", ordered, n)
		}
	}
}
