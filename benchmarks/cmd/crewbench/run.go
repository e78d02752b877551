package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// job is one process: one suite's sub-benchmarks for one contender.
type job struct {
	suite     suite
	contender string
	filter    string // -test.bench
	benchtime string
}

// run compiles the suites, runs every pass, and reports; with -in it only reports.
func run(o options) error {
	if o.scaling != "" {
		return runScaling(os.Stdout, o.scaling, o.out)
	}
	if o.in != "" {
		raw, err := os.ReadFile(o.in)
		if err != nil {
			return err
		}
		return publish(o, raw)
	}
	bin := o.bin
	if bin == "" {
		tmp, err := os.MkdirTemp("", "cbrun")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if bin, err = compileSuites(tmp); err != nil {
			return err
		}
	}

	// An interrupt ends the running benchmark process too, and keeps raw.txt as far as it got.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	jobs := plan(o)
	if len(jobs) == 0 {
		return fmt.Errorf("nothing to run: the quick run leaves out every suite chosen; add -full")
	}
	// With -out, raw.txt grows job by job, so a run cut short still leaves every sample it
	// took for -in.
	var raw bytes.Buffer
	var rawFile *os.File
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		var err error
		if rawFile, err = os.Create(filepath.Join(o.out, "raw.txt")); err != nil {
			return err
		}
		defer rawFile.Close()
		// A config line (benchfmt's "key: value") that -in reads back for the tables' header.
		if _, err := fmt.Fprintf(rawFile, "crewbench-command: %s\n", commandLine(o)); err != nil {
			return err
		}
	}
	start := time.Now()
	var order []job // every pass's jobs, in the order they run
	for pass := range o.count {
		order = append(order, rotate(jobs, pass)...)
	}
	prog := newProgress(os.Stderr, isTerminal(os.Stderr), order, o.count)
	prog.begin()
	defer prog.end()
	for i, j := range order {
		prog.startJob(i)
		out, err := runJob(ctx, bin, j, o, prog)
		raw.Write(out)
		if rawFile != nil {
			if _, err := rawFile.Write(out); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			prog.end()
			if o.out != "" {
				return fmt.Errorf("interrupted; the samples taken so far are in %s (go run ./cmd/crewbench -in %[1]s)",
					filepath.Join(o.out, "raw.txt"))
			}
			return fmt.Errorf("interrupted")
		}
		if err != nil {
			prog.end()
			os.Stderr.Write(out)
			return fmt.Errorf("%s on %s: %w", j.suite.name, j.contender, err)
		}
		prog.endJob()
	}
	prog.end()
	total := len(order)
	fmt.Fprintf(os.Stderr, "crewbench: %d runs in %s\n", total, time.Since(start).Round(time.Second))
	return publish(o, raw.Bytes())
}

// compileSuites compiles package suites of the benchmarks module into dir and returns the
// binary's path.
func compileSuites(dir string) (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	modDir := filepath.Dir(strings.TrimSpace(string(gomod)))
	if _, err := os.Stat(filepath.Join(modDir, "suites")); err != nil {
		return "", fmt.Errorf("run crewbench from the benchmarks module (cd benchmarks), not from %s", modDir)
	}
	bin := filepath.Join(dir, "runner.test")
	fmt.Fprintln(os.Stderr, "crewbench: compiling the suites")
	build := exec.Command("go", "test", "-c", "-o", bin, "./suites")
	build.Dir = modDir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("compiling the suites: %w", err)
	}
	return bin, nil
}

// publish analyzes raw, prints the summary and, unless -out is empty, writes the tables and
// the charts, and names the folder on the last line.
func publish(o options, raw []byte) error {
	return publishTo(os.Stdout, o, raw)
}

// publishTo is publish printing to w.
func publishTo(w io.Writer, o options, raw []byte) error {
	rep, err := analyze(raw, o)
	if err != nil {
		return err
	}
	fmt.Fprint(w, rep.summary())
	if o.out == "" {
		_, err := fmt.Fprintln(w, "crewbench: -out is empty: no tables or charts written")
		return err
	}
	if err := rep.write(o.out, rep.markdown()); err != nil {
		return err
	}
	if o.in != "" {
		// The tables are only as checkable as the samples beside them: -in publishes the raw
		// output it analyzed as out/raw.txt, as a run does as it goes.
		if err := copyRaw(raw, o.in, filepath.Join(o.out, "raw.txt")); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "crewbench: full tables in %s, charts in %s, samples for benchstat in %s\n",
		filepath.Join(o.out, "results.md"), filepath.Join(o.out, "<suite>.svg"), filepath.Join(o.out, "raw.txt"))
	return err
}

// copyRaw writes raw, read from in, to path, unless in already is that file.
func copyRaw(raw []byte, in, path string) error {
	src, err := os.Stat(in)
	if err != nil {
		return err
	}
	if dst, err := os.Stat(path); err == nil && os.SameFile(src, dst) {
		return nil
	}
	return os.WriteFile(path, raw, 0o644)
}

// plan lists the jobs of one pass, suite by suite, each suite's contenders in o's order (see
// contendersOf).
func plan(o options) []job {
	var jobs []job
	for _, s := range o.suites {
		filter, benchtime := s.quick, s.quickTime
		if o.full {
			filter, benchtime = "./.", s.fullTime
		}
		if o.scenarios != "" {
			filter = o.scenarios
		}
		if filter == "" {
			continue
		}
		loads := []quickLoad{{filter, benchtime}}
		if !o.full && o.scenarios == "" && len(s.quickLoads) > 0 {
			loads = s.quickLoads
		}
		for _, c := range o.contendersOf(s) {
			for _, l := range loads {
				jobs = append(jobs, job{
					suite:     s,
					contender: c,
					filter:    "^" + s.bench + "$/" + l.filter + "/^pool=" + regexp.QuoteMeta(c) + "$",
					benchtime: l.benchtime,
				})
			}
		}
	}
	return jobs
}

// rotate returns a pass's order: within each suite, the contenders turned by pass places.
func rotate(jobs []job, pass int) []job {
	out := make([]job, 0, len(jobs))
	for i := 0; i < len(jobs); {
		end := i + 1
		for end < len(jobs) && jobs[end].suite.name == jobs[i].suite.name {
			end++
		}
		group := jobs[i:end]
		k := pass % len(group)
		out = append(out, group[k:]...)
		out = append(out, group[:k]...)
		i = end
	}
	return out
}

// runJob runs the test binary for j and returns its output.
func runJob(ctx context.Context, bin string, j job, o options, prog *progress) ([]byte, error) {
	args := []string{
		"-test.run=^$",
		"-test.bench=" + j.filter,
		"-test.benchmem",
		"-test.benchtime=" + j.benchtime,
		"-test.count=1",
		"-test.timeout=60m",
	}
	if o.short {
		args = append(args, "-test.short")
	}
	if !o.full {
		args = append(args, "-suites.quick")
	}
	if o.skip != "" {
		args = append(args, "-test.skip="+o.skip)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", runtime.GOMAXPROCS(0)))
	var out bytes.Buffer
	w := &scenarioWatcher{out: &out, p: prog}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	return out.Bytes(), err
}
