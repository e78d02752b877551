//go:build race

package racetest

// Enabled reports whether the tests run under the race detector. It slows tasks down about
// tenfold, so the stress suite scales its counts down; its shadow memory distorts heap
// figures, so the memory tests skip; and sync.Pool drops items on purpose (SkipPoolReuse).
const Enabled = true
