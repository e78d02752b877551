package jetstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestConsumeHoldsAtMostTheLimitPlusThePrefetch proves the flow-control promise of Consume,
// WithPrefetch and WithMaxInFlight: with every handler blocked, the server counts exactly the
// in-flight limit plus the prefetch of messages delivered and unacknowledged, never more, and
// no more handlers run than the pool allows.
func TestConsumeHoldsAtMostTheLimitPlusThePrefetch(t *testing.T) {
	for _, tc := range []struct {
		name            string
		poolLimit, want int // want: the in-flight limit plus the prefetch
		opts            []crewjs.Option
	}{
		{"default prefetch", 6, 12, nil}, // as many as the limit
		{"WithPrefetch", 4, 6, []crewjs.Option{crewjs.WithPrefetch(2)}},
		{"no prefetch", 3, 3, []crewjs.Option{crewjs.WithPrefetch(0)}},
		{"WithMaxInFlight", 8, 3, []crewjs.Option{crewjs.WithMaxInFlight(2), crewjs.WithPrefetch(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{})
			const n = 40
			publish(t, q.js, n)

			p := newPool(t, tc.poolLimit)
			release, open := newGate(t)
			var started atomic.Int64
			var running highWater
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
					running.enter()
					defer running.exit()
					started.Add(1)
					<-release
					return nil
				}, append(tc.opts, failOnError(t))...)
			})

			// The prefetched messages wait for a worker only while the pool is full.
			wantStarted := int64(min(tc.poolLimit, tc.want))
			waitFor(t, 10*time.Second, "slots filled", func() bool {
				return started.Load() == wantStarted && info(t, q.cons).NumAckPending == tc.want
			})
			// Blocked, the run holds exactly its slots; the count must not creep above them.
			for range 20 {
				if got := info(t, q.cons).NumAckPending; got != tc.want {
					t.Fatalf("%d messages unacknowledged, want %d", got, tc.want)
				}
			}
			if got := started.Load(); got != wantStarted {
				t.Errorf("%d handlers started, want %d", got, wantStarted)
			}
			open()
			waitFor(t, 30*time.Second, "every message handled", func() bool { return started.Load() == n })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if m := running.max.Load(); m > int64(tc.poolLimit) {
				t.Errorf("%d handlers ran at once on a pool of %d", m, tc.poolLimit)
			}
			checkDrained(t, q.st, q.cons)
		})
	}
}

// TestConsumeDefaultPrefetchFollowsTheHandlers proves what WithPrefetch promises of the
// default: fast handlers get a prefetch well beyond the in-flight limit, and never more than
// 500 messages; handlers slower than 100 ms hold no more than the limit beyond it.
func TestConsumeDefaultPrefetchFollowsTheHandlers(t *testing.T) {
	const limit = 4
	for _, tc := range []struct {
		name     string
		n        int
		work     time.Duration
		min, max int64 // of the most messages held at once
	}{
		{"fast", 5000, 0, 3 * limit, limit + 500},
		{"slow", 16, 500 * time.Millisecond, 0, 2 * limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{})
			publish(t, q.js, tc.n)
			p := newPool(t, limit)
			var handled atomic.Int64
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
					time.Sleep(tc.work)
					handled.Add(1)
					return nil
				}, failOnError(t))
			})
			// The server's count of unacknowledged messages is what the run holds.
			var most int64
			deadline := time.Now().Add(time.Minute)
			for handled.Load() < int64(tc.n) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d messages handled in a minute", handled.Load(), tc.n)
				}
				most = max(most, int64(info(t, q.cons).NumAckPending))
				time.Sleep(5 * time.Millisecond)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if most < tc.min || most > tc.max {
				t.Errorf("at most %d messages held at once, want %d to %d", most, tc.min, tc.max)
			}
			checkDrained(t, q.st, q.cons)
		})
	}
}

