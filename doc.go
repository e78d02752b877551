// Package crew runs functions on a bounded set of reused goroutines.
//
// A worker pool caps how much work runs at once (database connections, CPU, memory) and
// reuses goroutines instead of starting one per task. crew's pools start workers lazily up to
// a limit, hand a task straight to an idle worker when there is one, queue it in FIFO order
// when there is none, and let workers that stay idle exit.
//
// # Pools
//
// [New] returns a [Pool] of func() tasks. [Pool.Submit] queues a task and blocks only while a
// bounded queue ([WithQueueSize]) is full; [Pool.TrySubmit] never blocks; [Pool.SubmitContext]
// gives up when its context ends. [Pool.Sub] makes a sub-pool with a limit of its own that
// runs on the parent's workers.
//
// # Typed pools
//
// [NewFunc] returns a [FuncPool] that calls one function with each argument given to
// [FuncPool.Invoke]. The arguments are queued unboxed, so Invoke allocates nothing.
//
// # Results and groups
//
// [Go] runs a function returning a value and gives a [Future]; [Completed] ranges over
// futures in the order they complete. [Pool.Group] runs functions that return errors and
// cancels their shared context at the first error; [Pool.GroupAll] runs every one to the end
// and joins every error; [Group.TryGo] never blocks. [NewResults] collects values in
// submission order, and [Map] and [ForEach] apply a function to a slice or an iterator on a
// pool. [MapSeq] and [MapSeqUnordered] turn an iterator into an iterator of results, in input
// or completion order, pulling it lazily with bounded memory; [Batch] groups tiny values so
// that each hand-off to a worker carries many.
//
// Profiler labels (runtime/pprof) follow the work, not the worker. A worker starts with no
// labels, whichever goroutine's submit started it, and a plain task runs under none. A
// function given with a context (the functions of a group, a [Results], [Map], [ForEach],
// [MapSeq] and [MapSeqUnordered]) runs on a worker under the labels of the context its group
// or call was made from, and the worker has none again once the function returns, panics or
// calls runtime.Goexit; so work that a request labelled with pprof.Do hands to a pool shows
// in profiles under the request's labels. A function that [CallerRuns] runs on its submitter
// keeps the submitter's labels.
//
// # Lifecycle
//
// [Pool.Wait] waits for the tasks accepted so far and leaves the pool usable. [Pool.Stop]
// stops accepting tasks and returns at once; [Pool.StopAndWait] also waits for every accepted
// task and worker, its sub-pools' included; [Pool.Shutdown] waits until a context ends.
// [Pool.Resize] changes the limit while tasks run and returns at once. [Pool.Stats] gives a
// consistent snapshot of the counters, and [Pool.Stopped] tells whether the pool still accepts
// tasks.
//
// # Panics
//
// A task that panics never takes down its worker or the process. A plain task's panic goes to
// the handler set by [WithPanicHandler] (by default, logged with its stack through log/slog);
// a function run by [Go], a [Group], [Results], [Map] or [ForEach] reports it as a
// [*PanicError] from Wait. panic(nil) is a panic like any other, also under
// GODEBUG=panicnil=1. A task or a panic handler that calls [runtime.Goexit] ends its worker's
// goroutine; the task counts as completed (or panicked, from the handler) and a new worker
// takes the worker's place.
//
// Misuse panics at the call, with a message that names it: every method of a nil *Pool or
// *FuncPool ("crew: Submit: nil *Pool"), and every call that takes a context when given a nil
// one ("crew: Map: ctx must not be nil"), as does a nil pool or function where one is required.
//
// # Guarantees
//
//   - Every task whose submit returned nil (or true) runs exactly once, even across Resize,
//     Stop, Shutdown and the end of the pool's context; a task whose submit failed never runs.
//   - No task of a pool, or of a sub-pool, starts while its limit or more of its tasks run,
//     and a sub-pool's tasks count against its parent's limit. Tasks running when a shrinking
//     Resize returns finish; the new limit holds for every start after it.
//   - After StopAndWait returns, no goroutine of the pool is left running; an idle pool keeps
//     no goroutine beyond its minimum workers, and its queue gives its memory back.
//   - A bounded queue bounds memory: only the tasks it holds are kept alive.
//   - All methods are safe for concurrent use; a second Stop is a no-op; Stats snapshots are
//     consistent.
//   - Pools work inside testing/synctest bubbles: pools made in different bubbles, and idle
//     timeouts on a bubble's clock.
//
// # Failure behaviour
//
//   - A task that panics: the panic handler gets the value and the stack, Stats.Panicked
//     counts it, the worker keeps serving. In a Future, Group, Results, Map or ForEach it is
//     returned as a [*PanicError].
//   - A panic handler that panics: reported through the default handler; the worker survives.
//     A panic in a sub-pool's task goes to the sub-pool's handler, by default its parent's.
//   - A task that never returns: Shutdown(ctx) returns ctx.Err() when ctx ends and every
//     other task still runs.
//   - A sequence given to ForEach that panics: ForEach cancels its calls' context, waits for
//     the calls in flight, and the panic goes on to ForEach's caller.
//   - Wait called from a task of the same pool waits for that task too, so it never returns.
//     Stop, Stats, TrySubmit and Resize are safe from a task; a blocking Submit from a task
//     into its own full queue waits for a worker like any other.
//   - Submitters blocked on a full queue when the pool stops return [ErrStopped]; a submit
//     after the pool's context ended returns [ErrStopped].
package crew
