package jetstream_test

// Adversarial tests: each one makes two or more of Consume's features meet, and asserts what
// their doc comments promise, quoted in the test's own comment.

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
	"github.com/nats-io/nats.go/jetstream"
)

// advPublishSubjects publishes each messages to every one of subjects subjects, jobs.s0 to
// jobs.s<subjects-1>, round robin; message i of subject s has the id i*subjects+s as its
// payload, so ids run from 0 to subjects*each-1 in the order they were published.
func advPublishSubjects(tb testing.TB, js jetstream.JetStream, subjects, each int) {
	tb.Helper()
	futures := make([]jetstream.PubAckFuture, 0, subjects*each)
	for i := range each {
		for s := range subjects {
			f, err := js.PublishAsync(fmt.Sprintf("jobs.s%d", s), []byte(strconv.Itoa(i*subjects+s)))
			if err != nil {
				tb.Fatal(err)
			}
			futures = append(futures, f)
		}
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			tb.Fatal(err)
		case <-time.After(30 * time.Second):
			tb.Fatal("publish not acknowledged within 30s")
		}
	}
}

// advOrder checks, per subject, that its messages run one at a time and, for their first
// deliveries, in the order they were published.
type advOrder struct {
	mu       sync.Mutex
	subjects int
	running  map[int]bool
	next     map[int]int // the index of the next first delivery expected, per subject
	bad      int
}

func newAdvOrder(subjects int) *advOrder {
	return &advOrder{subjects: subjects, running: map[int]bool{}, next: map[int]int{}}
}

// enter records the start of the handler for id on its delivery delivered.
func (o *advOrder) enter(tb testing.TB, id int, delivered uint64) {
	s, i := id%o.subjects, id/o.subjects
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running[s] {
		o.errorf(tb, "two messages of subject s%d ran at once", s)
	}
	o.running[s] = true
	if delivered == 1 {
		if i != o.next[s] {
			o.errorf(tb, "subject s%d: first delivery of message %d ran, want %d", s, i, o.next[s])
		}
		o.next[s] = max(o.next[s], i+1)
	}
}

func (o *advOrder) exit(id int) {
	o.mu.Lock()
	o.running[id%o.subjects] = false
	o.mu.Unlock()
}

func (o *advOrder) errorf(tb testing.TB, format string, args ...any) {
	if o.bad++; o.bad <= 10 {
		tb.Errorf(format, args...)
	}
}

// advDrainRest runs another process on the shared consumer until every id of l is done, then
// checks that the stream is drained: what the first process released or left must reach it.
func advDrainRest(tb testing.TB, q *queue, l *ledger, limit time.Duration) {
	tb.Helper()
	pr := startProcess(tb, q.s, 4, func(ctx context.Context, msg jetstream.Msg) error {
		i := l.id(tb, msg)
		if i >= 0 {
			l.seen[i].Add(1)
			l.done[i].Add(1)
		}
		return nil
	}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(tb))
	waitFor(tb, limit, "every message done (the rest by another process)", l.allDone)
	if err := pr.stop(); err != nil {
		tb.Fatal(err)
	}
	checkDrained(tb, q.st, q.cons)
}

// advWaitDone waits at most limit for done to be closed.
func advWaitDone(tb testing.TB, done <-chan struct{}, limit time.Duration, what string) {
	tb.Helper()
	select {
	case <-done:
	case <-time.After(limit):
		tb.Fatalf("%s: Consume did not return within %v", what, limit)
	}
}

// advDelivered returns the message's delivery count, 0 if its metadata cannot be read.
func advDelivered(msg jetstream.Msg) uint64 {
	md, err := msg.Metadata()
	if err != nil {
		return 0
	}
	return md.NumDelivered
}

// TestAdvNoHandlerStartsAfterTheContextEnded attacks the shutdown promise with a busy pool
// whose queue is full of prefetched messages. Consume: "When ctx ends, Consume sends no new
// pull and no handler starts any more." A handler that finds the very context given to
// Consume already ended started after it ended. The goroutine that cancels keeps its
// processor busy for a moment afterwards, as a caller doing other work would. The messages
// released must reach another process, and every one be handled at least once.
func TestAdvNoHandlerStartsAfterTheContextEnded(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const n = 3000
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4)
	var late, handled atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := make(chan error, 1)
	go func() {
		result <- crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			if ctx.Err() != nil {
				late.Add(1)
			}
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithPrefetch(200), crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	}()
	waitFor(t, 10*time.Second, "a third handled", func() bool { return handled.Load() >= n/3 })
	cancel()
	for begin := time.Now(); time.Since(begin) < 2*time.Millisecond; {
	}
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Consume did not return within 2s of its context's end")
	}
	// A worker decides a start under the delivery's lock, and enters the handler after it:
	// one that decided just before the end may enter just after, one per worker of the pool.
	if got := late.Load(); got > 4 {
		t.Errorf("%d handlers started after the context given to Consume had ended, more than the pool's 4 workers", got)
	}
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}

