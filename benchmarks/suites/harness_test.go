package suites

import (
	"flag"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// fault is what a faulty runner does to the first task it is handed.
type fault int

const (
	none     fault = iota // runs it, as every other task
	drop                  // accepts it and never runs it
	runTwice              // runs it twice
)

// faulty runs each task on the submitting goroutine, except that it applies its fault to the
// first one.
type faulty struct {
	fault fault
	first atomic.Bool
}

func (f *faulty) Submit(task func()) error {
	if f.first.CompareAndSwap(false, true) {
		switch f.fault {
		case drop:
			return nil
		case runTwice:
			task()
		}
	}
	task()
	return nil
}

func (f *faulty) StopAndWait() {}

// staticFaulty is faulty as a static runner: handed whole workloads, as the static floor is.
type staticFaulty struct{ faulty }

func (f *staticFaulty) Run(total int, task func()) {
	for range total {
		_ = f.Submit(task)
	}
}

// faultyContender is a contender whose every runner applies fault to its first task.
func faultyContender(fault fault, static bool) contenders.Contender {
	return contenders.Contender{Name: "faulty", New: func(int) contenders.Runner {
		if static {
			return &staticFaulty{faulty{fault: fault}}
		}
		return &faulty{fault: fault}
	}}
}

// harnesses are the ways the suites run a workload on a contender.
var harnesses = []struct {
	name string
	run  func(b *testing.B, c contenders.Contender)
}{
	{"runLoad/one-user", func(b *testing.B, c contenders.Contender) {
		runLoad(b, c, 2, load{users: 1, perUser: 3}, func() {})
	}},
	{"runLoad/users", func(b *testing.B, c contenders.Contender) {
		runLoad(b, c, 2, load{users: 2, perUser: 3}, func() {})
	}},
	{"runN", func(b *testing.B, c contenders.Contender) { runN(b, c, 2, func() {}) }},
	{"runParallel", func(b *testing.B, c contenders.Contender) { runParallel(b, c, 2, 1, func() {}) }},
}

// oneIteration makes testing.Benchmark run a benchmark once (-test.benchtime 1x) until the
// test ends.
func oneIteration(t *testing.T) {
	t.Helper()
	f := flag.Lookup("test.benchtime")
	old := f.Value.String()
	if err := f.Value.Set("1x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// checkFault runs every harness, with runners that submit task by task and with static ones,
// on a contender whose runners apply fault to their first task, and reports through t each
// harness whose benchmark did not fail as it should. The same harnesses on runners without a
// fault must succeed, so that a failure is the fault's doing.
func checkFault(t *testing.T, fault fault) {
	oneIteration(t)
	for _, h := range harnesses {
		for _, static := range []bool{false, true} {
			kind := "submit"
			if static {
				kind = "static"
			}
			t.Run(h.name+"/"+kind, func(t *testing.T) {
				if r := testing.Benchmark(func(b *testing.B) { h.run(b, faultyContender(none, static)) }); r.N == 0 {
					t.Fatal("failed with every task run once")
				}
				if r := testing.Benchmark(func(b *testing.B) { h.run(b, faultyContender(fault, static)) }); r.N != 0 {
					t.Errorf("did not fail: %d iterations", r.N)
				}
			})
		}
	}
}

func TestBenchmarkFailsWhenATaskIsMissing(t *testing.T) { checkFault(t, drop) }

// TestBenchmarkFailsWhenATaskRunsTwice checks that the count must be exact, not at least the
// number of tasks submitted.
func TestBenchmarkFailsWhenATaskRunsTwice(t *testing.T) { checkFault(t, runTwice) }
