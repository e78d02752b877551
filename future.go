package crew

import (
	"errors"
	"runtime/debug"
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
// the pool's panic handler.
//
// Go allocates the Future and nothing else per call (BenchmarkGo).
func Go[R any](p *Pool, fn func() (R, error)) *Future[R] {
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

func (f *Future[R]) run() {
	returned := false
	defer func() {
		if !returned {
			f.finish(*new(R), recovered(recover()))
		}
	}()
	v, err := f.fn()
	returned = true
	f.finish(v, err)
}

func (f *Future[R]) finish(v R, err error) {
	f.val, f.err, f.fn = v, err, nil
	f.mu.Lock()
	f.done = true
	ch := f.ch
	f.mu.Unlock()
	if ch != nil {
		close(ch)
	}
	f.wg.Done()
}

// recovered turns what recover returned in a deferred function, after the function it guards
// did not return normally, into the error to report: a [*PanicError] whose stack, taken here on
// the panicking goroutine, includes the frame that panicked; or, when recover returned nil
// because the function called runtime.Goexit, errGoexit.
func recovered(v any) error {
	if v == nil {
		return errGoexit
	}
	return &PanicError{Value: v, Stack: debug.Stack()}
}
