package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler processes one message for [Consume]. What it returns settles the message: nil
// acknowledges it, an error made with [Permanent] terminates it, and any other error
// negatively acknowledges it for redelivery after the backoff delay ([WithBackoff]). A panic or
// runtime.Goexit counts as an error; the panic then goes on to the pool's panic handler
// ([crew.WithPanicHandler]).
//
// ctx carries the values of the context given to Consume, but it is not canceled when that
// context ends: a handler running then may finish its work within the shutdown timeout
// ([WithShutdownTimeout]). ctx is canceled when the shutdown timeout passes or Consume returns
// an error.
//
// A handler may settle msg itself (Ack, Nak, Term and their variants); Consume then leaves the
// message as the handler settled it. It may call msg.InProgress at any time.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// Consume pulls messages from cons and runs h for each of them on p, until ctx ends or
// pulling fails for good. The consumer must be a pull consumer with explicit acks
// (jetstream.AckExplicitPolicy); several processes, or several Consume calls, may share one
// durable consumer, and the server then hands each message to one of them at a time.
//
// Consume holds at most the in-flight limit ([WithMaxInFlight], by default p's worker limit)
// plus the prefetch ([WithPrefetch]) of messages at once: it asks the server for no more
// messages than it has free slots, and a slot is free again once its message is settled.
// Each message is settled exactly once, by what h returns (see [Handler]): an acknowledgement
// waits for the server's confirmation (the message's DoubleAck) unless [WithAsyncAck] says
// otherwise; negative acknowledgements and terminations do not wait. An acknowledgement the
// server did not confirm is reported to the error handler ([WithErrorHandler]), and the
// server redelivers the message after its ack wait. From
// the moment a message arrives until it is settled, Consume sends it an in-progress signal
// every half ack wait ([WithInProgressInterval]). h runs on p's workers, so p's limit bounds
// the handlers running at once, and p's panic handler sees their panics.
//
// When ctx ends, Consume stops pulling and no handler starts any more: each message whose
// handler had not started is negatively acknowledged without delay, for another process to
// take. Consume then waits for the running handlers to return and their messages to be
// settled, at most for the shutdown timeout ([WithShutdownTimeout]), and returns nil if they
// all did. Otherwise it returns an error matching [ErrShutdownTimeout]: the messages still
// held are neither acknowledged nor terminated, and the server redelivers them after their
// ack wait. Either way, once Consume has returned it sends nothing more to the server on
// behalf of any message.
//
// Pulls that fail for a while, as when the connection is lost and the client reconnects, are
// retried with a growing pause until ctx ends, and reported to the error handler. Consume
// gives up, shuts down as above and returns the error, wrapped, when the connection is closed
// for good (as a pull, an acknowledgement or an in-progress signal finds), the consumer is
// deleted, or p is stopped ([crew.ErrStopped]). A message p refuses
// because its bounded queue is full and p does not block ([crew.WithNonBlocking]) is
// negatively acknowledged with the backoff delay.
//
// Consume returns an error at once, having pulled nothing, if the consumer does not use
// explicit acks or its configuration cannot be read; it returns nil at once if ctx has
// already ended. It panics if ctx, cons, p or h is nil. Consume is safe to call concurrently,
// with one or several consumers and pools.
func Consume(ctx context.Context, cons jetstream.Consumer, p *crew.Pool, h Handler, opts ...Option) error {
	switch {
	case ctx == nil:
		panic("crew/jetstream: Consume: ctx must not be nil")
	case cons == nil:
		panic("crew/jetstream: Consume: cons must not be nil")
	case p == nil:
		panic("crew/jetstream: Consume: p must not be nil")
	case h == nil:
		panic("crew/jetstream: Consume: h must not be nil")
	}
	if ctx.Err() != nil {
		return nil
	}
	info := cons.CachedInfo()
	if info == nil {
		var err error
		if info, err = cons.Info(ctx); err != nil {
			return fmt.Errorf("crew/jetstream: reading the consumer's configuration: %w", err)
		}
	}
	if info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		return fmt.Errorf("crew/jetstream: consumer %q uses %v, want explicit acks", info.Name, info.Config.AckPolicy)
	}
	r := &run{cons: cons, pool: p, h: h, cfg: newConfig(opts), changed: make(chan struct{}, 1)}
	r.ackWait = info.Config.AckWait
	r.backoffList = info.Config.BackOff
	r.maxBatch = info.Config.MaxRequestBatch
	if r.cfg.shutdownTimeout < 0 {
		r.cfg.shutdownTimeout = r.ackWait
	}
	return r.run(ctx)
}

