package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEachPassTurnsTheOrderOfTheContendersByOnePlace checks rotate: in pass p each suite's
// contenders run in their order turned by p places, one suite after the other, so that over
// as many passes as contenders each one runs once in each place.
func TestEachPassTurnsTheOrderOfTheContendersByOnePlace(t *testing.T) {
	o := options{contenders: []string{"crew", "ants", "pond"}}
	for _, name := range []string{"taskq", "pools"} {
		o.suites = append(o.suites, suiteOptions(t, name).suites...)
	}
	jobs := plan(o)
	want := [][]string{
		{"crew", "ants", "pond"},
		{"ants", "pond", "crew"},
		{"pond", "crew", "ants"},
		{"crew", "ants", "pond"},
	}
	for pass, order := range want {
		got := rotate(jobs, pass)
		if len(got) != len(jobs) {
			t.Fatalf("pass %d: %d jobs, want %d", pass, len(got), len(jobs))
		}
		for i, j := range got {
			s, c := o.suites[i/len(order)], order[i%len(order)]
			if j.suite.name != s.name || j.contender != c {
				t.Errorf("pass %d, job %d: %s on %s, want %s on %s", pass, i, j.suite.name, j.contender, s.name, c)
			}
		}
	}
	if !slices.EqualFunc(rotate(jobs, 0), jobs, func(a, b job) bool {
		return a.suite.name == b.suite.name && a.contender == b.contender
	}) {
		t.Error("pass 0 is not plan's order")
	}
}

// TestRunWithAPrebuiltBinaryRunsEveryJobOfEveryPass runs crewbench's whole loop on a stand-in
// for the suites' test binary (-bin), a script that prints one result for the contender its
// -test.bench names: every pass runs every contender once, the raw output records them all,
// and the tables and charts are written.
func TestRunWithAPrebuiltBinaryRunsEveryJobOfEveryPass(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "suites.test")
	script := `#!/bin/sh
for a in "$@"; do case $a in -test.bench=*) f=${a#-test.bench=};; esac; done
c=${f##*pool=}; c=${c%\$}
printf 'BenchmarkTaskQ/workers=NumCPU/task=json/pool=%s-2 \t1\t100 ns/op\t0 B/op\t0 allocs/op\n' "$c"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := suiteOptions(t, "taskq")
	o.in, o.bin, o.count, o.out = "", bin, 3, filepath.Join(dir, "out")
	o.contenders = []string{"crew", "crew-func", "ants"}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(o.out, "raw.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range o.contenders {
		if n := strings.Count(string(raw), "pool="+c+"-2 "); n != o.count {
			t.Errorf("%s ran %d times, want %d:\n%s", c, n, o.count, raw)
		}
	}
	if !strings.HasPrefix(string(raw), "crewbench-command: go run ./cmd/crewbench -count 3 -suite taskq") ||
		!strings.Contains(string(raw), "-bin "+bin) {
		t.Errorf("raw.txt does not record the command:\n%s", raw)
	}
	for _, f := range []string{"taskq.svg", "taskq.md", "results.md", "quick.svg"} {
		if _, err := os.Stat(filepath.Join(o.out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestQuickRunGivesEachAdaptiveLoadItsOwnCount: the adaptive suite's quick run runs its
// ten-second service phases once and its AES tasks twenty thousand times, one job per load
// and contender, and -full runs both loads in one job at the full benchtime.
func TestQuickRunGivesEachAdaptiveLoadItsOwnCount(t *testing.T) {
	o := suiteOptions(t, "adaptive")
	got := map[string]string{}
	for _, j := range plan(o) {
		if j.contender == "crew" {
			got[j.filter] = j.benchtime
		}
	}
	want := map[string]string{
		"^BenchmarkAdaptive$/^load=service$/./^pool=crew$": "1x",
		"^BenchmarkAdaptive$/^load=cpu$/./^pool=crew$":     "20000x",
	}
	if !maps.Equal(got, want) {
		t.Errorf("quick jobs of crew: %v, want %v", got, want)
	}
	o.full = true
	for _, j := range plan(o) {
		if j.contender == "crew" && (j.filter != "^BenchmarkAdaptive$/././^pool=crew$" || j.benchtime != "1s") {
			t.Errorf("-full job of crew: %s at %s, want every load at 1s", j.filter, j.benchtime)
		}
	}
}
