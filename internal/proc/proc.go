// Package proc reaches two facilities of the Go runtime that the standard library uses
// itself but does not export: the index of the processor (P) a goroutine runs on, and the
// per-thread generator of cheap random numbers.
//
// Both are reached with go:linkname. The runtime keeps these two names for packages that
// link to them and promises not to change their signatures (go.dev/issue/67401, and the
// comments on procPin and cheaprandn in the runtime's sources), so they link on every Go
// version this module supports.
//
// Pin and Unpin let a histogram count into a shard of the processor it runs on: a
// shard picked any other way is written from both processors in turn, and each count then
// waits for the other processor's cache line. Rand picks the tasks a sampled histogram
// times at a fraction of math/rand/v2's cost per call.
package proc

import _ "unsafe" // go:linkname

// Pin keeps the calling goroutine on its processor until Unpin, and returns the processor's
// index, from 0 to GOMAXPROCS-1. The goroutine is not preempted meanwhile: what it does
// before Unpin must be short and must not block, allocate or panic.
func Pin() int { return procPin() }

// Unpin ends a Pin.
func Unpin() { procUnpin() }

// Rand returns a random number in [0, n) from the calling thread's generator, which no
// other thread shares; n must be above 0. The numbers are good enough to pick a sample, not
// for anything that must not be guessed.
func Rand(n uint32) uint32 { return cheaprandn(n) }

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

//go:linkname cheaprandn runtime.cheaprandn
func cheaprandn(n uint32) uint32
