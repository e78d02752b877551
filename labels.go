package crew

import (
	"context"
	"runtime/pprof"

	"github.com/crewgo/crew/internal/worker"
)

// Profiler labels: the contract is in the package doc ("Results and groups"). A task whose
// function carries a context applies its labels in its own run, behind a flag read once when
// the group or call was made (hasLabels), so plain tasks and unlabelled contexts pay nothing
// per task; workers are cleared once, when the engine starts them (worker.unlabel).

// hasLabels reports whether ctx carries pprof labels.
func hasLabels(ctx context.Context) bool {
	has := false
	pprof.ForLabels(ctx, func(string, string) bool {
		has = true
		return false
	})
	return has
}

// labelled gives the calling worker the labels of ctx and returns the function that takes
// them away again, for a defer: defer labelled(ctx)().
func labelled(ctx context.Context) func() {
	pprof.SetGoroutineLabels(ctx)
	return unlabelled
}

// unlabelled clears the calling worker's labels, as it started.
func unlabelled() { pprof.SetGoroutineLabels(context.Background()) }

// A callerRunner is a task whose function runs under its context's labels on a worker
// (run); runOnCaller runs it as it is, for a submitter that runs it itself ([CallerRuns]):
// the submitter has labels of its own, which a worker's run would clear.
type callerRunner interface {
	runOnCaller() worker.Outcome
}

// runTaskInline runs t on its submitter, or on a function that lent it its slot
// (worker.Config.RunInline).
func runTaskInline(t task) worker.Outcome {
	if c, ok := t.(callerRunner); ok {
		return c.runOnCaller()
	}
	return t.run()
}
