package crew_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/crewgo/crew"
)

func ExamplePool_StopNow() {
	p := crew.New(1)
	release := make(chan struct{})
	p.Submit(func() { <-release })
	for i := range 3 {
		p.Submit(func() { fmt.Println("ran", i) })
	}
	left := p.StopNow() // the three queued tasks, never run
	close(release)
	p.StopAndWait()
	fmt.Println("handed back:", len(left))
	// Output: handed back: 3
}

func ExampleFuncPool_StopNow() {
	release := make(chan struct{})
	p := crew.NewFunc(1, func(n int) {
		if n == 0 {
			<-release
		}
	})
	for i := range 4 {
		p.Invoke(i)
	}
	left := p.StopNow()
	close(release)
	p.StopAndWait()
	fmt.Println(left)
	// Output: [1 2 3]
}

func ExamplePool_Pause() {
	p := crew.New(2)
	p.Pause()
	for i := range 3 {
		p.Submit(func() { _ = i })
	}
	fmt.Println("waiting while paused:", p.Stats().Waiting)
	p.Resume()
	p.Wait()
	fmt.Println("completed:", p.Stats().Completed)
	p.StopAndWait()
	// Output:
	// waiting while paused: 3
	// completed: 3
}

func ExamplePool_PauseAndWait() {
	p := crew.New(2)
	p.Submit(func() { time.Sleep(time.Millisecond) })
	if err := p.PauseAndWait(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("running:", p.Stats().Running, "paused:", p.Stats().Paused)
	p.Resume()
	p.StopAndWait()
	// Output: running: 0 paused: true
}

func ExamplePool_Resume() {
	p := crew.New(1)
	p.Pause()
	done := make(chan struct{})
	p.Submit(func() { close(done) })
	p.Resume()
	<-done
	fmt.Println("ran after Resume")
	p.StopAndWait()
	// Output: ran after Resume
}

func ExampleWithOverflow() {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.CallerRuns))
	release := make(chan struct{})
	p.Submit(func() { <-release }) // runs on the worker
	p.Submit(func() {})            // fills the queue
	p.Submit(func() { fmt.Println("ran on the caller") })
	close(release)
	p.StopAndWait()
	fmt.Println("caller ran:", p.Stats().CallerRan)
	// Output:
	// ran on the caller
	// caller ran: 1
}

func ExampleWithDiscardHandler() {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.DiscardOldest),
		crew.WithDiscardHandler(func(v any) { fmt.Println("dropped a", fmt.Sprintf("%T", v)) }))
	release := make(chan struct{})
	p.Submit(func() { <-release })
	p.Submit(func() {}) // waits, then is dropped by the next
	p.Submit(func() {})
	close(release)
	p.StopAndWait()
	fmt.Println("discarded:", p.Stats().Discarded)
	// Output:
	// dropped a func()
	// discarded: 1
}

func ExampleWithMaxWait() {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxWait(time.Millisecond))
	release := make(chan struct{})
	p.Submit(func() { <-release })
	p.Submit(func() {})
	fmt.Println(p.Submit(func() {}))
	close(release)
	p.StopAndWait()
	// Output: crew: queue is full
}

func ExampleWithMaxBlocked() {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithMaxBlocked(0))
	release := make(chan struct{})
	p.Submit(func() { <-release })
	p.Submit(func() {})
	fmt.Println(p.Submit(func() {}))
	close(release)
	p.StopAndWait()
	// Output: crew: queue is full
}

func ExampleWithRateLimit() {
	p := crew.NewFunc(4, func(int) {}, crew.WithRateLimit(1000, 10))
	start := time.Now()
	for i := range 30 {
		p.Invoke(i)
	}
	p.StopAndWait()
	// 10 start at once, the other 20 at 1000 a second: at least 19 ms.
	fmt.Println(time.Since(start) >= 19*time.Millisecond)
	// Output: true
}

func ExamplePool_SetRateLimit() {
	p := crew.New(2, crew.WithRateLimit(1, 1))
	done := make(chan struct{}, 3)
	for range 3 {
		p.Submit(func() { done <- struct{}{} })
	}
	<-done                         // the burst
	p.SetRateLimit(math.Inf(1), 1) // lift the limit: the rest start now
	<-done
	<-done
	p.StopAndWait()
	fmt.Println("all ran")
	// Output: all ran
}

func ExampleOverflow() {
	p := crew.New(1, crew.WithQueueSize(1), crew.WithOverflow(crew.Reject))
	release := make(chan struct{})
	p.Submit(func() { <-release })
	p.Submit(func() {})
	fmt.Println(p.Submit(func() {}))
	close(release)
	p.StopAndWait()
	// Output: crew: queue is full
}
