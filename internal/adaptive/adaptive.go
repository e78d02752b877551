// Package adaptive moves a pool's worker limit between a floor and a ceiling from the run
// times of its tasks, in the manner of TCP Vegas and of Netflix's concurrency-limits (its
// Vegas and Gradient2 limiters): a task that runs longer when more run beside it waits for
// something inside the resource it uses, so the limit comes down; a throughput that fills the
// limit at the run time the resource gives when nothing queues in it lets the limit go up.
//
// # Windows
//
// The pool reports each task's run time (Observe). The limit measures in windows: after a
// change it ignores the completions of the tasks that were running when it changed (they
// started under the old limit), then takes the next window of completions: windowPerTask
// per task the limit allows, between minWindow and maxWindow, so that a window spans a few
// run times. From a window it reads
// the median run time M (a median, since a task delayed by the machine rather than the
// resource should not move it) and the throughput X (every completion since the window
// began, the skipped ones too, per second: the resource's throughput is what it is whichever
// tasks complete). It keeps B, the lowest M seen since the last probe: the run time of a
// task that waits for nothing.
//
// # The control law
//
// By Little's law, X·B tasks in flight would carry throughput X with no queueing at all. The
// limit is steered towards headroom·X·B, with a dead band of deadBand either side:
//
//   - above the band, with M at most headroom/(1+deadBand)·B: the throughput fills the limit
//     while run times stay near B, so the resource takes more. The limit grows by at most a
//     quarter (and at least one) per window. A pool that does not use its limit never gets
//     there, so its limit does not grow on idle capacity. The test of M caps the tasks in
//     flight (X·M) at the limit: completions that bunch up make X read high in a window.
//     The window after a raise checks it: a raise that did not bring gainShare of its
//     proportional gain in throughput is undone, and no raise is tried for plateauWindows
//     windows. Tasks that compute end up there: more of them in flight do not run longer
//     (the processors take turns between tasks) but do not finish more either.
//   - below the band with M above inflated·B, in two windows running (one slow window may be
//     the machine's doing): tasks queue inside the resource, and the limit goes down to the
//     target, by at most half per window.
//
// A cut is checked: if the window after it does not show at least half the shortening of
// run times that queueing predicts (max(new/old limit, B/M) of the old run time), the run
// times were not queueing. The resource got slower, or the process is short of processors
// (its tasks wait for one once their call returns); either way fewer tasks do not help. The
// cut is undone, and that window's M becomes B.
//
// With a resource of C slots and a fixed service time, M grows as limit/C·B once the limit
// passes C while X stays at C/B, so the limit settles between C·headroom/(1+deadBand) and
// C·headroom/(1-deadBand): the resource stays busy while a task runs about headroom·B.
//
// # Probes
//
// B only falls between probes, and a B measured while tasks queued would keep them queued.
// So first of all (a pool may start far above its resource's capacity, where no window ever
// shows B), and then every probeEvery windows, the limit probes: it halves the tasks in
// flight, window after window, while the throughput stays above keepRate of the last (the
// tasks taken away only waited, inside the resource or for a processor), and takes B afresh
// from the last two windows. It then sets the limit headroom above the fewest tasks in flight
// that kept the throughput; if the first halving already lost throughput, back to the limit
// before the probe, but no more than headroom above the tasks in flight then (raising a limit
// far above them would buy nothing and start a worker for each queued task at once). So a
// pool that uses fewer workers than its limit sees the limit come down to a quarter above
// what it uses, and grow again, a quarter per window, when it needs more. A probe that finds
// B where it was doubles the time to the next one, up to maxProbeEvery windows. A probe holds
// the limit below the resource's capacity for a window or two.
//
// Time is a parameter: windows read Config.Now at their first completion and their last,
// and run times are measured by the caller.
package adaptive

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Constants of the control law; see the package comment for their roles. Why these values:
// measurements.md (internal/worker), "The adaptive limit".
const (
	headroom       = 1.25 // the limit kept above the tasks the throughput needs at run time B
	inflated       = 1.1  // a mean run time above inflated·B is queueing
	keepRate       = 0.9  // and whose throughput stays above keepRate of the last one's
	minWindow      = 32   // completions in the smallest window
	maxWindow      = 1024 // and in the largest
	windowPerTask  = 4    // completions per task the limit allows, between those bounds
	probeEvery     = 32   // windows between probes while B moves
	maxProbeEvery  = 512  // windows between probes while each probe finds B where it was
	sameBase       = 0.25 // a probe's B within this fraction of the last is where it was
	gainShare      = 0.25 // a raise must bring this share of its proportional throughput gain
	plateauWindows = 4    // windows without a raise after one that brought none
	deadBand       = 0.1  // a target within this fraction of the limit leaves it where it is
	bigCut         = 0.9  // a cut expected to shorten run times to this fraction or less is checked
)

