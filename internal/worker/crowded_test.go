package worker

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubmitYieldsWhenFarAhead guards the back-pressure in Submit: once crowdedFloor tasks are
// queued for one live worker (crowdedPerWorker or more per worker), every submit yields, from
// the one that makes the queue that long on, and none before. The threshold counts live
// workers, not the limit, so a pool allowed 10,000 workers but running one yields as soon as a
// pool limited to one. Config.Start holds the worker that the first submit starts until the
// submits are done, so the waking gate queues every later task whatever the scheduler does.
func TestSubmitYieldsWhenFarAhead(t *testing.T) {
	for _, limit := range []int{1, 10_000} {
		t.Run(fmt.Sprintf("max=%d", limit), func(t *testing.T) {
			var submitting int
			var yieldedAt []int
			defer func(f func()) { crowdedYield = f }(crowdedYield)
			crowdedYield = func() { yieldedAt = append(yieldedAt, submitting) }
			const tasks = crowdedFloor + 9
			var ran atomic.Int64
			starts := make(chan int, tasks) // Start never blocks, even if each task started a worker
			e := New(Config[int]{
				Run:          func(int) { ran.Add(1) },
				MaxWorkers:   limit,
				PanicHandler: noPanic,
				Start:        func(first int, _ int64, _ bool) { starts <- first },
			})
			// Task 0 goes to the worker started; task i leaves i tasks queued.
			var want []int
			for submitting = range tasks {
				submit(t, e, submitting)
				if submitting >= crowdedFloor {
					want = append(want, submitting)
				}
			}
			c := e.Counters()
			go func() {
				for first := range starts {
					go e.Serve(first, 0)
				}
			}()
			stopAndWait(e)
			close(starts)
			if !slices.Equal(yieldedAt, want) {
				t.Fatalf("the submits of tasks %v yielded, want those of tasks %v: those leaving %d to %d queued for one worker",
					yieldedAt, want, crowdedFloor, tasks-1)
			}
			if c.Workers != 1 {
				t.Fatalf("%d workers alive while submitting, want 1", c.Workers)
			}
			if n := e.yielding.Load(); n != 0 {
				t.Fatalf("%d submitters counted as yielding after every submit returned", n)
			}
			if n := ran.Load(); n != tasks {
				t.Fatalf("%d of %d tasks ran", n, tasks)
			}
		})
	}
}

// TestCrowdedYieldersAreCapped checks that no more submitters yield at once than crowded
// allows, that the others return without yielding, and that each yielder is uncounted when
// its yield returns: one-shot submitters must not all queue behind one another.
func TestCrowdedYieldersAreCapped(t *testing.T) {
	release := make(chan struct{})
	var inside atomic.Int64
	defer func(f func()) { crowdedYield = f }(crowdedYield)
	crowdedYield = func() {
		inside.Add(1)
		<-release
	}
	unblock := make(chan struct{})
	var ran atomic.Int64
	e := New(Config[int]{
		Run:          func(int) { <-unblock; ran.Add(1) },
		MaxWorkers:   1,
		PanicHandler: noPanic,
	})
	// One task holds the worker and crowdedFloor-1 wait behind it, so every further submit
	// makes the queue crowded.
	for i := range crowdedFloor {
		if r := e.Submit(i, true, nil); r != Accepted {
			t.Fatalf("Submit = %v, want Accepted", r)
		}
	}
	if n := inside.Load(); n != 0 {
		t.Fatalf("%d yields while the queue was below the threshold, want 0", n)
	}
	const submitters = crowdedYielders + 100
	const limit = crowdedYielders
	var returned atomic.Int64
	var wg sync.WaitGroup
	for i := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.Submit(i, true, nil); r != Accepted {
				t.Errorf("Submit = %v, want Accepted", r)
			}
			returned.Add(1)
		}()
	}
	waitUntil(t, "the submitters past the cap to return", func() bool {
		return returned.Load() == submitters-limit
	})
	waitUntil(t, "the capped submitters to yield", func() bool { return inside.Load() == limit })
	time.Sleep(10 * time.Millisecond) // room for a broken cap to let one more in
	if n := inside.Load(); n != limit {
		t.Fatalf("%d submitters yielding at once, want %d", n, limit)
	}
	close(release)
	wg.Wait()
	if n := e.yielding.Load(); n != 0 {
		t.Fatalf("%d submitters counted as yielding after every submit returned", n)
	}
	close(unblock)
	e.Stop()
	<-e.Exited()
	if got, want := ran.Load(), int64(crowdedFloor+submitters); got != want {
		t.Fatalf("%d of %d tasks ran", got, want)
	}
}

// TestCrowdedThreshold checks when a submit yields: at least crowdedFloor queued tasks,
// crowdedPerWorker or more of them per live worker whatever the limit, and fewer submitters
// already yielding than crowdedYielders. The boundary is exact: one task short of
// crowdedPerWorker per worker (63 per worker and 99 more, for 100) does not yield, exactly
// crowdedPerWorker per worker does, and the floor holds where the per-worker count is met.
func TestCrowdedThreshold(t *testing.T) {
	tests := []struct {
		workers, queued, yielding int
		want                      bool
	}{
		{workers: 1, queued: crowdedFloor - 1, want: false},
		{workers: 1, queued: crowdedFloor, want: true},
		{workers: 1, queued: crowdedFloor, yielding: crowdedYielders - 1, want: true},
		{workers: 1, queued: crowdedFloor, yielding: crowdedYielders, want: false},
		{workers: 63, queued: crowdedFloor - 1, want: false}, // 65 per worker, below the floor
		{workers: 63, queued: crowdedFloor, want: true},
		{workers: 64, queued: 64*crowdedPerWorker - 1, want: false},
		{workers: 64, queued: 64 * crowdedPerWorker, want: true}, // the floor and 64 per worker
		{workers: 100, queued: crowdedFloor, want: false},
		{workers: 100, queued: 100*crowdedPerWorker - 1, want: false},
		{workers: 100, queued: 100 * crowdedPerWorker, want: true},
		{workers: 100, queued: 100*crowdedPerWorker + 1, want: true},
		{workers: 100, queued: 100 * crowdedPerWorker, yielding: crowdedYielders, want: false},
	}
	for _, tt := range tests {
		e := &Engine[int]{max: 10_000, workers: tt.workers}
		e.yielding.Store(int32(tt.yielding))
		for i := range tt.queued {
			e.queue.PushAt(i, 0)
		}
		if got := e.crowded(); got != tt.want {
			t.Errorf("%d workers alive of 10,000, %d queued, %d yielding: crowded() = %v, want %v",
				tt.workers, tt.queued, tt.yielding, got, tt.want)
		}
	}
}
