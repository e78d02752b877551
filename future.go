package crew

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
)

// Future is the result of a function run on a pool by [Go]. Its Wait returns what the function
// returned, or the error that kept it from running or the [*PanicError] it panicked with.
//
// A Future is safe for concurrent use: any number of goroutines may call Wait and Done.
type Future[R any] struct {
	fn   func() (R, error)
	val  R
	err  error
	wg   sync.WaitGroup // Wait blocks on it without allocating
	mu   sync.Mutex
	done bool
	ch   chan struct{} // made on demand by Done
	// outs are the channels of the ranges over Completed waiting for f, each sent f once.
	// Made on demand, as ch is, so a Future holds one word for them and Go's one allocation
	// stays in the 80-byte size class (TestGoAllocatesEightyBytes).
	outs *[]chan<- *Future[R]
}

// closed is the channel Done returns for a future that finished before anyone asked for one.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// errGoexit is what a future or group reports for a function that called runtime.Goexit.
var errGoexit = errors.New("crew: task called runtime.Goexit")

// Go runs fn on p and returns a Future for its result. Like [Pool.Submit], it blocks only while
// a bounded queue is full. If p does not accept the task (it is stopped, or its non-blocking
// queue is full), fn never runs and Wait returns [ErrStopped] or [ErrQueueFull] at once; a nil
// fn gives [ErrNilTask]. A panic in fn is returned by Wait as a [*PanicError]; it does not reach
// the pool's panic handler. It panics if p is nil.
//
// Go allocates the Future and nothing else per call.
func Go[R any](p *Pool, fn func() (R, error)) *Future[R] {
	if p == nil {
		panic("crew: Go: p must not be nil")
	}
	f := &Future[R]{fn: fn}
	f.wg.Add(1)
	if fn == nil {
		f.finish(*new(R), ErrNilTask)
		return f
	}
	if err := p.core.submit(f, true); err != nil {
		f.finish(*new(R), err)
	}
	return f
}

// Wait blocks until the function has returned and then returns its result. The return of the
// function synchronizes before the return of Wait.
func (f *Future[R]) Wait() (R, error) {
	f.wg.Wait()
	return f.val, f.err
}

// Done returns a channel that is closed when the function has returned, for use in a select;
// Wait then returns at once.
func (f *Future[R]) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		if f.done {
			f.ch = closed
		} else {
			f.ch = make(chan struct{})
		}
	}
	return f.ch
}

// run, panicked and goexited: a Future is a reporter (see pool.go), so its pool's engine
// recovers a panic or a runtime.Goexit of fn and hands it to panicked or goexited.
func (f *Future[R]) run() {
	v, err := f.fn()
	f.finish(v, err)
}

func (f *Future[R]) panicked(pe *PanicError) { f.finish(*new(R), pe) }

func (f *Future[R]) goexited() { f.finish(*new(R), errGoexit) }

func (f *Future[R]) finish(v R, err error) {
	f.val, f.err, f.fn = v, err, nil
	f.mu.Lock()
	f.done = true
	ch, outs := f.ch, f.outs
	f.outs = nil
	f.mu.Unlock()
	// The ranges over Completed hear first: whoever learns from Wait or Done that f is done,
	// and then completes another future, completes it after f in their order.
	if outs != nil {
		for _, out := range *outs {
			out <- f // never blocks: each range's channel has room for all its futures
		}
	}
	// Done's channel is closed before Wait is released, so that whoever Wait has returned to
	// finds Done closed too (TestFutureIsSafeForConcurrentWaitAndDone).
	if ch != nil {
		close(ch)
	}
	f.wg.Done()
}

// Completed returns a sequence of the futures fs in the order they complete: the loop body
// receives each future once its function has returned, so Wait on it does not wait for the
// function. A future completes before its Wait returns and its Done channel is closed, so one
// completed by a function that waited for another future comes after that future. The futures
// that have already completed when a range starts come first, in the order of fs. A range
// waits for the next future to complete, as Wait would; one that never completes keeps the
// range waiting. A future given twice is yielded twice.
//
// Breaking out of the loop leaves nothing behind: no goroutine is started, and the futures not
// yet yielded forget the range. Each range yields every future of fs again; ranges may run at
// the same time, also over the same futures. Completed panics, naming the index, if a future
// is nil. It keeps its own copy of fs, so changing the slice afterwards does not change the
// sequence.
func Completed[R any](fs ...*Future[R]) iter.Seq[*Future[R]] {
	for i, f := range fs {
		if f == nil {
			panic(fmt.Sprintf("crew: Completed: fs[%d] must not be nil", i))
		}
	}
	fs = slices.Clone(fs)
	return func(yield func(*Future[R]) bool) {
		if len(fs) == 0 {
			return
		}
		out := make(chan *Future[R], len(fs))
		for _, f := range fs {
			f.notify(out)
		}
		n := 0
		defer func() {
			if n < len(fs) { // the body stopped, or panicked: forget out
				for _, f := range fs {
					f.forget(out)
				}
			}
		}()
		for ; n < len(fs); n++ {
			if !yield(<-out) {
				return
			}
		}
	}
}

// notify sends f on out once it has completed: now, if it has.
func (f *Future[R]) notify(out chan<- *Future[R]) {
	f.mu.Lock()
	if !f.done {
		if f.outs == nil {
			f.outs = new([]chan<- *Future[R])
		}
		*f.outs = append(*f.outs, out)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	out <- f
}

// forget drops out from the channels f is to be sent on.
func (f *Future[R]) forget(out chan<- *Future[R]) {
	f.mu.Lock()
	if f.outs != nil {
		*f.outs = slices.DeleteFunc(*f.outs, func(o chan<- *Future[R]) bool { return o == out })
	}
	f.mu.Unlock()
}

func (f *Future[R]) abort(err error) bool {
	f.finish(*new(R), err)
	return true
}
