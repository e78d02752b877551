package crew_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crewgo/crew"
)

// queryPool is a testPool with the queries that Pool and FuncPool share.
type queryPool interface {
	testPool
	Stopped() bool
	QueueSize() int
	MinWorkers() int
	IdleTimeout() time.Duration
}

// forEachQueryKind is forEachKind for the tests of the queries.
func forEachQueryKind(t *testing.T, maxWorkers int, opts []crew.Option, test func(t *testing.T, p queryPool)) {
	t.Helper()
	forEachKind(t, maxWorkers, opts, func(t *testing.T, p testPool) { test(t, p.(queryPool)) })
}

// TestStoppedReportsStopAndStaysTrue: Stopped is false until Stop, true from then on (after
// StopAndWait too), and while it is true submits return ErrStopped, even while an accepted
// task still runs.
func TestStoppedReportsStopAndStaysTrue(t *testing.T) {
	t.Parallel()
	forEachQueryKind(t, 1, nil, func(t *testing.T, p queryPool) {
		if p.Stopped() {
			t.Fatal("Stopped() = true on a new pool")
		}
		release := holdWorkers(t, p, 1, 1)
		p.Stop()
		if !p.Stopped() {
			t.Fatal("Stopped() = false after Stop")
		}
		if err := p.submit(func() {}); !errors.Is(err, crew.ErrStopped) {
			t.Fatalf("submit while Stopped() = %v, want ErrStopped", err)
		}
		if s := p.Stats(); s.Running != 1 || s.Waiting != 1 {
			t.Fatalf("Stats = %+v, want the accepted tasks still running and waiting", s)
		}
		release()
		p.StopAndWait()
		if !p.Stopped() {
			t.Fatal("Stopped() = false after StopAndWait")
		}
	})
}

// TestStoppedIsTrueOnceThePoolContextEnds: from the moment the WithContext context has ended,
// Stopped reports true, as submits return ErrStopped, even before the pool has stopped itself.
func TestStoppedIsTrueOnceThePoolContextEnds(t *testing.T) {
	t.Parallel()
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			p := k.new(2, crew.WithContext(ctx)).(queryPool)
			defer p.StopAndWait()
			if p.Stopped() {
				t.Fatal("Stopped() = true before the context ended")
			}
			cancel()
			if !p.Stopped() {
				t.Fatal("Stopped() = false right after the pool's context ended")
			}
			if err := p.submit(func() {}); !errors.Is(err, crew.ErrStopped) {
				t.Fatalf("submit = %v, want ErrStopped", err)
			}
		})
	}
}

// TestStoppedFollowsTheParentNotASibling: a parent's Stop makes its sub-pools report Stopped;
// a sub-pool's Stop leaves the parent and the other sub-pools running.
func TestStoppedFollowsTheParentNotASibling(t *testing.T) {
	t.Parallel()
	p := crew.New(2)
	a, b := p.Sub(1), p.Sub(1)
	a.Stop()
	if !a.Stopped() || p.Stopped() || b.Stopped() {
		t.Fatalf("after the sub-pool's Stop: sub %t, parent %t, sibling %t; want true, false, false",
			a.Stopped(), p.Stopped(), b.Stopped())
	}
	p.StopAndWait()
	if !p.Stopped() || !b.Stopped() {
		t.Fatalf("after the parent's Stop: parent %t, sub-pool %t; want both true", p.Stopped(), b.Stopped())
	}
}

// TestStoppedNeverGoesBackUnderConcurrentStop: readers of Stopped racing with Stop and Stats
// never see true and then false, and a task may call it.
func TestStoppedNeverGoesBackUnderConcurrentStop(t *testing.T) {
	t.Parallel()
	forEachQueryKind(t, 4, nil, func(t *testing.T, p queryPool) {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				seen := false
				for range 1000 {
					now := p.Stopped()
					if seen && !now {
						t.Error("Stopped() went from true back to false")
						return
					}
					seen = seen || now
				}
			}()
		}
		fromTask := make(chan bool, 1)
		if err := p.submit(func() { p.Stop(); fromTask <- p.Stopped() }); err != nil {
			t.Fatal(err)
		}
		close(start)
		wg.Wait()
		if !<-fromTask {
			t.Error("Stopped() called from a task after its Stop = false")
		}
		p.StopAndWait()
	})
}

// TestQueriesReportWhatThePoolWasBuiltWith: QueueSize, MinWorkers and IdleTimeout return the
// options' values and the defaults without them; a sub-pool reports its own queue, no minimum
// and its parent's idle timeout.
func TestQueriesReportWhatThePoolWasBuiltWith(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		opts        []crew.Option
		queue, min  int
		idleTimeout time.Duration
	}{
		{"defaults", nil, 0, 0, crew.DefaultIdleTimeout},
		{"set", []crew.Option{crew.WithQueueSize(16), crew.WithMinWorkers(3), crew.WithIdleTimeout(time.Minute)}, 16, 3, time.Minute},
		{"zero idle timeout", []crew.Option{crew.WithIdleTimeout(0)}, 0, 0, 0},
		{"no idle timeout", []crew.Option{crew.WithIdleTimeout(crew.NoIdleTimeout)}, 0, 0, crew.NoIdleTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			forEachQueryKind(t, 4, tt.opts, func(t *testing.T, p queryPool) {
				defer p.StopAndWait()
				if q, m, d := p.QueueSize(), p.MinWorkers(), p.IdleTimeout(); q != tt.queue || m != tt.min || d != tt.idleTimeout {
					t.Fatalf("QueueSize, MinWorkers, IdleTimeout = %d, %d, %v; want %d, %d, %v",
						q, m, d, tt.queue, tt.min, tt.idleTimeout)
				}
			})
		})
	}
	p := crew.New(4, crew.WithQueueSize(8), crew.WithMinWorkers(2), crew.WithIdleTimeout(time.Minute))
	defer p.StopAndWait()
	if sub := p.Sub(2); sub.QueueSize() != 0 || sub.MinWorkers() != 0 || sub.IdleTimeout() != time.Minute {
		t.Fatalf("sub-pool's QueueSize, MinWorkers, IdleTimeout = %d, %d, %v; want 0, 0 and its parent's 1m0s",
			sub.QueueSize(), sub.MinWorkers(), sub.IdleTimeout())
	}
	if sub := p.Sub(2, crew.WithQueueSize(3)); sub.QueueSize() != 3 {
		t.Fatalf("sub-pool's QueueSize with WithQueueSize(3) = %d", sub.QueueSize())
	}
}