// run is the state of one Consume call.
type run struct {
	cons        jetstream.Consumer
	pool        *crew.Pool
	h           Handler
	cfg         config
	ackWait     time.Duration
	backoffList []time.Duration
	maxBatch    int

	// hctx is the handlers' context, also used for acknowledgements: canceled when Consume
	// abandons what it holds, so that a waiting acknowledgement returns.
	hctx     context.Context
	stopHctx context.CancelFunc
	// pullCtx ends pulls and submits; stopping is set just before it is canceled, so that a
	// task that starts afterwards leaves its message to releaseWaiting instead of running the
	// handler.
	pullCtx    context.Context
	stopPulls  context.CancelFunc
	stopping   atomic.Bool
	readers    sync.WaitGroup
	changed    chan struct{} // a token whenever held or pulls goes down
	retryTimer *time.Timer

	// settling is held for reading while a message is settled or signaled, and for writing by
	// abandon, so that nothing is sent to the server for a message once Consume has returned.
	settling  sync.RWMutex
	abandoned bool

	mu       sync.Mutex
	held     int       // messages held plus slots reserved by pulls under way
	pulls    int       // pulls under way
	failures int       // pulls that failed in a row
	retryAt  time.Time // no pull before this, after a failure
	err      error     // why pulling stopped for good, if it was not ctx
	live     delivery  // sentinel of the ring of messages held
}

// delivery is one message held by a run, from its arrival until it is settled.
type delivery struct {
	r       *run
	msg     jetstream.Msg
	attempt int // the message's delivery count, 1 the first time
	every   time.Duration

	mu      sync.Mutex
	started bool        // the handler has been called
	settled bool        // the outcome is decided
	timer   *time.Timer // in-progress signals, or nil

	prev, next *delivery // in r.live, guarded by r.mu
}

func (r *run) run(ctx context.Context) error {
	r.hctx, r.stopHctx = context.WithCancel(context.WithoutCancel(ctx))
	defer r.stopHctx()
	r.pullCtx, r.stopPulls = context.WithCancel(ctx)
	defer r.stopPulls()
	r.live.prev, r.live.next = &r.live, &r.live
	unregister := context.AfterFunc(ctx, r.stop)
	defer unregister()

	for r.pullCtx.Err() == nil {
		n, wait := r.reserve()
		if n == 0 {
			r.idle(wait)
			continue
		}
		fctx, cancel := context.WithTimeout(r.pullCtx, r.cfg.pullExpiry)
		batch, err := r.cons.Fetch(n, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			r.endPull(n, 0, err)
			continue
		}
		r.readers.Add(1)
		go r.read(batch, n, cancel)
	}
	r.stop()
	r.readers.Wait()
	if r.retryTimer != nil {
		r.retryTimer.Stop()
	}
	r.releaseWaiting()

	r.mu.Lock()
	err := r.err
	r.mu.Unlock()
	if derr := r.drain(); derr != nil {
		return errors.Join(err, derr)
	}
	return err
}

// stop ends pulling: no pull starts, pulls under way are canceled, and no handler starts.
func (r *run) stop() {
	r.stopping.Store(true)
	r.stopPulls()
}

// releaseWaiting releases every message held whose handler has not started: the server
// offers it again, to this or another process, after releaseDelay. It runs once the pulls
// have ended on this side. The server may still count a canceled pull as waiting for a moment
// (its unsubscription is sent after the pull ends, on a goroutine of the client): a message
// released without delay could be offered to that dead pull at once, and would then wait out
// its ack wait. TestConsumeReturnsErrStoppedWhenThePoolIsStopped fails without the delay.
func (r *run) releaseWaiting() {
	r.mu.Lock()
	var held []*delivery
	for d := r.live.next; d != &r.live; d = d.next {
		held = append(held, d)
	}
	r.mu.Unlock()
	for _, d := range held {
		if d.finish(true) {
			d.send(release, nil)
		}
	}
}

// releaseDelay is how long a released message waits on the server before it is offered
// again; see releaseWaiting.
const releaseDelay = 100 * time.Millisecond

// fail records why pulling stops for good and stops it.
func (r *run) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.stop()
}

// slots is how many messages the run may hold: the in-flight limit plus the prefetch.
func (r *run) slots() int {
	limit := r.cfg.maxInFlight
	if limit == 0 {
		limit = r.pool.Stats().MaxWorkers
	}
	prefetch := r.cfg.prefetch
	if prefetch < 0 {
		prefetch = (limit + 3) / 4
	}
	return limit + prefetch
}

// reserve decides whether to pull now, and how many messages. A pull asks for every free
// slot, and starts when no pull is under way or at least half the slots are free: a pull for
// one or two slots at a time would cost a round trip per message, while waiting for the last
// pull to end would leave slots idle until its expiry when the stream runs dry. When it
// returns 0, wait is how long to wait before trying again (0: until something changes).
func (r *run) reserve() (n int, wait time.Duration) {
	slots := r.slots()
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := time.Until(r.retryAt); d > 0 {
		return 0, d
	}
	free := slots - r.held
	if free <= 0 || (r.pulls > 0 && free < (slots+1)/2) {
		return 0, 0
	}
	if r.maxBatch > 0 && free > r.maxBatch {
		free = r.maxBatch
	}
	r.held += free
	r.pulls++
	return free, 0
}

