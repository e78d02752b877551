package crew_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

func TestResizeLosesNoTask(t *testing.T) {
	t.Parallel()
	const n = 5000
	p := crew.New(4)
	runs := make([]atomic.Int32, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			p.Resize(1 + i%7)
		}
	}()
	for i := range n {
		p.Submit(func() { runs[i].Add(1) })
	}
	<-done
	p.StopAndWait()
	ranOnce(t, runs)
}

func TestResizeGrowingStartsQueuedTasks(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	task, started, release := blocker()
	for range 4 {
		p.Submit(task)
	}
	<-started
	p.Resize(4) // no new submit: the three queued tasks start on new workers
	for range 3 {
		<-started
	}
	if s := p.Stats(); s.Running != 4 || s.Waiting != 0 {
		t.Fatalf("Stats after growing = %+v, want 4 running, 0 waiting", s)
	}
	close(release)
	p.StopAndWait()
}

// TestResizeShrinkingHoldsNewLimit: a shrinking Resize of a Pool or a FuncPool returns at once,
// even with more tasks running than the new limit; from its return no task starts while that
// many or more run, so the tasks started after it never run more than the limit at once.
func TestResizeShrinkingHoldsNewLimit(t *testing.T) {
	t.Parallel()
	forEachKind(t, 4, nil, func(t *testing.T, p testPool) {
		release := holdWorkers(t, p, 4, 0)
		var h highWater
		counted := func() {
			h.enter()
			time.Sleep(50 * time.Microsecond)
			h.exit()
		}
		for range 200 {
			if err := p.submit(counted); err != nil {
				t.Fatal(err)
			}
		}
		resized := goRun(func() { p.Resize(2) })
		awaitReturn(t, "Resize(2) with 4 tasks running", resized)
		if s := p.Stats(); s.MaxWorkers != 2 || s.Running != 4 {
			t.Fatalf("Stats after shrinking with 4 tasks held = %+v, want MaxWorkers 2, Running 4", s)
		}
		release()
		p.StopAndWait()
		if m := h.high.Load(); m > 2 {
			t.Fatalf("%d tasks started after Resize(2) ran at once", m)
		}
	})
}

// TestResizeReturnsAtOnceAndMaxWorkersIsTheNewLimit: a shrinking Resize called while more
// tasks than the new limit run returns without waiting for them; from its return
// Stats.MaxWorkers is the new limit and no task starts until fewer than that many run.
func TestResizeReturnsAtOnceAndMaxWorkersIsTheNewLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(4, crew.WithIdleTimeout(time.Hour))
	t.Cleanup(p.StopAndWait) // cleanups run last first: after the gates' closing below
	started := make(chan struct{}, 4)
	gates := make([]chan struct{}, 4)
	for i := range gates {
		gates[i] = make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-gates[i]:
			default:
				close(gates[i])
			}
		})
		if err := p.Submit(func() { started <- struct{}{}; <-gates[i] }); err != nil {
			t.Fatal(err)
		}
	}
	for range gates {
		<-started
	}
	awaitReturn(t, "Resize(1) with 4 tasks running", goRun(func() { p.Resize(1) }))
	if s := p.Stats(); s.MaxWorkers != 1 || s.Running != 4 {
		t.Fatalf("Stats right after Resize(1) = %+v, want MaxWorkers 1 and the 4 tasks running", s)
	}
	var late atomic.Bool
	if err := p.Submit(func() { late.Store(true) }); err != nil {
		t.Fatal(err)
	}
	for i, running := range []int{3, 2, 1} {
		close(gates[i])
		waitFor(t, fmt.Sprintf("%d tasks left", running), func() bool {
			s := p.Stats()
			return s.Running == running && s.MaxWorkers == 1
		})
		if late.Load() {
			t.Fatalf("a task started with %d tasks running and a limit of 1", running)
		}
	}
	close(gates[3])
	p.Wait()
	if !late.Load() {
		t.Fatal("the queued task did not run once the running ones finished")
	}
	if s := p.Stats(); s.Running != 0 || s.MaxWorkers != 1 {
		t.Fatalf("Stats after Wait = %+v, want nothing running and MaxWorkers 1", s)
	}
}

// TestResizeShrinkingMakesIdleWorkersExit: the idle workers above a lowered limit have exited
// by the time Resize returns, whether WithMinWorkers keeps them or a long idle timeout would.
func TestResizeShrinkingMakesIdleWorkersExit(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]crew.Option{
		"min workers":  crew.WithMinWorkers(4),
		"idle timeout": crew.WithIdleTimeout(time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := crew.New(4, opt)
			defer p.StopAndWait()
			parkWorkers(t, p, 4)
			awaitReturn(t, "Resize(1) with 4 idle workers", goRun(func() { p.Resize(1) }))
			if s := p.Stats(); s.MaxWorkers != 1 || s.Idle > 1 || s.Running != 0 {
				t.Fatalf("Stats after Resize(1) = %+v, want a limit of 1, at most 1 idle, none running", s)
			}
		})
	}
}
