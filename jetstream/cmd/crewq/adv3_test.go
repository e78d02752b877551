package main

// Adversarial tests of crewq's documented behaviour under -kill, and of a worker process's
// own promises (its report lines, and stopping when its standard input closes).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// advCrewqRun runs the coordinator with args, at most limit, and returns its output and error.
func advCrewqRun(t *testing.T, limit time.Duration, args ...string) (string, error) {
	t.Helper()
	opts, err := parseFlags(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), opts, &buf) }()
	select {
	case err = <-done:
	case <-time.After(limit):
		t.Fatalf("crewq %s did not return within %v:\n%s", strings.Join(args, " "), limit, buf.String())
	}
	return buf.String(), err
}

// lockedBuffer is a buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestAdvCrewqKillWithFailuresAndAsyncAcksLosesNothing attacks -kill where it meets -fail and
// -asyncack. The doc: with -kill "the server redelivers its unacknowledged messages to the
// others after the ack wait"; "a summary that accounts for every message published: handled
// successfully on its first delivery, or after a redelivery, or lost (terminated)". So crewq
// returns no error, kills worker process 1, marks it killed, loses nothing, and its summary
// adds up with a term for the killed process.
func TestAdvCrewqKillWithFailuresAndAsyncAcksLosesNothing(t *testing.T) {
	r := crewq(t, "-n", "900", "-procs", "3", "-workers", "3", "-work", "1ms", "-fail", "0.2", "-asyncack",
		"-kill", "-ackwait", "300ms", "-every", "100ms", "-timeout", "1m")
	if !strings.Contains(r.out, "killed worker process 1") || len(r.per) != 3 {
		t.Fatalf("no worker process killed:\n%s", r.out)
	}
	if !strings.Contains(r.out, "(killed)") {
		t.Errorf("the per-process counts do not mark the killed process:\n%s", r.out)
	}
	if r.published != 900 || r.lost != 0 || !r.killedTerm || r.again == 0 {
		t.Errorf("want 900 published, none lost, redeliveries handled, a term for the killed process\n%s", r.out)
	}
}

// TestAdvCrewqKillOfTheOnlyWorkerEndsAtTheTimeout attacks -kill with a single worker process:
// no other process is left to drain the queue. The doc: crewq "stops the workers once the
// stream is empty, or after -timeout". So it kills the process, gives up at the timeout with
// an error (main's exit status 1), and does not hang.
func TestAdvCrewqKillOfTheOnlyWorkerEndsAtTheTimeout(t *testing.T) {
	begin := time.Now()
	out, err := advCrewqRun(t, 30*time.Second, "-n", "600", "-procs", "1", "-workers", "2", "-work", "5ms", "-kill",
		"-ackwait", "200ms", "-every", "100ms", "-timeout", "2s")
	if !strings.Contains(out, "killed worker process 1") {
		t.Fatalf("no worker process killed:\n%s", out)
	}
	if err == nil || !strings.Contains(err.Error(), "queue not drained") {
		t.Errorf("crewq returned %v, want the queue not drained\n%s", err, out)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("crewq took %v with a 2s timeout", d)
	}
}

// TestAdvCrewqKillOnAQueueDrainedBeforeTheFirstReport attacks -kill on a queue so short that
// it drains before the worker processes report. The doc: "With -kill, the first worker
// process is killed once a third of the messages are handled". Once every message is
// handled, a third of them are: crewq must have killed worker process 1, and the summary must
// carry the killed process's term.
func TestAdvCrewqKillOnAQueueDrainedBeforeTheFirstReport(t *testing.T) {
	r := crewq(t, "-n", "30", "-procs", "2", "-workers", "8", "-kill", "-ackwait", "500ms", "-every", "100ms", "-timeout", "1m")
	if !strings.Contains(r.out, "killed worker process 1") || !r.killedTerm {
		t.Errorf("all 30 messages handled, but no worker process killed:\n%s", r.out)
	}
}

// TestAdvCrewqWorkerStopsWhenItsInputCloses attacks a worker process's promises, driven in
// process. runWorker: it consumes "until its standard input closes", and writes its counts
// as lines "stats HANDLED REDELIVERED ONCE AGAIN", every reportEvery "and once more at the
// end". So with a queue of n messages it reports them all handled once, returns nil soon after
// its input closes, and its last line has the final counts.
func TestAdvCrewqWorkerStopsWhenItsInputCloses(t *testing.T) {
	stopServer, url, err := startServer(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stopServer()
	o, err := parseFlags([]string{"-worker", "-url", url, "-id", "7", "-workers", "3", "-ackwait", "1s"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := connect(url, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := createQueue(ctx, js, o); err != nil {
		t.Fatal(err)
	}
	const n = 200
	if err := publish(ctx, js, n); err != nil {
		t.Fatal(err)
	}
	in, closeIn := io.Pipe()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- runWorker(context.Background(), o, in, &out) }()
	defer closeIn.Close()
	final := fmt.Sprintf("stats %d 0 %d 0", n, n)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), final) {
		if time.Now().After(deadline) {
			t.Fatalf("no report of %d handled within 10s:\n%s", n, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	closeIn.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runWorker returned %v after its input closed, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runWorker did not return within 10s of its input closing")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != final {
		t.Errorf("last report %q, want %q", last, final)
	}
}

// TestAdvCrewqWorkerStopsWhenItsContextEnds attacks the other way a worker process stops.
// runWorker: it consumes "until its standard input closes ... or ctx ends", and reports its
// counts once more at the end. So with its input still open, it returns nil soon after ctx
// ends, with a last report of every message handled.
func TestAdvCrewqWorkerStopsWhenItsContextEnds(t *testing.T) {
	stopServer, url, err := startServer(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stopServer()
	o, err := parseFlags([]string{"-worker", "-url", url, "-id", "2", "-workers", "2", "-work", "1ms", "-ackwait", "1s"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := connect(url, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	setup, cancelSetup := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelSetup()
	if _, err := createQueue(setup, js, o); err != nil {
		t.Fatal(err)
	}
	const n = 50
	if err := publish(setup, js, n); err != nil {
		t.Fatal(err)
	}
	in, closeIn := io.Pipe()
	defer closeIn.Close() // ends runWorker's reading of its input, after the test
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runWorker(ctx, o, in, &out) }()
	final := fmt.Sprintf("stats %d 0 %d 0", n, n)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), final) {
		if time.Now().After(deadline) {
			t.Fatalf("no report of %d handled within 10s:\n%s", n, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runWorker returned %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runWorker did not return within 10s of its context's end")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != final {
		t.Errorf("last report %q, want %q", last, final)
	}
}

// TestAdvCrewqInterruptedMidRunDoesNotHang attacks the coordinator's end when its context
// ends (main's interrupt) in the middle of a run, with a worker process killed by -kill
// before. The doc: the coordinator stops the workers "once the stream is empty, or after
// -timeout"; an interrupt ends the same wait early. So run returns an error saying the queue
// was not drained, promptly (the workers stop when their input closes), without hanging on the
// killed process.
func TestAdvCrewqInterruptedMidRunDoesNotHang(t *testing.T) {
	opts, err := parseFlags([]string{"-n", "4000", "-procs", "2", "-workers", "2", "-work", "2ms", "-kill",
		"-ackwait", "1s", "-every", "100ms", "-timeout", "1m"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, opts, &out) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "killed worker process 1") {
		if time.Now().After(deadline) {
			t.Fatalf("no worker process killed within 30s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "queue not drained") {
			t.Errorf("interrupted crewq returned %v, want the queue not drained\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("interrupted crewq did not return within 20s:\n%s", out.String())
	}
}
