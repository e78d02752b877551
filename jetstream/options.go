package jetstream

import (
	"fmt"
	"time"
)

// DefaultPullExpiry is how long one pull request waits on the server for messages, unless
// [WithPullExpiry] says otherwise.
const DefaultPullExpiry = 5 * time.Second

// An Option configures a [Consume] call.
type Option func(*config)

type config struct {
	maxInFlight      int // 0: the pool's limit
	prefetch         int // -1: the default
	backoff          func(attempt int) time.Duration
	shutdownTimeout  time.Duration // -1: the ack wait
	progressInterval time.Duration // -1: half the ack wait
	pullExpiry       time.Duration
	errorHandler     func(error)
	asyncAck         bool
}

func newConfig(opts []Option) config {
	c := config{prefetch: -1, shutdownTimeout: -1, progressInterval: -1, pullExpiry: DefaultPullExpiry}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	return c
}

// WithMaxInFlight sets how many messages, besides the prefetch, Consume holds at a time: the
// messages being handled or queued on the pool. By default it is the pool's worker limit
// ([crew.Stats].MaxWorkers), read before each pull, so it follows [crew.Pool.Resize]. Set it
// when several Consume calls share one pool, to split the pool between them. It panics if n
// is less than 1.
func WithMaxInFlight(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("crew/jetstream: WithMaxInFlight: n must be >= 1, got %d", n))
	}
	return func(c *config) { c.maxInFlight = n }
}

// WithPrefetch sets how many messages Consume may hold beyond the in-flight limit
// ([WithMaxInFlight]), so that a worker that finishes finds the next message already pulled
// instead of waiting for a round trip to the server. Prefetched messages wait in the pool's
// queue and get in-progress signals like the others. The default is a quarter of the
// in-flight limit, rounded up; 0 pulls only for idle slots. It panics if n is negative.
func WithPrefetch(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("crew/jetstream: WithPrefetch: n must be >= 0, got %d", n))
	}
	return func(c *config) { c.prefetch = n }
}

// WithBackoff sets the delay before a failed message is redelivered: after a handler error
// (other than [Permanent]), a panic or runtime.Goexit, the message is negatively acknowledged
// with delay(attempt), where attempt is the number of times the server has delivered it, 1
// the first time. A delay of 0 or less asks for redelivery at once. delay is called on the
// worker that ran the handler, and must be safe for concurrent use.
//
// The default follows the consumer's BackOff list when it has one (the entry for the
// attempt, the last one past its end), and otherwise waits 1s after the first delivery and
// doubles the wait after each further one, up to 5 minutes. It panics if delay is nil.
func WithBackoff(delay func(attempt int) time.Duration) Option {
	if delay == nil {
		panic("crew/jetstream: WithBackoff: delay must not be nil")
	}
	return func(c *config) { c.backoff = delay }
}

// WithShutdownTimeout sets how long Consume waits, once its context has ended or a pull
// failed for good, for the running handlers to finish. The default is the consumer's ack
// wait: a message still held after that is redelivered by the server anyway. 0 waits for no
// handler. It panics if d is negative.
func WithShutdownTimeout(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("crew/jetstream: WithShutdownTimeout: d must be >= 0, got %v", d))
	}
	return func(c *config) { c.shutdownTimeout = d }
}

// WithInProgressInterval sets how often Consume tells the server that a message it holds is
// still being worked on (the message's InProgress), starting d after the message arrived and
// repeating every d until it is settled. The default is half the consumer's ack wait for
// the message's delivery (its BackOff entry, when the consumer has a BackOff list). 0 sends
// no in-progress signal: a message held longer than the ack wait is then redelivered while
// its handler still runs. It panics if d is negative.
func WithInProgressInterval(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("crew/jetstream: WithInProgressInterval: d must be >= 0, got %v", d))
	}
	return func(c *config) { c.progressInterval = d }
}

// WithPullExpiry sets how long one pull request waits on the server for messages before it
// ends empty and Consume sends another; [DefaultPullExpiry] unless set. A shorter expiry
// resumes sooner after the server restarts or the connection moves to another server, at the
// cost of more requests while the stream is empty. It panics if d is less than 10ms.
func WithPullExpiry(d time.Duration) Option {
	if d < 10*time.Millisecond {
		panic(fmt.Sprintf("crew/jetstream: WithPullExpiry: d must be >= 10ms, got %v", d))
	}
	return func(c *config) { c.pullExpiry = d }
}

// WithErrorHandler sets a function that receives the errors Consume does not return: a pull
// that failed and will be retried, and an acknowledgement, negative acknowledgement,
// termination or in-progress signal that failed (the message is then left for the server to
// redeliver). h is called from Consume's goroutines, one error at a time per goroutine, and
// must be safe for concurrent use. Without it, those errors are dropped.
func WithErrorHandler(h func(err error)) Option {
	return func(c *config) { c.errorHandler = h }
}

// WithAsyncAck makes Consume acknowledge a message without waiting for the server to confirm
// it (the message's Ack instead of its DoubleAck), so that a worker moves on to the next
// message a round trip sooner. The cost: an acknowledgement lost on the way, as when the
// connection drops, goes unnoticed, and the server redelivers the message after its ack
// wait, so it is handled twice.
func WithAsyncAck() Option {
	return func(c *config) { c.asyncAck = true }
}
