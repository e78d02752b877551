package crew_test

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/crewgo/crew"
)

// A request handler runs its lookup on a shared pool under the request's deadline. If the
// deadline passes while the lookup still waits for a worker, it never runs: the pool's
// workers go to requests that still want an answer.
func ExampleGoContext() {
	pool := crew.New(4)
	defer pool.StopAndWait()

	lookup := func(ctx context.Context, id int) (string, error) {
		if id == 0 { // a slow backend: answers only when asked to stop
			<-ctx.Done()
			return "", ctx.Err()
		}
		return fmt.Sprintf("user %d", id), nil
	}
	handle := func(ctx context.Context, id int) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		f := crew.GoContext(ctx, pool, func(ctx context.Context) (string, error) { return lookup(ctx, id) })
		return f.Wait()
	}

	fmt.Println(handle(context.Background(), 7))
	_, err := handle(context.Background(), 0)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// user 7 <nil>
	// true
}

// A future whose function has not started can be canceled: it never runs.
func ExampleFuture_Cancel() {
	pool := crew.New(1)
	defer pool.StopAndWait()
	release := make(chan struct{})
	pool.Submit(func() { <-release }) // the one worker is busy

	f := crew.Go(pool, func() (string, error) { return "ran", nil })
	fmt.Println(f.Cancel())
	_, err := f.Wait()
	fmt.Println(err)

	close(release)
	pool.Wait()
	fmt.Println("skipped:", pool.Stats().Skipped)
	// Output:
	// true
	// context canceled
	// skipped: 1
}

// Fork/join of any depth on a pool of one worker with a queue of one: each level's group is
// made from the context crew gave the function, so a function that waits for its children
// runs the ones no worker has taken itself, in its own slot ("Waits that help").
func Example_forkJoin() {
	pool := crew.New(1, crew.WithQueueSize(1))
	defer pool.StopAndWait()

	var sum func(ctx context.Context, lo, hi int) (int, error)
	sum = func(ctx context.Context, lo, hi int) (int, error) {
		if hi-lo <= 4 {
			n := 0
			for i := lo; i < hi; i++ {
				n += i
			}
			return n, nil
		}
		mid := (lo + hi) / 2
		r, _ := crew.NewResults[int](ctx, pool) // ctx: the context crew gave this function
		r.Go(func(ctx context.Context) (int, error) { return sum(ctx, lo, mid) })
		r.Go(func(ctx context.Context) (int, error) { return sum(ctx, mid, hi) })
		halves, err := r.Wait()
		return halves[0] + halves[1], err
	}

	total := crew.GoContext(context.Background(), pool, func(ctx context.Context) (int, error) {
		return sum(ctx, 0, 1000)
	})
	fmt.Println(total.Wait())
	// Output:
	// 499500 <nil>
}

// On SIGTERM, a service stops taking work, gives the work it has 10 seconds, and then
// cancels what still runs: the functions given with a context see it end, with cause
// ErrStopped, and return.
func ExamplePool_Shutdown_cancel() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, sigterm := context.WithCancel(ctx) // here, a stand-in for the signal
	grace := 20 * time.Millisecond          // in a service, 10 * time.Second; short here

	pool := crew.New(4)
	g, _ := pool.Group(context.Background())
	started := make(chan struct{})
	g.Go(func(ctx context.Context) error {
		close(started)
		select { // a long job that watches its context
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Hour):
			return nil
		}
	})
	<-started

	sigterm()
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	fmt.Println("Shutdown:", pool.Shutdown(shutdownCtx))
	fmt.Println("the job:", g.Wait())
	pool.StopAndWait()
	// Output:
	// Shutdown: context deadline exceeded
	// the job: crew: pool is stopped
}

// WithTaskTimeout bounds every function given a context from its start, whoever submits it.
func ExampleWithTaskTimeout() {
	pool := crew.New(2, crew.WithTaskTimeout(10*time.Millisecond))
	defer pool.StopAndWait()

	g, _ := pool.Group(context.Background())
	g.Go(func(ctx context.Context) error {
		<-ctx.Done() // a call that would hang
		return context.Cause(ctx)
	})
	err := g.Wait()
	fmt.Println(errors.Is(err, crew.ErrTaskTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true true
}
