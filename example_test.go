package crew_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew"
)

// Example hands work to a pool in the three usual ways: plain tasks, a function whose
// result is wanted, and a group of calls that fail together.
func Example() {
	pool := crew.New(8) // at most 8 tasks run at once
	defer pool.StopAndWait()

	// Plain tasks: fire and forget, then wait for all of them.
	var done atomic.Int32
	for range 10 {
		pool.Submit(func() { done.Add(1) })
	}
	pool.Wait()

	// A result computed on the pool.
	answer := crew.Go(pool, func() (int, error) { return 6 * 7, nil })

	// A group: the first error cancels the others' context and is what Wait returns.
	g, _ := pool.Group(context.Background())
	for _, name := range []string{"a.txt", "b.txt", "missing.txt"} {
		g.Go(func(ctx context.Context) error {
			if name == "missing.txt" {
				return fmt.Errorf("open %s: not found", name)
			}
			return ctx.Err() // nil, unless another call has failed already
		})
	}
	err := g.Wait()

	v, _ := answer.Wait()
	fmt.Println(done.Load(), v, err)
	// Output: 10 42 open missing.txt: not found
}

func ExampleNew() {
	pool := crew.New(4) // at most 4 tasks run at once
	defer pool.StopAndWait()

	var sum atomic.Int64
	for i := 1; i <= 100; i++ {
		pool.Submit(func() { sum.Add(int64(i)) })
	}
	pool.Wait()
	fmt.Println(sum.Load())
	// Output: 5050
}

func ExamplePool_Submit_bounded() {
	// At most 2 tasks run and 8 wait; a ninth waiting task makes Submit block.
	pool := crew.New(2, crew.WithQueueSize(8))
	release := make(chan struct{})
	mostRunning, mostWaiting := 0, 0
	for i := range 100 {
		if i == 10 {
			close(release) // 2 tasks run and 8 wait: the next Submit would block until one starts
		}
		if err := pool.Submit(func() { <-release }); err != nil {
			fmt.Println(err)
		}
		s := pool.Stats()
		mostRunning, mostWaiting = max(mostRunning, s.Running), max(mostWaiting, s.Waiting)
	}
	pool.StopAndWait()
	fmt.Println("at most running:", mostRunning, "waiting:", mostWaiting)
	fmt.Println("completed:", pool.Stats().Completed)
	// Output:
	// at most running: 2 waiting: 8
	// completed: 100
}

func ExamplePool_TrySubmit() {
	pool := crew.New(1, crew.WithQueueSize(1))
	release := make(chan struct{})
	started := make(chan struct{})
	pool.Submit(func() { close(started); <-release }) // occupies the only worker
	<-started
	fmt.Println(pool.TrySubmit(func() {})) // takes the only queue slot
	fmt.Println(pool.TrySubmit(func() {})) // the queue is full
	close(release)
	pool.StopAndWait()
	// Output:
	// true
	// false
}

func ExamplePool_SubmitContext() {
	pool := crew.New(1, crew.WithQueueSize(1))
	release := make(chan struct{})
	started := make(chan struct{})
	pool.Submit(func() { close(started); <-release })
	<-started
	pool.Submit(func() {}) // the queue is now full

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := pool.SubmitContext(ctx, func() {})
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	close(release)
	pool.StopAndWait()
	// Output: true
}

func ExamplePool_Submit_nonBlocking() {
	pool := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking())
	release := make(chan struct{})
	started := make(chan struct{})
	pool.Submit(func() { close(started); <-release })
	<-started
	fmt.Println(pool.Submit(func() {}))
	fmt.Println(pool.Submit(func() {}))
	close(release)
	pool.StopAndWait()
	// Output:
	// <nil>
	// crew: queue is full
}