// TestAdvOrderBySubjectWithDefaultPrefetchAndResize attacks WithOrderBySubject with the
// self-sizing prefetch while the pool is resized down and up. WithOrderBySubject: "runs the
// messages of one subject one at a time, in the order this Consume call received them".
// WithPrefetch: by default "at least the in-flight limit and at most 500 (or the limit, if
// that is larger)", and Consume "holds at most the in-flight limit ... plus the prefetch".
// WithMaxInFlight: the default limit is "the pool's worker limit ... read before each pull, so
// it follows crew.Pool.Resize". crew's Resize: "From its return ... no task starts while that
// many or more run", and Keyed: "a turn goes on to the key's next task only if the pool would
// start a task then (... not at a limit a Pool.Resize lowered ...)".
func TestAdvOrderBySubjectWithDefaultPrefetchAndResize(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const subjects, each = 8, 300
	const n = subjects * each
	advPublishSubjects(t, q.js, subjects, each)
	l := newLedger(n)
	order := newAdvOrder(subjects)
	p := newPool(t, 4)
	var running highWater
	var handled atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			i := l.id(t, msg)
			order.enter(t, i, advDelivered(msg))
			defer order.exit(i)
			time.Sleep(50 * time.Microsecond)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithOrderBySubject(), failOnError(t))
	})
	var most int
	sample := func() { most = max(most, info(t, q.cons).NumAckPending) }
	phase := func(limit int, until int64) {
		t.Helper()
		p.Resize(limit)
		// Tasks the pool started before a shrinking Resize may still run, or not yet have
		// entered their handler: wait for the pool's own count, then the limit holds.
		waitFor(t, 5*time.Second, fmt.Sprintf("running within the new limit %d", limit), func() bool {
			sample()
			return p.Stats().Running <= limit && running.now.Load() <= int64(limit)
		})
		running.max.Store(running.now.Load())
		waitFor(t, 15*time.Second, fmt.Sprintf("%d handled", until), func() bool {
			sample()
			return handled.Load() >= until
		})
		if m := running.max.Load(); m > int64(limit) {
			t.Errorf("%d handlers ran at once under a limit of %d", m, limit)
		}
	}
	phase(4, n/4)
	phase(1, n/2)
	phase(6, n)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if most > 6+500 {
		t.Errorf("%d messages held at once, want at most the largest limit 6 plus 500", most)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvResizeDownHoldsTheNewLimitPlusThePrefetch attacks the self-sizing prefetch with a
// pool shrunk, then grown, under slow handlers. WithPrefetch: "slow ones (a second each, say)
// hold no more than twice the limit"; WithMaxInFlight: the limit is "read before each pull,
// so it follows crew.Pool.Resize". What was pulled before the Resize stays held until it is
// worked off (nothing promises otherwise); once the run is within twice the new limit, it
// stays there, although the handlers started under the old limit all settled at once; grown
// again, it runs as many handlers as the new limit allows.
func TestAdvResizeDownHoldsTheNewLimitPlusThePrefetch(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const n = 100
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 8)
	var running highWater
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			i := l.id(t, msg)
			l.seen[i].Add(1)
			time.Sleep(200 * time.Millisecond)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	})
	waitFor(t, 5*time.Second, "8 running", func() bool { return running.now.Load() == 8 })
	p.Resize(2)
	// 8 running and 8 prefetched under the old limit: worked off by two workers in about a
	// second.
	waitFor(t, 10*time.Second, "within twice the new limit", func() bool {
		return info(t, q.cons).NumAckPending <= 4 && running.now.Load() <= 2
	})
	running.max.Store(running.now.Load())
	most := 0
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		most = max(most, info(t, q.cons).NumAckPending)
	}
	if most > 4 {
		t.Errorf("%d messages held at once under a limit of 2 with 200ms handlers, want at most 4", most)
	}
	if m := running.max.Load(); m > 2 {
		t.Errorf("%d handlers ran at once under a limit of 2", m)
	}
	p.Resize(8)
	waitFor(t, 10*time.Second, "8 running after a Resize to 8", func() bool { return running.now.Load() == 8 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	advDrainRest(t, q, l, 5*time.Second)
}

// TestAdvBoundedNonBlockingPoolPausedWithDefaultPrefetch attacks the bounded pool promise
// with the self-sizing prefetch, a second submitter, and a Pause longer than the ack wait.
// Consume: "a message is never refused once pulled, so the consumer's MaxDeliver counts the
// times a handler ran", and "From the moment a message arrives until it is settled, Consume
// sends it an in-progress signal every half ack wait". With MaxDeliver 2 and every first
// attempt failing, each message runs exactly twice and none runs out of deliveries.
func TestAdvBoundedNonBlockingPoolPausedWithDefaultPrefetch(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 2, AckWait: time.Second})
	maxed, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4, crew.WithQueueSize(2), crew.WithNonBlocking())
	noise, quiet := context.WithCancel(context.Background())
	defer quiet()
	var noiseDone sync.WaitGroup
	noiseDone.Add(1)
	go func() {
		defer noiseDone.Done()
		for noise.Err() == nil {
			p.TrySubmit(func() { time.Sleep(100 * time.Microsecond) })
			time.Sleep(200 * time.Microsecond)
		}
	}()
	var handled atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			handled.Add(1)
			if l.seen[i].Add(1) == 1 {
				return errors.New("first attempt fails")
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	waitFor(t, 10*time.Second, "two thirds of the attempts made", func() bool { return handled.Load() >= 2*n/3 })
	p.Pause()
	time.Sleep(1500 * time.Millisecond) // past the ack wait
	p.Resume()
	waitFor(t, 20*time.Second, "every message done", l.allDone)
	quiet()
	noiseDone.Wait()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range l.seen {
		if s := l.seen[i].Load(); s != 2 {
			if bad++; bad <= 10 {
				t.Errorf("message %d handled %d times, want 2", i, s)
			}
		}
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
	if m, err := maxed.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("a message ran out of deliveries: %s", m.Data)
	}
}

