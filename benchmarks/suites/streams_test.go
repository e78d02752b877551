package suites

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/destel/rill"
	"github.com/sourcegraph/conc/stream"
	"golang.org/x/sync/errgroup"

	"github.com/crewgo/crew"
)

// streamLoad is one of the streams suite's workloads: items values mapped by work with at most
// workers calls in flight.
type streamLoad struct {
	name    string
	items   int
	workers int
	work    func(v int) int
}

// streamLoads are the streams suite's workloads: a million values that take a few nanoseconds
// each on GOMAXPROCS workers, where the cost of handing values and results over is the whole
// time, and ten thousand that wait about 50 µs each (25 to 75 µs, varying from value to value
// so that results finish out of order) on 16 workers, as calls to a nearby service would.
// Under -suites.quick the tiny values are a tenth as many, named by that size: 100K-tiny.
func streamLoads() []streamLoad {
	tiny := 1_000_000
	if *quick {
		tiny /= 10
	}
	return []streamLoad{
		{count(tiny) + "-tiny", shrink(tiny, 1000), runtime.GOMAXPROCS(0), mix},
		{"10k-50us", shrink(10_000, 100), 16, sleepThenMix},
	}
}

// mix is a tiny function of v: one multiplication and a shift.
func mix(v int) int {
	x := uint64(v) * 0x9E3779B97F4A7C15
	return int((x ^ x>>29) & 0xffff)
}

// sleepThenMix sleeps 25 to 75 µs, depending on v, and returns mix(v).
func sleepThenMix(v int) int {
	time.Sleep(time.Duration(25+mix(v)%51) * time.Microsecond)
	return mix(v)
}

// streamJob is one run of a workload: map in, n values, with work, and hand each result to
// consume, in the order of in if ordered.
type streamJob struct {
	in      iter.Seq[int]
	n       int
	ordered bool
	work    func(int) int
	consume func(int)
}

// streamer is one way to map a sequence on a bounded number of goroutines and hand each result
// to one consumer goroutine. start makes what the runs share (crew's pool) before the clock
// and returns run, which runs a job with at most w calls in flight, and stop, which releases
// what start made.
type streamer struct {
	name  string
	start func(w int) (run func(streamJob) error, stop func())
}

func noStop() {}

// streamers are the contenders of the streams suite.
var streamers = []streamer{
	{"crew", func(w int) (func(streamJob) error, func()) {
		p := crew.New(w)
		return func(j streamJob) error {
			mapSeq := crew.MapSeqUnordered[int, int]
			if j.ordered {
				mapSeq = crew.MapSeq[int, int]
			}
			for r, err := range mapSeq(context.Background(), p, j.in, func(_ context.Context, v int) (int, error) {
				return j.work(v), nil
			}) {
				if err != nil {
					return err
				}
				j.consume(r)
			}
			return nil
		}, p.StopAndWait
	}},
	{"rill", func(w int) (func(streamJob) error, func()) {
		return func(j streamJob) error {
			mapChan := rill.Map[int, int]
			if j.ordered {
				mapChan = rill.OrderedMap[int, int]
			}
			for r, err := range rill.ToSeq2(mapChan(rill.FromSeq(j.in, nil), w, func(v int) (int, error) {
				return j.work(v), nil
			})) {
				if err != nil {
					return err
				}
				j.consume(r)
			}
			return nil
		}, noStop
	}},
	{"conc", func(w int) (func(streamJob) error, func()) {
		// conc's stream has no unordered form: its callbacks always run in submission order.
		return func(j streamJob) error {
			s := stream.New().WithMaxGoroutines(w)
			for v := range j.in {
				s.Go(func() stream.Callback {
					r := j.work(v)
					return func() { j.consume(r) }
				})
			}
			s.Wait()
			return nil
		}, noStop
	}},
	{"errgroup", func(w int) (func(streamJob) error, func()) {
		// errgroup with a results slice, the usual way: a slot per value, every result kept
		// until the last call returns, then read in order.
		return func(j streamJob) error {
			var g errgroup.Group
			g.SetLimit(w)
			results := make([]int, j.n)
			i := 0
			for v := range j.in {
				slot := &results[i]
				i++
				g.Go(func() error {
					*slot = j.work(v)
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				return err
			}
			for _, r := range results[:i] {
				j.consume(r)
			}
			return nil
		}, noStop
	}},
}

// pending counts the values a run has pulled and the results it has handed to the consumer,
// and keeps the most values ever pulled and not yet consumed: the results a reorder buffer,
// a results slice or a channel holds, with the calls in flight. The consumer checks each
// result: in order, each is mix of its index; in any order, their count and sum are checked.
type pending struct {
	pulled, consumed, peak atomic.Int64
	sum, want              int
	ordered                bool
	bad                    int // the first consumed index whose result was wrong, or -1
}

// values yields 0, 1, ..., n-1, noting each pull.
func (p *pending) values(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			held := p.pulled.Add(1) - p.consumed.Load()
			for m := p.peak.Load(); held > m && !p.peak.CompareAndSwap(m, held); m = p.peak.Load() {
			}
			if !yield(i) {
				return
			}
		}
	}
}

// consume takes one result; it is called from one goroutine at a time.
func (p *pending) consume(r int) {
	i := int(p.consumed.Add(1) - 1)
	if p.ordered && r != mix(i) && p.bad < 0 {
		p.bad = i
	}
	p.sum += r
}

// check fails b unless the last run consumed every one of n results, right.
func (p *pending) check(b *testing.B, n int) {
	if p.want == 0 {
		for i := range n {
			p.want += mix(i)
		}
	}
	if got := p.consumed.Load(); got != int64(n) || p.sum != p.want || p.bad >= 0 {
		b.Fatalf("%d of %d results consumed, sum %d (want %d), first out of order at %d", got, n, p.sum, p.want, p.bad)
	}
}

// reset starts the count of a new run.
func (p *pending) reset() {
	p.pulled.Store(0)
	p.consumed.Store(0)
	p.sum, p.bad = 0, -1
}

// BenchmarkStreams maps a sequence on a bounded number of goroutines and consumes the results
// on one goroutine, in the order of the sequence (order=ordered) or as they finish
// (order=unordered): crew's MapSeq and MapSeqUnordered, rill's OrderedMap and Map, conc's
// stream (ordered in both) and errgroup with a results slice (read in order once all calls
// have returned). One operation is the whole sequence; crew's pool is made before the clock.
// Besides time and memory, peak-pending is the most values pulled and not yet consumed over
// the operations: what the results waiting for the consumer hold, with the calls in flight.
func BenchmarkStreams(b *testing.B) {
	for _, l := range streamLoads() {
		for _, order := range []string{"ordered", "unordered"} {
			for _, s := range streamers {
				b.Run(fmt.Sprintf("items=%s/order=%s/pool=%s", l.name, order, s.name), func(b *testing.B) {
					runStream(b, s, l, order == "ordered")
				})
			}
		}
	}
}

// runStream runs l b.N times on s and reports the peak of pending values.
func runStream(b *testing.B, s streamer, l streamLoad, ordered bool) {
	b.ReportAllocs()
	run, stop := s.start(l.workers)
	p := &pending{ordered: ordered}
	b.ResetTimer()
	for range b.N {
		p.reset()
		if err := run(streamJob{in: p.values(l.items), n: l.items, ordered: ordered, work: l.work, consume: p.consume}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		p.check(b, l.items)
		b.StartTimer()
	}
	b.StopTimer()
	stop()
	b.ReportMetric(float64(p.peak.Load()), "peak-pending")
}
