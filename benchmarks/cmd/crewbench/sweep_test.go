package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sweepRaw is test-binary output of BenchmarkSweep: the quick axes' points with the
// rand.Float64 task, crew at 100 ns per task and 10 bytes per task, pond twice crew's time.
func sweepRaw() []byte {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\ncpu: test\n")
	points := map[string]int{
		"1u-10Kt-200Kw": 10_000, "1u-100Kt-200Kw": 100_000, "1u-1Mt-200Kw": 1_000_000,
		"1u-100Kt-1Kw": 100_000, "1u-100Kt-10Kw": 100_000, "1u-100Kt-100Kw": 100_000,
		"10u-10Kt-200Kw": 100_000, "100u-1Kt-200Kw": 100_000,
	}
	for name, tasks := range points {
		for pool, ns := range map[string]float64{"crew": 100, "pond": 200} {
			fmt.Fprintf(&b, "BenchmarkSweep/task=randfloat/load=%s/pool=%s-2 \t1\t%g ns/op\t%d B/op\t1 allocs/op\n",
				name, pool, ns*float64(tasks), 10*tasks)
		}
	}
	return []byte(b.String())
}

// TestSweepPageGivesTimeAndBytesPerTaskAlongEachAxis checks the sweep's page and charts: a
// run's time and bytes divided by its tasks, the quick base found from the points alone, one
// chart per axis, and the fastest peer as a multiple of crew's time.
func TestSweepPageGivesTimeAndBytesPerTaskAlongEachAxis(t *testing.T) {
	o := suiteOptions(t, "sweep")
	dir := t.TempDir()
	o.out = dir
	rep, err := analyze(sweepRaw(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.write(dir, rep.markdown()); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkContains(t, string(page),
		"Base point `1u-100Kt-200Kw`",
		"| 1u-100Kt-1Kw | 100k | 1k | 1 | 100.0ns | 200.0ns | pond 2.00 |",
		"| 100u-1Kt-200Kw | 100k | 200k | 100 | 10 B | 10 B |",
		"(sweep-users-randfloat.svg)")
	for _, axis := range []string{"tasks", "workers", "users"} {
		for _, ext := range []string{"svg", "png"} {
			if fi, err := os.Stat(filepath.Join(dir, "sweep-"+axis+"-randfloat."+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("chart along %s (%s) missing or empty: %v", axis, ext, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep.svg")); err == nil {
		t.Error("the sweep got a bar chart too")
	}
}

// TestLogTicksLabelNarrowAxesAtOneTwoFive checks that an axis spanning less than two powers
// of 10 gets labels at 1, 2 and 5 times them, and a wide one at the powers only.
func TestLogTicksLabelNarrowAxesAtOneTwoFive(t *testing.T) {
	labels := func(min, max float64) []string {
		var out []string
		for _, tk := range (logTicks{format: fmtNanos}).Ticks(min, max) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got, want := strings.Join(labels(60, 900), " "), "100ns 200ns 500ns"; got != want {
		t.Errorf("narrow axis labels %q, want %q", got, want)
	}
	if got, want := strings.Join(labels(5, 2e6), " "), "10ns 100ns 1µs 10µs 100µs 1ms"; got != want {
		t.Errorf("wide axis labels %q, want %q", got, want)
	}
}
