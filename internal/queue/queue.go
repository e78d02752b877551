// Package queue holds the first-in first-out queue that a pool keeps its waiting tasks in.
//
// The queue is a chain of fixed-size segments. Unlike a ring buffer that doubles as it grows,
// it never copies its contents, and it hands the segments of a burst back to the garbage
// collector once they are drained: a pool that queued a million tasks an hour ago does not
// hold a million-slot array now. One drained segment is kept as a spare so that a queue which
// keeps crossing a segment boundary does not allocate on every crossing.
//
// A Queue is not safe for concurrent use; the pool guards it with its own mutex.
package queue

import "unsafe"

// segmentBytes is the target size of one segment's slots. Four kilobytes holds 256 interface
// values or 512 pointers, and keeps a large element type from making huge segments.
const segmentBytes = 4096

// minSegmentLen keeps segments of a large element type from degenerating into a linked list.
const minSegmentLen = 16

type segment[T any] struct {
	items []T
	next  *segment[T]
}

// Queue is a FIFO of values of type T. The zero value is an empty queue ready to use.
type Queue[T any] struct {
	head, tail *segment[T]
	// first is the index of the oldest value in head; end is one past the newest in tail.
	first, end int
	n          int
	spare      *segment[T]
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
		// Empty: rewind onto the head segment and drop any others.
		q.release(h.next)
		h.next = nil
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

// Peek returns the value at the front of the queue without removing it.
func (q *Queue[T]) Peek() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	return q.head.items[q.first], true
}

func (q *Queue[T]) newSegment() *segment[T] {
	if s := q.spare; s != nil {
		q.spare = nil
		return s
	}
	var zero T
	n := minSegmentLen
	if size := int(unsafe.Sizeof(zero)); size > 0 && segmentBytes/size > n {
		n = segmentBytes / size
	}
	return &segment[T]{items: make([]T, n)}
}

// release keeps s (already cleared by Pop) as the spare segment if there is none.
func (q *Queue[T]) release(s *segment[T]) {
	if s != nil && q.spare == nil {
		s.next = nil
		q.spare = s
	}
}
