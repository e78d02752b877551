package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scalingRaw is BenchmarkScaling output as scaling.sh writes it: its machine line, two passes
// at -cpu 1,2,4 (no suffix at one processor), a contender whose name has a dash, and a line
// of another benchmark.
const scalingRaw = `# 4 processors: Test CPU
goos: linux
goarch: amd64
pkg: github.com/crewgo/crew/benchmarks/suites
cpu: Test CPU
BenchmarkScaling/shape=a/pool=crew         	  1000	       100 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-2       	  1000	       200 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-4       	  1000	       300 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-func    	  1000	        90 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-func-2  	  1000	       180 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-func-4  	  1000	       270 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=b/pool=ants-2       	  1000	      1000 ns/op	       0 B/op	       0 allocs/op
BenchmarkPond/load=1u-1Mt/task=randfloat/pool=crew-2 	1	 5 ns/op
BenchmarkScaling/shape=a/pool=crew         	  1000	       110 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-2       	  1000	       220 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-4       	  1000	       500 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-func    	  1000	        90 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-func-2  	  1000	       180 ns/op	       0 B/op	       0 allocs/op
BenchmarkScaling/shape=a/pool=crew-func-4  	  1000	       270 ns/op	       0 B/op	       0 allocs/op
`

// TestScalingParsesProcessorsContendersAndMedians checks the parser of -scaling: the
// processor count from the name's suffix (none: one), a contender name with a dash kept
// whole, other benchmarks skipped, the median of the passes in each cell, the last column the
// cost at the most processors over the cost at two, and a dash where a contender did not run.
func TestScalingParsesProcessorsContendersAndMedians(t *testing.T) {
	sr, err := parseScaling([]byte(scalingRaw))
	if err != nil {
		t.Fatal(err)
	}
	if sr.machine != "4 processors: Test CPU" || strings.Join(sr.shapes, ",") != "a,b" ||
		strings.Join(sr.pools, ",") != "crew,crew-func,ants" || len(sr.procs) != 3 || sr.procs[0] != 1 || sr.procs[2] != 4 {
		t.Fatalf("parsed %q, shapes %q, pools %q, procs %v", sr.machine, sr.shapes, sr.pools, sr.procs)
	}
	if sr.passes() != 2 {
		t.Errorf("%d passes, want 2", sr.passes())
	}
	md := sr.tables()
	checkContains(t, md,
		"## a\n\n| pool | 1 | 2 | 4 | 4/2 |\n|---|---:|---:|---:|---:|\n",
		"| crew | 105 | 210 | 400 | 1.90 |\n", // medians of two passes; 400/210
		"| crew-func | 90 | 180 | 270 | 1.50 |\n",
		"## b\n", "| ants | – | 1000 | – | – |\n")
	if strings.Contains(md, "Pond") || strings.Contains(md, "| crew | 5 ") {
		t.Errorf("another benchmark in the tables:\n%s", md)
	}
	if _, err := parseScaling([]byte("goos: linux\nBenchmarkPond/x/pool=crew 1 5 ns/op\n")); err == nil {
		t.Error("no error for output without BenchmarkScaling")
	}
}

// TestScalingPageKeepsTheTextAroundTheTables checks that -scaling rewrites the tables of an
// existing scaling.md but keeps what it says about the machine (before the first table) and
// its "Reading" section, adds the chart, and writes the SVG.
func TestScalingPageKeepsTheTextAroundTheTables(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "raw.txt")
	if err := os.WriteFile(in, []byte(scalingRaw), 0o644); err != nil {
		t.Fatal(err)
	}
	old := "# Scaling\n\nMachine: sixteen cores, by hand.\n\n## a\n\n| old table |\n\n## Reading\n\nWhat it shows.\n"
	if err := os.WriteFile(filepath.Join(dir, "scaling.md"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := runScaling(&out, in, dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkContains(t, string(page), "# Scaling\n\nMachine: sixteen cores, by hand.\n", "](scaling.svg)",
		"| crew | 105 | 210 | 400 | 1.90 |", "## Reading\n\nWhat it shows.\n")
	if strings.Contains(string(page), "old table") {
		t.Errorf("the old table is still there:\n%s", page)
	}
	// Again, on the page it wrote: the same page, one chart.
	if err := runScaling(&out, in, dir); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(dir, "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(page) {
		t.Errorf("a second run changed the page:\n%s\nto\n%s", page, again)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "scaling.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<svg", ">a<", ">b<", ">crew-func<", "processors"} {
		if !strings.Contains(string(svg), s) {
			t.Errorf("scaling.svg lacks %q", s)
		}
	}
	checkContains(t, out.String(), "scaling.md", "scaling.svg")
}
