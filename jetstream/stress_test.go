package jetstream_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go"
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
	q := newQueue(t, jetstream.ConsumerConfig{})
	start := time.Now()
	publish(t, q.js, n)
	t.Logf("published %d messages in %v", n, time.Since(start))

	l := newLedger(n)
	var procs []*process
	start = time.Now()
	for _, limit := range []int{8, 16, 32} {
		procs = append(procs, startProcess(t, q.s, limit, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			if i < 0 {
				return crewjs.Permanent(errors.New("bad id"))
			}
			l.seen[i].Add(1)
			// A moment of work, so that handlers overlap and the pools' limits are tested.
			time.Sleep(200 * time.Microsecond)
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
	checkDrained(t, q.st, q.cons)
	for i, pr := range procs {
		pr.checkLimit(t)
		if pr.handled.Load() == 0 {
			t.Errorf("process %d handled no message", i)
		}
		t.Logf("process %d (limit %d): %d messages, at most %d at once", i, pr.limit, pr.handled.Load(), pr.running.max.Load())
	}
}

// TestStressKilledProcessLosesNoMessage proves that a process that dies mid-flight loses
// nothing: one process takes messages and never finishes them, its connection is closed
// without an acknowledgement, and the server redelivers its messages after the ack wait to
// the two others, which handle and acknowledge every message exactly once.
func TestStressKilledProcessLosesNoMessage(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 1000
	}
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: time.Second})
	publish(t, q.js, n)
	l := newLedger(n)

	// The doomed process: its handlers block until the test ends, then fail.
	stuck, unstick := newGate(t)
	var held sync.Map // ids the doomed process took
	doomed := startProcess(t, q.s, 4, func(ctx context.Context, msg jetstream.Msg) error {
		held.Store(l.id(t, msg), true)
		<-stuck
		return errors.New("killed")
	}, crewjs.WithShutdownTimeout(0))
	t.Cleanup(unstick) // before the doomed pool waits for its handlers
	waitFor(t, 10*time.Second, "the doomed process busy", func() bool { return doomed.handled.Load() == 4 })

	var late atomic.Int64 // messages the survivors got on a later delivery
	survive := func(ctx context.Context, msg jetstream.Msg) error {
		i := l.id(t, msg)
		if md, err := msg.Metadata(); err == nil && md.NumDelivered > 1 {
			late.Add(1)
		}
		l.seen[i].Add(1)
		l.done[i].Add(1)
		return nil
	}
	a := startProcess(t, q.s, 4, survive, failOnError(t))
	b := startProcess(t, q.s, 8, survive, failOnError(t))

	doomed.nc.Close() // the kill: nothing it holds is acknowledged
	select {
	case <-doomed.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed process's Consume did not return")
	}
	if err := doomed.stop(); !errors.Is(err, nats.ErrConnectionClosed) || !errors.Is(err, crewjs.ErrShutdownTimeout) {
		t.Errorf("the killed process's Consume returned %v, want nats.ErrConnectionClosed and ErrShutdownTimeout", err)
	}
	waitFor(t, 2*time.Minute, "every message done", l.allDone)
	for _, pr := range []*process{a, b} {
		if err := pr.stop(); err != nil {
			t.Error(err)
		}
		pr.checkLimit(t)
	}
	l.check(t)
	held.Range(func(k, _ any) bool {
		if i := k.(int); l.done[i].Load() != 1 {
			t.Errorf("message %d, held by the killed process, done %d times by the others", i, l.done[i].Load())
		}
		return true
	})
	if late.Load() < 4 {
		t.Errorf("%d messages redelivered to the survivors, want at least the 4 the killed process was running", late.Load())
	}
	checkDrained(t, q.st, q.cons)
}

