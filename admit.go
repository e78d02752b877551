package crew

import (
	"context"
	"fmt"

	"github.com/crewgo/crew/internal/worker"
)

// Admission: every task of a pool enters it through admit, whichever door it came through
// (Submit, SubmitN, Invoke, Go, Group.Go, Results.Go, Map, ForEach, MapSeq and their Try and
// Context forms), and admit calls the Queued and Rejected hooks, so a new door cannot forget
// them. A Keyed's tasks wait in the Keyed, not in the pool's queue: Keyed.submit calls the
// same hooks through queued and rejected. Started and Finished are called where tasks start
// and end: by the engine (worker.Observer), on a worker or, under CallerRuns, on the
// submitter, and by a key's turn for each of its tasks.

// submit admits arg, waiting for room in a full bounded queue if wait is set, and returns
// the error the API promises.
func (c *core[T]) submit(arg T, wait bool) error {
	return c.result(c.admit(arg, wait, nil, false), nil)
}

// submitContext admits arg, waiting for room in a full bounded queue until ctx ends; with
// here set, the submitter holds a slot of the pool and runs arg itself instead of waiting
// (see worker.Engine.SubmitOrRun and help.go).
func (c *core[T]) submitContext(ctx context.Context, arg T, here bool) error {
	if ctx == nil {
		panic("crew: SubmitContext: ctx must not be nil")
	}
	return c.result(c.admit(arg, true, ctx, here), ctx)
}

// admit is the one door: it offers arg to the engine, waiting for room in a full bounded
// queue if wait is set, until ctx (which may be nil) ends. With here set, the submitter holds
// a slot of the pool and runs arg itself where it would wait. With hooks, Queued is called
// before the offer and Rejected after a refusal.
func (c *core[T]) admit(arg T, wait bool, ctx context.Context, here bool) worker.Result {
	// The common case, no hooks, no context, no WithContext to watch and no limit following
	// GOMAXPROCS, goes straight to the engine: small enough to be inlined into submit, it
	// keeps Submit and Invoke one call from the engine, as before there was one door.
	if c.onSubmit != nil || ctx != nil || here || len(c.watches) != 0 || c.sizing.follow.Load() {
		return c.admitGuarded(arg, wait, ctx, here)
	}
	return c.e.Submit(arg, wait, nil)
}

// admitGuarded is admit with hooks, a context, a submitter holding a slot, watched contexts
// or a limit following GOMAXPROCS.
func (c *core[T]) admitGuarded(arg T, wait bool, ctx context.Context, here bool) worker.Result {
	if c.onSubmit != nil {
		return c.admitObserved(arg, wait, ctx, here)
	}
	return c.offer(arg, wait, ctx, here)
}

// admitObserved is admit with the Queued and Rejected hooks.
//
// A hook that calls runtime.Goexit ends the submitter inside admit, and the door that called
// it never sees the refusal. A door that counted its task before offering it (a group's
// function) would wait for it for ever, so the task is told (counted.uncount): it ends as a
// function that called runtime.Goexit (TestGoexitInEachHookOnEachDoor). Only a Queued or
// Rejected hook's Goexit: a task that the submitter runs itself inside offer (CallerRuns, a
// wait that helps) and that calls runtime.Goexit, or whose Started or Finished hook does, has
// been told already by the engine, and told twice a group counted it ended twice
// (TestGoexitInACallerRunFunctionEndsItOnce).
func (c *core[T]) admitObserved(arg T, wait bool, ctx context.Context, here bool) (r worker.Result) {
	hooking := true // in a Queued or Rejected hook
	defer func() {
		if hooking {
			if t, ok := any(arg).(counted); ok {
				t.uncount()
			}
		}
	}()
	c.queued()
	hooking = false
	if r = c.offer(arg, wait, ctx, here); r != worker.Accepted {
		hooking = true
		c.rejected(c.result(r, ctx))
		hooking = false
	}
	return r
}

// counted is a task whose door counted it before offering it: see admitObserved.
type counted interface{ uncount() }

// queued and rejected call the Queued and Rejected hooks, if the pool has any.
func (c *core[T]) queued() {
	if c.onSubmit != nil {
		c.onSubmit.queued()
	}
}

func (c *core[T]) rejected(err error) {
	if c.onSubmit != nil {
		c.onSubmit.rejected(err)
	}
}

// offer hands arg to the engine, unless the pool's or a watched context has ended. Under CPUs
// it arms the reading of GOMAXPROCS (poke).
func (c *core[T]) offer(arg T, wait bool, ctx context.Context, here bool) worker.Result {
	var done <-chan struct{}
	if ctx != nil {
		if ctx.Err() != nil {
			c.e.CountCanceled()
			return worker.Canceled
		}
		done = ctx.Done()
	}
	// A watched context may have ended a moment before its hook stops the pools; a submit in
	// between must not be accepted.
	if c.ended() {
		return worker.Stopped
	}
	c.poke()
	if here && wait {
		return c.e.SubmitOrRun(arg, done)
	}
	return c.e.Submit(arg, wait, done)
}

// result turns an engine's answer into the error the API promises. ctx is the submit's
// context, needed only for Canceled.
func (c *core[T]) result(r worker.Result, ctx context.Context) error {
	switch r {
	case worker.Accepted:
		return nil
	case worker.Stopped:
		return ErrStopped
	case worker.Full:
		return ErrQueueFull
	default:
		return fmt.Errorf("crew: submit canceled: %w", ctx.Err())
	}
}
