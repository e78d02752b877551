package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler processes one message for [Consume]. What it returns settles the message: nil
// acknowledges it, an error made with [Permanent] terminates it, an error made with
// [RetryAfter] negatively acknowledges it for redelivery after the delay it names, and any
// other error negatively acknowledges it for redelivery after the backoff delay
// ([WithBackoff]). A panic or runtime.Goexit counts as an error; the panic then goes on to
// the pool's panic handler ([crew.WithPanicHandler]). With [WithDeadLetter], a failure on the
// message's last delivery, or a Permanent error, first publishes the message to the dead
// letter subject.
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
// When p's queue is bounded ([crew.WithQueueSize]), it also asks for no more than p has room
// for, and a message p refuses all the same, because other work took the room, waits in
// Consume until p accepts it: a message is never refused once pulled, so the consumer's
// MaxDeliver counts the times a handler ran. Each message is settled exactly once, by what h
// returns (see [Handler]): an acknowledgement waits for the server's confirmation (the
// message's DoubleAck) unless [WithAsyncAck] says otherwise; negative acknowledgements and
// terminations do not wait. An acknowledgement the server did not confirm is reported to the
// error handler ([WithErrorHandler]), and the server redelivers the message after its ack
// wait. From the moment a message arrives until it is settled, Consume sends it an
// in-progress signal every half ack wait ([WithInProgressInterval]). h runs on p's workers,
// so p's limit bounds the handlers running at once, and p's panic handler sees their panics.
//
// When ctx ends, Consume sends no new pull and no handler starts any more (one whose start a
// worker decided a moment before may enter the handler a moment after). It waits for the
// pulls under way to end on the server (at most the pull expiry, [WithPullExpiry]), so that
// the messages they were sent reach it, and then negatively acknowledges, without delay,
// each message whose handler had not started, for another process to take at once. Consume
// then waits for the running handlers to return and their messages to be settled, at most
// for the shutdown timeout ([WithShutdownTimeout]), and returns nil if they all did.
// Otherwise it returns an error matching [ErrShutdownTimeout]: the messages still held are
// neither acknowledged nor terminated, and the server redelivers them after their ack wait.
// Either way, once Consume has returned it sends nothing more to the server on behalf of any
// message. A message released this way has used one of its deliveries.
//
// Pulls that fail for a while, as when the connection is lost and the client reconnects, are
// retried with a growing pause until ctx ends, and reported to the error handler. Consume
// gives up, shuts down as above and returns the error, wrapped, when the connection is closed
// for good (as a pull, an acknowledgement or an in-progress signal finds), when p is stopped
// ([crew.ErrStopped]), or when the consumer or its stream no longer exists: a pull or an
// acknowledgement that finds no responder makes Consume look the consumer up, and a lookup
// that finds neither returns an error matching jetstream.ErrConsumerDeleted and the lookup's
// own error (jetstream.ErrConsumerNotFound or jetstream.ErrStreamNotFound). Consume follows
// the consumer's MaxRequestBatch and MaxRequestExpires, read when it starts and again when
// the server refuses a pull for exceeding them; a pull refused although it kept within the
// limits just read ends Consume with the server's refusal.
//
// On a pool under [crew.CallerRuns], no handler runs on Consume's own goroutines: a message
// that finds the queue full waits for room as on a non-blocking pool.
//
// Consume returns an error at once, having pulled nothing, if the consumer does not use
// explicit acks or its configuration cannot be read, or if p has a bounded queue under
// [crew.DiscardOldest], which could drop a message's handler unseen; it returns nil at once
// if ctx has already ended. It panics if ctx, cons, p or h is nil. Consume is safe to call
// concurrently, with one or several consumers and pools.
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
	bounded := p.QueueSize() > 0
	if bounded && p.Overflow() == crew.DiscardOldest {
		return errDiscardingPool
	}
	r := &run{cons: cons, pool: p, h: h, cfg: newConfig(opts), changed: make(chan struct{}, 1)}
	r.callerRuns = bounded && p.Overflow() == crew.CallerRuns
	r.ackWait = info.Config.AckWait
	r.backoffList = info.Config.BackOff
	r.maxDeliver = info.Config.MaxDeliver
	r.limits(info)
	if r.cfg.shutdownTimeout < 0 {
		r.cfg.shutdownTimeout = r.ackWait
	}
	if r.cfg.orderBySubject {
		r.keyed = crew.NewKeyed[string](p)
	}
	return r.run(ctx)
}

