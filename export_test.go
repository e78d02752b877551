package crew

import (
	"time"

	"github.com/crewgo/crew/internal/worker"
)

// WithClock replaces the clock the pool reads for idle reaping.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// ReapIdle runs one idle-reaping pass as if the clock read now, and returns how many workers
// it dismissed.
func ReapIdle(p *Pool, now time.Time) int { return p.core.e.ReapIdle(now) }

// OnLimit makes p's adaptive limit call f with each limit it chooses, before it applies it.
// Call it before submitting.
func OnLimit(p *Pool, f func(n int)) { p.core.onLimit = f }

// BlockedSubmitters returns how many submitters wait for room in p's full queue.
func BlockedSubmitters(p *Pool) int { return p.core.e.BlockedSubmitters() }

// Removed returns how many accepted tasks of p were taken out unrun (by StopNow).
func Removed(p *Pool) uint64 { return p.core.e.Counters().Removed }

// RemovedFunc returns how many accepted calls of p were taken out unrun (by StopNow).
func RemovedFunc[T any](p *FuncPool[T]) uint64 { return p.core.e.Counters().Removed }

// Parked returns how many of p's workers are parked, waiting to be handed a task: unlike
// Stats.Idle, it leaves out workers between two tasks or lingering before they park.
func Parked(p *Pool) int { return p.core.e.Counters().Idle }

// PausePoll is how often a submitter waiting on a pause looks again.
const PausePoll = worker.PausePoll
