package jetstream_test

// Adversarial tests: Consume on pools that are paused, resized, stopped, shut
// down, rate limited, leveled or given a task timeout while it consumes, and the self-sizing
// prefetch under handlers that change speed. Each test quotes the promise it attacks.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// adv2Advisories subscribes to the consumer's advisories of kind (MAX_DELIVERIES,
// MSG_NAKED, MSG_TERMINATED).
func adv2Advisories(tb testing.TB, q *queue, kind string) *nats.Subscription {
	tb.Helper()
	sub, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER." + kind + ".JOBS.workers")
	if err != nil {
		tb.Fatal(err)
	}
	return sub
}

// adv2NoAdvisory fails the test if sub received an advisory.
func adv2NoAdvisory(tb testing.TB, sub *nats.Subscription, what string) {
	tb.Helper()
	if m, err := sub.NextMsg(100 * time.Millisecond); err == nil {
		tb.Errorf("%s: %s", what, m.Data)
	}
}

// adv2Once fails the test unless every id of l was handled exactly once.
func adv2Once(tb testing.TB, l *ledger) {
	tb.Helper()
	bad := 0
	for i := range l.seen {
		if s := l.seen[i].Load(); s != 1 {
			if bad++; bad <= 10 {
				tb.Errorf("message %d handled %d times, want once", i, s)
			}
		}
	}
}

// adv2Handled is a handler that records each message in l as handled and done.
func adv2Handled(tb testing.TB, l *ledger, work time.Duration) crewjs.Handler {
	return func(_ context.Context, msg jetstream.Msg) error {
		i := l.id(tb, msg)
		if i < 0 {
			return nil
		}
		l.seen[i].Add(1)
		if work > 0 {
			time.Sleep(work)
		}
		l.done[i].Add(1)
		return nil
	}
}

// TestAdv2RetryAfterRedeliversAfterItsDelayOnABackOffConsumer attacks RetryAfter and the
// default backoff on a consumer with a BackOff list. RetryAfter: "the server redelivers it d
// later"; the default follows the BackOff list. nats-server starts a nak's delay an ack wait
// (BackOff[0]) in the past and waits out the BackOff entry of the deliveries so far, so a
// delay sent as is comes back BackOff[n-1] - BackOff[0] late: with BackOff [400ms, 900ms],
// the second delivery's RetryAfter(700ms) would come back after 1.2s, and the default's 900ms
// after 1.4s.
func TestAdv2RetryAfterRedeliversAfterItsDelayOnABackOffConsumer(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"RetryAfter", crewjs.RetryAfter(700*time.Millisecond, errors.New("busy")), 700 * time.Millisecond},
		{"default", errors.New("busy"), 900 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{
				BackOff:    []time.Duration{400 * time.Millisecond, 900 * time.Millisecond},
				MaxDeliver: 4,
			})
			publish(t, q.js, 1)
			p := newPool(t, 1)
			var mu sync.Mutex
			var arrived, failed []time.Time
			done := make(chan struct{})
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
					mu.Lock()
					defer mu.Unlock()
					arrived = append(arrived, time.Now())
					if len(arrived) < 3 {
						failed = append(failed, time.Now())
						if len(arrived) == 1 {
							return crewjs.RetryAfter(0, errors.New("at once"))
						}
						return c.err
					}
					close(done)
					return nil
				}, crewjs.WithInProgressInterval(0), failOnError(t))
			})
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the message was not handled three times within 10s")
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if gap := arrived[2].Sub(failed[1]); gap < c.want-50*time.Millisecond || gap > c.want+250*time.Millisecond {
				t.Errorf("delivery 3 came %v after delivery 2 failed, want about %v", gap.Round(time.Millisecond), c.want)
			}
		})
	}
}

