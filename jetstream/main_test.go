package jetstream_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the tests stop every
// server, connection, pool and Consume call they start.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
