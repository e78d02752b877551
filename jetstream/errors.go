package jetstream

import "errors"

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
