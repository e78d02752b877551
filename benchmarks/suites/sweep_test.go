package suites

import (
	"slices"
	"testing"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// BenchmarkSweep runs pond's two tasks at points that vary one dimension at a time from a
// base: the tasks of a run, the pool's workers, and the users that submit the tasks between
// them (see SweepPoints), each on a fresh pool whose creation is measured, as in
// BenchmarkPond. It runs the quick and the full points; crewbench picks the quick ones unless
// told -full. Besides the time and memory of a run it reports ns/task, the time divided by
// the tasks of the run. The static floor takes no part where users outnumber workers, as in
// BenchmarkPond; it ignores the users, and inline the workers.
func BenchmarkSweep(b *testing.B) {
	points := SweepPoints(false)
	for _, p := range SweepPoints(true) {
		if !slices.Contains(points, p) {
			points = append(points, p)
		}
	}
	var cs []contenders.Contender
	for _, c := range contenders.All {
		if slices.Contains(SweepContenders, c.Name) {
			cs = append(cs, c)
		}
	}
	for _, t := range pondTasks {
		for _, p := range points {
			l, workers := sweepLoad(p)
			for _, c := range cs {
				if skipInline(c, t.sleeps) || (l.users > workers && isStatic(c)) {
					continue
				}
				b.Run("task="+t.name+"/load="+p.Name()+"/pool="+c.Name, func(b *testing.B) {
					runLoad(b, c, workers, l, t.task)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(l.total()), "ns/task")
				})
			}
		}
	}
}

// sweepLoad is the load and the workers of p. Under -short the tasks and users shrink
// 10,000 times and the workers 100 times (each to at least 1), so the largest point sleeps
// 100 tasks on 10 workers: every point stays a few tens of milliseconds. The shrunk users
// still divide the shrunk tasks, both being powers of 10 with no more users than tasks.
func sweepLoad(p SweepPoint) (load, int) {
	tasks, users, workers := shrink(p.Tasks, 10_000), shrink(p.Users, 10_000), shrink(p.Workers, 100)
	return load{users: users, perUser: tasks / users}, workers
}
