package jetstream_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go/jetstream"
)

// benchWorkers is each process's limit of handlers running at once.
const benchWorkers = 16

// BenchmarkConsume measures messages handled per second when 1, 2 and 4 processes share one
// work queue of b.N messages, each process with its own connection and benchWorkers handlers
// at most. The processes are goroutines of the benchmark, and the server runs in it too, so
// they share its cores. Three ways to consume:
//
//   - crew: Consume on a crew pool, acknowledging with DoubleAck (the default).
//   - crew-asyncack: the same with WithAsyncAck.
//   - nats-consume: nats.go's own Consume callback, which starts a goroutine per message
//     guarded by a semaphore of benchWorkers slots, acknowledging with DoubleAck; nats.go
//     buffers up to its default of 500 messages ahead.
//   - nats-fetch: a loop of nats.go's Fetch, each for the free slots of a semaphore of
//     2*benchWorkers (the in-flight limit plus a prefetch of as many), a goroutine per message
//     of which benchWorkers run the handler at once, acknowledging with DoubleAck: the pull
//     that Consume is built on, without crew, to tell its cost from crew's.
//
// The handler does nothing (work=0) or sleeps a millisecond (work=1ms, a stand-in for a call
// to another service). Each run checks that every message was handled and the stream is empty.
// msgs/s is b.N over the time from the first pull to the last acknowledgement.
func BenchmarkConsume(b *testing.B) {
	for _, work := range []time.Duration{0, time.Millisecond} {
		for _, procs := range []int{1, 2, 4} {
			for _, way := range []struct {
				name  string
				start func(tb testing.TB, s *natsServer, h func()) (stop func())
			}{
				{"crew", startCrew()},
				{"crew-asyncack", startCrew(crewjs.WithAsyncAck())},
				{"nats-consume", startNatsConsume},
				{"nats-fetch", startNatsFetch},
			} {
				b.Run(fmt.Sprintf("work=%v/procs=%d/way=%s", work, procs, way.name), func(b *testing.B) {
					benchConsume(b, procs, work, way.start)
				})
			}
		}
	}
}

func benchConsume(b *testing.B, procs int, work time.Duration, start func(testing.TB, *natsServer, func()) func()) {
	q := newQueue(b, jetstream.ConsumerConfig{})
	publish(b, q.js, b.N)
	var handled atomic.Int64
	all := make(chan struct{})
	h := func() {
		if work > 0 {
			time.Sleep(work)
		}
		if handled.Add(1) == int64(b.N) {
			close(all)
		}
	}
	b.ResetTimer()
	begin := time.Now()
	var stops []func()
	for range procs {
		stops = append(stops, start(b, q.s, h))
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d messages handled in 5 minutes", handled.Load(), b.N)
	}
	// The last acknowledgement may still be on its way; the stream is empty once it landed.
	waitFor(b, time.Minute, "stream drained", func() bool {
		si, err := q.st.Info(context.Background())
		return err == nil && si.State.Msgs == 0
	})
	elapsed := time.Since(begin)
	b.StopTimer()
	for _, stop := range stops {
		stop()
	}
	if got := handled.Load(); got != int64(b.N) {
		b.Fatalf("%d messages handled, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

// startCrew starts a process running Consume on a pool of benchWorkers.
func startCrew(opts ...crewjs.Option) func(testing.TB, *natsServer, func()) func() {
	return func(tb testing.TB, s *natsServer, h func()) func() {
		pr := startProcess(tb, s, benchWorkers, func(context.Context, jetstream.Msg) error {
			h()
			return nil
		}, append(opts, failOnError(tb))...)
		return func() {
			if err := pr.stop(); err != nil {
				tb.Error(err)
			}
		}
	}
}

// startNatsConsume starts a process running nats.go's Consume with a callback that runs each
// message on its own goroutine, at most benchWorkers at a time.
func startNatsConsume(tb testing.TB, s *natsServer, h func()) func() {
	_, js := connect(tb, s)
	cons := consumerOn(tb, js)
	sem := make(chan struct{}, benchWorkers)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			h()
			if err := msg.DoubleAck(context.Background()); err != nil {
				tb.Errorf("ack: %v", err)
			}
		}()
	})
	if err != nil {
		tb.Fatal(err)
	}
	return func() {
		cc.Stop()
		<-cc.Closed()
		for range benchWorkers { // wait for the goroutines still acknowledging
			sem <- struct{}{}
		}
	}
}

// startNatsFetch starts a process pulling with nats.go's Fetch in a loop, each pull for the
// free slots of 2*benchWorkers, and handling each message on its own goroutine, at most
// benchWorkers at a time.
func startNatsFetch(tb testing.TB, s *natsServer, h func()) func() {
	_, js := connect(tb, s)
	cons := consumerOn(tb, js)
	ctx, cancel := context.WithCancel(context.Background())
	slots := make(chan struct{}, 2*benchWorkers) // held messages
	run := make(chan struct{}, benchWorkers)     // handlers running
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			n := 0
			select {
			case slots <- struct{}{}:
				n++
			case <-ctx.Done():
				return
			}
		more:
			for n < cap(slots) {
				select {
				case slots <- struct{}{}:
					n++
				default:
					break more
				}
			}
			batch, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				tb.Errorf("fetch: %v", err)
				return
			}
			got := 0
			for msg := range batch.Messages() {
				got++
				wg.Add(1)
				go func() {
					defer wg.Done()
					run <- struct{}{}
					h()
					if err := msg.DoubleAck(context.Background()); err != nil {
						tb.Errorf("ack: %v", err)
					}
					<-run
					<-slots
				}()
			}
			for range n - got {
				<-slots
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
