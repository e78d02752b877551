package crew

import (
	"fmt"
	"math"
)

// WithRateLimit limits how fast tasks start: at most burst at once, and perSecond a second on
// average; over any window of length T, at most burst + perSecond·T tasks start. Submits are
// never limited: a task held back waits in the queue, never on a worker, and starts when its
// turn and a token come. A function that will not start (its future canceled, its context
// ended, or skipped by a Shutdown that gave up) takes no token: it leaves the queue as soon as
// its turn comes, without holding the live ones behind it back. A task that [CallerRuns] runs
// on its submitter takes a token too: the submitter waits for one. The limit starts with a full
// burst. A pool's limit also counts the
// starts of its sub-pools' tasks (and, conservatively, of their workers). It panics unless
// perSecond > 0 and burst >= 1. See [Pool.SetRateLimit] to change it.
func WithRateLimit(perSecond float64, burst int) Option {
	checkRate("WithRateLimit", perSecond, burst)
	return func(c *config) {
		c.rateSet = !math.IsInf(perSecond, 1)
		c.ratePerSecond, c.rateBurst = perSecond, burst
	}
}

func checkRate(caller string, perSecond float64, burst int) {
	if !(perSecond > 0) || burst < 1 {
		panic(fmt.Sprintf("crew: %s: need perSecond > 0 and burst >= 1, got %v and %d", caller, perSecond, burst))
	}
}

// SetRateLimit sets the limit on how fast tasks start, as [WithRateLimit] does; perSecond
// math.Inf(1) removes it. The tokens already saved are kept, up to the new burst; a new limit
// starts with a full burst. Tasks the change allows start at once. It panics unless perSecond
// > 0 and burst >= 1.
func (p *Pool) SetRateLimit(perSecond float64, burst int) {
	checkPool(p, "SetRateLimit")
	p.core.setRate(perSecond, burst)
}

// SetRateLimit sets the limit on how fast calls start; see [Pool.SetRateLimit].
func (p *FuncPool[T]) SetRateLimit(perSecond float64, burst int) {
	checkFuncPool(p, "SetRateLimit")
	p.core.setRate(perSecond, burst)
}

func (c *core[T]) setRate(perSecond float64, burst int) {
	if !math.IsInf(perSecond, 1) {
		checkRate("SetRateLimit", perSecond, burst)
	}
	c.e.SetRate(perSecond, burst)
}
