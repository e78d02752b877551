//go:build go1.25

package crew_test

import (
	"testing"
	"testing/synctest"

	"github.com/crewgo/crew"
)

// forEachKindInBubble runs test as a parallel subtest for each of poolKinds, inside a bubble
// of its own, on a new pool of that kind made in the bubble with maxWorkers and opts.
func forEachKindInBubble(t *testing.T, maxWorkers int, opts []crew.Option, test func(t *testing.T, p testPool)) {
	t.Helper()
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { test(t, k.new(maxWorkers, opts...)) })
		})
	}
}

// blockedForGood fails t if done is closed once every goroutine of the calling bubble is
// durably blocked: what it stands for should block until another goroutine acts.
func blockedForGood(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	synctest.Wait()
	select {
	case <-done:
		t.Fatalf("%s returned, want it to block", what)
	default:
	}
}
