package suites

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/benchmarks/contenders"
)

// adaptiveContenders are the adaptive suite's contenders: crew with WithAdaptiveLimit (named
// crew, the reference) and crew at fixed limits of a quarter, one, four and sixteen times C,
// the capacity of what the tasks use.
var adaptiveContenders = []string{"crew", "fixed-0.25C", "fixed-1C", "fixed-4C", "fixed-16C"}

// fixedLimit returns the limit of a fixed contender at capacity c, or 0 for crew.
func fixedLimit(name string, c int) int {
	switch name {
	case "fixed-0.25C":
		return max(1, c/4)
	case "fixed-1C":
		return c
	case "fixed-4C":
		return 4 * c
	case "fixed-16C":
		return 16 * c
	}
	return 0
}

// downstream is a service of a number of slots (changeable while it runs) that each call
// holds for latency; calls beyond the slots wait their turn, first come first served, so a
// call's latency grows once more calls are in flight than the service has slots.
type downstream struct {
	mu      sync.Mutex
	slots   int
	busy    int
	waiting []chan struct{}
	latency time.Duration
}

func (d *downstream) call() {
	d.mu.Lock()
	if d.busy < d.slots {
		d.busy++
		d.mu.Unlock()
	} else {
		ch := make(chan struct{})
		d.waiting = append(d.waiting, ch)
		d.mu.Unlock()
		<-ch // handed a slot
	}
	time.Sleep(d.latency)
	d.mu.Lock()
	d.busy--
	d.handOver()
	d.mu.Unlock()
}

// handOver gives free slots to waiting calls. Callers hold d.mu.
func (d *downstream) handOver() {
	for d.busy < d.slots && len(d.waiting) > 0 {
		close(d.waiting[0])
		d.waiting = d.waiting[1:]
		d.busy++
	}
}

func (d *downstream) resize(n int) {
	d.mu.Lock()
	d.slots = n
	d.handOver()
	d.mu.Unlock()
}

// adaptivePhase is one stretch of the downstream workload at a number of slots.
type adaptivePhase struct {
	slots int
	// The tasks completed and their run times, in the phase's first and second half.
	halves            [2]runTally
	start, mid, end   time.Time
	samples           []limitSample // the pool's limit, every few milliseconds
	settled, inBand   float64       // seconds to settle in [slots, 2·slots]; the share of time in it after
	finalLimit, first int
}

type runTally struct{ completed, runNanos atomic.Int64 }

type limitSample struct {
	at    time.Time
	limit int
}

// settle finds the first sample in [lo, hi] from which on the limit is in [lo, hi] at
// least 98% of the samples until the phase's end (a probe halves it for a window or two,
// on purpose), and sets p.settled to the seconds from the phase's start to it (-1: never)
// and p.inBand to the share of samples in [lo, hi] after it.
func (p *adaptivePhase) settle(lo, hi int) {
	p.settled, p.inBand = -1, 0
	in := func(s limitSample) bool { return s.limit >= lo && s.limit <= hi }
	for i, s := range p.samples {
		if !in(s) {
			continue
		}
		n := 0
		for _, t := range p.samples[i:] {
			if in(t) {
				n++
			}
		}
		if share := float64(n) / float64(len(p.samples)-i); share >= 0.98 {
			p.settled, p.inBand = s.at.Sub(p.start).Seconds(), share
			return
		}
	}
}

// adaptivePhaseTime is the length of each phase of the downstream workload: 5 s, the time
// the adaptive limit is given to settle.
func adaptivePhaseTime() time.Duration {
	if testing.Short() {
		return time.Second
	}
	return 5 * time.Second
}

