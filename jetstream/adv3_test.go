package jetstream_test

// Adversarial tests: Consume where it meets crew's features (sub-pools of sub-pools with
// WithPriority, Pause and Resume, a parent's Resize, StopNow, two calls on one pool) and
// handlers that misbehave or settle their message themselves. Each test quotes the promise it
// attacks.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go/jetstream"
)

// adv3Wait waits at most limit for ch to be closed.
func adv3Wait(tb testing.TB, ch <-chan struct{}, limit time.Duration, what string) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(limit):
		tb.Fatalf("%s: not within %v", what, limit)
	}
}

// TestAdvJS3SubSubPoolWithPriorityObeysAParentResizedDown attacks Consume on a leveled
// sub-pool of a leveled sub-pool whose top pool also runs its own tasks and shrinks mid-run.
// crew: "parent and sub-pool tasks together never exceed the parent's limit"; "after a
// parent's shrinking Resize returns, no task of any sub-pool starts while the parent runs its
// new limit or more". Consume: "h runs on p's workers, so p's limit bounds the handlers
// running at once"; each message is settled exactly once. So the handlers never exceed the
// leaf's limit, the handlers and the top's own tasks never exceed the top's limit (the new
// one, once the tasks started before the Resize are done), and every message is acknowledged
// once.
func TestAdvJS3SubSubPoolWithPriorityObeysAParentResizedDown(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	n := 300
	if testing.Short() {
		n = 150
	}
	publish(t, q.js, n)
	l := newLedger(n)
	top := newPool(t, 4)
	mid := top.Sub(4, crew.WithPriority(1))
	leaf := mid.Sub(3, crew.WithPriority(2))

	var handlers, all highWater
	var checking atomic.Bool
	var oldRunning, violations, worst atomic.Int64
	var handled atomic.Int64
	// enter counts a task of the top pool (own or handler) in all; a task that entered before
	// checking began is old, and only with no old task left running must all stay within 2.
	enter := func() (old bool) {
		if !checking.Load() {
			oldRunning.Add(1)
			all.enter()
			return true
		}
		all.enter()
		if now := all.now.Load(); now > 2 && oldRunning.Load() == 0 {
			violations.Add(1)
			for {
				w := worst.Load()
				if now <= w || worst.CompareAndSwap(w, now) {
					break
				}
			}
		}
		return false
	}
	exit := func(old bool) {
		all.exit()
		if old {
			oldRunning.Add(-1)
		}
	}

	// The top pool's own tasks keep a few waiting at level 0 until the stream is done.
	ownDone := make(chan struct{})
	var own sync.WaitGroup
	own.Add(1)
	go func() {
		defer own.Done()
		for {
			select {
			case <-ownDone:
				return
			default:
			}
			if top.Stats().Waiting < 4 {
				_ = top.Submit(func() {
					old := enter()
					time.Sleep(time.Millisecond)
					exit(old)
				})
				continue
			}
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(ownDone); own.Wait() }()

	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, leaf, func(_ context.Context, msg jetstream.Msg) error {
			old := enter()
			handlers.enter()
			time.Sleep(2 * time.Millisecond)
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			handlers.exit()
			exit(old)
			return nil
		}, crewjs.WithPullExpiry(200*time.Millisecond), failOnError(t))
	})
	waitFor(t, 20*time.Second, "a third handled", func() bool { return handled.Load() >= int64(n/3) })
	top.Resize(2)
	if m := top.Stats().MaxWorkers; m != 2 {
		t.Errorf("top's MaxWorkers %d after Resize(2)", m)
	}
	// The tasks started before the Resize take a few milliseconds; then every start counts.
	time.Sleep(200 * time.Millisecond)
	checking.Store(true)
	waitFor(t, 30*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if m := handlers.max.Load(); m > 3 {
		t.Errorf("%d handlers ran at once on a leaf of limit 3", m)
	}
	if m := all.max.Load(); m > 4 {
		t.Errorf("%d tasks ran at once on a top pool of limit 4", m)
	}
	if v := violations.Load(); v > 0 {
		t.Errorf("%d starts saw more than the top's new limit 2 running (up to %d) with no older task left", v, worst.Load())
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3PausedTopKeepsTheLeafsMessagesAlivePastTheAckWait attacks a paused top pool
// under a sub-pool of a sub-pool, paused for several ack waits. crew: "a parent's Pause
// holds its sub-pools' starts". Consume: "From the moment a message arrives until it is
// settled, Consume sends it an in-progress signal every half ack wait"; prefetched messages
// "wait in the pool's queue and get in-progress signals like the others". So while paused no
// handler runs, Consume holds no more than the limit plus the prefetch, the server redelivers
// nothing, and after Resume each message is handled exactly once.
func TestAdvJS3PausedTopKeepsTheLeafsMessagesAlivePastTheAckWait(t *testing.T) {
	const ackWait = 400 * time.Millisecond
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: ackWait})
	const n = 20
	publish(t, q.js, n)
	l := newLedger(n)
	top := newPool(t, 2)
	leaf := top.Sub(3, crew.WithPriority(1)).Sub(2)
	top.Pause()
	var ran atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, leaf, func(_ context.Context, msg jetstream.Msg) error {
			ran.Add(1)
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPrefetch(2), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 5*time.Second, "four messages held", func() bool { return info(t, q.cons).NumAckPending == 4 })
	time.Sleep(3 * ackWait)
	ci := info(t, q.cons)
	if ci.NumAckPending != 4 || ci.NumRedelivered != 0 {
		t.Errorf("after three ack waits paused: %d held, %d redelivered; want 4 held, 0 redelivered", ci.NumAckPending, ci.NumRedelivered)
	}
	if r := ran.Load(); r != 0 {
		t.Errorf("%d handlers ran while the top pool was paused", r)
	}
	top.Resume()
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	adv2Once(t, l)
	l.check(t)
	if ci := info(t, q.cons); ci.NumRedelivered != 0 {
		t.Errorf("%d messages redelivered; want none", ci.NumRedelivered)
	}
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3MisbehavingHandlersSettleAsDocumented attacks the Handler's settling rules with
// every way a first delivery can fail: a panic, panic(nil), runtime.Goexit, RetryAfter with a
// negative delay, a plain error, and a handler blocked past the ack wait. Handler: "A panic or
// runtime.Goexit counts as an error; the panic then goes on to the pool's panic handler";
// RetryAfter: redelivered "at once if d is 0 or less"; "any other error negatively
// acknowledges it for redelivery after the backoff delay"; a handler running longer than the
// ack wait "is not redelivered to another process while it runs". So each failing message
// comes back exactly once more, as delivery 2, the blocked one is handled once, the panic
// handler sees both panics of each message (panic(nil) as a *runtime.PanicNilError), and
// every message is acknowledged once.
func TestAdvJS3MisbehavingHandlersSettleAsDocumented(t *testing.T) {
	const ackWait = 300 * time.Millisecond
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: ackWait})
	const kinds, each = 7, 3
	const n = kinds * each
	publish(t, q.js, n)
	l := newLedger(n)
	var panics, nilPanics atomic.Int64
	onPanic := crew.WithPanicHandler(func(v any, _ []byte) {
		panics.Add(1)
		var pn *runtime.PanicNilError
		if err, ok := v.(error); ok && errors.As(err, &pn) {
			nilPanics.Add(1)
		}
	})
	var mu sync.Mutex
	deliveries := map[int][]uint64{}
	handler := func(_ context.Context, msg jetstream.Msg) error {
		i := l.id(t, msg)
		l.seen[i].Add(1)
		d := advDelivered(msg)
		mu.Lock()
		deliveries[i] = append(deliveries[i], d)
		mu.Unlock()
		if d == 1 {
			switch i % kinds {
			case 0:
				panic("handler panic " + strconv.Itoa(i))
			case 1:
				panic(nil)
			case 2:
				runtime.Goexit()
			case 3:
				return crewjs.RetryAfter(-time.Hour, nil)
			case 4:
				return errors.New("plain failure")
			case 5:
				time.Sleep(3 * ackWait)
			}
		}
		l.done[i].Add(1)
		return nil
	}
	opts := []crewjs.Option{crewjs.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		crewjs.WithPullExpiry(100 * time.Millisecond), failOnError(t)}
	// Two processes share the consumer: neither may get a message whose handler still runs.
	stops := make([]func() error, 2)
	for k, limit := range []int{8, 3} {
		_, js := connect(t, q.s)
		cons := consumerOn(t, js)
		p := newPool(t, limit, onPanic)
		stops[k], _ = consumeInBackground(t, func(ctx context.Context) error {
			return crewjs.Consume(ctx, cons, p, handler, opts...)
		})
	}
	waitFor(t, 20*time.Second, "every message done", l.allDone)
	// Room for a wrong extra delivery to show.
	time.Sleep(2 * ackWait)
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		want := "[1 2]"
		if k := i % kinds; k >= 5 {
			want = "[1]"
		}
		if got := fmt.Sprint(deliveries[i]); got != want {
			t.Errorf("message %d (kind %d): deliveries %s, want %s", i, i%kinds, got, want)
		}
	}
	if got := panics.Load(); got != 2*each {
		t.Errorf("panic handler saw %d panics, want %d", got, 2*each)
	}
	if got := nilPanics.Load(); got != each {
		t.Errorf("panic handler saw %d *runtime.PanicNilError, want %d", got, each)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3HandlerSettledItselfThenFailed attacks "A handler may settle msg itself (Ack,
// Nak, Term and their variants); Consume then leaves the message as the handler settled
// it", whatever the handler then does: return an error, return nil, panic, call
// runtime.Goexit or return a Permanent error. Acknowledged or terminated by the handler, a
// message never comes back; negatively acknowledged by it, it does, even though the handler
// returned nil or a Permanent error; and no error reaches the error handler.
func TestAdvJS3HandlerSettledItselfThenFailed(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const kinds, each = 6, 3
	const n = kinds * each
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4, crew.WithPanicHandler(func(any, []byte) {}))
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			if advDelivered(msg) == 1 {
				switch i % kinds {
				case 0:
					if err := msg.Ack(); err != nil {
						t.Error(err)
					}
					l.done[i].Add(1)
					return errors.New("failed after acknowledging")
				case 1:
					if err := msg.Nak(); err != nil {
						t.Error(err)
					}
					return nil
				case 2:
					if err := msg.Term(); err != nil {
						t.Error(err)
					}
					l.done[i].Add(1)
					panic("after terminating")
				case 3:
					if err := msg.DoubleAck(ctx); err != nil {
						t.Error(err)
					}
					l.done[i].Add(1)
					runtime.Goexit()
				case 4:
					if err := msg.InProgress(); err != nil {
						t.Error(err)
					}
				case 5:
					if err := msg.NakWithDelay(20 * time.Millisecond); err != nil {
						t.Error(err)
					}
					return crewjs.Permanent(errors.New("permanent after a nak"))
				}
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	time.Sleep(300 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := int32(1)
		if k := i % kinds; k == 1 || k == 5 {
			want = 2
		}
		if got := l.seen[i].Load(); got != want {
			t.Errorf("message %d (kind %d) handled %d times, want %d", i, i%kinds, got, want)
		}
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3ContextEndedAtEveryPhase attacks Consume's shutdown by ending its context at a
// range of moments: before the call, at once, during the first pull, with handlers running
// and with messages queued, on a plain pool and on a leveled sub-pool of a sub-pool. Consume:
// "it returns nil at once if ctx has already ended", having pulled nothing; otherwise it
// releases what no handler started, lets the running handlers finish (within the shutdown
// timeout, here the ack wait) and returns nil. So each call returns nil within the pull
// expiry and a little more, no handler starts after it returned, what it released reaches
// another process at once (long before the ack wait), and every message is acknowledged
// exactly once.
func TestAdvJS3ContextEndedAtEveryPhase(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	delays := []time.Duration{-1, 0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond}
	const per = 30
	n := per * len(delays)
	publish(t, q.js, n)
	l := newLedger(n)
	var afterReturn atomic.Int64
	for round, d := range delays {
		var p *crew.Pool
		if round%2 == 0 {
			p = newPool(t, 3)
		} else {
			p = newPool(t, 4).Sub(4, crew.WithPriority(1)).Sub(3, crew.WithPriority(1))
		}
		ctx, cancel := context.WithCancel(context.Background())
		if d < 0 {
			cancel()
		}
		var returned atomic.Bool
		var ran atomic.Int64
		done := make(chan struct{})
		var err error
		go func() {
			defer close(done)
			err = crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
				if returned.Load() {
					afterReturn.Add(1)
				}
				ran.Add(1)
				time.Sleep(3 * time.Millisecond)
				i := l.id(t, msg)
				l.seen[i].Add(1)
				l.done[i].Add(1)
				return nil
			}, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
			returned.Store(true)
		}()
		if d >= 0 {
			time.Sleep(d)
			cancel()
		}
		adv3Wait(t, done, 5*time.Second, fmt.Sprintf("round %d (context ended after %v): Consume returned", round, d))
		cancel()
		if err != nil {
			t.Errorf("round %d (context ended after %v): Consume returned %v, want nil", round, d, err)
		}
		if d < 0 {
			if r := ran.Load(); r != 0 {
				t.Errorf("Consume with an ended context ran %d handlers", r)
			}
			if ci := info(t, q.cons); ci.NumAckPending != 0 || ci.Delivered.Consumer != 0 {
				t.Errorf("Consume with an ended context pulled: %d held, %d delivered", ci.NumAckPending, ci.Delivered.Consumer)
			}
		}
	}
	// Everything released must come at once, not after the minute of ack wait.
	advDrainRest(t, q, l, 10*time.Second)
	if a := afterReturn.Load(); a > 0 {
		t.Errorf("%d handlers started after their Consume returned", a)
	}
	l.check(t)
}

// TestAdvJS3TwoConsumesOnOnePoolOneOrdered attacks two concurrent Consume calls on one pool
// and one consumer, one of them with WithOrderBySubject. Consume: "safe to call
// concurrently, with one or several consumers and pools"; "p's limit bounds the handlers
// running at once"; the ordered call runs "the messages of one subject one at a time". So
// the handlers of both calls together never exceed the pool's limit, the ordered call never
// runs two messages of a subject at once, and every message is acknowledged exactly once.
func TestAdvJS3TwoConsumesOnOnePoolOneOrdered(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const subjects, each = 4, 60
	const n = subjects * each
	advPublishSubjects(t, q.js, subjects, each)
	l := newLedger(n)
	p := newPool(t, 3)
	var running highWater
	var mu sync.Mutex
	busy := map[string]bool{}
	handler := func(ordered bool) crewjs.Handler {
		return func(_ context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			if ordered {
				mu.Lock()
				if busy[msg.Subject()] {
					t.Errorf("the ordered call ran two messages of %s at once", msg.Subject())
				}
				busy[msg.Subject()] = true
				mu.Unlock()
				defer func() { mu.Lock(); busy[msg.Subject()] = false; mu.Unlock() }()
			}
			time.Sleep(time.Millisecond)
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}
	}
	stop1, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, handler(true), crewjs.WithOrderBySubject(),
			crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	stop2, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, handler(false), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 20*time.Second, "every message done", l.allDone)
	if err := stop1(); err != nil {
		t.Error(err)
	}
	if err := stop2(); err != nil {
		t.Error(err)
	}
	if m := running.max.Load(); m > 3 {
		t.Errorf("%d handlers ran at once on a pool of 3", m)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3StopNowOfTheTopReleasesTheLeafsQueueAtOnce attacks StopNow of the top pool of a
// leveled sub-pool of a sub-pool that Consume runs on, with handlers blocked. crew: StopNow
// returns every accepted task not yet started, "a parent's includes its sub-pools'"; "Stopping
// the parent stops its sub-pools". Consume: it returns crew.ErrStopped when p is stopped, and
// "negatively acknowledges, without delay, each message whose handler had not started". So
// StopNow hands back the queued handlers, their messages reach another process at once (the
// ack wait is a minute), the running handlers finish and are acknowledged, and Consume
// returns an error matching crew.ErrStopped.
func TestAdvJS3StopNowOfTheTopReleasesTheLeafsQueueAtOnce(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	const n = 40
	publish(t, q.js, n)
	l := newLedger(n)
	top := newPool(t, 4)
	leaf := top.Sub(3, crew.WithPriority(1)).Sub(2, crew.WithPriority(3))
	gate, open := newGate(t)
	var started atomic.Int64
	var consumeErr error
	_, done := consumeInBackground(t, func(ctx context.Context) error {
		consumeErr = crewjs.Consume(ctx, q.cons, leaf, func(_ context.Context, msg jetstream.Msg) error {
			started.Add(1)
			<-gate
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPrefetch(3), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
		return nil
	})
	// The leaf's own count as well: a message the server counts as pending may still be on
	// its way from the pull to the leaf's queue.
	waitFor(t, 5*time.Second, "two running, three queued", func() bool {
		return started.Load() == 2 && info(t, q.cons).NumAckPending == 5 && leaf.Stats().Waiting == 3
	})
	if back := top.StopNow(); len(back) != 3 {
		t.Errorf("StopNow of the top handed back %d tasks, want the leaf's 3 queued", len(back))
	}
	// The three queued messages reach another process while the two handlers still block.
	var others atomic.Int64
	pr := startProcess(t, q.s, 2, func(_ context.Context, msg jetstream.Msg) error {
		i := l.id(t, msg)
		l.seen[i].Add(1)
		l.done[i].Add(1)
		others.Add(1)
		return nil
	}, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	waitFor(t, 5*time.Second, "the other process handles all but the two blocked", func() bool { return others.Load() == n-2 })
	open()
	adv3Wait(t, done, 5*time.Second, "Consume returned after the gate opened")
	if !errors.Is(consumeErr, crew.ErrStopped) {
		t.Errorf("Consume returned %v, want crew.ErrStopped", consumeErr)
	}
	if s := started.Load(); s != 2 {
		t.Errorf("%d handlers started on the stopped leaf, want the 2 running at StopNow", s)
	}
	if err := pr.stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3PauseResumeStormLosesNothing attacks Pause and Resume of the pool, again and
// again, while Consume runs on it with a short ack wait. crew: "No task starts after Pause
// returns"; Consume keeps every held message alive with in-progress signals and settles each
// exactly once. So nothing is redelivered, and every message is acknowledged exactly once.
func TestAdvJS3PauseResumeStormLosesNothing(t *testing.T) {
	const ackWait = 200 * time.Millisecond
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: ackWait})
	n := 250
	if testing.Short() {
		n = 150
	}
	publish(t, q.js, n)
	l := newLedger(n)
	p := newPool(t, 4)
	sub := p.Sub(3, crew.WithPriority(2))
	var handled atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, sub, func(_ context.Context, msg jetstream.Msg) error {
			time.Sleep(time.Millisecond)
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	for round := 0; !l.allDone(); round++ {
		if round > 200 {
			t.Fatalf("not done after %d pause rounds: %d handled", round, handled.Load())
		}
		target := p
		if round%2 == 1 {
			target = sub
		}
		target.Pause()
		pause := time.Duration(round%3) * 10 * time.Millisecond
		if round%8 == 3 {
			pause = 2*ackWait + ackWait/4 // past the ack wait: only the in-progress signals keep them
		}
		time.Sleep(pause)
		before := handled.Load()
		target.Resume()
		// A real gap after Resume: some handlers finish, or the stream is done.
		waitFor(t, 10*time.Second, "handlers after Resume", func() bool { return handled.Load() >= before+10 || l.allDone() })
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	adv2Once(t, l)
	l.check(t)
	if ci := info(t, q.cons); ci.NumRedelivered != 0 {
		t.Errorf("%d messages redelivered; want none", ci.NumRedelivered)
	}
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3PanickingBackoffStillLetsConsumeReturn attacks a WithBackoff function that panics
// on the worker that ran the failed handler. Consume: once ctx ends it waits for the running
// handlers "at most for the shutdown timeout ... and returns"; Handler: a panic "goes on to
// the pool's panic handler". A panic in the backoff, called on that worker, must not keep
// Consume from returning: it returns within the shutdown timeout and a little more, and the
// message, never negatively acknowledged, is redelivered after its ack wait.
func TestAdvJS3PanickingBackoffStillLetsConsumeReturn(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 500 * time.Millisecond})
	publish(t, q.js, 1)
	var panics atomic.Int64
	p := newPool(t, 2, crew.WithPanicHandler(func(any, []byte) { panics.Add(1) }))
	var calls atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
			calls.Add(1)
			return errors.New("failing")
		}, crewjs.WithBackoff(func(int) time.Duration { panic("backoff panics") }),
			crewjs.WithShutdownTimeout(200*time.Millisecond), crewjs.WithPullExpiry(100*time.Millisecond))
	}()
	waitFor(t, 5*time.Second, "the backoff's panic reached the pool", func() bool { return panics.Load() >= 1 })
	cancel()
	select {
	case err := <-done:
		t.Logf("Consume returned %v after %d handler calls", err, calls.Load())
	case <-time.After(5 * time.Second):
		t.Fatal("Consume did not return within 5s of its context's end (shutdown timeout 200ms)")
	}
}

type adv3Key struct{}

// TestAdvJS3HandlerContextOnALeveledSubPoolPastTheShutdownTimeout attacks the handler's
// context on a leveled sub-pool of a sub-pool. Handler: "ctx carries the values of the context
// given to Consume, but it is not canceled when that context ends ... ctx is canceled when the
// shutdown timeout passes". ErrShutdownTimeout: "Their messages were neither acknowledged nor
// terminated: the server redelivers them after their ack wait. The handlers themselves keep
// running ... and what they return is ignored." So the handler sees the value, its context
// lives on after Consume's ends, is canceled at the shutdown timeout, Consume returns an error
// matching ErrShutdownTimeout, and the nil the handler then returns acknowledges nothing: the
// message comes back as its second delivery.
func TestAdvJS3HandlerContextOnALeveledSubPoolPastTheShutdownTimeout(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 400 * time.Millisecond})
	publish(t, q.js, 1)
	top := newPool(t, 2)
	leaf := top.Sub(2, crew.WithPriority(2)).Sub(1, crew.WithPriority(-1))
	gate, open := newGate(t)
	entered := make(chan context.Context, 1)
	returned := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), adv3Key{}, "v"))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- crewjs.Consume(ctx, q.cons, leaf, func(hctx context.Context, _ jetstream.Msg) error {
			entered <- hctx
			<-gate
			defer close(returned)
			return nil
		}, crewjs.WithShutdownTimeout(300*time.Millisecond), crewjs.WithPullExpiry(100*time.Millisecond))
	}()
	var hctx context.Context
	select {
	case hctx = <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no handler within 5s")
	}
	if v, _ := hctx.Value(adv3Key{}).(string); v != "v" {
		t.Errorf("the handler's context carries %q, want the value of Consume's context", v)
	}
	cancel()
	canceled := time.Now()
	time.Sleep(100 * time.Millisecond)
	// Checked only while the shutdown timeout cannot have passed: a sleep that overran it on
	// a loaded machine proves nothing either way.
	if err := hctx.Err(); err != nil && time.Since(canceled) < 250*time.Millisecond {
		t.Errorf("the handler's context ended %v with Consume's, before the shutdown timeout", err)
	}
	select {
	case <-hctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context not canceled within 5s of a 300ms shutdown timeout")
	}
	select {
	case err := <-done:
		if !errors.Is(err, crewjs.ErrShutdownTimeout) {
			t.Errorf("Consume returned %v, want ErrShutdownTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume did not return within 5s of the shutdown timeout")
	}
	open()
	adv3Wait(t, returned, 5*time.Second, "the handler returned")
	expectRedelivery(t, q.cons, 5*time.Second)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3ResizeDownOfABoundedLeveledSubPoolBurnsNoDelivery attacks the refusal rule
// where a bounded, non-blocking, leveled sub-pool and its parent shrink mid-run under an
// in-flight limit larger than the pool. Consume: "a message p refuses all the same ... waits
// in Consume until p accepts it: a message is never refused once pulled, so the consumer's
// MaxDeliver counts the times a handler ran". So every message is handled exactly once, on
// its first delivery, and never more handlers run than the new limit once the old ones end.
func TestAdvJS3ResizeDownOfABoundedLeveledSubPoolBurnsNoDelivery(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute, MaxDeliver: 1})
	n := 240
	if testing.Short() {
		n = 120
	}
	publish(t, q.js, n)
	l := newLedger(n)
	top := newPool(t, 4)
	sub := top.Sub(4, crew.WithPriority(1), crew.WithQueueSize(2), crew.WithNonBlocking())
	var handled atomic.Int64
	var running highWater
	var resized atomic.Bool
	var afterResize highWater
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, sub, func(_ context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			if resized.Load() {
				afterResize.enter()
				defer afterResize.exit()
			}
			time.Sleep(time.Millisecond)
			i := l.id(t, msg)
			if advDelivered(msg) != 1 {
				t.Errorf("message %d came with NumDelivered %d", i, advDelivered(msg))
			}
			l.seen[i].Add(1)
			l.done[i].Add(1)
			handled.Add(1)
			return nil
		}, crewjs.WithMaxInFlight(8), crewjs.WithPrefetch(4), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 10*time.Second, "a third handled", func() bool { return handled.Load() >= int64(n/3) })
	sub.Resize(2)
	top.Resize(1)
	// The handlers started before the Resize end within a few milliseconds.
	time.Sleep(100 * time.Millisecond)
	resized.Store(true)
	waitFor(t, 20*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if m := running.max.Load(); m > 4 {
		t.Errorf("%d handlers ran at once on a sub-pool of 4", m)
	}
	if m := afterResize.max.Load(); m > 1 {
		t.Errorf("%d handlers ran at once after the parent shrank to 1", m)
	}
	adv2Once(t, l)
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3NoInProgressSignalsRedeliversWhileTheHandlerRuns attacks the other side of the
// in-progress promise. WithInProgressInterval: "0 sends no in-progress signal: a message held
// longer than the ack wait is then redelivered while its handler still runs". So with the
// signals off, a handler blocked past the ack wait sees its message come back to the same
// Consume call as delivery 2 while it still runs; once both handlers return, the message is
// gone from the stream.
func TestAdvJS3NoInProgressSignalsRedeliversWhileTheHandlerRuns(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 300 * time.Millisecond})
	publish(t, q.js, 1)
	p := newPool(t, 2)
	gate, open := newGate(t)
	second := make(chan uint64, 1)
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, p, func(_ context.Context, msg jetstream.Msg) error {
			if d := advDelivered(msg); d == 1 {
				<-gate
			} else {
				second <- d
			}
			return nil
		}, crewjs.WithInProgressInterval(0), crewjs.WithPullExpiry(100*time.Millisecond))
	})
	select {
	case d := <-second:
		if d != 2 {
			t.Errorf("the message came back as delivery %d, want 2", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message was not redelivered within 5s while its handler blocked past a 300ms ack wait")
	}
	open()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3ResizeUpOfALeveledSubPoolGrowsTheInFlightLimit attacks the default in-flight
// limit on a leveled sub-pool grown mid-run while every handler blocks. WithMaxInFlight: "By
// default it is the pool's worker limit ([crew.Stats].MaxWorkers), read before each pull, so
// it follows [crew.Pool.Resize]"; crew: "Growing starts queued tasks without a new submit".
// So after the sub-pool grows from 1 to 6 (its parent has 8), six handlers run at once
// although none of the first ones returned, and once the gate opens every message is
// acknowledged exactly once.
func TestAdvJS3ResizeUpOfALeveledSubPoolGrowsTheInFlightLimit(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	const n = 30
	publish(t, q.js, n)
	l := newLedger(n)
	top := newPool(t, 8)
	sub := top.Sub(1, crew.WithPriority(1))
	gate, open := newGate(t)
	var running highWater
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, sub, func(_ context.Context, msg jetstream.Msg) error {
			running.enter()
			defer running.exit()
			<-gate
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 5*time.Second, "one handler running", func() bool { return running.now.Load() == 1 })
	sub.Resize(6)
	waitFor(t, 5*time.Second, "six handlers running after the sub-pool grew to 6", func() bool { return running.now.Load() == 6 })
	open()
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if m := running.max.Load(); m > 6 {
		t.Errorf("%d handlers ran at once on a sub-pool of 6", m)
	}
	adv2Once(t, l)
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3HooksOfALeveledSubPoolSeeEveryHandler attacks crew's hooks and counters through
// Consume's door, on a leveled sub-pool with panicking handlers. crew: "Hooks see every task
// of the pool whatever the door it came through"; Finished is called "after the task
// returned, called runtime.Goexit or panicked (before the panic handler), with ... Panicked
// set"; "once a pool is idle, Accepted equals" the sum of Completed, Panicked, Discarded,
// Returned and Skipped. So each handler run is one Queued, one Started and one Finished, the
// panicking ones marked, and the sub-pool's counters add up.
func TestAdvJS3HooksOfALeveledSubPoolSeeEveryHandler(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{})
	const n = 24
	publish(t, q.js, n)
	l := newLedger(n)
	var queued, started, finished, panicked atomic.Int64
	top := newPool(t, 4)
	sub := top.Sub(3, crew.WithPriority(1), crew.WithPanicHandler(func(any, []byte) {}), crew.WithHooks(crew.Hooks{
		Queued:  func(crew.TaskInfo) { queued.Add(1) },
		Started: func(crew.TaskInfo) { started.Add(1) },
		Finished: func(ti crew.TaskInfo) {
			finished.Add(1)
			if ti.Panicked {
				panicked.Add(1)
			}
		},
	}))
	var runs atomic.Int64
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, sub, func(_ context.Context, msg jetstream.Msg) error {
			runs.Add(1)
			i := l.id(t, msg)
			l.seen[i].Add(1)
			if i%4 == 0 && advDelivered(msg) == 1 {
				panic("first delivery")
			}
			l.done[i].Add(1)
			return nil
		}, crewjs.WithBackoff(func(int) time.Duration { return 0 }), crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 10*time.Second, "every message done", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sub.Wait()
	r := runs.Load()
	if r != n+n/4 {
		t.Errorf("%d handler runs, want %d", r, n+n/4)
	}
	// A task that found Consume ending returns without running the handler; none here, but
	// count what the pool ran, not what the handler saw.
	s := sub.Stats()
	if qd, st, f := queued.Load(), started.Load(), finished.Load(); qd != int64(s.Accepted) || st != f || st < r {
		t.Errorf("hooks: %d queued, %d started, %d finished; pool accepted %d, handlers ran %d", qd, st, f, s.Accepted, r)
	}
	if p := panicked.Load(); p != n/4 || s.Panicked != uint64(n/4) {
		t.Errorf("%d Finished with Panicked, Stats.Panicked %d; want %d", p, s.Panicked, n/4)
	}
	if sum := s.Completed + s.Panicked + s.Discarded + s.Returned + s.Skipped; sum != s.Accepted {
		t.Errorf("idle sub-pool: Accepted %d, Completed+Panicked+Discarded+Returned+Skipped %d", s.Accepted, sum)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}

// TestAdvJS3ContextEndsWhileTheServerIsAway attacks the shutdown while every pull fails: the
// server is gone, the client keeps reconnecting, and a handler still holds a message. Consume:
// failing pulls "are retried with a growing pause until ctx ends"; once ctx ends it waits for
// the pulls under way "at most the pull expiry" and for the running handlers "at most for the
// shutdown timeout". So it returns within the pull expiry plus the shutdown timeout and a
// margin, with an error matching ErrShutdownTimeout, and the message, whose handler
// never returned, comes back once the server does.
func TestAdvJS3ContextEndsWhileTheServerIsAway(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 500 * time.Millisecond})
	publish(t, q.js, 1)
	p := newPool(t, 2)
	gate, open := newGate(t)
	entered := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- crewjs.Consume(ctx, q.cons, p, func(context.Context, jetstream.Msg) error {
			entered <- struct{}{}
			<-gate
			return nil
		}, crewjs.WithShutdownTimeout(300*time.Millisecond), crewjs.WithPullExpiry(200*time.Millisecond))
	}()
	adv3Wait(t, entered, 5*time.Second, "the handler entered")
	q.s.stop()
	time.Sleep(300 * time.Millisecond) // pulls fail and are retried meanwhile
	begin := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, crewjs.ErrShutdownTimeout) {
			t.Errorf("Consume returned %v with its handler still blocked, want ErrShutdownTimeout", err)
		}
		if d := time.Since(begin); d > 3*time.Second {
			t.Errorf("Consume returned %v after its context ended (pull expiry 200ms, shutdown timeout 300ms)", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Consume did not return within 10s of its context's end with the server away")
	}
	open()
	q.s.start(t)
	expectRedelivery(t, consumerOn(t, q.js), 10*time.Second)
}

