package crew

import (
	"errors"
	"fmt"
)

// ErrStopped is returned by a submit on a pool that has been stopped (by [Pool.Stop],
// [Pool.StopAndWait], [Pool.Shutdown] or the end of the [WithContext] context), and by a
// submitter that was blocked on a full queue when the pool stopped. The task was not accepted
// and never runs.
var ErrStopped = errors.New("crew: pool is stopped")

// ErrQueueFull is returned by a submit that found the bounded queue full and could not wait:
// [Pool.TrySubmit] reports it as false, and [Pool.Submit] returns it on a pool built with
// [WithNonBlocking]. Nothing was accepted; the task never runs.
var ErrQueueFull = errors.New("crew: queue is full")

// ErrDiscarded is the error of a function of [Go], [Group], [Results], [Map] or [ForEach]
// that was accepted and then dropped from the queue by [DiscardOldest]: it never ran.
var ErrDiscarded = errors.New("crew: task discarded")

// ErrNilTask is returned when the task given to a submit is nil. Nothing was accepted.
var ErrNilTask = errors.New("crew: task is nil")

// PanicError is a task's panic turned into an error: [Future.Wait], [Group.Wait],
// [Results.Wait], [Map] and [ForEach] return it when the function they ran panicked.
// A plain task's panic goes to the panic handler instead (see [WithPanicHandler]).
type PanicError struct {
	// Value is what the task passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as from runtime/debug.Stack; it includes the
	// frame that panicked.
	Stack []byte
}

// Error returns "crew: task panicked: " followed by the panic value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("crew: task panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error, so [errors.Is] and [errors.As] see
// through a panic(err); otherwise it returns nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrTooHeavy is returned by [Pool.SubmitN] and [Pool.SubmitNContext] when n exceeds the
// pool's limit, or for a sub-pool the smallest limit among it and its ancestors, at the time
// of the call: the task could never start beside anything. Nothing was accepted; the task
// never runs. [Pool.TrySubmitN] reports it as false.
var ErrTooHeavy = errors.New("crew: task is heavier than the pool's limit")
