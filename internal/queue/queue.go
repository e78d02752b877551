// Package queue holds the first-in first-out queue that a pool keeps its waiting tasks in.
//
// The queue is a chain of fixed-size segments. Unlike a ring buffer that doubles as it grows,
// it never copies its contents, and a pool that queued a million tasks an hour ago does not
// hold a million-slot array now.
//
// Drained segments go to a sync.Pool (internal/spare), and new segments come from it. A pool's
// backlog often swings between empty and a few thousand tasks many times a second (a submitter
// that runs ahead of its workers until it yields, then waits for them to catch up), and
// without reuse every swing allocated its segments afresh: a million tiny tasks from one
// submitter allocated 16 MB of segments, 16 bytes per task, all of it garbage within
// milliseconds. A sync.Pool keeps no fixed number of spares: it holds what was given back
// since the last garbage collections and drops the rest, so an idle queue's segments go back
// to the collector within two collections (TestDrainedSegmentsGoBackToTheCollector).
//
// Every queue of one element type shares that sync.Pool, so a queue made after another one
// drained starts on its segments, and a stopped pool gives back with Free even the one segment
// that an empty queue keeps (TestNewQueueReusesSegmentsOfADrainedOne). A program that makes a
// pool or a sub-pool per batch or per request does not pay for its backlog's memory again
// each time.
//
// A value may carry a stamp, an int64 kept beside it in its segment (PushAt, PopAt): a pool
// that times its tasks keeps each one's submit time there. Kept in a queue of its own, the
// times cost the lock's holder two more cache lines per task (the other queue's ends and its
// slots), which moved between the cores with the lock: most of what timing tasks cost on two
// cores (measurements.md in internal/worker, "Observing"). A segment gets its stamps the first
// time a nonzero one is pushed into it, so a queue that keeps none allocates none.
//
// A Queue is not safe for concurrent use; the pool guards it with its own mutex.
package queue

import (
	"unsafe"

	"github.com/crewgo/crew/internal/spare"
)

// segmentBytes is the size of one segment's slots: 256 interface values or 512 pointers. A
// segment of a larger element type holds fewer, down to one: a queue of 1 MB values holds one
// per segment, so one value waiting pins 1 MB rather than a segment of many slots, most of
// them empty (TestSegmentsHoldAtMostSegmentBytesOrOneElement). The cost for such types is a
// segment taken from the shared spares per few values, small beside copying the values.
const segmentBytes = 4096

type segment[T any] struct {
	items  []T
	stamps []int64 // beside items, from the first nonzero stamp pushed into the segment
	next   *segment[T]
}

// Queue is a FIFO of values of type T. The zero value is an empty queue ready to use.
type Queue[T any] struct {
	head, tail *segment[T]
	// first is the index of the oldest value in head; end is one past the newest in tail.
	first, end int
	n          int
	free       *spare.Pool[*segment[T]] // drained and cleared segments; see cache
}

// cache returns the drained segments that q shares with every queue of its element type. It
// is looked up once per queue, when q first needs a segment.
func (q *Queue[T]) cache() *spare.Pool[*segment[T]] {
	if q.free == nil {
		q.free = spare.For[*segment[T]]()
	}
	return q.free
}

// Len returns the number of values in the queue.
func (q *Queue[T]) Len() int { return q.n }

// Push appends v at the back of the queue.
func (q *Queue[T]) Push(v T) {
	if q.tail == nil {
		q.head = q.newSegment()
		q.tail = q.head
		q.first, q.end = 0, 0
	} else if q.end == len(q.tail.items) {
		s := q.newSegment()
		q.tail.next = s
		q.tail = s
		q.end = 0
	}
	q.tail.items[q.end] = v
	q.end++
	q.n++
}

// PushFront puts v at the front of the queue, to be popped next: a task handed out and then
// given back before it started goes back where it was.
func (q *Queue[T]) PushFront(v T) {
	if q.n == 0 {
		q.Push(v)
		return
	}
	if q.first == 0 {
		s := q.newSegment()
		s.next = q.head
		q.head = s
		q.first = len(s.items)
	}
	q.first--
	q.head.items[q.first] = v
	q.n++
}

// PushAt is Push that keeps the stamp at beside v.
func (q *Queue[T]) PushAt(v T, at int64) {
	q.Push(v)
	q.tail.stamp(q.end-1, at)
}

// PushFrontAt is PushFront that keeps the stamp at beside v.
func (q *Queue[T]) PushFrontAt(v T, at int64) {
	q.PushFront(v)
	q.head.stamp(q.first, at)
}

// PopAt is Pop that also returns the stamp pushed with the value. A queue keeps stamps for
// all its values or for none: for a value pushed by Push or PushFront, at means nothing.
func (q *Queue[T]) PopAt() (v T, at int64, ok bool) {
	if q.n == 0 {
		return v, 0, false
	}
	at = q.head.stampOf(q.first)
	v, ok = q.Pop()
	return v, at, ok
}