// TestAdvPausedPoolLosesNothing attacks the in-progress promise with a paused pool and the
// self-sizing prefetch: "From the moment a message arrives until it is settled, Consume sends
// it an in-progress signal every half ack wait", and crew's Pause: "Submits are still
// accepted and wait in the queue", and "once Pause has returned, none starts". Paused for
// twice the ack wait, then resumed, every message is handled exactly once and the stream
// drains.
func TestAdvPausedPoolLosesNothing(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Second})
	const n = 2000
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4)
	var handled, whilePaused atomic.Int64
	var paused atomic.Bool
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			if paused.Load() {
				whilePaused.Add(1)
			}
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, failOnError(t))
	})
	waitFor(t, 10*time.Second, "a quarter handled", func() bool { return handled.Load() >= n/4 })
	p.Pause()
	paused.Store(true)
	held := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		held = max(held, info(t, q.cons).NumAckPending)
	}
	paused.Store(false)
	p.Resume()
	if held > 4+500 {
		t.Errorf("%d messages held while paused, want at most 4 + 500", held)
	}
	// A task the pool started before Pause returned reaches the handler only after a few
	// steps of Consume's own (its delivery's lock), so each of the 4 workers may enter a
	// handler just after Pause returns; a handler beyond those started while paused.
	if w := whilePaused.Load(); w > 4 {
		t.Errorf("%d handlers started after Pause returned, more than the 4 tasks that may have started before", w)
	}
	waitFor(t, 20*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvSubPoolWithPausedThenStoppedParent attacks a sub-pool as Consume's pool. crew:
// "a parent's Pause holds its sub-pools' starts", and Stop "also stops the pool's sub-pools".
// Consume: it "gives up, shuts down as above and returns the error, wrapped, ... when p is
// stopped (crew.ErrStopped)", releasing "each message whose handler had not started, for
// another process to take at once". Paused, nothing runs and nothing is lost; stopped,
// Consume returns ErrStopped and holds nothing on the server, and another process gets
// every message.
func TestAdvSubPoolWithPausedThenStoppedParent(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []crew.Option
	}{
		{"unbounded", nil},
		{"bounded non-blocking", []crew.Option{crew.WithQueueSize(2), crew.WithNonBlocking()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute, MaxDeliver: 3})
			maxed, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers")
			if err != nil {
				t.Fatal(err)
			}
			const n = 400
			publish(t, q.js, n)
			l := newLedger(n)
			parent := newPool(t, 6)
			sub := parent.Sub(3, tc.opts...)
			var handled, whilePaused, afterReturn atomic.Int64
			var paused, returned atomic.Bool
			stop, done := consumeInBackground(t, func(ctx context.Context) error {
				err := crewjs.Consume(ctx, q.cons, sub, func(_ context.Context, msg jetstream.Msg) error {
					if paused.Load() {
						whilePaused.Add(1)
					}
					if returned.Load() {
						afterReturn.Add(1)
					}
					i := l.id(t, msg)
					l.seen[i].Add(1)
					time.Sleep(time.Millisecond)
					l.done[i].Add(1)
					handled.Add(1)
					return nil
				}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
				returned.Store(true)
				return err
			})
			waitFor(t, 10*time.Second, "some handled", func() bool { return handled.Load() >= n/8 })
			parent.Pause()
			paused.Store(true)
			time.Sleep(300 * time.Millisecond)
			paused.Store(false)
			parent.Resume()
			if w := whilePaused.Load(); w > 0 {
				t.Errorf("%d handlers started on the sub-pool after its parent's Pause returned", w)
			}
			waitFor(t, 10*time.Second, "more handled", func() bool { return handled.Load() >= n/3 })
			parent.Stop()
			advWaitDone(t, done, 5*time.Second, "after the parent's Stop")
			if err := stop(); !errors.Is(err, crew.ErrStopped) {
				t.Errorf("Consume returned %v, want crew.ErrStopped", err)
			}
			if a := afterReturn.Load(); a > 0 {
				t.Errorf("%d handlers started after Consume returned", a)
			}
			advDrainRest(t, q, l, 5*time.Second)
			l.check(t)
			if m, err := maxed.NextMsg(100 * time.Millisecond); err == nil {
				t.Errorf("a message ran out of deliveries: %s", m.Data)
			}
		})
	}
}

// TestAdvSubPoolWithStopNowParent attacks a sub-pool whose parent is stopped with StopNow
// while the sub-pool's queue holds prefetched messages and its handlers are blocked. crew's
// StopNow: "It includes the tasks of the pool's sub-pools ... Tasks already running go on".
// Consume: when p is stopped it "shuts down as above", releasing "each message whose handler
// had not started, for another process to take at once", waits for the running handlers and
// returns the error. The handed-back messages must be released before Consume returns, which
// must be as soon as the blocked handlers are let go.
func TestAdvSubPoolWithStopNowParent(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	naks, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.JOBS.workers")
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	publish(t, q.js, n)
	l := newLedger(n)
	parent := newPool(t, 4)
	sub := parent.Sub(2)
	release, open := newGate(t)
	var started atomic.Int64
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, sub, func(_ context.Context, msg jetstream.Msg) error {
			started.Add(1)
			<-release
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPrefetch(4), crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want crew.ErrStopped", err)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "two running, four queued", func() bool {
		return started.Load() == 2 && info(t, q.cons).NumAckPending == 6
	})
	back := parent.StopNow()
	if len(back) != 4 {
		t.Errorf("StopNow handed back %d tasks, want the 4 queued on the sub-pool", len(back))
	}
	for i := range 4 {
		if _, err := naks.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("%d of the 4 handed-back messages released while two handlers ran: %v", i, err)
		}
	}
	open()
	advWaitDone(t, done, 3*time.Second, "after StopNow and the gate")
	if s := started.Load(); s != 2 {
		t.Errorf("%d handlers started, want the 2 running at StopNow", s)
	}
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}

