package crew

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew/internal/adaptive"
)

// CPUs is the maxWorkers that keeps a pool's limit at runtime.GOMAXPROCS(0), the limit that
// suits tasks that compute rather than wait. [New], [NewFunc], [Pool.Sub], [Pool.Resize] and
// [FuncPool.Resize] take it. The pool reads GOMAXPROCS when it is made or resized,
// and again at most once a second while tasks are being submitted or [Pool.Stats] is called,
// and takes the new value as [Pool.Resize] would: since Go 1.25 the runtime changes
// GOMAXPROCS when a container's CPU limit changes, and a program may change it itself. Between
// two readings the pool keeps the last value; an idle pool reads nothing and keeps no timer.
// A Resize to a number stops the following; [Pool.Stop] stops it too.
//
// Stats.MaxWorkers reports the value in force. With [WithAdaptiveLimit], CPUs is the ceiling
// the adaptive limit moves under. [WithMinWorkers] is checked against GOMAXPROCS when the
// pool is made.
const CPUs = -1

// WithAdaptiveLimit makes the pool choose its own limit, between min and the maxWorkers given
// to [New] (the ceiling), from how long its tasks run. It is for tasks that wait on something
// of limited capacity (a database, a service, a disk) whose capacity is not known or
// changes: the pool finds how many tasks it can run at once before they start queueing
// inside that resource, and keeps the limit a quarter above that. It optimises throughput
// first and run time second: the resource stays busy while a task runs about a quarter longer
// than it does with the resource to itself, instead of the many times longer a limit far
// above the resource's capacity gives.
//
// The control follows TCP Vegas and Netflix's concurrency-limits (its Vegas and Gradient2
// limiters, https://github.com/Netflix/concurrency-limits): the pool times every task, and
// every window of completions (four per task the limit allows, at least 32 and at most 1024,
// counted once the tasks running when the limit last changed have finished) it compares the
// median run time with the shortest seen, and the throughput with what that shortest run
// time needs. The limit grows while throughput fills it without run times rising, by up to
// a quarter per window (a raise that brings no more throughput is undone), and falls when
// run times grow with the number running (two windows in a row), by up to half per window.
// The first windows halve the tasks in flight while the throughput holds, so a pool started
// far above the resource's capacity comes down in a few windows: from a ceiling of 256 to a
// resource of 16 slots of 2 ms, in about 0.3 s; after a change of the resource's capacity
// it follows within tens of windows. A change of the limit happens at most once per window,
// so a limit of n moves at most once per min(max(32, 4n), 1024) completions. Every 32 to
// 512 windows the limit probes in the same way, holding the tasks in flight at half for a
// window or two. A pool that runs fewer tasks than its limit allows sees the limit come
// down to about a quarter above what it runs, and grow again, by up to a quarter per
// window, when more tasks wait.
//
// [Stats].MaxWorkers reports the current limit, and the limit is what [Pool.Resize]
// promises: no task starts while MaxWorkers or more run. The pool starts at the ceiling.
// [Pool.Resize] on an adaptive pool sets the ceiling: a limit above the new ceiling comes
// down to it at once, a lower one stays and may grow to it; [CPUs] makes the ceiling follow
// GOMAXPROCS. A min above the ceiling counts as the ceiling. [Pool.SubmitN] checks a weight
// against the ceiling. Tasks that panic are not timed; a sub-pool's tasks are timed by the
// sub-pool (which may have its own WithAdaptiveLimit), not by its parent.
//
// When not to use it: tasks that compute (their run time does not grow with the number
// running, since the processors take turns between tasks, so only the throughput tells;
// [CPUs] knows the answer without measuring); tasks whose run times differ widely from task
// to task for reasons other than load (a mix of quick and slow kinds on one pool reads as
// queueing: give each kind a pool or sub-pool); and pools that run a few tasks a second,
// which need many seconds per window. The limit only reacts to run times and throughput,
// so a resource that fails fast under overload (errors instead of slowness) is not seen as
// overloaded. And a process short of processors makes its tasks wait for one after their
// call returns: the limit reads that as slowness too, and may stay below the resource's
// capacity while it lasts.
//
// Without this option a pool reads no clock per task and spends nothing on it. With it, each
// task costs two clock readings and a few atomic operations. It panics if min is less than 1.
func WithAdaptiveLimit(min int) Option {
	if min < 1 {
		panic(fmt.Sprintf("crew: WithAdaptiveLimit: min must be >= 1, got %d", min))
	}
	return func(c *config) { c.adaptiveMin = min }
}

// workersFor returns the limit maxWorkers stands for: GOMAXPROCS for CPUs. It panics, naming
// call, for a value that is neither at least 1 nor CPUs.
func workersFor(call string, maxWorkers int) int {
	if maxWorkers == CPUs {
		return runtime.GOMAXPROCS(0)
	}
	if maxWorkers < 1 {
		panic(fmt.Sprintf("crew: %s: maxWorkers must be >= 1 or CPUs, got %d", call, maxWorkers))
	}
	return maxWorkers
}

