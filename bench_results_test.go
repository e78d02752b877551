package crew_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// BenchmarkGo measures a future per task: Go then Wait on each, in batches.
func BenchmarkGo(b *testing.B) {
	b.ReportAllocs()
	p := crew.New(8)
	defer p.StopAndWait()
	var ran atomic.Int64
	fn := func() (int, error) { ran.Add(1); return 1, nil }
	const batch = 64
	futures := make([]*crew.Future[int], 0, batch)
	sum := 0
	for i := range b.N {
		futures = append(futures, crew.Go(p, fn))
		if len(futures) == batch || i == b.N-1 {
			for _, f := range futures {
				v, _ := f.Wait()
				sum += v
			}
			futures = futures[:0]
		}
	}
	if sum != b.N {
		b.Fatalf("%d of %d futures returned their value", sum, b.N)
	}
	checkRan(b, &ran, b.N)
}

// BenchmarkGroupGo measures one group running b.N tasks.
func BenchmarkGroupGo(b *testing.B) {
	b.ReportAllocs()
	p := crew.New(8)
	defer p.StopAndWait()
	var ran atomic.Int64
	fn := func(context.Context) error { ran.Add(1); return nil }
	g, _ := p.Group(context.Background())
	for range b.N {
		g.Go(fn)
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	checkRan(b, &ran, b.N)
}

// BenchmarkResultsGo measures one Results collecting b.N values.
func BenchmarkResultsGo(b *testing.B) {
	b.ReportAllocs()
	p := crew.New(8)
	defer p.StopAndWait()
	var ran atomic.Int64
	fn := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
	r, _ := crew.NewResults[int](context.Background(), p)
	for range b.N {
		r.Go(fn)
	}
	vals, err := r.Wait()
	if err != nil || len(vals) != b.N {
		b.Fatalf("Wait = %d values, %v", len(vals), err)
	}
	checkRan(b, &ran, b.N)
}

// BenchmarkMap measures Map over b.N elements.
func BenchmarkMap(b *testing.B) {
	b.ReportAllocs()
	p := crew.New(8)
	defer p.StopAndWait()
	var ran atomic.Int64
	in := make([]int, b.N)
	out, err := crew.Map(context.Background(), p, in, func(_ context.Context, v int) (int, error) {
		ran.Add(1)
		return v + 1, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range out {
		if v != 1 {
			b.Fatal("a result is missing")
		}
	}
	checkRan(b, &ran, b.N)
}

// BenchmarkForEach measures ForEach over a generated sequence of b.N values.
func BenchmarkForEach(b *testing.B) {
	b.ReportAllocs()
	p := crew.New(8)
	defer p.StopAndWait()
	var ran atomic.Int64
	seq := func(yield func(int) bool) {
		for i := range b.N {
			if !yield(i) {
				return
			}
		}
	}
	err := crew.ForEach(context.Background(), p, seq, func(context.Context, int) error {
		ran.Add(1)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	checkRan(b, &ran, b.N)
}

// BenchmarkMapSeq measures a range over MapSeq and MapSeqUnordered of b.N values.
func BenchmarkMapSeq(b *testing.B) {
	for _, m := range seqModes {
		b.Run("order="+m.name, func(b *testing.B) {
			b.ReportAllocs()
			p := crew.New(8)
			defer p.StopAndWait()
			var ran atomic.Int64
			sum := 0
			for v, err := range m.mapSeq(context.Background(), p, countTo(b.N), func(_ context.Context, v int) (int, error) {
				ran.Add(1)
				return v, nil
			}) {
				if err != nil {
					b.Fatal(err)
				}
				sum += v
			}
			if sum != b.N*(b.N-1)/2 {
				b.Fatal("a result is missing")
			}
			checkRan(b, &ran, b.N)
		})
	}
}

// spin computes for about d: a loop of xorshift steps whose count is calibrated once, on the
// fastest of several timed runs, so that a loaded machine slows the work down rather than
// shortening it.
func spin(d time.Duration) {
	if d == 0 {
		return
	}
	x := uint64(d) | 1
	for range int64(d) * stepsPerMicro() / int64(time.Microsecond) {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	spinSink.Add(x) // so that the loop is not optimized away
}

var spinSink atomic.Uint64

// stepsPerMicro is how many of spin's steps take a microsecond.
var stepsPerMicro = sync.OnceValue(func() int64 {
	const steps = 1 << 20
	best := time.Duration(1<<63 - 1)
	for range 7 {
		start := time.Now()
		x := uint64(1)
		for range steps {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		spinSink.Add(x)
		best = min(best, time.Since(start))
	}
	return max(1, steps*int64(time.Microsecond)/int64(best))
})

// BenchmarkBatch measures ForEach per value for values that each take 0, 100 ns, 1 µs, 3 µs
// and 10 µs of computing, handed over one by one (batch=1) or in batches made by Batch, on a pool
// of GOMAXPROCS workers: where batching stops paying is the crossover Batch's doc gives.
func BenchmarkBatch(b *testing.B) {
	for _, work := range []time.Duration{0, 100 * time.Nanosecond, time.Microsecond, 3 * time.Microsecond, 10 * time.Microsecond} {
		for _, size := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("work=%v/batch=%d", work, size), func(b *testing.B) {
				b.ReportAllocs()
				p := crew.New(runtime.GOMAXPROCS(0))
				defer p.StopAndWait()
				var ran atomic.Int64
				var err error
				if size == 1 {
					err = crew.ForEach(context.Background(), p, countTo(b.N), func(context.Context, int) error {
						spin(work)
						ran.Add(1)
						return nil
					})
				} else {
					err = crew.ForEach(context.Background(), p, crew.Batch(countTo(b.N), size), func(_ context.Context, vs []int) error {
						for range vs {
							spin(work)
						}
						ran.Add(int64(len(vs)))
						return nil
					})
				}
				if err != nil {
					b.Fatal(err)
				}
				checkRan(b, &ran, b.N)
			})
		}
	}
}

// BenchmarkNestedGroups measures fork and join inside a pool: each of b.N/8 outer functions
// makes a group of 8 inner functions on the same pool of 2 workers and waits for it, running
// the inner functions the workers have not taken (package documentation, "Waits that help").
// queue=0 is an unbounded queue; on a bounded one, the place of each function a wait ran is
// taken out of the queue when it ends.
func BenchmarkNestedGroups(b *testing.B) {
	for _, q := range []int{0, 64, 1024} {
		b.Run(fmt.Sprintf("queue=%d", q), func(b *testing.B) {
			b.ReportAllocs()
			p := crew.New(2, crew.WithQueueSize(q))
			var ran atomic.Int64
			inner := func(context.Context) error { ran.Add(1); return nil }
			outer, _ := p.Group(context.Background())
			for range (b.N + 7) / 8 {
				outer.Go(func(ctx context.Context) error {
					g, _ := p.Group(ctx)
					for range 8 {
						g.Go(inner)
					}
					return g.Wait()
				})
			}
			if err := outer.Wait(); err != nil {
				b.Fatal(err)
			}
			p.StopAndWait()
			checkRan(b, &ran, (b.N+7)/8*8)
		})
	}
}
