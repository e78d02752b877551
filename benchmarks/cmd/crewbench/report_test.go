package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// taskqBench is the TaskQ benchmark that the tests' raw outputs hold, without its contender.
const taskqBench = "BenchmarkTaskQ/workers=NumCPU/task=json"

// rawTaskQ builds test-binary output for the TaskQ suite: per contender, its sec/op samples,
// recorded under two crewbench commands as joined runs are.
func rawTaskQ(samples map[string][]float64) []byte {
	var b strings.Builder
	for i, cmd := range []string{"go run ./cmd/crewbench -count 5", "go run ./cmd/crewbench -count 3"} {
		fmt.Fprintf(&b, "crewbench-command: %s\n", cmd)
		for name, ns := range samples {
			for j, v := range ns {
				if j%2 == i {
					writeResult(&b, taskqBench, name, v)
				}
			}
		}
	}
	return []byte(b.String())
}

// rawOf builds test-binary output, with no crewbench command recorded, of the benchmark bench
// (its name without the contender): per contender, its sec/op samples.
func rawOf(bench string, samples map[string][]float64) []byte {
	var b strings.Builder
	for name, ns := range samples {
		for _, v := range ns {
			writeResult(&b, bench, name, v)
		}
	}
	return []byte(b.String())
}

// writeResult writes the configuration lines and one result line of bench on contender, ns
// nanoseconds per operation.
func writeResult(b *strings.Builder, bench, contender string, ns float64) {
	fmt.Fprintf(b, "goos: linux\ngoarch: amd64\ncpu: test\n%s/pool=%s-2 \t1000\t%g ns/op\t64 B/op\t1 allocs/op\n",
		bench, contender, ns)
}

// suiteOptions are the options of -in raw.txt for the suite called name, with crew, pond and
// ants.
func suiteOptions(t *testing.T, name string) options {
	t.Helper()
	for _, s := range suites {
		if s.name == name {
			return options{in: "raw.txt", count: 3, suites: []suite{s}, contenders: []string{"crew", "pond", "ants"}}
		}
	}
	t.Fatalf("no %s suite", name)
	return options{}
}

func taskqOptions(t *testing.T) options { return suiteOptions(t, "taskq") }

