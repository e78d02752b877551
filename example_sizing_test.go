package crew_test

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"time"

	"github.com/crewgo/crew"
)

// A pool that computes keeps its limit at the processors Go uses, also when GOMAXPROCS
// changes while it runs (a container's CPU limit, since Go 1.25).
func ExampleNew_cpus() {
	p := crew.New(crew.CPUs)
	sums := make([][32]byte, 100)
	for i := range sums {
		p.Submit(func() { sums[i] = sha256.Sum256([]byte(fmt.Sprint(i))) })
	}
	p.StopAndWait()
	fmt.Println(p.Stats().MaxWorkers == runtime.GOMAXPROCS(0), sums[0] != sums[1])
	// Output: true true
}

// A pool finds how many calls a service takes at once before its calls start queueing. The
// service here serves 8 calls at a time, 2 ms each; a call beyond 8 waits its turn, so with
// the pool's ceiling of 128 a call would take 32 ms and the service would not go faster.
// The adaptive limit comes down to a little above 8 within a fraction of a second.
func ExampleWithAdaptiveLimit() {
	service := make(chan struct{}, 8)
	call := func() {
		service <- struct{}{} // wait for one of the 8 slots
		time.Sleep(2 * time.Millisecond)
		<-service
	}

	p := crew.New(128, crew.WithAdaptiveLimit(1), crew.WithQueueSize(64))
	for range 4000 {
		p.Submit(call)
	}
	limit := p.Stats().MaxWorkers // read while the service is still busy
	p.StopAndWait()
	fmt.Println("limit between 8 and 16:", limit >= 8 && limit <= 16)
	// Output: limit between 8 and 16: true
}
