package worker

import (
	"math"
	"sync"
	"time"
)

// The start-rate limit: a token bucket checked by mayStart (through Open).
//
// A throttled task waits in the queue, never on a worker: mayStart says no and the task stays
// queued, and when the bucket runs dry one timer is armed for the moment the next token falls due;
// it calls dispatch. Sub-pools need no call: their forwarded workers wait in this engine's queue.
// The bucket starts full, holds at most burst tokens and gains perSecond a second, and every start
// takes one, so over any window of length T at most burst + perSecond·T tasks start. A token taken
// for a start that then finds no worker free is not given back: the bound holds, the rate only
// dips.
//
// The bucket has its own small lock rather than the engine's, because a sub-pool's starts
// take tokens from its ancestors' buckets while holding its own engine's lock; the bucket's
// lock is a leaf, under which no other lock is taken.

type bucket struct {
	mu        sync.Mutex
	perSecond float64
	burst     float64
	tokens    float64
	last      time.Time
	now       func() time.Time
	wake      func() // called when a token is due, by the timer's goroutine
	timer     *time.Timer
	armed     bool
	stopped   bool
}

// take takes one token if there is one. If not, it arms the timer for the next token and
// reports false.
func (b *bucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if el := now.Sub(b.last); el > 0 {
		b.tokens = math.Min(b.burst, b.tokens+el.Seconds()*b.perSecond)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	if !b.armed && !b.stopped {
		b.armed = true
		// Rounded up, so that the token is there when the timer fires.
		d := time.Duration(math.Ceil((1 - b.tokens) / b.perSecond * float64(time.Second)))
		if b.timer == nil {
			b.timer = time.AfterFunc(d, b.fire)
		} else {
			b.timer.Reset(d)
		}
	}
	return false
}

func (b *bucket) fire() {
	b.mu.Lock()
	b.armed = false
	stopped := b.stopped
	b.mu.Unlock()
	if !stopped {
		b.wake()
	}
}

// stop disarms the timer for good.
func (b *bucket) stop() {
	b.mu.Lock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
}

// SetRate limits task starts to perSecond a second with bursts of burst; +Inf removes the
// limit. A new bucket starts full. Starts the change allows begin at once.
func (e *Engine[T]) SetRate(perSecond float64, burst int) {
	e.mu.Lock()
	old := e.rate.Load()
	if math.IsInf(perSecond, 1) {
		e.rate.Store(nil)
	} else {
		b := &bucket{perSecond: perSecond, burst: float64(burst), tokens: float64(burst),
			now: e.cfg.Now, wake: e.rateDue}
		b.last = b.now()
		if old != nil {
			old.mu.Lock()
			b.tokens = math.Min(old.tokens, b.burst)
			b.last = old.last
			old.mu.Unlock()
		}
		e.rate.Store(b)
		if e.stopped && e.alive == 0 && e.pending == 0 {
			b.stopped = true
		}
	}
	e.regate()
	starts := e.dispatch()
	e.mu.Unlock()
	if old != nil {
		old.stop()
	}
	e.launchAll(starts)
}

// rateDue is the bucket timer's call: a token is due, so start what may start.
func (e *Engine[T]) rateDue() {
	e.Redispatch()
}

// stopRate disarms the rate timer of an engine that has exited. Callers hold e.mu.
func (e *Engine[T]) stopRate() {
	if b := e.rate.Load(); b != nil {
		b.stop()
	}
}