// reportOf is the report on raw with options o.
func reportOf(t *testing.T, raw []byte, o options) *report {
	t.Helper()
	rep, err := analyze(raw, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// tablesOf is the markdown of the report on raw with options o.
func tablesOf(t *testing.T, raw []byte, o options) string {
	t.Helper()
	return reportOf(t, raw, o).markdown()
}

// checkContains reports through t each of wants that md lacks.
func checkContains(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
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
	checkContains(t, rep.markdown(),
		"median of 3 to 5 samples",
		"| NumCPU/json | 1.00 | 2.01 | 0.98 |", // crew, pond (significant), ants (untested)
		"| NumCPU/json | pond | 5 | 201.0ns |", // the n column
		"| NumCPU/json | ants | 3 |",
	)

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
	if err := publishTo(io.Discard, o, raw); err != nil {
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

	// Analyzing the published raw.txt in place leaves it as it is: not even rewritten with the
	// same bytes, which would change its modification time.
	o.in = filepath.Join(o.out, "raw.txt")
	before := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(o.in, before, before); err != nil {
		t.Fatal(err)
	}
	if err := publishTo(io.Discard, o, got); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(o.in); err != nil || string(again) != string(raw) {
		t.Errorf("raw.txt changed when analyzed in place (err %v)", err)
	}
	if fi, err := os.Stat(o.in); err != nil || !fi.ModTime().Equal(before) {
		t.Errorf("raw.txt rewritten when analyzed in place (err %v)", err)
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
	checkContains(t, tablesOf(t, raw, o), "| NumCPU/json | inline, 100.0ns | 1.10 | ~1.00 | pond 1.20 |")

	o.contenders = []string{"crew", "ants"}
	if md := tablesOf(t, raw, o); strings.Contains(md, "multiple of the floor") {
		t.Errorf("floor table without a floor contender:\n%s", md)
	}
}

// TestCountIsReadFromRawWithIn checks that with -in the command stated above the tables, for a
// raw file that recorded none, has the number of samples the file holds, not -count's value.
func TestCountIsReadFromRawWithIn(t *testing.T) {
	md := tablesOf(t, rawOf(taskqBench, map[string][]float64{
		"crew": {100, 101, 99, 102},
		"pond": {200, 205, 198, 202},
	}), taskqOptions(t)) // -count 3, the flag's default
	checkContains(t, md, "Command (in `benchmarks/`): `go run ./cmd/crewbench -count 4 ")
}

// TestParKeepsItsKey checks that a scenario's levels are shown by their values, except
// ultrapool's par=, which keeps its key: a bare 10 says nothing.
func TestParKeepsItsKey(t *testing.T) {
	md := tablesOf(t, rawOf("BenchmarkUltrapool/task=sha256-1kB/par=10", map[string][]float64{
		"crew": {100, 101, 99},
	}), suiteOptions(t, "ultrapool"))
	checkContains(t, md, "| sha256-1kB/par=10 | 1.00 |")
}

// TestFmtRatioKeepsTwoSignificantDigitsBelowOneTenth checks that a small multiple is written
// 0.0041, not 0.00, and that ~ marks one that is not significant.
func TestFmtRatioKeepsTwoSignificantDigitsBelowOneTenth(t *testing.T) {
	for _, tc := range []struct {
		r           float64
		significant bool
		want        string
	}{
		{0.0041, true, "0.0041"},
		{0.0041, false, "~0.0041"},
		{0.05, true, "0.05"},
		{0.1, true, "0.10"},
		{1.234, true, "1.23"},
		{12.345, false, "~12.35"},
	} {
		if got := fmtRatio(tc.r, tc.significant); got != tc.want {
			t.Errorf("fmtRatio(%g, %t) = %q, want %q", tc.r, tc.significant, got, tc.want)
		}
	}
}

// TestRangeColumnIsSpreadOverMedian checks the range column of the details: max − min over the
// median, as a percentage.
func TestRangeColumnIsSpreadOverMedian(t *testing.T) {
	md := tablesOf(t, rawOf(taskqBench, map[string][]float64{
		"crew": {90, 100, 110, 100, 105}, // (110 − 90) / 100
		"pond": {200, 200, 200},
	}), taskqOptions(t))
	checkContains(t, md, "| NumCPU/json | crew | 5 | 100.0ns | 20% |", "| NumCPU/json | pond | 3 | 200.0ns | 0% |")
	if got := spread([]float64{0, 0}); got != "–" {
		t.Errorf("spread of zeros = %q, want –", got)
	}
}

// TestSuiteWithItsOwnContendersPlansAndReportsThemWithItsMetric checks the streams suite, whose
// contenders are not contenders.All: -contenders knows them, a pass runs exactly them, and its
// details table has a column for the metric its benchmarks report.
func TestSuiteWithItsOwnContendersPlansAndReportsThemWithItsMetric(t *testing.T) {
	o, err := parseFlags([]string{"-suite", "taskq,streams", "-contenders", "rill,ants,conc"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, j := range plan(o) {
		planned = append(planned, j.suite.name+":"+j.contender)
	}
	want := []string{"taskq:crew", "taskq:ants", "taskq:conc", "streams:crew", "streams:conc", "streams:rill"}
	if !slices.Equal(planned, want) {
		t.Fatalf("plan = %q, want %q", planned, want)
	}
	o.in = "raw.txt"
	const bench = "BenchmarkStreams/items=1M-tiny/order=ordered"
	var raw strings.Builder
	for _, c := range []struct {
		name         string
		ns, pendings float64
	}{{"crew", 100, 2}, {"rill", 150, 5}, {"conc", 300, 5}} {
		fmt.Fprintf(&raw, "goos: linux\ngoarch: amd64\ncpu: test\n%s/pool=%s-2 \t1\t%g ns/op\t%g peak-pending\t64 B/op\t1 allocs/op\n",
			bench, c.name, c.ns, c.pendings)
	}
	md := tablesOf(t, []byte(raw.String()), o)
	checkContains(t, md,
		"## streams: ",
		"crew's own workload.",
		"| scenario | crew | conc | rill |",
		"| 1M-tiny/ordered | 1.00 | 3.00 | 1.50 |",
		"| allocs/op | peak-pending | × crew |",
		"| 1M-tiny/ordered | rill | 1 | 150.0ns | 0% | 64 | 1 | 5 | 1.50 |",
	)
}

// TestQuickChartOnlyForAQuickRun checks that a report draws quick.svg, the chart of every
// scenario, for a quick run and not for a -full one, also when -in reads a -full run's output
// without -full on the command line.
func TestQuickChartOnlyForAQuickRun(t *testing.T) {
	for cmd, want := range map[string]bool{
		"go run ./cmd/crewbench -count 5":       true,
		"go run ./cmd/crewbench -full -count 5": false,
	} {
		dir := t.TempDir()
		raw := "crewbench-command: " + cmd + "\n" + string(rawOf(taskqBench, map[string][]float64{"crew": {100, 101}, "ants": {200, 201}}))
		in := filepath.Join(dir, "raw.txt")
		if err := os.WriteFile(in, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		o := taskqOptions(t)
		o.in, o.out = in, dir
		if err := publishTo(io.Discard, o, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, "quick.svg"))
		if got := err == nil; got != want {
			t.Errorf("%s: quick.svg written: %t, want %t", cmd, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "taskq.svg")); err != nil {
			t.Errorf("%s: no taskq.svg: %v", cmd, err)
		}
	}
}

// TestMetricKeepsDecimalsBelowAHundred: a suite's own metric keeps three significant digits
// below 100 (a mean run time of 2.8 ms), and reads as counts do above.
func TestMetricKeepsDecimalsBelowAHundred(t *testing.T) {
	for v, want := range map[float64]string{2.797: "2.8", 7: "7", 57.51: "57.5", 0.0854: "0.0854", 1234: "1234", 25000: "25k"} {
		if got := fmtMetric(v); got != want {
			t.Errorf("fmtMetric(%v) = %q, want %q", v, got, want)
		}
	}
}
