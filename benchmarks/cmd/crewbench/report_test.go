package main

import (
	"fmt"
	"strings"
	"testing"
)

// rawTaskQ builds test-binary output for the TaskQ suite: per contender, its sec/op samples,
// recorded under two crewbench commands as joined runs are.
func rawTaskQ(samples map[string][]float64) []byte {
	var b strings.Builder
	for i, cmd := range []string{"go run ./cmd/crewbench -count 5", "go run ./cmd/crewbench -count 3"} {
		fmt.Fprintf(&b, "crewbench-command: %s\ngoos: linux\ngoarch: amd64\ncpu: test\n", cmd)
		for name, ns := range samples {
			for j, v := range ns {
				if j%2 == i {
					fmt.Fprintf(&b, "BenchmarkTaskQ/workers=NumCPU/task=json/pool=%s-2 \t1000\t%g ns/op\t64 B/op\t1 allocs/op\n", name, v)
				}
			}
		}
	}
	return []byte(b.String())
}

func taskqOptions(t *testing.T) options {
	t.Helper()
	for _, s := range suites {
		if s.name == "taskq" {
			return options{in: "raw.txt", suites: []suite{s}, contenders: []string{"crew", "pond", "ants"}}
		}
	}
	t.Fatal("no taskq suite")
	return options{}
}

// TestReportCountsSamplesAndMarksSignificance checks what the published tables rest on: every
// sample is read, the sample counts are stated, a clear difference is reported as significant
// and an overlapping one is marked with ~.
func TestReportCountsSamplesAndMarksSignificance(t *testing.T) {
	raw := rawTaskQ(map[string][]float64{
		"crew": {100, 101, 99, 102, 100},
		"pond": {200, 205, 198, 202, 201}, // clearly slower: 2.01, significant
		"ants": {95, 110, 98},             // too few samples to test: no mark
	})
	rep, err := analyze(raw, taskqOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := rep.sampleCounts(); lo != 3 || hi != 5 {
		t.Errorf("sampleCounts = %d, %d; want 3, 5", lo, hi)
	}
	if len(rep.commands) != 2 {
		t.Errorf("commands = %q, want both recorded commands", rep.commands)
	}
	md := rep.markdown()
	for _, want := range []string{
		"median of 3 to 5 samples",
		"| NumCPU/json | 1.00 | 2.01 | 0.98 |", // crew, pond (significant), ants (untested)
		"| NumCPU/json | pond | 5 | 201.0ns |", // the n column
		"| NumCPU/json | ants | 3 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}

	raw = rawTaskQ(map[string][]float64{
		"crew": {100, 120, 90, 110, 105},
		"pond": {104, 95, 118, 99, 112}, // overlaps crew's samples
		"ants": {101, 99, 100, 100, 102},
	})
	if rep, err = analyze(raw, taskqOptions(t)); err != nil {
		t.Fatal(err)
	}
	if md := rep.markdown(); !strings.Contains(md, "| ~") || !strings.Contains(md, "median of 5 samples,") {
		t.Errorf("overlapping samples not marked ~, or the count not stated:\n%s", md)
	}
}
