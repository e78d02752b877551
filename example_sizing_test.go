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
// The adaptive limit comes down to a little above 8, usually within half a second; this
// program submits calls until it sees it there, for 10 seconds at most.
func ExampleWithAdaptiveLimit() {
	service := make(chan struct{}, 8)
	call := func() {
		service <- struct{}{} // wait for one of the 8 slots
		time.Sleep(2 * time.Millisecond)
		<-service
	}

	p := crew.New(128, crew.WithAdaptiveLimit(1), crew.WithQueueSize(64))
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); {
		for range 200 { // a twentieth of a second of calls
			p.Submit(call)
		}
		limit := p.Stats().MaxWorkers // read while the service is still busy
		found = limit >= 8 && limit <= 16
	}
	p.StopAndWait()
	fmt.Println("limit between 8 and 16:", found)
	// Output: limit between 8 and 16: true
}
