package suites

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// scalingContenders are the contenders BenchmarkScaling compares: crew's two pools, the
// bounded peers that publish results on many cores, the buffered channel that code without a
// pool library uses, and the static floor.
var scalingContenders = []string{"crew", "crew-func", "ants", "pond-v2", "gopool", "chan-buffered", "static-floor"}

// scalingWorkers is every scaling shape's worker limit: ultrapool's (see ultrapoolWorkers).
const scalingWorkers = ultrapoolWorkers

// scalingShape is one workload of BenchmarkScaling: run submits b.N tasks to a runner made
// before the clock starts.
type scalingShape struct {
	name string
	task func()
	run  func(b *testing.B, c contenders.Contender, workers int, task func())
}

// scalingShapes are the workloads whose cost per task BenchmarkScaling follows across
// GOMAXPROCS: ultrapool's 1 µs sleeps from 10 and 100 submitters per processor, pond's 100
// users with rand.Float64, and one submitter feeding many workers.
var scalingShapes = []scalingShape{
	{"ultrapool-sleep1us-par10", ultrapoolTasks[0].task, func(b *testing.B, c contenders.Contender, w int, t func()) {
		runParallel(b, c, w, 10, t)
	}},
	{"ultrapool-sleep1us-par100", ultrapoolTasks[0].task, func(b *testing.B, c contenders.Contender, w int, t func()) {
		runParallel(b, c, w, 100, t)
	}},
	{"pond-100u-randfloat", pondTasks[1].task, func(b *testing.B, c contenders.Contender, w int, t func()) {
		runUsers(b, c, w, 100, t)
	}},
	{"one-submitter-randfloat", pondTasks[1].task, runN},
}

// BenchmarkScaling measures the cost per task of each scaling shape as the processors grow:
// run it with -cpu 1,2,4,8,16 (scripts/scaling.sh builds it into a static binary for a machine
// without Go). Each iteration is one task, so ns/op is the cost per task, comparable across
// -cpu values; the static floor is the same b.N tasks split over the workers up front.
func BenchmarkScaling(b *testing.B) {
	workers := shrink(scalingWorkers, 100)
	for _, s := range scalingShapes {
		for _, c := range contenders.All {
			if !slices.Contains(scalingContenders, c.Name) {
				continue
			}
			b.Run("shape="+s.name+"/pool="+c.Name, func(b *testing.B) {
				s.run(b, c, workers, s.task)
			})
		}
	}
}

// runUsers submits b.N tasks from users goroutines, each a share of them (the first b.N%users
// one more), to one runner of c made before the clock starts; pond's users at a size chosen
// by b.N.
func runUsers(b *testing.B, c contenders.Contender, workers, users int, task func()) {
	runOnOne(b, c, workers, task, func(r contenders.Runner, counted func()) error {
		var wg sync.WaitGroup
		var failed atomic.Value
		for u := range users {
			n := b.N / users
			if u < b.N%users {
				n++
			}
			wg.Go(func() {
				for range n {
					if err := r.Submit(counted); err != nil {
						failed.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		err, _ := failed.Load().(error)
		return err
	})
}
