package queue

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/crewgo/crew/internal/racetest"
)

// modelQueue drives a Queue[int] and a slice side by side and fails the test as soon as the
// two disagree.
type modelQueue struct {
	t     testing.TB
	q     Queue[int]
	model []int
	next  int
}

// push pushes n new values onto both.
func (m *modelQueue) push(n int) {
	for range n {
		m.q.Push(m.next)
		m.model = append(m.model, m.next)
		m.next++
	}
}

// pop pops n times, checking each value; pops on an empty queue must find nothing.
func (m *modelQueue) pop(n int) {
	m.t.Helper()
	for range n {
		v, ok := m.q.Pop()
		if len(m.model) == 0 {
			if ok {
				m.t.Fatalf("Pop on an empty queue returned %d, true", v)
			}
			continue
		}
		if !ok || v != m.model[0] {
			m.t.Fatalf("Pop = %d, %v; want %d, true", v, ok, m.model[0])
		}
		m.model = m.model[1:]
	}
}

// drop takes the newest value out n times with DropLastAt, checking each; a drop of a value
// that is not the newest, and a drop on an empty queue, must take nothing.
func (m *modelQueue) drop(n int) {
	m.t.Helper()
	same := func(a, b int) bool { return a == b }
	for range n {
		if _, ok := m.q.DropLastAt(-1, same); ok {
			m.t.Fatal("DropLastAt took a value never pushed")
		}
		if len(m.model) == 0 {
			continue
		}
		last := m.model[len(m.model)-1]
		if _, ok := m.q.LastAt(last, same); !ok {
			m.t.Fatalf("LastAt(%d), the newest value, found nothing", last)
		}
		if _, ok := m.q.DropLastAt(last, same); !ok {
			m.t.Fatalf("DropLastAt(%d), the newest value, took nothing", last)
		}
		m.model = m.model[:len(m.model)-1]
	}
}

// dropFirst takes the oldest value out n times with DropFirstAt, checking each; a drop of a
// value that is not the oldest, and a drop on an empty queue, must take nothing.
func (m *modelQueue) dropFirst(n int) {
	m.t.Helper()
	same := func(a, b int) bool { return a == b }
	for range n {
		if len(m.model) > 1 {
			if _, ok := m.q.DropFirstAt(m.model[1], same); ok {
				m.t.Fatalf("DropFirstAt(%d) took the second value", m.model[1])
			}
		}
		if len(m.model) == 0 {
			if _, ok := m.q.DropFirstAt(0, same); ok {
				m.t.Fatal("DropFirstAt took a value from an empty queue")
			}
			continue
		}
		if _, ok := m.q.FirstAt(m.model[0], same); !ok {
			m.t.Fatalf("FirstAt(%d), the oldest value, found nothing", m.model[0])
		}
		if len(m.model) > 1 {
			if _, ok := m.q.FirstAt(m.model[1], same); ok {
				m.t.Fatalf("FirstAt(%d) found the second value", m.model[1])
			}
		}
		if _, ok := m.q.DropFirstAt(m.model[0], same); !ok {
			m.t.Fatalf("DropFirstAt(%d), the oldest value, took nothing", m.model[0])
		}
		m.model = m.model[1:]
	}
}

// check compares Len, Peek and what Each visits with the slice.
func (m *modelQueue) check() {
	m.t.Helper()
	if m.q.Len() != len(m.model) {
		m.t.Fatalf("Len = %d, want %d", m.q.Len(), len(m.model))
	}
	i := 0
	m.q.Each(func(v int) {
		if i >= len(m.model) || v != m.model[i] {
			m.t.Fatalf("Each visited %d at %d; want the %d values in order", v, i, len(m.model))
		}
		i++
	})
	if i != len(m.model) {
		m.t.Fatalf("Each visited %d values, want %d", i, len(m.model))
	}
	if v, ok := m.q.Peek(); ok != (len(m.model) > 0) || (ok && v != m.model[0]) {
		m.t.Fatalf("Peek = %d, %v; want the front of %d values", v, ok, len(m.model))
	}
}

// TestQueueIsFIFOAcrossSegments pushes and pops in random bursts across many segment
// boundaries, some values put back at the front, and checks the order, Len and Each against
// a slice.
func TestQueueIsFIFOAcrossSegments(t *testing.T) {
	m := &modelQueue{t: t}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		m.push(r.IntN(700))
		m.pop(r.IntN(700))
		for range r.IntN(3) {
			m.q.PushFront(-m.next)
			m.model = append([]int{-m.next}, m.model...)
			m.next++
		}
		m.check()
	}
}

