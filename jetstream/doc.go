// Package jetstream runs the messages of a NATS JetStream pull consumer on a crew pool.
//
// [Consume] is the whole API: it pulls messages from a [jetstream.Consumer] only as fast as a
// [crew.Pool] has room to work on them, runs a [Handler] for each on the pool, and settles each
// message by what the handler returned. Run the same Consume in as many processes as one
// machine cannot serve alone: the server hands each message of a shared durable consumer to
// one of them at a time, and redelivers what is not acknowledged.
//
// The package name matches nats.go's own jetstream package, so one of the two imports needs a
// name; this documentation calls the nats.go package jetstream and this one crewjs:
//
//	import (
//		"github.com/nats-io/nats.go/jetstream"
//		crewjs "github.com/crewgo/crew/jetstream"
//	)
//
// # Flow control
//
// Consume holds at most the in-flight limit plus the prefetch ([WithMaxInFlight],
// [WithPrefetch]) of messages at a time: it asks the server for no more messages than it has
// free slots, and a slot is free again only when its message is settled. The in-flight limit
// defaults to the pool's worker limit, so a busy pool slows the pulls down instead of piling
// messages up in memory or letting them wait for a worker past their ack wait; the prefetch
// defaults to about 100 ms of the handlers' work (see [WithPrefetch]). On a pool
// with a bounded queue, Consume also pulls no more than the pool has room for, and a message
// is never refused once pulled: the consumer's MaxDeliver counts the times a handler ran.
//
// # Settling
//
// A handler's result decides what happens to its message, exactly once:
//
//   - nil: the message is acknowledged, and Consume waits for the server to confirm it
//     (unless [WithAsyncAck]).
//   - an error made with [Permanent]: the message is terminated and never redelivered. This is
//     how a handler rejects a payload it can never process, for example one that does not
//     decode.
//   - an error made with [RetryAfter]: the message is negatively acknowledged with the delay
//     the handler chose, as for an HTTP 429's Retry-After.
//   - any other error, a panic, or runtime.Goexit: the message is negatively acknowledged
//     with a delay that grows with the number of times it was delivered ([WithBackoff]), so the
//     server redelivers it later, up to the consumer's MaxDeliver.
//
// With [WithDeadLetter], a message that fails on its last delivery, or with a Permanent
// error, is first published to a dead-letter subject with the error and its delivery count.
//
// While a message is held, Consume tells the server every half ack wait that it is still in
// progress ([WithInProgressInterval]), so a handler that runs longer than the ack wait is not
// redelivered to another process while it runs.
//
// # Order
//
// Messages run in parallel, in no particular order. [WithOrderBySubject] runs the messages of
// one subject one at a time, in the order they arrived, within one Consume call; see it for
// what holds across calls and processes.
//
// # Shutdown
//
// When the context given to Consume ends, Consume stops pulling, lets the pulls under way end
// on the server (within the pull expiry, [WithPullExpiry]) so that nothing they were sent is
// lost on the way, lets the running handlers finish within the shutdown timeout
// ([WithShutdownTimeout]), and returns. No message it held is acknowledged or terminated
// unless its handler said so: messages whose handler had not started are negatively
// acknowledged without delay, so another process gets them at once, and the messages of
// handlers still running at the timeout are left for the server to redeliver after their ack
// wait.
package jetstream
