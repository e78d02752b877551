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

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
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

// queue is one test's server, a connection to it, and the work-queue stream with its
// shared consumer.
type queue struct {
	s    *natsServer
	nc   *nats.Conn
	js   jetstream.JetStream
	st   jetstream.Stream
	cons jetstream.Consumer
}

// newQueue starts a server, connects to it and creates the work queue, its consumer shaped
// by cc.
func newQueue(tb testing.TB, cc jetstream.ConsumerConfig) *queue {
	tb.Helper()
	q := &queue{s: startServer(tb)}
	q.nc, q.js = connect(tb, q.s)
	q.st, q.cons = workQueue(tb, q.js, cc)
	return q
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

// allDone reports whether every id was done at least once.
func (l *ledger) allDone() bool {
	for i := range l.done {
		if l.done[i].Load() == 0 {
			return false
		}
	}
	return true
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

// consumeInBackground runs Consume on its own goroutine; the returned function cancels its
// context and returns what it returned. done is closed when it has returned.
func consumeInBackground(tb testing.TB, run func(ctx context.Context) error) (stop func() error, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	var err error
	go func() {
		err = run(ctx)
		close(ch)
	}()
	stop = func() error {
		cancel()
		select {
		case <-ch:
			return err
		case <-time.After(time.Minute):
			return errors.New("Consume did not return within a minute of its context's end")
		}
	}
	tb.Cleanup(func() { _ = stop() })
	return stop, ch
}

// process is one consuming process of a test: its own connection, pool and Consume call.
type process struct {
	nc      *nats.Conn
	pool    *crew.Pool
	limit   int
	running highWater
	handled atomic.Int64
	stop    func() error    // cancels Consume's context and returns what it returned
	done    <-chan struct{} // closed when Consume has returned
}

// startProcess connects to s, looks up the shared consumer and runs Consume on a pool of
// limit workers, with h wrapped to count handled messages and the handlers running at once.
func startProcess(tb testing.TB, s *natsServer, limit int, h crewjs.Handler, opts ...crewjs.Option) *process {
	tb.Helper()
	nc, js := connect(tb, s)
	cons := consumerOn(tb, js)
	pr := &process{nc: nc, pool: newPool(tb, limit), limit: limit}
	pr.stop, pr.done = consumeInBackground(tb, func(ctx context.Context) error {
		return crewjs.Consume(ctx, cons, pr.pool, func(ctx context.Context, msg jetstream.Msg) error {
			pr.running.enter()
			defer pr.running.exit()
			pr.handled.Add(1)
			return h(ctx, msg)
		}, opts...)
	})
	return pr
}

// checkLimit fails the test if more handlers ran at once than the process's pool allows.
func (pr *process) checkLimit(tb testing.TB) {
	tb.Helper()
	if m := pr.running.max.Load(); m > int64(pr.limit) {
		tb.Errorf("%d handlers ran at once on a pool of %d", m, pr.limit)
	}
}

// failOnError is an error handler that fails the test: in a run without faults, every
// acknowledgement, negative acknowledgement and pull succeeds.
func failOnError(tb testing.TB) crewjs.Option {
	return crewjs.WithErrorHandler(func(err error) { tb.Errorf("unexpected error: %v", err) })
}

// observedConsumer is a real consumer whose messages report their in-progress signals.
type observedConsumer struct {
	jetstream.Consumer
	onProgress func()
}

func (c *observedConsumer) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	b, err := c.Consumer.Fetch(n, opts...)
	if err != nil {
		return nil, err
	}
	ob := &observedBatch{b: b, msgs: make(chan jetstream.Msg, n)}
	go func() {
		defer close(ob.msgs)
		for m := range b.Messages() {
			ob.msgs <- &observedMsg{Msg: m, c: c}
		}
	}()
	return ob, nil
}

type observedBatch struct {
	b    jetstream.MessageBatch
	msgs chan jetstream.Msg
}

func (b *observedBatch) Messages() <-chan jetstream.Msg { return b.msgs }
func (b *observedBatch) Error() error                   { return b.b.Error() }

type observedMsg struct {
	jetstream.Msg
	c *observedConsumer
}

func (m *observedMsg) InProgress() error {
	m.c.onProgress()
	return m.Msg.InProgress()
}

// newPool returns a pool of n workers that is stopped, and waited for, when the test ends,
// after the cleanups registered later (such as the Consume calls using it). Create it before
// the gates its handlers wait on, so that they are opened first.
func newPool(tb testing.TB, n int, opts ...crew.Option) *crew.Pool {
	p := crew.New(n, opts...)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			tb.Errorf("pool still busy a minute after the test: %v", err)
		}
	})
	return p
}

// newGate returns a channel for handlers to wait on and the function that opens it; it is
// opened, at the latest, when the test ends, so that no handler is left blocked.
func newGate(tb testing.TB) (wait <-chan struct{}, open func()) {
	ch := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(ch) }) }
	tb.Cleanup(open)
	return ch, open
}

// expectRedelivery runs Consume on cons until it handles one message, which must come
// within limit and be its second delivery, and the message is acknowledged.
func expectRedelivery(tb testing.TB, cons jetstream.Consumer, limit time.Duration) {
	tb.Helper()
	redelivered := make(chan uint64, 1)
	p := newPool(tb, 1)
	stop, _ := consumeInBackground(tb, func(ctx context.Context) error {
		return crewjs.Consume(ctx, cons, p, func(ctx context.Context, msg jetstream.Msg) error {
			md, err := msg.Metadata()
			if err != nil {
				return err
			}
			redelivered <- md.NumDelivered
			return nil
		}, failOnError(tb))
	})
	select {
	case n := <-redelivered:
		if n != 2 {
			tb.Errorf("the message came with NumDelivered %d, want 2", n)
		}
	case <-time.After(limit):
		tb.Fatalf("the message was not redelivered within %v", limit)
	}
	waitFor(tb, 10*time.Second, "redelivered message acknowledged", func() bool { return info(tb, cons).NumAckPending == 0 })
	if err := stop(); err != nil {
		tb.Fatal(err)
	}
}