// Config is what a Limit acts on.
type Config struct {
	Floor, Ceiling int // the bounds, 1 <= Floor; a Floor above Ceiling counts as Ceiling
	// Resize sets the limit the pool enforces. It is called with the Limit's lock held, so it
	// must not call back into the Limit.
	Resize func(n int)
	// Running returns the number of tasks running now; called once per change of the limit.
	Running func() int
	// Now is the clock for window throughput; nil means time.Now.
	Now func() time.Time
}

// Limit is an adaptive worker limit. It starts at the ceiling. All its methods are safe for
// concurrent use.
type Limit struct {
	w     atomic.Pointer[window]
	now   func() time.Time
	epoch time.Time

	mu sync.Mutex
	// spare is the window before the current one, reused for the next (begin), and sorted
	// holds a window's run times for decide: a pool's windows allocate nothing in steady state.
	spare   *window
	sorted  []int64
	cfg     Config
	floor   int           // cfg.Floor, at most the ceiling
	ceiling int           // the highest limit allowed
	limit   int           // the current limit
	base    time.Duration // B: 0 until the first window

	probing bool // halving to find B
	windows int  // windows since the last probe
	every   int  // windows between probes
	doubt   bool // the last window called for a cut, which waits for a second opinion
	// After a raise: the limit and the throughput before it (0: no raise to check); and the
	// windows left before the next raise may be tried.
	grewFrom int
	grewRate float64
	plateau  int
	// After a cut: the mean run time the window before it measured, and the ratio of mean
	// run times the cut should bring if tasks queued (0: no cut to check).
	cutMean time.Duration
	cutTo   float64
	cutFrom int // the limit before the cut
	// While probing: the mean run time of the window before, and the limit, mean run time
	// and throughput before the probe began.
	last     time.Duration
	lastRate float64
	held     float64 // the fewest tasks in flight that kept the throughput; 0: none yet
	preN     int
	preMean  time.Duration
	preRate  float64
}

// window is one window of completions: the (skip, skip+size]th completions after it began
// are measured. A window is reused once two more have begun (Limit.begin), and a completion
// that loaded it as the current window may still count in it then: every field is atomic,
// so such a straggler costs one measurement of one window, never a wrong memory access.
type window struct {
	seen  atomic.Int64   // completions counted
	added atomic.Int64   // measured completions whose run time is in runs
	runs  []atomic.Int64 // the measured run times, ns; size of them in use, never reassigned
	skip  atomic.Int64
	size  atomic.Int64
	begun atomic.Int64 // the clock when it began, ns since epoch; 0: at its first completion
}

// begin makes a window that skips skip completions and then measures size, begun at the
// clock reading begun, the current one. It reuses the window before the current one when
// its runs are long enough: only a ceiling raised beyond all before allocates. Callers hold
// l.mu or own l.
func (l *Limit) begin(skip, size, begun int64) {
	w := l.spare
	if w == nil || int64(len(w.runs)) < size {
		w = &window{runs: make([]atomic.Int64, size)}
	}
	w.seen.Store(0)
	w.added.Store(0)
	w.skip.Store(skip)
	w.size.Store(size)
	w.begun.Store(begun)
	l.spare = l.w.Swap(w)
}

// New returns a Limit at cfg.Ceiling, which it does not apply: the pool starts there.
func New(cfg Config) *Limit {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Limit{cfg: cfg, now: cfg.Now, probing: true, every: probeEvery}
	l.epoch = l.now()
	l.bound(cfg.Ceiling)
	l.limit = l.ceiling
	// The first tasks find the resource empty and run faster than the ones after them: the
	// first window skips as many as the limit lets start at once. It begins at the first
	// completion, not now: the pool may wait a long time for its first task.
	l.begin(int64(l.limit), windowSize(l.limit), 0)
	return l
}

// bound sets the ceiling and the floor under it. Callers hold l.mu or own l.
func (l *Limit) bound(ceiling int) {
	l.ceiling = max(1, ceiling)
	l.floor = min(max(1, l.cfg.Floor), l.ceiling)
}

// Limit returns the current limit.
func (l *Limit) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// Ceiling returns the current ceiling.
func (l *Limit) Ceiling() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ceiling
}

