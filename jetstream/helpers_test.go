package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServer is an in-process NATS server with JetStream on file storage, listening on a
// loopback port. It can be stopped and started again on the same port and storage.
type natsServer struct {
	opts *server.Options
	srv  *server.Server
}

// startServer starts a server on a random loopback port, storing its streams in a fresh
// directory. It is shut down when the test ends.
func startServer(tb testing.TB) *natsServer {
	tb.Helper()
	s := &natsServer{opts: &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}}
	s.start(tb)
	// A restart reuses the port the first start picked, so clients reconnect to it.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	tb.Cleanup(s.stop)
	return s
}

func (s *natsServer) start(tb testing.TB) {
	tb.Helper()
	srv, err := server.NewServer(s.opts)
	if err != nil {
		tb.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		tb.Fatal("nats server not ready within 10s")
	}
	s.srv = srv
}

// stop shuts the server down and waits until it has. A second stop does nothing.
func (s *natsServer) stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// restart stops the server and starts it again on the same port and storage.
func (s *natsServer) restart(tb testing.TB) {
	tb.Helper()
	s.stop()
	s.start(tb)
}

func (s *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// connect opens a connection that keeps reconnecting while the server restarts, and closes
// it when the test ends.
func connect(tb testing.TB, s *natsServer) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(s.url(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectJitter(0, 0))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return nc, js
}

const subject = "jobs.work"

// workQueue creates a work-queue stream on file storage and one durable pull consumer with
// explicit acks, shaped further by cc.
func workQueue(tb testing.TB, js jetstream.JetStream, cc jetstream.ConsumerConfig) (jetstream.Stream, jetstream.Consumer) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      "JOBS",
		Subjects:  []string{"jobs.>"},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
	})
	if err != nil {
		tb.Fatal(err)
	}
	cc.Durable = "workers"
	cc.AckPolicy = jetstream.AckExplicitPolicy
	cons, err := st.CreateConsumer(ctx, cc)
	if err != nil {
		tb.Fatal(err)
	}
	return st, cons
}

// consumerOn looks up the shared durable consumer through another connection.
func consumerOn(tb testing.TB, js jetstream.JetStream) jetstream.Consumer {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, "JOBS", "workers")
	if err != nil {
		tb.Fatal(err)
	}
	return cons
}

// publish publishes n messages whose payloads are their ids, "0" to n-1, and waits until
// the stream has stored every one.
func publish(tb testing.TB, js jetstream.JetStream, n int) {
	tb.Helper()
	publishPayloads(tb, js, n, func(i int) []byte { return []byte(strconv.Itoa(i)) })
}

func publishPayloads(tb testing.TB, js jetstream.JetStream, n int, payload func(i int) []byte) {
	tb.Helper()
	const window = 2000 // acks awaited at a time, so the client's buffers stay bounded
	for start := 0; start < n; start += window {
		end := min(start+window, n)
		futures := make([]jetstream.PubAckFuture, 0, end-start)
		for i := start; i < end; i++ {
			f, err := js.PublishAsync(subject, payload(i))
			if err != nil {
				tb.Fatal(err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				tb.Fatal(err)
			case <-time.After(30 * time.Second):
				tb.Fatal("publish not acknowledged within 30s")
			}
		}
	}
}

// ledger records what became of each message id: how often a handler saw it, and how often
// it was handled successfully (the handler returned nil, so Consume acknowledged it).
type ledger struct {
	seen, done []atomic.Int32
}

func newLedger(n int) *ledger {
	return &ledger{seen: make([]atomic.Int32, n), done: make([]atomic.Int32, n)}
}

// id parses a message's payload.
func (l *ledger) id(tb testing.TB, msg jetstream.Msg) int {
	i, err := strconv.Atoi(string(msg.Data()))
	if err != nil || i < 0 || i >= len(l.seen) {
		tb.Errorf("unexpected payload %q", msg.Data())
		return -1
	}
	return i
}

// check fails the test unless every id was seen at least once and done exactly once.
func (l *ledger) check(tb testing.TB) {
	tb.Helper()
	bad := 0
	for i := range l.seen {
		if s, d := l.seen[i].Load(), l.done[i].Load(); s < 1 || d != 1 {
			if bad++; bad <= 10 {
				tb.Errorf("message %d: handled %d times, done %d times, want >= 1 and 1", i, s, d)
			}
		}
	}
	if bad > 10 {
		tb.Errorf("... %d messages in all", bad)
	}
}

// highWater tracks the most handlers running at once.
type highWater struct {
	now, max atomic.Int64
}

func (h *highWater) enter() {
	n := h.now.Add(1)
	for {
		m := h.max.Load()
		if n <= m || h.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (h *highWater) exit() { h.now.Add(-1) }

// waitFor polls cond every few milliseconds until it holds, failing the test after limit.
func waitFor(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// info reads the consumer's state from the server.
func info(tb testing.TB, cons jetstream.Consumer) *jetstream.ConsumerInfo {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ci, err := cons.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return ci
}

// checkDrained fails the test unless the stream is empty and the consumer holds nothing
// unacknowledged: every message was acknowledged or terminated on the server.
func checkDrained(tb testing.TB, st jetstream.Stream, cons jetstream.Consumer) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	si, err := st.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	ci := info(tb, cons)
	if si.State.Msgs != 0 || ci.NumAckPending != 0 || ci.NumPending != 0 {
		tb.Errorf("stream holds %d messages; consumer has %d pending, %d unacknowledged; want 0, 0, 0",
			si.State.Msgs, ci.NumPending, ci.NumAckPending)
	}
}

// consumeInBackground runs Consume on its own goroutine; the returned function cancels it and
// returns what it returned.
func consumeInBackground(tb testing.TB, run func(ctx context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				err = errors.New("Consume did not return within a minute of its context's end")
			}
		})
		return err
	}
	tb.Cleanup(func() { _ = stop() })
	return stop
}
