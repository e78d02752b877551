package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go/jetstream"
)

// TestConsumeReleasesEverythingAtOnceWhenItsContextEnds proves the shutdown promise of
// Consume under load: when ctx ends in the middle of a busy stream, every message Consume
// was given and did not settle through a handler is released at once, those its pulls had on
// the way included, so another process drains the rest of the stream within seconds, not
// after the minute-long ack wait. Rounds repeat the cancel at different moments of the flow.
func TestConsumeReleasesEverythingAtOnceWhenItsContextEnds(t *testing.T) {
	rounds := 10
	if testing.Short() {
		rounds = 5
	}
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	handler := func(handled *atomic.Int64) crewjs.Handler {
		return func(ctx context.Context, msg jetstream.Msg) error {
			handled.Add(1)
			time.Sleep(50 * time.Microsecond)
			return nil
		}
	}
	for round := range rounds {
		const n = 1000
		publish(t, q.js, n)
		var first, second atomic.Int64
		stop, _ := consumeInBackground(t, func(ctx context.Context) error {
			return crewjs.Consume(ctx, q.cons, newPool(t, 8), handler(&first), failOnError(t))
		})
		waitFor(t, 10*time.Second, "messages flowing", func() bool { return first.Load() > int64(10+round*53) })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		stop, _ = consumeInBackground(t, func(ctx context.Context) error {
			return crewjs.Consume(ctx, q.cons, newPool(t, 8), handler(&second), failOnError(t))
		})
		waitFor(t, 10*time.Second, fmt.Sprintf("round %d: the stream drained by another process", round), func() bool {
			si, err := q.st.Info(context.Background())
			return err == nil && si.State.Msgs == 0
		})
		t.Logf("round %d: %d handled, then %d by the other process within %v", round, first.Load(), second.Load(), time.Since(stopped).Round(time.Millisecond))
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := first.Load() + second.Load(); got != n {
			t.Errorf("round %d: %d messages handled, want %d", round, got, n)
		}
	}
}

// TestConsumeReturnsWhenItsStreamOrConsumerIsDeleted proves that Consume ends with an error
// matching jetstream.ErrConsumerDeleted when its consumer, or the consumer's stream, is
// deleted, both while a pull waits on the server and while every slot is taken by a handler
// (so that only an acknowledgement or the next pull meets the deletion).
func TestConsumeReturnsWhenItsStreamOrConsumerIsDeleted(t *testing.T) {
	for _, what := range []string{"consumer", "stream"} {
		for _, state := range []string{"pull waiting", "no pull waiting"} {
			t.Run(what+"/"+state, func(t *testing.T) {
				q := newQueue(t, jetstream.ConsumerConfig{})
				p := newPool(t, 1)
				started := make(chan struct{}, 1)
				release, open := newGate(t)
				var errs atomic.Int64
				_, done := consumeInBackground(t, func(ctx context.Context) error {
					err := crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
						started <- struct{}{}
						<-release
						return nil
					}, crewjs.WithPrefetch(0), crewjs.WithErrorHandler(func(error) { errs.Add(1) }))
					if !errors.Is(err, jetstream.ErrConsumerDeleted) {
						t.Errorf("Consume returned %v, want jetstream.ErrConsumerDeleted", err)
					}
					return nil
				})
				if state == "pull waiting" {
					waitFor(t, 10*time.Second, "a pull waiting", func() bool { return info(t, q.cons).NumWaiting > 0 })
				} else {
					publish(t, q.js, 1)
					<-started
				}
				var err error
				if what == "consumer" {
					err = q.st.DeleteConsumer(context.Background(), "workers")
				} else {
					err = q.js.DeleteStream(context.Background(), "JOBS")
				}
				if err != nil {
					t.Fatal(err)
				}
				open()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("Consume did not return within 30s of the deletion (%d errors reported)", errs.Load())
				}
			})
		}
	}
}

