package crew

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/crewgo/crew/internal/worker"
)

// ForEach calls fn on p for each value of in, with at most p's limit (its MaxWorkers when ForEach
// starts) of calls in flight. It pulls the next value from in only when a call has returned and a
// slot is free, so an endless or huge sequence never piles up in memory. It stops pulling at the
// first error, at a panic (reported as a [*PanicError]), or when ctx ends, waits for the calls in
// flight, and returns the first error; ctx.Err() if ctx ended first and no call failed (a call
// still queued then is skipped, and fails with ctx's cause, [context.Cause]: with a cause given to
// ctx, that is what ForEach returns); or [ErrStopped] if p is stopped (or a [Pool.Shutdown] of p
// gave up). The calls receive a context derived from ctx that is canceled at the first error; a
// call still queued then is skipped (counted in [Stats].Skipped). The return of every call
// synchronizes before the return of ForEach. Called inside a function running on p with the context
// crew gave it, ForEach runs its own queued calls while it waits for a slot (package documentation,
// "Waits that help").
//
// ForEach blocks while every slot is taken, and while p's bounded queue is full, only until ctx
// ends or a call fails. If in itself panics (or calls runtime.Goexit), ForEach cancels the
// calls' context, waits for the calls in flight, and lets the panic go on to its caller: no
// call outlives ForEach. If in or fn is nil, ForEach returns an error at once and calls
// nothing; a nil fn's error matches [ErrNilTask] under [errors.Is]. It panics if p is nil.
//
// ForEach allocates one small task per value.
func ForEach[T any](ctx context.Context, p *Pool, in iter.Seq[T], fn func(context.Context, T) error) error {
	if p == nil {
		panic("crew: ForEach: p must not be nil")
	}
	checkCtx(ctx, "ForEach")
	if in == nil {
		return errNilSeq
	}
	if fn == nil {
		return nilFnError("ForEach")
	}
	g, gctx := p.Group(ctx)
	// slots holds one token per call in flight: a call returns its token when done.
	slots := make(chan struct{}, max(p.Stats().MaxWorkers, 1))
	cut := false
	returned := false // in returned: it did not panic
	defer func() {
		if !returned {
			// in panicked, or called runtime.Goexit. The calls already started run on a
			// context that only the Wait below would otherwise cancel: cancel it, and let
			// them finish before the panic goes on (TestForEachSequencePanicLeavesNoCallRunning).
			g.cancel(errSeqPanicked)
			g.Wait()
		}
	}()
	for v := range in {
		g.takeSlot(slots, gctx)
		// ctx too: package context ends gctx a moment after ctx (see scope, life.go).
		if gctx.Err() != nil || ctx.Err() != nil || !g.launchContext(gctx, &eachTask[T]{g: g, slots: slots, fn: fn, v: v, c: call{Context: gctx, pool: p}}) {
			cut = true
			break
		}
	}
	returned = true
	err := g.Wait()
	if err == nil && cut {
		err = cutShort(ctx, p) // the sequence was cut short, not by a call
	}
	return err
}

// cutShort is the error of a sequence whose pulling stopped early with no call failing:
// ctx.Err() if ctx ended, or ErrStopped if a Shutdown of p (or of a pool above it) gave up,
// which ends the calls' context too, so that the values left unpulled are not lost silently.
func cutShort(ctx context.Context, p *Pool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.hardStopped() {
		return ErrStopped
	}
	return nil
}

// takeSlot waits for a free slot of slots, or for ctx to end. A ForEach made from the context
// crew gave a function running on the pool runs its own queued calls meanwhile (help.go): with
// every slot taken by calls that no worker has started, nothing else would free one.
func (g *Group) takeSlot(slots chan struct{}, ctx context.Context) {
	for g.h.helps() {
		select {
		case slots <- struct{}{}:
			return
		default:
		}
		if g.h.helpOne() {
			continue
		}
		if !g.h.held() {
			break
		}
		// A pause holds the calls it would run: look again shortly (helper.until).
		nap(g.p, ctx.Done())
		if ctx.Err() != nil {
			return
		}
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
	}
}

// errSeqPanicked is the cause of the calls' context when ForEach's sequence panics.
var errSeqPanicked = errors.New("crew: ForEach: the sequence panicked")

// errNilSeq is what ForEach returns for a nil sequence.
var errNilSeq = errors.New("crew: ForEach: in must not be nil")

// nilFnError is what Map and ForEach return for a nil fn: it names the call, and matches
// ErrNilTask as Group.Go's error for a nil fn does.
type nilFnError string

func (e nilFnError) Error() string { return "crew: " + string(e) + ": fn must not be nil" }

