// Package contenders puts crew, its peers and a few hand-written baselines behind one small
// interface, so that every suite runs the same workload on each of them and adding a peer is
// one file that appends to [All].
//
// A [Runner] is a started pool: [Runner.Submit] hands it one task and [Runner.StopAndWait]
// returns once every submitted task has finished and the pool has been released. Adapters of
// pools that have no way to wait for their tasks track them with a sync.WaitGroup, which is
// what their users do too.
//
// A runner may also implement [Static]: it is then handed the whole workload at once instead of
// task by task. Only the static floor does; it is a reference, not a pool.
package contenders

import (
	"fmt"
	"slices"
)

// Runner is a started pool. Its methods are called from the benchmark's goroutines: Submit
// from one or many at a time, StopAndWait once, after every Submit has returned.
type Runner interface {
	// Submit hands task to the pool; it may block while the pool is full. A non-nil error
	// means the task was not accepted.
	Submit(task func()) error
	// StopAndWait returns once every accepted task has finished and releases the pool.
	StopAndWait()
}

// Static is implemented by runners that take the whole workload at once: Run calls task
// total times, split across the runner's goroutines, and returns when every call has returned.
type Static interface {
	Run(total int, task func())
}

// Contender names a pool implementation and starts runners of it.
type Contender struct {
	// Name is the last element of a benchmark's name, e.g. "crew" or "ants-func".
	Name string
	// Kind says what the contender stands for in the tables.
	Kind Kind
	// New starts a runner that runs at most workers tasks at a time (baselines without a
	// limit ignore it).
	New func(workers int) Runner
}

// Kind sorts the contenders for the tables.
type Kind uint8

const (
	// Bounded is a pool that runs at most workers tasks at a time: crew's peers and the
	// channel baselines.
	Bounded Kind = iota
	// Crew is crew itself, bounded too: its Pool and its FuncPool.
	Crew
	// Unbounded runs every task at once, whatever the limit: the goroutine per task.
	Unbounded
	// Floor is not a pool but a measure of what the work costs with none in the way: the
	// static floor and inline. The faster of the two in a scenario is its floor.
	Floor
)

// Reference is the name of the contender that ratios are computed against.
const Reference = "crew"

// All lists every contender in the order tables show them: crew first, then its peers, then
// the baselines.
var All []Contender

// order is the order of All; a contender missing from it goes after the ones listed.
var order = []string{
	"crew", "crew-func", "ants", "ants-func", "pond", "pond-v2", "workerpool", "conc",
	"errgroup", "gopool", "goroutines", "chan-unbuffered", "chan-buffered", "static-floor",
	Inline,
}

// register inserts c into All at its place in order; each adapter file calls it from an init
// function.
func register(c Contender) {
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	for _, o := range All {
		if o.Name == c.Name {
			panic(fmt.Sprintf("contenders: %q registered twice", c.Name))
		}
	}
	i := len(All)
	for i > 0 && rank(All[i-1].Name) > rank(c.Name) {
		i--
	}
	All = slices.Insert(All, i, c)
}

// mustOK panics with the contender's name when a constructor fails: constructors only fail
// on arguments the suites never pass.
func mustOK(name string, err error) {
	if err != nil {
		panic(fmt.Sprintf("contenders: %s: %v", name, err))
	}
}
