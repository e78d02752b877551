package crew_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	"github.com/crewgo/crew/internal/histogram"
)

var benchWorkers = []int{1, 8, 1024}

// BenchmarkSubmit measures one submitter queuing tiny tasks, against a goroutine per task.
func BenchmarkSubmit(b *testing.B) {
	for _, w := range benchWorkers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			var ran atomic.Int64
			task := func() { ran.Add(1) }
			p := crew.New(w)
			for range b.N {
				if err := p.Submit(task); err != nil {
					b.Fatal(err)
				}
			}
			p.StopAndWait()
			checkRan(b, &ran, b.N)
		})
	}
	b.Run("baseline=goroutines", func(b *testing.B) {
		b.ReportAllocs()
		var ran atomic.Int64
		var wg sync.WaitGroup
		for range b.N {
			wg.Add(1)
			go func() {
				ran.Add(1)
				wg.Done()
			}()
		}
		wg.Wait()
		checkRan(b, &ran, b.N)
	})
}

// holdWorker has a worker of p run a task that blocks until release is called, and returns
// once it runs.
func holdWorker(b *testing.B, p *crew.Pool) (release func()) {
	task, started, gate := blocker()
	if err := p.Submit(task); err != nil {
		b.Fatal(err)
	}
	<-started
	return func() { close(gate) }
}

// BenchmarkUncontended measures each side of a task alone, with nobody else taking the lock.
// side=submit times submits into a queue whose one worker is held, in rounds of 4,000, below
// the backlog at which Submit yields; side=drain times that worker running the tasks queued
// meanwhile, in rounds of 100,000. What is not measured runs with the timer stopped.
func BenchmarkUncontended(b *testing.B) {
	for _, side := range []string{"submit", "drain"} {
		b.Run("side="+side, func(b *testing.B) {
			b.ReportAllocs()
			round := 100000
			if side == "submit" {
				round = 4000
			}
			var ran atomic.Int64
			task := func() { ran.Add(1) }
			p := crew.New(1)
			defer p.StopAndWait()
			b.StopTimer()
			for done := 0; done < b.N; done += round {
				release := holdWorker(b, p)
				if side == "submit" {
					b.StartTimer()
				}
				for range min(round, b.N-done) {
					if err := p.Submit(task); err != nil {
						b.Fatal(err)
					}
				}
				if side == "submit" {
					b.StopTimer()
				} else {
					b.StartTimer()
				}
				release()
				p.Wait()
				b.StopTimer()
			}
			checkRan(b, &ran, b.N)
		})
	}
}

// BenchmarkSleepingTasks measures ultrapool's shape end to end: a pool of 10,000 workers
// fed 1 µs sleeps by 20 or 200 goroutines, timed until the last has run. Its figures vary
// less between runs than the suite's (within 3%), which is what placing the engine's fields
// needs (internal/worker/measurements.md, "Where the engine's fields sit").
func BenchmarkSleepingTasks(b *testing.B) {
	for _, submitters := range []int{20, 200} {
		b.Run(fmt.Sprintf("submitters=%d", submitters), func(b *testing.B) {
			b.ReportAllocs()
			sleepingTasks(b, b.N, submitters)
			b.StopTimer()
		})
	}
}

// BenchmarkKeyed measures one submitter of tiny tasks over 8 keys of a Keyed, on a pool of 4
// and on a prioritised sub-pool of one, timed until the last has run: each key's turn runs
// its tasks back to back, asking the pool before each one whether it may go on
// (internal/worker/measurements.md, "A key's turn asks before each keyed task").
func BenchmarkKeyed(b *testing.B) {
	for _, onSub := range []bool{false, true} {
		b.Run(fmt.Sprintf("sub=%v", onSub), func(b *testing.B) {
			b.ReportAllocs()
			root := crew.New(4)
			p := root
			if onSub {
				p = root.Sub(4, crew.WithPriority(1))
			}
			k := crew.NewKeyed[int](p)
			var ran atomic.Int64
			task := func() { ran.Add(1) }
			for i := range b.N {
				if err := k.Submit(i%8, task); err != nil {
					b.Fatal(err)
				}
			}
			k.Wait()
			b.StopTimer()
			root.StopAndWait()
			checkRan(b, &ran, b.N)
		})
	}
}

