package crew

import "context"

// checkPool panics, naming the call, if p is nil: a method of a nil *Pool would otherwise fail
// with a nil pointer dereference deep inside the pool, far from the mistake.
func checkPool(p *Pool, call string) {
	if p == nil {
		panic("crew: " + call + ": nil *Pool")
	}
}

// checkFuncPool is checkPool for a *FuncPool.
func checkFuncPool[T any](p *FuncPool[T], call string) {
	if p == nil {
		panic("crew: " + call + ": nil *FuncPool")
	}
}

// checkCtx panics, naming the call, if ctx is nil, as the standard library's context
// functions would, but with the name of the call that was given it.
func checkCtx(ctx context.Context, call string) {
	if ctx == nil {
		panic("crew: " + call + ": ctx must not be nil")
	}
}
