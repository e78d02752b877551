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
// [Go] runs a function returning a value and gives a [Future]. [Pool.Group] runs functions
// that return errors and cancels their shared context at the first error. [NewResults]
// collects values in submission order, and [Map] and [ForEach] apply a function to a slice or
// an iterator on a pool.
//
// # Lifecycle
//
// [Pool.Wait] waits for the tasks accepted so far and leaves the pool usable. [Pool.Stop]
// stops accepting tasks and returns at once; [Pool.StopAndWait] also waits for every accepted
// task and worker, its sub-pools' included; [Pool.Shutdown] waits until a context ends.
// [Pool.Resize] changes the limit while tasks run. [Pool.Stats] gives a consistent snapshot of
// the counters.
//
// # Panics
//
// A task that panics never takes down its worker or the process. A plain task's panic goes to
// the handler set by [WithPanicHandler] (by default, logged with its stack through log/slog);
// a function run by [Go], a [Group], [Results], [Map] or [ForEach] reports it as a
// [*PanicError] from Wait.
//
// # Guarantees
//
// Each guarantee names the tests that prove it; the stress suite (go test -run Stress, longer
// with -stress.duration) and FuzzPoolOperations check them all together under load.
//
//   - Every task whose submit returned nil (or true) runs exactly once, even across Resize,
//     Stop, Shutdown and the end of the pool's context; a task whose submit failed never runs.
//     TestSubmitRunsAcceptedTaskExactlyOnce, TestResizeLosesNoTask, TestStopRunsAcceptedTasks,
//     TestStopWithMillionQueuedTasksRunsThemAll,
//     TestStressEveryAcceptedTaskRunsExactlyOnce, TestStressInvokeRunsEachArgumentExactlyOnce, FuzzPoolOperations.
//   - No more than MaxWorkers tasks of a pool, or of a sub-pool, run at the same time, and a
//     sub-pool's tasks count against its parent's limit. From the return of a shrinking
//     Resize, the new limit holds. TestNoMoreThanMaxWorkersRun, TestSubPoolSharesParentLimit,
//     TestResizeShrinkingHoldsNewLimit, TestResizeToOneUnderFullLoadLosesNothingAndHoldsTheLimit.
//   - After StopAndWait returns, no goroutine of the pool is left running; an idle pool keeps
//     no goroutine beyond its minimum workers, and its queue gives its memory back.
//     TestStopAndWaitLeavesNoGoroutine, TestStopAndWaitReturnsWhenReaperIsLast,
//     TestMillionTasksLeaveHeapAndGoroutinesAsTheyWere.
//   - A bounded queue bounds memory: only the tasks it holds are kept alive.
//     TestBoundedQueueBoundsMemory.
//   - All methods are safe for concurrent use; a second Stop is a no-op; Stats snapshots are
//     consistent. TestSecondStopIsNoop, TestStatsSnapshotIsConsistentUnderLoad, and the Stats watcher
//     of TestStressEveryAcceptedTaskRunsExactlyOnce.
//
// # Failure behaviour
//
//   - A task that panics: the panic handler gets the value and the stack, Stats.Panicked
//     counts it, the worker keeps serving (TestPanicGoesToHandlerAndWorkerKeepsServing). In a
//     Future, Group, Results, Map or ForEach it is returned as a [*PanicError]
//     (TestFuturePanicBecomesPanicError, TestGroupPanicBecomesPanicError).
//   - A panic handler that panics: reported through the default handler; the worker survives
//     (TestPanicHandlerThatPanicsIsReportedAndWorkerKeepsServing); a panic in a sub-pool task
//     goes to the parent's handler (TestPanicInSubPoolTaskLeavesParentWorking).
//   - A task that calls runtime.Goexit: counted as completed; its worker's place goes to a new
//     worker (TestTaskCallingGoexitIsCountedAndReplaced).
//   - A task that never returns: Shutdown(ctx) returns ctx.Err() when ctx ends and every other
//     task still runs (TestShutdownReturnsContextErrorAndTheRestDrain).
//   - Wait called from a task of the same pool waits for that task too, so it never returns
//     (TestWaitFromTaskDoesNotReturnWhileTaskRuns). Stop, Stats, TrySubmit and a growing Resize are
//     safe from a task (TestCallsFromTaskNeverDeadlock, TestStopFromTaskLetsAcceptedTasksRun); a
//     shrinking Resize from a task may wait for that task, and a blocking Submit from a task
//     into its own full queue waits for a worker like any other.
//   - Submitters blocked on a full queue when the pool stops return [ErrStopped]
//     (TestStopReleasesBlockedSubmitters); a submit after the pool's context ended returns
//     [ErrStopped] (TestSubmitAfterPoolContextEndedIsRefused).
package crew
