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

	"github.com/crewgo/crew"
)

func TestGoReturnsFunctionResult(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	boom := errors.New("boom")
	ok := crew.Go(p, func() (int, error) { return 42, nil })
	bad := crew.Go(p, func() (string, error) { return "partial", boom })
	if v, err := ok.Wait(); v != 42 || err != nil {
		t.Fatalf("Wait = %v, %v; want 42, nil", v, err)
	}
	if v, err := bad.Wait(); v != "partial" || !errors.Is(err, boom) {
		t.Fatalf("Wait = %q, %v; want partial, boom", v, err)
	}
	// Wait may be called again, and Done is closed.
	if v, _ := ok.Wait(); v != 42 {
		t.Fatalf("second Wait = %v", v)
	}
	<-ok.Done()
}

func TestFutureDoneClosesWhenFunctionReturns(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	release := make(chan struct{})
	f := crew.Go(p, func() (int, error) { <-release; return 7, nil })
	select {
	case <-f.Done():
		t.Fatal("Done closed before the function returned")
	default:
	}
	close(release)
	<-f.Done()
	if v, err := f.Wait(); v != 7 || err != nil {
		t.Fatalf("Wait = %v, %v", v, err)
	}
}

func TestFuturePanicBecomesPanicError(t *testing.T) {
	t.Parallel()
	handled := make(chan any, 1)
	p := crew.New(1, crew.WithPanicHandler(func(v any, _ []byte) { handled <- v }))
	f := crew.Go(p, futurePanics)
	_, err := f.Wait()
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Value != "future boom" {
		t.Fatalf("Wait error = %v, want a *PanicError with the panic value", err)
	}
	if !strings.Contains(err.Error(), "future boom") || !strings.Contains(string(pe.Stack), "futurePanics") {
		t.Fatalf("PanicError lacks the value or the panicking frame: %v\n%s", err, pe.Stack)
	}
	// The pool keeps working and its handler never saw the panic.
	if v, err := crew.Go(p, func() (int, error) { return 1, nil }).Wait(); v != 1 || err != nil {
		t.Fatalf("pool after a panicking future: %v, %v", v, err)
	}
	p.StopAndWait()
	select {
	case v := <-handled:
		t.Fatalf("the pool's panic handler got %v", v)
	default:
	}
}

func futurePanics() (int, error) { panic("future boom") }

func TestPanicErrorUnwrapsErrorValue(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	sentinel := errors.New("sentinel")
	_, err := crew.Go(p, func() (int, error) { panic(sentinel) }).Wait()
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, sentinel) = false", err)
	}
	var pe *crew.PanicError
	if !errors.As(err, &pe) || pe.Unwrap() != sentinel {
		t.Fatalf("Unwrap of %v is not the panic value", err)
	}
	// A wrapped panic value is seen through as well.
	_, err = crew.Go(p, func() (int, error) { panic(fmt.Errorf("wrapped: %w", sentinel)) }).Wait()
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, sentinel) = false through a wrapping panic value", err)
	}
}

func TestGoOnStoppedPoolReturnsErrStopped(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	p.StopAndWait()
	var ran atomic.Bool
	f := crew.Go(p, func() (int, error) { ran.Store(true); return 1, nil })
	<-f.Done()
	if _, err := f.Wait(); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Wait = %v, want ErrStopped", err)
	}
	if ran.Load() {
		t.Fatal("the function ran on a stopped pool")
	}
}

func TestGoNilFunctionReturnsErrNilTask(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	if _, err := crew.Go[int](p, nil).Wait(); !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("Wait = %v, want ErrNilTask", err)
	}
}

func TestFutureGoexitDoesNotHangWait(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	_, err := crew.Go(p, func() (int, error) { runtime.Goexit(); return 0, nil }).Wait()
	if err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("Wait = %v, want an error naming Goexit", err)
	}
	if v, err := crew.Go(p, func() (int, error) { return 3, nil }).Wait(); v != 3 || err != nil {
		t.Fatalf("pool after Goexit: %v, %v", v, err)
	}
}

func TestGoAllocatesOnlyTheFuture(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func() (int, error) { return 1, nil }
	for range 100 {
		crew.Go(p, fn).Wait()
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if v, _ := crew.Go(p, fn).Wait(); v != 1 {
			t.Fatal("wrong result")
		}
	})
	if allocs > 1 {
		t.Fatalf("Go allocates %.2f times per call, want at most 1 (the Future)", allocs)
	}
}

// TestGoAllocatesEightyBytes guards the size of a Future[int]: see Future.outs.
func TestGoAllocatesEightyBytes(t *testing.T) {
	skipMemoryUnderRace(t)
	p := crew.New(2)
	defer p.StopAndWait()
	fn := func() (int, error) { return 1, nil }
	perGo := bytesPerCall(func(n int) {
		for range n {
			crew.Go(p, fn).Wait()
		}
	})
	if perGo > 80.5 {
		t.Fatalf("Go allocates %.2f bytes per call, want 80", perGo)
	}
}

func TestFutureIsSafeForConcurrentWaitAndDone(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	release := make(chan struct{})
	f := crew.Go(p, func() (int, error) { <-release; return 42, nil })
	go close(release) // the function returns while the callers ask
	together(64, 1, func(c, _ int) {
		if c%2 == 0 { // half ask for Done first, racing with the function's return
			<-f.Done()
		}
		if v, err := f.Wait(); v != 42 || err != nil {
			t.Errorf("Wait = %v, %v; want 42, nil", v, err)
		}
		select {
		case <-f.Done():
		default:
			t.Error("Done not closed after Wait returned")
		}
	})
}

