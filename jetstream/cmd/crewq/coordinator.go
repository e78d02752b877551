package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// run is the coordinator: it sets up the server and the queue, starts the worker processes,
// and prints their progress until the queue is empty.
func run(ctx context.Context, o options, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	url := o.url
	if url == "" {
		stop, u, err := startServer(stdout)
		if err != nil {
			return err
		}
		defer stop()
		url = u
	}
	nc, js, err := connect(url, "crewq")
	if err != nil {
		return err
	}
	defer nc.Close()
	stream, err := createQueue(ctx, js, o)
	if err != nil {
		return err
	}
	begin := time.Now()
	if err := publish(ctx, js, o.n); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "crewq: published %d messages to stream %s in %v\n", o.n, streamName, time.Since(begin).Round(time.Millisecond))

	// Terminations are counted from the server's advisories: in a work queue, a message that
	// leaves the stream was acknowledged or terminated, and only a termination loses it.
	var terminated atomic.Int64
	terms, err := nc.Subscribe(fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.%s.%s", streamName, consumerName),
		func(*nats.Msg) { terminated.Add(1) })
	if err != nil {
		return err
	}
	defer terms.Unsubscribe()

	workers := make([]*workerProcess, o.procs)
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.stop()
			}
		}
	}()
	for i := range workers {
		if workers[i], err = startWorker(o, url, i+1); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "crewq: %d worker processes, %d handlers each\n", o.procs, o.workers)

	// The stream is checked every pollEvery, so that the time to drain it is measured
	// closely, and progress printed every o.every.
	const pollEvery = 20 * time.Millisecond
	begin = time.Now()
	poll := time.NewTicker(min(pollEvery, o.every))
	defer poll.Stop()
	killed := false
	lastPrint, lastHandled := begin, int64(0)
	for {
		select {
		case <-poll.C:
		case <-ctx.Done():
			return fmt.Errorf("queue not drained: %w", ctx.Err())
		}
		si, err := stream.Info(ctx)
		if err != nil {
			fmt.Fprintf(stdout, "crewq: reading the stream: %v\n", err)
			continue
		}
		now := time.Now()
		handled, redelivered := totals(workers)
		// The kill waits for a third of the messages handled, by the workers' reports or, as
		// those come every reportEvery, by what has left the stream: a short queue may drain
		// between two reports, and must still see its kill.
		if o.kill && !killed && max(handled, int64(o.n)-int64(si.State.Msgs)) >= int64(o.n/3) {
			killed = true
			workers[0].kill()
			fmt.Fprintf(stdout, "crewq: killed worker process 1; the server redelivers what it held after the ack wait (%v)\n", o.ackWait)
		}
		if drained := si.State.Msgs == 0; drained || now.Sub(lastPrint) >= o.every {
			fmt.Fprintf(stdout, "%7.1fs  handled %8d  %8.0f/s  redelivered %6d  left %8d  %s\n", now.Sub(begin).Seconds(), handled,
				float64(handled-lastHandled)/now.Sub(lastPrint).Seconds(), redelivered, si.State.Msgs, perProcess(workers))
			lastPrint, lastHandled = now, handled
			if drained {
				break
			}
		}
	}
	elapsed := time.Since(begin)

	var failed []error
	for _, w := range workers {
		if err := w.stop(); err != nil && !w.killed {
			failed = append(failed, fmt.Errorf("worker process %d: %w", w.id, err))
		}
	}
	if err := nc.Flush(); err != nil { // the last advisories
		return err
	}
	fmt.Fprintf(stdout, "crewq: done in %v (%.0f/s): %s; handler runs %s\n", elapsed.Round(time.Millisecond),
		float64(o.n)/elapsed.Seconds(), reconcile(o.n, workers, terminated.Load()), perProcess(workers))
	return errors.Join(failed...)
}

// connect opens a connection that keeps reconnecting, for ever, while the server is away.
func connect(url, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Name(name))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// startServer starts a NATS server with JetStream in this process, on a loopback port, storing
// its streams in a temporary directory. stop shuts it down and removes the directory.
func startServer(stdout io.Writer) (stop func(), url string, err error) {
	dir, err := os.MkdirTemp("", "crewq")
	if err != nil {
		return nil, "", err
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	srv.Start()
	stop = func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
	if !srv.ReadyForConnections(10 * time.Second) {
		stop()
		return nil, "", errors.New("the embedded NATS server did not start within 10s")
	}
	fmt.Fprintf(stdout, "crewq: NATS server with JetStream at %s, storage in %s\n", srv.ClientURL(), dir)
	return stop, srv.ClientURL(), nil
}

// createQueue creates the work-queue stream, deleting any stream of its name first, and its
// durable pull consumer.
func createQueue(ctx context.Context, js jetstream.JetStream, o options) (jetstream.Stream, error) {
	if err := js.DeleteStream(ctx, streamName); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, err
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      streamName,
		Subjects:  []string{subject},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
	})
	if err != nil {
		return nil, err
	}
	_, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       consumerName,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.ackWait,
		MaxAckPending: max(1000, 2*o.procs*o.workers),
	})
	return stream, err
}