// TestConsumeKeepsALongHandlerFromBeingRedelivered proves the in-progress promise: a handler
// that runs three times the ack wait gets in-progress signals every half ack wait, so the
// server never redelivers its message, and the signals stop once the message is settled.
func TestConsumeKeepsALongHandlerFromBeingRedelivered(t *testing.T) {
	const ackWait = time.Second
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: ackWait})
	publish(t, q.js, 1)

	var deliveries, signals atomic.Int64
	started := make(chan struct{}, 1)
	returned := make(chan int64, 1)
	p := newPool(t, 2)
	obs := &observedConsumer{Consumer: q.cons, onProgress: func() { signals.Add(1) }}
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, obs, p, func(ctx context.Context, msg jetstream.Msg) error {
			if deliveries.Add(1) == 1 {
				started <- struct{}{}
			}
			if md, err := msg.Metadata(); err != nil || md.NumDelivered != 1 {
				t.Errorf("delivered %d times (%v), want once", md.NumDelivered, err)
			}
			time.Sleep(3 * ackWait) // the work
			returned <- signals.Load()
			return nil
		}, failOnError(t))
	})
	// A second process on the same consumer would get the message if it were redelivered.
	<-started
	other := startProcess(t, q.s, 2, func(context.Context, jetstream.Msg) error { return nil }, failOnError(t))

	var atReturn int64
	select {
	case atReturn = <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("handler did not return")
	}
	waitFor(t, 10*time.Second, "message acknowledged", func() bool { return info(t, q.cons).NumAckPending == 0 })
	// Signals stop with the handler: none in the next two intervals.
	time.Sleep(ackWait)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := other.stop(); err != nil {
		t.Fatal(err)
	}
	if got := deliveries.Load() + other.handled.Load(); got != 1 {
		t.Errorf("message delivered %d times, want once", got)
	}
	// The first signal is half an ack wait after the message arrived, then one every half
	// ack wait: five during three ack waits, less any that a busy machine delays.
	if atReturn < 3 {
		t.Errorf("%d in-progress signals while the handler ran 3 ack waits, want at least 3", atReturn)
	}
	if got := signals.Load(); got > atReturn+1 {
		t.Errorf("%d in-progress signals after the handler returned, want none (but the one under way)", got-atReturn)
	}
	checkDrained(t, q.st, q.cons)
}

// TestConsumeStopsAFailingMessageAtMaxDeliverWithBackoff proves the promise of WithBackoff and
// of Handler's error results: a message whose handler always fails is negatively
// acknowledged with delay(attempt), so its deliveries are spaced by the backoff rather than
// looping hot, and the server stops at the consumer's MaxDeliver.
func TestConsumeStopsAFailingMessageAtMaxDeliverWithBackoff(t *testing.T) {
	const maxDeliver = 4
	backoff := func(attempt int) time.Duration { return time.Duration(attempt) * 150 * time.Millisecond }
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: maxDeliver})
	advisories, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, q.js, 1)

	var mu sync.Mutex
	var times []time.Time
	var attempts []uint64
	p := newPool(t, 2)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			md, err := msg.Metadata()
			if err != nil {
				t.Error(err)
				return nil
			}
			mu.Lock()
			times = append(times, time.Now())
			attempts = append(attempts, md.NumDelivered)
			mu.Unlock()
			return errors.New("always fails")
		}, crewjs.WithBackoff(backoff), failOnError(t))
	})
	if _, err := advisories.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no max-deliveries advisory: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(times) != maxDeliver {
		t.Fatalf("delivered %d times, want MaxDeliver = %d", len(times), maxDeliver)
	}
	for i, a := range attempts {
		if a != uint64(i+1) {
			t.Errorf("delivery %d has NumDelivered %d", i+1, a)
		}
	}
	for i := 1; i < len(times); i++ {
		gap, want := times[i].Sub(times[i-1]), backoff(i)
		if gap < want || gap > want+2*time.Second {
			t.Errorf("delivery %d came %v after delivery %d, want the backoff %v (plus a round trip)", i+1, gap, i, want)
		}
	}
}

