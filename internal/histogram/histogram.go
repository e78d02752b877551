// Package histogram records durations into exponential buckets from many goroutines at once.
//
// The buckets are those of a Prometheus native histogram of schema 3: eight per power of two,
// bucket k holding the values in (2^((k-1)/8), 2^(k/8)] seconds. Recorded durations range from
// 2^-20 s (about 0.95 µs) to 2^12 s (about 68 minutes); shorter ones count in the first bucket,
// which starts at 0, and longer ones in the last, which ends at +Inf. Because the boundaries
// are powers of two, exporters hand the counts on as native buckets without rebinning.
//
// Recording is one atomic add on a bucket and one on the sum, in the shard of the processor
// (P) the recording goroutine runs on, each shard padded to its own cache lines. Thousands of
// workers of one pool then count into as many shards as there are processors, and each
// processor keeps its shard's lines in its own cache: a shard picked by goroutine was written
// from every processor in turn, and a record waited for the line to come over (measurements.md
// in internal/worker, "Histograms counted by processor"). Snapshot
// adds the shards up while recording goes on; every count it reads only ever grows, so no
// count goes backwards between two snapshots.
package histogram

import (
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew/internal/proc"
)

// Schema is the Prometheus native histogram schema of the buckets: 2^Schema buckets per power
// of two.
const Schema = 3

const (
	perOctave = 1 << Schema
	// MinIndex and MaxIndex are the native bucket indexes of the first and last finite upper
	// boundaries: 2^(MinIndex/8) = 2^-20 s and 2^(MaxIndex/8) = 2^12 s.
	MinIndex = -20 * perOctave
	MaxIndex = 12 * perOctave
	// N is the number of buckets: one per finite boundary, plus the one above the last.
	N = MaxIndex - MinIndex + 2
)

// limits[i] is the upper boundary of bucket i in nanoseconds, rounded down, so that an integer
// number of nanoseconds v belongs to bucket i or below exactly when v <= limits[i]. The last
// bucket has no limit.
var limits [N - 1]int64

// bounds are the boundaries in seconds as Snapshot reports them: 0, then one upper boundary per
// bucket, the last +Inf.
var bounds [N + 1]float64

func init() {
	bounds[0] = 0
	for i := range limits {
		s := UpperBound(i)
		bounds[i+1] = s
		limits[i] = int64(math.Floor(s * 1e9))
	}
	bounds[N] = math.Inf(1)
}

// UpperBound returns the upper boundary of bucket i in seconds: 2^((MinIndex+i)/8), or +Inf
// for the last bucket.
func UpperBound(i int) float64 {
	if i >= N-1 {
		return math.Inf(1)
	}
	return math.Exp2(float64(MinIndex+i) / perOctave)
}

// Bounds returns the boundaries in seconds, len N+1: 0, the finite upper boundaries, +Inf.
// The caller may keep and change the slice.
func Bounds() []float64 {
	b := bounds
	return b[:]
}

// Index returns the bucket of a duration: the least i with d <= the upper boundary of bucket
// i. A negative d counts as 0.
func Index(d time.Duration) int {
	v := int64(d)
	if v <= limits[0] {
		return 0
	}
	if v > limits[N-2] {
		return N - 1
	}
	// The slot of v (its bit length and the slotBits bits after its leading one) is narrower
	// than a bucket, so the bucket is the slot's first one or the one after: one compare
	// instead of a binary search's eight, whose branches a mix of durations mispredicts.
	i := int(first[slot(uint64(v))])
	if v > limits[i] {
		i++
	}
	return i
}

// slotBits is how many bits after the leading one tell slots apart: 32 slots per power of
// two, each at most a factor of 33/32 wide, less than a bucket's 2^(1/8).
const slotBits = 5

// first[s] is the bucket of the least duration of slot s, for the slots from limits[0] to
// limits[N-2]; see Index.
var first [64 << slotBits]uint16

// slot returns the slot of v > 0: its bit length and the slotBits bits after its leading one.
func slot(v uint64) int {
	l := bits.Len64(v)
	var m uint64
	if l > slotBits {
		m = v >> (l - 1 - slotBits)
	} else {
		m = v << (slotBits + 1 - l)
	}
	return l<<slotBits | int(m&(1<<slotBits-1))
}

func init() {
	// The least duration of each slot, in increasing order, and the least bucket holding it.
	i := 0
	for l := 1; l <= 63; l++ {
		for m := range uint64(1 << slotBits) {
			var least uint64
			if l > slotBits {
				least = (1<<slotBits | m) << (l - 1 - slotBits)
			} else {
				least = (1<<slotBits | m) >> (slotBits + 1 - l)
			}
			for i < N-2 && int64(least) > limits[i] {
				i++
			}
			first[slot(least)] = uint16(i)
		}
	}
}

// shard is one set of counters. Its size is a multiple of 128 bytes (two cache lines on most
// machines, which some prefetchers pair), and pad keeps the next shard's counts off its last
// line.
type shard struct {
	counts [N]atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	_      [128 - (N*8+8)%128]byte
}

// Histogram records durations; see the package doc. The zero value is not usable: build one
// with New. A Histogram is safe for concurrent use.
type Histogram struct {
	shards []shard
	mask   uintptr
}

// New returns an empty histogram. It has a shard per processor, GOMAXPROCS rounded up to a
// power of two and at most 64; processors beyond those, or added by a later GOMAXPROCS,
// share shards, which costs only the sharing.
func New() *Histogram {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < 64 {
		n *= 2
	}
	return &Histogram{shards: make([]shard, n), mask: uintptr(n - 1)}
}

// Record counts d. It allocates nothing and takes no lock.
func (h *Histogram) Record(d time.Duration) { h.RecordN(d, 1) }

// RecordN counts d n times, as n durations of d each: a sample that stands for n. It
// allocates nothing and takes no lock.
func (h *Histogram) RecordN(d time.Duration, n uint64) {
	if d < 0 {
		d = 0
	}
	i := Index(d)
	// Nothing between Pin and Unpin can panic or block: i is a bucket and the mask keeps the
	// shard in range.
	s := &h.shards[uintptr(proc.Pin())&h.mask]
	s.counts[i].Add(n)
	s.sum.Add(uint64(d) * n)
	proc.Unpin()
}

// Snapshot is a histogram's state at one moment: Counts[i] durations fell in bucket i,
// that is in (Bounds()[i], Bounds()[i+1]], and Sum is their total.
type Snapshot struct {
	Counts [N]uint64
	Count  uint64
	Sum    time.Duration
}

// Snapshot adds up the shards into s. It may run while others record: each count it reads
// is at least what an earlier Snapshot read, and Count is the sum of Counts. Sum is read
// apart from the counts, so it may include or miss a duration being recorded at that moment.
func (h *Histogram) Snapshot(s *Snapshot) {
	*s = Snapshot{}
	var sum uint64
	for i := range h.shards {
		sh := &h.shards[i]
		for j := range sh.counts {
			s.Counts[j] += sh.counts[j].Load()
		}
		sum += sh.sum.Load()
	}
	for _, c := range s.Counts {
		s.Count += c
	}
	s.Sum = time.Duration(sum)
}
