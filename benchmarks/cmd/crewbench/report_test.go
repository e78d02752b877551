package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestPublishFromRawWritesRawBeside checks that -in with -out publishes the samples it
// analyzed as out/raw.txt next to the tables, so the published tables can always be checked
// against their samples with benchstat.
func TestPublishFromRawWritesRawBeside(t *testing.T) {
	dir := t.TempDir()
	raw := rawTaskQ(map[string][]float64{
		"crew": {100, 101, 99, 102, 100},
		"pond": {200, 205, 198, 202, 201},
		"ants": {95, 110, 98},
	})
	in := filepath.Join(dir, "joined.txt")
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	o := taskqOptions(t)
	o.in, o.out = in, filepath.Join(dir, "docs")
	if err := publish(o, raw); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(o.out, "raw.txt"))
	if err != nil {
		t.Fatalf("no raw.txt beside the tables: %v", err)
	}
	if string(got) != string(raw) {
		t.Errorf("raw.txt differs from the analyzed input")
	}
	if _, err := os.Stat(filepath.Join(o.out, "results.md")); err != nil {
		t.Errorf("no results.md: %v", err)
	}

	// Analyzing the published raw.txt in place leaves it as it is.
	o.in = filepath.Join(o.out, "raw.txt")
	if err := publish(o, got); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(o.in); err != nil || string(again) != string(raw) {
		t.Errorf("raw.txt changed when analyzed in place (err %v)", err)
	}
}

// TestFloorTableTakesFasterReferenceAndFastestBoundedPeer checks the table of times against the
// floor: the floor is the faster of static-floor and inline, the fastest peer is chosen among
// the bounded pools only (not crew's own pools, nor the goroutine per task), and a suite that
// no floor contender ran has no such table.
func TestFloorTableTakesFasterReferenceAndFastestBoundedPeer(t *testing.T) {
	o := taskqOptions(t)
	o.contenders = []string{"crew", "crew-func", "ants", "pond", "goroutines", "static-floor", "inline"}
	raw := rawTaskQ(map[string][]float64{
		"crew":         {110, 111, 109, 112, 110},
		"crew-func":    {100, 101, 99, 102, 100}, // faster than every peer: not a peer
		"goroutines":   {50, 51, 49, 52, 50},     // unbounded: not a peer
		"ants":         {150, 151, 149, 152, 150},
		"pond":         {120, 121, 119, 122, 120},
		"static-floor": {120, 121, 119, 122, 120}, // slower than inline: not the floor
		"inline":       {100, 100, 101, 99, 100},
	})
	rep, err := analyze(raw, o)
	if err != nil {
		t.Fatal(err)
	}
	md := rep.markdown()
	want := "| NumCPU/json | inline, 100.0ns | 1.10 | ~1.00 | pond 1.20 |"
	if !strings.Contains(md, want) {
		t.Errorf("floor table lacks %q:\n%s", want, md)
	}

	o.contenders = []string{"crew", "ants"}
	if rep, err = analyze(raw, o); err != nil {
		t.Fatal(err)
	}
	if md := rep.markdown(); strings.Contains(md, "multiple of the floor") {
		t.Errorf("floor table without a floor contender:\n%s", md)
	}
}
