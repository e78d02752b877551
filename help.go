package crew

import (
	"context"
	"sync"
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// Waits that help. A function running on a pool holds one of its slots; when it waits for
// work it gave the same pool (or a pool above its own), and every slot is held by such a
// waiter, nothing is left to run that work. So a wait made from the context crew gave the
// function (a call: life.go) runs the functions it waits for that no worker has taken yet,
// itself, on the waiting goroutine, inside the slot it holds: the slot is lent, never a new
// one taken, so the limit holds. The wait claims each function first (claim.lend); a worker
// that reaches the function's place in the queue later finds it claimed and drops it. A
// submit from such a function into the pool's full bounded queue runs the function on the
// submitter for the same reason (worker.Engine.SubmitOrRun).

// helpable returns the call of ctx when a wait made from ctx on p may lend the call's slot:
// ctx is, or derives from, the context crew gave a function running on p or on a sub-pool of
// p, at any depth (such a function holds a slot of each pool above it). Otherwise nil.
func helpable(ctx context.Context, p *Pool) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil || !c.running() {
		return nil
	}
	for q := c.pool; q != nil; q = q.parent {
		if q == p {
			return c
		}
	}
	return nil
}

// A lendable is a queued function that a wait may run itself.
type lendable interface {
	task
	claimer
	// lend claims it for the wait (lendClaimer), failing it if its context has ended. It
	// reports whether the wait is to run it.
	lend() bool
}

// helper is the part of a group or call whose waits may lend their caller's slot: slot is
// the caller's call, and queued the functions it gave the pool, newest last, among which the
// ones no worker has taken yet.
type helper struct {
	p     *Pool
	slot  *call
	mu    sync.Mutex
	queue []lendable
}

// init sets h up for a group or call made from ctx on p: it helps only if ctx is helpable.
func (h *helper) init(ctx context.Context, p *Pool) {
	h.p, h.slot = p, helpable(ctx, p)
}

// helps reports whether h's waits lend the slot.
func (h *helper) helps() bool { return h.slot != nil }

// add notes t, which the pool accepted, as a function h's waits may run. Functions that
// have left the queue are dropped from the list when it is about to grow, so a long-lived
// group whose functions the workers take keeps a short list.
func (h *helper) add(t lendable) {
	h.mu.Lock()
	if len(h.queue) == cap(h.queue) && len(h.queue) >= 16 {
		kept := h.queue[:0]
		for _, q := range h.queue {
			if q.claimed().state.Load() == queued {
				kept = append(kept, q)
			}
		}
		clear(h.queue[len(kept):])
		h.queue = kept
	}
	h.queue = append(h.queue, t)
	h.mu.Unlock()
}

// helpOne runs the newest of h's functions that no worker has taken yet on the calling
// goroutine, and reports whether it ran or skipped one; false when there was none to take,
// the caller's function no longer runs (its slot is no longer its to lend), or the pool
// holds starts back (a pause, or a rate limit out of tokens: worker.Engine.Lends; see
// until). The start is asked for before the function is claimed, as a claim is never given
// back; it is asked with h.mu held, which Lends, taking no lock of the pool, allows.
func (h *helper) helpOne() bool {
	if h.slot == nil || !h.slot.running() {
		return false
	}
	for {
		h.mu.Lock()
		n := len(h.queue)
		if n == 0 {
			h.mu.Unlock()
			return false
		}
		t := h.queue[n-1]
		if t.claimed().state.Load() != queued {
			h.queue[n-1] = nil
			h.queue = h.queue[:n-1]
			h.mu.Unlock()
			continue
		}
		// One that will be skipped takes no start, so no token of the rate limit: lend
		// claims it as skipped and fails it.
		if !doomedTask(t) && !h.p.core.e.Lends() {
			h.mu.Unlock() // t stays listed, for when the pool lets it start
			return false
		}
		h.queue[n-1] = nil
		h.queue = h.queue[:n-1]
		h.mu.Unlock()
		if t.lend() {
			runLent(h.p, t)
		}
		return true
	}
}

// runLent runs t, which a waiting function claimed from p's queue (lend), on the caller. Its
// place in the queue stays behind it, dropped when a worker meets it. On a bounded queue the
// place takes room until then, though t no longer waits: so once t has ended, its place is
// taken out if it is still the newest in the queue, as it is when the waiting function
// queued t last, or the oldest, next for a worker; a blocked submitter moves into the room
// (TestAdvLifeAFunctionAWaitRanLeavesNoTaskWaiting, TestLentPlaceAtTheHeadLeavesTheQueue).
//
// On a sub-pool, t may have been handed to a worker started for it, waiting in the parent's
// queue: on a bounded parent queue that worker, which has nothing to run, is taken out too if
// it is the newest or the oldest there (TestLentSubPoolFunctionLeavesNoWorkerAbove).
func runLent(p *Pool, t task) {
	p.core.e.RunClaimed(t, sameTask)
	if p.core.cfg.queueSize > 0 {
		p.core.e.DropPlace(t, sameTask)
	}
	if q := p.parent; q != nil && q.core.cfg.queueSize > 0 {
		// The worker, if any, waits at the sub-pool's level: the probe stands for it there.
		probe := &subWorker{first: t, level: p.core.cfg.priority}
		if q.core.e.DropStarted(probe, sameFirst) {
			p.core.e.Abandon(t)
		}
	}
}

// sameFirst reports whether a and b are sub-pools' workers started for the same task.
func sameFirst(a, b task) bool {
	wa, ok := a.(*subWorker)
	wb, _ := b.(*subWorker)
	return ok && wb != nil && wa.first == wb.first
}

// sameTask reports whether a and b are one task. Tasks that are claimers are pointers, and a
// task of another dynamic type compares unequal without being looked into.
func sameTask(a, b task) bool { return a == b }

// help runs h's functions that no worker has taken yet, newest first, until none is left.
func (h *helper) help() {
	for h.helpOne() {
	}
}

// until runs h's functions that no worker has taken yet until done is closed. While the pool
// holds starts back (a pause, a rate limit) it runs none, and looks again every pausePoll,
// since a Resume or a new token tells no one: the functions it waits for may have no one else
// to run them. With none of
// its functions left in the queue, it returns before done is closed: the caller then waits
// for done as any wait does.
func (h *helper) until(done <-chan struct{}) {
	for h.helps() {
		h.help()
		if !h.held() {
			return
		}
		nap(h.p, done)
	}
}

// nap waits until done is closed, p or a pool above it is resumed, or pausePoll has passed:
// the wait of a function whose work p holds back (a pause, a rate limit's next token).
func nap(p *Pool, done <-chan struct{}) {
	var resumed <-chan struct{}
	for q := p; q != nil && resumed == nil; q = q.parent {
		resumed = q.core.e.Resumed()
	}
	t := time.NewTimer(pausePoll)
	defer t.Stop()
	select {
	case <-done:
	case <-resumed:
	case <-t.C:
	}
}

// held reports whether some of h's functions are still queued, held back by a pause or a
// rate limit, with the caller's slot still its to lend.
func (h *helper) held() bool {
	return h.slot.running() && h.queued()
}

// queued reports whether some of h's functions are still queued.
func (h *helper) queued() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.queue {
		if t.claimed().state.Load() == queued {
			return true
		}
	}
	return false
}

// pausePoll is how often a wait whose functions a pause or a rate limit holds looks again,
// unless a Resume tells it first: the engine's, for SubmitOrRun's waits too.
const pausePoll = worker.PausePoll
