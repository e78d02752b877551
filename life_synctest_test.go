//go:build go1.25

package crew_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// TestTaskLifeInABubble: in a testing/synctest bubble, a task timeout ends on the bubble's
// clock, a deadline that passes while a function waits for a worker skips it, a wait that
// helps completes fork/join on one worker, and Shutdown gives up at its deadline and cancels
// what runs, with nothing left behind.
func TestTaskLifeInABubble(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(1, crew.WithTaskTimeout(time.Hour))
		began := time.Now()
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (time.Duration, error) {
			<-ctx.Done()
			return time.Since(began), context.Cause(ctx)
		})
		if d, err := f.Wait(); !errors.Is(err, crew.ErrTaskTimeout) || d != time.Hour {
			t.Fatalf("Wait = %v, %v; want ErrTaskTimeout after exactly an hour", d, err)
		}

		// A request whose deadline passes while the one worker is busy: skipped.
		hold := make(chan struct{})
		must(t, p.Submit(func() { <-hold }))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		late := crew.GoContext(ctx, p, func(context.Context) (int, error) { return 1, nil })
		time.Sleep(2 * time.Second)
		close(hold)
		if _, err := late.Wait(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want DeadlineExceeded: skipped", err)
		}

		// Fork/join on the one worker.
		root := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			r, _ := crew.NewResults[int](ctx, p)
			for i := range 4 {
				r.Go(func(context.Context) (int, error) { return i, nil })
			}
			vals, err := r.Wait()
			return vals[0] + vals[1] + vals[2] + vals[3], err
		})
		if n, err := root.Wait(); n != 6 || err != nil {
			t.Fatalf("fork/join = %d, %v", n, err)
		}

		// Shutdown past its deadline cancels a function watching its context.
		g, _ := p.Group(context.Background())
		g.Go(func(ctx context.Context) error { <-ctx.Done(); return context.Cause(ctx) })
		synctest.Wait()
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		if err := p.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v", err)
		}
		if err := g.Wait(); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("the running function returned %v, want its context's cause ErrStopped", err)
		}
		p.StopAndWait()
		s := p.Stats()
		idleIdentity(t, "pool", s)
		if s.Skipped != 1 {
			t.Fatalf("Skipped = %d, want 1", s.Skipped)
		}
	})
}

// TestSubmitFromATaskIntoAFullPausedQueueRunsAtResume: a function of the pool that submits
// into the pool's full bounded queue while the pool is paused waits, and runs the task in its
// own slot at the moment of Resume (its slot is the one that would make room), not at the next
// poll of the pause: the bubble's clock has not moved when the task runs.
func TestSubmitFromATaskIntoAFullPausedQueueRunsAtResume(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(1, crew.WithQueueSize(1))
		defer p.StopAndWait()
		paused, resumedAt, ranAt := make(chan struct{}), make(chan time.Time, 1), make(chan time.Time, 1)
		f := crew.GoContext(context.Background(), p, func(ctx context.Context) (int, error) {
			if err := p.Submit(func() {}); err != nil { // fills the queue of 1
				return 0, err
			}
			p.Pause()
			close(paused)
			return 0, p.SubmitContext(ctx, func() { ranAt <- time.Now() })
		})
		<-paused
		synctest.Wait() // the submit waits for room
		select {
		case at := <-ranAt:
			t.Fatalf("the task ran at %v while the pool was paused", at)
		default:
		}
		time.Sleep(time.Microsecond) // the clock moves only when everything waits: off the poll's beat
		resumedAt <- time.Now()
		p.Resume()
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		if at, want := <-ranAt, <-resumedAt; !at.Equal(want) {
			t.Fatalf("the task ran %v after Resume, want at once", at.Sub(want))
		}
	})
}