// TestConsumeTerminatesMalformedPayloads proves Permanent's promise and shows the pattern for
// payloads that do not decode: the handler returns Permanent, and the message is terminated
// once, with the error as the reason, never redelivered; the good messages are acknowledged.
func TestConsumeTerminatesMalformedPayloads(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 5})
	terms, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	const n = 20 // odd ids are malformed
	publishPayloads(t, q.js, n, func(i int) []byte {
		if i%2 == 1 {
			return []byte(fmt.Sprintf("{not json %d", i))
		}
		return []byte(fmt.Sprintf(`{"id": %d}`, i))
	})

	type order struct {
		ID int `json:"id"`
	}
	var mu sync.Mutex
	good := map[int]int{}
	var bad atomic.Int64
	p := newPool(t, 4)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			var o order
			if err := json.Unmarshal(msg.Data(), &o); err != nil {
				bad.Add(1)
				return crewjs.Permanent(fmt.Errorf("malformed order: %w", err))
			}
			mu.Lock()
			good[o.ID]++
			mu.Unlock()
			return nil
		}, crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	for i := 0; i < n/2; i++ {
		m, err := terms.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("%d termination advisories, want %d: %v", i, n/2, err)
		}
		if !strings.Contains(string(m.Data), "malformed order") {
			t.Errorf("termination advisory without the handler's reason: %s", m.Data)
		}
	}
	waitFor(t, 30*time.Second, "stream drained", func() bool {
		ci := info(t, q.cons)
		return ci.NumAckPending == 0 && ci.NumPending == 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := bad.Load(); got != n/2 {
		t.Errorf("malformed payloads handled %d times, want %d: each once, never retried", got, n/2)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i += 2 {
		if good[i] != 1 {
			t.Errorf("order %d handled %d times, want once", i, good[i])
		}
	}
	checkDrained(t, q.st, q.cons)
}

// TestConsumeRetriesAPanickedMessageAndGivesThePanicToThePool proves Handler's panic promise:
// the message is negatively acknowledged and redelivered, and the panic reaches the pool's
// panic handler with the frame that panicked.
func TestConsumeRetriesAPanickedMessageAndGivesThePanicToThePool(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	publish(t, q.js, 1)

	panics := make(chan string, 2)
	p := newPool(t, 2, crew.WithPanicHandler(func(v any, stack []byte) {
		panics <- fmt.Sprintf("%v\n%s", v, stack)
	}))
	var calls atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			if calls.Add(1) == 1 {
				panicInHandler()
			}
			return nil
		}, crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	waitFor(t, 30*time.Second, "message redelivered and acknowledged", func() bool {
		return calls.Load() == 2 && info(t, q.cons).NumAckPending == 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-panics:
		if !strings.HasPrefix(v, "handler panic") || !strings.Contains(v, "panicInHandler") {
			t.Errorf("panic handler got %q, want the value and the panicking frame", v)
		}
	default:
		t.Error("the pool's panic handler never saw the panic")
	}
	checkDrained(t, q.st, q.cons)
}

func panicInHandler() { panic("handler panic") }

// TestConsumeFreesTheSlotOfAHandlerThatCallsGoexit proves that runtime.Goexit in a handler
// counts as a failure and frees its slot: with room for one message at a time, every message
// is still handled after handlers called Goexit.
func TestConsumeFreesTheSlotOfAHandlerThatCallsGoexit(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const n = 10
	publish(t, q.js, n)
	l := newLedger(n)
	var goexits atomic.Int64
	p := newPool(t, 1)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			if l.seen[i].Add(1) == 1 && i%3 == 0 {
				goexits.Add(1)
				runtime.Goexit()
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPrefetch(0), crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	waitFor(t, 30*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := goexits.Load(); got != 4 {
		t.Errorf("%d handlers called Goexit, want 4", got)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestConsumeLeavesAMessageAsTheHandlerSettledIt proves Handler's promise that a message the
// handler settled itself stays as the handler left it: terminated by the handler, it is not
// acknowledged or retried by what the handler returns, and no error is reported.
func TestConsumeLeavesAMessageAsTheHandlerSettledIt(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	terms, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, q.js, 2)
	var calls atomic.Int64
	p := newPool(t, 2)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			calls.Add(1)
			if err := msg.TermWithReason("settled by the handler"); err != nil {
				return err
			}
			if string(msg.Data()) == "0" {
				return nil // Consume would acknowledge it
			}
			return errors.New("Consume would retry it")
		}, crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	for range 2 {
		m, err := terms.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(m.Data), "settled by the handler") {
			t.Errorf("termination advisory with another reason: %s", m.Data)
		}
	}
	waitFor(t, 10*time.Second, "both settled", func() bool { return info(t, q.cons).NumAckPending == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("handler called %d times, want 2: a message it terminated was retried", got)
	}
	checkDrained(t, q.st, q.cons)
}

// TestConsumeLetsRunningHandlersFinishOnShutdown proves Consume's shutdown promise: when ctx
// ends, no handler starts, the messages waiting for a worker are released so that another
// process gets them at once, the running handler keeps a live context and finishes, its
// message is acknowledged, and only then does Consume return nil.
func TestConsumeLetsRunningHandlersFinishOnShutdown(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const n = 5
	publish(t, q.js, n)

	p := newPool(t, 1)
	started := make(chan context.Context, n)
	release, open := newGate(t)
	stop, done := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			started <- ctx
			<-release
			return ctx.Err()
		}, crewjs.WithPrefetch(2), failOnError(t))
	})
	hctx := <-started
	waitFor(t, 10*time.Second, "one running, two queued", func() bool { return info(t, q.cons).NumAckPending == 3 })

	result := make(chan error, 1)
	go func() { result <- stop() }()
	// Released, the two queued messages go to another process at once, not after the ack
	// wait; so do the two never pulled.
	var redelivered atomic.Int64
	other := startProcess(t, q.s, 2, func(ctx context.Context, msg jetstream.Msg) error {
		if md, err := msg.Metadata(); err == nil && md.NumDelivered == 2 {
			redelivered.Add(1)
		}
		return nil
	}, failOnError(t))
	waitFor(t, 10*time.Second, "queued messages released to another process", func() bool {
		return other.handled.Load() == n-1 && redelivered.Load() == 2
	})
	select {
	case <-done:
		t.Fatal("Consume returned while a handler was running")
	default:
	}
	if hctx.Err() != nil {
		t.Fatal("the handler's context ended with Consume's context, before the shutdown timeout")
	}
	open()
	if err := <-result; err != nil {
		t.Fatalf("Consume returned %v, want nil", err)
	}
	if len(started) != 0 {
		t.Errorf("%d handlers started after the context ended", len(started))
	}
	if err := other.stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
}

