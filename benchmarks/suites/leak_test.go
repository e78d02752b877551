package suites

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test or benchmark leaves a goroutine behind: every
// contender's StopAndWait must leave nothing running. The goroutines present before it starts
// are not counted: ants starts its default pool's in its package init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
