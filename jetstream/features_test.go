package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
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

// TestRetryAfterSetsTheRedeliveryDelay proves RetryAfter's promise: a handler that returns
// RetryAfter(d, err) gets its message redelivered d later, not after the backoff delay, and
// RetryAfter(0, nil) redelivers at once.
func TestRetryAfterSetsTheRedeliveryDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		err  error
	}{
		{"400ms with an error", 400 * time.Millisecond, errors.New("rate limited")},
		{"0 without an error", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{})
			publish(t, q.js, 1)
			times := make(chan time.Time, 2)
			p := newPool(t, 1)
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
					times <- time.Now()
					if md, err := msg.Metadata(); err == nil && md.NumDelivered == 1 {
						return crewjs.RetryAfter(tc.d, tc.err)
					}
					return nil
				}, crewjs.WithBackoff(func(int) time.Duration { return time.Minute }), failOnError(t))
			})
			first := <-times
			var second time.Time
			select {
			case second = <-times:
			case <-time.After(30 * time.Second):
				t.Fatal("not redelivered within 30s: the backoff, not RetryAfter, set the delay")
			}
			if gap := second.Sub(first); gap < tc.d || gap > tc.d+5*time.Second {
				t.Errorf("redelivered %v after the first delivery, want %v (plus a round trip)", gap, tc.d)
			}
			waitFor(t, 10*time.Second, "acknowledged", func() bool { return info(t, q.cons).NumAckPending == 0 })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			checkDrained(t, q.st, q.cons)
		})
	}
}

// TestRetryAfterWrapsItsError proves that RetryAfter's result matches its error and reads as
// it, that RetryAfter(d, nil) names the delay, and that Permanent wins over RetryAfter.
func TestRetryAfterWrapsItsError(t *testing.T) {
	base := errors.New("busy")
	if err := crewjs.RetryAfter(time.Second, base); !errors.Is(err, base) || err.Error() != "busy" || crewjs.IsPermanent(err) {
		t.Errorf("RetryAfter(1s, base) = %v: Is %v, IsPermanent %v", err, errors.Is(err, base), crewjs.IsPermanent(err))
	}
	if err := crewjs.RetryAfter(2*time.Second, nil); err == nil || err.Error() != "retry after 2s" {
		t.Errorf("RetryAfter(2s, nil) = %v, want an error reading \"retry after 2s\"", err)
	}
	if !crewjs.IsPermanent(crewjs.RetryAfter(time.Second, crewjs.Permanent(base))) {
		t.Error("RetryAfter of a Permanent error is not permanent")
	}
}

// TestRetryAfterDoesNotOutliveAPermanentError proves that a handler error that is both
// Permanent and RetryAfter terminates its message: it is never redelivered.
func TestRetryAfterDoesNotOutliveAPermanentError(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	terms, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, q.js, 1)
	var calls atomic.Int64
	p := newPool(t, 1)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			calls.Add(1)
			return crewjs.Permanent(crewjs.RetryAfter(0, errors.New("never")))
		}, failOnError(t))
	})
	if _, err := terms.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no termination advisory: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // a redelivery, if any, would come now
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler ran %d times, want once", got)
	}
	checkDrained(t, q.st, q.cons)
}

// deadLetters creates a stream storing the dead-letter subject "dead.jobs" and subscribes to
// it through a durable consumer.
func deadLetters(t *testing.T, q *queue) jetstream.Consumer {
	t.Helper()
	ctx := context.Background()
	st, err := q.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "inspect", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWithDeadLetterPublishesTheLastFailedDelivery proves WithDeadLetter's promise: on a
// message's last failed delivery (MaxDeliver reached, whether the handler returned an error,
// panicked or called runtime.Goexit) and on a Permanent error, the message's payload and
// headers go to the dead-letter subject with the error, the delivery count and the origin,
// and the message is then terminated; messages that succeed are not dead-lettered. It runs
// with and without WithOrderBySubject, whose Keyed runs the panicking handlers.
func TestWithDeadLetterPublishesTheLastFailedDelivery(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []crewjs.Option
	}{{"unordered", nil}, {"WithOrderBySubject", []crewjs.Option{crewjs.WithOrderBySubject()}}} {
		t.Run(tc.name, func(t *testing.T) { testDeadLetters(t, tc.opts) })
	}
}

