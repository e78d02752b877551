package suites

import (
	"math/rand"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// pondWorkers is the maximum number of workers pond's benchmarks give every pool.
const pondWorkers = 200_000

// pondLoads are pond's workloads: users × tasks per user, with 10ms between two submissions of
// one user in the two middle ones.
func pondLoads() []struct {
	name string
	load load
} {
	return []struct {
		name string
		load load
	}{
		{"1u-1Mt", load{users: 1, perUser: shrink(1_000_000, 1000)}},
		{"100u-10Kt", load{users: shrink(100, 10), perUser: shrink(10_000, 100)}},
		{"1Ku-1Kt", load{users: shrink(1000, 100), perUser: shrink(1000, 100), interval: 10 * time.Millisecond}},
		{"10Ku-100t", load{users: shrink(10_000, 1000), perUser: shrink(100, 10), interval: 10 * time.Millisecond}},
		{"1Mu-1t", load{users: shrink(1_000_000, 1000), perUser: 1}},
	}
}

// pondTasks are pond's two tasks: an I/O-like sleep and a tiny computation.
var pondTasks = []namedTask{
	{"sleep10ms", func() { time.Sleep(10 * time.Millisecond) }, true},
	{"randfloat", func() { _ = rand.Float64() }, false},
}

// BenchmarkPond reruns alitto/pond's comparison: for each workload and task, a fresh pool of
// 200,000 workers (its creation is measured) runs every task of every user. The static floor
// takes no part where the users' submitting is the workload: with pauses between submissions,
// or with more users than workers (1Mu-1t, where starting the million users is most of the
// time and the static floor would skip it). Inline runs only the rand.Float64 task (see
// skipInline).
func BenchmarkPond(b *testing.B) {
	workers := shrink(pondWorkers, 1000)
	for _, w := range pondLoads() {
		for _, t := range pondTasks {
			for _, c := range contenders.All {
				if (w.load.interval > 0 || w.load.users > workers) && isStatic(c) {
					continue
				}
				if skipInline(c, t.sleeps) {
					continue
				}
				b.Run("load="+w.name+"/task="+t.name+"/pool="+c.Name, func(b *testing.B) {
					runLoad(b, c, workers, w.load, t.task)
				})
			}
		}
	}
}
