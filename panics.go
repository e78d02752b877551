package crew

import (
	"runtime/debug"

	"github.com/crewgo/crew/internal/worker"
)

// The panics of a pool's tasks go one way: the engine recovers them on the worker (or, under
// CallerRuns, on the submitter) and gives them to the panic handler, or to the future or
// group that reports them itself (see reporter in pool.go). What the engine does not run
// itself, a key's tasks, the hooks and the discard handler, is recovered with catch and
// reported with report, which does what the engine's handlePanic does.

// catch calls fn and returns nil if fn returns, or a [*PanicError] if it panics; its stack,
// taken on the panicking goroutine, includes the frame that panicked. If fn calls
// runtime.Goexit, catch does not return: the goroutine's deferred calls run and it ends, so a
// caller tells a Goexit apart by a flag it sets after catch returns, in a deferred call of its
// own.
//
// Whether fn panicked is told by whether the deferred call below runs before fn returned,
// not by what recover returns: recover returns nil both for a Goexit, which it does not
// stop, and for panic(nil) under GODEBUG=panicnil=1, which it does. Taking nil for a Goexit
// would report such a panic as a Goexit (TestPanicNilIsReportedAsAPanic,
// TestGoexitIsReportedAsAGoexit). x/sync/singleflight tells the two apart the same way.
//
// fn does not escape, so the caller's closure stays on its stack: Go and Group.Go allocate
// no more than before (TestGoAllocatesOnlyTheFuture, TestGroupGoAllocatesOneTask).
func catch(fn func()) (pe *PanicError) {
	returned := false
	defer func() {
		if !returned {
			// A panic, recovered here; or a Goexit, for which recover returns nil and which
			// goes on unwinding past this call.
			pe = &PanicError{Value: recover(), Stack: debug.Stack()}
		}
	}()
	fn()
	returned = true
	return nil
}

// report gives pe, a panic recovered from a key's task, a hook or the discard handler, to
// handler on the calling goroutine. A handler that panics in turn is reported through the
// default one, as the engine does for a task's panic, rather than taking the goroutine (and
// the process) down.
func report(handler func(v any, stack []byte), pe *PanicError) {
	if hp := catch(func() { handler(pe.Value, pe.Stack) }); hp != nil {
		worker.DefaultPanicHandler(hp.Value, hp.Stack)
	}
}
