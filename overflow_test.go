package crew_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// CallerRuns: a full queue runs the task on the submitter, with workers draining meanwhile;
// it counts in Accepted, Completed and CallerRan.
func TestCallerRunsRunsOnSubmitterWhenFull(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	release := holdWorkers(t, plainPool{p}, 1, 1)
	ran := make(chan struct{})
	var inline atomic.Bool
	caller := make(chan struct{})
	go func() {
		defer close(caller)
		if err := p.Submit(func() {
			inline.Store(true)
			// Workers keep draining while this runs on the caller: no lock is held.
			release()
			p.Wait()
			close(ran)
		}); err != nil {
			t.Error(err)
		}
	}()
	awaitReturn(t, "caller-run task", caller)
	<-ran
	if !inline.Load() {
		t.Fatal("task did not run")
	}
	if p.TrySubmit(func() {}) == false {
		t.Fatal("TrySubmit on an empty queue = false")
	}
	p.StopAndWait()
	s := p.Stats()
	if s.CallerRan != 1 || s.Accepted != 4 || s.Completed != 4 {
		t.Fatalf("Stats = %+v, want 1 caller-ran of 4 accepted and completed", s)
	}
}

func TestCallerRunsNestedSubmitIntoFullPoolCompletes(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	var ran atomic.Int64
	done := make(chan struct{})
	p.Submit(func() {
		for range 5 {
			if err := p.Submit(func() { ran.Add(1) }); err != nil {
				t.Error(err)
			}
		}
		close(done)
	})
	awaitReturn(t, "a task submitting into its own full pool", done)
	p.StopAndWait()
	if ran.Load() != 5 {
		t.Fatalf("ran %d of 5", ran.Load())
	}
}

// CallerRuns: a plain task's panic goes to the panic handler, called on the submitter.
func TestCallerRunsPanicGoesToPanicHandlerOnCaller(t *testing.T) {
	got := make(chan any, 1)
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns),
		crew.WithPanicHandler(func(v any, _ []byte) { got <- v }))
	release := holdWorkers(t, plainPool{p}, 1, 1)
	if err := p.Submit(func() { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "boom" {
			t.Fatalf("handler got %v", v)
		}
	default:
		t.Fatal("panic handler not called before Submit returned")
	}
	release()
	p.StopAndWait()
	if s := p.Stats(); s.Panicked != 1 || s.CallerRan != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestTrySubmitNeverRunsInlineNorDrops(t *testing.T) {
	for _, o := range []crew.Overflow{crew.Block, crew.Reject, crew.CallerRuns, crew.DiscardOldest} {
		p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(o))
		release := holdWorkers(t, plainPool{p}, 1, 1)
		if p.TrySubmit(func() { t.Error("ran") }) {
			t.Fatalf("policy %d: TrySubmit on a full queue = true", o)
		}
		if s := p.Stats(); s.Rejected != 1 || s.Discarded != 0 || s.CallerRan != 0 {
			t.Fatalf("policy %d: Stats = %+v", o, s)
		}
		release()
		p.StopAndWait()
	}
}

