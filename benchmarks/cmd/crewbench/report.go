package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// confidence is the level of the intervals in the tables.
const confidence = 0.95

// cell is one contender in one scenario: its samples and their summaries.
type cell struct {
	time, bytes, allocs []float64
	metric              []float64 // the suite's own metric (suite.metric), if it has one
}

// scenario is one row group of a suite: e.g. "1u-1Mt/randfloat".
type scenario struct {
	name  string
	cells map[string]*cell // by contender
}

// suiteResult is everything measured for one suite.
type suiteResult struct {
	suite     suite
	scenarios []*scenario
}

// report is the analysis of a whole run.
type report struct {
	opts     options
	machine  string   // goos/goarch, cpu, cores, Go version
	commands []string // the command lines that took the samples, in order
	suites   []*suiteResult
}

// analyze parses raw, the concatenated output of the test binary, with benchfmt.
func analyze(raw []byte, o options) (*report, error) {
	rep := &report{opts: o}
	bySuite := map[string]*suiteResult{}
	for _, s := range o.suites {
		sr := &suiteResult{suite: s}
		bySuite[strings.TrimPrefix(s.bench, "Benchmark")] = sr
		rep.suites = append(rep.suites, sr)
	}
	var goos, goarch, cpu string
	r := benchfmt.NewReader(bytes.NewReader(raw), "crewbench")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // syntax errors and unit metadata: the test binary's own lines
		}
		goos, goarch, cpu = res.GetConfig("goos"), res.GetConfig("goarch"), strings.TrimSpace(res.GetConfig("cpu"))
		if c := res.GetConfig("crewbench-command"); c != "" && !slices.Contains(rep.commands, c) {
			rep.commands = append(rep.commands, c)
		}
		base, parts := res.Name.Parts()
		sr := bySuite[strings.TrimPrefix(string(base), "Benchmark")] // benchfmt drops the prefix
		if sr == nil {
			continue
		}
		var names []string
		for _, p := range parts {
			if strings.HasPrefix(string(p), "/") {
				// "/load=1u-1Mt" is shown as 1u-1Mt; "/par=10" keeps its key, a bare 10 says
				// nothing.
				part := strings.TrimPrefix(string(p), "/")
				if k, v, ok := strings.Cut(part, "="); ok && k != "par" {
					part = v
				}
				names = append(names, part)
			}
		}
		if len(names) < 2 {
			continue
		}
		sc := sr.scenario(strings.Join(names[:len(names)-1], "/"))
		c := sc.cells[names[len(names)-1]]
		if c == nil {
			c = new(cell)
			sc.cells[names[len(names)-1]] = c
		}
		if v, ok := res.Value("sec/op"); ok {
			c.time = append(c.time, v)
		}
		if v, ok := res.Value("B/op"); ok {
			c.bytes = append(c.bytes, v)
		}
		if v, ok := res.Value("allocs/op"); ok {
			c.allocs = append(c.allocs, v)
		}
		if v, ok := res.Value(sr.suite.metric); ok && sr.suite.metric != "" {
			c.metric = append(c.metric, v)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if o.in != "" { // the samples per benchmark, as the run that wrote the file took them
		if _, hi := rep.sampleCounts(); hi > 0 {
			rep.opts.count = hi
		}
		// A -full run's file makes a -full report: no quick chart.
		for _, c := range rep.commands {
			if strings.Contains(c, " -full") {
				rep.opts.full = true
			}
		}
	}
	rep.machine = fmt.Sprintf("%s/%s, %s, %d cores (GOMAXPROCS %d), %s",
		goos, goarch, cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	if len(rep.commands) == 0 {
		rep.commands = []string{commandLine(rep.opts)} // output of a run that did not record its command
	}
	return rep, nil
}

func (sr *suiteResult) scenario(name string) *scenario {
	for _, sc := range sr.scenarios {
		if sc.name == name {
			return sc
		}
	}
	sc := &scenario{name: name, cells: map[string]*cell{}}
	sr.scenarios = append(sr.scenarios, sc)
	return sc
}

// summary is the median of values with its confidence interval.
func summary(values []float64) benchmath.Summary {
	s := benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
	return benchmath.AssumeNothing.Summary(s, confidence)
}

// ratio is a contender's median time over crew's, and whether the difference between the
// two samples is significant.
func (sc *scenario) ratio(name string) (r float64, significant, ok bool) {
	return sc.ratioTo(name, contenders.Reference)
}

// ratioTo is a contender's median time over the median time of the contender named ref, and
// whether the U test finds the two samples different.
func (sc *scenario) ratioTo(name, ref string) (r float64, significant, ok bool) {
	c, rc := sc.cells[name], sc.cells[ref]
	if c == nil || rc == nil || len(c.time) == 0 || len(rc.time) == 0 {
		return 0, false, false
	}
	r = summary(c.time).Center / summary(rc.time).Center
	cmp := benchmath.AssumeNothing.Compare(
		benchmath.NewSample(slices.Clone(c.time), &benchmath.DefaultThresholds),
		benchmath.NewSample(slices.Clone(rc.time), &benchmath.DefaultThresholds))
	if cmp.N1 < minTested || cmp.N2 < minTested {
		return r, true, true // too few samples to test: shown without a mark
	}
	return r, cmp.P <= cmp.Alpha, true
}

// minTested is the fewest samples per side for which the tables test a difference: with
// fewer, the U test cannot reach significance at α = 0.05 whatever the figures.
const minTested = 4

// fmtRatio writes a multiple of crew's time; "~" marks one that is not significant.
func fmtRatio(r float64, significant bool) string {
	s := fmt.Sprintf("%.2f", r)
	if r < 0.1 {
		s = strconv.FormatFloat(r, 'g', 2, 64) // 0.0041, not 0.00
	}
	if !significant {
		s = "~" + s
	}
	return s
}

func fmtTime(sec float64) string {
	switch {
	case sec >= 1:
		return fmt.Sprintf("%.2fs", sec)
	case sec >= 1e-3:
		return fmt.Sprintf("%.2fms", sec*1e3)
	case sec >= 1e-6:
		return fmt.Sprintf("%.2fµs", sec*1e6)
	default:
		return fmt.Sprintf("%.1fns", sec*1e9)
	}
}

func fmtCount(v float64) string {
	switch {
	case v >= 10e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 10e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// fmtMetric formats a suite's own metric: as fmtCount, but with three significant digits
// below 100, where a mean run time of 2.8 ms would read 3.
func fmtMetric(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return fmtCount(v)
}

// commandLine is the command line that reproduces a run with options o.
func commandLine(o options) string {
	args := []string{"go", "run", "./cmd/crewbench"}
	if o.full {
		args = append(args, "-full")
	}
	if o.short {
		args = append(args, "-short")
	}
	args = append(args, fmt.Sprintf("-count %d", o.count))
	names := func(ss []suite) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.name)
		}
		return out
	}
	if !slices.Equal(names(o.suites), names(defaultSuites(o.full))) {
		args = append(args, "-suite "+strings.Join(names(o.suites), ","))
	}
	if len(o.contenders) != len(contenderNames()) {
		args = append(args, "-contenders "+strings.Join(o.contenders, ","))
	}
	if o.scenarios != "" {
		args = append(args, "-scenarios '"+o.scenarios+"'")
	}
	if o.skip != "" {
		args = append(args, "-skip '"+o.skip+"'")
	}
	if o.bin != "" {
		args = append(args, "-bin "+o.bin)
	}
	switch o.out {
	case defaultOut:
	case "":
		args = append(args, "-out ''")
	default:
		args = append(args, "-out "+o.out)
	}
	return strings.Join(args, " ")
}

