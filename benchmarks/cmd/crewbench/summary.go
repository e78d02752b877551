package main

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// summaryWidth is the most columns a line of the summary takes.
const summaryWidth = 100

// scenarioWidth is the most columns a scenario's name takes in the summary; a longer one is cut.
const scenarioWidth = 24

// summary is the report for a terminal: how to read it, then per suite one line per scenario
// with crew's median time; its rank by median time among crew and the contenders that are
// neither crew's (crew-func) nor a floor reference; the fastest of those others with its time
// as a multiple of crew's; and crew-func's and the floor's times as multiples of crew's. No
// line is wider than summaryWidth.
func (rep *report) summary() string {
	var b strings.Builder
	lo, hi := rep.sampleCounts()
	samples := fmt.Sprintf("%d samples", hi)
	if lo != hi {
		samples = fmt.Sprintf("%d to %d samples", lo, hi)
	}
	b.WriteString(wrap(fmt.Sprintf("Medians of %s per benchmark on %s. rank: crew's place by "+
		"median time among itself, its peers and the baselines. fastest other: the fastest of "+
		"those, and its time as a multiple of crew's (below 1: faster than crew); crew-func and "+
		"floor (the faster of static-floor and inline: the work with no pool at all) likewise. "+
		"~ marks a difference the Mann-Whitney U test does not find significant (α = 0.05); with "+
		"fewer than %d samples none is tested.", samples, rep.machine, minTested), summaryWidth))
	for _, sr := range rep.suites {
		if len(sr.scenarios) > 0 {
			b.WriteString("\n")
			b.WriteString(sr.summary(rep.opts.contendersOf(sr.suite)))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// summaryRow is one scenario's line of the summary.
type summaryRow struct {
	scenario, crewTime, rank string
	other, otherRatio        string
	crewFunc, floor          string // multiples of crew's time
	first                    bool   // crew's rank is 1
}

// summary is the suite's part of the summary: a heading, a line per scenario that crew ran,
// and in how many of them crew came first.
func (sr *suiteResult) summary(names []string) string {
	var present []string
	for _, n := range names {
		if sr.has(n) {
			present = append(present, n)
		}
	}
	var rows []summaryRow
	scenarioCol, otherCol := len("scenario"), len("fastest other")
	for _, sc := range sr.scenarios {
		row, ok := sc.summaryRow(present)
		if !ok {
			continue
		}
		if utf8.RuneCountInString(row.scenario) > scenarioWidth {
			row.scenario = string([]rune(row.scenario)[:scenarioWidth-1]) + "…"
		}
		scenarioCol = max(scenarioCol, utf8.RuneCountInString(row.scenario))
		otherCol = max(otherCol, len(row.other))
		rows = append(rows, row)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", sr.suite.title)
	line := func(r summaryRow) {
		s := fmt.Sprintf("  %-*s  %8s  %-5s  %-*s %8s  %9s  %8s", scenarioCol, r.scenario, r.crewTime, r.rank,
			otherCol, r.other, r.otherRatio, r.crewFunc, r.floor)
		b.WriteString(strings.TrimRight(s, " "))
		b.WriteString("\n")
	}
	line(summaryRow{scenario: "scenario", crewTime: "crew", rank: "rank", other: "fastest other",
		otherRatio: "× crew", crewFunc: "crew-func", floor: "floor"})
	first := 0
	for _, r := range rows {
		line(r)
		if r.first {
			first++
		}
	}
	fmt.Fprintf(&b, "  crew first in %d of %d scenarios\n", first, len(rows))
	for _, r := range rows {
		if !r.first {
			b.WriteString(truncate(fmt.Sprintf("  not first in %s (%s %s×): %s", r.scenario, r.other, r.otherRatio,
				notFirstWhy(sr.suite.name, r)), summaryWidth))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// knownCauses are the measured reasons crew is behind in a scenario, by suite and scenario
// (a scenario name ending in "*" matches every name with that prefix); each fits on the
// "not first" line of the summary.
var knownCauses = map[string]string{
	// MapSeq's doc promises at most W values pulled and not yet yielded; errgroup keeps every
	// result until the end (peak-pending 10,000), conc's stream W+3. With a window of 2W crew's
	// time was level with errgroup's (benchmarks/README.md, "The streams suite").
	"streams/10k-50us/ordered": "MapSeq's 16-value window stalls on slow calls",
	// 1,000 users each pausing 10 ms between submissions: the pauses set the pace, and every
	// contender is within 3% of crew (benchmarks/README.md, "Results on this machine").
	"pond/1Ku-1Kt/sleep10ms": "the 10 ms pauses set the pace: all within 3%",
}

// notFirstWhy is the reason crew is not first in row's scenario: a tie, a contender without a
// limit, a measured cause, or none recorded.
func notFirstWhy(suite string, r summaryRow) string {
	switch {
	case strings.HasPrefix(r.otherRatio, "~"):
		return "a tie, not significant"
	case r.other == "goroutines":
		return "a goroutine per task has no limit"
	}
	if why, ok := knownCauses[suite+"/"+r.scenario]; ok {
		return why
	}
	return "cause not measured"
}

// truncate cuts s to at most width columns, ending it with "…" if it was cut.
func truncate(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	return string([]rune(s)[:width-1]) + "…"
}

// summaryRow is the scenario's line of the summary, among the contenders in present; ok is
// false when crew did not run it.
func (sc *scenario) summaryRow(present []string) (row summaryRow, ok bool) {
	ref := sc.cells[contenders.Reference]
	if ref == nil || len(ref.time) == 0 {
		return row, false
	}
	crewTime := summary(ref.time).Center
	row = summaryRow{scenario: sc.name, crewTime: fmtTime(crewTime), other: "–"}

	rank, ranked := 1, 1
	best := 0.0
	for _, n := range present {
		c := sc.cells[n]
		if c == nil || len(c.time) == 0 || kindOf(n) == contenders.Crew || kindOf(n) == contenders.Floor {
			continue
		}
		ranked++
		t := summary(c.time).Center
		if t < crewTime {
			rank++
		}
		if row.other == "–" || t < best {
			row.other, best = n, t
		}
	}
	row.rank = fmt.Sprintf("%d/%d", rank, ranked)
	row.first = rank == 1
	multiple := func(name string) string {
		if r, sig, ok := sc.ratio(name); ok {
			return fmtRatio(r, sig)
		}
		return "–"
	}
	row.otherRatio, row.crewFunc, row.floor = multiple(row.other), "–", "–"
	if slices.Contains(present, "crew-func") {
		row.crewFunc = multiple("crew-func")
	}
	if floor, ok := sc.fastest(present, contenders.Floor); ok {
		row.floor = multiple(floor)
	}
	return row, true
}

// wrap breaks text into lines of at most width columns at spaces, and ends each with a newline.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		l := utf8.RuneCountInString(w)
		if i > 0 && n+1+l > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += l
	}
	b.WriteString("\n")
	return b.String()
}
