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
// # A task's life
//
// A function given with a context (of [GoContext], [Group.Go], [Results.Go], [Map], [ForEach],
// [MapSeq] and [MapSeqUnordered]) receives a context of its own, derived from the one its group or
// call was made from. If that context, or the one it was derived from, ends before a worker takes
// the function, the function never runs: it is skipped, counted in [Stats].Skipped, and its future,
// group or call sees [context.Cause] of the context. So once a group's first error cancels its
// context, its functions still queued are skipped ([Pool.GroupAll] runs them all). [Future.Cancel]
// takes a function out before it starts. [WithTaskTimeout] gives each function's context a deadline
// after its start. When [Pool.Shutdown]'s context ends before the pool has drained, the functions
// with a context still queued are skipped and the contexts of those running end, with cause
// [ErrStopped]. Plain tasks, which carry no context, always run.
//
// # Waits that help
//
// A function running on a pool holds one of its slots. If it waits for work it gave the same
// pool, and every slot is held by such a waiter, nothing is left to run that work: the most
// reported hang of worker pools. crew avoids it where it can tell who waits: a [Group],
// [Results], [Map], [ForEach], [MapSeq] or [GoContext] made on a pool P, inside a function
// running on P or on a sub-pool of P, from the context crew gave that function (or one
// derived from it), runs the functions it waits for that no worker has taken yet itself, on
// the waiting goroutine, in the slot the waiting function holds. A submit by such a function,
// with that context, into P's full bounded queue ([Group.Go], [Results.Go], [GoContext],
// [Pool.SubmitContext]) runs the function on the caller instead of blocking (counted in
// [Stats].CallerRan). The slot is lent, no new one is taken: the limit holds, and nested
// fork/join of any depth completes, even on New(1) with a queue of one:
//
//	var walk func(ctx context.Context, n *Node) error
//	walk = func(ctx context.Context, n *Node) error {
//		g, _ := pool.Group(ctx) // ctx: the context crew gave this function
//		for _, c := range n.Children {
//			g.Go(func(ctx context.Context) error { return walk(ctx, c) })
//		}
//		return g.Wait() // runs the children no worker has taken
//	}
//	g, _ := pool.Group(ctx)
//	g.Go(func(ctx context.Context) error { return walk(ctx, root) })
//	err := g.Wait()
//
// crew cannot tell who calls when the call carries no such context: [Pool.Wait] or
// [Pool.StopAndWait] called inside a task of the same pool waits for that task too and never
// returns; a blocking [Pool.Submit] (or [Group.Go] on a group made outside any function of
// the pool) from a task into its own full queue waits for a worker like any other, and when
// every worker does so at once they wait for ever. Make the group inside the function, from
// its context, as above. A wait helps only on the goroutine of the function its context was
// given to: handing that context to another goroutine and waiting there runs functions
// beside the pool's workers. A function run in a lent slot is a start like any other: none
// runs while the pool (or a pool above it) is paused, and a rate limit ([WithRateLimit])
// paces them; the limit itself is not asked again, since the slot is already counted.
//
// A wait helps only with functions of its own pool or of a pool above it. A function of P
// that waits for work it gave a sub-pool of P, or a pool beside P, holds no slot of that
// pool to lend: it waits for that pool's workers, and where every slot of the tree is held
// by such waiters, they wait for ever. Give nested work to the waiting function's own pool
// or to one above it.
//
// # Profiler labels
//
// Profiler labels (runtime/pprof) follow the work, not the worker. A worker starts with no labels,
// whichever goroutine's submit started it, and a plain task runs under none. A function given with
// a context (the functions of [GoContext], a group, a [Results], [Map], [ForEach], [MapSeq] and
// [MapSeqUnordered]) runs on a worker under the labels of the context its group or call was made
// from, and the worker has none again once the function returns, panics or calls runtime.Goexit; so
// work that a request labelled with pprof.Do hands to a pool shows in profiles under the request's
// labels. A function that [CallerRuns] runs on its submitter keeps the submitter's labels, and one
// that a waiting function runs itself in its slot ("Waits that help" above) keeps the labels the
// waiting function runs under: crew cannot read a goroutine's labels to give them back, so it
// leaves them as they are. A nested group made from the context crew gave a function carries that
// function's labels anyway; labels added to it for the nested functions alone show only where a
// worker runs them.
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
// a function run by [Go], [GoContext], a [Group], [Results], [Map], [ForEach], [MapSeq] or
// [MapSeqUnordered] reports it as a [*PanicError] from Wait (or as the failure a sequence
// yields). panic(nil) is a panic like any other, also under
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
//     Stop, Shutdown and the end of the pool's context, unless it is accounted for as not
//     run: dropped by [DiscardOldest], taken out by [Pool.StopNow], or skipped (its own
//     context ended first, or its future was canceled). Each such task counts in [Stats] and
//     fails its future, group or call; a task whose submit failed never runs.
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
//   - A task that never returns: Shutdown(ctx) returns ctx.Err() when ctx ends; the contexts
//     of functions given with one end (cause [ErrStopped]), those still queued are skipped,
//     and plain tasks still run.
//   - A sequence given to ForEach that panics: ForEach cancels its calls' context, waits for
//     the calls in flight, and the panic goes on to ForEach's caller.
//   - Wait called from a task of the same pool waits for that task too, so it never returns.
//     Stop, Stats, TrySubmit and Resize are safe from a task; a blocking Submit from a task
//     into its own full queue waits for a worker like any other (see "Waits that help" for
//     the calls that do not).
//   - Submitters blocked on a full queue when the pool stops return [ErrStopped]; a submit
//     after the pool's context ended returns [ErrStopped].
package crew
