package jetstream

import (
	"errors"
	"time"
)

// ErrShutdownTimeout is returned, wrapped, by [Consume] when handlers were still running at
// the end of the shutdown timeout ([WithShutdownTimeout]). Their messages were neither
// acknowledged nor terminated: the server redelivers them after their ack wait. The handlers
// themselves keep running on the pool with their context canceled, and what they return is
// ignored.
var ErrShutdownTimeout = errors.New("crew/jetstream: shutdown timeout: handlers still running")

// Permanent marks err as an error that retrying cannot fix, such as a payload that does not
// decode: a [Handler] that returns it gets its message terminated, so the server never
// redelivers it, with err's text as the reason. The result matches err under [errors.Is] and
// [errors.As], and [IsPermanent] reports it. Permanent(nil) returns nil, which acknowledges the
// message.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was made by [Permanent].
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// RetryAfter marks err as a failure to retry after d rather than after the backoff delay
// ([WithBackoff]): a [Handler] that returns it gets its message negatively acknowledged with
// delay d, so the server redelivers it d later (at once if d is 0 or less), as an HTTP
// client honours a 429 response's Retry-After. On a consumer with a BackOff list the server
// redelivers the nth delivery no sooner than BackOff[n-1] - AckWait after a nak, so a
// shorter d waits that long. The delivery still counts against the
// consumer's MaxDeliver, and on the last one [WithDeadLetter] applies as to any failure.
// err may be nil; the result's text is then "retry after" and d. The result matches err
// under [errors.Is] and [errors.As]; an error that is also [Permanent] terminates the
// message, whichever wraps the other.
func RetryAfter(d time.Duration, err error) error {
	return &retryAfterError{d: d, err: err}
}

type retryAfterError struct {
	d   time.Duration
	err error
}

func (e *retryAfterError) Error() string {
	if e.err == nil {
		return "retry after " + e.d.String()
	}
	return e.err.Error()
}

func (e *retryAfterError) Unwrap() error { return e.err }

// retryDelay returns the delay RetryAfter put in err's chain, if any.
func retryDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.d, true
	}
	return 0, false
}
