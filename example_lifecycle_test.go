package crew_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crewgo/crew"
)

// A service stops taking work on SIGTERM (what a container orchestrator sends before it kills
// the process) or Ctrl-C, and gives the work it has accepted a deadline to finish.
func ExamplePool_Shutdown_signal() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, sigterm := context.WithCancel(ctx) // here, a stand-in for the signal

	// The pool stops accepting work when ctx ends, as if by Stop.
	pool := crew.New(4, crew.WithContext(ctx))
	var handled atomic.Int32
	for range 20 {
		pool.Submit(func() { time.Sleep(time.Millisecond); handled.Add(1) })
	}

	sigterm()
	<-ctx.Done()
	fmt.Println(pool.Submit(func() {})) // refused: the pool has stopped

	// Give the accepted work up to 10 seconds, then exit anyway.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pool.Shutdown(shutdownCtx); err != nil {
		fmt.Println("gave up waiting:", err)
		return
	}
	fmt.Println("handled:", handled.Load())
	// Output:
	// crew: pool is stopped
	// handled: 20
}

// A group whose calls share a scarce resource runs on a sub-pool: at most 2 queries at once,
// on the workers of a pool that other work uses too.
func ExamplePool_Group_subPool() {
	pool := crew.New(8)
	defer pool.StopAndWait()
	db := pool.Sub(2)

	var mu sync.Mutex
	running, most := 0, 0
	query := func(id int) (int, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond) // time for a third query to start, if one could
		mu.Lock()
		running--
		mu.Unlock()
		return id * 10, nil
	}

	rows := make([]int, 6)
	g, _ := db.Group(context.Background())
	for i := range rows {
		g.Go(func(context.Context) error {
			v, err := query(i)
			rows[i] = v
			return err
		})
	}
	err := g.Wait()
	fmt.Println(rows, err)
	fmt.Println("at most 2 queries at once:", most <= 2)
	// Output:
	// [0 10 20 30 40 50] <nil>
	// at most 2 queries at once: true
}

func ExamplePool_Stopped() {
	ctx, cancel := context.WithCancel(context.Background())
	pool := crew.New(2, crew.WithContext(ctx))
	fmt.Println(pool.Stopped())
	cancel() // the pool's context ends: it stops as Stop does
	fmt.Println(pool.Stopped())
	pool.StopAndWait()
	// Output:
	// false
	// true
}

func ExamplePool_QueueSize() {
	pool := crew.New(4, crew.WithQueueSize(64))
	defer pool.StopAndWait()
	fmt.Println(pool.QueueSize(), pool.Sub(2).QueueSize())
	// Output: 64 0
}

func ExamplePool_Overflow() {
	pool := crew.New(4, crew.WithQueueSize(64), crew.WithOverflow(crew.CallerRuns))
	defer pool.StopAndWait()
	fmt.Println(pool.Overflow() == crew.CallerRuns, pool.Sub(2).Overflow() == crew.Block)
	// Output: true true
}

func ExamplePool_MinWorkers() {
	pool := crew.New(8, crew.WithMinWorkers(2))
	defer pool.StopAndWait()
	fmt.Println(pool.MinWorkers(), pool.Stats().Idle)
	// Output: 2 2
}

func ExamplePool_IdleTimeout() {
	pool := crew.New(8)
	defer pool.StopAndWait()
	fmt.Println(pool.IdleTimeout() == crew.DefaultIdleTimeout)
	// Output: true
}

func ExampleWithIdleTimeout_never() {
	// Workers start as tasks arrive, and once started stay until the pool stops.
	pool := crew.New(4, crew.WithIdleTimeout(crew.NoIdleTimeout))
	for range 4 {
		pool.Submit(func() {})
	}
	pool.Wait()
	fmt.Println(pool.IdleTimeout() == crew.NoIdleTimeout)
	pool.StopAndWait() // the workers exit here
	// Output: true
}

func ExampleFuncPool_Stopped() {
	pool := crew.NewFunc(2, func(string) {})
	pool.Stop()
	fmt.Println(pool.Stopped(), pool.Invoke("late"))
	pool.StopAndWait()
	// Output: true crew: pool is stopped
}

func ExampleFuncPool_QueueSize() {
	pool := crew.NewFunc(2, func(string) {}, crew.WithQueueSize(16))
	defer pool.StopAndWait()
	fmt.Println(pool.QueueSize())
	// Output: 16
}

func ExampleFuncPool_Overflow() {
	pool := crew.NewFunc(2, func(string) {}, crew.WithNonBlocking())
	defer pool.StopAndWait()
	fmt.Println(pool.Overflow() == crew.Reject)
	// Output: true
}

func ExampleFuncPool_MinWorkers() {
	pool := crew.NewFunc(4, func(string) {}, crew.WithMinWorkers(1))
	defer pool.StopAndWait()
	fmt.Println(pool.MinWorkers())
	// Output: 1
}

func ExampleFuncPool_IdleTimeout() {
	pool := crew.NewFunc(4, func(string) {}, crew.WithIdleTimeout(time.Minute))
	defer pool.StopAndWait()
	fmt.Println(pool.IdleTimeout())
	// Output: 1m0s
}
