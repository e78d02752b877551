//go:build race

package crew_test

// raceEnabled reports whether the tests run under the race detector, which slows tasks
// down about tenfold: the stress suite scales its counts down, and the memory tests, whose
// heap figures the detector distorts, skip.
const raceEnabled = true