// TestZeroQueueIsEmpty: the zero value is an empty queue ready to use.
func TestZeroQueueIsEmpty(t *testing.T) {
	var q Queue[string]
	if _, ok := q.Pop(); ok || q.Len() != 0 {
		t.Fatal("zero Queue is not empty")
	}
	if _, ok := q.Peek(); ok {
		t.Fatal("Peek on a zero Queue found a value")
	}
	q.Push("a")
	if v, ok := q.Pop(); !ok || v != "a" {
		t.Fatalf("Pop = %q, %v; want a, true", v, ok)
	}
}

// TestPopClearsSlotsAndDrainedQueueKeepsOneSegment: popped slots no longer reference their
// values, a queue drained after a burst keeps only its head segment, and the segments it gave
// back for reuse reference nothing either.
func TestPopClearsSlotsAndDrainedQueueKeepsOneSegment(t *testing.T) {
	var q Queue[*int]
	const n = 100_000
	for i := range n {
		v := i
		q.Push(&v)
	}
	for range n {
		q.Pop()
	}
	if q.head == nil || q.head != q.tail || q.head.next != nil {
		t.Fatal("a drained queue holds more than its head segment")
	}
	checkCleared := func(what string, s *segment[*int]) {
		t.Helper()
		for i, v := range s.items {
			if v != nil {
				t.Fatalf("slot %d of %s still references a value", i, what)
			}
		}
	}
	checkCleared("the head segment", q.head)
	given := 0
	for {
		s, ok := q.free.Get()
		if !ok {
			break
		}
		given++
		if s.next != nil {
			t.Fatal("a segment given back links to others")
		}
		checkCleared("a segment given back", s)
	}
	if given == 0 && !racetest.Enabled {
		t.Fatal("the drained segments were not given back for reuse")
	}
}

// TestSegmentsHaveSaneLength: segment length follows the element size, and a zero-size
// element type works.
func TestSegmentsHaveSaneLength(t *testing.T) {
	var small Queue[byte]
	small.Push(1)
	if got := len(small.head.items); got != segmentBytes {
		t.Fatalf("byte segment length %d, want %d", got, segmentBytes)
	}
	var empty Queue[struct{}]
	for range 100 {
		empty.Push(struct{}{})
	}
	for range 100 {
		if _, ok := empty.Pop(); !ok {
			t.Fatal("lost a zero-size value")
		}
	}
	if empty.Len() != 0 {
		t.Fatalf("Len = %d after draining", empty.Len())
	}
}

// segmentOf pushes two values of T onto a new queue and returns the length of its first
// segment, checking that the queue still gives both back.
func segmentOf[T any](t *testing.T) int {
	t.Helper()
	var q Queue[T]
	var v T
	q.Push(v)
	q.Push(v)
	n := len(q.head.items)
	for range 2 {
		if _, ok := q.Pop(); !ok {
			t.Fatalf("Queue[%T] lost a value", v)
		}
	}
	q.Free()
	return n
}

// TestSegmentsHoldAtMostSegmentBytesOrOneElement: a segment's slots take at most
// segmentBytes, or hold a single value when one is larger, so that one large value waiting
// does not pin a segment of many empty slots; small element types keep their segment
// lengths.
func TestSegmentsHoldAtMostSegmentBytesOrOneElement(t *testing.T) {
	tests := []struct {
		name       string
		size, want int
		len        func(*testing.T) int
	}{
		{"byte", 1, 4096, segmentOf[byte]},
		{"int", 8, 512, segmentOf[int]},
		{"interface", 16, 256, segmentOf[any]},
		{"256 B", 256, 16, segmentOf[[256]byte]},
		{"300 B", 300, 13, segmentOf[[300]byte]},
		{"1 kB", 1024, 4, segmentOf[[1024]byte]},
		{"5 kB", 5000, 1, segmentOf[[5000]byte]},
		{"1 MB", 1 << 20, 1, segmentOf[[1 << 20]byte]},
	}
	for _, tt := range tests {
		n := tt.len(t)
		if n != tt.want || n > 1 && n*tt.size > segmentBytes {
			t.Errorf("%s values: %d per segment (%d B), want %d, within %d B or one value",
				tt.name, n, n*tt.size, tt.want, segmentBytes)
		}
	}
}

