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

// BlockedSubmitters returns how many submitters wait for room in p's full queue.
func BlockedSubmitters(p *Pool) int { return p.core.e.BlockedSubmitters() }

// Removed returns how many accepted tasks of p were taken out unrun (by StopNow).
func Removed(p *Pool) uint64 { return p.core.e.Counters().Removed }

// RemovedFunc returns how many accepted calls of p were taken out unrun (by StopNow).
func RemovedFunc[T any](p *FuncPool[T]) uint64 { return p.core.e.Counters().Removed }

// StartLanes makes the pools made after it split their queue by processor from the start
// (on), rather than once submitters on two processors were seen (off, the default).
func StartLanes(on bool) { worker.StartLanes(on) }

// SplitQueue makes p split its queue by processor whenever its settings allow.
func SplitQueue(p *Pool) { p.core.e.SplitQueue() }

// Split reports whether p's queue is split by processor now.
func Split(p *Pool) bool { return p.core.e.Split() }
