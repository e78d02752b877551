package crew_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew"
)

// TestKeyedRunsOneTaskPerKeyAtATimeInSubmitOrder proves Keyed's promise: tasks of one key run
// one at a time, in submit order, and the return of one synchronizes before the next starts.
// Each key's counter is a plain int: the race detector reports any pair of its tasks that is
// not ordered by happens-before.
func TestKeyedRunsOneTaskPerKeyAtATimeInSubmitOrder(t *testing.T) {
	t.Parallel()
	const keys = 16
	perKey := 500
	if testing.Short() {
		perKey = 100
	}
	p := crew.New(8)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var (
		seq     [keys]int // unsynchronized on purpose
		running [keys]atomic.Int32
		high    atomic.Int32
		wrong   atomic.Int32
	)
	var wg sync.WaitGroup
	for key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perKey {
				err := k.Submit(key, func() {
					if n := running[key].Add(1); n > high.Load() {
						high.Store(n)
					}
					if seq[key] != i {
						wrong.Add(1)
					}
					seq[key]++
					running[key].Add(-1)
				})
				if err != nil {
					t.Errorf("Submit(%d) = %v", key, err)
				}
			}
		}()
	}
	wg.Wait()
	k.Wait()
	if h := high.Load(); h != 1 {
		t.Fatalf("a key ran %d tasks at once, want 1", h)
	}
	if w := wrong.Load(); w != 0 {
		t.Fatalf("%d tasks ran out of submit order", w)
	}
	for key := range keys {
		if seq[key] != perKey {
			t.Fatalf("key %d ran %d tasks, want %d", key, seq[key], perKey)
		}
	}
}

// TestKeyedStuckKeyDoesNotDelayOtherKeys: a key whose task never returns holds one worker;
// the other keys' tasks all run on the rest, and the stuck key's later tasks wait.
func TestKeyedStuckKeyDoesNotDelayOtherKeys(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	stuck, release := make(chan struct{}), make(chan struct{})
	var after atomic.Bool
	must(t, k.Submit("stuck", func() { close(stuck); <-release }))
	must(t, k.Submit("stuck", func() { after.Store(true) }))
	<-stuck
	var ran atomic.Int64
	const n = 1000
	for i := range n {
		must(t, k.Submit(string(rune('a'+i%26)), func() { ran.Add(1) }))
	}
	waitFor(t, "the other keys' tasks", func() bool { return ran.Load() == n })
	if after.Load() {
		t.Fatal("the stuck key's next task ran before the stuck one returned")
	}
	close(release)
	k.Wait()
	if !after.Load() {
		t.Fatal("the stuck key's next task never ran")
	}
}

// TestKeyedBacklogDoesNotStarveALaterKey: with one worker and key A holding a huge backlog,
// a task of key B submitted later starts after a bounded number of A's tasks, not after all
// of them.
func TestKeyedBacklogDoesNotStarveALaterKey(t *testing.T) {
	t.Parallel()
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	p := crew.New(1)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)
	var aRan atomic.Int64
	// A's first task holds the pool's only worker until B's submit has taken effect, so the
	// count below starts when B was submitted, however the submitter was scheduled.
	gate := make(chan struct{})
	must(t, k.Submit("A", func() { <-gate; aRan.Add(1) }))
	for range n - 1 {
		must(t, k.Submit("A", func() { aRan.Add(1) }))
	}
	started := make(chan int64, 1)
	must(t, k.Submit("B", func() { started <- aRan.Load() }))
	close(gate)
	if d := <-started; d > 32 {
		t.Fatalf("B started after %d of A's tasks, want a short batch", d)
	}
	k.Wait()
	if got := aRan.Load(); got != int64(n) {
		t.Fatalf("A ran %d tasks, want %d", got, n)
	}
}

// TestKeyedIdleKeysLeaveTheHeapAsItWas: a million distinct keys, many busy at once, leave the
// live heap near where it was once their tasks are done: a key's state is freed when idle.
func TestKeyedIdleKeysLeaveTheHeapAsItWas(t *testing.T) {
	skipMemoryUnderRace(t)
	n := 1 << 20
	if testing.Short() {
		n = 1 << 17
	}
	base := heapInUse()
	p := crew.New(4)
	k := crew.NewKeyed[int](p)
	hold := make(chan struct{})
	for range 4 {
		must(t, p.Submit(func() { <-hold }))
	}
	var ran atomic.Int64
	task := func() { ran.Add(1) }
	for i := range n {
		must(t, k.Submit(i, task))
	}
	if peak := heapInUse(); peak < base+uint64(n)*32 {
		t.Fatalf("live heap %d B with %d keys busy, %d B before: the measurement sees nothing", peak, n, base)
	}
	close(hold)
	k.Wait()
	if got := ran.Load(); got != int64(n) {
		t.Fatalf("%d tasks ran, want %d", got, n)
	}
	p.StopAndWait()
	runtime.KeepAlive(k)
	if after := heapInUse(); after > base+4<<20 {
		t.Fatalf("live heap %d B after %d idle keys, %d B before", after, n, base)
	}
}