// idle waits until a slot frees up or a pull ends, for wait if it is positive, or until
// pulling stops.
func (r *run) idle(wait time.Duration) {
	var timeout <-chan time.Time
	if wait > 0 {
		if r.retryTimer == nil {
			r.retryTimer = time.NewTimer(wait)
		} else {
			r.retryTimer.Reset(wait)
		}
		timeout = r.retryTimer.C
	}
	select {
	case <-r.changed:
	case <-timeout:
	case <-r.pullCtx.Done():
	}
}

// read hands the messages of one pull to the pool, then gives back the slots the pull
// reserved and did not fill.
func (r *run) read(batch jetstream.MessageBatch, reserved int, cancel context.CancelFunc) {
	defer r.readers.Done()
	defer cancel()
	got := 0
	for msg := range batch.Messages() {
		got++
		r.dispatch(msg)
	}
	r.endPull(reserved-got, got, batch.Error())
}

// endPull ends a pull that left unused of its reserved slots free and received got messages.
func (r *run) endPull(unused, got int, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil // the pull's expiry, or the end of pulling
	}
	if err != nil && lastingPullError(err) {
		r.fail(fmt.Errorf("crew/jetstream: pulling messages: %w", err))
		err = nil
	}
	r.mu.Lock()
	r.held -= unused
	r.pulls--
	switch {
	case err != nil:
		r.failures++
		r.retryAt = time.Now().Add(retryPause(r.failures))
	case got > 0 || r.failures > 0:
		r.failures = 0
		r.retryAt = time.Time{}
	}
	r.mu.Unlock()
	r.signal()
	if err != nil {
		r.report(fmt.Errorf("crew/jetstream: pulling messages (retrying): %w", err))
	}
}

// lastingPullError reports whether a pull error means that retrying cannot help.
func lastingPullError(err error) bool {
	return errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrBadRequest)
}

// retryPause is the pause before the next pull after n failed pulls in a row: 50ms, doubling
// up to 2s. A pull fails at once while the server restarts, so without a pause the loop
// would spin; the cap keeps the recovery prompt once the server is back.
func retryPause(n int) time.Duration {
	d := 50 * time.Millisecond
	for i := 1; i < n && d < 2*time.Second; i++ {
		d *= 2
	}
	return min(d, 2*time.Second)
}

func (r *run) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *run) report(err error) {
	if r.cfg.errorHandler != nil {
		r.cfg.errorHandler(err)
	}
}

// dispatch takes one message into the run and submits its handler to the pool.
func (r *run) dispatch(msg jetstream.Msg) {
	d := &delivery{r: r, msg: msg, attempt: 1}
	if meta, err := msg.Metadata(); err == nil && meta.NumDelivered > 0 {
		d.attempt = int(meta.NumDelivered)
	}
	r.mu.Lock()
	d.prev, d.next = r.live.prev, &r.live
	d.prev.next, r.live.prev = d, d
	r.mu.Unlock()
	if r.stopping.Load() {
		return // released by releaseWaiting
	}
	if d.every = r.progressInterval(d.attempt); d.every > 0 {
		d.mu.Lock()
		d.timer = time.AfterFunc(d.every, d.progress)
		d.mu.Unlock()
	}
	err := r.pool.SubmitContext(r.pullCtx, d.handle)
	switch {
	case err == nil:
	case errors.Is(err, crew.ErrQueueFull):
		d.settle(retry, err)
	case errors.Is(err, crew.ErrStopped):
		r.fail(fmt.Errorf("crew/jetstream: %w", err)) // d is released by releaseWaiting
	default: // pulling stopped while the submit waited for room; d is released by releaseWaiting
	}
}

// progressInterval is how often a message delivered for the attempt-th time is signaled.
func (r *run) progressInterval(attempt int) time.Duration {
	if r.cfg.progressInterval >= 0 {
		return r.cfg.progressInterval
	}
	ackWait := r.ackWait
	if n := len(r.backoffList); n > 0 {
		ackWait = r.backoffList[min(attempt, n)-1]
	}
	return ackWait / 2
}