// BenchmarkInvoke measures one submitter passing an int to a FuncPool.
func BenchmarkInvoke(b *testing.B) {
	for _, w := range benchWorkers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			var ran atomic.Int64
			p := crew.NewFunc(w, func(v int) { ran.Add(int64(v)) })
			for range b.N {
				if err := p.Invoke(1); err != nil {
					b.Fatal(err)
				}
			}
			p.StopAndWait()
			checkRan(b, &ran, b.N)
		})
	}
}

// submitParallel submits task to p from b.RunParallel's goroutines, counting in sent the
// tasks p accepted.
func submitParallel(b *testing.B, p *crew.Pool, task func(), sent *atomic.Int64) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := p.Submit(task); err != nil {
				b.Error(err)
				return
			}
			sent.Add(1)
		}
	})
}

// BenchmarkSubmitParallel measures GOMAXPROCS submitters sharing one pool.
func BenchmarkSubmitParallel(b *testing.B) {
	for _, w := range benchWorkers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			var ran, sent atomic.Int64
			task := func() { ran.Add(1) }
			p := crew.New(w)
			submitParallel(b, p, task, &sent)
			p.StopAndWait()
			checkRan(b, &ran, int(sent.Load()))
		})
	}
	b.Run("baseline=goroutines", func(b *testing.B) {
		b.ReportAllocs()
		var ran, sent atomic.Int64
		var wg sync.WaitGroup
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				wg.Add(1)
				go func() {
					ran.Add(1)
					wg.Done()
				}()
				sent.Add(1)
			}
		})
		wg.Wait()
		checkRan(b, &ran, int(sent.Load()))
	})
}

// BenchmarkInvokeParallel measures GOMAXPROCS submitters sharing one FuncPool.
func BenchmarkInvokeParallel(b *testing.B) {
	for _, w := range benchWorkers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			var ran, sent atomic.Int64
			p := crew.NewFunc(w, func(v int) { ran.Add(int64(v)) })
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := p.Invoke(1); err != nil {
						b.Error(err)
						return
					}
					sent.Add(1)
				}
			})
			p.StopAndWait()
			checkRan(b, &ran, int(sent.Load()))
		})
	}
}

// BenchmarkSubmitWithHistograms measures what observing tasks costs on ultrapool's workload
// with 1 µs sleeps: a pool of 10,000 workers, par submitters per GOMAXPROCS (b.SetParallelism)
// each submitting a task that sleeps a microsecond, with nothing observed (observe=off),
// WithLatencyHistograms (histograms), the histograms timing one task in 16 (sampled:
// WithLatencySample), and WithHooks with Started and Finished set (hooks).
//
// observe=breakdown runs, in one benchmark, b.N tasks on the pool without histograms and b.N
// on one with them, then what histograms need per task in isolation, on every processor at
// once as the pool's workers run: three clock readings (a task's submit, start and end) and
// two records (its wait and its run). It reports each per task (off-ns, hist-ns, clock-ns,
// record-ns), the extra cost of histograms beyond the clock and the records (rest-ns: hist -
// off - clock - record), and that extra cost over what the clock and the records cost
// (x-obs: (hist - off) / (clock + record)). It also runs b.N tasks on a pool with histograms
// whose clock reads nothing, which parts the extra cost inside the pool: clock-pool-ns (hist
// less that run) is what the three readings cost there, and rest-pool-ns (that run less off
// and record) is crew's code with the records. That clock returns one time: a pool given one
// (test-only: WithClock) calls it and subtracts, a few ns, and records every wait and run in
// one bucket. Last, b.N tasks on a pool whose histograms time one task in 16
// (WithLatencySample) give sampled-extra-ns, their extra cost over off. For reference, the
// same tasks run on the least a pool can be (floorPool), without and with the readings and
// the records and nothing else around them: floor-off-ns, floor-hist-ns, and floor-x-obs,
// x-obs of that pool.
//
// Each of those runs is made in breakdownRounds rounds of b.N/breakdownRounds tasks, the
// rounds of all the runs interleaved, and each figure is the median of its rounds; a round
// of each comes first and is not counted. A pool on
// this workload settles in one of two states for a whole run (most tasks handed to a parked
// worker, or most of them queued), which differ by up to a factor of two per task; a run of
// each against a run of each compared states as often as observing, and the medians of
// interleaved rounds compare the state most rounds are in. The figures are CPU time of the
// whole process per task (wall time where it cannot be read, off unix): on a machine shared
// with other work, that inflates wall time by whatever share of the processors the others
// take, which the phases of one run do not get alike, but leaves CPU time as it is.
func BenchmarkSubmitWithHistograms(b *testing.B) {
	noop := func(crew.TaskInfo) {}
	observe := []struct {
		name string
		opts []crew.Option
	}{
		{"off", nil},
		{"histograms", []crew.Option{crew.WithLatencyHistograms()}},
		{"sampled", []crew.Option{crew.WithLatencyHistograms(), crew.WithLatencySample(16)}},
		{"hooks", []crew.Option{crew.WithHooks(crew.Hooks{Started: noop, Finished: noop})}},
	}
	for _, par := range []int{1, 10, 100} {
		for _, o := range observe {
			b.Run(fmt.Sprintf("par=%d/observe=%s", par, o.name), func(b *testing.B) {
				b.ReportAllocs()
				sleepingPool(b, par, o.opts...)
			})
		}
		b.Run(fmt.Sprintf("par=%d/observe=breakdown", par), func(b *testing.B) {
			breakdown(b, par)
		})
	}
}