// TestAdvPoolStoppedMidRunWithMisbehavingHandlers attacks a pool stopped (Stop or StopNow)
// in the middle of a busy stream whose handlers panic, panic(nil), call runtime.Goexit or
// settle the message themselves, with and without WithAsyncAck. Consume: it "gives up, shuts
// down as above and returns the error, wrapped, ... when p is stopped (crew.ErrStopped)";
// "negatively acknowledges, without delay, each message whose handler had not started, for
// another process to take at once"; "once Consume has returned it sends nothing more to the
// server on behalf of any message". Handler: "A panic or runtime.Goexit counts as an error";
// "A handler may settle msg itself". So once Consume has returned, the server counts nothing
// unacknowledged for it, no handler of it starts, and another process finds every message.
func TestAdvPoolStoppedMidRunWithMisbehavingHandlers(t *testing.T) {
	for _, stopNow := range []bool{false, true} {
		for _, async := range []bool{false, true} {
			name := fmt.Sprintf("StopNow=%v/async=%v", stopNow, async)
			t.Run(name, func(t *testing.T) { testAdvPoolStopped(t, stopNow, async) })
		}
	}
}

func testAdvPoolStopped(t *testing.T, stopNow, async bool) {
	q := newQueue(t, jetstream.ConsumerConfig{}) // ack wait 30s: nothing comes back by itself
	const n = 400
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4, crewPanicsSilenced()...)
	var handled, afterReturn atomic.Int64
	var returned atomic.Bool
	opts := []crewjs.Option{crewjs.WithBackoff(func(int) time.Duration { return 0 }),
		crewjs.WithPullExpiry(200 * time.Millisecond), failOnError(t)}
	if async {
		opts = append(opts, crewjs.WithAsyncAck())
	}
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			if returned.Load() {
				afterReturn.Add(1)
			}
			handled.Add(1)
			i := l.id(t, msg)
			first := l.seen[i].Add(1) == 1
			time.Sleep(500 * time.Microsecond)
			if first {
				switch i % 6 {
				case 0:
					panic("handler panic")
				case 1:
					panic(nil)
				case 2:
					runtime.Goexit()
				case 3:
					if err := msg.Ack(); err != nil {
						return err
					}
					l.done[i].Add(1)
					return errors.New("settled by the handler, then failed")
				case 4:
					return errors.New("fails")
				}
			}
			l.done[i].Add(1)
			return nil
		}, opts...)
		returned.Store(true)
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want crew.ErrStopped", err)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "a quarter handled", func() bool { return handled.Load() >= n/4 })
	if stopNow {
		p.StopNow()
	} else {
		p.Stop()
	}
	advWaitDone(t, done, 3*time.Second, "after the pool stopped")
	if a := afterReturn.Load(); a > 0 {
		t.Errorf("%d handlers started after Consume returned", a)
	}
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}

// TestAdvOrderBySubjectWithStopNow attacks WithOrderBySubject with StopNow while a subject's
// messages wait behind its running one. crew's StopNow: "A Keyed on the pool keeps its order
// through StopNow: a key whose queued tasks StopNow hands back runs none of its tasks
// afterwards." Consume: on a stopped pool it returns crew.ErrStopped, having released "each
// message whose handler had not started", and WithOrderBySubject: "one at a time, in the order
// this Consume call received them". Nothing stays held on the server once Consume returned,
// and another process gets every message.
func TestAdvOrderBySubjectWithStopNow(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const subjects, each = 3, 20
	advPublishSubjects(t, q.js, subjects, each)
	l := newLedger(subjects * each)
	order := newAdvOrder(subjects)
	p := newPool(t, 2)
	release, open := newGate(t)
	var started atomic.Int64
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			order.enter(t, i, advDelivered(msg))
			defer order.exit(i)
			started.Add(1)
			<-release
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithOrderBySubject(), crewjs.WithPrefetch(10), crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want crew.ErrStopped", err)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "two running, the rest held", func() bool {
		return started.Load() == 2 && info(t, q.cons).NumAckPending == 12
	})
	p.StopNow()
	open()
	advWaitDone(t, done, 3*time.Second, "after StopNow")
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}

