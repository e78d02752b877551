//go:build !race

package crew_test

// raceEnabled reports whether the race detector is on: memory tests skip under it, since it
// changes allocation and goroutine costs.
const raceEnabled = false
