package crew

import (
	"sync/atomic"

	"github.com/crewgo/crew/internal/worker"
)

// WithPriority gives a sub-pool ([Pool.Sub]) a priority level in its parent: whenever one of
// the parent's workers takes a task, it takes one of the highest level waiting, so no task of
// a higher level is waiting when a lower-level one starts. That holds at every start, also
// where several of the parent's slots free at once (a [Pool.Resize] up, a [Pool.Resume],
// tasks that end together), with a parent of any size. Within a level, tasks start first
// in, first out, and sub-pools at one level take turns. The parent's own tasks and sub-pools
// without the option are at level 0; levels may be negative. Running tasks are never
// preempted.
//
// Once a parent has a sub-pool with a level other than 0, a sub-pool's worker gives the parent's
// worker back after each task while anything waits in the parent's queue, and its sub-pool's next
// task waits for its turn at its level: so a busy sub-pool cannot hold a worker that a higher level
// needs, and sub-pools at one level alternate. [Go], [Pool.Group], [Map] and the rest work on a
// sub-pool with a level as on any.
//
// On [New], [NewFunc] and [NewKeyed] a level has nothing to be compared with: New and NewFunc
// ignore it, and NewKeyed panics as for any option it does not take.
func WithPriority(level int) Option {
	return func(c *config) { c.priority = level; c.prioritySet = true }
}

// level records that child, just made, has the priority level given, and, when the first
// leveled sub-pool appears, makes p's queue serve by level and every sub-pool of p take
// turns. Callers hold p.mu.
func (p *Pool) level(child *Pool, level int) {
	if level != 0 && !p.leveled {
		p.leveled = true
		p.core.e.UseLevels()
		for c := range p.children {
			c.core.e.UseTurns()
		}
		return
	}
	if p.leveled {
		child.core.e.UseTurns()
	}
}

// turnBatch is how many tasks a leveled sub-pool runs, over all its workers, between two
// turns given back to its own level. Giving the parent's worker back after every task would
// re-queue every task (the sub-pool's own waiting workers are at its level) and doubled the
// time of BenchmarkPriorityLatency's flood; a higher level waiting is served after one task
// whatever the count (TestWithPriorityLowClassCannotHoldTheWorker).
const turnBatch = 8

// turnIn returns the Config.Turn of a sub-pool at level in parent: see
// internal/worker/priority.go.
func turnIn(parent *worker.Engine[task], level int) func() bool {
	var served atomic.Uint32
	return func() bool {
		above, at := parent.QueuedFrom(level)
		return above || (served.Add(1)%turnBatch == 0 && at)
	}
}

// taskLevel is a Pool engine's Config.Level: a sub-pool's worker waits at its sub-pool's
// level, everything else at 0.
// relayTask is a Pool engine's worker.Config.Relay: a sub-pool's worker relays. It is called
// under the parent's lock, which orders its mark before the worker's run.
func relayTask(t task, starting bool) bool {
	w, ok := t.(*subWorker)
	if !ok {
		return false
	}
	was := w.relay
	w.relay = starting
	return starting || was
}

func taskLevel(t task) int {
	if w, ok := t.(*subWorker); ok {
		return w.level
	}
	return 0
}