// backoff is the delay before a failed message is redelivered.
func (r *run) backoff(attempt int) time.Duration {
	if r.cfg.backoff != nil {
		return r.cfg.backoff(attempt)
	}
	if n := len(r.backoffList); n > 0 {
		return r.backoffList[min(attempt, n)-1]
	}
	d := time.Second
	for i := 1; i < attempt && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// handle runs the handler for d's message on a worker and settles the message.
func (d *delivery) handle() {
	r := d.r
	d.mu.Lock()
	if d.settled || r.stopping.Load() {
		d.mu.Unlock()
		return // released by releaseWaiting, before or after this
	}
	d.started = true
	d.mu.Unlock()
	returned := false
	defer func() {
		// A panic goes on to the pool's panic handler after this; runtime.Goexit ends the
		// task. Either way the message is retried and its slot freed.
		if !returned {
			d.settle(retry, errHandlerDidNotReturn)
		}
	}()
	err := r.h(r.hctx, d.msg)
	returned = true
	switch {
	case err == nil:
		d.settle(ack, nil)
	case IsPermanent(err):
		d.settle(term, err)
	default:
		d.settle(retry, err)
	}
}

var errHandlerDidNotReturn = errors.New("crew/jetstream: handler panicked or called runtime.Goexit")

// outcome is how a message is settled.
type outcome int

const (
	ack     outcome = iota // DoubleAck, or Ack under WithAsyncAck
	term                   // TermWithReason
	retry                  // NakWithDelay, after the backoff delay
	release                // NakWithDelay(releaseDelay): the handler never ran
)

func (o outcome) String() string {
	return [...]string{"acknowledging", "terminating", "negatively acknowledging", "releasing"}[o]
}

// settle tells the server what became of d's message, once, and frees its slot.
func (d *delivery) settle(o outcome, cause error) {
	if d.finish(false) {
		d.send(o, cause)
	}
}

// finish marks d settled and stops its in-progress signals. It reports false, and does
// nothing, if d was settled already, or if onlyWaiting is set and d's handler has started.
func (d *delivery) finish(onlyWaiting bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled || (onlyWaiting && d.started) {
		return false
	}
	d.settled = true
	if d.timer != nil {
		d.timer.Stop()
	}
	return true
}

// send tells the server the outcome o of d's message, which finish has marked settled, and
// frees its slot.
func (d *delivery) send(o outcome, cause error) {
	r := d.r
	var err error
	r.settling.RLock()
	if !r.abandoned {
		switch o {
		case ack:
			if r.cfg.asyncAck {
				err = d.msg.Ack()
			} else {
				err = d.msg.DoubleAck(r.hctx)
			}
		case term:
			err = d.msg.TermWithReason(cause.Error())
		case retry:
			if delay := r.backoff(d.attempt); delay > 0 {
				err = d.msg.NakWithDelay(delay)
			} else {
				err = d.msg.Nak()
			}
		case release:
			err = d.msg.NakWithDelay(releaseDelay)
		}
	}
	r.settling.RUnlock()

	r.mu.Lock()
	d.prev.next, d.next.prev = d.next, d.prev
	r.held--
	r.mu.Unlock()
	r.signal()
	if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		r.settleFailed(fmt.Errorf("crew/jetstream: %v message %s: %w", o, d.msg.Reply(), err))
	}
}

// settleFailed reports a failed acknowledgement or signal. A closed connection also ends
// the run: with every slot taken by a handler, no pull would notice it.
func (r *run) settleFailed(err error) {
	if errors.Is(err, nats.ErrConnectionClosed) {
		r.fail(err)
	}
	r.report(err)
}

// progress sends an in-progress signal for d's message and schedules the next one.
func (d *delivery) progress() {
	r := d.r
	var err error
	d.mu.Lock()
	if !d.settled {
		r.settling.RLock()
		if !r.abandoned {
			err = d.msg.InProgress()
			d.timer.Reset(d.every)
		}
		r.settling.RUnlock()
	}
	d.mu.Unlock()
	if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		r.settleFailed(fmt.Errorf("crew/jetstream: signaling message %s in progress: %w", d.msg.Reply(), err))
	}
}

// drain waits, at most for the shutdown timeout, until every message held is settled. At the
// timeout it abandons what is left.
func (r *run) drain() error {
	timer := time.NewTimer(r.cfg.shutdownTimeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		held := r.held
		r.mu.Unlock()
		if held == 0 {
			return nil
		}
		select {
		case <-r.changed:
		case <-timer.C:
			return r.abandon()
		}
	}
}

// abandon gives up on the messages still held: it cancels the handlers' context, waits for
// settlements under way, and from then on sends nothing for any message.
func (r *run) abandon() error {
	r.stopHctx()
	r.settling.Lock()
	r.abandoned = true
	r.settling.Unlock()
	r.mu.Lock()
	held := r.held
	var timers []*delivery
	for d := r.live.next; d != &r.live; d = d.next {
		timers = append(timers, d)
	}
	r.mu.Unlock()
	for _, d := range timers {
		d.mu.Lock()
		if d.timer != nil {
			d.timer.Stop()
		}
		d.mu.Unlock()
	}
	return fmt.Errorf("%w: %d messages left for redelivery", ErrShutdownTimeout, held)
}