// runDownstream is the downstream workload on one contender: one goroutine submits without
// pause (the pool's bounded queue makes it wait) calls to a service of 16 slots of 2 ms for
// one phase, then of 64 slots for a second phase, and reports per phase the throughput, the
// mean run time of a task (its call, queueing inside the service included), and for the
// adaptive pool the final limit, the seconds it took to settle between the slots and twice
// as many, and the share of time it stayed there after. ns/op is the time per task over both
// phases. Every submitted task is counted and must have run.
func runDownstream(b *testing.B, name string) {
	const c, latency = 16, 2 * time.Millisecond
	for range b.N {
		svc := &downstream{slots: c, latency: latency}
		phases := []*adaptivePhase{{slots: c}, {slots: 4 * c}}
		var cur atomic.Pointer[adaptivePhase]
		var half atomic.Pointer[runTally]
		cur.Store(phases[0])
		half.Store(&phases[0].halves[0])
		var p *crew.Pool
		if n := fixedLimit(name, c); n > 0 {
			p = crew.New(n, crew.WithQueueSize(256))
		} else {
			p = crew.New(16*c, crew.WithAdaptiveLimit(1), crew.WithQueueSize(256))
		}
		var submitted, ran atomic.Int64
		task := func() {
			t0 := time.Now()
			svc.call()
			run := time.Since(t0)
			h := half.Load()
			h.runNanos.Add(int64(run))
			h.completed.Add(1)
			ran.Add(1)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the steady stream of submits
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := p.Submit(task); err != nil {
					b.Error(err)
					return
				}
				submitted.Add(1)
			}
		}()
		go func() { // the limit, sampled
			defer wg.Done()
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-tick.C:
					ph := cur.Load()
					ph.samples = append(ph.samples, limitSample{now, p.Stats().MaxWorkers})
				}
			}
		}()
		b.ResetTimer()
		start := time.Now()
		for i, ph := range phases {
			if i > 0 {
				svc.resize(ph.slots)
				cur.Store(ph)
				half.Store(&ph.halves[0])
			}
			ph.start = time.Now()
			ph.first = p.Stats().MaxWorkers
			time.Sleep(adaptivePhaseTime() / 2)
			half.Store(&ph.halves[1])
			ph.mid = time.Now()
			time.Sleep(adaptivePhaseTime() / 2)
			ph.end = time.Now()
			ph.finalLimit = p.Stats().MaxWorkers
		}
		elapsed := time.Since(start)
		close(stop)
		wg.Wait()
		p.StopAndWait()
		b.StopTimer()
		if got, want := ran.Load(), submitted.Load(); got != want {
			b.Fatalf("%s: %d of %d tasks ran", name, got, want)
		}
		var done int64
		for i, ph := range phases {
			first, second := &ph.halves[0], &ph.halves[1]
			done += first.completed.Load() + second.completed.Load()
			tag := fmt.Sprintf("c%d-", ph.slots)
			// Throughput and run time in the phase's second half, once the limit settled;
			// the first half holds the descent from the ceiling (or the climb).
			b.ReportMetric(float64(second.completed.Load())/ph.end.Sub(ph.mid).Seconds(), tag+"tasks/s")
			b.ReportMetric(float64(second.runNanos.Load())/float64(max(1, second.completed.Load()))/1e6, tag+"run-ms")
			b.ReportMetric(float64(first.completed.Load())/ph.mid.Sub(ph.start).Seconds(), tag+"first-half-tasks/s")
			if fixedLimit(name, c) == 0 {
				ph.settle(ph.slots, 2*ph.slots)
				b.ReportMetric(float64(ph.finalLimit), tag+"limit")
				b.ReportMetric(ph.settled, tag+"settle-s")
				b.ReportMetric(100*ph.inBand, tag+"in-band-%")
				b.Logf("phase %d (%d slots): limit %d at the start, %d at the end; settled after %.3f s, in band %.1f%% after; %d samples, min %d, max %d",
					i+1, ph.slots, ph.first, ph.finalLimit, ph.settled, 100*ph.inBand, len(ph.samples),
					slices.MinFunc(ph.samples, byLimit).limit, slices.MaxFunc(ph.samples, byLimit).limit)
				var trace []int
				for k := 0; k < len(ph.samples); k += max(1, len(ph.samples)/60) {
					trace = append(trace, ph.samples[k].limit)
				}
				b.Logf("phase %d: the limit at %d evenly spaced samples: %v", i+1, len(trace), trace)
			}
		}
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(max(1, done)), "ns/op")
	}
}

func byLimit(a, b limitSample) int { return a.limit - b.limit }

// adaptiveAES is the compute workload's pool for a contender: crew is
// New(10_000, WithAdaptiveLimit(1)), the others fixed multiples of C = GOMAXPROCS.
func adaptiveAES(name string) contenders.Contender {
	return contenders.Contender{Name: name, Kind: contenders.Crew, New: func(int) contenders.Runner {
		if n := fixedLimit(name, runtime.GOMAXPROCS(0)); n > 0 {
			return crewRunner{crew.New(n)}
		}
		return crewRunner{crew.New(shrink(ultrapoolWorkers, 100), crew.WithAdaptiveLimit(1))}
	}}
}

type crewRunner struct{ p *crew.Pool }

func (r crewRunner) Submit(task func()) error { return r.p.Submit(task) }
func (r crewRunner) StopAndWait()             { r.p.StopAndWait() }

// BenchmarkAdaptive measures WithAdaptiveLimit against fixed limits at a quarter, one, four
// and sixteen times C, the capacity of what the tasks use:
//
//   - load=service/task=16-then-64-slots: tasks that call a service of C = 16 slots of 2 ms (calls
//     beyond the slots queue inside it), fed by one submitter without pause for 5 s; then
//     the service grows to 64 slots for 5 s more. The adaptive pool starts at its ceiling of
//     256 (16C). Reported per phase: tasks/s and mean run time in ms (run-ms) in the
//     phase's second half, tasks/s in its first half, and for the adaptive pool its final
//     limit, the seconds it took to settle in [C, 2C] (the limit in
//     it for 98% of the samples after) and the share of samples in it after (in-band-%).
//     ns/op is the time per task over both phases.
//   - load=cpu/task=aescbc-8kB: AES-128-CBC of 8 kB per task from ten submitters per processor
//     (b.RunParallel), C = GOMAXPROCS; the adaptive pool is New(10_000,
//     WithAdaptiveLimit(1)). ns/op is the time per task.
func BenchmarkAdaptive(b *testing.B) {
	for _, name := range adaptiveContenders {
		b.Run("load=service/task=16-then-64-slots/pool="+name, func(b *testing.B) { runDownstream(b, name) })
	}
	for _, name := range adaptiveContenders {
		c := adaptiveAES(name)
		b.Run("load=cpu/task=aescbc-8kB/pool="+name, func(b *testing.B) {
			runParallel(b, c, 0, 10, func() { _ = encryptCBC(plain8k) })
		})
	}
}