// TestKeyedConcurrentSubmitAndWait: submits from many goroutines and Wait calls among them;
// every accepted task runs exactly once, and each Wait returns.
func TestKeyedConcurrentSubmitAndWait(t *testing.T) {
	t.Parallel()
	per := 200
	if testing.Short() {
		per = 50
	}
	p := crew.New(4)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var ran atomic.Int64
	var wg sync.WaitGroup
	release := make(chan struct{})
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			for i := range per {
				if err := k.Submit((g+i)%7, func() { ran.Add(1) }); err != nil {
					t.Errorf("Submit = %v", err)
				}
				if i%50 == 0 {
					k.Wait()
				}
			}
		}()
	}
	close(release)
	wg.Wait()
	k.Wait()
	if got, want := ran.Load(), int64(64*per); got != want {
		t.Fatalf("%d tasks ran, want %d", got, want)
	}
}

// TestKeyedPanicAndGoexitDoNotWedgeTheKey: a task that panics (also with nil) goes to the
// pool's panic handler, and one that calls runtime.Goexit ends; either way the key's next
// tasks run, in order.
func TestKeyedPanicAndGoexitDoNotWedgeTheKey(t *testing.T) {
	t.Parallel()
	var panics atomic.Int32
	p := crew.New(2, crew.WithPanicHandler(func(any, []byte) { panics.Add(1) }))
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var order []int // written by key 1's tasks only
	for i := range 12 {
		must(t, k.Submit(1, func() {
			order = append(order, i)
			switch i % 4 {
			case 1:
				panic("boom")
			case 2:
				runtime.Goexit()
			case 3:
				panic(nil)
			}
		}))
	}
	k.Wait()
	if len(order) != 12 {
		t.Fatalf("ran %v, want 12 tasks", order)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("ran in order %v", order)
		}
	}
	if n := panics.Load(); n != 6 {
		t.Fatalf("panic handler called %d times, want 6", n)
	}
}

// TestKeyedOnStoppedPool: after the pool stops, submits return ErrStopped, and tasks accepted
// before still run.
func TestKeyedOnStoppedPool(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	k := crew.NewKeyed[int](p)
	gate := make(chan struct{})
	var ran atomic.Int32
	must(t, k.Submit(1, func() { <-gate; ran.Add(1) }))
	for range 20 {
		must(t, k.Submit(1, func() { ran.Add(1) }))
	}
	must(t, k.Submit(2, func() { ran.Add(1) }))
	p.Stop()
	for key := range 3 {
		if err := k.Submit(key, func() { t.Error("a task submitted after Stop ran") }); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("Submit after Stop = %v, want ErrStopped", err)
		}
		if k.TrySubmit(key, func() { t.Error("a task submitted after Stop ran") }) {
			t.Fatal("TrySubmit after Stop = true")
		}
	}
	close(gate)
	p.StopAndWait()
	if got := ran.Load(); got != 22 {
		t.Fatalf("%d accepted tasks ran, want 22", got)
	}
}

// TestKeyedOnSubPoolKeepsTheSubPoolsLimit: on a sub-pool, keyed tasks run at most the
// sub-pool's limit at a time, one per key.
func TestKeyedOnSubPoolKeepsTheSubPoolsLimit(t *testing.T) {
	t.Parallel()
	p := crew.New(4)
	defer p.StopAndWait()
	sub := p.Sub(2)
	k := crew.NewKeyed[int](sub)
	var running, high atomic.Int32
	var perKey [5]int // unsynchronized on purpose: one task per key at a time
	for i := range 500 {
		must(t, k.Submit(i%5, func() {
			if n := running.Add(1); n > high.Load() {
				high.Store(n)
			}
			perKey[i%5]++
			runtime.Gosched()
			running.Add(-1)
		}))
	}
	k.Wait()
	if h := high.Load(); h > 2 {
		t.Fatalf("%d keyed tasks ran at once on a sub-pool of 2", h)
	}
	for key, n := range perKey {
		if n != 100 {
			t.Fatalf("key %d ran %d tasks, want 100", key, n)
		}
	}
}