// TestSteadyPushPopDoesNotAllocate: a queue that keeps crossing a segment boundary reuses the
// segment it gave back instead of allocating.
func TestSteadyPushPopDoesNotAllocate(t *testing.T) {
	racetest.SkipPoolReuse(t)
	var q Queue[int]
	for i := range 600 {
		q.Push(i)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		for i := range 600 {
			q.Push(i)
		}
		for range 600 {
			q.Pop()
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per steady push/pop cycle, want 0", allocs)
	}
}

// TestSwingingQueueReusesSegments: a queue whose length swings between empty and thousands of
// values, as a pool's backlog does when its submitter runs ahead of the workers and then waits,
// reuses the segments of one swing in the next instead of allocating them again.
func TestSwingingQueueReusesSegments(t *testing.T) {
	racetest.SkipPoolReuse(t)
	var q Queue[any]
	const swing = 20_000 // about 80 segments of interface values
	fill := func() {
		for i := range swing {
			q.Push(i & 0xff) // small integers box without allocating
		}
		for q.Len() > 0 {
			q.Pop()
		}
	}
	fill()
	if allocs := testing.AllocsPerRun(100, fill); allocs > 0 {
		t.Fatalf("%v allocations per swing of %d values after the first, want 0", allocs, swing)
	}
}

// TestNewQueueReusesSegmentsOfADrainedOne: a queue made after another of its element type
// drained and was freed (Free) starts on the other queue's segments instead of allocating.
func TestNewQueueReusesSegmentsOfADrainedOne(t *testing.T) {
	racetest.SkipPoolReuse(t)
	type task struct{ id int } // a type no other test queues
	const backlog = 10_000     // about 20 segments of 512
	const runs = 100
	queues := make([]Queue[task], runs+1) // made ahead: the count is of segments only
	fill := func(q *Queue[task]) {
		for i := range backlog {
			q.Push(task{id: i})
		}
		for q.Len() > 0 {
			q.Pop()
		}
		q.Free()
	}
	fill(&queues[runs])
	next := 0
	allocs := testing.AllocsPerRun(runs-1, func() {
		fill(&queues[next])
		next++
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per new queue of %d values after the first, want 0", allocs, backlog)
	}
}

// TestFreeKeepsValuesAndQueueUsable: Free leaves a queue that holds values as it was, and an
// emptied queue still takes values after it.
func TestFreeKeepsValuesAndQueueUsable(t *testing.T) {
	var q Queue[int]
	q.Free() // a zero queue has no segment to give
	for i := range 1000 {
		q.Push(i)
	}
	q.Free()
	for want := range 1000 {
		if v, ok := q.Pop(); !ok || v != want {
			t.Fatalf("Pop after Free = %d, %v; want %d, true", v, ok, want)
		}
	}
	q.Free()
	if q.head != nil || q.tail != nil {
		t.Fatal("an empty queue kept its segment after Free")
	}
	q.Push(7)
	if v, ok := q.Peek(); !ok || v != 7 || q.Len() != 1 {
		t.Fatalf("Peek after Free and Push = %d, %v, Len %d; want 7, true, 1", v, ok, q.Len())
	}
}

// FuzzQueueMatchesSlice runs a generated sequence of pushes, pops and drops from either end, in runs long enough to
// cross segment boundaries and to drain the queue and grow it again on reused segments, and
// checks every value, Len and Peek against a slice.
func FuzzQueueMatchesSlice(f *testing.F) {
	f.Add([]byte{0x10, 0x91, 0xff, 0xfe, 0x01})
	// Two runs of 1016 pushes, pops across the segment boundaries, a drain and a regrowth.
	f.Add([]byte{0xfe, 0xfe, 0xff, 0xfe, 0xff, 0xff, 0xff, 0x81, 0xfe, 0xff})
	f.Add([]byte{0xfe, 0xfe, 0x9f, 0xff, 0xfe, 0x9f, 0x9f, 0xff, 0x9f}) // drops across segments
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 { // each check walks the queue: longer inputs only take longer
			return
		}
		m := &modelQueue{t: t}
		for _, op := range ops {
			// The low bit picks push or pop, the rest how many: up to 127 × 8 values. A
			// pop of a number that is 7 modulo 8 takes values from the back instead (drop),
			// and one that is 6 modulo 8 takes them from the front by DropFirstAt.
			n := int(op>>1) * 8
			switch {
			case op&1 == 0:
				m.push(n)
			case op>>1%8 == 7:
				m.drop(n / 8)
			case op>>1%8 == 6:
				m.dropFirst(n / 8)
			default:
				m.pop(n)
			}
			m.check()
		}
	})
}

// TestDrainedSegmentsGoBackToTheCollector: the segments a drained backlog gave back for reuse
// are gone after two garbage collections, so an idle queue holds only its head segment.
func TestDrainedSegmentsGoBackToTheCollector(t *testing.T) {
	var q Queue[int]
	for i := range 100_000 {
		q.Push(i)
	}
	for q.Len() > 0 {
		q.Pop()
	}
	runtime.GC()
	runtime.GC()
	if _, ok := q.cache().Get(); ok {
		t.Fatal("a drained segment is still kept for reuse after two collections")
	}
	if q.head != q.tail || q.head.next != nil {
		t.Fatal("the drained queue holds more than its head segment")
	}
}

