package crew

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/crewgo/crew/internal/worker"
)

// SubmitN is [Pool.Submit] for a task that holds n of the pool's MaxWorkers slots while it
// runs, for work that uses several cores or a resource sized in workers. The weights of the
// running tasks never sum above MaxWorkers (on a sub-pool, above its limit or any of its
// ancestors'), and [Stats].Running counts such a task once. A task held back by
// [Pool.Pause], or taken out by [Pool.StopNow], holds no slot.
//
// Tasks start in the order they were accepted: a task at the head of the queue that does
// not fit waits until enough running tasks return, and the tasks behind it wait too, even
// lighter ones that would fit. So a heavy task is never overtaken, at the price of
// head-of-line blocking. A task accepted before a shrinking [Pool.Resize] made it heavier
// than the limit runs alone, once every running task has returned.
//
// SubmitN returns [ErrTooHeavy] when n exceeds the limit (on a sub-pool, the smallest limit
// on its path to the root pool) at the time of the call, and otherwise what Submit returns.
// It panics if n is less than 1. SubmitN(1, task) is Submit(task).
func (p *Pool) SubmitN(n int, task func()) error {
	checkPool(p, "SubmitN")
	if err := p.checkWeight("SubmitN", n, task); err != nil || n == 1 {
		if err != nil {
			return err
		}
		return p.Submit(task)
	}
	return p.core.submit(p.weighted(n, task), true)
}

// TrySubmitN is [Pool.SubmitN] that never blocks: it reports whether the task was accepted,
// and returns false for a task too heavy, a full bounded queue, a stopped pool or a nil task.
// It panics if n is less than 1.
func (p *Pool) TrySubmitN(n int, task func()) bool {
	checkPool(p, "TrySubmitN")
	if err := p.checkWeight("TrySubmitN", n, task); err != nil {
		return false
	}
	if n == 1 {
		return p.TrySubmit(task)
	}
	return p.core.submit(p.weighted(n, task), false) == nil
}

// SubmitNContext is [Pool.SubmitN] that gives up waiting for room in a full queue when ctx
// ends, as [Pool.SubmitContext] does. It panics if n is less than 1.
func (p *Pool) SubmitNContext(ctx context.Context, n int, task func()) error {
	checkPool(p, "SubmitNContext")
	checkCtx(ctx, "SubmitNContext")
	if err := p.checkWeight("SubmitNContext", n, task); err != nil {
		return err
	}
	if n == 1 {
		return p.SubmitContext(ctx, task)
	}
	return p.core.submitContext(ctx, p.weighted(n, task), false)
}

// checkWeight validates a weighted submit: it panics for n < 1 and returns ErrNilTask or
// ErrTooHeavy.
func (p *Pool) checkWeight(call string, n int, task func()) error {
	if n < 1 {
		panic(fmt.Sprintf("crew: %s: n must be >= 1, got %d", call, n))
	}
	if task == nil {
		return ErrNilTask
	}
	for q := p; q != nil; q = q.parent {
		if n > q.core.ceiling() {
			return ErrTooHeavy
		}
	}
	return nil
}

// weighted wraps task with its weight, after telling p's engine and its ancestors' that
// weights are in use (once: until then their start check costs nothing extra).
func (p *Pool) weighted(n int, task func()) *weightedTask {
	if !p.weights.Load() {
		for q := p; q != nil; q = q.parent {
			q.core.e.UseWeights()
			q.weights.Store(true)
		}
	}
	return &weightedTask{f: task, n: n, e: p.core.e}
}

// weights is set once a pool's engine looks up task weights.
type weights = atomic.Bool

// weightedTask is a task of weight n > 1. It gives back its extra slots as it returns,
// panics or calls runtime.Goexit (see internal/worker/weight.go).
type weightedTask struct {
	f func()
	n int
	e *worker.Engine[task]
}

// holder is a queued task that holds plain tasks of the user's: a weighted task, or a key's
// runner with its backlog. StopNow (dropped false) and DiscardOldest (dropped true) hand
// those back instead of failing it. told, unless nil, tells the Discarded hooks of the tasks
// dropped that the holder observes itself (a key's): the caller calls it once each task has
// gone to the discard handler.
type holder interface {
	unpack(dropped bool) (fs []func(), told func())
}

func (t *weightedTask) abort(error) bool { return false }

func (t *weightedTask) unpack(bool) ([]func(), func()) { return []func(){t.f}, nil }

func (t *weightedTask) run() worker.Outcome {
	defer t.e.Unhold(t.n - 1)
	t.f()
	return worker.Completed
}

// taskWeight is a Pool engine's Config.Weight: the weight of a weighted task, or of the task
// a sub-pool's worker carries; 1 for everything else.
func taskWeight(t task) int {
	switch t := t.(type) {
	case *weightedTask:
		return t.n
	case *subWorker:
		return t.n
	}
	return 1
}