// TestAdvJS3StopNowOfOneSiblingLeavesTheOtherConsuming attacks two Consume calls on sibling
// leveled sub-pools of one pool, sharing one consumer, when one sibling is stopped with
// StopNow mid-run. crew: "Stopping a sub-pool leaves the parent and its siblings working".
// Consume: the stopped one returns crew.ErrStopped and releases at once what it had not
// started. So the other call goes on and handles the rest, including what the first
// released, long before the minute of ack wait, and every message is acknowledged once.
func TestAdvJS3StopNowOfOneSiblingLeavesTheOtherConsuming(t *testing.T) {
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Minute})
	n := 300
	if testing.Short() {
		n = 150
	}
	publish(t, q.js, n)
	l := newLedger(n)
	top := newPool(t, 4)
	first := top.Sub(2, crew.WithPriority(2))
	second := top.Sub(3, crew.WithPriority(1))
	var handled atomic.Int64
	handler := func(_ context.Context, msg jetstream.Msg) error {
		time.Sleep(time.Millisecond)
		i := l.id(t, msg)
		l.seen[i].Add(1)
		l.done[i].Add(1)
		handled.Add(1)
		return nil
	}
	var firstErr error
	_, firstDone := consumeInBackground(t, func(ctx context.Context) error {
		firstErr = crewjs.Consume(ctx, q.cons, first, handler, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
		return nil
	})
	stop, _ := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, q.cons, second, handler, crewjs.WithPullExpiry(100*time.Millisecond), failOnError(t))
	})
	waitFor(t, 10*time.Second, "a third handled", func() bool { return handled.Load() >= int64(n/3) })
	first.StopNow()
	adv3Wait(t, firstDone, 5*time.Second, "the stopped sibling's Consume returned")
	if !errors.Is(firstErr, crew.ErrStopped) {
		t.Errorf("the stopped sibling's Consume returned %v, want crew.ErrStopped", firstErr)
	}
	if top.Stopped() || second.Stopped() {
		t.Error("StopNow of a sub-pool stopped its parent or sibling")
	}
	waitFor(t, 10*time.Second, "every message done by the other sibling", l.allDone)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, q.st, q.cons)
}
