package crew_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
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
			var ran, left atomic.Int64
			task := func() {
				time.Sleep(time.Microsecond)
				ran.Add(1)
			}
			p := crew.New(10000)
			left.Store(int64(b.N))
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
			b.StopTimer()
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
// WithLatencyHistograms (histograms), and WithHooks with Started and Finished set (hooks).
func BenchmarkSubmitWithHistograms(b *testing.B) {
	noop := func(crew.TaskInfo) {}
	observe := []struct {
		name string
		opts []crew.Option
	}{
		{"off", nil},
		{"histograms", []crew.Option{crew.WithLatencyHistograms()}},
		{"hooks", []crew.Option{crew.WithHooks(crew.Hooks{Started: noop, Finished: noop})}},
	}
	for _, par := range []int{1, 10, 100} {
		for _, o := range observe {
			b.Run(fmt.Sprintf("par=%d/observe=%s", par, o.name), func(b *testing.B) {
				b.ReportAllocs()
				var ran atomic.Int64
				task := func() {
					time.Sleep(time.Microsecond)
					ran.Add(1)
				}
				p := crew.New(10_000, o.opts...)
				var sent atomic.Int64
				b.SetParallelism(par)
				submitParallel(b, p, task, &sent)
				p.StopAndWait()
				checkRan(b, &ran, int(sent.Load()))
				if o.name == "histograms" {
					if s := p.Stats(); s.RunTime.Count != uint64(sent.Load()) {
						b.Fatalf("histogram counted %d of %d tasks", s.RunTime.Count, sent.Load())
					}
				}
			})
		}
	}
}
