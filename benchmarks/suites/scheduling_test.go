package suites

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	gopool "github.com/go-pkgz/pool"
)

// spin computes for about d without sleeping, so a task holds its processor as real work
// does and no timer wake-up is measured.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// keyedTask is one task of the keyed workload: its key and what it does.
type keyedTask struct {
	key int
	fn  func()
}

// keyedRunner runs a round of keyed tasks, one at a time per key, and waits for all.
type keyedRunner struct {
	name string
	run  func(b *testing.B, tasks []keyedTask)
}

// BenchmarkKeyed runs tasks of many keys, one at a time per key, where one key is slow:
// key 0's tasks wait 2ms each (as for a slow remote call), the others compute for a
// microsecond. fast-ms/op is how long
// the fast keys' tasks took to finish, which is what a slow key costs the others: crew's
// Keyed gives the slow key one worker at a time; go-pkgz/pool's WithChunkFn hashes keys to
// fixed workers, so the keys that share the slow key's worker wait behind it; a goroutine
// per key (a map of channels) never waits but holds a goroutine for every busy key.
func BenchmarkKeyed(b *testing.B) {
	const workers = 8
	keys := shrink(1000, 10)
	perKey := 10
	slow := shrink(50, 5)
	runners := []keyedRunner{
		{"crew", func(b *testing.B, tasks []keyedTask) {
			p := crew.New(workers)
			defer p.StopAndWait()
			k := crew.NewKeyed[int](p)
			for _, t := range tasks {
				if err := k.Submit(t.key, t.fn); err != nil {
					b.Fatal(err)
				}
			}
			k.Wait()
		}},
		{"go-pkgz", func(b *testing.B, tasks []keyedTask) {
			w := gopool.WorkerFunc[keyedTask](func(_ context.Context, t keyedTask) error { t.fn(); return nil })
			p := gopool.New[keyedTask](workers, w).WithBatchSize(0).
				WithChunkFn(func(t keyedTask) string { return fmt.Sprint(t.key) })
			if err := p.Go(context.Background()); err != nil {
				b.Fatal(err)
			}
			for _, t := range tasks {
				p.Submit(t)
			}
			if err := p.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
		}},
		{"chan-per-key", func(b *testing.B, tasks []keyedTask) {
			var wg sync.WaitGroup
			chans := map[int]chan func(){}
			for _, t := range tasks {
				ch, ok := chans[t.key]
				if !ok {
					ch = make(chan func(), 64)
					chans[t.key] = ch
					wg.Add(1)
					go func() {
						defer wg.Done()
						for fn := range ch {
							fn()
						}
					}()
				}
				ch <- t.fn
			}
			for _, ch := range chans {
				close(ch)
			}
			wg.Wait()
		}},
	}
	for _, r := range runners {
		b.Run("pool="+r.name, func(b *testing.B) {
			var ran atomic.Int64
			var fastLeft atomic.Int64
			var fastDone time.Duration
			var start time.Time
			fastEnd := make(chan time.Time, 1)
			fast := func() {
				spin(time.Microsecond)
				ran.Add(1)
				if fastLeft.Add(-1) == 0 {
					fastEnd <- time.Now()
				}
			}
			slowTask := func() { time.Sleep(2 * time.Millisecond); ran.Add(1) }
			var tasks []keyedTask
			for i := range slow {
				tasks = append(tasks, keyedTask{0, slowTask})
				for key := 1; key < keys; key++ {
					if i < perKey {
						tasks = append(tasks, keyedTask{key, fast})
					}
				}
			}
			nFast := int64(len(tasks) - slow)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ran.Store(0)
				fastLeft.Store(nFast)
				start = time.Now()
				r.run(b, tasks)
				fastDone += (<-fastEnd).Sub(start)
				if got := ran.Load(); got != int64(len(tasks)) {
					b.Fatalf("%d tasks ran, want %d", got, len(tasks))
				}
			}
			b.ReportMetric(fastDone.Seconds()*1000/float64(b.N), "fast-ms/op")
		})
	}
}

// BenchmarkPriorityLatency measures how long a high-priority task waits to start under a
// flood of low-priority ones: two sub-pools of one pool, one flooded with tasks of 20µs, the
// other given one task per 20 of the flood. p50-µs and p99-µs are the waits' percentiles.
// With level=same both sub-pools are at level 0, so the high task queues behind the flood.
func BenchmarkPriorityLatency(b *testing.B) {
	const workers = 4
	flood := shrink(4000, 10)
	for _, leveled := range []bool{true, false} {
		name := "level=higher"
		if !leveled {
			name = "level=same"
		}
		b.Run(name, func(b *testing.B) {
			p := crew.New(workers)
			defer p.StopAndWait()
			low := p.Sub(workers)
			var high *crew.Pool
			if leveled {
				high = p.Sub(workers, crew.WithPriority(1))
			} else {
				high = p.Sub(workers)
			}
			var ran atomic.Int64
			var mu sync.Mutex
			var waits []time.Duration
			lowTask := func() { spin(20 * time.Microsecond); ran.Add(1) }
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ran.Store(0)
				want := 0
				for i := range flood {
					if err := low.Submit(lowTask); err != nil {
						b.Fatal(err)
					}
					want++
					if i%20 == 0 {
						submitted := time.Now()
						if err := high.Submit(func() {
							w := time.Since(submitted)
							mu.Lock()
							waits = append(waits, w)
							mu.Unlock()
							ran.Add(1)
						}); err != nil {
							b.Fatal(err)
						}
						want++
					}
				}
				p.Wait()
				if got := ran.Load(); got != int64(want) {
					b.Fatalf("%d tasks ran, want %d", got, want)
				}
			}
			b.StopTimer()
			slices.Sort(waits)
			pct := func(q float64) float64 {
				return float64(waits[int(q*float64(len(waits)-1))].Microseconds())
			}
			b.ReportMetric(pct(0.50), "p50-µs")
			b.ReportMetric(pct(0.99), "p99-µs")
		})
	}
}
