//go:build !unix

package crew_test

import "time"

// processCPU reports false: the process's CPU time is read on unix only.
func processCPU() (time.Duration, bool) { return 0, false }