// errDiscardingPool is what Consume returns for a pool that drops the oldest task of its full
// queue: a message whose handler was dropped would be held, unhandled, until Consume returns.
var errDiscardingPool = errors.New("crew/jetstream: the pool drops queued tasks (DiscardOldest): a message's handler could be dropped unseen; use Block, Reject or CallerRuns")

// run is the state of one Consume call.
type run struct {
	cons        jetstream.Consumer
	pool        *crew.Pool
	keyed       *crew.Keyed[string] // under WithOrderBySubject
	callerRuns  bool                // p runs a task on its submitter when its queue is full
	lastPull    chan struct{}       // under WithOrderBySubject: see inOrder
	h           Handler
	cfg         config
	ackWait     time.Duration
	backoffList []time.Duration
	maxDeliver  int

	// hctx is the handlers' context, also used for acknowledgements: canceled when Consume
	// abandons what it holds, so that a waiting acknowledgement returns.
	hctx     context.Context
	stopHctx context.CancelFunc
	// work ends when Consume takes no more work: no pull starts and no handler starts after
	// it, and a submit waiting for room gives up. stopping is set just before it ends, so
	// that a task that starts afterwards leaves its message to releaseWaiting.
	work     context.Context
	stopWork context.CancelFunc
	stopping atomic.Bool
	// The pulls under way are never ended on this side: a pull ended here drops the
	// messages still on their way to it, which would then wait out their ack wait on the
	// server and spend a delivery unhandled. Each ends on the server, at its expiry at the
	// latest, or when the consumer is gone; readers waits for them.
	readers    sync.WaitGroup
	changed    chan struct{} // a token whenever held or pulls goes down, or a lookup is due
	retryTimer *time.Timer

	// settling is held for reading while a message is settled or signaled, and for writing by
	// abandon, so that nothing is sent to the server for a message once Consume has returned.
	settling  sync.RWMutex
	abandoned bool

	mu   sync.Mutex
	held int // messages held plus slots reserved by pulls under way
	// unaccepted counts, of held, the reserved slots and the messages p has not accepted
	// yet; changed under mu, except that a message's acceptance takes one off without it.
	unaccepted atomic.Int64
	pulls      int           // pulls under way
	failures   int           // pulls that failed in a row
	retryAt    time.Time     // no pull before this, after a failure
	err        error         // why pulling stopped for good, if it was not ctx
	lookup     error         // a failure that asks whether the consumer still exists; nil: none
	lookupGen  int           // for a refused pull, the generation of the limits it was sent under
	maxBatch   int           // the consumer's MaxRequestBatch; 0: none
	maxExpires time.Duration // the consumer's MaxRequestExpires; 0: none
	limitsGen  int           // counts the changes of maxBatch and maxExpires
	live       delivery      // sentinel of the ring of messages held
	// The default prefetch follows the rate at which messages are settled (see prefetch).
	settled      int       // messages settled so far
	spanStart    time.Time // the start of the span the rate is measured over
	spanSettled  int       // settled at spanStart
	autoPrefetch int       // the default prefetch from the last span's rate; 0: none yet
}

func (r *run) run(ctx context.Context) error {
	r.hctx, r.stopHctx = context.WithCancel(context.WithoutCancel(ctx))
	defer r.stopHctx()
	r.work, r.stopWork = context.WithCancel(ctx)
	defer r.stopWork()
	r.live.prev, r.live.next = &r.live, &r.live
	r.spanStart = time.Now()
	unregister := context.AfterFunc(ctx, r.stop)
	defer unregister()

	for r.work.Err() == nil {
		if r.pool.Stopped() {
			// Noticed here too, not only by a submit: the tasks a StopNow handed back never
			// run, and their messages must be released without waiting for the next one.
			r.fail(fmt.Errorf("crew/jetstream: %w", crew.ErrStopped))
			break
		}
		if gen, err := r.takeLookup(); err != nil {
			r.confirm(err, gen)
			continue
		}
		n, expiry, gen, wait := r.reserve()
		if n == 0 {
			r.idle(wait)
			continue
		}
		// The server is given the expiry, and nats.go waits for the server's end of the
		// pull (or a second past the expiry): with a context's deadline instead, nats.go
		// gives the server 90% of the time and drops what arrives after the deadline.
		batch, err := r.cons.Fetch(n, jetstream.FetchMaxWait(expiry))
		if err != nil {
			r.endPull(n, 0, gen, err)
			continue
		}
		r.readers.Add(1)
		go r.read(batch, n, gen, r.inOrder())
	}
	r.stop()
	// The pulls under way end on the server, at their expiry at the latest; what they bring
	// meanwhile is held, and released below with the rest.
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

// stop ends taking work: no pull starts, and no handler starts.
func (r *run) stop() {
	r.stopping.Store(true)
	r.stopWork()
}

// releaseWaiting releases every message held whose handler has not started: the server
// offers it again at once, to this or another process. It runs once the pulls have ended on
// the server, so that a released message is not offered straight back to one of them.
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

// fail records why pulling stops for good and stops taking work.
func (r *run) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.stop()
}

