package crew

import "github.com/crewgo/crew/internal/worker"

// Stats is a snapshot of a pool's state, returned by [Pool.Stats] and [FuncPool.Stats].
//
// A snapshot is consistent: its fields were read together, so Completed+Panicked never
// exceeds Submitted, Running never exceeds MaxWorkers by more than the tasks that were already
// running when a shrinking [Pool.Resize] returned, and no counter goes backwards between two
// snapshots.
type Stats struct {
	// MaxWorkers is the current worker limit. While a shrinking [Pool.Resize] waits for the
	// busy workers above the new limit, it is the number of workers still alive.
	MaxWorkers int
	// Running is the number of workers running a task. For a sub-pool it also counts workers
	// that wait for one of the parent's. A worker that has finished a task counts as running
	// until it has taken the next one or parked, which it does after yielding its processor
	// once.
	Running int
	// Idle is the number of workers alive and waiting for a task.
	Idle int
	// Waiting is the number of accepted tasks that have not started.
	Waiting int
	// Submitted counts accepted tasks.
	Submitted uint64
	// Completed counts tasks that returned (or called runtime.Goexit).
	Completed uint64
	// Panicked counts tasks that panicked; they are not in Completed.
	Panicked uint64
	// Rejected counts submits that found the queue full and could not wait, and blocked
	// submits whose context ended first.
	Rejected uint64
}

func statsOf(c worker.Counters) Stats {
	return Stats{
		MaxWorkers: c.MaxWorkers,
		Running:    c.Workers - c.Idle,
		Idle:       c.Idle,
		Waiting:    c.Waiting,
		Submitted:  c.Submitted,
		Completed:  c.Completed,
		Panicked:   c.Panicked,
		Rejected:   c.Rejected,
	}
}