// TestAdvOrderBySubjectWithFailingHandlers attacks WithOrderBySubject with handlers that
// panic, panic(nil) or call runtime.Goexit on their first delivery. crew's Keyed.Submit: "the
// key's next task still runs, as it does after a task that calls runtime.Goexit".
// WithOrderBySubject: "The order holds within one Consume call and covers deliveries, not
// first deliveries: a message that fails is redelivered after the backoff delay, behind the
// messages of its subject that arrived meanwhile". So a subject's messages run one at a time,
// its first deliveries in the order published, and every message ends acknowledged.
func TestAdvOrderBySubjectWithFailingHandlers(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const subjects, each = 4, 60
	advPublishSubjects(t, q.js, subjects, each)
	l := newLedger(subjects * each)
	order := newAdvOrder(subjects)
	p := newPool(t, 3, crewPanicsSilenced()...)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			order.enter(t, i, advDelivered(msg))
			defer order.exit(i)
			if l.seen[i].Add(1) == 1 {
				switch i % 7 {
				case 0:
					panic("handler panic")
				case 3:
					runtime.Goexit()
				case 5:
					panic(nil)
				}
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithOrderBySubject(), crewjs.WithBackoff(func(int) time.Duration { return 0 }), failOnError(t))
	})
	waitFor(t, 20*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvCancelRacesADeletedConsumer attacks the shutdown with a consumer deleted at the same
// moment. Consume: when ctx ends it "returns nil if they all did" settle, and otherwise, at
// the shutdown timeout, "an error matching ErrShutdownTimeout" (an acknowledgement sent as
// the consumer goes may never be answered); a consumer that "no longer exists" ends it with
// "an error matching jetstream.ErrConsumerDeleted". With both at once, Consume must return
// within its pull expiry and shutdown timeout with one of those, leave no goroutine, and run
// no handler afterwards; the messages then go to the next consumer of the work queue.
func TestAdvCancelRacesADeletedConsumer(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const n = 600
	publish(t, q.js, n)
	l := newLedger(n)
	for round := range 4 {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		cons, err := q.st.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{
			Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy,
		})
		ccancel()
		if err != nil {
			t.Fatal(err)
		}
		p := newPool(t, 4)
		var handled, afterReturn atomic.Int64
		var returned atomic.Bool
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() {
			err := crewjs.Consume(ctx, cons, p, func(_ context.Context, msg jetstream.Msg) error {
				if returned.Load() {
					afterReturn.Add(1)
				}
				i := l.id(t, msg)
				l.seen[i].Add(1)
				time.Sleep(time.Millisecond)
				handled.Add(1)
				return nil // acknowledged, or not if the consumer is gone: not counted as done
			}, crewjs.WithPullExpiry(200*time.Millisecond), crewjs.WithShutdownTimeout(300*time.Millisecond))
			returned.Store(true)
			result <- err
		}()
		waitFor(t, 10*time.Second, "some handled", func() bool { return handled.Load() >= 20 })
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if round%2 == 1 {
				time.Sleep(time.Duration(round) * time.Millisecond)
			}
			cancel()
		}()
		go func() {
			defer wg.Done()
			dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer dcancel()
			if round%2 == 0 {
				time.Sleep(time.Duration(round) * time.Millisecond)
			}
			if err := q.st.DeleteConsumer(dctx, "workers"); err != nil {
				t.Errorf("deleting the consumer: %v", err)
			}
		}()
		wg.Wait()
		select {
		case err := <-result:
			if err != nil && !errors.Is(err, jetstream.ErrConsumerDeleted) && !errors.Is(err, crewjs.ErrShutdownTimeout) {
				t.Errorf("round %d: Consume returned %v, want nil, jetstream.ErrConsumerDeleted or crewjs.ErrShutdownTimeout", round, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("round %d: Consume did not return within 2s of its context's end and its consumer's deletion (pull expiry 200ms, shutdown timeout 300ms)", round)
		}
		time.Sleep(50 * time.Millisecond)
		if a := afterReturn.Load(); a > 0 {
			t.Errorf("round %d: %d handlers started after Consume returned", round, a)
		}
		cancel()
	}
	// What no round acknowledged goes to a new consumer of the work queue.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	cons, err := q.st.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy,
	})
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	q.cons = cons
	for i := range l.done {
		l.done[i].Store(0) // the rounds' acknowledgements may not have reached a consumer
	}
	pr := startProcess(t, q.s, 4, func(ctx context.Context, msg jetstream.Msg) error {
		i := l.id(t, msg)
		l.seen[i].Add(1)
		l.done[i].Add(1)
		return nil
	}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	si := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := q.st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.State.Msgs
	}
	waitFor(t, 20*time.Second, "the stream drained by a new consumer", func() bool { return si() == 0 })
	if err := pr.stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
	for i := range l.seen {
		if l.seen[i].Load() == 0 {
			t.Errorf("message %d never handled", i)
		}
	}
}

