// Command crewbench runs the suites of package suites on crew, its peers and the baselines
// (a suite may have contenders of its own, as the streams suite has), and reports how each
// contender compares with crew.
//
// Run from the benchmarks module:
//
//	go run ./cmd/crewbench                # quick run, a few minutes
//	go run ./cmd/crewbench -full -out ../docs/benchmarks
//
// It compiles the suites' test binary once, then runs it -count passes, one process per suite and
// contender, turning the order of the contenders by one place each pass so that a drifting machine
// does not favour whoever runs first. The quick run (the default) runs a few scenarios of every
// suite, the largest scaled down, in about two minutes on two cores, and draws them in one chart,
// quick.svg; -full runs everything at the published sizes. -scaling turns the output of
// BenchmarkScaling (benchmarks/scaling.sh) into a table and a chart. It prints progress on standard
// error and, on standard output, a summary a person can read: per scenario, crew's median time, its
// rank, the fastest other contender and its time as a multiple of crew's; a multiple that the
// Mann-Whitney U test of golang.org/x/perf/benchmath does not find significant is marked with "~".
// It writes the raw benchmark output (benchstat reads it), one markdown table per suite with every
// contender's figures, and one SVG chart per suite to the -out folder, ./crewbench-out by default,
// and names that folder on the last line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// defaultOut is where a run writes its files unless -out says otherwise.
const defaultOut = "crewbench-out"

// options are the parsed command line.
type options struct {
	full       bool
	short      bool
	count      int
	suites     []suite
	contenders []string
	out        string
	in         string
	scenarios  string // replaces the quick or full filter of the levels between suite and contender
	skip       string
	scaling    string // -scaling: BenchmarkScaling's raw output to turn into a table and a chart
	bin        string // -bin: a compiled test binary of package suites to run instead of compiling one
}

func main() {
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "crewbench:", err)
		os.Exit(1)
	}
}

// parseFlags parses args; on an error it has already printed the message and the usage to
// stderr.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("crewbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.full, "full", false, "run every scenario of every suite at its published size (hours)")
	fs.BoolVar(&o.short, "short", false, "shrink every workload (go test -short): a smoke test whose figures mean nothing")
	fs.IntVar(&o.count, "count", 5, "passes over the contenders; each pass gives each benchmark one sample (4 or more for the significance marks)")
	suiteList := fs.String("suite", "", "comma-separated suites to run (default all): "+strings.Join(suiteNames(), ", "))
	contenderList := fs.String("contenders", "", "comma-separated contenders to run (default all); crew is always added")
	fs.StringVar(&o.skip, "skip", "", "leave out the benchmarks this matches (go test -skip syntax, e.g. 'Pond/load=1Ku-1Kt')")
	fs.StringVar(&o.bin, "bin", "", "run this test binary of ./suites (go test -c ./suites) instead of compiling one: for a machine without Go")
	fs.StringVar(&o.scaling, "scaling", "", "turn this raw output of BenchmarkScaling (scaling.sh run) into scaling.md and scaling.svg in -out, running nothing; with -out '' print the tables")
	fs.StringVar(&o.in, "in", "", "analyze this earlier raw.txt instead of running anything (-count is then read from it)")
	fs.StringVar(&o.scenarios, "scenarios", "", "the scenarios to run, as -test.bench matches the levels between a suite and its contenders (e.g. '^load=1u-1Mt$/.' with -full; the quick run's pond scenarios are named by their smaller sizes); default: the quick or -full selection")
	fs.StringVar(&o.out, "out", defaultOut, "folder for the raw output, the markdown tables and the SVG charts; empty: write nothing")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./cmd/crewbench [flags]

Runs the published suites of pond, ultrapool, itogami, TaskQ and johnsiilver/pools on crew, its
peers and the baselines, and crew's streaming maps against rill, conc's stream and errgroup;
prints a summary (per scenario: crew's rank, the fastest other contender and its time as a
multiple of crew's) and writes the full tables and the charts to -out. Without -full it runs
a quick selection: every scenario of pond's suite, scaled down, and a few of the others.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fail := func(format string, a ...any) (options, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintln(stderr, "crewbench:", err)
		fs.Usage()
		return o, err
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if o.count < 1 {
		return fail("-count must be at least 1, got %d", o.count)
	}
	for _, name := range splitList(*suiteList) {
		i := slices.IndexFunc(suites, func(s suite) bool { return s.name == name })
		if i < 0 {
			return fail("unknown suite %q (known: %s)", name, strings.Join(suiteNames(), ", "))
		}
		o.suites = append(o.suites, suites[i])
	}
	if len(o.suites) == 0 {
		o.suites = defaultSuites(o.full)
	}
	known := contenderNames()
	names := splitList(*contenderList)
	for _, name := range names {
		if !slices.Contains(known, name) {
			return fail("unknown contender %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	if len(names) == 0 {
		names = known
	}
	for _, name := range known { // keep the order of contenderNames
		if name == contenders.Reference || slices.Contains(names, name) {
			o.contenders = append(o.contenders, name)
		}
	}
	return o, nil
}

// defaultSuites are the suites a run takes when -suite names none: all of them with -full; the
// quick run leaves out those whose quick selection alone takes minutes (suite.onlyNamed: the
// sweep, the adaptive limit), unless -suite names them.
func defaultSuites(full bool) []suite {
	var out []suite
	for _, s := range suites {
		if full || !s.onlyNamed {
			out = append(out, s)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func suiteNames() []string {
	var names []string
	for _, s := range suites {
		names = append(names, s.name)
	}
	return names
}

// contenderNames are the names -contenders knows: contenders.All's, then those of the suites
// that have contenders of their own.
func contenderNames() []string {
	names := allNames()
	for _, s := range suites {
		for _, name := range s.contenders {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// contendersOf are the contenders chosen in o, in o's order, that suite s runs: those of
// contenders.All, or the suite's own.
func (o options) contendersOf(s suite) []string {
	own := s.contenders
	if own == nil {
		own = allNames()
	}
	var names []string
	for _, name := range o.contenders {
		if slices.Contains(own, name) {
			names = append(names, name)
		}
	}
	return names
}

// allNames are the names of contenders.All.
func allNames() []string {
	var names []string
	for _, c := range contenders.All {
		names = append(names, c.Name)
	}
	return names
}
