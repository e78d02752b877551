package suites

import (
	"math/rand"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// pondWorkers is the maximum number of workers pond's benchmarks give every pool.
const pondWorkers = 200_000

// pondSize is one of pond's workloads at its published size and at the quick run's, with the
// divisors -short applies to each.
type pondSize struct {
	users, perUser           int
	interval                 time.Duration
	quickUsers, quickPerUser int
	shortUsers, shortPerUser int // divisors under -short
}

// pondSizes are pond's workloads: users × tasks per user, with 10ms between two submissions of
// one user in the two middle ones. The quick run takes a tenth of the tasks where the tasks set
// the pace, and a tenth or a hundredth of each user's submissions where the pauses between
// them do (1,000 submissions 10ms apart take 10 s however fast the pool), so that each takes
// about a tenth of its time at most.
var pondSizes = []pondSize{
	{users: 1, perUser: 1_000_000, quickUsers: 1, quickPerUser: 100_000, shortUsers: 1, shortPerUser: 1000},
	{users: 100, perUser: 10_000, quickUsers: 100, quickPerUser: 1000, shortUsers: 10, shortPerUser: 100},
	{users: 1000, perUser: 1000, interval: 10 * time.Millisecond, quickUsers: 1000, quickPerUser: 10, shortUsers: 100, shortPerUser: 100},
	{users: 10_000, perUser: 100, interval: 10 * time.Millisecond, quickUsers: 10_000, quickPerUser: 10, shortUsers: 1000, shortPerUser: 10},
	{users: 1_000_000, perUser: 1, quickUsers: 100_000, quickPerUser: 1, shortUsers: 1000, shortPerUser: 1},
}

// pondLoad is a workload of pondLoads with its name.
type pondLoad struct {
	name string
	load load
}

// pondLoads returns the worker limit and pond's workloads at their published size, or, under
// -suites.quick, scaled down with a tenth of the workers. Each is named by the sizes of the
// selection (-short shrinks them further, without renaming them).
func pondLoads() (workers int, loads []pondLoad) {
	workers = pondWorkers
	if *quick {
		workers /= 10
	}
	for _, s := range pondSizes {
		users, perUser := s.users, s.perUser
		if *quick {
			users, perUser = s.quickUsers, s.quickPerUser
		}
		loads = append(loads, pondLoad{loadName(users, perUser), load{
			users:    shrink(users, s.shortUsers),
			perUser:  shrink(perUser, s.shortPerUser),
			interval: s.interval,
		}})
	}
	return shrink(workers, 1000), loads
}

// pondTasks are pond's two tasks: an I/O-like sleep and a tiny computation.
var pondTasks = []namedTask{
	{"sleep10ms", func() { time.Sleep(10 * time.Millisecond) }, true},
	{"randfloat", func() { _ = rand.Float64() }, false},
}

// BenchmarkPond reruns alitto/pond's comparison: for each workload and task, a fresh pool of
// 200,000 workers (20,000 under -suites.quick; its creation is measured) runs every task of
// every user. The static floor
// takes no part where the users' submitting is the workload: with pauses between submissions,
// or with more users than workers (1Mu-1t, where starting the million users is most of the
// time and the static floor would skip it). Inline runs only the rand.Float64 task (see
// skipInline).
func BenchmarkPond(b *testing.B) {
	workers, loads := pondLoads()
	for _, w := range loads {
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
