//go:build race

package spare

// raceEnabled reports whether the tests run under the race detector. Under it sync.Pool drops
// a share of what it is given, on purpose, so the tests of reuse skip.
const raceEnabled = true
