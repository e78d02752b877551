package crew_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// SubmitN: "The weights of the running tasks never sum above MaxWorkers (on a sub-pool, above
// its limit or any of its ancestors')"; Resize: "From its return ... no task starts while that
// many or more run". Two tasks of weight 2 of a sub-pool of limit 4 wait (as forwarded workers)
// in the busy parent's queue; the sub-pool is resized to 2; when the parent frees up, both
// must not start together: their weights would sum to 4, above the sub-pool's new limit 2.
func TestAmidWeightedSubPoolTasksObeyAShrinkingResize(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 4, 0)
	sub := p.Sub(4)
	var held, high atomic.Int64
	task := func() {
		h := held.Add(2)
		for m := high.Load(); h > m && !high.CompareAndSwap(m, h); m = high.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		held.Add(-2)
	}
	must(t, sub.SubmitN(2, task))
	must(t, sub.SubmitN(2, task))
	time.Sleep(5 * time.Millisecond)
	sub.Resize(2)
	if s := sub.Stats(); s.MaxWorkers != 2 {
		t.Fatalf("sub-pool MaxWorkers %d after Resize(2)", s.MaxWorkers)
	}
	release()
	awaitReturn(t, "sub.Wait", goRun(sub.Wait))
	t.Logf("high %d", high.Load())
	if h := high.Load(); h > 2 {
		t.Errorf("weights of the sub-pool's running tasks summed to %d after Resize(2) returned", h)
	}
}

// The same at a pool of its own (control): two tasks of weight 2 queued on a pool of 4 whose
// workers are busy; Resize(2); then they must run one at a time.
func TestAmidWeightedQueuedTasksObeyAShrinkingResize(t *testing.T) {
	p := crew.New(4)
	defer p.StopAndWait()
	release := holdWorkers(t, plainPool{p}, 4, 0)
	var held, high atomic.Int64
	task := func() {
		h := held.Add(2)
		for m := high.Load(); h > m && !high.CompareAndSwap(m, h); m = high.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		held.Add(-2)
	}
	must(t, p.SubmitN(2, task))
	must(t, p.SubmitN(2, task))
	p.Resize(2)
	release()
	awaitReturn(t, "p.Wait", goRun(p.Wait))
	if h := high.Load(); h > 2 {
		t.Errorf("weights of running tasks summed to %d after Resize(2) returned", h)
	}
}