func ExamplePool_Wait() {
	pool := crew.New(2)
	defer pool.StopAndWait()
	var n atomic.Int32
	for batch := 1; batch <= 2; batch++ {
		for range 10 {
			pool.Submit(func() { n.Add(1) })
		}
		pool.Wait() // the pool stays usable
		fmt.Println("batch", batch, "done:", n.Load())
	}
	// Output:
	// batch 1 done: 10
	// batch 2 done: 20
}

func ExamplePool_Stop() {
	pool := crew.New(2)
	var ran atomic.Bool
	pool.Submit(func() { ran.Store(true) })
	pool.Stop() // accepted tasks still run

	err := pool.Submit(func() {}) // this one is refused and never runs
	fmt.Println(errors.Is(err, crew.ErrStopped), err)
	pool.StopAndWait()
	fmt.Println("accepted task ran:", ran.Load())
	// Output:
	// true crew: pool is stopped
	// accepted task ran: true
}

func ExamplePool_StopAndWait() {
	pool := crew.New(2)
	var n atomic.Int32
	for range 10 {
		pool.Submit(func() { time.Sleep(time.Millisecond); n.Add(1) })
	}
	pool.StopAndWait() // every accepted task has finished
	fmt.Println(n.Load())
	// Output: 10
}

func ExamplePool_Shutdown() {
	pool := crew.New(1)
	release := make(chan struct{})
	pool.Submit(func() { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	fmt.Println(pool.Shutdown(ctx)) // the task outlasts the deadline
	close(release)
	fmt.Println(pool.Shutdown(context.Background()))
	// Output:
	// context deadline exceeded
	// <nil>
}

func ExamplePool_Resize() {
	pool := crew.New(1)
	defer pool.StopAndWait()
	pool.Resize(8)
	fmt.Println(pool.Stats().MaxWorkers)
	// Output: 8
}

func ExamplePool_Stats() {
	pool := crew.New(2)
	for range 5 {
		pool.Submit(func() {})
	}
	pool.StopAndWait()
	s := pool.Stats()
	fmt.Println(s.Accepted, s.Completed, s.Running)
	// Output: 5 5 0
}

func ExamplePool_Sub() {
	pool := crew.New(4)    // 4 workers in all
	reports := pool.Sub(1) // reports use at most 1 of them
	var mu sync.Mutex
	running, most := 0, 0 // reports running now, and at most
	var n atomic.Int32
	report := func() {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond) // time for a second report to start, if one could
		mu.Lock()
		running--
		mu.Unlock()
		n.Add(1)
	}
	for range 3 {
		reports.Submit(report)
		pool.Submit(func() { n.Add(1) })
	}
	reports.Wait()
	pool.StopAndWait() // also stops reports
	fmt.Println("tasks run:", n.Load(), "reports at once:", most)
	// Output: tasks run: 6 reports at once: 1
}

func ExampleNewFunc() {
	var total atomic.Int64
	pool := crew.NewFunc(4, func(n int64) { total.Add(n) })
	for i := int64(1); i <= 10; i++ {
		pool.Invoke(i)
	}
	pool.StopAndWait()
	fmt.Println(total.Load())
	// Output: 55
}

func ExampleFuncPool_Invoke() {
	type job struct{ id int }
	var seen atomic.Int32
	pool := crew.NewFunc(2, func(j *job) { seen.Add(int32(j.id)) })
	pool.Invoke(&job{id: 40})
	pool.Invoke(&job{id: 2})
	pool.StopAndWait()
	fmt.Println(seen.Load())
	// Output: 42
}

func ExampleFuncPool_TryInvoke() {
	pool := crew.NewFunc(1, func(string) {})
	pool.Stop()
	fmt.Println(pool.TryInvoke("late"))
	pool.StopAndWait()
	// Output: false
}

func ExampleWithPanicHandler() {
	pool := crew.New(1, crew.WithPanicHandler(func(v any, stack []byte) {
		fmt.Println("recovered:", v)
	}))
	pool.Submit(func() { panic("oops") })
	pool.StopAndWait()
	fmt.Println(pool.Stats().Panicked)
	// Output:
	// recovered: oops
	// 1
}

func ExampleWithContext() {
	ctx, cancel := context.WithCancel(context.Background())
	pool := crew.New(2, crew.WithContext(ctx))
	cancel() // stops the pool as Stop does
	fmt.Println(pool.Submit(func() {}))
	pool.StopAndWait()
	// Output: crew: pool is stopped
}

func ExampleWithMinWorkers() {
	pool := crew.New(8, crew.WithMinWorkers(2), crew.WithIdleTimeout(time.Minute))
	defer pool.StopAndWait()
	fmt.Println(pool.Stats().Idle) // started with the pool
	// Output: 2
}

func ExamplePanicError() {
	err := error(&crew.PanicError{Value: errors.New("disk full")})
	fmt.Println(err)
	var pe *crew.PanicError
	fmt.Println(errors.As(err, &pe), pe.Value)
	// Output:
	// crew: task panicked: disk full
	// true disk full
}

func ExampleWithQueueSize() {
	// Two tasks may wait; with the worker busy, a third waiting task is refused by TrySubmit.
	pool := crew.New(1, crew.WithQueueSize(2))
	release := make(chan struct{})
	started := make(chan struct{})
	pool.Submit(func() { close(started); <-release })
	<-started
	fmt.Println(pool.TrySubmit(func() {}), pool.TrySubmit(func() {}), pool.TrySubmit(func() {}))
	close(release)
	pool.StopAndWait()
	// Output: true true false
}

func ExampleWithNonBlocking() {
	pool := crew.New(1, crew.WithQueueSize(1), crew.WithNonBlocking())
	release := make(chan struct{})
	started := make(chan struct{})
	pool.Submit(func() { close(started); <-release })
	<-started
	pool.Submit(func() {})
	err := pool.Submit(func() {})
	fmt.Println(errors.Is(err, crew.ErrQueueFull))
	close(release)
	pool.StopAndWait()
	// Output: true
}

func ExampleWithIdleTimeout() {
	// Workers above the minimum exit as soon as they find nothing to do.
	pool := crew.New(4, crew.WithIdleTimeout(0))
	defer pool.StopAndWait()
	for range 4 {
		pool.Submit(func() {})
	}
	pool.Wait()
	// Give them a second, far less than the DefaultIdleTimeout they would wait otherwise.
	deadline := time.Now().Add(time.Second)
	s := pool.Stats()
	for s.Idle+s.Running > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		s = pool.Stats()
	}
	fmt.Println("workers left:", s.Idle+s.Running)
	// Output: workers left: 0
}