// TestAdvDeadLetterWithRetryAfterAndPermanent attacks WithDeadLetter with RetryAfter and
// Permanent on the last delivery, under WithOrderBySubject and WithAsyncAck. RetryAfter: "The
// delivery still counts against the consumer's MaxDeliver, and on the last one WithDeadLetter
// applies as to any failure", and "an error that is also Permanent terminates the message,
// whichever wraps the other". WithDeadLetter: "Crew-Delivery-Count: the delivery that
// failed". The redeliveries come after RetryAfter's delay, not the backoff's minute.
func TestAdvDeadLetterWithRetryAfterAndPermanent(t *testing.T) {
	const maxDeliver = 3
	q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: maxDeliver})
	dead := deadLetters(t, q)
	// 0: RetryAfter every time; 1: RetryAfter wrapping Permanent; 2: Permanent wrapping
	// RetryAfter; 3: RetryAfter(nil) once, then succeeds; 4: RetryAfter twice, then Permanent.
	const n = 5
	publish(t, q.js, n)
	p := newPool(t, 3)
	var calls [n]atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := atoi(string(msg.Data()))
			c := calls[i].Add(1)
			if d := advDelivered(msg); d != uint64(c) {
				t.Errorf("message %d: call %d came with delivery count %d", i, c, d)
			}
			switch i {
			case 0:
				return crewjs.RetryAfter(50*time.Millisecond, errors.New("busy"))
			case 1:
				return crewjs.RetryAfter(time.Hour, crewjs.Permanent(errors.New("bad inside")))
			case 2:
				return crewjs.Permanent(crewjs.RetryAfter(time.Hour, errors.New("bad outside")))
			case 3:
				if c == 1 {
					return crewjs.RetryAfter(50*time.Millisecond, nil)
				}
			case 4:
				if c < maxDeliver {
					return crewjs.RetryAfter(50*time.Millisecond, errors.New("busy"))
				}
				return crewjs.Permanent(errors.New("gave up"))
			}
			return nil
		}, crewjs.WithDeadLetter(q.js, "dead.jobs"), crewjs.WithBackoff(func(int) time.Duration { return time.Minute }),
			crewjs.WithOrderBySubject(), crewjs.WithAsyncAck(), failOnError(t))
	})
	waitFor(t, 10*time.Second, "every message settled", func() bool {
		ci := info(t, q.cons)
		return calls[0].Load() == maxDeliver && calls[4].Load() == maxDeliver && calls[3].Load() == 2 &&
			ci.NumAckPending == 0 && ci.NumPending == 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
	want := map[string][2]string{
		"0": {"busy", "3"},
		"1": {"bad inside", "1"},
		"2": {"bad outside", "1"},
		"4": {"gave up", "3"},
	}
	batch, err := dead.Fetch(10, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for m := range batch.Messages() {
		id := string(m.Data())
		got[id]++
		w, ok := want[id]
		h := m.Headers()
		switch {
		case !ok:
			t.Errorf("message %s dead-lettered; want none", id)
		case h.Get("Crew-Error") != w[0] || h.Get("Crew-Delivery-Count") != w[1]:
			t.Errorf("dead letter %s: error %q, count %q; want %q, %q", id, h.Get("Crew-Error"), h.Get("Crew-Delivery-Count"), w[0], w[1])
		}
		_ = m.Ack()
	}
	for id := range want {
		if got[id] != 1 {
			t.Errorf("message %s dead-lettered %d times, want once", id, got[id])
		}
	}
	for i, w := range []int64{maxDeliver, 1, 1, 2, maxDeliver} {
		if c := calls[i].Load(); c != w {
			t.Errorf("message %d handled %d times, want %d", i, c, w)
		}
	}
}

// TestAdvTwoConsumesShareAPoolOneCanceled attacks two Consume calls splitting one pool with
// WithMaxInFlight, one of them canceled mid-run. Consume: "Consume is safe to call
// concurrently, with one or several consumers and pools"; WithMaxInFlight: "Set it when
// several Consume calls share one pool, to split the pool between them"; "When ctx ends,
// Consume sends no new pull and no handler starts any more". The canceled call returns nil
// within its pull expiry, starts no handler after its context ended, and the other drains
// every message, never running more handlers than the pool allows.
func TestAdvTwoConsumesShareAPoolOneCanceled(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []crew.Option
	}{
		{"unbounded", nil},
		{"bounded non-blocking", []crew.Option{crew.WithQueueSize(3), crew.WithNonBlocking()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{MaxDeliver: 3})
			maxed, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers")
			if err != nil {
				t.Fatal(err)
			}
			const n = 1500
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 6, tc.opts...)
			var running highWater
			var handledA, lateA atomic.Int64
			run := func(handled, late *atomic.Int64) func(ctx context.Context) error {
				return func(ctx context.Context) error {
					return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
						if late != nil && ctx.Err() != nil {
							late.Add(1)
						}
						running.enter()
						defer running.exit()
						i := l.id(t, msg)
						l.seen[i].Add(1)
						time.Sleep(200 * time.Microsecond)
						l.done[i].Add(1)
						if handled != nil {
							handled.Add(1)
						}
						return nil
					}, crewjs.WithMaxInFlight(3), crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
				}
			}
			stopA, doneA := consumeInBackground(t, run(&handledA, &lateA))
			stopB, _ := consumeInBackground(t, run(nil, nil))
			waitFor(t, 10*time.Second, "A handled some", func() bool { return handledA.Load() >= 100 })
			begin := time.Now()
			if err := stopA(); err != nil {
				t.Errorf("the canceled Consume returned %v, want nil", err)
			}
			advWaitDone(t, doneA, time.Second, "A")
			if d := time.Since(begin); d > time.Second {
				t.Errorf("the canceled Consume took %v to return, want within its 200ms pull expiry", d)
			}
			if got := lateA.Load(); got > 0 {
				t.Errorf("%d handlers of the canceled Consume started after its context ended", got)
			}
			waitFor(t, 20*time.Second, "every message done by the other", l.allDone)
			if err := stopB(); err != nil {
				t.Fatal(err)
			}
			if m := running.max.Load(); m > 6 {
				t.Errorf("%d handlers ran at once on a pool of 6", m)
			}
			l.check(t)
			checkDrained(t, q.st, q.cons)
			if m, err := maxed.NextMsg(100 * time.Millisecond); err == nil {
				t.Errorf("a message ran out of deliveries: %s", m.Data)
			}
		})
	}
}

// TestAdvPausedBoundedPoolKeepsEveryPulledMessageAlive attacks the in-progress promise on a
// paused pool whose queue is bounded. Consume: "When p's queue is bounded, it also asks for
// no more than p has room for, and a message p refuses all the same ... waits in Consume
// until p accepts it: a message is never refused once pulled, so the consumer's MaxDeliver
// counts the times a handler ran", and "From the moment a message arrives until it is
// settled, Consume sends it an in-progress signal every half ack wait". Paused for more than
// twice the ack wait, then resumed, every message is handled once, and with MaxDeliver 1 the
// server never finds one out of deliveries (its ack wait passed without a signal).
func TestAdvPausedBoundedPoolKeepsEveryPulledMessageAlive(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []crew.Option
	}{
		{"blocking", []crew.Option{crew.WithQueueSize(1)}},
		{"non-blocking", []crew.Option{crew.WithQueueSize(1), crew.WithNonBlocking()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Second, MaxDeliver: 1})
			maxed, err := q.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers")
			if err != nil {
				t.Fatal(err)
			}
			const n = 8
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 2, tc.opts...)
			p.Pause()
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
					i := l.id(t, msg)
					l.seen[i].Add(1)
					l.done[i].Add(1)
					return nil
				}, failOnError(t))
			})
			waitFor(t, 5*time.Second, "messages pulled", func() bool { return info(t, q.cons).NumAckPending >= 3 })
			time.Sleep(2500 * time.Millisecond)
			p.Resume()
			waitFor(t, 10*time.Second, "every message done", l.allDone)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			l.check(t)
			if m, err := maxed.NextMsg(100 * time.Millisecond); err == nil {
				t.Errorf("a message held by Consume ran out of deliveries: %s", m.Data)
			}
			checkDrained(t, q.st, q.cons)
		})
	}
}