func (e nilFnError) Unwrap() error { return ErrNilTask }

type eachTask[T any] struct {
	g     *Group
	slots chan struct{}
	fn    func(context.Context, T) error
	v     T
	c     call
}

func (t *eachTask[T]) abort(err error) bool {
	<-t.slots
	return t.g.abort(0, err)
}

func (t *eachTask[T]) uncount() { t.abort(errGoexit) }

// A call's task is a reporter (see pool.go) and a claimer (life.go), as a group's is. One
// skipped because the calls' context has ended fails with its cause and frees its slot.
func (t *eachTask[T]) run() worker.Outcome { return runClaimer(t, false) }

// runOnCaller is run without the labels: a caller-run function keeps its submitter's.
func (t *eachTask[T]) runOnCaller() worker.Outcome { return runClaimer(t, true) }

func (t *eachTask[T]) call() {
	t.end(t.c.invoke(t.g.enter, func(ctx context.Context) error { return t.fn(ctx, t.v) }))
}

func (t *eachTask[T]) fail(err error) { t.end(err) }

func (t *eachTask[T]) lend() bool { return lendClaimer(t) }

func (t *eachTask[T]) claimed() *claim { return &t.c.claim }

func (t *eachTask[T]) scope() scope { return scope{t.g.ctx, t.g.given, t.g.p} }

func (t *eachTask[T]) labels() context.Context { return t.g.labelsContext() }

func (t *eachTask[T]) panicked(pe *PanicError) { t.end(pe) }

func (t *eachTask[T]) goexited() { t.end(t.c.goexited()) }

// end records err, the outcome of the call (nil if it returned nil), and frees its slot.
func (t *eachTask[T]) end(err error) {
	t.g.end(0, err)
	<-t.slots
}

// Map calls fn on p for each element of in and returns the results in the order of in. Like
// [ForEach], it keeps at most p's limit of calls in flight and stops scheduling new elements at
// the first error, a panic ([*PanicError]), or the end of ctx, which it also honours while p's
// bounded queue is full; it then waits for the calls in flight and returns the first error.
// The returned slice always has len(in) elements: those whose call failed or was never
// scheduled hold the zero value. If fn is nil, Map returns an error that matches [ErrNilTask]
// at once. It panics if p is nil.
//
// Map allocates the result slice and one small task per element.
func Map[T, R any](ctx context.Context, p *Pool, in []T, fn func(context.Context, T) (R, error)) ([]R, error) {
	if p == nil {
		panic("crew: Map: p must not be nil")
	}
	checkCtx(ctx, "Map")
	out := make([]R, len(in))
	if fn == nil {
		return out, nilFnError("Map")
	}
	indexes := func(yield func(int) bool) {
		for i := range in {
			if !yield(i) {
				return
			}
		}
	}
	err := ForEach(ctx, p, indexes, func(ctx context.Context, i int) error {
		v, err := fn(ctx, in[i])
		if err == nil {
			out[i] = v
		}
		return err
	})
	return out, err
}

// Batch returns a sequence of the values of in grouped in slices of n, in order; the last
// slice holds what is left and may be shorter. Each slice is new, so a loop body or a task may
// keep it.
//
// Handing each value of a sequence to [ForEach], [MapSeq] or [MapSeqUnordered] costs a
// hand-off between goroutines per value: a fraction of a microsecond, more on a busy machine.
// For functions that take less than about 2 µs per value, that cost is a large part of the
// time, and handing over batches (a function that loops over its slice) spreads it over the
// batch: with batches of 64, values that take no time at all go through in a twentieth of the
// time, values of 1 µs in about half. From a few microseconds per value on, batching gains
// nothing measurable and makes the load less even, as each batch runs on one worker.
//
// Batch pulls in lazily: a batch is yielded as soon as it is full, so with a limit of W calls
// in flight, at most W+1 batches' worth of values are held. For a slice, slices.Chunk gives
// the same batches without copying. Batch panics if in is nil or n is less than 1.
func Batch[T any](in iter.Seq[T], n int) iter.Seq[[]T] {
	if in == nil {
		panic("crew: Batch: in must not be nil")
	}
	if n < 1 {
		panic(fmt.Sprintf("crew: Batch: n must be >= 1, got %d", n))
	}
	return func(yield func([]T) bool) {
		var batch []T
		for v := range in {
			if batch == nil {
				batch = make([]T, 0, n)
			}
			batch = append(batch, v)
			if len(batch) == n {
				if !yield(batch) {
					return
				}
				batch = nil
			}
		}
		if len(batch) > 0 {
			yield(batch)
		}
	}
}