// TestConsumeLeavesMessagesOfHandlersPastTheShutdownTimeoutForRedelivery proves the promise
// of WithShutdownTimeout and ErrShutdownTimeout: Consume returns at the timeout, cancels the
// handler's context, and neither acknowledges nor terminates the message, even when the
// handler returns nil afterwards, so the server redelivers it.
func TestConsumeLeavesMessagesOfHandlersPastTheShutdownTimeoutForRedelivery(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Second})
	publish(t, q.js, 1)

	p := newPool(t, 1)
	started := make(chan struct{})
	canceled := make(chan struct{})
	release, open := newGate(t)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			close(started)
			<-ctx.Done()
			close(canceled)
			<-release
			return nil
		}, crewjs.WithShutdownTimeout(100*time.Millisecond))
	})
	<-started
	begin := time.Now()
	err := stop()
	if !errors.Is(err, crewjs.ErrShutdownTimeout) {
		t.Fatalf("Consume returned %v, want ErrShutdownTimeout", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Consume returned %v after its context ended, want about the shutdown timeout", d)
	}
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not canceled at the shutdown timeout")
	}
	open()
	p.Wait()
	if ci := info(t, q.cons); ci.NumAckPending != 1 {
		t.Errorf("%d messages unacknowledged after the abandoned handler returned nil, want 1", ci.NumAckPending)
	}
	// The server redelivers it after its ack wait.
	expectRedelivery(t, q.cons, 30*time.Second)
	checkDrained(t, q.st, q.cons)
}

