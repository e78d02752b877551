package crew_test

import (
	"fmt"
	"sync"

	"github.com/crewgo/crew"
)

// Each account's updates run one at a time and in order, while different accounts are
// updated in parallel; the balances need no lock.
func ExampleNewKeyed() {
	p := crew.New(4)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p)

	balance := map[string]*int{"alice": new(int), "bob": new(int)}
	for i := 1; i <= 100; i++ {
		for name, b := range balance {
			_ = k.Submit(name, func() { *b += i })
		}
	}
	k.Wait()
	fmt.Println(*balance["alice"], *balance["bob"])
	// Output: 5050 5050
}

// A task that must see the previous one's writes for the same key: the log lines of one
// request stay in order.
func ExampleKeyed_Submit() {
	p := crew.New(8)
	defer p.StopAndWait()
	k := crew.NewKeyed[int](p)

	lines := make([][]string, 3)
	for step := range 3 {
		for req := range 3 {
			_ = k.Submit(req, func() { lines[req] = append(lines[req], fmt.Sprint("step ", step)) })
		}
	}
	k.Wait()
	fmt.Println(lines[0])
	fmt.Println(lines[2])
	// Output:
	// [step 0 step 1 step 2]
	// [step 0 step 1 step 2]
}

// A task that uses two cores holds two of the pool's four slots, so at most two such tasks,
// or one beside two plain tasks, run at a time.
func ExamplePool_SubmitN() {
	p := crew.New(4)
	defer p.StopAndWait()

	var mu sync.Mutex
	done := 0
	for range 6 {
		_ = p.SubmitN(2, func() { mu.Lock(); done++; mu.Unlock() })
	}
	err := p.SubmitN(5, func() {})
	p.Wait()
	fmt.Println(done, err)
	// Output: 6 crew: task is heavier than the pool's limit
}

// A sub-pool for interactive requests at a higher level than one for batch jobs: when a
// worker of p frees up, a waiting request goes before any waiting batch job.
func ExampleWithPriority() {
	p := crew.New(4)
	defer p.StopAndWait()
	batch := p.Sub(4)
	interactive := p.Sub(4, crew.WithPriority(1))

	var mu sync.Mutex
	ran := map[string]int{}
	for range 10 {
		_ = batch.Submit(func() { mu.Lock(); ran["batch"]++; mu.Unlock() })
		_ = interactive.Submit(func() { mu.Lock(); ran["interactive"]++; mu.Unlock() })
	}
	p.Wait()
	fmt.Println(ran["interactive"], ran["batch"])
	// Output: 10 10
}