// newLimit returns the adaptive limit of an engine whose ceiling is ceiling, with c's floor
// and clock.
func newLimit(c config, ceiling int, resize func(int), running func() int) *adaptive.Limit {
	return adaptive.New(adaptive.Config{
		Floor: c.adaptiveMin, Ceiling: ceiling,
		Resize: resize, Running: running, Now: c.now,
	})
}

// poke has GOMAXPROCS read within a second if the limit follows it (CPUs).
func (c *core[T]) poke() {
	if c.sizing.follow.Load() {
		c.sizing.poke()
	}
}

// setLimit applies a limit set by Resize or read from GOMAXPROCS: the adaptive limit's
// ceiling, or the engine's limit.
func (c *core[T]) setLimit(n int) {
	if c.limit != nil {
		c.limit.SetCeiling(n)
		return
	}
	c.e.Resize(n)
}

// ceiling returns the highest limit the pool may take: the adaptive limit's ceiling, or the
// limit.
func (c *core[T]) ceiling() int {
	if c.limit != nil {
		return c.limit.Ceiling()
	}
	return c.e.Counters().MaxWorkers
}

// halt stops the engine and the readings of GOMAXPROCS; once it returns, no timer callback
// of the pool runs.
func (c *core[T]) halt() {
	c.e.Stop()
	c.sizing.stop()
}

// resizeLimit applies a limit the adaptive limit chose.
func (c *core[T]) resizeLimit(n int) {
	if c.onLimit != nil {
		c.onLimit(n)
	}
	c.e.Resize(n)
}

// sizing owns every change of a pool's limit after New: Resize, and the readings of
// GOMAXPROCS for CPUs. The limit it sets is the engine's, or the adaptive limit's ceiling.
//
// CPUs re-reads GOMAXPROCS without a goroutine of its own and without cost to an idle pool: a
// submit that finds no reading due arms a one-second timer (one atomic load per submit
// otherwise), and the timer's callback reads GOMAXPROCS and disarms, so the next submit arms
// it again. Stats reads GOMAXPROCS itself when a second has passed. A pool that is not
// following GOMAXPROCS pays one atomic load per submit (follow), nothing more.
type sizing struct {
	follow atomic.Bool // the limit follows GOMAXPROCS
	armed  atomic.Bool // the timer is set, or being set, to read it

	mu      sync.Mutex
	set     func(n int)      // applies a limit
	now     func() time.Time // the pool's clock
	procs   int              // GOMAXPROCS as last read
	read    time.Time        // when it was last read
	timer   *time.Timer
	stopped bool
	ticks   sync.WaitGroup // the timer's callbacks armed and not yet returned
}

// init prepares s: set applies a limit, now is the clock (nil: time.Now), and with cpus the
// limit follows GOMAXPROCS from procs, read now.
func (s *sizing) init(set func(int), now func() time.Time, cpus bool, procs int) {
	if now == nil {
		now = time.Now
	}
	s.set, s.now = set, now
	if cpus {
		s.procs, s.read = procs, now()
		s.follow.Store(true)
	}
}

// resize sets the limit to maxWorkers, or to GOMAXPROCS and following it for CPUs.
func (s *sizing) resize(maxWorkers int) {
	n := workersFor("Resize", maxWorkers)
	s.mu.Lock()
	defer s.mu.Unlock()
	if maxWorkers == CPUs {
		s.procs, s.read = n, s.now()
	}
	s.follow.Store(maxWorkers == CPUs)
	s.set(n)
}

// poke arms the timer that reads GOMAXPROCS a second from now, unless it is armed. Submits
// call it while the limit follows GOMAXPROCS.
func (s *sizing) poke() {
	if s.armed.Load() || !s.armed.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || !s.follow.Load() {
		s.armed.Store(false)
		return
	}
	s.ticks.Add(1)
	if s.timer == nil {
		s.timer = time.AfterFunc(time.Second, s.tick)
	} else {
		s.timer.Reset(time.Second)
	}
}

// tick is the timer's callback.
func (s *sizing) tick() {
	defer s.ticks.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed.Store(false)
	if !s.stopped && s.follow.Load() {
		s.reread()
	}
}

// check reads GOMAXPROCS if a second has passed since the last reading; Stats calls it.
func (s *sizing) check() {
	if !s.follow.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && s.follow.Load() {
		s.reread()
	}
}

// reread reads GOMAXPROCS, unless it was read less than a second ago, and applies a change.
// Callers hold s.mu.
func (s *sizing) reread() {
	now := s.now()
	if now.Sub(s.read) < time.Second {
		return
	}
	s.read = now
	if n := runtime.GOMAXPROCS(0); n != s.procs {
		s.procs = n
		s.set(n)
	}
}

// stop ends the readings: the timer is stopped, and stop waits for a callback already
// running, which then reads nothing. That wait is short: a callback takes no lock a caller of
// Stop may hold. So once Stop returns no goroutine of the pool's sizing is left, also on a
// sub-pool stopped by its parent.
func (s *sizing) stop() {
	s.mu.Lock()
	s.stopped = true
	if s.timer != nil && s.timer.Stop() {
		s.ticks.Done()
	}
	s.mu.Unlock()
	s.ticks.Wait()
}