// TestAdvOverflowPoliciesOfABoundedPool attacks Consume's bounded-pool promise with the
// overflow policies crew offers besides Block and Reject, and another submitter that takes
// the room Consume saw. Consume: it "runs h for each of them on p"; "a message p refuses all
// the same, because other work took the room, waits in Consume until p accepts it"; "h runs
// on p's workers, so p's limit bounds the handlers running at once"; "On a pool under
// crew.CallerRuns, no handler runs on Consume's own goroutines". So under CallerRuns no
// handler runs beyond the pool's limit, and every message is handled, and acknowledged,
// while the other submitter goes on. A bounded pool under DiscardOldest (with or without
// WithOrderBySubject) is refused at once, nothing pulled: it "could drop a message's handler
// unseen".
func TestAdvOverflowPoliciesOfABoundedPool(t *testing.T) {
	for _, tc := range []struct {
		name     string
		overflow crew.Overflow
		opts     []crewjs.Option
	}{
		{"CallerRuns", crew.CallerRuns, nil},
		{"CallerRuns/WithOrderBySubject", crew.CallerRuns, []crewjs.Option{crewjs.WithOrderBySubject()}},
		{"DiscardOldest", crew.DiscardOldest, nil},
		{"DiscardOldest/WithOrderBySubject", crew.DiscardOldest, []crewjs.Option{crewjs.WithOrderBySubject()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.overflow == crew.DiscardOldest {
				q := newQueue(t, jetstream.ConsumerConfig{})
				publish(t, q.js, 3)
				p := newPool(t, 2, crew.WithQueueSize(2), crew.WithOverflow(tc.overflow))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
					t.Error("a handler ran on a pool Consume refused")
					return nil
				}, tc.opts...)
				if err == nil || !strings.Contains(err.Error(), "DiscardOldest") {
					t.Fatalf("Consume on a bounded DiscardOldest pool = %v, want an error naming DiscardOldest", err)
				}
				// Nothing pulled: no delivery, nothing unacknowledged. The server may count the
				// published messages as pending a moment after their acknowledgements.
				if ci := info(t, q.cons); ci.Delivered.Consumer != 0 || ci.NumAckPending != 0 {
					t.Errorf("consumer after the refusal: %d delivered, %d unacknowledged; want none: nothing pulled",
						ci.Delivered.Consumer, ci.NumAckPending)
				}
				waitFor(t, 5*time.Second, "the 3 messages pending", func() bool { return info(t, q.cons).NumPending == 3 })
				return
			}
			q := newQueue(t, jetstream.ConsumerConfig{})
			const n = 200
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 2, crew.WithQueueSize(2), crew.WithOverflow(tc.overflow))
			noise, quiet := context.WithCancel(context.Background())
			defer quiet()
			var noiseDone sync.WaitGroup
			noiseDone.Add(1)
			go func() {
				defer noiseDone.Done()
				for noise.Err() == nil {
					_ = p.Submit(func() { time.Sleep(300 * time.Microsecond) })
					time.Sleep(200 * time.Microsecond)
				}
			}()
			var running highWater
			stop, _ := consumeInBackground(t, func(ctx context.Context) error {
				return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
					running.enter()
					defer running.exit()
					i := l.id(t, msg)
					l.seen[i].Add(1)
					time.Sleep(time.Millisecond)
					l.done[i].Add(1)
					return nil
				}, append(tc.opts, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))...)
			})
			deadline := time.Now().Add(10 * time.Second)
			for !l.allDone() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			quiet()
			noiseDone.Wait()
			all := l.allDone()
			if !all {
				missing := 0
				for i := range l.done {
					if l.done[i].Load() == 0 {
						missing++
					}
				}
				t.Errorf("%d of %d messages not handled within 10s (pool: %+v)", missing, n, p.Stats())
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if m := running.max.Load(); m > 2 {
				t.Errorf("%d handlers ran at once on a pool of 2 (pool: %+v)", m, p.Stats())
			}
			if all {
				l.check(t)
				checkDrained(t, q.st, q.cons)
			} else {
				advDrainRest(t, q, l, 5*time.Second)
			}
		})
	}
}

// TestAdvStopNowPastTheShutdownTimeoutSendsNothingMore attacks StopNow with blocked handlers,
// a short shutdown timeout, WithDeadLetter and WithAsyncAck. Consume: on a stopped pool it
// "shuts down as above and returns the error"; past the shutdown timeout "it returns an error
// matching ErrShutdownTimeout: the messages still held are neither acknowledged nor
// terminated"; "once Consume has returned it sends nothing more to the server on behalf of
// any message". ErrShutdownTimeout: "what they return is ignored". So the handlers let go
// after Consume returned neither acknowledge nor dead-letter their messages: the server
// redelivers them after their ack wait, to another process.
func TestAdvStopNowPastTheShutdownTimeoutSendsNothingMore(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Second, MaxDeliver: 3})
	dead := deadLetters(t, q)
	const n = 10
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 2)
	release, open := newGate(t)
	var started atomic.Int64
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			started.Add(1)
			<-release
			if i%2 == 0 {
				return crewjs.Permanent(errors.New("too late to matter"))
			}
			return nil
		}, crewjs.WithShutdownTimeout(100*time.Millisecond), crewjs.WithDeadLetter(q.js, "dead.jobs"),
			crewjs.WithAsyncAck(), crewjs.WithPrefetch(2), crewjs.WithPullExpiry(100*time.Millisecond))
		if !errors.Is(err, crew.ErrStopped) || !errors.Is(err, crewjs.ErrShutdownTimeout) {
			t.Errorf("Consume returned %v, want crew.ErrStopped and crewjs.ErrShutdownTimeout", err)
		}
		return nil
	})
	waitFor(t, 5*time.Second, "two running, two queued", func() bool {
		return started.Load() == 2 && info(t, q.cons).NumAckPending == 4
	})
	p.StopNow()
	advWaitDone(t, done, 3*time.Second, "after StopNow")
	open()
	time.Sleep(100 * time.Millisecond)
	if m, err := dead.Fetch(10, jetstream.FetchMaxWait(200*time.Millisecond)); err == nil {
		for msg := range m.Messages() {
			t.Errorf("dead letter %s published after Consume returned", msg.Data())
		}
	}
	// The two abandoned come back after their ack wait, with the rest.
	for i := range l.done {
		l.done[i].Store(0)
	}
	advDrainRest(t, q, l, 5*time.Second)
	for i := range l.seen {
		if s := l.seen[i].Load(); s > 2 {
			t.Errorf("message %d handled %d times, want at most 2", i, s)
		}
	}
	if s := started.Load(); s != 2 {
		t.Errorf("%d handlers started in the stopped process, want 2", s)
	}
}