func TestPushFrontIsPoppedFirst(t *testing.T) {
	var q Queue[int]
	for i := range 600 {
		q.Push(i)
	}
	for range 300 {
		q.Pop()
	}
	for i := range 400 {
		q.PushFront(-i - 1)
	}
	want := make([]int, 0, 700)
	for i := range 400 {
		want = append(want, -400+i)
	}
	for i := 300; i < 600; i++ {
		want = append(want, i)
	}
	for i, w := range want {
		v, ok := q.Pop()
		if !ok || v != w {
			t.Fatalf("pop %d = %d, %v; want %d", i, v, ok, w)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("Len = %d after popping everything", q.Len())
	}
	q.PushFront(7)
	if v, _ := q.Pop(); v != 7 {
		t.Fatalf("PushFront on an empty queue: popped %d", v)
	}
}

// TestStampsStayWithTheirValues pushes at both ends and pops in random bursts, each value
// with its own stamp, across segment boundaries and onto segments that another queue of the
// type stamped before (given back by Free and reused), and checks every stamp PeekAt and
// PopAt return against a model. A stamp of 0 on a reused segment must read back as 0.
func TestStampsStayWithTheirValues(t *testing.T) {
	type pair struct{ v, at int64 }
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 3 {
		var q Queue[int64]
		var model []pair
		next := int64(0)
		for range 400 {
			for range r.IntN(600) {
				at := int64(0)
				if r.IntN(4) > 0 {
					at = r.Int64()
				}
				p := pair{next, at}
				next++
				if r.IntN(5) == 0 {
					q.PushFrontAt(p.v, p.at)
					model = append([]pair{p}, model...)
				} else {
					q.PushAt(p.v, p.at)
					model = append(model, p)
				}
			}
			for range r.IntN(600) {
				v, at, ok := q.PeekAt()
				if ok != (len(model) > 0) || (ok && (v != model[0].v || at != model[0].at)) {
					t.Fatalf("round %d: PeekAt = %d, %d, %v; want %v", round, v, at, ok, model[:min(1, len(model))])
				}
				v, at, ok = q.PopAt()
				if len(model) == 0 {
					if ok {
						t.Fatalf("round %d: PopAt on an empty queue returned %d, true", round, v)
					}
					continue
				}
				if !ok || v != model[0].v || at != model[0].at {
					t.Fatalf("round %d: PopAt = %d, %d, %v; want %v", round, v, at, ok, model[0])
				}
				model = model[1:]
			}
		}
		for len(model) > 0 {
			if v, at, _ := q.PopAt(); v != model[0].v || at != model[0].at {
				t.Fatalf("round %d: PopAt = %d, %d; want %v", round, v, at, model[0])
			}
			model = model[1:]
		}
		q.Free() // the next round's queue starts on these segments, stamps and all
	}
}

// TestUnstampedQueueAllocatesNoStamps: values pushed without stamps, or with stamps of 0,
// leave a segment without a stamps slice. (No test here stamps a queue of this element
// type, so the shared spares hold none with stamps.)
func TestUnstampedQueueAllocatesNoStamps(t *testing.T) {
	var q Queue[func()]
	q.Push(func() {})
	q.PushAt(func() {}, 0)
	q.PushFrontAt(func() {}, 0)
	for s := q.head; s != nil; s = s.next {
		if s.stamps != nil {
			t.Fatal("a queue with no nonzero stamp allocated stamps")
		}
	}
}

func TestDropLastAtTakesOnlyTheNewest(t *testing.T) {
	same := func(a, b int) bool { return a == b }
	var q Queue[int]
	if _, ok := q.DropLastAt(1, same); ok {
		t.Fatal("DropLastAt on an empty queue took something")
	}
	n := 3*segmentLen(8) + 1 // the newest value alone in the last segment
	for i := range n {
		q.PushAt(i, int64(i+100))
	}
	if _, ok := q.DropLastAt(n-2, same); ok {
		t.Fatal("DropLastAt took a value that is not the newest")
	}
	for want := n - 1; want >= 0; want-- {
		at, ok := q.DropLastAt(want, same)
		if !ok || at != int64(want+100) || q.Len() != want {
			t.Fatalf("DropLastAt(%d) = %d, %v with %d left; want %d, true with %d left", want, at, ok, q.Len(), want+100, want)
		}
		if want == n/2 { // the queue still works both ways once values left from its back
			q.Push(-1)
			if _, ok := q.DropLastAt(-1, same); !ok {
				t.Fatal("a value pushed after a drop is not the newest")
			}
		}
	}
	q.Push(7)
	if v, ok := q.Pop(); !ok || v != 7 || q.Len() != 0 {
		t.Fatalf("Pop after the drops = %d, %v, Len %d", v, ok, q.Len())
	}
}