// breakdownRounds is how many rounds each run of observe=breakdown is made in, after one
// round of each that is not counted: the first pools of a process start their goroutines'
// stacks and the runtime's caches, and took a fifth longer per task.
const breakdownRounds = 7

// breakdown is BenchmarkSubmitWithHistograms' observe=breakdown, from par submitters per
// processor.
func breakdown(b *testing.B, par int) {
	n := max(1, b.N/breakdownRounds)
	perTask := func(f func()) float64 {
		start := time.Now()
		cpuStart, cpu := processCPU()
		f()
		if cpuEnd, ok := processCPU(); cpu && ok {
			return float64((cpuEnd - cpuStart).Nanoseconds()) / float64(n)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	hist := crew.WithLatencyHistograms()
	subs := par * runtime.GOMAXPROCS(0)
	runs := []func(){
		func() { sleepingTasks(b, n, subs) },
		func() { sleepingTasks(b, n, subs, hist) },
		func() { onEveryProcessor(n, readClock) },
		func() { onEveryProcessor(n, recordTwo) },
		func() { sleepingTasks(b, n, subs, hist, crew.WithClock(freeClock())) },
		func() { sleepingTasks(b, n, subs, hist, crew.WithLatencySample(16)) },
		func() { floorPool(b, n, subs, false) },
		func() { floorPool(b, n, subs, true) },
	}
	rounds := make([][]float64, len(runs))
	b.ResetTimer()
	for r := range breakdownRounds + 1 {
		for i, f := range runs {
			if t := perTask(f); r > 0 {
				rounds[i] = append(rounds[i], t)
			}
		}
	}
	m := make([]float64, len(runs))
	for i := range rounds {
		slices.Sort(rounds[i])
		m[i] = rounds[i][len(rounds[i])/2]
	}
	off, hist2, clock, record, free, sampled := m[0], m[1], m[2], m[3], m[4], m[5]
	floorOff, floorHist := m[6], m[7]
	b.ReportMetric(floorOff, "floor-off-ns")
	b.ReportMetric(floorHist, "floor-hist-ns")
	b.ReportMetric((floorHist-floorOff)/(clock+record), "floor-x-obs")
	b.ReportMetric(off, "off-ns")
	b.ReportMetric(hist2, "hist-ns")
	b.ReportMetric(clock, "clock-ns")
	b.ReportMetric(record, "record-ns")
	b.ReportMetric(hist2-off-clock-record, "rest-ns")
	b.ReportMetric(hist2-free, "clock-pool-ns")
	b.ReportMetric(free-off-record, "rest-pool-ns")
	b.ReportMetric((hist2-off)/(clock+record), "x-obs")
	b.ReportMetric(sampled-off, "sampled-extra-ns")
}

// floorPool runs n tasks that sleep a microsecond on the least a pool can be: 10,000
// goroutines receiving from one buffered channel, fed by the given number of submitters. With
// observe, it does what histograms need and nothing more: a submit reads the clock and sends
// the time with the task, and a worker reads it as the task starts and ends and records the
// wait and the run. The breakdown runs it with and without to tell what observing costs on a
// pool with no code of its own around the readings and the records (floor-x-obs).
func floorPool(b *testing.B, n, submitters int, observe bool) {
	type job struct {
		f  func()
		at time.Duration
	}
	var ran, left atomic.Int64
	task := func() {
		time.Sleep(time.Microsecond)
		ran.Add(1)
	}
	epoch := time.Now()
	wait, run := histogram.New(), histogram.New()
	jobs := make(chan job, 1024)
	var workers sync.WaitGroup
	for range 10_000 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				if !observe {
					j.f()
					continue
				}
				start := time.Since(epoch)
				wait.Record(start - j.at)
				j.f()
				run.Record(time.Since(epoch) - start)
			}
		}()
	}
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				j := job{f: task}
				if observe {
					j.at = time.Since(epoch)
				}
				jobs <- j
			}
		}()
	}
	wg.Wait()
	close(jobs)
	workers.Wait()
	checkRan(b, &ran, n)
	var s histogram.Snapshot
	if run.Snapshot(&s); observe && s.Count != uint64(n) {
		b.Fatalf("floor pool recorded %d of %d tasks", s.Count, n)
	}
}

