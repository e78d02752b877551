package histogram_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crewgo/crew/internal/histogram"
)

func TestBoundsAreEightPerPowerOfTwoFromAMicrosecondToAnHour(t *testing.T) {
	b := histogram.Bounds()
	if len(b) != histogram.N+1 {
		t.Fatalf("len(Bounds()) = %d, want %d", len(b), histogram.N+1)
	}
	if b[0] != 0 || !math.IsInf(b[len(b)-1], 1) {
		t.Fatalf("first and last bounds = %v, %v; want 0 and +Inf", b[0], b[len(b)-1])
	}
	if b[1] > 1e-6 || b[1] < 0.9e-6 {
		t.Errorf("first finite bound %v s, want about a microsecond", b[1])
	}
	if last := b[len(b)-2]; last < 3600 {
		t.Errorf("last finite bound %v s, want at least an hour", last)
	}
	for i := 2; i < len(b)-1; i++ {
		if r := b[i] / b[i-1]; math.Abs(r-math.Exp2(1.0/8)) > 1e-12 {
			t.Fatalf("bounds %d and %d: ratio %v, want 2^(1/8)", i-1, i, r)
		}
	}
	for i := 1; i < len(b)-1; i++ {
		if b[i] != histogram.UpperBound(i-1) {
			t.Fatalf("Bounds()[%d] = %v, UpperBound(%d) = %v", i, b[i], i-1, histogram.UpperBound(i-1))
		}
	}
}

func TestIndexPutsEachDurationInTheBucketWhoseBoundsHoldIt(t *testing.T) {
	b := histogram.Bounds()
	check := func(d time.Duration) {
		t.Helper()
		i := histogram.Index(d)
		s := d.Seconds()
		if s < 0 {
			s = 0
		}
		lowOK := s > b[i] || (i == 0 && s >= 0)
		if !lowOK || s > b[i+1] {
			t.Fatalf("Index(%v) = %d, whose bounds are (%v, %v]", d, i, b[i], b[i+1])
		}
	}
	for _, d := range []time.Duration{-time.Second, 0, 1, 953, 954, time.Microsecond, time.Millisecond,
		time.Second, time.Minute, time.Hour, 2 * time.Hour, math.MaxInt64} {
		check(d)
	}
	// Every boundary and its neighbours.
	for i := 1; i < len(b)-1; i++ {
		ns := time.Duration(math.Floor(b[i] * 1e9))
		check(ns - 1)
		check(ns)
		check(ns + 1)
	}
	// Every power of two and the 32 steps between it and the next, with their neighbours: the
	// edges of the slots Index looks up.
	for l := range 63 {
		for m := range int64(32) {
			v := time.Duration(int64(1)<<l + m<<l/32)
			check(v - 1)
			check(v)
			check(v + 1)
		}
	}
	// And a million durations spread evenly over the powers of two.
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		check(time.Duration(math.Exp2(r.Float64() * 44)))
	}
}

func TestRecordCountsEveryDurationOnce(t *testing.T) {
	h := histogram.New()
	ds := []time.Duration{0, time.Microsecond, 3 * time.Millisecond, time.Second, 2 * time.Hour}
	var want time.Duration
	for _, d := range ds {
		h.Record(d)
		want += d
	}
	var s histogram.Snapshot
	h.Snapshot(&s)
	if s.Count != uint64(len(ds)) || s.Sum != want {
		t.Fatalf("Count %d Sum %v, want %d and %v", s.Count, s.Sum, len(ds), want)
	}
	for _, d := range ds {
		if s.Counts[histogram.Index(d)] == 0 {
			t.Errorf("bucket of %v is empty", d)
		}
	}
}

// A histogram has a shard per processor it was made for; processors added later by
// GOMAXPROCS share them, and every record still counts once.
func TestRecordFromMoreProcessorsThanShardsCountsEveryDuration(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := histogram.New()
	runtime.GOMAXPROCS(8)
	const goroutines, each = 32, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h.Record(time.Duration(g*each+i) * time.Microsecond)
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	var s histogram.Snapshot
	h.Snapshot(&s)
	n := goroutines * each
	if want := time.Duration(n*(n-1)/2) * time.Microsecond; s.Count != uint64(n) || s.Sum != want {
		t.Fatalf("Count %d Sum %v, want %d and %v", s.Count, s.Sum, n, want)
	}
}

func TestSnapshotWhileRecordingNeverGoesBackwards(t *testing.T) {
	h := histogram.New()
	const goroutines, each = 8, 5000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(goroutines)
	for g := range goroutines {
		go func() {
			defer wg.Done()
			for i := range each {
				h.Record(time.Duration(g*each+i) * time.Microsecond)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var prev, cur histogram.Snapshot
		for {
			h.Snapshot(&cur)
			var n uint64
			for i := range cur.Counts {
				if cur.Counts[i] < prev.Counts[i] {
					t.Errorf("bucket %d went from %d to %d", i, prev.Counts[i], cur.Counts[i])
					return
				}
				n += cur.Counts[i]
			}
			if n != cur.Count {
				t.Errorf("Count %d, sum of Counts %d", cur.Count, n)
				return
			}
			prev = cur
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	var s histogram.Snapshot
	h.Snapshot(&s)
	if s.Count != goroutines*each {
		t.Fatalf("Count = %d, want %d", s.Count, goroutines*each)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := histogram.New()
	if n := testing.AllocsPerRun(1000, func() { h.Record(time.Millisecond) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	h := histogram.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Microsecond
		for pb.Next() {
			h.Record(d)
			d += 37
		}
	})
}

func TestRecordNCountsADurationNTimes(t *testing.T) {
	h := histogram.New()
	h.RecordN(3*time.Millisecond, 8)
	h.RecordN(time.Second, 1)
	h.RecordN(-time.Second, 4) // counts as 0
	var s histogram.Snapshot
	h.Snapshot(&s)
	if s.Count != 13 || s.Sum != 8*3*time.Millisecond+time.Second {
		t.Fatalf("Count %d Sum %v, want 13 and %v", s.Count, s.Sum, 8*3*time.Millisecond+time.Second)
	}
	for d, want := range map[time.Duration]uint64{3 * time.Millisecond: 8, time.Second: 1, 0: 4} {
		if got := s.Counts[histogram.Index(d)]; got != want {
			t.Errorf("bucket of %v holds %d, want %d", d, got, want)
		}
	}
}
