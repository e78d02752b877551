//go:build go1.25

package crew_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// TestNoIdleTimeoutKeepsIdleWorkersUntilStop proves NoIdleTimeout's promise on the bubble's
// fake clock: after five years idle, a pool with NoIdleTimeout still has every worker it
// started, while one with a timeout of a minute has none left; StopAndWait ends them all.
// (Five, not more: the engine takes a clock past 2010 for the real world's, and would then
// give this bubble's worker spots for reuse outside it.)
func TestNoIdleTimeoutKeepsIdleWorkersUntilStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		never := crew.New(4, crew.WithIdleTimeout(crew.NoIdleTimeout))
		minute := crew.New(4, crew.WithIdleTimeout(time.Minute))
		hold := make(chan struct{})
		for _, p := range []*crew.Pool{never, minute} {
			for range 4 {
				if err := p.Submit(func() { <-hold }); err != nil {
					t.Fatal(err)
				}
			}
		}
		synctest.Wait()
		close(hold)
		synctest.Wait()
		if n, m := never.Stats().Idle, minute.Stats().Idle; n != 4 || m != 4 {
			t.Fatalf("idle workers after the tasks: %d and %d, want 4 and 4", n, m)
		}

		time.Sleep(5 * 365 * 24 * time.Hour)
		synctest.Wait()
		if s := never.Stats(); s.Idle != 4 {
			t.Fatalf("NoIdleTimeout pool after five years idle: %+v, want 4 idle workers", s)
		}
		if s := minute.Stats(); s.Idle != 0 {
			t.Fatalf("pool with a minute's idle timeout after five years: %+v, want no worker", s)
		}

		never.StopAndWait()
		minute.StopAndWait()
		if s := never.Stats(); s.Idle+s.Running != 0 {
			t.Fatalf("Stats after StopAndWait = %+v, want no worker", s)
		}
	})
}