// publish publishes n messages whose payloads are their numbers, a window at a time.
func publish(ctx context.Context, js jetstream.JetStream, n int) error {
	const window = 4000
	for start := 0; start < n; start += window {
		var futures []jetstream.PubAckFuture
		for i := start; i < min(start+window, n); i++ {
			f, err := js.PublishAsync(subject, []byte(strconv.Itoa(i)))
			if err != nil {
				return err
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// reconcile accounts for the n messages published once the stream is empty: each was handled
// successfully once, or after a redelivery, or terminated (lost). A killed process's counts
// stop at its last report, so what it acknowledged after that is the rest; without a killed
// process the rest is 0.
func reconcile(n int, workers []*workerProcess, terminated int64) string {
	var once, again int64
	killed := false
	for _, w := range workers {
		once += w.once.Load()
		again += w.again.Load()
		killed = killed || w.killed
	}
	s := fmt.Sprintf("published %d = handled once %d + after a redelivery %d", n, once, again)
	if rest := int64(n) - once - again - terminated; rest != 0 || killed {
		s += fmt.Sprintf(" + by the killed process after its last report %d", rest)
	}
	return s + fmt.Sprintf(" + lost %d", terminated)
}

// workerProcess is a running worker process and its latest counts.
type workerProcess struct {
	id                   int
	cmd                  *exec.Cmd
	stdin                io.Closer
	handled, redelivered atomic.Int64
	once, again          atomic.Int64
	reading              sync.WaitGroup // the goroutine reading its standard output
	killed               bool

	stopOnce sync.Once
	err      error
}

// startWorker starts worker process id.
func startWorker(o options, url string, id int) (*workerProcess, error) {
	args := []string{"-worker", "-url", url, "-id", strconv.Itoa(id), "-workers", strconv.Itoa(o.workers),
		"-work", o.work.String(), "-fail", strconv.FormatFloat(o.fail, 'g', -1, 64)}
	if o.async {
		args = append(args, "-asyncack")
	}
	cmd, err := workerCommand(args)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &workerProcess{id: id, cmd: cmd, stdin: stdin}
	w.reading.Add(1)
	go w.read(out)
	return w, nil
}

// read takes in the counts the worker process reports, until its output closes.
func (w *workerProcess) read(out io.Reader) {
	defer w.reading.Done()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var h, r, o, a int64
		if _, err := fmt.Sscanf(sc.Text(), "stats %d %d %d %d", &h, &r, &o, &a); err == nil {
			w.handled.Store(h)
			w.redelivered.Store(r)
			w.once.Store(o)
			w.again.Store(a)
		}
	}
}

// stop asks the worker process to stop by closing its standard input, and waits for it, for
// a minute at most before killing it. A second stop returns what the first did.
func (w *workerProcess) stop() error {
	w.stopOnce.Do(func() {
		w.stdin.Close()
		done := make(chan error, 1)
		go func() {
			w.reading.Wait() // Wait must not run while the output is still being read
			done <- w.cmd.Wait()
		}()
		select {
		case w.err = <-done:
		case <-time.After(time.Minute):
			w.cmd.Process.Kill()
			w.err = fmt.Errorf("did not stop within a minute: %w", <-done)
		}
	})
	return w.err
}

// kill kills the worker process without warning, as a crash would.
func (w *workerProcess) kill() {
	w.killed = true
	w.cmd.Process.Kill()
}

func totals(workers []*workerProcess) (handled, redelivered int64) {
	for _, w := range workers {
		handled += w.handled.Load()
		redelivered += w.redelivered.Load()
	}
	return handled, redelivered
}

func perProcess(workers []*workerProcess) string {
	parts := make([]string, len(workers))
	for i, w := range workers {
		parts[i] = strconv.FormatInt(w.handled.Load(), 10)
		if w.killed {
			parts[i] += " (killed)"
		}
	}
	return "per process [" + strings.Join(parts, " ") + "]"
}
