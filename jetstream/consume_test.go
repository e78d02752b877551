package jetstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go/jetstream"
)

// TestConsumeHandlesEveryMessageOnce is a first smoke test.
func TestConsumeHandlesEveryMessageOnce(t *testing.T) {
	s := startServer(t)
	_, js := connect(t, s)
	st, cons := workQueue(t, js, jetstream.ConsumerConfig{})
	const n = 1000
	publish(t, js, n)
	l := newLedger(n)
	p := crew.New(8)
	defer p.StopAndWait()
	stop := consumeInBackground(t, func(ctx context.Context) error {
		return crewjs.Consume(ctx, cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		})
	})
	waitFor(t, 30*time.Second, "all handled", func() bool { return info(t, cons).NumAckPending == 0 && info(t, cons).NumPending == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l.check(t)
	checkDrained(t, st, cons)
}