// TestKeyedQueueSizeBoundsWaitingTasks: with WithQueueSize, a full Keyed rejects under
// WithNonBlocking and TrySubmit, makes SubmitContext give up when ctx ends, and lets a
// blocked Submit in once a task starts or return ErrStopped when the pool stops.
func TestKeyedQueueSizeBoundsWaitingTasks(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	gate := make(chan struct{})
	started := make(chan struct{})
	nb := crew.NewKeyed[int](p, crew.WithQueueSize(2), crew.WithNonBlocking())
	must(t, nb.Submit(1, func() { close(started); <-gate }))
	<-started
	must(t, nb.Submit(1, func() {}))
	must(t, nb.Submit(2, func() {}))
	if err := nb.Submit(3, func() { t.Error("rejected task ran") }); !errors.Is(err, crew.ErrQueueFull) {
		t.Fatalf("Submit on a full non-blocking Keyed = %v, want ErrQueueFull", err)
	}
	if nb.TrySubmit(3, func() { t.Error("rejected task ran") }) {
		t.Fatal("TrySubmit on a full Keyed = true")
	}

	bl := crew.NewKeyed[int](p, crew.WithQueueSize(1))
	must(t, bl.Submit(1, func() {}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- bl.SubmitContext(ctx, 1, func() { t.Error("canceled task ran") }) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext on a full Keyed whose ctx ended = %v", err)
	}
	var ran atomic.Bool
	go func() { errc <- bl.Submit(2, func() { ran.Store(true) }) }()
	close(gate)
	if err := <-errc; err != nil {
		t.Fatalf("blocked Submit once room was made = %v", err)
	}
	bl.Wait()
	nb.Wait()
	if !ran.Load() {
		t.Fatal("the task let in after blocking never ran")
	}
}

// TestKeyedBlockedSubmitReturnsErrStoppedWhenThePoolStops: a submitter blocked on a full
// Keyed returns ErrStopped when the pool stops, and its task never runs.
func TestKeyedBlockedSubmitReturnsErrStoppedWhenThePoolStops(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	gate := make(chan struct{})
	k := crew.NewKeyed[int](p, crew.WithQueueSize(1))
	must(t, k.Submit(1, func() { <-gate }))
	must(t, k.Submit(1, func() {}))
	errc := make(chan error, 1)
	go func() { errc <- k.Submit(2, func() { t.Error("refused task ran") }) }()
	p.Stop()
	if err := <-errc; !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("blocked Submit when the pool stopped = %v, want ErrStopped", err)
	}
	close(gate)
	p.StopAndWait()
}

// TestKeyedInputValidation: bad arguments panic naming the call, and a nil task is refused.
func TestKeyedInputValidation(t *testing.T) {
	t.Parallel()
	p := crew.New(1)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)
	var nilCtx context.Context
	tests := []panicCase{
		{"nil pool", func() { crew.NewKeyed[int](nil) }, "crew: NewKeyed: p must not be nil"},
		{"pool option", func() { crew.NewKeyed[int](p, crew.WithMinWorkers(1)) },
			"crew: NewKeyed: only WithQueueSize and WithNonBlocking apply to a Keyed"},
		{"nil ctx", func() { _ = k.SubmitContext(nilCtx, 1, func() {}) },
			"crew: Keyed.SubmitContext: ctx must not be nil"},
	}
	checkPanics(t, tests)
	if err := k.Submit(1, nil); !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("Submit(nil) = %v", err)
	}
	if err := k.SubmitContext(context.Background(), 1, nil); !errors.Is(err, crew.ErrNilTask) {
		t.Fatalf("SubmitContext(nil) = %v", err)
	}
	if k.TrySubmit(1, nil) {
		t.Fatal("TrySubmit(nil) = true")
	}
}

// TestStopNowHandsBackKeyedAndWeightedTasks: StopNow returns the keyed tasks still waiting
// (their key's state is freed) and weighted tasks not started, as plain functions, and none of
// them runs.
func TestStopNowHandsBackKeyedAndWeightedTasks(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	release := holdWorkers(t, plainPool{p}, 2, 0)
	k := crew.NewKeyed[int](p)
	never := func() { t.Error("a task StopNow returned ran") }
	for key := range 3 {
		for range 4 {
			must(t, k.Submit(key, never))
		}
	}
	must(t, p.SubmitN(2, never))
	got := p.StopNow()
	release()
	p.StopAndWait()
	k.Wait()
	if len(got) != 13 {
		t.Fatalf("StopNow returned %d tasks, want 13", len(got))
	}
}

// TestKeyedTaskThatCallsGoexitIsFinished: a keyed task that calls runtime.Goexit gets its
// Finished hook, as a task of the pool does, on a pool and on a sub-pool, and the key's next
// task runs.
func TestKeyedTaskThatCallsGoexitIsFinished(t *testing.T) {
	for _, onSub := range []bool{false, true} {
		var started, finished atomic.Int32
		hooks := crew.WithHooks(crew.Hooks{
			Started:  func(crew.TaskInfo) { started.Add(1) },
			Finished: func(crew.TaskInfo) { finished.Add(1) },
		})
		root, pool := crew.New(1, hooks), (*crew.Pool)(nil)
		pool = root
		if onSub {
			root = crew.New(1)
			pool = root.Sub(1, hooks)
		}
		k := crew.NewKeyed[string](pool)
		ran := make(chan struct{})
		must(t, k.Submit("a", runtime.Goexit))
		must(t, k.Submit("a", func() { close(ran) }))
		awaitReturn(t, "the key's task after the one that called Goexit", ran)
		awaitReturn(t, "Keyed.Wait", goRun(k.Wait))
		awaitReturn(t, "StopAndWait", goRun(root.StopAndWait))
		if started.Load() != 2 || finished.Load() != 2 {
			t.Errorf("on a sub-pool %v: Started %d times and Finished %d times for 2 keyed tasks, one of which called Goexit",
				onSub, started.Load(), finished.Load())
		}
	}
}
