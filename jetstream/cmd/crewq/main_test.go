package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a crewq worker process when a test starts it as one, and
// otherwise runs the tests, failing if any leaves a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv("CREWQ_TEST_WORKER") == "1" {
		opts, err := parseFlags(os.Args[1:], os.Stderr)
		if err == nil {
			err = runWorker(context.Background(), opts, os.Stdin, os.Stdout)
		}
		if err != nil {
			os.Stderr.WriteString("crewq worker: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	workerCommand = func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "CREWQ_TEST_WORKER=1")
		return cmd, nil
	}
	goleak.VerifyTestMain(m)
}

var summary = regexp.MustCompile(`crewq: done: (\d+) messages in .*; handled (\d+) times, (\d+) of them redelivered; per process \[(.*)\]`)

// crewq runs the command with args and returns its output and the numbers of its summary:
// messages, times handled, redeliveries, and each process's count.
func crewq(t *testing.T, args ...string) (out string, messages, handled, redelivered int, per []int) {
	t.Helper()
	opts, err := parseFlags(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = run(context.Background(), opts, &buf)
	out = buf.String()
	if err != nil {
		t.Fatalf("crewq %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := summary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary in the output:\n%s", out)
	}
	messages, _ = strconv.Atoi(m[1])
	handled, _ = strconv.Atoi(m[2])
	redelivered, _ = strconv.Atoi(m[3])
	for _, f := range strings.Fields(strings.ReplaceAll(m[4], "(killed)", "")) {
		n, _ := strconv.Atoi(f)
		per = append(per, n)
	}
	return out, messages, handled, redelivered, per
}

// TestCrewqDrainsTheQueueWithEveryWorkerProcess runs crewq with an embedded server and two
// worker processes: every message is handled, each process takes part, and the progress
// lines show the rate and the per-process counts.
func TestCrewqDrainsTheQueueWithEveryWorkerProcess(t *testing.T) {
	out, messages, handled, redelivered, per := crewq(t, "-n", "3000", "-procs", "2", "-workers", "4",
		"-every", "100ms", "-timeout", "2m")
	if messages != 3000 || handled != 3000 || redelivered != 0 {
		t.Errorf("%d messages handled %d times, %d redelivered; want 3000, 3000, 0\n%s", messages, handled, redelivered, out)
	}
	if len(per) != 2 || per[0] == 0 || per[1] == 0 || per[0]+per[1] != handled {
		t.Errorf("per-process counts %v, want two, each above 0, adding up to %d\n%s", per, handled, out)
	}
	if !strings.Contains(out, "/s  left") {
		t.Errorf("no progress line in the output:\n%s", out)
	}
}

// TestCrewqLosesNothingWhenAWorkerProcessIsKilled runs crewq with -kill: the first worker
// process is killed mid-run, and the others handle every message, including the ones it held.
func TestCrewqLosesNothingWhenAWorkerProcessIsKilled(t *testing.T) {
	begin := time.Now()
	out, messages, handled, redelivered, per := crewq(t, "-n", "3000", "-procs", "3", "-workers", "4",
		"-work", "1ms", "-kill", "-ackwait", "1s", "-every", "100ms", "-timeout", "2m")
	if !strings.Contains(out, "killed worker process 1") || len(per) != 3 {
		t.Fatalf("no worker process killed:\n%s", out)
	}
	// crewq reports done once the stream is empty: every message was acknowledged. The killed
	// process's count stops at its last report, so the counts may add up to less than that.
	if messages != 3000 || redelivered == 0 {
		t.Errorf("%d messages, %d redelivered; want 3000, and the killed process's messages redelivered\n%s", messages, redelivered, out)
	}
	t.Logf("handled %d times as reported, %d redelivered, in %v", handled, redelivered, time.Since(begin))
}

// TestCrewqFailsFirstDeliveriesWithFail proves -fail: that fraction of messages is
// redelivered once, and every message is still handled.
func TestCrewqFailsFirstDeliveriesWithFail(t *testing.T) {
	out, messages, handled, redelivered, _ := crewq(t, "-n", "500", "-procs", "1", "-workers", "8",
		"-fail", "0.1", "-every", "100ms", "-timeout", "2m")
	failed := 0
	for i := range 500 {
		if failsFirst([]byte(strconv.Itoa(i)), 0.1) {
			failed++
		}
	}
	if messages != 500 || redelivered != failed || handled != 500+failed {
		t.Errorf("%d messages handled %d times, %d redelivered; want 500, %d, %d\n%s", messages, handled, redelivered, 500+failed, failed, out)
	}
}

// TestCrewqRejectsBadFlags proves the flag checks.
func TestCrewqRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-procs", "0"}, {"-fail", "1"}, {"-ackwait", "1ms"}, {"-worker"}, {"extra"}} {
		var stderr bytes.Buffer
		if _, err := parseFlags(args, &stderr); err == nil {
			t.Errorf("parseFlags(%q) accepted them", args)
		} else if !strings.Contains(stderr.String(), "Usage") {
			t.Errorf("parseFlags(%q) printed no usage:\n%s", args, stderr.String())
		}
	}
}