// sleepingTasks runs n tasks that sleep a microsecond on a pool of 10,000 workers built with
// opts, submitted by the given number of goroutines, which share them out, and checks that
// each ran (and, with histograms, was counted). It returns once the pool has stopped.
func sleepingTasks(b *testing.B, n, submitters int, opts ...crew.Option) {
	var ran, left atomic.Int64
	task := func() {
		time.Sleep(time.Microsecond)
		ran.Add(1)
	}
	p := crew.New(10_000, opts...)
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := p.Submit(task); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.StopAndWait()
	var sent atomic.Int64
	sent.Store(int64(n))
	checkPool(b, p, &ran, &sent)
}

// sleepingPool runs b.N tasks that sleep a microsecond on a pool of 10,000 workers built with
// opts, from par submitters per processor, and checks that each ran (and, with histograms,
// was counted).
func sleepingPool(b *testing.B, par int, opts ...crew.Option) {
	var ran, sent atomic.Int64
	task := func() {
		time.Sleep(time.Microsecond)
		ran.Add(1)
	}
	p := crew.New(10_000, opts...)
	b.SetParallelism(par)
	submitParallel(b, p, task, &sent)
	p.StopAndWait()
	checkPool(b, p, &ran, &sent)
}

// checkPool checks that each task sent ran and, with histograms, was counted.
func checkPool(b *testing.B, p *crew.Pool, ran, sent *atomic.Int64) {
	checkRan(b, ran, int(sent.Load()))
	if s := p.Stats(); s.RunTime != nil && s.RunTime.Count != uint64(sent.Load()) && !sampled(s.RunTime.Count, sent.Load()) {
		b.Fatalf("histogram counted %d of %d tasks", s.RunTime.Count, sent.Load())
	}
}

// sampled reports whether count is what a histogram sampled one in 16 may hold for n tasks: a
// multiple of 16, within a quarter of n plus 16 tasks' worth.
func sampled(count uint64, n int64) bool {
	d := int64(count) - n
	return count%16 == 0 && max(d, -d) <= n/4+16*16
}

// onEveryProcessor runs f(n/GOMAXPROCS) on GOMAXPROCS goroutines at once (f(n - the others'
// share) on one of them) and waits for them.
func onEveryProcessor(n int, f func(n int)) {
	procs := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for i := range procs {
		share := n / procs
		if i == 0 {
			share += n % procs
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(share)
		}()
	}
	wg.Wait()
}

// clockSink keeps the clock readings of readClock alive.
var clockSink atomic.Int64

// readClock reads the clock three times for each of n tasks, as a pool with histograms does:
// time.Since on a time with a monotonic reading, which reads the monotonic clock alone.
func readClock(n int) {
	epoch := time.Now()
	var sum time.Duration
	for range n {
		sum += time.Since(epoch)
		sum += time.Since(epoch)
		sum += time.Since(epoch)
	}
	clockSink.Add(int64(sum))
}

// freeClock returns a clock that reads nothing: every call returns the time it was made,
// so every wait and run is recorded as 0.
func freeClock() func() time.Time {
	epoch := time.Now()
	return func() time.Time { return epoch }
}

// benchWait and benchRun are what recordTwo records into, shared as a pool's two histograms
// are.
var benchWait, benchRun = histogram.New(), histogram.New()

// recordTwo records two durations for each of n tasks, as a pool with histograms does: a
// wait and a run, into histograms of their own, spread over a few buckets around the
// microsecond.
func recordTwo(n int) {
	for i := range n {
		benchWait.Record(time.Duration(200 + i%512))
		benchRun.Record(time.Duration(1100 + i%2048))
	}
}