// TestConsumeReturnsNilAtOnceOnAnEndedContext proves that Consume pulls nothing when its
// context has already ended.
func TestConsumeReturnsNilAtOnceOnAnEndedContext(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	publish(t, q.js, 3)
	// The consumer counts new messages a moment after the stream stored them.
	waitFor(t, 10*time.Second, "messages pending", func() bool { return info(t, q.cons).NumPending == 3 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := crewjs.Consume(ctx, q.cons, newPool(t, 1), func(context.Context, jetstream.Msg) error {
		t.Error("handler ran on an ended context")
		return nil
	})
	if err != nil {
		t.Fatalf("Consume returned %v, want nil", err)
	}
	if ci := info(t, q.cons); ci.NumPending != 3 || ci.Delivered.Consumer != 0 {
		t.Errorf("%d pending, %d delivered; want 3 and 0", ci.NumPending, ci.Delivered.Consumer)
	}
}

// TestConsumeRejectsAConsumerWithoutExplicitAcks proves that Consume refuses, before pulling,
// a consumer whose messages it could not acknowledge one at a time.
func TestConsumeRejectsAConsumerWithoutExplicitAcks(t *testing.T) {
	_, js := connect(t, startServer(t))
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, policy := range map[string]jetstream.AckPolicy{"none": jetstream.AckNonePolicy, "all": jetstream.AckAllPolicy} {
		cons, err := st.CreateConsumer(context.Background(), jetstream.ConsumerConfig{Name: name, AckPolicy: policy})
		if err != nil {
			t.Fatal(err)
		}
		err = crewjs.Consume(context.Background(), cons, newPool(t, 1), func(context.Context, jetstream.Msg) error { return nil })
		if err == nil || !strings.HasPrefix(err.Error(), "crew/jetstream: ") || !strings.Contains(err.Error(), "explicit") {
			t.Errorf("%v: Consume returned %v, want an error asking for explicit acks", policy, err)
		}
	}
}

// TestConsumeReturnsErrStoppedWhenThePoolIsStopped proves that Consume gives up, with an error
// matching crew.ErrStopped, when its pool is stopped, and pulls nothing for it.
func TestConsumeReturnsErrStoppedWhenThePoolIsStopped(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	publish(t, q.js, 1)
	p := crew.New(1)
	p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
		t.Error("handler ran on a stopped pool")
		return nil
	}, failOnError(t))
	if !errors.Is(err, crew.ErrStopped) {
		t.Fatalf("Consume returned %v, want crew.ErrStopped", err)
	}
	if ci := info(t, q.cons); ci.Delivered.Consumer != 0 {
		t.Errorf("%d messages delivered for a stopped pool, want 0", ci.Delivered.Consumer)
	}
}

// TestConsumeReleasesWhatStopNowHandedBack proves that a pool stopped with StopNow while
// messages wait in its queue ends Consume with crew.ErrStopped, and that the messages whose
// tasks StopNow took out are released at once, not left until Consume's context ends.
func TestConsumeReleasesWhatStopNowHandedBack(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	naks, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, q.js, 4)
	p := crew.New(1)
	defer p.StopAndWait()
	started := make(chan struct{}, 4)
	release, open := newGate(t)
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			started <- struct{}{}
			<-release
			return nil
		}, crewjs.WithPrefetch(3), failOnError(t))
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want crew.ErrStopped", err)
		}
		return nil
	})
	<-started
	waitFor(t, 10*time.Second, "three queued", func() bool { return p.Stats().Waiting == 3 })
	if got := len(p.StopNow()); got != 3 {
		t.Fatalf("StopNow handed back %d tasks, want 3", got)
	}
	for i := range 3 {
		if _, err := naks.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("%d of the 3 messages StopNow took out released: %v", i, err)
		}
	}
	open()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Consume did not return after its pool was stopped")
	}
	if len(started) != 0 {
		t.Errorf("%d handlers ran after StopNow", len(started))
	}
}

// TestConsumeReturnsWhenTheConnectionCloses proves that a closed connection ends Consume
// with an error matching nats.ErrConnectionClosed.
func TestConsumeReturnsWhenTheConnectionCloses(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	p := newPool(t, 1)
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error { return nil },
			crewjs.WithPullExpiry(100*time.Millisecond))
		if !errors.Is(err, nats.ErrConnectionClosed) {
			t.Errorf("Consume returned %v, want nats.ErrConnectionClosed", err)
		}
		return nil
	})
	q.nc.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Consume did not return after the connection closed")
	}
}

