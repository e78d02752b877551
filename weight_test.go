package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestSubmitNWeightsNeverSumAboveMaxWorkers proves SubmitN's limit: tasks of mixed weights
// submitted from many goroutines never hold more than MaxWorkers slots together, and all run.
func TestSubmitNWeightsNeverSumAboveMaxWorkers(t *testing.T) {
	t.Parallel()
	per := 200
	if testing.Short() {
		per = 50
	}
	p := crew.New(4)
	defer p.StopAndWait()
	var m weightMeter
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				n := 1 + (g+i)%4
				if err := p.SubmitN(n, m.task(n)); err != nil {
					t.Errorf("SubmitN(%d) = %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	p.Wait()
	if h := m.high.Load(); h > 4 {
		t.Fatalf("running tasks held %d slots at once, limit 4", h)
	}
	if got := m.ran.Load(); got != int64(16*per) {
		t.Fatalf("%d tasks ran, want %d", got, 16*per)
	}
}

// TestSubmitNHeavyTaskAtTheHeadIsNotOvertaken: a light task queued behind a heavy one that
// does not fit yet waits for it, though it would fit itself.
func TestSubmitNHeavyTaskAtTheHeadIsNotOvertaken(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	gate, started := make(chan struct{}), make(chan struct{})
	must(t, p.Submit(func() { close(started); <-gate }))
	<-started
	var order []string // written by tasks that never run at once
	var mu sync.Mutex
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	must(t, p.SubmitN(2, record("heavy")))
	must(t, p.Submit(record("light")))
	if s := p.Stats(); s.Running != 1 || s.Waiting != 2 {
		t.Fatalf("stats %+v, want 1 running and 2 waiting", s)
	}
	close(gate)
	p.Wait()
	if len(order) != 2 || order[0] != "heavy" {
		t.Fatalf("started in order %v, want heavy first", order)
	}
}

// TestShrinkingResizeLetsATooHeavyTaskRunAlone: a queued task that a shrinking Resize made
// heavier than the limit runs once everything running has returned, alone.
func TestShrinkingResizeLetsATooHeavyTaskRunAlone(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 2, 0)
	var running atomic.Int32
	var alone atomic.Bool
	must(t, p.SubmitN(4, func() {
		alone.Store(running.Add(1) == 1)
		running.Add(-1)
	}))
	must(t, p.Submit(func() { running.Add(1); running.Add(-1) }))
	p.Resize(2)
	release()
	p.Wait()
	if !alone.Load() {
		t.Fatal("the too heavy task did not run alone")
	}
}

// TestSubmitNOnSubPoolHoldsEitherLimit: weights on a sub-pool count against the sub-pool's
// limit and the parent's, with the parent's own tasks.
func TestSubmitNOnSubPoolHoldsEitherLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	sub := p.Sub(3)
	var all, inSub weightMeter
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				n := 1 + (g+i)%3
				both := all.task(n)
				if g%2 == 0 {
					must(t, p.SubmitN(n, both))
					continue
				}
				one := inSub.task(n)
				must(t, sub.SubmitN(n, func() { one(); both() }))
			}
		}()
	}
	wg.Wait()
	p.Wait()
	if h := all.high.Load(); h > 4 {
		t.Fatalf("parent and sub-pool tasks held %d slots at once, parent's limit 4", h)
	}
	if h := inSub.high.Load(); h > 3 {
		t.Fatalf("sub-pool tasks held %d slots at once, its limit 3", h)
	}
	if got := all.ran.Load(); got != 800 {
		t.Fatalf("%d tasks ran, want 800", got)
	}
}

// TestSubmitNTooHeavyIsRefused: n above the limit, or above any limit on a sub-pool's path,
// returns ErrTooHeavy and the task never runs.
func TestSubmitNTooHeavyIsRefused(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	sub := p.Sub(8)
	never := func() { t.Error("a too heavy task ran") }
	for _, q := range []*crew.Pool{p, sub} {
		if err := q.SubmitN(3, never); !errors.Is(err, crew.ErrTooHeavy) {
			t.Fatalf("SubmitN(3) = %v, want ErrTooHeavy", err)
		}
		if err := q.SubmitNContext(context.Background(), 3, never); !errors.Is(err, crew.ErrTooHeavy) {
			t.Fatalf("SubmitNContext(3) = %v, want ErrTooHeavy", err)
		}
		if q.TrySubmitN(3, never) {
			t.Fatal("TrySubmitN(3) = true")
		}
		if !q.TrySubmitN(2, func() {}) {
			t.Fatal("TrySubmitN(2) = false")
		}
	}
	p.Wait()
	if s := p.Stats(); s.Rejected != 0 || s.Canceled != 0 {
		t.Fatalf("ErrTooHeavy counted as refused: %+v", s)
	}
}

