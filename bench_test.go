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

// BenchmarkSubmitParallel measures GOMAXPROCS submitters sharing one pool.
func BenchmarkSubmitParallel(b *testing.B) {
	for _, w := range benchWorkers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			var ran, sent atomic.Int64
			task := func() { ran.Add(1) }
			p := crew.New(w)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := p.Submit(task); err != nil {
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

// BenchmarkSubmitWithHistograms measures what WithLatencyHistograms costs: GOMAXPROCS
// submitters queuing tasks that sleep a microsecond, with the histograms off and on.
func BenchmarkSubmitWithHistograms(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("histograms=%v", on), func(b *testing.B) {
			b.ReportAllocs()
			var ran atomic.Int64
			task := func() {
				time.Sleep(time.Microsecond)
				ran.Add(1)
			}
			var opts []crew.Option
			if on {
				opts = append(opts, crew.WithLatencyHistograms())
			}
			p := crew.New(1024, opts...)
			var sent atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := p.Submit(task); err != nil {
						b.Error(err)
						return
					}
					sent.Add(1)
				}
			})
			p.StopAndWait()
			checkRan(b, &ran, int(sent.Load()))
			if on {
				if s := p.Stats(); s.RunTime.Count != uint64(sent.Load()) {
					b.Fatalf("histogram counted %d of %d tasks", s.RunTime.Count, sent.Load())
				}
			}
		})
	}
}
