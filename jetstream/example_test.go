package jetstream_test

import (
	"context"
	"encoding/json"
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
	dir, _ := os.MkdirTemp("", "crewjs-example")
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

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