// header is the text above the tables.
func (rep *report) header() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s.\n\n", rep.machine)
	switch len(rep.commands) {
	case 0:
	case 1:
		fmt.Fprintf(&b, "Command (in `benchmarks/`): `%s`.\n\n", rep.commands[0])
	default:
		b.WriteString("Commands (in `benchmarks/`) whose raw outputs were joined, in this order:\n\n")
		for _, c := range rep.commands {
			fmt.Fprintf(&b, "- `%s`\n", c)
		}
		b.WriteString("\n")
	}
	if lo, hi := rep.sampleCounts(); lo == hi {
		fmt.Fprintf(&b, "Each figure is the median of %d samples, one per pass, the order of the contenders turned by one place each pass. ", hi)
	} else {
		fmt.Fprintf(&b, "Each figure is the median of %d to %d samples (column n of each suite's details), one per pass, the order of the contenders turned by one place each pass. ", lo, hi)
	}
	b.WriteString("A multiple is the contender's median time divided by crew's (below 1: faster than crew); `~` marks a difference that the Mann-Whitney U test of golang.org/x/perf/benchmath does not find significant at α = 0.05; with fewer than 4 samples per side no test is made and nothing is marked, so read the range column (max − min over the median).\n\n")
	return b.String()
}

// sampleCounts returns the fewest and the most samples any benchmark of the report has.
func (rep *report) sampleCounts() (lo, hi int) {
	for _, sr := range rep.suites {
		for _, sc := range sr.scenarios {
			for _, c := range sc.cells {
				if n := len(c.time); n > 0 {
					if lo == 0 || n < lo {
						lo = n
					}
					hi = max(hi, n)
				}
			}
		}
	}
	return lo, hi
}

