package jetstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStressThreeProcessesShareAWorkQueueAndAckEachMessageOnce proves Consume's promises at
// scale: three processes (each its own connection, pool and Consume call) share one durable
// consumer of a work-queue stream. Every message is handled and acknowledged exactly once
// (no error reported, the stream empty and nothing pending on the server afterwards, no
// message delivered twice), every process takes part, and no pool's limit is exceeded.
func TestStressThreeProcessesShareAWorkQueueAndAckEachMessageOnce(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	s := startServer(t)
	_, js := connect(t, s)
	st, cons := workQueue(t, js, jetstream.ConsumerConfig{})
	start := time.Now()
	publish(t, js, n)
	t.Logf("published %d messages in %v", n, time.Since(start))

	l := newLedger(n)
	var procs []*process
	start = time.Now()
	for _, limit := range []int{8, 16, 32} {
		procs = append(procs, startProcess(t, s, limit, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			if i < 0 {
				return crewjs.Permanent(errors.New("bad id"))
			}
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, failOnError(t)))
	}
	waitFor(t, 3*time.Minute, "every message handled", func() bool {
		var sum int64
		for _, pr := range procs {
			sum += pr.handled.Load()
		}
		return sum >= int64(n)
	})
	for _, pr := range procs {
		if err := pr.stop(); err != nil {
			t.Errorf("Consume returned %v, want nil", err)
		}
	}
	t.Logf("handled %d messages in %v (%.0f/s)", n, time.Since(start), float64(n)/time.Since(start).Seconds())

	l.check(t)
	for i := range l.seen {
		if s := l.seen[i].Load(); s != 1 {
			t.Fatalf("message %d delivered %d times, want once", i, s)
		}
	}
	checkDrained(t, st, cons)
	for i, pr := range procs {
		pr.checkLimit(t)
		if pr.handled.Load() == 0 {
			t.Errorf("process %d handled no message", i)
		}
		t.Logf("process %d (limit %d): %d messages, at most %d at once", i, pr.limit, pr.handled.Load(), pr.running.max.Load())
	}
}