// TestAdv2SubPoolStarvedByAHigherLevelLosesNothing attacks Consume on a bounded,
// non-blocking sub-pool at level 0 whose parent is flooded by a sibling at level 1 for longer
// than the ack wait. crew's WithPriority: "no task of a higher level is waiting when a
// lower-level one starts", so the messages wait. Consume: "a message is never refused once
// pulled, so the consumer's MaxDeliver counts the times a handler ran", and "From the moment
// a message arrives until it is settled, Consume sends it an in-progress signal every half
// ack wait". With MaxDeliver 1, every message is handled exactly once.
func TestAdv2SubPoolStarvedByAHigherLevelLosesNothing(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 500 * time.Millisecond, MaxDeliver: 1})
	maxed := adv2Advisories(t, q, "MAX_DELIVERIES")
	const n = 40
	publish(t, q.js, n)
	l := newLedger(n)
	parent := newPool(t, 2)
	high := parent.Sub(2, crew.WithPriority(1))
	low := parent.Sub(2, crew.WithQueueSize(2), crew.WithNonBlocking())
	var handled atomic.Int64
	h := adv2Handled(t, l, time.Millisecond)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, low, func(ctx context.Context, msg jetstream.Msg) error {
			handled.Add(1)
			return h(ctx, msg)
		}, failOnError(t))
	})
	waitFor(t, 5*time.Second, "some handled", func() bool { return handled.Load() >= 5 })
	// The flood: the sibling's queue never empties for well over the ack wait.
	for range 400 {
		if err := high.Submit(func() { time.Sleep(3 * time.Millisecond) }); err != nil {
			t.Fatal(err)
		}
	}
	before := handled.Load()
	time.Sleep(100 * time.Millisecond)
	if got := handled.Load() - before; got > 4 {
		t.Errorf("%d handlers of the level-0 sub-pool started while its level-1 sibling's queue was full", got)
	}
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	adv2Once(t, l)
	checkDrained(t, q.st, q.cons)
	adv2NoAdvisory(t, maxed, "a message held by Consume ran out of deliveries")
}

// TestAdv2RateLimitedPoolHoldsLittleAndLosesNothing attacks Consume on a rate-limited pool.
// crew's WithRateLimit: "a task held back waits in the queue, never on a worker". Consume
// holds "at most the in-flight limit plus the prefetch", the default prefetch being "as many
// messages as the handlers settled in 100 ms ... at least the in-flight limit"; held messages
// get in-progress signals. At 25 starts a second on a pool of 4, the prefetch stays at 4,
// so at most 8 messages are unacknowledged at once, and with an ack wait shorter than the
// run, MaxDeliver 1, every message is handled exactly once.
func TestAdv2RateLimitedPoolHoldsLittleAndLosesNothing(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 400 * time.Millisecond, MaxDeliver: 1})
	maxed := adv2Advisories(t, q, "MAX_DELIVERIES")
	const n = 40
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4, crew.WithRateLimit(25, 1))
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, adv2Handled(t, l, 0), failOnError(t))
	})
	most := 0
	waitFor(t, 10*time.Second, "every message done", func() bool {
		most = max(most, info(t, q.cons).NumAckPending)
		return l.allDone()
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if most > 8 {
		t.Errorf("%d messages unacknowledged at once on a pool of 4 starting 25 tasks a second, want at most 8", most)
	}
	adv2Once(t, l)
	checkDrained(t, q.st, q.cons)
	adv2NoAdvisory(t, maxed, "a message held by Consume ran out of deliveries")
}

// TestAdv2TaskTimeoutLeavesTheHandlersContextAlive attacks Consume on a pool made with
// WithTaskTimeout. crew: "Plain tasks, which receive no context ... are unaffected". Handler:
// "ctx ... is not canceled when that context ends ... ctx is canceled when the shutdown
// timeout passes or Consume returns an error". A handler that runs past the pool's task
// timeout keeps a live context with no deadline, and its message is acknowledged, also
// under WithOrderBySubject (whose Keyed runs the handlers).
func TestAdv2TaskTimeoutLeavesTheHandlersContextAlive(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{})
			const n = 6
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 3, crew.WithTaskTimeout(20*time.Millisecond))
			opts := []crewjs.Option{failOnError(t)}
			if ordered {
				opts = append(opts, crewjs.WithOrderBySubject())
			}
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
					i := l.id(t, msg)
					l.seen[i].Add(1)
					time.Sleep(60 * time.Millisecond)
					if _, ok := ctx.Deadline(); ok || ctx.Err() != nil {
						t.Errorf("message %d: the handler's context has a deadline or ended (%v) under the pool's task timeout", i, context.Cause(ctx))
					}
					l.done[i].Add(1)
					return nil
				}, opts...)
			})
			waitFor(t, 5*time.Second, "every message done", l.allDone)
			waitFor(t, 5*time.Second, "every message acknowledged", func() bool { return info(t, q.cons).NumAckPending == 0 })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			l.check(t)
			checkDrained(t, q.st, q.cons)
		})
	}
}

