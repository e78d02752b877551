package suites

import (
	"flag"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// load is a fixed workload: users goroutines each submit perUser tasks, pausing interval
// between two submissions.
type load struct {
	users, perUser int
	interval       time.Duration
}

func (l load) total() int { return l.users * l.perUser }

// quick is set by crewbench's quick run: workloads that take seconds at their published size
// run scaled down, and are named by the sizes that ran (see pondLoads).
var quick = flag.Bool("suites.quick", false, "run pond's workloads scaled down to about a tenth of their time, named by their sizes")

// loadName names a workload by its sizes, as pond does: "1u-1Mt" is 1 user submitting 1M tasks,
// "10Ku-100t" 10K users submitting 100 each.
func loadName(users, perUser int) string {
	return fmt.Sprintf("%su-%st", count(users), count(perUser))
}

// count writes n as pond's workload names do: 1M, 10K, 100.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "K"
	}
	return strconv.Itoa(n)
}

// shrink divides n by div under -short, to at least 1: how CI keeps a run fast without
// skipping a benchmark.
func shrink(n, div int) int {
	if !testing.Short() {
		return n
	}
	return max(1, n/div)
}

// isStatic reports whether c is handed whole workloads rather than single tasks.
func isStatic(c contenders.Contender) bool {
	r := c.New(1)
	defer r.StopAndWait()
	_, ok := r.(contenders.Static)
	return ok
}

// namedTask is one of a suite's tasks: its name in the benchmark's name, the task, and whether
// it sleeps (see skipInline).
type namedTask struct {
	name   string
	task   func()
	sleeps bool
}

// skipInline reports whether c is the inline reference and the task one that sleeps: one
// submitter would wait out such tasks one after another, where a pool's workers overlap them.
// A task that only computes holds a processor while it runs, so however many goroutines
// submit, no more such tasks run on them at once than there are processors, and every limit
// in these suites is at least GOMAXPROCS.
func skipInline(c contenders.Contender, sleeps bool) bool {
	return c.Name == contenders.Inline && sleeps
}

// tally counts the calls of a task, for the check every benchmark makes that its tasks really
// ran: after each timed round, exactly as many calls as tasks submitted. It is a count, not a
// record of each task, so a task run twice would hide one never run; telling the tasks apart
// would take a closure or a slot per task, work and allocation that the timed loop would then
// measure.
type tally struct{ ran atomic.Int64 }

// counted returns task wrapped so that each call is counted.
func (t *tally) counted(task func()) func() {
	return func() {
		task()
		t.ran.Add(1)
	}
}

// reset starts a new count.
func (t *tally) reset() { t.ran.Store(0) }

// check fails b unless exactly want calls were counted since the tally was made or reset.
func (t *tally) check(b *testing.B, c contenders.Contender, want int) {
	if got := t.ran.Load(); got != int64(want) {
		b.Fatalf("%s: %d of %d tasks ran", c.Name, got, want)
	}
}

// runLoad runs l once per iteration of b on a fresh runner of c with the given workers: making
// the pool is part of the measured time, as in the suites that published these workloads,
// except for a static runner, whose goroutines are started before the clock. task runs
// l.total() times per iteration; b fails unless exactly that many calls are counted (see
// tally).
func runLoad(b *testing.B, c contenders.Contender, workers int, l load, task func()) {
	b.ReportAllocs()
	var runs tally
	counted := runs.counted(task)
	static := isStatic(c)
	b.ResetTimer()
	for range b.N {
		runs.reset()
		r := startRunner(b, c, workers, static)
		if s, ok := r.(contenders.Static); ok {
			s.Run(l.total(), counted)
		} else {
			submitLoad(b, r, l, counted)
		}
		r.StopAndWait()
		runs.check(b, c, l.total())
	}
}

// startRunner starts a runner of c; a static runner is started with the clock stopped.
func startRunner(b *testing.B, c contenders.Contender, workers int, static bool) contenders.Runner {
	if !static {
		return c.New(workers)
	}
	b.StopTimer()
	r := c.New(workers)
	b.StartTimer()
	return r
}

// submitLoad submits l to r from l.users goroutines (from the calling one when there is a
// single user) and returns when every submission has returned.
func submitLoad(b *testing.B, r contenders.Runner, l load, task func()) {
	user := func() error {
		for i := range l.perUser {
			if i > 0 && l.interval > 0 {
				time.Sleep(l.interval)
			}
			if err := r.Submit(task); err != nil {
				return err
			}
		}
		return nil
	}
	if l.users == 1 {
		if err := user(); err != nil {
			b.Fatalf("submit: %v", err)
		}
		return
	}
	var wg sync.WaitGroup
	var firstErr atomic.Value
	wg.Add(l.users)
	for range l.users {
		go func() {
			defer wg.Done()
			if err := user(); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatalf("submit: %v", err)
	}
}

// runN runs task b.N times on one runner of c made before the clock starts, submitted from the
// benchmark's goroutine, and fails b unless exactly b.N calls are counted (see tally): the
// per-task cost of a pool that already exists.
func runN(b *testing.B, c contenders.Contender, workers int, task func()) {
	runOnOne(b, c, workers, task, func(r contenders.Runner, counted func()) error {
		for range b.N {
			if err := r.Submit(counted); err != nil {
				return err
			}
		}
		return nil
	})
}

// runParallel submits b.N tasks from b.RunParallel's goroutines (parallelism per
// GOMAXPROCS) to one runner of c made before the clock starts, waits for them, and fails b
// unless exactly b.N calls are counted (see tally). A static runner is handed the b.N tasks
// at once instead, with no submitters, so parallelism does not apply to it.
func runParallel(b *testing.B, c contenders.Contender, workers, parallelism int, task func()) {
	runOnOne(b, c, workers, task, func(r contenders.Runner, counted func()) error {
		var failed atomic.Value
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := r.Submit(counted); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
		err, _ := failed.Load().(error)
		return err
	})
}

// runOnOne is the frame of runN and runParallel: it makes one runner of c before the clock
// starts, times the b.N counted tasks that submit hands it (a static runner is handed them at
// once instead) until the runner has stopped, and fails b if submit failed or the count of
// calls is not b.N.
func runOnOne(b *testing.B, c contenders.Contender, workers int, task func(),
	submit func(r contenders.Runner, counted func()) error) {
	b.ReportAllocs()
	var runs tally
	counted := runs.counted(task)
	r := c.New(workers)
	b.ResetTimer()
	var err error
	if s, ok := r.(contenders.Static); ok {
		s.Run(b.N, counted)
	} else {
		err = submit(r, counted)
	}
	r.StopAndWait()
	b.StopTimer()
	if err != nil {
		b.Fatalf("submit: %v", err)
	}
	runs.check(b, c, b.N)
}
