package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestScenarioOfABenchmarkLineIsTheTablesName checks that the progress line names a running
// benchmark as the tables do, from the name go test prints before it runs one.
func TestScenarioOfABenchmarkLineIsTheTablesName(t *testing.T) {
	for line, want := range map[string]string{
		"BenchmarkPond/load=1u-100Kt/task=randfloat/pool=crew-2         \t": "1u-100Kt/randfloat",
		"BenchmarkUltrapool/task=sleep1us/par=100/pool=ants-2 \t":           "sleep1us/par=100",
		"BenchmarkStreams/items=10k-50us/order=ordered/pool=rill":           "10k-50us/ordered",
	} {
		if got, ok := benchScenario(line); !ok || got != want {
			t.Errorf("benchScenario(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
	for _, line := range []string{"goos: linux", "PASS", "BenchmarkPond"} {
		if got, ok := benchScenario(line); ok {
			t.Errorf("benchScenario(%q) = %q, want none", line, got)
		}
	}
	var out bytes.Buffer
	p := newProgress(&out, false, nil, 1)
	w := &scenarioWatcher{out: &out, p: p}
	w.Write([]byte("goos: linux\nBenchmarkPond/load=1u-100Kt/task=sl"))
	w.Write([]byte("eep10ms/pool=crew-2 \t"))
	if p.scenario != "1u-100Kt/sleep10ms" {
		t.Errorf("scenario %q after a name written in two pieces", p.scenario)
	}
	if !strings.HasPrefix(out.String(), "goos: linux\nBenchmarkPond") {
		t.Errorf("output not passed through: %q", out.String())
	}
}

// fakeClock is a clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestTimeLeftConvergesAndOffTerminalALinePerSuite runs a made-up plan on a fake clock: the
// guess of the time left starts from the suites' quickJob scaled by what the first jobs took,
// is exact once every job has run once, and off a terminal one line is written per suite and
// pass.
func TestTimeLeftConvergesAndOffTerminalALinePerSuite(t *testing.T) {
	a := suite{name: "a", quickJob: time.Second}
	b := suite{name: "b", quickJob: 4 * time.Second}
	pass := []job{{suite: a, contender: "crew"}, {suite: a, contender: "ants"}, {suite: b, contender: "crew"}}
	var jobs []job
	for range 3 {
		jobs = append(jobs, pass...)
	}
	took := map[string]time.Duration{"a/crew": 2 * time.Second, "a/ants": 2 * time.Second, "b/crew": 8 * time.Second}
	clock := &fakeClock{t: time.Unix(0, 0)}
	var out bytes.Buffer
	p := newProgress(&out, false, jobs, 3)
	p.now = clock.now
	p.begin()
	var guesses []time.Duration
	for i, j := range jobs {
		p.startJob(i)
		clock.t = clock.t.Add(took[jobKey(j)])
		p.endJob()
		left, ok := p.left()
		if !ok {
			t.Fatal("no guess after a job ended")
		}
		guesses = append(guesses, left)
	}
	p.end()
	// After the first job (2 s, its quickJob 1 s) the rest is guessed at twice their quickJob:
	// a's other job 2 s (a's mean), b 8 s, two more passes of 12 s.
	want := []time.Duration{34, 32, 24, 22, 20, 12, 10, 8, 0}
	for i, g := range guesses {
		if g != want[i]*time.Second {
			t.Errorf("after job %d: %s left, want %s", i+1, g, want[i]*time.Second)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "crewbench: pass 1/3, a done; 4s elapsed, about 32s left") {
		t.Errorf("%d lines, want one per suite and pass (6):\n%s", len(lines), out.String())
	}
}
