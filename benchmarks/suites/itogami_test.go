package suites

import (
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// BenchmarkItogami reruns alphadose/itogami's comparison: one submitter, 1,000,000 tasks that
// each sleep 10ms, a fresh pool of 50,000 workers per iteration. Inline takes no part, as the
// task sleeps (see skipInline).
func BenchmarkItogami(b *testing.B) {
	workers := shrink(50_000, 1000)
	l := load{users: 1, perUser: shrink(1_000_000, 1000)}
	sleep := func() { time.Sleep(10 * time.Millisecond) }
	for _, c := range contenders.All {
		if skipInline(c, true) {
			continue
		}
		b.Run("load=1Mt-50Kw/task=sleep10ms/pool="+c.Name, func(b *testing.B) {
			runLoad(b, c, workers, l, sleep)
		})
	}
}