// PeekAt is Peek that also returns the stamp kept beside the value.
func (q *Queue[T]) PeekAt() (v T, at int64, ok bool) {
	if q.n == 0 {
		return v, 0, false
	}
	return q.head.items[q.first], q.head.stampOf(q.first), true
}

// stamp keeps at for slot i. A segment without stamps needs none for 0.
func (s *segment[T]) stamp(i int, at int64) {
	if s.stamps == nil {
		if at == 0 {
			return
		}
		s.stamps = make([]int64, len(s.items))
	}
	s.stamps[i] = at
}

func (s *segment[T]) stampOf(i int) int64 {
	if s.stamps == nil {
		return 0
	}
	return s.stamps[i]
}

// Pop removes and returns the value at the front of the queue; ok is false when it is empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	h := q.head
	v = h.items[q.first]
	var zero T
	h.items[q.first] = zero // let the collector have what the task referenced
	q.first++
	q.n--
	switch {
	case q.n == 0:
		// Empty: rewind onto the head segment. It is the only one, as a segment is added only
		// to hold a value.
		q.tail = h
		q.first, q.end = 0, 0
	case q.first == len(h.items):
		q.head = h.next
		q.first = 0
		h.next = nil
		q.release(h)
	}
	return v, true
}

// FirstAt returns the stamp kept beside the oldest value if same(it, v) reports true; ok is
// false otherwise.
func (q *Queue[T]) FirstAt(v T, same func(a, b T) bool) (at int64, ok bool) {
	if q.n == 0 || !same(q.head.items[q.first], v) {
		return 0, false
	}
	return q.head.stampOf(q.first), true
}

// LastAt returns the stamp kept beside the newest value if same(it, v) reports true; ok is
// false otherwise.
func (q *Queue[T]) LastAt(v T, same func(a, b T) bool) (at int64, ok bool) {
	if q.n == 0 || !same(q.tail.items[q.end-1], v) {
		return 0, false
	}
	return q.tail.stampOf(q.end - 1), true
}

// DropFirstAt removes the oldest value if same(it, v) reports true, and returns the stamp
// kept beside it; ok is false, and the queue as it was, otherwise.
func (q *Queue[T]) DropFirstAt(v T, same func(a, b T) bool) (at int64, ok bool) {
	if _, ok = q.FirstAt(v, same); !ok {
		return 0, false
	}
	_, at, ok = q.PopAt()
	return at, ok
}

// DropLastAt removes the newest value if same(it, v) reports true, and returns the stamp kept
// beside it; ok is false, and the queue as it was, otherwise.
func (q *Queue[T]) DropLastAt(v T, same func(a, b T) bool) (at int64, ok bool) {
	if q.n == 0 {
		return 0, false
	}
	t := q.tail
	if !same(t.items[q.end-1], v) {
		return 0, false
	}
	q.end--
	at = t.stampOf(q.end)
	var zero T
	t.items[q.end] = zero
	q.n--
	switch {
	case q.n == 0:
		// Empty: the tail is the only segment, as in Pop.
		q.first, q.end = 0, 0
	case q.end == 0:
		// The tail held only v: the segment before it, full as every one but the tail, is
		// the new tail.
		prev := q.head
		for prev.next != t {
			prev = prev.next
		}
		prev.next = nil
		q.tail, q.end = prev, len(prev.items)
		q.release(t)
	}
	return at, true
}

// Each calls f with every value in the queue, front first. f must not change the queue.
func (q *Queue[T]) Each(f func(T)) {
	i, left := q.first, q.n
	for s := q.head; left > 0; s = s.next {
		for ; i < len(s.items) && left > 0; i++ {
			f(s.items[i])
			left--
		}
		i = 0
	}
}

// Peek returns the value at the front of the queue without removing it.
func (q *Queue[T]) Peek() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	return q.head.items[q.first], true
}

// Free gives the segment that an empty queue keeps to other queues of its element type: a pool
// that has stopped calls it, so that the next pool does not allocate its first segment again.
// It does nothing to a queue that holds values. The queue stays ready to use.
func (q *Queue[T]) Free() {
	if q.n > 0 || q.head == nil {
		return
	}
	s := q.head
	q.head, q.tail = nil, nil
	q.first, q.end = 0, 0
	q.release(s)
}

func (q *Queue[T]) newSegment() *segment[T] {
	if s, ok := q.cache().Get(); ok {
		return s
	}
	var zero T
	return &segment[T]{items: make([]T, segmentLen(unsafe.Sizeof(zero)))}
}

// segmentLen returns how many values of size bytes a segment holds: as many as fit in
// segmentBytes, and at least one. Values of size 0 take no room, so segmentBytes of them.
func segmentLen(size uintptr) int {
	return max(1, segmentBytes/int(max(size, 1)))
}

// release gives s, whose slots Pop has cleared, back for reuse.
func (q *Queue[T]) release(s *segment[T]) {
	s.next = nil
	q.cache().Put(s)
}