// TestAdv2PoolShutdownThatGivesUpReleasesTheQueuedMessages attacks Consume on a pool whose
// Shutdown gives up while handlers are blocked and messages wait in its queue. crew's
// Shutdown: "stops the pool as Pool.Stop does"; plain tasks "still run in the background".
// Consume: when p is stopped it "gives up, shuts down as above and returns the error,
// wrapped", having negatively acknowledged "without delay, each message whose handler had
// not started, for another process to take at once", and waits for the running handlers. So
// the queued messages are released while the handlers are still blocked, Consume returns
// crew.ErrStopped once they are let go, their messages are acknowledged, and no handler
// starts after Consume returned.
func TestAdv2PoolShutdownThatGivesUpReleasesTheQueuedMessages(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	naks := adv2Advisories(t, q, "MSG_NAKED")
	const n = 30
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 2)
	release, open := newGate(t)
	var started, afterReturn atomic.Int64
	var returned atomic.Bool
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			if returned.Load() {
				afterReturn.Add(1)
			}
			started.Add(1)
			<-release
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPrefetch(3), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
		returned.Store(true)
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want crew.ErrStopped", err)
		}
		return nil
	})
	waitFor(t, 5*time.Second, "two running, three queued", func() bool {
		return started.Load() == 2 && info(t, q.cons).NumAckPending == 5
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with blocked tasks returned %v, want context.DeadlineExceeded", err)
	}
	for i := range 3 {
		if _, err := naks.NextMsg(3 * time.Second); err != nil {
			t.Fatalf("%d of the 3 queued messages released while two handlers were blocked: %v", i, err)
		}
	}
	open()
	advWaitDone(t, done, 3*time.Second, "after the pool's Shutdown and the gate")
	if s := started.Load(); s != 2 {
		t.Errorf("%d handlers started, want the 2 running at the Shutdown", s)
	}
	if a := afterReturn.Load(); a > 0 {
		t.Errorf("%d handlers started after Consume returned", a)
	}
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}

// TestAdv2CancelReleasesAtOnceOnABackOffConsumer attacks the release at shutdown on a
// consumer with a BackOff list. Consume: when ctx ends it "negatively acknowledges, without
// delay, each message whose handler had not started, for another process to take at once".
// The consumer's BackOff (2s, then 5s) must not delay them: another process gets them
// within a second.
func TestAdv2CancelReleasesAtOnceOnABackOffConsumer(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{BackOff: []time.Duration{2 * time.Second, 5 * time.Second}, MaxDeliver: 3})
	const n = 20
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 2)
	p.Pause()
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, adv2Handled(t, l, 0), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 5*time.Second, "messages held on the paused pool", func() bool { return info(t, q.cons).NumAckPending >= 4 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	p.Resume()
	released := time.Now()
	pr := startProcess(t, q.s, 4, adv2Handled(t, l, 0), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	waitFor(t, 5*time.Second, "every message done by another process", l.allDone)
	if d := time.Since(released); d > 1500*time.Millisecond {
		t.Errorf("the released messages took %v to reach another process, want at once (the BackOff's first entry is 2s)", d.Round(time.Millisecond))
	}
	if err := pr.stop(); err != nil {
		t.Fatal(err)
	}
	adv2Once(t, l)
	checkDrained(t, q.st, q.cons)
}

// TestAdv2LongHandlersOutliveTheAckWaitOnALeveledSubPool attacks the in-progress signals
// with handlers that run three ack waits, on a leveled sub-pool, with messages prefetched
// behind them. Consume: "From the moment a message arrives until it is settled, Consume
// sends it an in-progress signal every half ack wait"; doc: "so a handler that runs longer
// than the ack wait is not redelivered to another process while it runs". With MaxDeliver 1
// and a second process waiting on the consumer, each message is handled exactly once.
func TestAdv2LongHandlersOutliveTheAckWaitOnALeveledSubPool(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 200 * time.Millisecond, MaxDeliver: 1})
	maxed := adv2Advisories(t, q, "MAX_DELIVERIES")
	const n = 6
	publish(t, q.js, n)
	l := newLedger(n)
	parent := newPool(t, 3)
	sub := parent.Sub(2, crew.WithPriority(2))
	var running highWater
	h := adv2Handled(t, l, 600*time.Millisecond)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, sub, func(ctx context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			return h(ctx, msg)
		}, crewjs.WithPrefetch(n-2), failOnError(t))
	})
	waitFor(t, 5*time.Second, "every message held", func() bool { return info(t, q.cons).NumAckPending == n })
	// Another process on the consumer would get any message whose ack wait passed.
	other := startProcess(t, q.s, 2, adv2Handled(t, l, 0), crewjs.WithPullExpiry(100*time.Millisecond))
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := other.stop(); err != nil {
		t.Fatal(err)
	}
	if m := running.max.Load(); m > 2 {
		t.Errorf("%d handlers ran at once on a sub-pool of 2", m)
	}
	if h := other.handled.Load(); h > 0 {
		t.Errorf("%d messages held by the first process reached the other", h)
	}
	adv2Once(t, l)
	checkDrained(t, q.st, q.cons)
	adv2NoAdvisory(t, maxed, "a message held by Consume ran out of deliveries")
}