// SetCeiling moves the ceiling to n (at least 1). A limit above it comes down to it at once;
// a lower one stays and may grow up to it.
func (l *Limit) SetCeiling(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bound(n)
	l.preN = min(l.preN, l.ceiling)
	if l.limit > l.ceiling {
		l.set(l.ceiling)
	} else if l.limit < l.floor {
		l.set(l.floor)
	}
}

// Observe counts one task's completion after it ran for run. Only the completions a window
// measures cost more than one atomic add; the last of a window decides, under the lock.
func (l *Limit) Observe(run time.Duration) {
	w := l.w.Load()
	k := w.seen.Add(1)
	if k == 1 && w.begun.Load() == 0 {
		w.begun.CompareAndSwap(0, max(1, l.clock()))
	}
	size, skip := w.size.Load(), w.skip.Load()
	if k <= skip || k > skip+size {
		return
	}
	w.runs[k-skip-1].Store(int64(run))
	if w.added.Add(1) == size {
		l.decide(w)
	}
}

// clock reads the clock as nanoseconds since epoch.
func (l *Limit) clock() int64 { return int64(l.now().Sub(l.epoch)) }

// decide ends window w and moves the limit. The throughput counts every completion since the
// window began, the skipped ones too: the resource's throughput is what it is whichever tasks
// complete, and the longer span counts bursts of completions better. A window that took no
// time on the clock moves nothing: a new one begins.
func (l *Limit) decide(w *window) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Load() != w { // a change of the limit began a new window meanwhile
		return
	}
	now := l.clock()
	elapsed := now - w.begun.Load()
	if elapsed <= 0 || w.begun.Load() == 0 {
		l.begin(0, windowSize(l.limit), now)
		return
	}
	runs := l.sorted[:0]
	for i := range w.size.Load() {
		runs = append(runs, w.runs[i].Load())
	}
	l.sorted = runs
	slices.Sort(runs)
	median := time.Duration(runs[len(runs)/2])
	rate := float64(w.skip.Load()+int64(len(runs))) / (float64(elapsed) / float64(time.Second))
	l.step(median, rate)
}

// step is the control law for one window of mean run time mean and throughput rate (per
// second). Callers hold l.mu.
func (l *Limit) step(mean time.Duration, rate float64) {
	if l.probing {
		l.probe(mean, rate)
		return
	}
	if l.cutTo != 0 {
		// A cut that did not shorten run times by half what queueing predicts did not
		// relieve a queue: the resource itself got slower, and B is stale.
		stale := float64(mean) > float64(l.cutMean)*(1-(1-l.cutTo)/2)
		l.cutTo = 0
		if stale {
			// The cut is undone, and the run time it left is the new B: a probe would
			// measure a resource that got slower as well, but a process short of
			// processors (whose tasks wait for one after their call returns) would
			// read to it as queueing, and the limit would fall to the floor.
			l.raiseBase(mean)
			l.set(l.clamp(l.cutFrom)) // the ceiling may have come down since the cut
			return
		}
	}
	if mean < l.base {
		l.base = mean
	}
	if l.windows++; l.windows >= l.every && l.limit > l.floor {
		l.startProbe(mean, rate)
		return
	}
	if l.grewFrom != 0 {
		// The window after a raise: more tasks in flight that did not raise the throughput
		// by a quarter of their share only wait (for a processor, say, as tasks that
		// compute do). Back halfway (a raise from just below the resource's capacity
		// brings little, yet its first steps were needed), and no raise for a few windows.
		from, fromRate := l.grewFrom, l.grewRate
		l.grewFrom = 0
		if rate < fromRate*(1+gainShare*(float64(l.limit)/float64(from)-1)) {
			l.plateau = plateauWindows
			l.set(l.clamp(from + (l.limit-from)/2))
			return
		}
	}
	if l.plateau > 0 {
		l.plateau--
	}
	target := headroom * rate * l.base.Seconds()
	n := l.limit
	doubt := l.doubt
	l.doubt = false
	switch {
	case target >= (1+deadBand)*float64(l.limit) &&
		float64(mean) <= headroom/(1+deadBand)*float64(l.base) && l.plateau == 0:
		// The second test is the first with the tasks in flight (rate·mean by Little's
		// law) capped at the limit: completions that bunch up in a window can make the
		// rate read high, but no more tasks than the limit were in flight.
		n = min(int(math.Ceil(target)), max(l.limit+1, int(headroom*float64(l.limit))))
		if n = l.clamp(n); n > l.limit {
			l.grewFrom, l.grewRate = l.limit, rate
		}
	case target <= (1-deadBand)*float64(l.limit) && float64(mean) > inflated*float64(l.base):
		if !doubt {
			// One window may be slow for reasons that pass (a pause of the process, a
			// neighbour on the machine): cut only if the next one says so too.
			l.doubt = true
			l.set(l.limit)
			return
		}
		n = l.clamp(max(int(math.Ceil(target)), l.limit/2))
		if expect := max(float64(n)/float64(l.limit), float64(l.base)/float64(mean)); expect <= bigCut {
			l.cutMean, l.cutTo, l.cutFrom = mean, expect, l.limit
		}
	}
	l.set(l.clamp(n))
}

