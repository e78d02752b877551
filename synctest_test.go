//go:build go1.25

package crew_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crewgo/crew"
)

// TestPoolsInSeveralBubbles proves the package doc's guarantee that pools work inside
// testing/synctest bubbles: pools made in one bubble after another, and side by side, each
// leave workers idle, block a submitter on a full queue and reap idle workers on the bubble's
// fake clock, and a pool made outside any bubble keeps working between them.
func TestPoolsInSeveralBubbles(t *testing.T) {
	outside := crew.New(2)
	defer outside.StopAndWait()
	for round := range 4 {
		synctest.Test(t, bubbleRound)
		t.Run("parallel bubbles", func(t *testing.T) {
			for range 3 {
				t.Run("bubble", func(t *testing.T) {
					t.Parallel()
					synctest.Test(t, bubbleRound)
				})
			}
		})
		var ran atomic.Int32
		for range 10 {
			if err := outside.Submit(func() { ran.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
		outside.Wait()
		if ran.Load() != 10 {
			t.Fatalf("round %d: %d of 10 tasks ran on the pool made outside the bubbles", round, ran.Load())
		}
	}
}

// bubbleRound runs inside a bubble: idle workers, a blocked submitter and idle reaping.
func bubbleRound(t *testing.T) {
	p := crew.New(4, crew.WithIdleTimeout(time.Second), crew.WithQueueSize(1))
	var ran atomic.Int32
	hold := make(chan struct{})
	for range 5 {
		if err := p.Submit(func() { <-hold; ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	// Every worker is busy and the queue full: a sixth submit blocks until one finishes.
	blocked := make(chan error, 1)
	go func() { blocked <- p.Submit(func() { ran.Add(1) }) }()
	synctest.Wait()
	if s := p.Stats(); s.Running != 4 || s.Waiting != 1 {
		t.Fatalf("Stats %+v, want 4 running and 1 waiting", s)
	}
	close(hold)
	if err := <-blocked; err != nil {
		t.Fatalf("blocked Submit: %v", err)
	}
	p.Wait()
	synctest.Wait()
	if s := p.Stats(); s.Idle == 0 || ran.Load() != 6 {
		t.Fatalf("Stats %+v after %d tasks, want idle workers and 6 tasks", s, ran.Load())
	}
	time.Sleep(2 * time.Second) // on the bubble's clock: the idle timeout passes
	synctest.Wait()
	if s := p.Stats(); s.Idle != 0 {
		t.Fatalf("Stats %+v two idle timeouts later, want no idle worker", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestPoolInABubbleThatSleepsForDecades: a pool made inside a bubble keeps its workers'
// channels to itself even after the bubble's clock has passed any date the real clock could
// show, so a pool used after the bubble ends does not receive them.
func TestPoolInABubbleThatSleepsForDecades(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := crew.New(4, crew.WithIdleTimeout(time.Hour))
		time.Sleep(200 * 365 * 24 * time.Hour)
		for range 3 {
			var ran atomic.Int32
			for range 8 {
				if err := p.Submit(func() { ran.Add(1) }); err != nil {
					t.Fatal(err)
				}
			}
			p.Wait()
			time.Sleep(2 * time.Hour) // idle workers exit, their spots kept in the bubble
			synctest.Wait()
			if ran.Load() != 8 {
				t.Fatalf("%d of 8 tasks ran", ran.Load())
			}
		}
		p.StopAndWait()
	})
	after := crew.New(4, crew.WithIdleTimeout(time.Hour))
	var ran atomic.Int32
	for range 64 {
		if err := after.Submit(func() { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	after.StopAndWait()
	if ran.Load() != 64 {
		t.Fatalf("%d of 64 tasks ran on the pool made after the bubble", ran.Load())
	}
}