// TestAdv2DeletedStreamOnAPausedPoolEndsConsume attacks the deletion promise with a pool
// paused while every slot is held, so that no pull is under way. Consume: it returns "when
// the consumer or its stream no longer exists: a pull or an acknowledgement that finds no
// responder makes Consume look the consumer up, and a lookup that finds neither returns an
// error matching jetstream.ErrConsumerDeleted", "whether a pull was waiting or not". Resumed
// after the deletion, the next acknowledgement or pull meets it, with and without
// WithAsyncAck.
func TestAdv2DeletedStreamOnAPausedPoolEndsConsume(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{})
			publish(t, q.js, 10)
			p := newPool(t, 2)
			p.Pause()
			opts := []crewjs.Option{crewjs.WithPrefetch(0), crewjs.WithPullExpiry(100 * time.Millisecond)}
			if async {
				opts = append(opts, crewjs.WithAsyncAck())
			}
			_, done := consumeInBackground(t, func(ctx context.Context) error {
				err := crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error { return nil }, opts...)
				if !errors.Is(err, jetstream.ErrConsumerDeleted) {
					t.Errorf("Consume returned %v, want jetstream.ErrConsumerDeleted", err)
				}
				return nil
			})
			waitFor(t, 5*time.Second, "every slot held", func() bool { return info(t, q.cons).NumAckPending == 2 })
			time.Sleep(150 * time.Millisecond) // past the pull expiry: no pull under way
			if err := q.js.DeleteStream(context.Background(), "JOBS"); err != nil {
				t.Fatal(err)
			}
			p.Resume()
			advWaitDone(t, done, 5*time.Second, "after the stream's deletion and the Resume")
		})
	}
}

// TestAdv2OrderBySubjectOnABoundedPausedPoolWithFailures attacks WithOrderBySubject on a
// bounded non-blocking pool that is paused for longer than the ack wait, with handlers that
// panic(nil), call runtime.Goexit or return RetryAfter on a first delivery. Keyed: the key's
// next task "still runs" after a Goexit; WithOrderBySubject: "the messages of one subject one
// at a time, in the order this Consume call received them"; Consume: "a message is never
// refused once pulled". So no subject wedges, first deliveries keep their order, and with
// MaxDeliver 2 no message runs out of deliveries.
func TestAdv2OrderBySubjectOnABoundedPausedPoolWithFailures(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 400 * time.Millisecond, MaxDeliver: 2})
	maxed := adv2Advisories(t, q, "MAX_DELIVERIES")
	const subjects, each = 4, 40
	advPublishSubjects(t, q.js, subjects, each)
	l := newLedger(subjects * each)
	order := newAdvOrder(subjects)
	p := newPool(t, 3, append(crewPanicsSilenced(), crew.WithQueueSize(1), crew.WithNonBlocking())...)
	var handled atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			order.enter(t, i, advDelivered(msg))
			defer order.exit(i)
			handled.Add(1)
			if l.seen[i].Add(1) == 1 {
				switch i % 9 {
				case 1:
					panic(nil)
				case 4:
					runtime.Goexit()
				case 7:
					return crewjs.RetryAfter(10*time.Millisecond, errors.New("later"))
				}
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithOrderBySubject(), crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	waitFor(t, 5*time.Second, "a third handled", func() bool { return handled.Load() >= subjects*each/3 })
	p.Pause()
	time.Sleep(time.Second)
	p.Resume()
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
	adv2NoAdvisory(t, maxed, "a message ran out of deliveries")
}

