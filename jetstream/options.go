package jetstream

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultPullExpiry is how long one pull request waits on the server for messages, unless
// [WithPullExpiry] or the consumer's MaxRequestExpires says otherwise. It also bounds how
// long [Consume] waits, once its context has ended, for the pulls under way to end.
const DefaultPullExpiry = time.Second

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
	orderBySubject   bool
	deadLetter       string
	deadLetterJS     jetstream.JetStream
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
// queue and get in-progress signals like the others. A larger prefetch means fewer, larger
// pulls; a smaller one leaves fewer messages waiting in this process that another could be
// running. 0 pulls only for idle slots. It panics if n is negative.
//
// By default the prefetch sizes itself to about 100 ms of work: as many messages as the
// handlers settled in 100 ms, going by the rate over the last 100 ms or more, at least the
// in-flight limit and at most 500 (or the limit, if that is larger). Fast handlers then get
// pulls of a hundred messages and more, as nats.go's own Consume keeps up to 500 coming,
// while slow ones (a second each, say) hold no more than twice the limit, so that other
// processes sharing the consumer find the rest on the server.
func WithPrefetch(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("crew/jetstream: WithPrefetch: n must be >= 0, got %d", n))
	}
	return func(c *config) { c.prefetch = n }
}

// WithBackoff sets the delay before a failed message is redelivered: after a handler error
// (other than [Permanent]), a panic or runtime.Goexit, the message is negatively acknowledged
// with delay(attempt), where attempt is the number of times the server has delivered it, 1
// the first time. A delay of 0 or less asks for redelivery at once. On a consumer with a
// BackOff list, no redelivery comes sooner than BackOff[attempt-1] - AckWait (see
// [RetryAfter]). delay is called on the worker that ran the handler, and must be safe for
// concurrent use. A delay that panics settles nothing: its panic goes to the pool's panic
// handler, and the server redelivers the message after its ack wait.
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
// ends empty and Consume sends another; [DefaultPullExpiry] unless set. A consumer whose
// MaxRequestExpires is shorter gets pulls of that expiry instead. A shorter expiry resumes
// sooner after the server restarts or the connection moves to another server, and lets
// Consume return sooner once its context has ended (it waits for the pulls under way), at
// the cost of more requests while the stream is empty. It panics if d is less than 10ms.
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

// WithOrderBySubject runs the messages of one subject one at a time, in the order this
// Consume call received them, while messages of different subjects run in parallel up to the
// pool's limit: the handlers go through a [crew.Keyed] keyed by the message's subject, so the
// return of one message's handler synchronizes before the start of the next of its subject.
// Consume then keeps one pull under way at a time, so that it receives the messages in the
// order the server sent them.
//
// The order holds within one Consume call and covers deliveries, not first deliveries: a
// message that fails is redelivered after the backoff delay, behind the messages of its
// subject that arrived meanwhile, and a message released at shutdown, or left to its ack
// wait, may be handled by another process. Several processes sharing one consumer each get
// some of a subject's messages and run them concurrently with each other. Order across
// processes needs the subject's messages to go to one consumer at a time: partition the
// subjects (a subject mapping with a partition token, one consumer, and one process, per
// partition), or give the consumer MaxAckPending 1, at the cost of all parallelism.
func WithOrderBySubject() Option {
	return func(c *config) { c.orderBySubject = true }
}

// WithDeadLetter publishes, through js, each message whose handler failed for the last time
// to subject, before terminating it: a message whose delivery count has reached the
// consumer's MaxDeliver and whose handler failed (returned an error, panicked or called
// runtime.Goexit), and a message whose handler returned a [Permanent] error. The dead letter
// carries the message's payload and headers (less the Nats- headers the server would act on
// at publish, such as Nats-Expected-Last-Sequence; Nats-Msg-Id is kept) and these:
//
//   - Crew-Error: the handler's error text.
//   - Crew-Delivery-Count: the delivery that failed, 1 the first time.
//   - Crew-Subject, Crew-Stream, Crew-Stream-Sequence: where the message came from.
//
// The publish waits for the stream that stores subject to confirm it; only then is the
// message terminated, with the error as the reason. If the publish fails, as when no stream
// stores subject, the failure goes to the error handler ([WithErrorHandler]) and the message
// is negatively acknowledged as after any failure instead: the server keeps it, and
// redelivers it if it has deliveries left. A consumer cannot publish, so the JetStream
// context comes with the subject. It panics if js is nil or subject is empty.
func WithDeadLetter(js jetstream.JetStream, subject string) Option {
	switch {
	case js == nil:
		panic("crew/jetstream: WithDeadLetter: js must not be nil")
	case subject == "":
		panic("crew/jetstream: WithDeadLetter: subject must not be empty")
	}
	return func(c *config) { c.deadLetter, c.deadLetterJS = subject, js }
}