// TestAdvCancelWhilePausedReleasesEverything attacks the shutdown promise on a paused pool
// with the self-sizing prefetch. Consume: when ctx ends it "negatively acknowledges, without
// delay, each message whose handler had not started, for another process to take at once",
// then "returns nil if they all did" settle; and "no handler starts any more". crew's Pause:
// submits "wait in the queue". Canceled while paused, Consume returns within its pull expiry,
// no handler of it starts after the Resume, and another process gets every message at once.
func TestAdvCancelWhilePausedReleasesEverything(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	const n = 1000
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4)
	var handled, late atomic.Int64
	var ended atomic.Bool
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			if ended.Load() {
				late.Add(1)
			}
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	})
	waitFor(t, 10*time.Second, "a fifth handled", func() bool { return handled.Load() >= n/5 })
	if err := p.PauseAndWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "messages held while paused", func() bool { return info(t, q.cons).NumAckPending > 4 })
	ended.Store(true)
	begin := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Consume took %v to return on a paused pool, want within its 200ms pull expiry", d)
	}
	p.Resume()
	advDrainRest(t, q, l, 5*time.Second)
	if got := late.Load(); got > 0 {
		t.Errorf("%d handlers started after the context ended", got)
	}
	l.check(t)
}

// TestAdvHandlerStopsItsOwnPool attacks a handler that stops the pool it runs on, with
// StopNow or Stop. crew: StopNow and Stop are "safe to call from a task"; Consume ends with
// crew.ErrStopped when p is stopped, lets the running handlers finish and settles their
// messages, and releases the rest. The handler that stopped the pool gets its message
// acknowledged, and another process gets every other one.
func TestAdvHandlerStopsItsOwnPool(t *testing.T) {
	for _, stopNow := range []bool{false, true} {
		t.Run(fmt.Sprintf("StopNow=%v", stopNow), func(t *testing.T) {
			q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
			const n = 300
			publish(t, q.js, n)
			l := newLedger(n)
			p := newPool(t, 3)
			var handled atomic.Int64
			_, done := consumeInBackground(t, func(ctx context.Context) error {
				err := crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
					i := l.id(t, msg)
					l.seen[i].Add(1)
					if handled.Add(1) == 50 {
						if stopNow {
							p.StopNow()
						} else {
							p.Stop()
						}
					}
					l.done[i].Add(1)
					return nil
				}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
				if !errors.Is(err, crew.ErrStopped) {
					t.Errorf("Consume returned %v, want crew.ErrStopped", err)
				}
				return nil
			})
			advWaitDone(t, done, 3*time.Second, "after the handler stopped the pool")
			advDrainRest(t, q, l, 5*time.Second)
			l.check(t)
		})
	}
}

// TestAdvStopNowReleasesABlockedSubmit attacks StopNow on a paused pool whose bounded queue
// blocks, while Consume waits for room to submit a message. crew's StopNow: "a submitter
// blocked on a full queue when StopNow is called returns ErrStopped", and "a paused pool's
// backlog is abandoned this way". Consume: it ends with crew.ErrStopped and releases "each
// message whose handler had not started, for another process to take at once". No handler
// runs, Consume returns within its pull expiry, and another process gets every message.
func TestAdvStopNowReleasesABlockedSubmit(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	const n = 40
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 2, crew.WithQueueSize(1))
	p.Pause()
	var started atomic.Int64
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		err := crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			started.Add(1)
			return nil
		}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
		if !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want crew.ErrStopped", err)
		}
		return nil
	})
	waitFor(t, 5*time.Second, "the queue full and more held", func() bool {
		return p.Stats().Waiting == 1 && info(t, q.cons).NumAckPending >= 2
	})
	time.Sleep(50 * time.Millisecond) // the next submit blocked
	p.StopNow()
	advWaitDone(t, done, 2*time.Second, "after StopNow")
	if s := started.Load(); s != 0 {
		t.Errorf("%d handlers ran on a pool paused until StopNow", s)
	}
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}

// TestAdvPoolTiedToConsumesContext attacks a pool made WithContext with the context given to
// Consume: both end at once. crew's WithContext: "when ctx ends, the pool stops as if by
// Pool.Stop". Consume: when ctx ends it returns nil once what it holds is settled, and when p
// is stopped it returns an error matching crew.ErrStopped; either way it releases "each
// message whose handler had not started, for another process to take at once".
func TestAdvPoolTiedToConsumesContext(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	const n = 1000
	publish(t, q.js, n)
	l := newLedger(n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPool(t, 4, crew.WithContext(ctx))
	var handled atomic.Int64
	result := make(chan error, 1)
	go func() {
		result <- crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	}()
	waitFor(t, 10*time.Second, "a fifth handled", func() bool { return handled.Load() >= n/5 })
	cancel()
	select {
	case err := <-result:
		if err != nil && !errors.Is(err, crew.ErrStopped) {
			t.Errorf("Consume returned %v, want nil or crew.ErrStopped", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Consume did not return within 2s of its context's end")
	}
	advDrainRest(t, q, l, 5*time.Second)
	l.check(t)
}
