package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// summaryOf is the summary of the report on raw with options o.
func summaryOf(t *testing.T, raw []byte, o options) string {
	t.Helper()
	return reportOf(t, raw, o).summary()
}

// checkLine checks that s has a line whose fields are want, the first being the scenario.
func checkLine(t *testing.T, s string, want ...string) {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if got := strings.Fields(l); len(got) > 0 && got[0] == want[0] {
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("line = %q, want %q\n%s", got, want, s)
			}
			return
		}
	}
	t.Errorf("no line for %s in:\n%s", want[0], s)
}

// TestSummaryRanksCrewAndNamesTheFastestOther checks a scenario's line: crew's median time, its
// rank among itself and the contenders that are neither crew's nor a floor, the fastest of
// those with its multiple, and crew-func's and the floor's multiples, whatever their speed.
func TestSummaryRanksCrewAndNamesTheFastestOther(t *testing.T) {
	o := taskqOptions(t)
	o.contenders = []string{"crew", "crew-func", "ants", "pond", "static-floor", "inline"}
	s := summaryOf(t, rawTaskQ(map[string][]float64{
		"crew":         {100, 101, 99, 102, 100},
		"crew-func":    {40, 41, 39, 42, 40}, // crew's own: neither ranked nor "other"
		"ants":         {50, 51, 49, 52, 50}, // the fastest other: crew is second
		"pond":         {200, 205, 198, 202, 201},
		"static-floor": {30, 31, 29, 32, 30}, // a floor: not ranked
		"inline":       {60, 61, 59, 62, 60},
	}), o)
	checkLine(t, s, "NumCPU/json", "100.0ns", "2/3", "ants", "0.50", "0.40", "0.30")
	checkContains(t, s, "crew first in 0 of 1 scenarios", "Medians of 5 samples per benchmark")
}

// TestSummaryCountsScenariosCrewLeadsAndMarksInsignificantMultiples checks that a scenario where
// crew has the lowest median counts as first, that an overlapping difference is marked ~, and
// that a missing contender or floor leaves a dash.
func TestSummaryCountsScenariosCrewLeadsAndMarksInsignificantMultiples(t *testing.T) {
	o := taskqOptions(t) // crew, pond, ants
	s := summaryOf(t, rawTaskQ(map[string][]float64{
		"crew": {100, 120, 90, 110, 105},
		"pond": {107, 95, 118, 99, 112}, // overlaps crew's samples
		"ants": {300, 301, 299, 302, 300},
	}), o)
	checkLine(t, s, "NumCPU/json", "105.0ns", "1/3", "pond", "~1.02", "–", "–")
	checkContains(t, s, "crew first in 1 of 1 scenarios")
}

// TestSummaryLinesFitIn100Columns checks the width promise on the widest case: every
// contender in every scenario of ultrapool's suite, one with a long name, tiny multiples.
func TestSummaryLinesFitIn100Columns(t *testing.T) {
	o := suiteOptions(t, "ultrapool")
	o.contenders = nil
	samples := map[string][]float64{}
	for i, c := range contenders.All {
		o.contenders = append(o.contenders, c.Name)
		samples[c.Name] = []float64{1e6 * float64(i+1), 1.1e6 * float64(i+1), 0.9e6 * float64(i+1), 1e6 * float64(i+1)}
	}
	samples["chan-unbuffered"] = []float64{1, 2, 1, 1} // a multiple written as 1e-06
	var raw bytes.Buffer
	for _, bench := range []string{
		"BenchmarkUltrapool/task=aescbc-8kB/par=100",
		"BenchmarkUltrapool/task=a-scenario-name-far-longer-than-any-suite-has/par=100",
	} {
		raw.Write(rawOf(bench, samples))
	}
	s := summaryOf(t, raw.Bytes(), o)
	for _, l := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(l); n > summaryWidth {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	checkContains(t, s, "a-scenario-name-far-lon…")
}

// TestPublishNamesTheFolderOnTheLastLine checks that a report goes to the -out folder, by
// default ./crewbench-out, and that the last line printed names where its files are.
func TestPublishNamesTheFolderOnTheLastLine(t *testing.T) {
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.out != "crewbench-out" {
		t.Errorf("default -out = %q, want crewbench-out", o.out)
	}
	dir := t.TempDir()
	o.out = filepath.Join(dir, "out")
	raw := rawTaskQ(map[string][]float64{"crew": {100, 101, 99, 102}, "pond": {200, 201, 199, 202}})
	var stdout bytes.Buffer
	if err := publishTo(&stdout, o, raw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, filepath.Join(o.out, "results.md")) {
		t.Errorf("last line %q does not name %s", last, o.out)
	}
	for _, f := range []string{"results.md", "taskq.md", "taskq.svg"} {
		if _, err := os.Stat(filepath.Join(o.out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}

	o.out = ""
	stdout.Reset()
	if err := publishTo(&stdout, o, raw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(stdout.String(), "no tables or charts written\n") {
		t.Errorf("with -out '' the last line does not say nothing was written:\n%s", stdout.String())
	}
}

// TestWrapKeepsLinesWithinWidth checks the summary's paragraph wrapping.
func TestWrapKeepsLinesWithinWidth(t *testing.T) {
	text := strings.Repeat("word ", 50) + "α-β"
	got := wrap(text, 23)
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > 23 || n == 0 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(text), " ") {
		t.Errorf("wrap changed the words: %q", got)
	}
	if fmt.Sprint(wrap("", 10)) != "\n" {
		t.Errorf("wrap of nothing = %q", wrap("", 10))
	}
}

// TestSummarySaysWhyCrewIsNotFirst checks the line under a suite for each scenario crew does
// not lead: the fastest other contender, its multiple, and the reason: a tie when the U test
// finds no difference, no limit for a goroutine per task, a measured cause, or none recorded.
func TestSummarySaysWhyCrewIsNotFirst(t *testing.T) {
	crew := []float64{100, 101, 99, 102, 100}
	for _, tc := range []struct {
		name   string
		suite  string
		bench  string
		other  []float64
		want   string
		others []string
	}{
		{"unexplained", "taskq", taskqBench, []float64{50, 51, 49, 52, 50},
			"not first in NumCPU/json (ants 0.50×): cause not measured", []string{"ants"}},
		{"tie", "taskq", taskqBench, []float64{98, 104, 97, 103, 99},
			"not first in NumCPU/json (ants ~0.99×): a tie, not significant", []string{"ants"}},
		{"no limit", "taskq", taskqBench, []float64{50, 51, 49, 52, 50},
			"(goroutines 0.50×): a goroutine per task has no limit", []string{"goroutines"}},
		{"known", "streams", "BenchmarkStreams/items=10k-50us/order=ordered", []float64{50, 51, 49, 52, 50},
			"not first in 10k-50us/ordered (errgroup 0.50×): MapSeq's 16-value window stalls on slow calls", []string{"errgroup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := suiteOptions(t, tc.suite)
			o.contenders = append([]string{"crew"}, tc.others...)
			s := summaryOf(t, rawOf(tc.bench, map[string][]float64{"crew": crew, tc.others[0]: tc.other}), o)
			checkContains(t, s, tc.want)
		})
	}
	s := summaryOf(t, rawOf(taskqBench, map[string][]float64{"crew": crew, "ants": {200, 201, 199, 202, 200}}),
		options{in: "raw.txt", suites: taskqOptions(t).suites, contenders: []string{"crew", "ants"}})
	if strings.Contains(s, "not first") {
		t.Errorf("a line says why crew is not first where it is:\n%s", s)
	}
}
