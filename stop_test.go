package crew_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/crewgo/crew"
)

// refusesTasks fails t unless every pool in ps refuses a task with ErrStopped.
func refusesTasks(t *testing.T, what string, ps []*crew.Pool) {
	t.Helper()
	for i, s := range ps {
		if err := s.Submit(func() {}); !errors.Is(err, crew.ErrStopped) {
			t.Errorf("%s: Submit to sub-pool %d = %v, want ErrStopped", what, i, err)
		}
	}
}

// TestNewWithEndedContextReturnsAStoppedPool proves [crew.WithContext]'s "a pool built with a
// ctx that has already ended is stopped when New returns", for New and NewFunc, without a data
// race between New and the hook that stops the pool; and that a pool whose context ends while
// New runs refuses tasks once the context has ended.
func TestNewWithEndedContextReturnsAStoppedPool(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for round := range 100 {
		ctx := ended
		if round%2 == 1 { // the context ends while New runs
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(context.Background())
			go cancel()
		}
		p := crew.New(2, crew.WithContext(ctx))
		f := crew.NewFunc(2, func(int) { t.Error("a call ran on a stopped pool") }, crew.WithContext(ctx))
		<-ctx.Done()
		refusesEverySubmit(t, p, f, func() { t.Error("a task ran on a stopped pool") })
		refusesTasks(t, fmt.Sprintf("round %d", round), []*crew.Pool{p.Sub(1)})
		p.StopAndWait()
		f.StopAndWait()
	}
}
