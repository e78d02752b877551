package crew

import (
	"context"
	"iter"
)

// ForEach calls fn on p for each value of in, with at most p's limit (its MaxWorkers when
// ForEach starts) of calls in flight. It pulls the next value from in only when a call has
// returned and a slot is free, so an endless or huge sequence never piles up in memory. It stops
// pulling at the first error, at a panic (reported as a [*PanicError]), or when ctx ends, waits
// for the calls in flight, and returns the first error; ctx.Err() if ctx ended first and no call
// failed; or [ErrStopped] if p is stopped. The calls receive a context derived from ctx that is
// canceled at the first error. The return of every call synchronizes before the return of
// ForEach.
//
// ForEach allocates one small task per value (BenchmarkForEach).
func ForEach[T any](ctx context.Context, p *Pool, in iter.Seq[T], fn func(context.Context, T) error) error {
	g, gctx := p.Group(ctx)
	// slots holds one token per call in flight: a call returns its token when done.
	slots := make(chan struct{}, max(p.Stats().MaxWorkers, 1))
	cut := false
	for v := range in {
		select {
		case slots <- struct{}{}:
		case <-gctx.Done():
		}
		if gctx.Err() != nil {
			cut = true
			break
		}
		g.submit(&eachTask[T]{g: g, slots: slots, fn: fn, v: v}, 0)
	}
	err := g.Wait()
	if err == nil && cut {
		err = ctx.Err() // the sequence was cut short by ctx, not by a call
	}
	return err
}

type eachTask[T any] struct {
	g     *Group
	slots chan struct{}
	fn    func(context.Context, T) error
	v     T
}

func (t *eachTask[T]) run() {
	defer func() { <-t.slots }()
	t.g.guard(0, func(ctx context.Context) error { return t.fn(ctx, t.v) })
}

// Map calls fn on p for each element of in and returns the results in the order of in. Like
// [ForEach], it keeps at most p's limit of calls in flight and stops scheduling new elements at
// the first error, a panic ([*PanicError]), or the end of ctx; it then waits for the calls in
// flight and returns the first error. The returned slice always has len(in) elements: those
// whose call failed or was never scheduled hold the zero value.
//
// Map allocates the result slice and one small task per element (BenchmarkMap).
func Map[T, R any](ctx context.Context, p *Pool, in []T, fn func(context.Context, T) (R, error)) ([]R, error) {
	out := make([]R, len(in))
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
