package crew_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// Waits that help: a MapSeq/MapSeqUnordered range made inside a function of p, from the
// context crew gave it, runs its own queued calls while it waits. Some calls are taken by
// the pool's other worker. Every call must run with its value, and the range must yield each
// result once; a call must never fail with a nil-pointer panic of crew's own.
func TestMapSeqWaitRunsNoHolderItHasFreed(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		for iter := range 200 {
			p := crew.New(2)
			f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
				in := countTo(40)
				fn := func(ctx context.Context, v int) (int, error) {
					if v%3 == 0 {
						time.Sleep(20 * time.Microsecond)
					}
					return v, nil
				}
				seq := crew.MapSeqUnordered(ctx, p, in, fn)
				if ordered {
					seq = crew.MapSeq(ctx, p, in, fn)
				}
				sum := 0
				for v, err := range seq {
					if err != nil {
						return sum, err
					}
					sum += v
				}
				return sum, nil
			})
			var got int
			var err error
			awaitReturn(t, "range", goRun(func() { got, err = f.Wait() }))
			p.StopAndWait()
			if err != nil || got != 40*39/2 {
				var pe *crew.PanicError
				stack := ""
				if e, ok := err.(*crew.PanicError); ok {
					pe = e
					stack = string(pe.Stack)
					if len(stack) > 1500 {
						stack = stack[:1500]
					}
				}
				t.Fatalf("ordered=%v iter %d: sum %d, err %v; want %d, nil\n%s", ordered, iter, got, err, 40*39/2, stack)
			}
		}
	}
}
