package suites

import (
	"fmt"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// BenchmarkItogami reruns alphadose/itogami's comparison: one submitter, 1,000,000 tasks that
// each sleep 10ms, a fresh pool of 50,000 workers per iteration. Inline takes no part, as the
// task sleeps (see skipInline). Under -suites.quick it runs a tenth of the tasks on a fifth of
// the workers, ten rounds of sleeps instead of twenty, named by those sizes: load=100Kt-10Kw.
func BenchmarkItogami(b *testing.B) {
	workers, tasks := 50_000, 1_000_000
	if *quick {
		workers, tasks = workers/5, tasks/10
	}
	name := fmt.Sprintf("load=%st-%sw", count(tasks), count(workers))
	workers = shrink(workers, 1000)
	l := load{users: 1, perUser: shrink(tasks, 1000)}
	sleep := func() { time.Sleep(10 * time.Millisecond) }
	for _, c := range contenders.All {
		if skipInline(c, true) {
			continue
		}
		b.Run(name+"/task=sleep10ms/pool="+c.Name, func(b *testing.B) {
			runLoad(b, c, workers, l, sleep)
		})
	}
}
