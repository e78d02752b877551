package queue

import (
	"math/rand/v2"
	"testing"
)

func TestQueueIsFIFOAcrossSegments(t *testing.T) {
	var q Queue[int]
	const n = 10_000 // many segments of 512 ints
	for i := range n {
		q.Push(i)
	}
	if q.Len() != n {
		t.Fatalf("Len = %d, want %d", q.Len(), n)
	}
	for i := range n {
		if v, ok := q.Peek(); !ok || v != i {
			t.Fatalf("Peek = %d, %v; want %d", v, ok, i)
		}
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop = %d, %v; want %d", v, ok, i)
		}
	}
	if _, ok := q.Pop(); ok || q.Len() != 0 {
		t.Fatal("Pop on an empty queue reported a value")
	}
}

func TestQueueReleasesDrainedSegments(t *testing.T) {
	var q Queue[*int]
	for range 5000 {
		q.Push(new(int))
	}
	for range 5000 {
		q.Pop()
	}
	segments := 0
	for s := q.head; s != nil; s = s.next {
		segments++
	}
	if segments != 1 || q.spare == nil {
		t.Fatalf("an empty queue holds %d segments and spare %v, want 1 and a spare", segments, q.spare != nil)
	}
	for _, v := range q.head.items {
		if v != nil {
			t.Fatal("a popped slot still references its value")
		}
	}
}

func TestQueueSegmentsOfLargeElements(t *testing.T) {
	var q Queue[[1024]byte]
	q.Push([1024]byte{1})
	if got := len(q.head.items); got != minSegmentLen {
		t.Fatalf("segment of 1 KiB elements has %d slots, want %d", got, minSegmentLen)
	}
	if v, _ := q.Pop(); v[0] != 1 {
		t.Fatal("wrong value")
	}
}

// TestQueueMatchesSliceModel compares random pushes and pops with a plain slice.
func TestQueueMatchesSliceModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var q Queue[int]
	var model []int
	for i := range 200_000 {
		if r.IntN(3) > 0 || len(model) == 0 {
			q.Push(i)
			model = append(model, i)
			continue
		}
		v, ok := q.Pop()
		if !ok || v != model[0] {
			t.Fatalf("step %d: Pop = %d, %v; model has %d", i, v, ok, model[0])
		}
		model = model[1:]
		if q.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, model %d", i, q.Len(), len(model))
		}
	}
}

func BenchmarkQueuePushPop(b *testing.B) {
	b.ReportAllocs()
	var q Queue[func()]
	f := func() {}
	for range b.N {
		q.Push(f)
		if _, ok := q.Pop(); !ok {
			b.Fatal("empty")
		}
	}
}
