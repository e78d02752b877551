//go:build go1.25

package crew_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// TestCPUsTimerReadsGOMAXPROCSWhileSubmitting proves, on a bubble's clock and without a
// Stats call (which reads GOMAXPROCS itself), that a pool submitted to reads GOMAXPROCS a
// second after its last reading and applies it to the tasks waiting, and that a Resize to a
// number stops it. It sets GOMAXPROCS, so it does not run in parallel.
func TestCPUsTimerReadsGOMAXPROCSWhileSubmitting(t *testing.T) {
	setProcs(t, 2)
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(crew.CPUs)
		var hw highWater
		release := make(chan struct{})
		for range 10 {
			must(t, p.Submit(func() { hw.enter(); <-release; hw.exit() }))
		}
		synctest.Wait()
		runtime.GOMAXPROCS(3)
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if n := hw.running.Load(); n != 2 {
			t.Fatalf("%d running 999ms after the first submit, want 2", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := hw.running.Load(); n != 3 {
			t.Fatalf("%d running a second after the first submit with GOMAXPROCS 3, want 3", n)
		}

		p.Resize(5)
		synctest.Wait()
		runtime.GOMAXPROCS(2)
		must(t, p.Submit(func() {}))
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := hw.running.Load(); n != 5 {
			t.Fatalf("%d running an hour after Resize(5), want 5", n)
		}
		close(release)
		p.StopAndWait()
	})
}

// resource is a service of a number of slots, changeable, that each call holds for about
// latency (± 10%, the same for the same call number); calls beyond the slots wait first
// come first served.
type resource struct {
	mu      sync.Mutex
	slots   int
	busy    int
	waiting []chan struct{}
	latency time.Duration
	calls   atomic.Uint64
}

func (r *resource) call() {
	r.mu.Lock()
	if r.busy < r.slots {
		r.busy++
		r.mu.Unlock()
	} else {
		ch := make(chan struct{})
		r.waiting = append(r.waiting, ch)
		r.mu.Unlock()
		<-ch // the slot is handed over
	}
	n := r.calls.Add(1)
	jitter := float64(n*0x9E3779B97F4A7C15>>40) / float64(1<<24) // in [0, 1)
	time.Sleep(time.Duration(float64(r.latency) * (0.9 + 0.2*jitter)))
	r.mu.Lock()
	r.handOver()
	r.busy--
	r.mu.Unlock()
}

// handOver gives freed slots to waiting calls. Callers hold r.mu and count one slot freed.
func (r *resource) handOver() {
	for r.busy <= r.slots && len(r.waiting) > 0 {
		close(r.waiting[0])
		r.waiting = r.waiting[1:]
		r.busy++
	}
}

func (r *resource) resize(n int) {
	r.mu.Lock()
	r.slots = n
	r.busy++ // handOver counts one slot freed
	r.handOver()
	r.busy--
	r.mu.Unlock()
}

// TestAdaptiveLimitFindsTheCapacityOfAResource proves WithAdaptiveLimit's convergence on a
// bubble's clock: a pool with a ceiling of 256, fed without pause, in front of a resource of
// 16 slots of 2 ms, settles between 16 and 32 within 5 s, keeps the resource at least 90%
// busy and its tasks' mean run time at most 3 ms; when the resource grows to 64 slots, the
// limit follows to between 64 and 128 within 5 s.
func TestAdaptiveLimitFindsTheCapacityOfAResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := &resource{slots: 16, latency: 2 * time.Millisecond}
		p := crew.New(256, crew.WithAdaptiveLimit(1), crew.WithQueueSize(512))
		type change struct {
			at time.Duration
			n  int
		}
		start := time.Now()
		var mu sync.Mutex
		var changes []change
		crew.OnLimit(p, func(n int) {
			mu.Lock()
			changes = append(changes, change{time.Since(start), n})
			mu.Unlock()
		})
		var runs, runNanos atomic.Int64
		stop := make(chan struct{})
		fed := goRun(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				must(t, p.Submit(func() {
					t0 := time.Now()
					res.call()
					runNanos.Add(int64(time.Since(t0)))
					runs.Add(1)
				}))
			}
		})
		// settled returns the earliest time after from when the limit was in [lo, hi] and
		// from which on, until now, it was in it at least 98% of the time, or -1. Not all of it: a probe halves
		// the limit for a window or two now and then, on purpose.
		settled := func(lo, hi int, from time.Duration) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			now := time.Since(start)
			limit := 256
			var points []change
			for _, c := range changes {
				if c.at <= from {
					limit = c.n
				} else {
					points = append(points, c)
				}
			}
			points = append([]change{{from, limit}}, points...)
			for i := range points {
				var out time.Duration
				for j := i; j < len(points); j++ {
					end := now
					if j+1 < len(points) {
						end = points[j+1].at
					}
					if points[j].n < lo || points[j].n > hi {
						out += end - points[j].at
					}
				}
				if in := points[i].n >= lo && points[i].n <= hi; in && out <= (now-points[i].at)/50 {
					return points[i].at
				}
			}
			return -1
		}
		phase := func(lo, hi int, from time.Duration) {
			t.Helper()
			time.Sleep(5*time.Second - time.Since(start.Add(from)))
			n0, r0 := runs.Load(), runNanos.Load()
			time.Sleep(5 * time.Second)
			n, mean := runs.Load()-n0, time.Duration((runNanos.Load()-r0)/max(1, runs.Load()-n0))
			limit := p.Stats().MaxWorkers
			at := settled(lo, hi, from)
			t.Logf("from %v: limit %d, settled %v after, %d tasks/s, mean run time %v", from, limit, at-from, n/5, mean)
			if limit < lo || limit > hi || at < 0 || at-from > 5*time.Second {
				t.Errorf("limit %d, in [%d, %d] from %v on; want in it within 5 s", limit, lo, hi, at-from)
			}
			if want := int64(0.9 * float64(lo) / 0.002 * 5); n < want {
				t.Errorf("%d tasks in 5 s, want at least %d", n, want)
			}
			if mean > 3*time.Millisecond {
				t.Errorf("mean run time %v, want at most 3ms", mean)
			}
		}
		phase(16, 32, 0)
		res.resize(64)
		phase(64, 128, 10*time.Second)
		close(stop)
		<-fed
		p.StopAndWait()
	})
}