// startProbe records the state before a probe and halves the limit. Callers hold l.mu.
func (l *Limit) startProbe(mean time.Duration, rate float64) {
	l.cutTo, l.windows, l.grewFrom = 0, 0, 0
	l.probing = true
	l.last, l.preN, l.preMean, l.preRate = mean, l.limit, mean, rate
	l.lastRate, l.held = rate, 0
	l.set(l.halved(mean, rate))
}

// halved returns the limit that halves the tasks in flight: half the limit, or half of
// rate·mean (Little's law) when fewer ran, as while a pool's workers are still starting.
// Halving a limit that is not reached would change nothing, and a probe would read the
// unchanged run times as those of a resource with nothing queued. Callers hold l.mu.
func (l *Limit) halved(mean time.Duration, rate float64) int {
	inFlight := min(float64(l.limit), rate*mean.Seconds())
	return l.clamp(min(l.limit-1, int(inFlight/2)))
}

// probe is step while probing. Callers hold l.mu.
func (l *Limit) probe(mean time.Duration, rate float64) {
	if l.preN == 0 { // the first window of all: it is the state before the probe
		if l.limit > l.floor {
			l.startProbe(mean, rate)
			return
		}
		l.last, l.preN, l.preMean, l.preRate = mean, l.limit, mean, rate
		l.lastRate, l.held = rate, 0
	}
	// The throughput held with half the tasks in flight: the other half only waited,
	// inside the resource (run times fell as much) or for a processor. Halve again.
	if l.preN != l.limit && rate >= keepRate*l.lastRate && l.limit > l.floor {
		l.held = min(float64(l.limit), rate*mean.Seconds())
		l.last, l.lastRate = mean, rate
		l.set(l.halved(mean, rate))
		return
	}
	base := min(mean, l.last)
	l.probing = false
	if l.base > 0 && math.Abs(float64(base-l.base)) <= sameBase*float64(l.base) {
		l.every = min(2*l.every, maxProbeEvery)
		l.base = min(l.base, base)
	} else {
		l.every = probeEvery
		if l.base == 0 || base < l.base {
			l.base = base
		} else {
			l.raiseBase(base)
		}
	}
	if l.held == 0 {
		// The first halving already cost throughput: every task in flight was needed.
		// Back to the limit before the probe, but no more than headroom above the tasks
		// that were in flight then: a limit far above them buys nothing, and raising the
		// limit starts a worker for each queued task at once.
		inFlight := min(float64(l.preN), l.preRate*l.preMean.Seconds())
		l.set(l.clamp(max(min(l.preN, int(math.Ceil(headroom*inFlight))), l.limit)))
		return
	}
	// The fewest tasks in flight that kept the throughput, with the headroom.
	l.set(l.clamp(max(int(math.Ceil(headroom*l.held)), l.limit)))
}

// clamp bounds n by the floor and the ceiling. Callers hold l.mu.
func (l *Limit) clamp(n int) int {
	return min(max(n, l.floor), l.ceiling)
}

// set makes n the limit and begins a new window, which first lets the tasks running now
// finish. Callers hold l.mu.
func (l *Limit) set(n int) {
	skip := 0
	if n != l.limit {
		l.limit = n
		l.cfg.Resize(n)
		skip = l.cfg.Running()
	}
	l.begin(int64(skip), windowSize(n), l.clock())
}

// windowSize is the number of completions a window measures at limit n.
func windowSize(n int) int64 {
	return int64(min(max(windowPerTask*n, minWindow), maxWindow))
}

// raiseBase moves B halfway up to b: a window that says B is higher (a probe's, or one after
// a cut that did not shorten run times) may have been slowed by the machine, and a B set too
// high would let tasks queue until the next probe; a second such window moves it most of the
// rest of the way. Callers hold l.mu.
func (l *Limit) raiseBase(b time.Duration) {
	l.base += (b - l.base) / 2
}