// markdown is every suite's tables.
func (rep *report) markdown() string {
	var b strings.Builder
	b.WriteString(rep.header())
	for _, sr := range rep.suites {
		if len(sr.scenarios) > 0 {
			b.WriteString(sr.markdown(rep.opts.contendersOf(sr.suite)))
		}
	}
	return b.String()
}

// markdown is the suite's tables: the multiples of crew's time, scenario by contender, then
// each contender's figures.
func (sr *suiteResult) markdown(names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s: %s\n\n", sr.suite.name, sr.suite.title)
	if sr.suite.source != "" {
		fmt.Fprintf(&b, "%s Workload published by its authors at <%s>.\n\n", upperFirst(sr.suite.about), sr.suite.source)
	} else {
		fmt.Fprintf(&b, "%s crew's own workload.\n\n", upperFirst(sr.suite.about))
	}

	b.WriteString("Time as a multiple of crew's:\n\n| scenario |")
	var present []string
	for _, n := range names {
		if sr.has(n) {
			present = append(present, n)
		}
	}
	for _, n := range present {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("--:|", len(present)))
	b.WriteString("\n")
	for _, sc := range sr.scenarios {
		fmt.Fprintf(&b, "| %s |", sc.name)
		for _, n := range present {
			if r, sig, ok := sc.ratio(n); ok {
				fmt.Fprintf(&b, " %s |", fmtRatio(r, sig || n == contenders.Reference))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}

	b.WriteString(sr.floorTable(present))

	b.WriteString("\n<details><summary>Time, memory and allocations per contender</summary>\n\n")
	metric, metricAlign := "", ""
	if m := sr.suite.metric; m != "" {
		metric, metricAlign = " "+m+" |", "--:|"
	}
	fmt.Fprintf(&b, "| scenario | contender | n | time/op | range | B/op | allocs/op |%s × crew |\n|---|---|--:|--:|--:|--:|--:|%s--:|\n",
		metric, metricAlign)
	for _, sc := range sr.scenarios {
		for _, n := range present {
			c := sc.cells[n]
			if c == nil || len(c.time) == 0 {
				continue
			}
			t := summary(c.time)
			x := ""
			if r, sig, ok := sc.ratio(n); ok {
				x = fmtRatio(r, sig || n == contenders.Reference)
			}
			if metric != "" {
				m := "–"
				if len(c.metric) > 0 {
					m = fmtMetric(summary(c.metric).Center)
				}
				x = m + " | " + x
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", sc.name, n, len(c.time), fmtTime(t.Center),
				spread(c.time), fmtCount(summary(c.bytes).Center), fmtCount(summary(c.allocs).Center), x)
		}
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

// floorTable is the suite's table of times against each scenario's floor, for the contenders
// in present, or nothing when no floor contender ran any scenario.
func (sr *suiteResult) floorTable(present []string) string {
	var rows strings.Builder
	for _, sc := range sr.scenarios {
		floor, ok := sc.fastest(present, contenders.Floor)
		if !ok {
			continue
		}
		cell := func(name string) string {
			r, sig, ok := sc.ratioTo(name, floor)
			if !ok {
				return ""
			}
			return fmtRatio(r, sig)
		}
		fmt.Fprintf(&rows, "| %s | %s, %s | %s | %s |", sc.name, floor, fmtTime(summary(sc.cells[floor].time).Center),
			cell(contenders.Reference), cell("crew-func"))
		if peer, ok := sc.fastest(present, contenders.Bounded); ok {
			fmt.Fprintf(&rows, " %s %s |", peer, cell(peer))
		} else {
			rows.WriteString(" |")
		}
		rows.WriteString("\n")
	}
	if rows.Len() == 0 {
		return ""
	}
	return "\nTime as a multiple of the floor's, the faster of static-floor and inline in each scenario: " +
		"what the work costs with no pool in the way. A contender at 1.10 leaves any pool at most 9% of its " +
		"time to save (1 − 1/1.10). With tasks that sleep, a pool that runs them on fewer goroutines than " +
		"the static floor's can take less time than it; `~` marks a time not significantly different " +
		"from the floor's.\n\n" +
		"| scenario | floor | crew | crew-func | fastest bounded peer |\n|---|---|--:|--:|---|\n" + rows.String()
}

// fastest returns the contender of the given kind, among present, with the lowest median time
// in the scenario; ok is false when none of that kind ran it.
func (sc *scenario) fastest(present []string, kind contenders.Kind) (name string, ok bool) {
	best := 0.0
	for _, n := range present {
		c := sc.cells[n]
		if c == nil || len(c.time) == 0 || kindOf(n) != kind {
			continue
		}
		if t := summary(c.time).Center; !ok || t < best {
			name, best, ok = n, t, true
		}
	}
	return name, ok
}

// kindOf returns the kind of the contender called name; a name that contenders.All lacks (from
// an older raw file) counts as a bounded pool.
func kindOf(name string) contenders.Kind {
	for _, c := range contenders.All {
		if c.Name == name {
			return c.Kind
		}
	}
	return contenders.Bounded
}

// spread is the range of the samples, max - min, as a percentage of their median: with a
// handful of samples it says more than a confidence interval, which needs six or more.
func spread(values []float64) string {
	lo, hi := slices.Min(values), slices.Max(values)
	med := summary(values).Center
	if med == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", (hi-lo)/med*100)
}

func (sr *suiteResult) has(name string) bool {
	for _, sc := range sr.scenarios {
		if c := sc.cells[name]; c != nil && len(c.time) > 0 {
			return true
		}
	}
	return false
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// overview is every scenario of the run but the sweep's, suite after suite, each named by its
// suite and its own name: what quick.svg, the chart of a quick run, shows.
func (rep *report) overview() *suiteResult {
	all := &suiteResult{suite: suite{name: "quick", title: "crewbench's quick run"}}
	for _, sr := range rep.suites {
		if sr.suite.name == sweepSuite.name {
			continue
		}
		for _, sc := range sr.scenarios {
			all.scenarios = append(all.scenarios, &scenario{name: sr.suite.name + "/" + sc.name, cells: sc.cells})
		}
	}
	return all
}

// write saves the tables (all of them in results.md, and each suite's in
// <suite>.md) and one chart per suite into dir; after a quick run (not -full), also
// quick.svg, every scenario in one chart.
func (rep *report) write(dir string, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte("# crew benchmark results\n\n"+md), 0o644); err != nil {
		return err
	}
	if !rep.opts.full {
		if all := rep.overview(); len(all.scenarios) > 0 {
			if err := all.chart(filepath.Join(dir, all.suite.name+".svg"), rep.opts.contenders, rep.machine); err != nil {
				return fmt.Errorf("chart of the quick run: %w", err)
			}
		}
	}
	for _, sr := range rep.suites {
		if len(sr.scenarios) == 0 {
			continue
		}
		if sr.suite.name == sweepSuite.name { // its own page and charts
			if err := sr.writeSweep(dir, rep); err != nil {
				return err
			}
			continue
		}
		page := fmt.Sprintf("# %s\n\n%s![%s](%s.svg)\n\n%s", sr.suite.title, rep.header(), sr.suite.title, sr.suite.name,
			sr.markdown(rep.opts.contendersOf(sr.suite)))
		if err := os.WriteFile(filepath.Join(dir, sr.suite.name+".md"), []byte(page), 0o644); err != nil {
			return err
		}
		if err := sr.chart(filepath.Join(dir, sr.suite.name+".svg"), rep.opts.contendersOf(sr.suite), rep.machine); err != nil {
			return fmt.Errorf("chart of %s: %w", sr.suite.name, err)
		}
	}
	return nil
}