func TestPanicErrorUnwrapReturnsNilForNonErrorValue(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	for _, v := range []any{"text", 42, struct{}{}} {
		_, err := crew.Go(p, func() (int, error) { panic(v) }).Wait()
		var pe *crew.PanicError
		if !errors.As(err, &pe) || pe.Value != v {
			t.Fatalf("Wait = %v, want a *PanicError with value %v", err, v)
		}
		if u := pe.Unwrap(); u != nil {
			t.Fatalf("Unwrap of a panic with %T value = %v, want nil", v, u)
		}
		if u := errors.Unwrap(err); u != nil {
			t.Fatalf("errors.Unwrap of a panic with %T value = %v, want nil", v, u)
		}
	}
}

// gatedFutures returns n futures on p whose functions return their index once their gate is
// closed, and the gates.
func gatedFutures(p *crew.Pool, n int) ([]*crew.Future[int], []chan struct{}) {
	fs := make([]*crew.Future[int], n)
	gates := make([]chan struct{}, n)
	for i := range fs {
		gates[i] = make(chan struct{})
		fs[i] = crew.Go(p, func() (int, error) { return i, within(gates[i], "the future's gate") })
	}
	return fs, gates
}

func TestCompletedYieldsFuturesInTheOrderTheyComplete(t *testing.T) {
	t.Parallel()
	p := crew.New(3)
	defer p.StopAndWait()
	fs, gates := gatedFutures(p, 3)
	order := []int{2, 0, 1}
	close(gates[order[0]])
	var got []int
	for f := range crew.Completed(fs...) {
		v, err := f.Wait()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
		if len(got) < len(order) {
			close(gates[order[len(got)]]) // the next one completes only now
		}
	}
	if !slices.Equal(got, order) {
		t.Fatalf("futures yielded in the order %v, want %v", got, order)
	}
}

func TestCompletedYieldsTheFuturesAlreadyCompletedFirstInArgumentOrder(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	fs, gates := gatedFutures(p, 4)
	close(gates[3])
	close(gates[1])
	fs[3].Wait()
	fs[1].Wait()
	stopped := crew.New(1)
	stopped.Stop()
	refused := crew.Go(stopped, func() (int, error) { return -1, nil }) // completed at once
	var got []int
	for f := range crew.Completed(append(fs, refused)...) {
		v, err := f.Wait()
		if f == refused {
			if !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("refused future's Wait = %v, want ErrStopped", err)
			}
			v = 4
		}
		got = append(got, v)
		if len(got) == 3 {
			close(gates[0])
			fs[0].Wait()
			close(gates[2])
		}
	}
	if !slices.Equal(got, []int{1, 3, 4, 0, 2}) {
		t.Fatalf("futures yielded in the order %v, want 1, 3, 4 (complete before the range), then 0 and 2", got)
	}
}

// TestCompletedBreakLeavesNothingBehind: a range that stops early, or whose body panics, leaves
// no goroutine (goleak checks) and does not keep the futures not yet yielded from completing
// or from being yielded by a later range.
func TestCompletedBreakLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	p := crew.New(3)
	defer p.StopAndWait()
	fs, gates := gatedFutures(p, 3)
	close(gates[0])
	for f := range crew.Completed(fs...) {
		if v, _ := f.Wait(); v != 0 {
			t.Fatalf("first future yielded is %d, want 0", v)
		}
		break
	}
	func() {
		defer func() {
			if v := recover(); v != "body boom" {
				t.Fatalf("recovered %v, want the body's panic", v)
			}
		}()
		for range crew.Completed(fs...) {
			panic("body boom")
		}
	}()
	close(gates[1])
	close(gates[2])
	n := 0
	for f := range crew.Completed(fs...) {
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("a later range yielded %d futures, want 3", n)
	}
}

func TestCompletedRangesRunConcurrentlyOverTheSameFutures(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	fs := make([]*crew.Future[int], 50)
	for i := range fs {
		fs[i] = crew.Go(p, func() (int, error) { return i, nil })
	}
	seq := crew.Completed(append(fs, fs[7])...) // fs[7] twice: yielded twice
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := make([]int, len(fs))
			for f := range seq {
				v, _ := f.Wait()
				seen[v]++
			}
			for i, n := range seen {
				want := 1
				if i == 7 {
					want = 2
				}
				if n != want {
					t.Errorf("future %d yielded %d times, want %d", i, n, want)
				}
			}
		}()
	}
	wg.Wait()
}

func TestCompletedOfNoFuturesYieldsNothing(t *testing.T) {
	for range crew.Completed[int]() {
		t.Fatal("yielded a future")
	}
}

func TestCompletedPanicsOnNilFuture(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	f := crew.Go(p, func() (int, error) { return 1, nil })
	checkPanics(t, []panicCase{
		{"second nil", func() { crew.Completed(f, nil) }, "crew: Completed: fs[1] must not be nil"},
		{"first nil", func() { crew.Completed(nil, f) }, "crew: Completed: fs[0] must not be nil"},
	})
}

// Go, NewResults, Map and ForEach panic with a message naming the call when p is nil, as
// their docs say, rather than with a nil dereference somewhere inside.
func TestResultHelpersPanicOnNilPool(t *testing.T) {
	ctx := context.Background()
	checkPanics(t, []panicCase{
		{"Go", func() { crew.Go(nil, func() (int, error) { return 0, nil }) }, "crew: Go: p must not be nil"},
		{"NewResults", func() { crew.NewResults[int](ctx, nil) }, "crew: NewResults: p must not be nil"},
		{"Map", func() {
			crew.Map(ctx, nil, []int{1}, func(context.Context, int) (int, error) { return 0, nil })
		}, "crew: Map: p must not be nil"},
		{"ForEach", func() {
			crew.ForEach(ctx, nil, slices.Values([]int{1}), func(context.Context, int) error { return nil })
		}, "crew: ForEach: p must not be nil"},
	})
}