// TestConsumeReturnsWhenTheConsumerIsDeleted proves that Consume gives up when its consumer
// is deleted, instead of retrying for ever.
func TestConsumeReturnsWhenTheConsumerIsDeleted(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	p := newPool(t, 1)
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error { return nil })
		if !errors.Is(err, jetstream.ErrConsumerDeleted) {
			t.Errorf("Consume returned %v, want jetstream.ErrConsumerDeleted", err)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "a pull waiting", func() bool { return info(t, q.cons).NumWaiting > 0 })
	if err := q.st.DeleteConsumer(context.Background(), "workers"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Consume did not return after the consumer was deleted")
	}
}

// TestConsumePanicsOnNilArguments proves the argument checks of Consume and the options.
func TestConsumePanicsOnNilArguments(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	p := newPool(t, 1)
	h := func(context.Context, jetstream.Msg) error { return nil }
	ctx := context.Background()
	var nilCtx context.Context
	for _, tc := range []struct {
		name, want string
		call       func()
	}{
		{"nil ctx", "crew/jetstream: Consume: ctx must not be nil", func() { _ = crewjs.Consume(nilCtx, q.cons, p, h) }},
		{"nil consumer", "crew/jetstream: Consume: cons must not be nil", func() { _ = crewjs.Consume(ctx, nil, p, h) }},
		{"nil pool", "crew/jetstream: Consume: p must not be nil", func() { _ = crewjs.Consume(ctx, q.cons, nil, h) }},
		{"nil handler", "crew/jetstream: Consume: h must not be nil", func() { _ = crewjs.Consume(ctx, q.cons, p, nil) }},
		{"WithMaxInFlight(0)", "crew/jetstream: WithMaxInFlight: n must be >= 1, got 0", func() { crewjs.WithMaxInFlight(0) }},
		{"WithPrefetch(-1)", "crew/jetstream: WithPrefetch: n must be >= 0, got -1", func() { crewjs.WithPrefetch(-1) }},
		{"WithBackoff(nil)", "crew/jetstream: WithBackoff: delay must not be nil", func() { crewjs.WithBackoff(nil) }},
		{"WithShutdownTimeout(-1)", "crew/jetstream: WithShutdownTimeout: d must be >= 0, got -1ns", func() { crewjs.WithShutdownTimeout(-1) }},
		{"WithInProgressInterval(-1)", "crew/jetstream: WithInProgressInterval: d must be >= 0, got -1ns", func() { crewjs.WithInProgressInterval(-1) }},
		{"WithPullExpiry(0)", "crew/jetstream: WithPullExpiry: d must be >= 10ms, got 0s", func() { crewjs.WithPullExpiry(0) }},
		{"WithDeadLetter(nil, subject)", "crew/jetstream: WithDeadLetter: js must not be nil", func() { crewjs.WithDeadLetter(nil, "dead") }},
		{"WithDeadLetter(js, \"\")", "crew/jetstream: WithDeadLetter: subject must not be empty", func() { crewjs.WithDeadLetter(q.js, "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if v := recover(); v != tc.want {
					t.Errorf("panic %v, want %q", v, tc.want)
				}
			}()
			tc.call()
		})
	}
}

// TestPermanentMarksAndWrapsItsError proves Permanent's and IsPermanent's promises.
func TestPermanentMarksAndWrapsItsError(t *testing.T) {
	base := errors.New("bad payload")
	err := crewjs.Permanent(base)
	if !errors.Is(err, base) || err.Error() != "bad payload" || !crewjs.IsPermanent(err) {
		t.Errorf("Permanent(base) = %v: Is %v, IsPermanent %v", err, errors.Is(err, base), crewjs.IsPermanent(err))
	}
	if wrapped := fmt.Errorf("order 7: %w", err); !crewjs.IsPermanent(wrapped) {
		t.Error("IsPermanent misses a wrapped Permanent error")
	}
	if crewjs.IsPermanent(base) || crewjs.IsPermanent(nil) {
		t.Error("IsPermanent reports an error Permanent did not make")
	}
	if crewjs.Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
}