func ExampleFuncPool_InvokeContext() {
	pool := crew.NewFunc(1, func(string) {})
	defer pool.StopAndWait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := pool.InvokeContext(ctx, "too late")
	fmt.Println(errors.Is(err, context.Canceled))
	// Output: true
}

func ExampleFuncPool_Shutdown() {
	pool := crew.NewFunc(2, func(d time.Duration) { time.Sleep(d) })
	pool.Invoke(time.Millisecond)
	fmt.Println(pool.Shutdown(context.Background()))
	// Output: <nil>
}

func ExampleStats() {
	pool := crew.New(2, crew.WithPanicHandler(func(any, []byte) {}))
	pool.Submit(func() {})
	pool.Submit(func() { panic("lost") })
	pool.StopAndWait()
	s := pool.Stats()
	fmt.Printf("submitted %d, completed %d, panicked %d\n", s.Accepted, s.Completed, s.Panicked)
	// Output: submitted 2, completed 1, panicked 1
}

func ExampleWithoutPanicRecovery() {
	// A panic in any of these tasks would end the program with its stack instead of going
	// to a panic handler.
	pool := crew.New(2, crew.WithoutPanicRecovery())
	var sum atomic.Int64
	for i := range 10 {
		_ = pool.Submit(func() { sum.Add(int64(i)) })
	}
	pool.StopAndWait()
	fmt.Println(sum.Load())
	// Output: 45
}
