package jetstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ExampleConsume bills the orders of a work queue on a pool of four workers, and terminates
// the one order that does not decode instead of retrying it. The server runs in the example's
// process; a real program connects to its servers instead.
func ExampleConsume() {
	js, closeServer := exampleServer()
	defer closeServer()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "ORDERS", Subjects: []string{"orders"}, Retention: jetstream.WorkQueuePolicy,
	})
	if err != nil {
		panic(err)
	}
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5,
	})
	if err != nil {
		panic(err)
	}
	for _, order := range []string{`{"id": 1}`, `{"id": 2}`, `{"id": oops}`, `{"id": 3}`} {
		if _, err := js.Publish(ctx, "orders", []byte(order)); err != nil {
			panic(err)
		}
	}

	p := crew.New(4)
	defer p.StopAndWait()
	var mu sync.Mutex
	var billed []int
	rejected := 0
	err = crewjs.Consume(ctx, cons, p, func(_ context.Context, msg jetstream.Msg) error {
		var order struct{ ID int }
		err := json.Unmarshal(msg.Data(), &order)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			rejected++
		} else {
			billed = append(billed, order.ID)
		}
		if len(billed)+rejected == 4 {
			cancel() // done: Consume waits for this handler and settles its message
		}
		if err != nil {
			return crewjs.Permanent(fmt.Errorf("malformed order: %w", err))
		}
		return nil
	})

	slices.Sort(billed)
	fmt.Println("Consume returned:", err)
	fmt.Println("billed:", billed)
	fmt.Println("rejected:", rejected)
	// Output:
	// Consume returned: <nil>
	// billed: [1 2 3]
	// rejected: 1
}

// exampleServer starts a NATS server with JetStream in the example's process and connects to
// it; a real program connects to its servers instead. closeServer disconnects and stops it.
func exampleServer() (js jetstream.JetStream, closeServer func()) {
	dir, _ := os.MkdirTemp("", "crewjs-example")
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	js, _ = jetstream.New(nc)
	return js, func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
}

// exampleQueue creates the work-queue stream name on subjects, and its durable consumer shaped
// by cc.
func exampleQueue(ctx context.Context, js jetstream.JetStream, name string, subjects []string, cc jetstream.ConsumerConfig) jetstream.Consumer {
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		panic(err)
	}
	cc.Durable, cc.AckPolicy = "workers", jetstream.AckExplicitPolicy
	cons, err := stream.CreateConsumer(ctx, cc)
	if err != nil {
		panic(err)
	}
	return cons
}

// ExampleRetryAfter retries a call that an upstream service rate-limited after the delay the
// service asked for, rather than after the backoff.
func ExampleRetryAfter() {
	js, closeServer := exampleServer()
	defer closeServer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons := exampleQueue(ctx, js, "CALLS", []string{"calls"}, jetstream.ConsumerConfig{})
	if _, err := js.Publish(ctx, "calls", []byte("GET /quota")); err != nil {
		panic(err)
	}

	p := crew.New(2)
	defer p.StopAndWait()
	var first time.Time
	err := crewjs.Consume(ctx, cons, p, func(_ context.Context, msg jetstream.Msg) error {
		md, _ := msg.Metadata()
		if md.NumDelivered == 1 {
			first = time.Now()
			// The service answered 429 with Retry-After: 0.2s.
			return crewjs.RetryAfter(200*time.Millisecond, errors.New("429 Too Many Requests"))
		}
		fmt.Println("delivery", md.NumDelivered, "after at least 200ms:", time.Since(first) >= 200*time.Millisecond)
		cancel()
		return nil
	})
	fmt.Println("Consume returned:", err)
	// Output:
	// delivery 2 after at least 200ms: true
	// Consume returned: <nil>
}

// ExampleWithDeadLetter sends an order that fails on every delivery to a dead-letter stream,
// with the error and the delivery count, once the consumer's MaxDeliver is reached.
func ExampleWithDeadLetter() {
	js, closeServer := exampleServer()
	defer closeServer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons := exampleQueue(ctx, js, "ORDERS", []string{"orders"}, jetstream.ConsumerConfig{MaxDeliver: 3})
	dead, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.orders"}})
	if err != nil {
		panic(err)
	}
	if _, err := js.Publish(ctx, "orders", []byte(`{"id": 7}`)); err != nil {
		panic(err)
	}

	go func() { // stop consuming once the dead letter is stored
		for ctx.Err() == nil {
			if info, err := dead.Info(ctx); err == nil && info.State.Msgs > 0 {
				cancel()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	p := crew.New(2)
	defer p.StopAndWait()
	err = crewjs.Consume(ctx, cons, p, func(context.Context, jetstream.Msg) error {
		return errors.New("payment service down")
	}, crewjs.WithDeadLetter(js, "dead.orders"), crewjs.WithBackoff(func(int) time.Duration { return 0 }))
	fmt.Println("Consume returned:", err)

	m, err := dead.GetLastMsgForSubject(context.Background(), "dead.orders")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s after %s deliveries\n", m.Data, m.Header.Get("Crew-Error"), m.Header.Get("Crew-Delivery-Count"))
	// Output:
	// Consume returned: <nil>
	// {"id": 7}: payment service down after 3 deliveries
}

// ExampleWithOrderBySubject applies each account's events in the order they were published,
// one at a time per account, while different accounts proceed in parallel.
func ExampleWithOrderBySubject() {
	js, closeServer := exampleServer()
	defer closeServer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons := exampleQueue(ctx, js, "ACCOUNTS", []string{"accounts.>"}, jetstream.ConsumerConfig{})
	for i := 1; i <= 4; i++ {
		for _, account := range []string{"accounts.alice", "accounts.bob"} {
			if _, err := js.Publish(ctx, account, []byte(fmt.Sprint("event ", i))); err != nil {
				panic(err)
			}
		}
	}

	p := crew.New(8)
	defer p.StopAndWait()
	var mu sync.Mutex
	applied := map[string][]string{} // per account, in the order applied
	err := crewjs.Consume(ctx, cons, p, func(_ context.Context, msg jetstream.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		applied[msg.Subject()] = append(applied[msg.Subject()], string(msg.Data()))
		if len(applied["accounts.alice"])+len(applied["accounts.bob"]) == 8 {
			cancel()
		}
		return nil
	}, crewjs.WithOrderBySubject())
	fmt.Println("Consume returned:", err)
	fmt.Println("alice:", applied["accounts.alice"])
	fmt.Println("bob:", applied["accounts.bob"])
	// Output:
	// Consume returned: <nil>
	// alice: [event 1 event 2 event 3 event 4]
	// bob: [event 1 event 2 event 3 event 4]
}