func testDeadLetters(t *testing.T, opts []crewjs.Option) {
	const maxDeliver = 2
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: maxDeliver})
	dead := deadLetters(t, q)
	terms, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	// Payload i: 0 succeeds, 1 always fails, 2 is permanent, 3 panics, 4 calls Goexit, 5
	// panics with nil, 6 asks to be retried later with RetryAfter.
	const n = 7
	for i := range n {
		m := &nats.Msg{Subject: subject, Data: []byte(strconv.Itoa(i)), Header: nats.Header{}}
		m.Header.Set("Order", fmt.Sprint("order-", i))
		m.Header.Set("Nats-Expected-Stream", "JOBS")       // acted on at publish; not copied
		m.Header.Set("Nats-Msg-Id", fmt.Sprint("msg-", i)) // kept
		if _, err := q.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	p := newPool(t, 4, crewPanicsSilenced()...)
	var calls [n]atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			i, _ := strconv.Atoi(string(msg.Data()))
			calls[i].Add(1)
			switch i {
			case 1:
				return errors.New("always fails")
			case 2:
				return crewjs.Permanent(errors.New("does not decode"))
			case 3:
				panic("handler panic")
			case 4:
				runtime.Goexit()
			case 5:
				panic(nil)
			case 6:
				return crewjs.RetryAfter(0, errors.New("later"))
			}
			return nil
		}, append(opts, crewjs.WithDeadLetter(q.js, "dead.jobs"), crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))...)
	})
	for range n - 1 {
		if _, err := terms.NextMsg(30 * time.Second); err != nil {
			t.Fatalf("termination advisory missing: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "settled", func() bool { return info(t, q.cons).NumAckPending == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)

	want := map[string]struct {
		err   string
		count string
	}{
		"1": {"always fails", "2"},
		"2": {"does not decode", "1"},
		"3": {"crew/jetstream: handler panicked or called runtime.Goexit", "2"},
		"4": {"crew/jetstream: handler panicked or called runtime.Goexit", "2"},
		"5": {"crew/jetstream: handler panicked or called runtime.Goexit", "2"},
		"6": {"later", "2"},
	}
	batch, err := dead.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for m := range batch.Messages() {
		id := string(m.Data())
		got[id] = true
		w, ok := want[id]
		h := m.Headers()
		switch {
		case !ok:
			t.Errorf("message %s dead-lettered; it succeeded", id)
		case h.Get("Crew-Error") != w.err || h.Get("Crew-Delivery-Count") != w.count:
			t.Errorf("dead letter %s: error %q, count %q; want %q, %q", id, h.Get("Crew-Error"), h.Get("Crew-Delivery-Count"), w.err, w.count)
		case h.Get("Order") != "order-"+id:
			t.Errorf("dead letter %s lost its header: %v", id, h)
		case h.Get("Crew-Subject") != subject || h.Get("Crew-Stream") != "JOBS" || h.Get("Crew-Stream-Sequence") != fmt.Sprint(atoi(id)+1):
			t.Errorf("dead letter %s: origin %q %q %q", id, h.Get("Crew-Subject"), h.Get("Crew-Stream"), h.Get("Crew-Stream-Sequence"))
		case h.Get("Nats-Expected-Stream") != "":
			t.Errorf("dead letter %s kept a header the server acts on", id)
		case h.Get("Nats-Msg-Id") != "msg-"+id:
			t.Errorf("dead letter %s lost its Nats-Msg-Id: %v", id, h)
		}
		if err := m.Ack(); err != nil {
			t.Error(err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("dead letters for %v, want one each for 1 to 6", got)
	}
	for i := range n {
		wantCalls := int64(maxDeliver)
		if i == 0 || i == 2 {
			wantCalls = 1
		}
		if c := calls[i].Load(); c != wantCalls {
			t.Errorf("message %d handled %d times, want %d", i, c, wantCalls)
		}
	}
}

func atoi(s string) int { i, _ := strconv.Atoi(s); return i }

// TestWithDeadLetterKeepsTheMessageWhenThePublishFails proves that a dead letter no stream
// stores is reported, and the message is not terminated: the server keeps it.
func TestWithDeadLetterKeepsTheMessageWhenThePublishFails(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 1})
	publish(t, q.js, 1)
	reported := make(chan error, 4)
	p := newPool(t, 1)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			return errors.New("fails")
		}, crewjs.WithDeadLetter(q.js, "nowhere.jobs"), crewjs.WithErrorHandler(func(err error) { reported <- err }))
	})
	select {
	case err := <-reported:
		if !strings.Contains(err.Error(), "dead letter") || !strings.Contains(err.Error(), "nowhere.jobs") {
			t.Errorf("reported %v, want the failed dead letter", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the failed dead letter was not reported")
	}
	waitFor(t, 10*time.Second, "settled", func() bool { return info(t, q.cons).NumAckPending == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	si, err := q.st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if si.State.Msgs != 1 {
		t.Errorf("the stream holds %d messages, want the 1 whose dead letter failed", si.State.Msgs)
	}
}

// TestWithOrderBySubjectRunsASubjectsMessagesInOrder proves WithOrderBySubject's promise:
// messages of one subject run one at a time, in the order they were published (the order of
// delivery on a stream without failures), while subjects run in parallel.
func TestWithOrderBySubjectRunsASubjectsMessagesInOrder(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const subjects, each = 6, 150
	var futures []jetstream.PubAckFuture
	for i := range each {
		for s := range subjects {
			f, err := q.js.PublishAsync(fmt.Sprintf("jobs.s%d", s), []byte(strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
		}
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	next := map[string]int{}
	running := map[string]bool{}
	var all highWater
	var done atomic.Int64
	p := newPool(t, 8)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			all.enter()
			defer all.exit()
			s, i := msg.Subject(), atoi(string(msg.Data()))
			mu.Lock()
			if running[s] {
				t.Errorf("two messages of %s ran at once", s)
			}
			if next[s] != i {
				t.Errorf("%s: message %d ran, want %d", s, i, next[s])
			}
			running[s], next[s] = true, i+1
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			mu.Lock()
			running[s] = false
			mu.Unlock()
			done.Add(1)
			return nil
		}, crewjs.WithOrderBySubject(), failOnError(t))
	})
	waitFor(t, time.Minute, "every message handled", func() bool { return done.Load() == subjects*each })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if m := all.max.Load(); m < 2 || m > 8 {
		t.Errorf("at most %d handlers ran at once, want several subjects in parallel, and at most the pool's 8", m)
	}
	checkDrained(t, q.st, q.cons)
}

// TestWithOrderBySubjectReleasesQueuedMessagesOnShutdown proves that messages waiting behind
// their subject's running message are released when ctx ends, like any waiting message.
func TestWithOrderBySubjectReleasesQueuedMessagesOnShutdown(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	naks, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, q.js, 5) // one subject: one runs, four wait behind it
	p := newPool(t, 4)
	started := make(chan struct{}, 5)
	release, open := newGate(t)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			started <- struct{}{}
			<-release
			return nil
		}, crewjs.WithOrderBySubject(), failOnError(t))
	})
	<-started
	waitFor(t, 10*time.Second, "all five held", func() bool { return info(t, q.cons).NumAckPending == 5 })
	result := make(chan error, 1)
	go func() { result <- stop() }()
	for i := range 4 {
		if _, err := naks.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("%d of the four waiting messages released while the fifth ran: %v", i, err)
		}
	}
	open()
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if len(started) != 0 {
		t.Errorf("%d handlers started after the context ended", len(started))
	}
}

// crewPanicsSilenced keeps the panics a test provokes out of the test's output.
func crewPanicsSilenced() []crew.Option {
	return []crew.Option{crew.WithPanicHandler(func(any, []byte) {})}
}