// TestAdv2ResizeToOneAndBackSettlesEveryMessageOnce attacks the settling promise while the
// pool shrinks to one worker and grows again, with handlers that fail, panic or fail for good.
// WithMaxInFlight: the limit is "read before each pull, so it follows crew.Pool.Resize";
// Consume: "h runs on p's workers, so p's limit bounds the handlers running at once" and
// "Each message is settled exactly once"; WithDeadLetter: a message "whose delivery count
// has reached the consumer's MaxDeliver and whose handler failed" is published to the
// dead-letter subject, then terminated. So each message is acknowledged once, or, when it
// fails on both its deliveries, dead-lettered once; none is lost.
func TestAdv2ResizeToOneAndBackSettlesEveryMessageOnce(t *testing.T) {
	const maxDeliver = 2
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: maxDeliver})
	dead := deadLetters(t, q)
	const n = 300
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4, crewPanicsSilenced()...)
	var running highWater
	var handled atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			handled.Add(1)
			i := l.id(t, msg)
			first := l.seen[i].Add(1) == 1
			time.Sleep(500 * time.Microsecond)
			switch {
			case i%10 == 0:
				return errors.New("always fails")
			case i%10 == 3 && first:
				panic("first attempt panics")
			case i%10 == 5 && first:
				runtime.Goexit()
			case i%10 == 7 && first:
				return crewjs.RetryAfter(0, errors.New("later"))
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithDeadLetter(q.js, "dead.jobs"), crewjs.WithBackoff(func(int) time.Duration { return 0 }),
			crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	})
	phase := func(limit int, until int64) {
		t.Helper()
		p.Resize(limit)
		// Tasks the pool started before a shrinking Resize may still run, or not yet have
		// entered their handler: wait for the pool's own count, then the limit holds.
		waitFor(t, 5*time.Second, fmt.Sprintf("running within the new limit %d", limit), func() bool {
			return p.Stats().Running <= limit && running.now.Load() <= int64(limit)
		})
		running.max.Store(running.now.Load())
		waitFor(t, 10*time.Second, fmt.Sprintf("%d handled", until), func() bool { return handled.Load() >= until })
		if m := running.max.Load(); m > int64(limit) {
			t.Errorf("%d handlers ran at once under a limit of %d", m, limit)
		}
	}
	phase(4, 60)
	phase(1, 160)
	phase(6, 200)
	waitFor(t, 10*time.Second, "every message settled", func() bool {
		ci := info(t, q.cons)
		return ci.NumPending == 0 && ci.NumAckPending == 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
	batch, err := dead.Fetch(n, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	deadCount := make([]int, n)
	for m := range batch.Messages() {
		i := l.id(t, m)
		if i >= 0 {
			deadCount[i]++
		}
		_ = m.Ack()
	}
	for i := range n {
		s, d := l.seen[i].Load(), l.done[i].Load()
		var want [3]int32 // handled, done, dead-lettered
		switch i % 10 {
		case 0:
			want = [3]int32{maxDeliver, 0, 1}
		case 3, 5, 7:
			want = [3]int32{2, 1, 0}
		default:
			want = [3]int32{1, 1, 0}
		}
		if got := [3]int32{s, d, int32(deadCount[i])}; got != want {
			t.Errorf("message %d: handled %d, done %d, dead-lettered %d times; want %v", i, s, d, deadCount[i], want)
		}
	}
}

// TestAdv2StopNowOnARateLimitedPoolReleasesTheBacklog attacks StopNow and a Shutdown that
// gives up on a rate-limited pool whose queue holds messages waiting for tokens. crew's
// StopNow takes "every accepted task that has not started out of the queue"; Shutdown's
// plain tasks "still run in the background". Consume: it "gives up, shuts down as above and
// returns the error" when p is stopped, negatively acknowledging "without delay, each
// message whose handler had not started, for another process to take at once". No handler
// starts after Consume returned, and another process gets every message at once; with
// MaxDeliver 2 none runs out of deliveries.
func TestAdv2StopNowOnARateLimitedPoolReleasesTheBacklog(t *testing.T) {
	for _, how := range []string{"StopNow", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute, MaxDeliver: 2})
			maxed := adv2Advisories(t, q, "MAX_DELIVERIES")
			const n = 30
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 3, crew.WithRateLimit(10, 1))
			var handled, afterReturn atomic.Int64
			var returned atomic.Bool
			h := adv2Handled(t, l, 0)
			_, done := consumeInBackground(t, func(ctx context.Context) error {
				err := crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
					if returned.Load() {
						afterReturn.Add(1)
					}
					handled.Add(1)
					return h(ctx, msg)
				}, crewjs.WithPrefetch(6), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
				returned.Store(true)
				if !errors.Is(err, crew.ErrStopped) {
					t.Errorf("Consume returned %v, want crew.ErrStopped", err)
				}
				return nil
			})
			waitFor(t, 5*time.Second, "two handled, the rest held", func() bool {
				return handled.Load() >= 2 && p.Stats().Waiting >= 3
			})
			if how == "StopNow" {
				p.StopNow()
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				_ = p.Shutdown(ctx)
				cancel()
			}
			advWaitDone(t, done, 2*time.Second, "after "+how)
			released := time.Now()
			advDrainRest(t, q, l, 5*time.Second)
			if d := time.Since(released); d > 2*time.Second {
				t.Errorf("the rest took %v to reach another process, want at once", d.Round(time.Millisecond))
			}
			if a := afterReturn.Load(); a > 0 {
				t.Errorf("%d handlers started after Consume returned", a)
			}
			adv2Once(t, l)
			adv2NoAdvisory(t, maxed, "a message ran out of deliveries")
		})
	}
}

