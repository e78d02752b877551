package crew_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// TestStopAndWaitReturnsWhenReaperIsLast: the reaper can be the last goroutine of a stopped
// pool (its timer may fire as Stop closes its channel); StopAndWait must still return. A
// fuzzed operation sequence once hung here.
func TestStopAndWaitReturnsWhenReaperIsLast(t *testing.T) {
	t.Parallel()
	for i := range 400 {
		// Stop at about the moment the reaper's timer fires.
		timeout := time.Duration(50+i%40*25) * time.Microsecond
		p := crew.New(2, crew.WithIdleTimeout(timeout))
		p.Submit(func() {})
		p.Wait()
		for start := time.Now(); time.Since(start) < timeout; {
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatalf("iteration %d: Shutdown = %v: the pool never finished stopping", i, err)
		}
	}
}
