package crew_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/racetest"
)

func TestBadInputPanicsWithClearMessage(t *testing.T) {
	p := crew.New(1)
	defer p.StopAndWait()
	tests := []struct {
		name      string
		call      func()
		wantPanic string
	}{
		{"New(0)", func() { crew.New(0) }, "crew: New: maxWorkers must be >= 1 or CPUs, got 0"},
		{"New(-3)", func() { crew.New(-3) }, "crew: New: maxWorkers must be >= 1 or CPUs, got -3"},
		{"New(-2)", func() { crew.New(-2) }, "crew: New: maxWorkers must be >= 1 or CPUs, got -2"},
		{"WithAdaptiveLimit(0)", func() { crew.WithAdaptiveLimit(0) }, "crew: WithAdaptiveLimit: min must be >= 1, got 0"},
		{"NewFunc(0)", func() { crew.NewFunc(0, func(int) {}) }, "crew: NewFunc: maxWorkers must be >= 1 or CPUs, got 0"},
		{"NewFunc nil fn", func() { crew.NewFunc[int](1, nil) }, "crew: NewFunc: fn must not be nil"},
		{"WithQueueSize(-1)", func() { crew.WithQueueSize(-1) }, "crew: WithQueueSize: n must be >= 0, got -1"},
		{"WithMinWorkers(-1)", func() { crew.WithMinWorkers(-1) }, "crew: WithMinWorkers: n must be >= 0, got -1"},
		{"WithIdleTimeout(-1s)", func() { crew.WithIdleTimeout(-time.Second) }, "crew: WithIdleTimeout: d must be >= 0, got -1s"},
		//lint:ignore SA1012 a nil context is the bad input under test
		{"WithContext(nil)", func() { crew.WithContext(nil) }, "crew: WithContext: ctx must not be nil"},
		{"min above max", func() { crew.New(2, crew.WithMinWorkers(3)) }, "crew: New: WithMinWorkers(3) exceeds maxWorkers 2"},
		{"Resize(0)", func() { p.Resize(0) }, "crew: Resize: maxWorkers must be >= 1 or CPUs, got 0"},
		{"Resize(-2)", func() { p.Resize(-2) }, "crew: Resize: maxWorkers must be >= 1 or CPUs, got -2"},
		{"Sub(0)", func() { p.Sub(0) }, "crew: Sub: maxWorkers must be >= 1 or CPUs, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				got := recover()
				if got != tt.wantPanic {
					t.Fatalf("panic = %v, want %q", got, tt.wantPanic)
				}
			}()
			tt.call()
		})
	}
}

func TestSubmitRunsAcceptedTaskExactlyOnce(t *testing.T) {
	t.Parallel()
	const n = 20000
	p := crew.New(4)
	runs := make([]atomic.Int32, n)
	for i := range n {
		if err := p.Submit(func() { runs[i].Add(1) }); err != nil {
			t.Fatalf("Submit: %v", err)
		}
	}
	p.StopAndWait()
	for i := range runs {
		if got := runs[i].Load(); got != 1 {
			t.Fatalf("task %d ran %d times", i, got)
		}
	}
	if s := p.Stats(); s.Accepted != n || s.Completed != n {
		t.Fatalf("Stats = %+v, want %d submitted and completed", s, n)
	}
}

// TestQueuedTasksRunInFIFOOrder: tasks that wait for a busy worker, in a Pool's queue or a
// FuncPool's, start in the order they were submitted.
func TestQueuedTasksRunInFIFOOrder(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, nil, func(t *testing.T, p testPool) {
		const n = 200
		release := holdWorkers(t, p, 1, 0)
		var order []int // appended to by the one worker only
		for i := range n {
			if err := p.submit(func() { order = append(order, i) }); err != nil {
				t.Fatal(err)
			}
		}
		release()
		p.StopAndWait()
		if len(order) != n {
			t.Fatalf("%d of %d queued tasks ran", len(order), n)
		}
		for i, v := range order {
			if v != i {
				t.Fatalf("task %d ran in place %d", v, i)
			}
		}
	})
}

