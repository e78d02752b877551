// Command crewq runs a NATS JetStream work queue on this machine with crew pools as its
// workers, and prints how fast it drains.
//
//	go run ./cmd/crewq                       # embedded server, 100,000 messages, 3 processes
//	go run ./cmd/crewq -n 1000000 -procs 4 -workers 32 -work 1ms
//	go run ./cmd/crewq -kill -ackwait 2s     # kill a worker process mid-run: nothing is lost
//	go run ./cmd/crewq -url nats://127.0.0.1:4222
//
// It starts a NATS server in its own process, listening on a loopback port with JetStream on
// a temporary directory (or connects to -url instead), creates the work-queue stream CREWQ
// (deleting a stream of that name first) with one durable pull consumer, publishes -n
// messages, and starts -procs worker processes: copies of itself run with -worker, each with
// its own connection and a crew pool of -workers, consuming with crewjs.Consume. Every second
// it prints the messages handled so far, the rate, each process's count, the redeliveries and
// the messages left in the stream. It stops the workers once the stream is empty, or after
// -timeout, and prints a summary that accounts for every message published: handled
// successfully on its first delivery, or after a redelivery, or lost (terminated, as the
// server's advisories count), each count as the worker processes reported it.
//
// With -fail, handlers fail that fraction of the messages on their first delivery, which are
// then redelivered after the backoff. With -kill, the first worker process is killed once a
// third of the messages are handled: the server redelivers its unacknowledged messages to the
// others after the ack wait. Counts are as each process last reported them, so a killed
// process's count stops at its last report; the summary names what it handled after that.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"time"
)

// options are the parsed command line.
type options struct {
	url     string
	n       int
	procs   int
	workers int
	work    time.Duration
	fail    float64
	ackWait time.Duration
	kill    bool
	async   bool
	every   time.Duration
	timeout time.Duration
	worker  bool
	id      int
}

func main() {
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if opts.worker {
		err = runWorker(ctx, opts, os.Stdin, os.Stdout)
	} else {
		err = run(ctx, opts, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crewq:", err)
		os.Exit(1)
	}
}

// parseFlags parses args; on an error it has already printed the message and the usage to
// stderr.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("crewq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "NATS server to use; empty: start one in this process on a loopback port")
	fs.IntVar(&o.n, "n", 100_000, "messages to publish")
	fs.IntVar(&o.procs, "procs", 3, "worker processes")
	fs.IntVar(&o.workers, "workers", 16, "handlers running at once in each worker process (its pool's limit)")
	fs.DurationVar(&o.work, "work", 0, "time each handler sleeps, standing for its work")
	fs.Float64Var(&o.fail, "fail", 0, "fraction of messages whose handler fails on the first delivery")
	fs.DurationVar(&o.ackWait, "ackwait", 30*time.Second, "the consumer's ack wait")
	fs.BoolVar(&o.kill, "kill", false, "kill the first worker process when a third of the messages are handled")
	fs.BoolVar(&o.async, "asyncack", false, "acknowledge without waiting for the server's confirmation")
	fs.DurationVar(&o.every, "every", time.Second, "how often to print progress")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&o.worker, "worker", false, "run as a worker process (started by crewq itself)")
	fs.IntVar(&o.id, "id", 0, "the worker process's number (with -worker)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var bad string
	switch {
	case fs.NArg() > 0:
		bad = fmt.Sprintf("unexpected arguments %q", fs.Args())
	case o.n < 1, o.procs < 1, o.workers < 1:
		bad = "-n, -procs and -workers must be at least 1"
	case o.fail < 0 || o.fail >= 1:
		bad = "-fail must be in [0, 1)"
	case o.ackWait < time.Second/10, o.every <= 0, o.timeout <= 0:
		bad = "-ackwait must be at least 100ms, -every and -timeout positive"
	case o.worker && o.url == "":
		bad = "-worker needs -url"
	}
	if bad != "" {
		fmt.Fprintln(stderr, "crewq:", bad)
		fs.Usage()
		return o, errors.New(bad)
	}
	return o, nil
}

// workerCommand returns the command that starts a worker process with args. Tests replace
// it, to run their own binary as the worker.
var workerCommand = func(args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, args...), nil
}