// TestSubmitNPanicAndGoexitGiveTheSlotsBack: a weighted task that panics or calls
// runtime.Goexit gives its slots back, and the tasks after it run.
func TestSubmitNPanicAndGoexitGiveTheSlotsBack(t *testing.T) {
	t.Parallel()
	var panics atomic.Int32
	p := crew.New(3, crew.WithPanicHandler(func(any, []byte) { panics.Add(1) }))
	defer p.StopAndWait()
	sub := p.Sub(3)
	var ran atomic.Int32
	for _, q := range []*crew.Pool{p, sub} {
		must(t, q.SubmitN(3, func() { panic("boom") }))
		must(t, q.SubmitN(3, func() { panic(nil) }))
		must(t, q.SubmitN(3, runtime.Goexit))
		must(t, q.SubmitN(3, func() { ran.Add(1) }))
	}
	p.Wait()
	if ran.Load() != 2 || panics.Load() != 4 {
		t.Fatalf("ran %d, panics %d; want 2 and 4", ran.Load(), panics.Load())
	}
	if s := p.Stats(); s.Running != 0 {
		t.Fatalf("stats after Wait %+v", s)
	}
}

// TestSubmitNOnStoppedPool: SubmitN after Stop returns ErrStopped; a nil task ErrNilTask.
func TestSubmitNOnStoppedPool(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	if err := p.SubmitN(2, nil); !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("SubmitN(2, nil) = %v", err)
	}
	p.StopAndWait()
	if err := p.SubmitN(2, func() { t.Error("ran after Stop") }); !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("SubmitN after Stop = %v", err)
	}
}

// TestSubmitNInputValidation: n < 1 panics naming the call.
func TestSubmitNInputValidation(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	tests := []panicCase{
		{"SubmitN", func() { _ = p.SubmitN(0, func() {}) }, "crew: SubmitN: n must be >= 1, got 0"},
		{"TrySubmitN", func() { p.TrySubmitN(-1, func() {}) }, "crew: TrySubmitN: n must be >= 1, got -1"},
		{"SubmitNContext", func() { _ = p.SubmitNContext(context.Background(), 0, func() {}) },
			"crew: SubmitNContext: n must be >= 1, got 0"},
	}
	checkPanics(t, tests)
}

// TestSubmitNHeldBackTaskHoldsNoSlot proves SubmitN's promise that a task held back by Pause
// holds no slot: weighted tasks handed to workers while Pause and Resume alternate, some of
// them given back unrun, leave the pool its full limit once they have run.
func TestSubmitNHeldBackTaskHoldsNoSlot(t *testing.T) {
	tasks := 20_000
	if testing.Short() {
		tasks = 5_000
	}
	p := crew.New(4)
	defer p.StopAndWait()
	var submitted atomic.Bool
	toggled := make(chan struct{})
	go func() { // Pause and Resume alternate until every task is in
		defer close(toggled)
		for !submitted.Load() {
			p.Pause()
			p.Resume()
		}
	}()
	var ran atomic.Int64
	for range tasks {
		if err := p.SubmitN(3, func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	submitted.Store(true)
	<-toggled
	p.Resume()
	p.Wait()
	if ran.Load() != int64(tasks) {
		t.Fatalf("%d of %d tasks ran", ran.Load(), tasks)
	}
	// Four tasks of weight 1 that wait for a release all run before it only with all four
	// slots free.
	var started atomic.Int32
	release := make(chan struct{})
	defer close(release)
	for range 4 {
		p.Submit(func() {
			started.Add(1)
			<-release
		})
	}
	for deadline := time.Now().Add(10 * time.Second); started.Load() < 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of four tasks of weight 1 running at once on a pool of 4: %+v", started.Load(), p.Stats())
		}
	}
}
