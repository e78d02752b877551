package jetstream

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// delivery is one message held by a run, from its arrival until it is settled.
type delivery struct {
	r        *run
	msg      jetstream.Msg
	attempts int // the message's delivery count, 1 the first time; 0 until read
	every    time.Duration

	mu      sync.Mutex
	started bool        // the handler has been called
	settled bool        // the outcome is decided
	timer   *time.Timer // in-progress signals, or nil

	prev, next *delivery // in r.live, guarded by r.mu
}

// attempt returns the message's delivery count, 1 the first time. It is read from the
// message's metadata when first needed, which a message acknowledged at its first try
// never is. Only one goroutine at a time works on a delivery (the one reading the pull,
// then the worker), so the cached count needs no lock.
func (d *delivery) attempt() int {
	if d.attempts == 0 {
		d.attempts = 1
		if meta, err := d.msg.Metadata(); err == nil && meta.NumDelivered > 0 {
			d.attempts = int(meta.NumDelivered)
		}
	}
	return d.attempts
}

// handle runs the handler for d's message on a worker and settles the message.
func (d *delivery) handle() {
	r := d.r
	d.mu.Lock()
	// work ends the moment ctx does; stopping is set by a goroutine of its own after that.
	if d.settled || r.work.Err() != nil {
		d.mu.Unlock()
		return // released by releaseWaiting, before or after this
	}
	d.started = true
	d.mu.Unlock()
	returned := false
	defer func() {
		// A panic goes on to the pool's panic handler after this; runtime.Goexit ends the
		// task. Either way the message counts as failed and its slot is freed.
		if !returned {
			d.failed(errHandlerDidNotReturn)
		}
	}()
	err := r.h(r.hctx, d.msg)
	returned = true
	if err == nil {
		d.settle(ack, nil)
	} else {
		d.failed(err)
	}
}

var errHandlerDidNotReturn = errors.New("crew/jetstream: handler panicked or called runtime.Goexit")

// failed settles d's message after its handler failed with err: a dead letter first when the
// run has a dead-letter subject and this delivery is the message's last (err is Permanent,
// or the consumer's MaxDeliver is reached), else a termination for a Permanent error and a
// retry for the others.
func (d *delivery) failed(err error) {
	r := d.r
	permanent := IsPermanent(err)
	last := permanent || (r.maxDeliver > 0 && d.attempt() >= r.maxDeliver)
	switch {
	case last && r.cfg.deadLetter != "":
		d.settle(deadLetter, err)
	case permanent:
		d.settle(term, err)
	default:
		d.settle(retry, err)
	}
}

// outcome is how a message is settled.
type outcome int

const (
	ack        outcome = iota // DoubleAck, or Ack under WithAsyncAck
	term                      // TermWithReason
	retry                     // NakWithDelay, after the backoff delay or RetryAfter's
	release                   // Nak: the handler never ran
	deadLetter                // publish to the dead-letter subject, then TermWithReason
)

func (o outcome) String() string {
	return [...]string{"acknowledging", "terminating", "negatively acknowledging", "releasing", "dead-lettering"}[o]
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
// frees its slot. The slot is freed and the lock released even if the backoff function or
// the dead-letter stream's client panics: the panic goes on to the pool's panic handler, the
// message is left unsettled for the server to redeliver after its ack wait, and Consume
// still returns (TestAdvJS3PanickingBackoffStillLetsConsumeReturn).
func (d *delivery) send(o outcome, cause error) {
	r := d.r
	var err error
	defer func() {
		r.mu.Lock()
		d.prev.next, d.next.prev = d.next, d.prev
		r.held--
		r.settled++
		r.mu.Unlock()
		r.signal()
		if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			r.settleFailed(fmt.Errorf("crew/jetstream: %v message %s: %w", o, d.msg.Reply(), err))
		}
	}()
	r.settling.RLock()
	defer r.settling.RUnlock()
	if r.abandoned {
		return
	}
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
		err = d.retry(cause)
	case release:
		err = d.msg.Nak()
	case deadLetter:
		if err = d.publishDeadLetter(cause); err != nil {
			// Not terminated: the server keeps the message, and redelivers it if it
			// has deliveries left.
			err = errors.Join(err, d.retry(cause))
		} else {
			err = d.msg.TermWithReason(cause.Error())
		}
	}
}

// retry negatively acknowledges d's message after a failure with cause, with the delay
// RetryAfter named, or else the backoff delay.
func (d *delivery) retry(cause error) error {
	delay, ok := retryDelay(cause)
	if !ok {
		delay = d.r.backoff(d.attempt())
	}
	if delay > 0 {
		return d.msg.NakWithDelay(d.r.nakDelay(delay, d.attempt()))
	}
	return d.msg.Nak()
}

// The headers a dead letter carries besides the message's own.
const (
	headerError      = "Crew-Error"
	headerDeliveries = "Crew-Delivery-Count"
	headerSubject    = "Crew-Subject"
	headerStream     = "Crew-Stream"
	headerSequence   = "Crew-Stream-Sequence"
)

// publishDeadLetter publishes d's message to the run's dead-letter subject with cause, and
// waits for the stream that stores it to confirm.
func (d *delivery) publishDeadLetter(cause error) error {
	r := d.r
	h := nats.Header{}
	for k, v := range d.msg.Headers() {
		// Headers the server acts on at publish (expected sequences, rollups, TTLs, ...)
		// would make it refuse or reshape the dead letter.
		if strings.HasPrefix(strings.ToLower(k), "nats-") && !strings.EqualFold(k, "Nats-Msg-Id") {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	h.Set(headerError, cause.Error())
	h.Set(headerDeliveries, strconv.Itoa(d.attempt()))
	h.Set(headerSubject, d.msg.Subject())
	if meta, err := d.msg.Metadata(); err == nil {
		h.Set(headerStream, meta.Stream)
		h.Set(headerSequence, strconv.FormatUint(meta.Sequence.Stream, 10))
	}
	_, err := r.cfg.deadLetterJS.PublishMsg(r.hctx, &nats.Msg{Subject: r.cfg.deadLetter, Header: h, Data: d.msg.Data()})
	if err != nil {
		return fmt.Errorf("publishing the dead letter to %s: %w", r.cfg.deadLetter, err)
	}
	return nil
}

// settleFailed reports a failed acknowledgement or signal. A closed connection also ends
// the run: with every slot taken by a handler, no pull would notice it. No responder asks the
// pulling loop to look the consumer up: it may be gone.
func (r *run) settleFailed(err error) {
	switch {
	case errors.Is(err, nats.ErrConnectionClosed):
		r.fail(err)
	case errors.Is(err, nats.ErrNoResponders):
		r.askLookup(err)
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
