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

var summary = regexp.MustCompile(`crewq: done in .*: published (\d+) = handled once (\d+) \+ after a redelivery (\d+)(?: \+ by the killed process after its last report (-?\d+))? \+ lost (\d+); handler runs per process \[(.*)\]`)

// result is what crewq's summary says.
type result struct {
	out                            string
	published, once, again, killed int
	lost                           int
	killedTerm                     bool // the summary has a term for the killed process
	per                            []int
}

// crewq runs the command with args and returns its output and the numbers of its summary.
func crewq(t *testing.T, args ...string) result {
	t.Helper()
	opts, err := parseFlags(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = run(context.Background(), opts, &buf)
	r := result{out: buf.String()}
	if err != nil {
		t.Fatalf("crewq %s: %v\n%s", strings.Join(args, " "), err, r.out)
	}
	m := summary.FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("no summary in the output:\n%s", r.out)
	}
	r.published, _ = strconv.Atoi(m[1])
	r.once, _ = strconv.Atoi(m[2])
	r.again, _ = strconv.Atoi(m[3])
	r.killedTerm = m[4] != ""
	r.killed, _ = strconv.Atoi(m[4])
	r.lost, _ = strconv.Atoi(m[5])
	for _, f := range strings.Fields(strings.ReplaceAll(m[6], "(killed)", "")) {
		n, _ := strconv.Atoi(f)
		r.per = append(r.per, n)
	}
	if r.once+r.again+r.killed+r.lost != r.published {
		t.Errorf("the summary does not add up:\n%s", r.out)
	}
	return r
}

// TestCrewqDrainsTheQueueWithEveryWorkerProcess runs crewq with an embedded server and two
// worker processes: every message is handled once, each process takes part, and the
// progress lines show the rate and the per-process counts.
func TestCrewqDrainsTheQueueWithEveryWorkerProcess(t *testing.T) {
	r := crewq(t, "-n", "3000", "-procs", "2", "-workers", "4", "-every", "100ms", "-timeout", "2m")
	if r.published != 3000 || r.once != 3000 || r.again != 0 || r.lost != 0 || r.killedTerm {
		t.Errorf("want 3000 published, all handled once, none lost, no killed process\n%s", r.out)
	}
	if len(r.per) != 2 || r.per[0] == 0 || r.per[1] == 0 || r.per[0]+r.per[1] != 3000 {
		t.Errorf("per-process counts %v, want two, each above 0, adding up to 3000\n%s", r.per, r.out)
	}
	if !strings.Contains(r.out, "/s  redelivered") {
		t.Errorf("no progress line in the output:\n%s", r.out)
	}
}

// TestCrewqLosesNothingWhenAWorkerProcessIsKilled runs crewq with -kill: the first worker
// process is killed mid-run, the others handle every message, including the ones it held,
// and the summary accounts for every message, naming what the killed process did after its
// last report.
func TestCrewqLosesNothingWhenAWorkerProcessIsKilled(t *testing.T) {
	begin := time.Now()
	r := crewq(t, "-n", "3000", "-procs", "3", "-workers", "4", "-work", "1ms", "-kill", "-ackwait", "1s",
		"-every", "100ms", "-timeout", "2m")
	if !strings.Contains(r.out, "killed worker process 1") || len(r.per) != 3 {
		t.Fatalf("no worker process killed:\n%s", r.out)
	}
	if r.published != 3000 || r.again == 0 || r.lost != 0 || !r.killedTerm {
		t.Errorf("want 3000 published, the killed process's messages handled after a redelivery, none lost, a term for the killed process\n%s", r.out)
	}
	t.Logf("%d once, %d after a redelivery, %d by the killed process unreported, in %v", r.once, r.again, r.killed, time.Since(begin))
}

// TestCrewqFailsFirstDeliveriesWithFail proves -fail: that fraction of messages is
// redelivered once, and every message is still handled.
func TestCrewqFailsFirstDeliveriesWithFail(t *testing.T) {
	r := crewq(t, "-n", "500", "-procs", "1", "-workers", "8", "-fail", "0.1", "-every", "100ms", "-timeout", "2m")
	failed := 0
	for i := range 500 {
		if failsFirst([]byte(strconv.Itoa(i)), 0.1) {
			failed++
		}
	}
	if r.published != 500 || r.again != failed || r.once != 500-failed || r.per[0] != 500+failed {
		t.Errorf("want 500 published, %d handled once, %d after a redelivery, %d handler runs\n%s", 500-failed, failed, 500+failed, r.out)
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
