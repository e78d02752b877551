package worker

import (
	"sync"
	"time"
)

// waiter is a submitter blocked on a full queue. The worker that makes room moves the
// waiter's task into the queue on its behalf and tells it so, which keeps blocked submitters
// in first-come order and wakes exactly one per free slot
// (TestBlockedSubmittersAreServedFirstComeOnePerFreeSlot).
type waiter[T any] struct {
	arg        T
	at         int64       // the submit time for the Observer: see observe.go
	result     chan Result // buffered: deciding never blocks
	prev, next *waiter[T]
	listed     bool
	here       bool // SubmitOrRun's, waiting only while the engine is paused
}

func (w *waiter[T]) decide(r Result) { w.result <- r }

// waiterList is a doubly linked FIFO, so a submitter whose context ends can leave from the
// middle in constant time.
type waiterList[T any] struct {
	head, tail *waiter[T]
	n          int
}

func (l *waiterList[T]) push(w *waiter[T]) {
	w.prev, w.next, w.listed = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *waiterList[T]) remove(w *waiter[T]) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
	l.n--
}

func (l *waiterList[T]) pop() *waiter[T] {
	w := l.head
	if w != nil {
		l.remove(w)
	}
	return w
}

// BlockedSubmitters returns how many submitters wait in Submit for room in the full queue.
// Tests use it to know that their submitters have blocked.
func (e *Engine[T]) BlockedSubmitters() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for w := e.blocked.head; w != nil; w = w.next {
		n++
	}
	return n
}

// waiters recycles waiter values (of every T, hence any) so that a submitter that blocks
// does not allocate in steady state (TestBlockedSubmitterDoesNotAllocate).
var waiters sync.Pool

// getWaiter takes a recycled waiter, or makes one. Inside a testing/synctest bubble it always
// makes one, and putWaiter drops it: its channel must not leave the bubble (see inBubble).
func getWaiter[T any](bubbled bool) *waiter[T] {
	if !bubbled && !inBubble() {
		if w, ok := waiters.Get().(*waiter[T]); ok {
			return w
		}
	}
	return &waiter[T]{result: make(chan Result, 1)}
}

func putWaiter[T any](w *waiter[T], bubbled bool) {
	var zero T
	w.arg, w.at, w.here = zero, 0, false
	if !bubbled && !inBubble() {
		waiters.Put(w)
	}
}

// dequeue pops the next task, with its submit time for an engine that observes, and, if a
// submitter is blocked on the full queue, moves its task into the room just made. Callers
// hold e.mu.
func (e *Engine[T]) dequeue() (arg T, at int64, ok bool) {
	switch {
	case e.queue.lv != nil:
		arg, at, ok = e.queue.PopAt()
	case e.timed:
		arg, at, ok = e.queue.fifo.PopAt()
	default:
		arg, ok = e.queue.fifo.Pop() // the plain queue without levelQueue's call: see priority.go
	}
	if ok && e.blocked.head != nil { // tested here: most pops find no one blocked
		e.admitBlocked(1)
	}
	return arg, at, ok
}

// admitBlocked moves up to room submitters blocked on the full queue into the room made,
// unless the engine is frozen. Callers hold e.mu.
func (e *Engine[T]) admitBlocked(room int) {
	if e.frozen.Load() {
		return
	}
	for range room {
		b := e.blocked.pop()
		if b == nil {
			return
		}
		e.queue.PushAt(b.arg, b.at) // timed from its submit, not from now
		e.accept()
		b.decide(Accepted)
	}
}

// expire takes w, whose wait ran out, off the blocked list, unless a worker or Stop decided
// for it first; then their word stands.
func (e *Engine[T]) expire(w *waiter[T]) Result {
	e.mu.Lock()
	r, gaveUp := e.expired(w)
	e.mu.Unlock()
	if !gaveUp {
		r = <-w.result
	}
	return r
}

// block parks the calling submitter until its task is accepted, the engine stops or done is
// closed; at is the submit's time, which the task keeps when it is queued. It is entered
// with e.mu held and releases it.
func (e *Engine[T]) block(arg T, done <-chan struct{}, at int64) Result {
	return e.blockUntil(arg, done, nil, at)
}

// blockUntil is block that also gives up when expire (nil: never) fires; see expired.
func (e *Engine[T]) blockUntil(arg T, done <-chan struct{}, expire <-chan time.Time, at int64) Result {
	return e.blockWaiter(arg, done, expire, nil, false, at)
}

// blockWaiter is blockUntil, for SubmitOrRun with here set (see blockHere).
func (e *Engine[T]) blockWaiter(arg T, done <-chan struct{}, expire <-chan time.Time, resumed <-chan struct{}, here bool, at int64) Result {
	w := getWaiter[T](e.bubbled)
	w.arg, w.at, w.here = arg, at, here
	e.blocked.push(w)
	e.mu.Unlock()

	var r Result
	select {
	case r = <-w.result:
	case <-done:
		e.mu.Lock()
		if w.listed {
			e.blocked.remove(w)
			e.refuse(Canceled)
			e.mu.Unlock()
			r = Canceled
		} else {
			// A worker or Stop decided between ctx ending and the lock: its word stands,
			// since an accepted task must be reported as accepted.
			// TestBlockedSubmitDecidedBeforeItGaveUpStands.
			e.mu.Unlock()
			r = <-w.result
		}
	case <-expire:
		r = e.expire(w)
	case <-resumed:
		r = e.expire(w)
	}
	putWaiter(w, e.bubbled)
	return r
}