// Under the race detector, these fail if what the caller wrote before Submit or Invoke is not
// ordered before the task's read of it, or the task's write before Wait's return.
func TestSubmitHappensBeforeTaskAndTaskBeforeWait(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	in := make([]int, 100)
	out := make([]int, 100)
	for i := range in {
		in[i] = i + 1 // a plain write, before the Submit that hands it over
		if err := p.Submit(func() { out[i] = in[i] * 2 }); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	checkDoubled(t, out)
}

func TestInvokeHappensBeforeCallAndCallBeforeWait(t *testing.T) {
	t.Parallel()
	out := make([]int, 100)
	type job struct {
		i int
		v *int
	}
	p := crew.NewFunc(4, func(j job) { out[j.i] = *j.v * 2 })
	defer p.StopAndWait()
	for i := range out {
		v := new(int)
		*v = i + 1 // a plain write through a pointer the call reads
		if err := p.Invoke(job{i, v}); err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	checkDoubled(t, out)
}

// checkDoubled fails t unless out[i] is 2(i+1) for every i.
func checkDoubled(t *testing.T, out []int) {
	t.Helper()
	for i, v := range out {
		if v != (i+1)*2 {
			t.Fatalf("out[%d] = %d, want %d", i, v, (i+1)*2)
		}
	}
}

func TestNilTaskReturnsErrNilTask(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	if err := p.Submit(nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("Submit(nil) = %v, want ErrNilTask", err)
	}
	if err := p.SubmitContext(context.Background(), nil); !errors.Is(err, crew.ErrNilTask) {
		t.Errorf("SubmitContext(nil) = %v, want ErrNilTask", err)
	}
	if p.TrySubmit(nil) {
		t.Error("TrySubmit(nil) = true")
	}
	if s := p.Stats(); s.Accepted != 0 {
		t.Errorf("Accepted = %d after nil tasks", s.Accepted)
	}
}

func TestNoMoreThanMaxWorkersRun(t *testing.T) {
	t.Parallel()
	const limit, n = 3, 3000
	p := crew.New(limit)
	var h highWater
	for range n {
		p.Submit(func() {
			h.enter()
			time.Sleep(10 * time.Microsecond)
			h.exit()
		})
	}
	p.StopAndWait()
	if m := h.high.Load(); m > limit || m < 1 {
		t.Fatalf("high-water mark %d, want 1..%d", m, limit)
	}
}

// TestSubmitContextGivesUpWhenContextEnds: SubmitContext and InvokeContext, blocked on a full
// queue, give up when their context ends, with its error, and the task never runs.
func TestSubmitContextGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	forEachKind(t, 1, []crew.Option{crew.WithQueueSize(1)}, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 1, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		var err error
		awaitReturn(t, "blocked submitContext after its context ended", goRun(func() {
			err = p.submitContext(ctx, func() { t.Error("task ran after its submit gave up") })
		}))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("submitContext = %v, want context.DeadlineExceeded", err)
		}
		release()
		p.StopAndWait()
	})
}

func TestSubmitContextWithEndedContextAcceptsNothing(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SubmitContext(ctx, func() { t.Error("task ran") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext = %v, want context.Canceled", err)
	}
	f := crew.NewFunc(1, func(int) { t.Error("call ran") })
	defer f.StopAndWait()
	if err := f.InvokeContext(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("InvokeContext = %v, want context.Canceled", err)
	}
}

func TestWaitKeepsPoolUsable(t *testing.T) {
	t.Parallel()
	p := crew.New(3)
	defer p.StopAndWait()
	var n atomic.Int32
	for round := 1; round <= 3; round++ {
		for range 100 {
			p.Submit(func() { n.Add(1) })
		}
		p.Wait()
		if got := n.Load(); got != int32(round*100) {
			t.Fatalf("round %d: %d tasks done after Wait", round, got)
		}
	}
	p.Wait() // nothing pending: returns at once
}

func TestInvokeAllocatesNothing(t *testing.T) {
	var n atomic.Int64
	p := crew.NewFunc(2, func(v int) { n.Add(int64(v)) })
	defer p.StopAndWait()
	for range 1000 { // warm up: start the workers
		p.Invoke(1)
	}
	p.Wait()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := p.Invoke(1); err != nil {
			t.Fatal(err)
		}
	})
	p.Wait()
	if allocs != 0 {
		t.Fatalf("Invoke allocates %.2f times per call, want 0", allocs)
	}
	if n.Load() != 2001 {
		t.Fatalf("%d calls ran, want 2001", n.Load())
	}
}