// TestAdv2DeadLetterCarriesEveryHeaderValue attacks WithDeadLetter's headers with a message
// whose headers repeat, and that carries Crew- headers of its own, on its only delivery, under
// WithOrderBySubject with a handler that panics with nil. WithDeadLetter: "The dead letter
// carries the message's payload and headers ... and these: Crew-Error: the handler's error
// text. Crew-Delivery-Count: the delivery that failed"; Handler: "A panic or runtime.Goexit
// counts as an error".
func TestAdv2DeadLetterCarriesEveryHeaderValue(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 1})
	dead := deadLetters(t, q)
	m := &nats.Msg{Subject: subject, Data: []byte("payload"), Header: nats.Header{}}
	m.Header.Add("Tag", "a")
	m.Header.Add("Tag", "b")
	m.Header.Set("Crew-Error", "forged")
	m.Header.Set("Crew-Delivery-Count", "99")
	m.Header.Set("Crew-Stream", "ELSEWHERE")
	if _, err := q.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, 2, crewPanicsSilenced()...)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
			panic(nil)
		}, crewjs.WithDeadLetter(q.js, "dead.jobs"), crewjs.WithOrderBySubject(), failOnError(t))
	})
	batch, err := dead.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for dm := range batch.Messages() {
		got++
		h := dm.Headers()
		if v := h.Values("Tag"); len(v) != 2 || v[0] != "a" || v[1] != "b" {
			t.Errorf("dead letter's Tag values %q, want [a b]", v)
		}
		if v := h.Values("Crew-Error"); len(v) != 1 || v[0] == "forged" {
			t.Errorf("dead letter's Crew-Error %q, want the handler's error alone", v)
		}
		if v := h.Values("Crew-Delivery-Count"); len(v) != 1 || v[0] != "1" {
			t.Errorf("dead letter's Crew-Delivery-Count %q, want [1]", v)
		}
		if v := h.Values("Crew-Stream"); len(v) != 1 || v[0] != "JOBS" {
			t.Errorf("dead letter's Crew-Stream %q, want [JOBS]", v)
		}
		if string(dm.Data()) != "payload" {
			t.Errorf("dead letter's payload %q", dm.Data())
		}
		_ = dm.Ack()
	}
	if got != 1 {
		t.Fatalf("%d dead letters, want 1", got)
	}
	waitFor(t, 5*time.Second, "the message terminated", func() bool { return info(t, q.cons).NumAckPending == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
}

// adv2Pulls is a consumer that records the batch size of each pull, tagged with the phase it
// was sent in.
type adv2Pulls struct {
	jetstream.Consumer
	phase atomic.Int32
	mu    sync.Mutex
	most  map[int32]int // the largest pull of each phase
}

func (c *adv2Pulls) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	c.mu.Lock()
	ph := c.phase.Load()
	c.most[ph] = max(c.most[ph], n)
	c.mu.Unlock()
	return c.Consumer.Fetch(n, opts...)
}

func (c *adv2Pulls) largest(phase int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most[phase]
}

