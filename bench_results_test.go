package crew_test

import (
	"context"
	"sync/atomic"
	"testing"

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