// limits takes the consumer's request limits from info, and reports whether they changed.
func (r *run) limits(info *jetstream.ConsumerInfo) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := r.maxBatch != info.Config.MaxRequestBatch || r.maxExpires != info.Config.MaxRequestExpires
	if changed {
		r.maxBatch, r.maxExpires = info.Config.MaxRequestBatch, info.Config.MaxRequestExpires
		r.limitsGen++
	}
	return changed
}

// limit returns the in-flight limit.
func (r *run) limit() int {
	if r.cfg.maxInFlight > 0 {
		return r.cfg.maxInFlight
	}
	return r.pool.Stats().MaxWorkers
}

// The default prefetch holds about prefetchWork of work: what the handlers settle in that
// time at the rate of the last span of at least rateSpan, but no fewer messages than the
// in-flight limit, and no more than maxPrefetch unless the limit is larger. A span no shorter
// than prefetchWork never counts more than the messages settled in it, however they bunch
// up: handlers slower than the span hold little beyond the limit.
const (
	prefetchWork = 100 * time.Millisecond
	rateSpan     = prefetchWork
	maxPrefetch  = 500
)

// prefetch returns how many messages the run may hold beyond the in-flight limit, at time
// now. Callers hold r.mu.
func (r *run) prefetch(limit int, now time.Time) int {
	if r.cfg.prefetch >= 0 {
		return r.cfg.prefetch
	}
	if span := now.Sub(r.spanStart); span >= rateSpan {
		work := float64(r.settled-r.spanSettled) * float64(prefetchWork) / float64(span)
		r.autoPrefetch = max(limit, min(int(work), maxPrefetch))
		r.spanStart, r.spanSettled = now, r.settled
	}
	return max(limit, r.autoPrefetch)
}

// poolRoom is how many more tasks p accepts now without blocking or refusing, or -1 when its
// queue is unbounded (or a Keyed takes the tasks, whose queue is).
func (r *run) poolRoom() int {
	qs := r.pool.QueueSize()
	if qs <= 0 || r.keyed != nil {
		return -1
	}
	s := r.pool.Stats()
	return max(0, s.MaxWorkers-s.Running) + max(0, qs-s.Waiting)
}

// roomPoll is how long reserve waits before looking again when p has no room: room that
// other work frees on p is not signaled to the run.
const roomPoll = 2 * time.Millisecond

// reserve decides whether to pull now, how many messages, and the pull's expiry; gen is the
// generation of the request limits the pull keeps within. A pull asks for every free slot
// (no more than p has room for, and within the consumer's limits). It starts when at least a
// quarter of the slots are free, so that a pull brings a batch rather than a message or two
// (a round trip each), and also for fewer when no pull is under way and fewer messages are
// present than the in-flight limit, so that workers do not idle while the stream runs dry.
// At most two pulls are under way, one under WithOrderBySubject, which keeps the messages in
// the order the server sent them. When it returns 0, wait is how long to wait before trying
// again (0: until something changes).
func (r *run) reserve() (n int, expiry time.Duration, gen int, wait time.Duration) {
	limit := r.limit()
	room := r.poolRoom()
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.retryAt.Sub(now); d > 0 {
		return 0, 0, 0, d
	}
	slots := limit + r.prefetch(limit, now)
	free := slots - r.held
	maxPulls := 2
	if r.keyed != nil {
		maxPulls = 1
	}
	switch {
	case free <= 0 || r.pulls >= maxPulls:
		return 0, 0, 0, 0
	case free >= max(1, slots/4):
	case r.pulls == 0 && r.held-int(r.unaccepted.Load()) < limit:
	default:
		return 0, 0, 0, 0
	}
	if room >= 0 {
		if room -= int(r.unaccepted.Load()); room <= 0 {
			return 0, 0, 0, roomPoll
		}
		free = min(free, room)
	}
	if r.maxBatch > 0 {
		free = min(free, r.maxBatch)
	}
	expiry = r.cfg.pullExpiry
	if r.maxExpires > 0 {
		expiry = min(expiry, r.maxExpires)
	}
	r.held += free
	r.unaccepted.Add(int64(free))
	r.pulls++
	return free, expiry, r.limitsGen, 0
}