// TestAdv2DefaultPrefetchFollowsHandlersThatChangeSpeed attacks the self-sizing prefetch
// with handlers that suddenly slow down, then speed up again. WithPrefetch: by default "as
// many messages as the handlers settled in 100 ms, going by the rate over the last 100 ms or
// more, at least the in-flight limit and at most 500"; "Fast handlers then get pulls of a
// hundred messages and more ... while slow ones ... hold no more than twice the limit". Fast
// handlers get large pulls; once they slow to 10ms each on a pool of 4 (40 messages per
// 100ms), the backlog pulled before is worked off with in-progress signals past the ack wait
// (none is handled twice), and the pulls shrink to about the limit plus 40; fast again, they grow.
func TestAdv2DefaultPrefetchFollowsHandlersThatChangeSpeed(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 500 * time.Millisecond})
	const fast, slow, again = 800, 100, 2000
	const n = fast + slow + again
	publish(t, q.js, fast)
	l := newLedger(n)
	p := newPool(t, 4)
	cons := &adv2Pulls{Consumer: q.cons, most: map[int32]int{}}
	var work atomic.Int64 // the handlers' work, in nanoseconds
	var handled atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			if d := time.Duration(work.Load()); d > 0 {
				time.Sleep(d)
			}
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithAsyncAck(), failOnError(t))
	})
	waitFor(t, 10*time.Second, "half the fast ones handled", func() bool { return handled.Load() >= fast/2 })
	work.Store(int64(10 * time.Millisecond)) // suddenly slow, with a backlog pulled at the fast rate
	waitFor(t, 20*time.Second, "the fast ones done", func() bool { return handled.Load() >= fast })
	cons.phase.Store(1)
	publishPayloads(t, q.js, slow, func(i int) []byte { return []byte(fmt.Sprint(fast + i)) })
	waitFor(t, 10*time.Second, "the slow ones done", func() bool { return handled.Load() >= fast+slow })
	// The next messages wait on the server while the pool is paused, so that the handlers,
	// fast again, are not held back by the publisher.
	p.Pause()
	publishPayloads(t, q.js, again, func(i int) []byte { return []byte(fmt.Sprint(fast + slow + i)) })
	work.Store(0)
	cons.phase.Store(2)
	p.Resume()
	deadline := time.Now().Add(20 * time.Second)
	for !l.allDone() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !l.allDone() {
		t.Fatalf("not every message done within 20s: %d handled", handled.Load())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("largest pulls: fast %d, slow %d, fast again %d", cons.largest(0), cons.largest(1), cons.largest(2))
	if m := cons.largest(0); m < 50 {
		t.Errorf("largest pull of fast handlers asked for %d messages, want 50 or more", m)
	}
	for ph := range int32(3) {
		if m := cons.largest(ph); m > 4+500 {
			t.Errorf("phase %d: a pull asked for %d messages, more than the limit 4 plus the largest prefetch 500", ph, m)
		}
	}
	if m := cons.largest(1); m > 4+2*40+4 {
		t.Errorf("largest pull once the handlers took 10ms asked for %d messages, want about the limit 4 plus 40", m)
	}
	if m := cons.largest(2); m < 50 {
		t.Errorf("largest pull once the handlers were fast again asked for %d messages, want 50 or more", m)
	}
	adv2Once(t, l)
	checkDrained(t, q.st, q.cons)
}

// adv2Counting is a consumer that counts the messages its pulls hand to Consume.
type adv2Counting struct {
	jetstream.Consumer
	received atomic.Int64
}

type adv2CountingBatch struct {
	b    jetstream.MessageBatch
	msgs chan jetstream.Msg
}

func (b *adv2CountingBatch) Messages() <-chan jetstream.Msg { return b.msgs }
func (b *adv2CountingBatch) Error() error                   { return b.b.Error() }

func (c *adv2Counting) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	b, err := c.Consumer.Fetch(n, opts...)
	if err != nil {
		return nil, err
	}
	cb := &adv2CountingBatch{b: b, msgs: make(chan jetstream.Msg, n)}
	go func() {
		defer close(cb.msgs)
		for m := range b.Messages() {
			c.received.Add(1)
			cb.msgs <- m
		}
	}()
	return cb, nil
}

// TestAdv2ShortPullsLoseNoMessageOnTheirWay attacks the pulls themselves: bursts of
// messages published while Consume's pulls, of 100ms each, wait on an empty stream.
// Consume: "a message is never refused once pulled, so the consumer's MaxDeliver counts the
// times a handler ran"; the doc: "it asks the server for no more messages than it has free
// slots" and each message "is settled exactly once". Every message the server sent to a
// pull must reach a handler: with MaxDeliver 1, every one is handled exactly once.
func TestAdv2ShortPullsLoseNoMessageOnTheirWay(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 300 * time.Millisecond, MaxDeliver: 1})
	const bursts, each = 6, 500
	const n = bursts * each
	l := newLedger(n)
	p := newPool(t, 4)
	cons := &adv2Counting{Consumer: q.cons}
	var handled atomic.Int64
	h := adv2Handled(t, l, 0)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			handled.Add(1)
			return h(ctx, msg)
		}, crewjs.WithAsyncAck(), crewjs.WithPullExpiry(20*time.Millisecond), failOnError(t))
	})
	for b := range bursts {
		publishPayloads(t, q.js, each, func(i int) []byte { return []byte(fmt.Sprint(b*each + i)) })
		// Most of the burst handled, then a pause that ends at another point of the pulls'
		// expiry each time.
		for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if handled.Load() >= int64((b+1)*each-each/10) {
				break
			}
		}
		time.Sleep(time.Duration(30+b*13) * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); !l.allDone() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	ci := info(t, q.cons)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := cons.received.Load(); got != int64(ci.Delivered.Consumer) {
		t.Errorf("the server delivered %d messages to Consume's pulls; the pulls handed %d to Consume", ci.Delivered.Consumer, got)
	}
	adv2Once(t, l)
}

