// Package racetest tells crew's tests whether they run under the race detector, and skips the
// ones that cannot hold under it. Only tests import it.
package racetest

import "testing"

// SkipPoolReuse skips a test that counts on a sync.Pool giving back what was put in it: under
// the race detector sync.Pool drops a share of what it is given, on purpose.
func SkipPoolReuse(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("sync.Pool drops a share of what it is given under the race detector")
	}
}
