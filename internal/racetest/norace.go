//go:build !race

package racetest

// Enabled reports whether the tests run under the race detector; see race.go.
const Enabled = false