// TestStressServerRestartLosesNoMessage proves that Consume survives a restart of the server
// (file storage, same port): the processes reconnect and resume, and every message is
// handled at least once and the stream ends empty. Acknowledgements under way when the server
// went down may be lost, so a few messages may be handled twice.
func TestStressServerRestartLosesNoMessage(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 5000
	}
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 2 * time.Second})
	publish(t, q.js, n)
	l := newLedger(n)
	var procs []*process
	for _, limit := range []int{4, 8, 16} {
		procs = append(procs, startProcess(t, q.s, limit, func(ctx context.Context, msg jetstream.Msg) error {
			i := l.id(t, msg)
			l.seen[i].Add(1)
			l.done[i].Add(1)
			return nil
		}, crewjs.WithPullExpiry(500*time.Millisecond),
			// An acknowledgement sent while the server was down waits for its reply until
			// its own timeout, longer than the 2 s ack wait that is the default shutdown
			// timeout: the stops at the end must not give up on it.
			crewjs.WithShutdownTimeout(30*time.Second)))
	}
	handled := func() (sum int64) {
		for _, pr := range procs {
			sum += pr.handled.Load()
		}
		return sum
	}
	waitFor(t, time.Minute, "a third handled", func() bool { return handled() >= int64(n/3) })
	q.s.restart(t)
	atRestart := handled()
	waitFor(t, 2*time.Minute, "every message done", l.allDone)
	if atRestart >= int64(n) {
		t.Logf("every message was handled before the restart took effect; the test proved less than it should")
	}
	waitFor(t, time.Minute, "the stream drained", func() bool {
		si, err := q.st.Info(context.Background())
		return err == nil && si.State.Msgs == 0
	})
	twice := 0
	for i := range l.done {
		if l.done[i].Load() > 1 {
			twice++
		}
	}
	t.Logf("handled %d before the restart; %d messages handled twice", atRestart, twice)
	for _, pr := range procs {
		if err := pr.stop(); err != nil {
			t.Error(err)
		}
		pr.checkLimit(t)
	}
	checkDrained(t, q.st, q.cons)
}

// TestStressChurnStrandsNothing proves the shutdown promise under churn: three processes
// share a work queue, and each stops its Consume (its context ends) and starts a new one
// again and again, every few dozen milliseconds, while the messages flow. With an ack wait of
// two minutes, any message left unsettled at a stop would hold the drain past the test's
// limit of one minute; instead every message is handled exactly once (a released message's
// handler never started), and the stream ends empty.
func TestStressChurnStrandsNothing(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 4000
	}
	q := newQueue(t, jetstream.ConsumerConfig{AckWait: 2 * time.Minute})
	publish(t, q.js, n)
	l := newLedger(n)
	h := func(ctx context.Context, msg jetstream.Msg) error {
		i := l.id(t, msg)
		l.seen[i].Add(1)
		time.Sleep(100 * time.Microsecond)
		l.done[i].Add(1)
		return nil
	}
	var restarts atomic.Int64
	var wg sync.WaitGroup
	stopAll := make(chan struct{})
	for pi, limit := range []int{4, 8, 16} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, js := connect(t, q.s)
			cons := consumerOn(t, js)
			p := newPool(t, limit)
			for round := 0; ; round++ {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- crewjs.Consume(ctx, cons, p, h, failOnError(t)) }()
				select {
				case <-stopAll:
				case <-time.After(time.Duration(20+(pi*37+round*53)%120) * time.Millisecond):
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Consume returned %v, want nil", err)
				}
				restarts.Add(1)
				select {
				case <-stopAll:
					return
				default:
				}
			}
		}()
	}
	waitFor(t, time.Minute, "every message done", l.allDone)
	close(stopAll)
	wg.Wait()
	t.Logf("%d stops and restarts", restarts.Load())
	l.check(t)
	for i := range l.seen {
		if s := l.seen[i].Load(); s != 1 {
			t.Errorf("message %d handled %d times, want once", i, s)
		}
	}
	checkDrained(t, q.st, q.cons)
}