// idle waits until a slot frees up or a pull ends, for wait if it is positive, or until
// pulling stops; at most stoppedPoll, to notice a stopped pool.
func (r *run) idle(wait time.Duration) {
	if wait <= 0 || wait > stoppedPoll {
		wait = stoppedPoll
	}
	if r.retryTimer == nil {
		r.retryTimer = time.NewTimer(wait)
	} else {
		r.retryTimer.Reset(wait)
	}
	timeout := r.retryTimer.C
	select {
	case <-r.changed:
	case <-timeout:
	case <-r.work.Done():
	}
}

// stoppedPoll is how often an idle run looks whether its pool was stopped: a pool offers no
// signal for it.
const stoppedPoll = 100 * time.Millisecond

// read takes the messages of one pull as they arrive, each held from then on (track), and
// hands them to the pool on a goroutine of its own, in the order they came: a message that
// waits for room in the pool must not keep the ones behind it from their in-progress
// signals. Then it gives back the slots the pull reserved and did not fill. turn (see
// inOrder) orders the hand-overs of successive pulls.
func (r *run) read(batch jetstream.MessageBatch, reserved, gen int, turn order) {
	defer r.readers.Done()
	arrived := make(chan *delivery, reserved) // a pull brings at most reserved messages
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		if turn.after != nil {
			<-turn.after
		}
		for d := range arrived {
			r.dispatch(d)
		}
		if turn.done != nil {
			close(turn.done)
		}
	}()
	got := 0
	for msg := range batch.Messages() {
		got++
		arrived <- r.track(msg)
	}
	close(arrived)
	r.endPull(reserved-got, got, gen, batch.Error())
}

// order makes one pull's messages go to the pool only after the previous pull's went: after
// is closed when the previous pull's are handed over, and done when this one's are. Both are
// nil where order does not matter.
type order struct{ after, done chan struct{} }

// inOrder returns the order of the next pull: under WithOrderBySubject, where a subject's
// messages must reach the Keyed in the order the server sent them, across pulls too; none
// otherwise. Only the pulling loop calls it.
func (r *run) inOrder() order {
	if r.keyed == nil {
		return order{}
	}
	o := order{after: r.lastPull, done: make(chan struct{})}
	r.lastPull = o.done
	return o
}

// endPull ends a pull that left unused of its reserved slots free and received got messages;
// it was sent under the request limits of generation gen.
func (r *run) endPull(unused, got, gen int, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil // the pull's expiry, or the end of pulling
	}
	lookup := false
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrBadRequest):
		r.fail(fmt.Errorf("crew/jetstream: pulling messages: %w", err))
		err = nil
	case errors.Is(err, nats.ErrNoResponders):
		// The consumer or its stream may be gone, or the server restarting: ask the server.
		lookup = true
	case isLimitRefusal(err):
		// The consumer may have changed: ask the server.
		lookup = true
	}
	r.mu.Lock()
	r.held -= unused
	r.unaccepted.Add(int64(-unused))
	r.pulls--
	switch {
	case err != nil:
		r.failures++
		r.retryAt = time.Now().Add(retryPause(r.failures))
		if lookup && r.lookup == nil {
			r.lookup, r.lookupGen = err, gen
		}
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

// askLookup asks the pulling loop to look the consumer up, because of err.
func (r *run) askLookup(err error) {
	r.mu.Lock()
	if r.lookup == nil {
		r.lookup, r.lookupGen = err, r.limitsGen
	}
	r.mu.Unlock()
	r.signal()
}

// takeLookup returns, and clears, the failure that asks for a lookup, if any, with the
// generation of the limits it happened under.
func (r *run) takeLookup() (gen int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err = r.lookup
	r.lookup = nil
	return r.lookupGen, err
}

// confirm looks the consumer up after cause, a failure that suggests it is gone or changed,
// and ends the run if it is gone, or if cause is a pull refused although it kept within the
// limits the server reports: sent under the limits of generation gen, which are still the
// ones in force. A pull sent under older limits is only retried under the new ones.
func (r *run) confirm(cause error, gen int) {
	ctx, cancel := context.WithTimeout(r.work, lookupTimeout)
	defer cancel()
	info, err := r.cons.Info(ctx)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
		r.fail(fmt.Errorf("crew/jetstream: %w: %w", jetstream.ErrConsumerDeleted, err))
	case err != nil:
		if r.work.Err() == nil {
			r.report(fmt.Errorf("crew/jetstream: looking up the consumer after %v (retrying): %w", cause, err))
		}
	case !r.limits(info) && isLimitRefusal(cause) && gen == r.currentLimitsGen():
		r.fail(fmt.Errorf("crew/jetstream: the server refuses pulls within the consumer's limits: %w", cause))
	}
}

