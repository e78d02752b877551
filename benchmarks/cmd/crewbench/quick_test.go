package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// quickDocs is where the quick run drawn in the README was written (-out).
var quickDocs = filepath.Join("..", "..", "..", "docs", "benchmarks", "quick")

// quickReport is the analysis of the quick run in quickDocs, with the default options: those
// of the README's command.
func quickReport(t *testing.T) (options, *report) {
	t.Helper()
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(quickDocs, "raw.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return o, reportOf(t, raw, o)
}

// iterations is how many times go test runs a benchmark's body at -test.benchtime bt, "Nx":
// once with b.N = 1, then, if N is more than 1, once with b.N = N.
func iterations(t *testing.T, bt string) float64 {
	n, err := strconv.Atoi(strings.TrimSuffix(bt, "x"))
	if err != nil || !strings.HasSuffix(bt, "x") {
		t.Fatalf("quick benchtime %q is not a count: the quick run's length would depend on go test's search for b.N", bt)
	}
	if n == 1 {
		return 1
	}
	return float64(1 + n)
}

// processStart is what starting the suites' test binary and its setup take per job, beyond
// the benchmarks' own time (from the run in quickDocs: its 2m41s of jobs against the sum of
// its medians; see TestQuickRunTakesAtMostThreeMinutes).
const processStart = 100 * time.Millisecond

// compileTime is what go run and compiling the suites take with the module cache filled and
// the build cache empty, on 2 cores: the part of the three minutes the benchmarks leave.
const compileTime = 45 * time.Second

// TestQuickRunTakesAtMostThreeMinutes computes the quick run's length from its plan and the
// samples of the quick run in quickDocs: for each pass, each suite and contender, a process
// whose benchmarks run their fixed counts of iterations, each at its fastest sample, which is
// what a quiet machine gives (the run in quickDocs shared its 2 cores with other work, which
// only ever adds time). With the compilation, that has to fit in three minutes. Each scenario
// has at least 5 samples, enough for the U test to find a difference significant at α = 0.05.
func TestQuickRunTakesAtMostThreeMinutes(t *testing.T) {
	o, rep := quickReport(t)
	if o.count < 5 {
		t.Errorf("the quick run takes %d samples, too few to mark differences", o.count)
	}
	jobs := plan(o)
	var perPass, medianPass time.Duration
	for _, j := range jobs {
		sr := rep.suites[slices.IndexFunc(rep.suites, func(sr *suiteResult) bool { return sr.suite.name == j.suite.name })]
		perJob := processStart
		medianJob := processStart
		for _, sc := range sr.scenarios {
			c := sc.cells[j.contender]
			if c == nil || len(c.time) == 0 {
				if j.contender != contenders.Inline { // inline skips tasks that sleep
					t.Errorf("%s %s: no sample of %s in the quick run", j.suite.name, sc.name, j.contender)
				}
				continue
			}
			if len(c.time) < 5 {
				t.Errorf("%s %s %s: %d samples", j.suite.name, sc.name, j.contender, len(c.time))
			}
			perJob += time.Duration(slices.Min(c.time) * iterations(t, j.benchtime) * float64(time.Second))
			medianJob += time.Duration(summary(c.time).Center * iterations(t, j.benchtime) * float64(time.Second))
		}
		perPass += perJob
		medianPass += medianJob
	}
	total := perPass*time.Duration(o.count) + compileTime
	t.Logf("%d jobs a pass, %s a pass at the fastest samples (%s at the medians), %d passes, with compiling %s",
		len(jobs), perPass.Round(time.Second), medianPass.Round(time.Second), o.count, total.Round(time.Second))
	if total > 3*time.Minute {
		t.Errorf("the quick run would take %s", total.Round(time.Second))
	}
}

// TestReadmeChartIsTheQuickRun checks that the quick run covers every suite (the sweep and the
// adaptive suite aside: -suite names them), that the run in quickDocs holds exactly the scenarios the quick
// selection names, that its chart shows each of them, and that the README shows that chart
// with a caption naming each scenario and its sizes.
func TestReadmeChartIsTheQuickRun(t *testing.T) {
	o, rep := quickReport(t)
	for _, s := range suites {
		if !s.onlyNamed && (s.quick == "" || len(s.quickScenarios) == 0 || !slices.ContainsFunc(o.suites, func(q suite) bool { return q.name == s.name })) {
			t.Errorf("the quick run leaves out the %s suite", s.name)
		}
	}
	svg, err := os.ReadFile(filepath.Join(quickDocs, "quick.svg"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/benchmarks/quick/quick.svg)") {
		t.Error("README.md does not show docs/benchmarks/quick/quick.svg")
	}
	caption := string(readme)[strings.Index(string(readme), "(docs/benchmarks/quick/quick.svg)"):]
	caption, _, _ = strings.Cut(caption, "\n\n| ")
	for _, sr := range rep.suites {
		var got []string
		for _, sc := range sr.scenarios {
			got = append(got, sc.name)
		}
		if !slices.Equal(got, sr.suite.quickScenarios) {
			t.Errorf("%s: the quick run in %s has %q, the quick selection names %q", sr.suite.name, quickDocs, got, sr.suite.quickScenarios)
		}
		for _, name := range sr.suite.quickScenarios {
			for _, part := range strings.Split(name, "/") {
				if !strings.Contains(string(svg), ">"+part+"<") {
					t.Errorf("quick.svg lacks %s's %q", sr.suite.name, part)
				}
			}
			if !strings.Contains(caption, "`"+name+"`") {
				t.Errorf("the README's caption does not name %s's `%s`", sr.suite.name, name)
			}
		}
	}
}
