package crew

import "github.com/crewgo/crew/internal/worker"

// Stats is a snapshot of a pool's state, returned by [Pool.Stats] and [FuncPool.Stats].
//
// A snapshot is consistent: its fields were read together, so Completed+Panicked never
// exceeds Accepted, Running never exceeds MaxWorkers except while tasks that started before a
// shrinking [Pool.Resize] still run, and no counter goes backwards between two snapshots.
//
// A pool's counters count its own tasks and the workers of its sub-pools, which are tasks of
// the pool ([Pool.Sub]); a [Keyed] on the pool counts in them by turns (see Keyed).
type Stats struct {
	// MaxWorkers is the worker limit: no task starts while that many or more run. Under
	// [WithAdaptiveLimit] it is the limit the pool has chosen now; with [CPUs], GOMAXPROCS as
	// the pool last read it.
	MaxWorkers int
	// Running is the number of tasks started and not finished, each counted once whatever its
	// weight ([Pool.SubmitN]): a task counts from the moment a worker is given it. It is 0
	// once [Pool.Wait] has returned with nothing queued.
	Running int
	// Idle is the number of live workers not running a task: parked, or between two tasks and
	// about to take one or park. A sub-pool's workers are its parent's, so a sub-pool reports
	// none.
	Idle int
	// Waiting is the number of accepted tasks that have not started, including one given back by
	// [Pool.Pause] and a sub-pool's task whose worker waits in the parent's queue. Running+Waiting
	// counts each accepted task that has not ended exactly once. A canceled future's function, or a
	// function that a [Pool.Shutdown] giving up failed with [ErrStopped], keeps counting as Waiting
	// until a worker (or [Pool.StopNow]) reaches its place in the queue and drops it, and then
	// counts in Skipped. A function that a waiting function runs itself (package documentation,
	// "Waits that help") counts as Waiting until it has ended, whenever a worker drops its place,
	// and then in Completed or Panicked; it is never Running: it runs in the slot of the function
	// that waits, which Running counts.
	Waiting int
	// Accepted counts the tasks a submit accepted.
	Accepted uint64
	// Completed counts tasks that returned (or called runtime.Goexit).
	Completed uint64
	// Panicked counts tasks that panicked; they are not in Completed.
	Panicked uint64
	// Rejected counts submits refused because the bounded queue was full and they could not
	// wait. The task was never accepted.
	Rejected uint64
	// Canceled counts submits whose context ended before the task was accepted, whether
	// while they waited for room or before they were made. The task was never accepted.
	Canceled uint64
	// WaitTime and RunTime are, under [WithLatencyHistograms], the times tasks waited from their
	// submit to their start and the times they ran; nil without that option, so Stats stays
	// comparable with ==. WaitTime counts every task that started, RunTime every task that finished
	// (returned, panicked or called runtime.Goexit); under [WithLatencySample], each task timed
	// counts n times and the others not at all, so the counts are estimates. They are read just
	// after the counters above, without stopping the workers, so they may count a task that started
	// or finished since; their counts never go backwards between two snapshots, and WaitTime.Count
	// is never less than RunTime.Count.
	WaitTime, RunTime *Histogram
	// Discarded counts accepted tasks that [DiscardOldest] dropped; they never ran.
	Discarded uint64
	// CallerRan counts tasks that [CallerRuns] ran on their submitter; they are also in
	// Accepted and in Completed or Panicked.
	CallerRan uint64
	// Returned counts accepted tasks that [Pool.StopNow] took out of the queue unrun: plain
	// tasks it handed back, and the functions of futures, groups and maps it failed with
	// [ErrStopped]. They never ran. A sub-pool's worker that waited in the pool's queue is
	// one of the pool's tasks ([Pool.Sub]): taken out, it counts here, and the sub-pool's
	// task it carried in the sub-pool's Returned, so the Returned of a tree can add up to
	// more than what StopNow handed back.
	Returned uint64
	// Skipped counts accepted functions that never ran because their own context ended before
	// a worker took them, because [Future.Cancel] took them out, or because a [Pool.Shutdown]
	// whose context ended first failed them; a canceled or failed one counts once a worker
	// reaches its place in the queue (until then it is Waiting), though its Wait returns at
	// once. Plain tasks carry no context and are never skipped.
	Skipped uint64
	// Paused reports whether the pool is paused ([Pool.Pause]); a sub-pool held back by its
	// parent's pause reports false.
	Paused bool
}

func statsOf(c worker.Counters) Stats {
	return Stats{
		MaxWorkers: c.MaxWorkers,
		Running:    c.Running - c.Handed,
		Idle:       c.Free,
		Waiting:    c.Waiting + c.Handed,
		Accepted:   c.Accepted,
		Completed:  c.Completed,
		Panicked:   c.Panicked,
		Rejected:   c.Rejected,
		Canceled:   c.Canceled,
		Discarded:  c.Discarded,
		CallerRan:  c.CallerRan,
		Returned:   c.Removed,
		Skipped:    c.Skipped,
		Paused:     c.Paused,
	}
}