// TestAdv2StoppedMiddlePoolEndsConsumeOnItsSubPool attacks Consume on a sub-pool of a
// sub-pool whose middle pool is stopped (StopNow, or a Shutdown whose context has already
// ended), with and without WithOrderBySubject. crew's StopNow "includes the tasks of the
// pool's sub-pools ... at any depth"; Stop "stops its sub-pools". Consume: when p is stopped
// it "gives up, shuts down as above and returns the error, wrapped", releasing "each message
// whose handler had not started, for another process to take at once". The grandparent
// keeps working; Consume returns crew.ErrStopped, no handler starts after it returned, and
// another process gets every message at once.
func TestAdv2StoppedMiddlePoolEndsConsumeOnItsSubPool(t *testing.T) {
	for _, how := range []string{"StopNow", "Shutdown"} {
		for _, ordered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ordered=%v", how, ordered), func(t *testing.T) {
				q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute, MaxDeliver: 2})
				maxed := adv2Advisories(t, q, "MAX_DELIVERIES")
				const n = 200
				publish(t, q.js, n)
				l := newLedger(n)
				top := newPool(t, 4)
				middle := top.Sub(3, crew.WithPriority(1))
				leaf := middle.Sub(2)
				var handled, afterReturn atomic.Int64
				var returned atomic.Bool
				opts := []crewjs.Option{crewjs.WithPullExpiry(100 * time.Millisecond), failOnError(t)}
				if ordered {
					opts = append(opts, crewjs.WithOrderBySubject())
				}
				h := adv2Handled(t, l, time.Millisecond)
				_, done := consumeInBackground(t, func(ctx context.Context) error {
					err := crewjs.Consume(ctx, q.cons, leaf, func(ctx context.Context, msg jetstream.Msg) error {
						if returned.Load() {
							afterReturn.Add(1)
						}
						handled.Add(1)
						return h(ctx, msg)
					}, opts...)
					returned.Store(true)
					if !errors.Is(err, crew.ErrStopped) {
						t.Errorf("Consume returned %v, want crew.ErrStopped", err)
					}
					return nil
				})
				waitFor(t, 5*time.Second, "some handled", func() bool { return handled.Load() >= 30 })
				if how == "StopNow" {
					middle.StopNow()
				} else {
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					_ = middle.Shutdown(ctx)
				}
				advWaitDone(t, done, 2*time.Second, "after the middle pool's "+how)
				if a := afterReturn.Load(); a > 0 {
					t.Errorf("%d handlers started after Consume returned", a)
				}
				ran := make(chan struct{})
				if err := top.Submit(func() { close(ran) }); err != nil {
					t.Fatalf("the top pool refused a task after its sub-pool stopped: %v", err)
				}
				advWaitDone(t, ran, 2*time.Second, "the top pool's task")
				released := time.Now()
				advDrainRest(t, q, l, 5*time.Second)
				if d := time.Since(released); d > 2*time.Second {
					t.Errorf("the rest took %v to reach another process, want at once", d.Round(time.Millisecond))
				}
				adv2Once(t, l)
				adv2NoAdvisory(t, maxed, "a message ran out of deliveries")
			})
		}
	}
}

// TestAdv2HandlerPausesItsPoolThenTheContextEnds attacks a handler that pauses the pool it
// runs on, after which Consume's context ends. crew's Pause is "safe to call from a task";
// Consume: when ctx ends, "no handler starts any more", it waits for the pulls under way,
// releases "each message whose handler had not started, for another process to take at
// once", and "returns nil if they all did" settle. Consume returns within its pull expiry
// although the pool stays paused; after the Resume no handler of it starts.
func TestAdv2HandlerPausesItsPoolThenTheContextEnds(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	const n = 300
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 3)
	var handled, late atomic.Int64
	var ended atomic.Bool
	pausedCh := make(chan struct{})
	h := adv2Handled(t, l, 0)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			if ended.Load() {
				late.Add(1)
			}
			if handled.Add(1) == 40 {
				p.Pause()
				close(pausedCh)
			}
			return h(ctx, msg)
		}, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	advWaitDone(t, pausedCh, 5*time.Second, "a handler pausing the pool")
	if err := p.PauseAndWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended.Store(true)
	begin := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Consume took %v to return on its paused pool, want within its 100ms pull expiry", d.Round(time.Millisecond))
	}
	p.Resume()
	advDrainRest(t, q, l, 5*time.Second)
	if got := late.Load(); got > 0 {
		t.Errorf("%d handlers started after the context ended", got)
	}
	l.check(t)
}
