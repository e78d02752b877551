package crew_test

import (
	"fmt"
	"sync"
	"time"

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

// A Keyed whose backlog is bounded: at most 2 tasks wait over all keys, a submit waits at
// most 10ms for room and then gives up with ErrQueueFull, so a burst sheds load instead of
// piling up behind a slow key.
func ExampleNewKeyed_bounded() {
	p := crew.New(1)
	defer p.StopAndWait()
	k := crew.NewKeyed[string](p, crew.WithQueueSize(2), crew.WithMaxWait(10*time.Millisecond))

	release := make(chan struct{})
	_ = k.Submit("slow", func() { <-release }) // holds the pool's one worker
	for k.Stats().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range 3 {
		err := k.Submit("other", func() {})
		fmt.Println(i, err)
	}
	close(release)
	k.Wait()
	fmt.Println("rejected:", k.Stats().Rejected)
	// Output:
	// 0 <nil>
	// 1 <nil>
	// 2 crew: queue is full
	// rejected: 1
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