// TestConsumeFollowsTheConsumersRequestLimits proves that a consumer whose MaxRequestExpires
// is below the pull expiry, or whose MaxRequestBatch is below the free slots, is consumed
// within those limits: every message is handled, and no pull is refused.
func TestConsumeFollowsTheConsumersRequestLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   jetstream.ConsumerConfig
		opts []crewjs.Option
	}{
		{"MaxRequestExpires below the default expiry", jetstream.ConsumerConfig{MaxRequestExpires: 300 * time.Millisecond}, nil},
		{"MaxRequestExpires below WithPullExpiry", jetstream.ConsumerConfig{MaxRequestExpires: time.Second}, []crewjs.Option{crewjs.WithPullExpiry(5 * time.Second)}},
		{"MaxRequestBatch 1", jetstream.ConsumerConfig{MaxRequestBatch: 1}, nil},
		{"both", jetstream.ConsumerConfig{MaxRequestBatch: 2, MaxRequestExpires: 100 * time.Millisecond}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, tc.cc)
			const n = 50
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 8)
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
					i := l.id(t, msg)
					l.seen[i].Add(1)
					l.done[i].Add(1)
					return nil
				}, append(tc.opts, failOnError(t))...)
			})
			waitFor(t, 30*time.Second, "every message done", l.allDone)
			// Pulls go on while the stream is empty; none may be refused.
			time.Sleep(2 * tc.cc.MaxRequestExpires)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			l.check(t)
			checkDrained(t, q.st, q.cons)
		})
	}
}

// TestConsumeUpdatesTheRequestLimitsWhenTheConsumerChanges proves that a consumer whose
// request limits are lowered while Consume runs is consumed within the new limits.
func TestConsumeUpdatesTheRequestLimitsWhenTheConsumerChanges(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	p := newPool(t, 8)
	var handled atomic.Int64
	var reported atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
			handled.Add(1)
			return nil
		}, crewjs.WithPullExpiry(time.Second), crewjs.WithErrorHandler(func(error) { reported.Add(1) }))
	})
	waitFor(t, 10*time.Second, "a pull waiting", func() bool { return info(t, q.cons).NumWaiting > 0 })
	cfg := info(t, q.cons).Config
	cfg.MaxRequestExpires = 200 * time.Millisecond
	cfg.MaxRequestBatch = 1
	if _, err := q.st.UpdateConsumer(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	const n = 30
	publish(t, q.js, n)
	waitFor(t, 30*time.Second, "every message handled", func() bool { return handled.Load() == n })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
	t.Logf("%d errors reported while the limits changed", reported.Load())
}

// TestConsumeNeverBurnsADeliveryOnAFullPool proves that a message is never refused once
// pulled: on a pool of 8 with a queue of 1 that refuses rather than blocks, and a consumer
// with MaxDeliver 2, every message's handler runs exactly twice (failing the first time), so
// the deliveries count handler attempts only.
func TestConsumeNeverBurnsADeliveryOnAFullPool(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 2})
	maxed, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 8, crew.WithQueueSize(1), crew.WithNonBlocking())
	// Another submitter keeps the pool busy too, so Consume cannot count on the room it saw.
	noise, quiet := context.WithCancel(context.Background())
	defer quiet()
	go func() {
		for noise.Err() == nil {
			p.TrySubmit(func() { time.Sleep(200 * time.Microsecond) })
			time.Sleep(100 * time.Microsecond)
		}
	}()
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			time.Sleep(time.Millisecond)
			if l.seen[i].Add(1) == 1 {
				return errors.New("first attempt fails")
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	waitFor(t, time.Minute, "every message done", l.allDone)
	quiet()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for i := range l.seen {
		if s := l.seen[i].Load(); s != 2 {
			t.Errorf("message %d handled %d times, want 2", i, s)
		}
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
	if m, err := maxed.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("a message ran out of deliveries: %s", m.Data)
	}
}

// TestConsumeWaitsForRoomOnABoundedBlockingPool proves the same promise on a pool whose bounded
// queue blocks: no message is refused or retried, and every one is handled once.
func TestConsumeWaitsForRoomOnABoundedBlockingPool(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 1})
	const n = 300
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4, crew.WithQueueSize(1))
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPrefetch(8), failOnError(t))
	})
	waitFor(t, time.Minute, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
	if s := p.Stats(); s.Rejected != 0 {
		t.Errorf("the pool refused %d submits, want 0", s.Rejected)
	}
}

// TestConsumeReturnsWithinThePullExpiryOfItsContextsEnd proves DefaultPullExpiry's promise
// that it bounds Consume's wait, once its context has ended, for the pulls under way: on an
// empty stream, with a pull waiting on the server, Consume returns within the expiry (and
// a margin for a busy machine).
func TestConsumeReturnsWithinThePullExpiryOfItsContextsEnd(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	p := newPool(t, 2)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error { return nil }, failOnError(t))
	})
	waitFor(t, 10*time.Second, "a pull waiting", func() bool { return info(t, q.cons).NumWaiting > 0 })
	begin := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > crewjs.DefaultPullExpiry+time.Second {
		t.Errorf("Consume returned %v after its context ended, want within the pull expiry %v", d, crewjs.DefaultPullExpiry)
	}
}
