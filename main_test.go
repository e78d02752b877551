package crew_test

import (
	"os"
	"testing"

	"github.com/crewgo/crew"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind. With CREW_LANES=on in
// the environment, every pool splits its queue by processor from the start, where its limit
// allows, so that the whole suite runs against the split queue too (scripts/test.sh).
func TestMain(m *testing.M) {
	if os.Getenv("CREW_LANES") == "on" {
		crew.StartLanes(true)
	}
	goleak.VerifyTestMain(m)
}
