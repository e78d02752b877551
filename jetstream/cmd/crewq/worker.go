package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sync/atomic"
	"time"

	"github.com/crewgo/crew"
	crewjs "github.com/crewgo/crew/jetstream"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	streamName   = "CREWQ"
	subject      = "crewq.jobs"
	consumerName = "crewq"
	// reportEvery is how often a worker process reports its counts to the coordinator.
	reportEvery = 100 * time.Millisecond
)

// runWorker is one worker process. It consumes the CREWQ consumer on a pool of o.workers
// handlers until its standard input closes (the coordinator's signal to stop, which also
// comes when the coordinator dies) or ctx ends, and writes its counts to stdout as lines
// "stats HANDLED REDELIVERED ONCE AGAIN", every reportEvery and once more at the end: the
// handler's runs, those on a redelivery, and the messages handled successfully on their first
// delivery and on a later one.
func runWorker(ctx context.Context, o options, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()

	nc, js, err := connect(o.url, fmt.Sprintf("crewq worker %d", o.id))
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := js.Consumer(ctx, streamName, consumerName)
	if err != nil {
		if ctx.Err() != nil {
			// Told to stop before it began (a queue drained by the other processes first):
			// a stop, not a failure, with nothing handled.
			fmt.Fprintln(stdout, "stats 0 0 0 0")
			return nil
		}
		return err
	}

	p := crew.New(o.workers)
	defer p.StopAndWait()
	var handled, redelivered, once, again atomic.Int64
	report := func() {
		fmt.Fprintf(stdout, "stats %d %d %d %d\n", handled.Load(), redelivered.Load(), once.Load(), again.Load())
	}
	reporting := make(chan struct{})
	go func() {
		defer close(reporting)
		t := time.NewTicker(reportEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				report()
			case <-ctx.Done():
				return
			}
		}
	}()

	var opts []crewjs.Option
	if o.async {
		opts = append(opts, crewjs.WithAsyncAck())
	}
	err = crewjs.Consume(ctx, cons, p, func(ctx context.Context, msg jetstream.Msg) error {
		handled.Add(1)
		md, err := msg.Metadata()
		if err != nil {
			return crewjs.Permanent(err)
		}
		if md.NumDelivered > 1 {
			redelivered.Add(1)
		} else if failsFirst(msg.Data(), o.fail) {
			return errors.New("failing the first delivery, as -fail asks")
		}
		if o.work > 0 {
			time.Sleep(o.work)
		}
		if md.NumDelivered > 1 {
			again.Add(1)
		} else {
			once.Add(1)
		}
		return nil
	}, opts...)
	cancel()
	<-reporting
	report()
	return err
}

// failsFirst reports whether the message with this payload belongs to the fraction whose
// first delivery fails: the same messages in every run and process.
func failsFirst(payload []byte, fraction float64) bool {
	if fraction <= 0 {
		return false
	}
	h := fnv.New32a()
	h.Write(payload)
	return float64(h.Sum32())/(1<<32) < fraction
}