// currentLimitsGen returns the generation of the request limits in force.
func (r *run) currentLimitsGen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limitsGen
}

// isLimitRefusal reports whether err is the server's refusal of a pull that exceeded one of
// the consumer's request limits.
func isLimitRefusal(err error) bool {
	return strings.Contains(err.Error(), "Exceeded MaxRequest")
}

// lookupTimeout bounds one lookup of the consumer.
const lookupTimeout = 10 * time.Second

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

// track holds msg from its arrival: in the ring of messages held and, unless the run is
// stopping (releaseWaiting then releases it), with its in-progress signals.
func (r *run) track(msg jetstream.Msg) *delivery {
	d := &delivery{r: r, msg: msg}
	r.mu.Lock()
	d.prev, d.next = r.live.prev, &r.live
	d.prev.next, r.live.prev = d, d
	r.mu.Unlock()
	if !r.stopping.Load() {
		if d.every = r.progressInterval(d); d.every > 0 {
			d.mu.Lock()
			d.timer = time.AfterFunc(d.every, d.progress)
			d.mu.Unlock()
		}
	}
	return d
}

// dispatch submits the handler of d, a message held, to the pool. A pool that refuses it (its
// bounded queue full, under WithNonBlocking or CallerRuns) is asked again, with a growing
// pause, until it accepts or the run stops: the message stays held meanwhile, with its
// in-progress signals, and its delivery is not spent on the refusal.
func (r *run) dispatch(d *delivery) {
	defer r.accepted()
	if r.stopping.Load() {
		return // released by releaseWaiting
	}
	var err error
	for pause := roomPoll; ; pause = min(2*pause, maxRefusedPause) {
		switch {
		case r.keyed != nil:
			err = r.keyed.Submit(d.msg.Subject(), d.handle)
		case r.callerRuns:
			// A blocking submit would run the handler here, beyond p's limit: wait for
			// room as for a non-blocking pool instead.
			err = nil
			if !r.pool.TrySubmit(d.handle) {
				err = crew.ErrQueueFull
				if r.pool.Stopped() {
					err = crew.ErrStopped
				}
			}
		default:
			err = r.pool.SubmitContext(r.work, d.handle)
		}
		if !errors.Is(err, crew.ErrQueueFull) {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-r.work.Done():
			t.Stop()
			return // released by releaseWaiting
		}
	}
	if errors.Is(err, crew.ErrStopped) {
		r.fail(fmt.Errorf("crew/jetstream: %w", err)) // d is released by releaseWaiting
	}
	// Any other error: pulling stopped while the submit waited for room; d is released by
	// releaseWaiting.
}

// maxRefusedPause caps the pause between two submits of a message the pool refused.
const maxRefusedPause = 20 * time.Millisecond

// accepted counts one message of a pull as accepted by the pool, or as never to be.
func (r *run) accepted() { r.unaccepted.Add(-1) }

// progressInterval is how often d's message is signaled.
func (r *run) progressInterval(d *delivery) time.Duration {
	if r.cfg.progressInterval >= 0 {
		return r.cfg.progressInterval
	}
	ackWait := r.ackWait
	if n := len(r.backoffList); n > 0 {
		ackWait = r.backoffList[min(d.attempt(), n)-1]
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

// nakDelay is the delay to send with the nak of a message delivered attempt times, for the
// server to redeliver it delay later. On a consumer with a BackOff list, nats-server starts
// a nak's delay an ack wait in the past and then waits out the BackOff entry of the
// message's deliveries so far: sent as is, delay comes back after delay - AckWait +
// BackOff[attempt-1] (the last entry past the list's end). The delay sent makes up for it,
// and is at least a nanosecond, since 0 would be a plain nak: no redelivery comes sooner
// than BackOff[attempt-1] - AckWait.
func (r *run) nakDelay(delay time.Duration, attempt int) time.Duration {
	n := len(r.backoffList)
	if n == 0 {
		return delay
	}
	return max(delay+r.ackWait-r.backoffList[min(max(attempt, 1), n)-1], 1)
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