func TestSubmitAllocatesNothingBeyondTheClosure(t *testing.T) {
	p := crew.New(2)
	defer p.StopAndWait()
	var n atomic.Int64
	task := func() { n.Add(1) } // one closure, made once
	for range 1000 {
		p.Submit(task)
	}
	p.Wait()
	allocs := testing.AllocsPerRun(1000, func() { p.Submit(task) })
	p.Wait()
	if allocs != 0 {
		t.Fatalf("Submit allocates %.2f times per call, want 0", allocs)
	}
	if n.Load() != 2001 {
		t.Fatalf("%d tasks ran, want 2001", n.Load())
	}
}

// TestSubmitAllocatesNothingWhileABacklogSwings: a backlog that forms and drains again and
// again (here 10,000 tasks queued behind a held worker, then released) reuses the queue's
// memory, so Submit still allocates nothing once the first backlog has formed.
func TestSubmitAllocatesNothingWhileABacklogSwings(t *testing.T) {
	racetest.SkipPoolReuse(t)
	const backlog = 10_000
	p := crew.New(1, crew.WithMinWorkers(1))
	defer p.StopAndWait()
	var wg sync.WaitGroup
	var n atomic.Int64
	hold := make(chan struct{})
	blocker := func() { <-hold; wg.Done() }
	task := func() { n.Add(1); wg.Done() }
	swing := func() {
		wg.Add(backlog + 1)
		if err := p.Submit(blocker); err != nil {
			t.Fatal(err)
		}
		for range backlog {
			if err := p.Submit(task); err != nil {
				t.Fatal(err)
			}
		}
		hold <- struct{}{}
		wg.Wait()
	}
	swing() // the first backlog allocates the queue's segments
	if allocs := testing.AllocsPerRun(20, swing); allocs != 0 {
		t.Fatalf("%.0f allocations per backlog of %d tasks after the first, want 0", allocs, backlog)
	}
	if got, want := n.Load(), int64(22*backlog); got != want {
		t.Fatalf("%d tasks ran, want %d", got, want)
	}
}

// TestNewPoolReusesQueueMemoryOfAStoppedOne: a pool made after another one stopped queues
// its backlog on the memory the stopped pool's backlog held, so a pool that queues 10,000
// tasks allocates no more than one that queues none.
func TestNewPoolReusesQueueMemoryOfAStoppedOne(t *testing.T) {
	racetest.SkipPoolReuse(t)
	var n atomic.Int64
	task := func() { n.Add(1) }
	life := func(backlog int) func() {
		return func() {
			p := crew.New(1, crew.WithMinWorkers(1))
			hold := make(chan struct{})
			if err := p.Submit(func() { <-hold }); err != nil {
				t.Fatal(err)
			}
			for range backlog {
				if err := p.Submit(task); err != nil {
					t.Fatal(err)
				}
			}
			close(hold)
			p.StopAndWait()
		}
	}
	const backlog = 10_000
	life(backlog)() // the first backlog allocates the segments
	none := testing.AllocsPerRun(20, life(0))
	queued := testing.AllocsPerRun(20, life(backlog))
	if queued > none {
		t.Fatalf("a pool that queued %d tasks allocated %.0f times, one that queued none %.0f",
			backlog, queued, none)
	}
	if got, want := n.Load(), int64(22*backlog); got != want {
		t.Fatalf("%d tasks ran, want %d", got, want)
	}
}

// TestInvokeTakesNilPointerAsArgument: a nil pointer and a nil interface are arguments like
// any other: Invoke accepts them and fn is called with nil.
func TestInvokeTakesNilPointerAsArgument(t *testing.T) {
	t.Parallel()
	invokesWithNil[*int](t, "nil *int")
	invokesWithNil[error](t, "nil error")
}

// invokesWithNil checks that a FuncPool[T] accepts T's zero value (nil, for a pointer or an
// interface) and calls fn with it.
func invokesWithNil[T comparable](t *testing.T, name string) {
	t.Helper()
	got := make(chan T, 1)
	p := crew.NewFunc(1, func(v T) { got <- v })
	defer p.StopAndWait()
	var zero T
	if err := p.Invoke(zero); err != nil {
		t.Fatalf("Invoke(%s) = %v", name, err)
	}
	select {
	case v := <-got:
		if v != zero {
			t.Fatalf("fn got %v, want %s", v, name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("fn was not called with %s", name)
	}
}

func TestCallsFromTaskNeverDeadlock(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	done := make(chan struct{})
	p.Submit(func() {
		defer close(done)
		_ = p.Stats()
		p.Resize(3)
		if !p.TrySubmit(func() {}) {
			t.Error("TrySubmit from a task refused")
		}
		p.Stop()
		p.Stop()
	})
	<-done
	p.StopAndWait()
}
