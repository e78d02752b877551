package queue

import (
	"math/rand/v2"
	"testing"
)

// TestQueueIsFIFOAcrossSegments pushes and pops in random bursts across many segment
// boundaries and checks the order and Len against a slice.
func TestQueueIsFIFOAcrossSegments(t *testing.T) {
	var q Queue[int]
	var model []int
	r := rand.New(rand.NewPCG(1, 2))
	next := 0
	for range 2000 {
		for range r.IntN(700) {
			q.Push(next)
			model = append(model, next)
			next++
		}
		for range r.IntN(700) {
			v, ok := q.Pop()
			if len(model) == 0 {
				if ok {
					t.Fatalf("Pop on an empty queue returned %d, true", v)
				}
				continue
			}
			if !ok || v != model[0] {
				t.Fatalf("Pop = %d, %v; want %d, true", v, ok, model[0])
			}
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("Len = %d, want %d", q.Len(), len(model))
		}
		if v, ok := q.Peek(); ok != (len(model) > 0) || (ok && v != model[0]) {
			t.Fatalf("Peek = %d, %v; want the front of %d values", v, ok, len(model))
		}
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
// values, and a queue drained after a burst keeps at most its head segment and one spare.
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
	segments := 0
	for s := q.head; s != nil; s = s.next {
		segments++
		for i, v := range s.items {
			if v != nil {
				t.Fatalf("slot %d of a drained segment still references a value", i)
			}
		}
	}
	if segments != 1 || q.head != q.tail {
		t.Fatalf("a drained queue holds %d segments, want 1", segments)
	}
	if q.spare != nil && q.spare.next != nil {
		t.Fatal("the spare segment links to others")
	}
	for _, v := range q.head.items {
		if v != nil {
			t.Fatal("the head segment still references a value")
		}
	}
}

// TestSegmentsHaveSaneLength: segment length follows the element size, never below the
// minimum, and a zero-size element type works.
func TestSegmentsHaveSaneLength(t *testing.T) {
	var small Queue[byte]
	small.Push(1)
	if got := len(small.head.items); got != segmentBytes {
		t.Fatalf("byte segment length %d, want %d", got, segmentBytes)
	}
	var big Queue[[1024]byte]
	big.Push([1024]byte{})
	if got := len(big.head.items); got != minSegmentLen {
		t.Fatalf("large-element segment length %d, want %d", got, minSegmentLen)
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

// TestSteadyPushPopDoesNotAllocate: a queue that keeps crossing a segment boundary reuses its
// spare segment instead of allocating.
func TestSteadyPushPopDoesNotAllocate(t *testing.T) {
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
