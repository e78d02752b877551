//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/crewgo/crew"
)

// This test waits for "nothing happened" inside a testing/synctest bubble: see
// pool_synctest_test.go.

func TestForEachPullsOnlyAsFastAsWorkersFree(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 3
		p := crew.New(limit)
		defer p.StopAndWait()
		ctx, cancel := context.WithCancel(context.Background())
		var pulled, calls atomic.Int64
		release := make(chan struct{})
		done := make(chan error)
		go func() {
			done <- crew.ForEach(ctx, p, endless(&pulled), func(ctx context.Context, v int) error {
				calls.Add(1)
				<-release
				return nil
			})
		}()
		synctest.Wait()
		if n := calls.Load(); n != limit {
			t.Fatalf("%d calls running with %d workers, want the workers full", n, limit)
		}
		// Every worker is blocked: the sequence has been pulled at most once beyond them.
		if n := pulled.Load(); n > limit+1 {
			t.Fatalf("pulled %d values with %d workers busy", n, limit)
		}
		cancel()
		close(release)
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("ForEach = %v, want context.Canceled", err)
		}
		if n := pulled.Load(); n > calls.Load()+limit+1 {
			t.Fatalf("pulled %d values for %d calls", n, calls.Load())
		}
	})
}