// DiscardOldest: the task queued longest is dropped; a plain one goes to the handler, a
// future fails with ErrDiscarded.
func TestDiscardOldestDropsLongestWaiting(t *testing.T) {
	var dropped []any
	var mu sync.Mutex
	p := crew.New(1, crew.WithQueueSize(2), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { mu.Lock(); dropped = append(dropped, v); mu.Unlock() }))
	release := holdWorkers(t, plainPool{p}, 1, 0)
	f := crew.Go(p, func() (int, error) { return 1, nil })
	var ran atomic.Int64
	p.Submit(func() { ran.Add(1) })
	p.Submit(func() { ran.Add(10) })  // drops the future
	p.Submit(func() { ran.Add(100) }) // drops the first plain task
	if _, err := f.Wait(); !errors.Is(err, crew.ErrDiscarded) {
		t.Fatalf("dropped future's Wait = %v, want ErrDiscarded", err)
	}
	mu.Lock()
	if len(dropped) != 1 {
		t.Fatalf("handler got %d tasks, want 1", len(dropped))
	}
	fn, ok := dropped[0].(func())
	mu.Unlock()
	if !ok {
		t.Fatalf("handler got %T, want func()", dropped[0])
	}
	release()
	p.StopAndWait()
	if ran.Load() != 110 {
		t.Fatalf("ran = %d, want the two newest (110)", ran.Load())
	}
	fn()
	if ran.Load() != 111 {
		t.Fatal("the dropped task is not the oldest plain one")
	}
	s := p.Stats()
	if s.Discarded != 2 || s.Accepted != s.Completed+s.Discarded {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestDiscardOldestFuncPoolGivesArgumentToHandler(t *testing.T) {
	got := make(chan any, 4)
	release := make(chan struct{})
	p := crew.NewFunc(1, func(v int) {
		if v == 0 {
			<-release
		}
	}, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest), crew.WithDiscardHandler(func(v any) { got <- v }))
	p.Invoke(0)
	waitFor(t, "first call running", func() bool { return p.Stats().Running == 1 })
	p.Invoke(1)
	p.Invoke(2)
	if v := <-got; v != 1 {
		t.Fatalf("handler got %v, want 1", v)
	}
	close(release)
	p.StopAndWait()
}

// WithMaxBlocked: at most n submitters wait; the next is rejected with ErrQueueFull.
func TestMaxBlockedRejectsTheNextSubmitter(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxBlocked(1))
	release := holdWorkers(t, plainPool{p}, 1, 1)
	blocked := goRun(func() {
		if err := p.Submit(func() {}); err != nil {
			t.Error(err)
		}
	})
	waitFor(t, "one blocked submitter", func() bool { return crew.BlockedSubmitters(p) == 1 })
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("submit past WithMaxBlocked = %v, want ErrQueueFull", err)
	}
	release()
	awaitReturn(t, "blocked submitter", blocked)
	p.StopAndWait()
	if s := p.Stats(); s.Rejected != 1 || s.Accepted != 3 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestMaxWaitRejectsAfterWaitingRealClock(t *testing.T) {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxWait(20*time.Millisecond))
	release := holdWorkers(t, plainPool{p}, 1, 1)
	start := time.Now()
	if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Submit past max wait = %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("returned after %v, before the max wait", d)
	}
	release()
	p.StopAndWait()
	if s := p.Stats(); s.Rejected != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestWithNonBlockingIsReject(t *testing.T) {
	for _, opt := range []crew.Option{crew.WithNonBlocking(), crew.WithOverflow(crew.Reject)} {
		p := crew.New(1, crew.WithQueueSize(1), opt)
		release := holdWorkers(t, plainPool{p}, 1, 1)
		if err := p.Submit(func() {}); !errors.Is(err, crew.ErrQueueFull) {
			t.Fatalf("Submit = %v", err)
		}
		release()
		p.StopAndWait()
	}
}

func TestOverflowOptionsPanicOnBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"WithOverflow", func() { crew.WithOverflow(crew.Overflow(9)) }, "crew: WithOverflow: unknown policy 9"},
		{"WithMaxWait", func() { crew.WithMaxWait(-1) }, "crew: WithMaxWait: d must be >= 0, got -1ns"},
		{"WithMaxBlocked", func() { crew.WithMaxBlocked(-1) }, "crew: WithMaxBlocked: n must be >= 0, got -1"},
		{"WithRateLimit", func() { crew.WithRateLimit(0, 1) }, "crew: WithRateLimit: need perSecond > 0 and burst >= 1, got 0 and 1"},
		{"SetRateLimit", func() { crew.New(1).SetRateLimit(1, 0) }, "crew: SetRateLimit: need perSecond > 0 and burst >= 1, got 1 and 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tc.want {
					t.Fatalf("panic = %v, want %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}
