package suites

import (
	"slices"
	"testing"
)

// TestSweepPointNamesReadBack checks that every point's name parses back to the point, and
// that the points on pond's axis of users carry pond's names.
func TestSweepPointNamesReadBack(t *testing.T) {
	for _, full := range []bool{false, true} {
		for _, p := range SweepPoints(full) {
			if got, ok := ParseSweepPoint(p.Name()); !ok || got != p {
				t.Errorf("ParseSweepPoint(%q) = %+v, %t; want %+v", p.Name(), got, ok, p)
			}
		}
	}
	for _, name := range []string{"1u-1Mt-200Kw", "100u-10Kt-200Kw", "1Mu-1t-200Kw"} {
		if p, _ := ParseSweepPoint(name); !slices.Contains(SweepPoints(true), p) {
			t.Errorf("the full sweep lacks pond's %s", name)
		}
	}
	for _, bad := range []string{"", "1u-1Mt", "0u-1t-1w", "1u-1Gt-1w"} {
		if _, ok := ParseSweepPoint(bad); ok {
			t.Errorf("ParseSweepPoint(%q) accepted", bad)
		}
	}
}

// TestSweepAxesVaryOneDimensionFromTheirBase checks the quick and full points: each differs
// from its base in at most one dimension, the axes span what they promise, and under -short
// every point's users still divide its tasks.
func TestSweepAxesVaryOneDimensionFromTheirBase(t *testing.T) {
	for _, tc := range []struct {
		full                    bool
		base                    SweepPoint
		maxTasks, maxW, maxU, n int
	}{
		{false, SweepQuickBase, 1_000_000, 200_000, 100, 8},
		{true, SweepFullBase, 10_000_000, 1_000_000, 1_000_000, 14},
	} {
		pts := SweepPoints(tc.full)
		if len(pts) != tc.n {
			t.Errorf("full=%t: %d points, want %d", tc.full, len(pts), tc.n)
		}
		var tasks, workers, users []int
		for _, p := range pts {
			diff := 0
			for _, d := range [][2]int{{p.Tasks, tc.base.Tasks}, {p.Workers, tc.base.Workers}, {p.Users, tc.base.Users}} {
				if d[0] != d[1] {
					diff++
				}
			}
			if diff > 1 {
				t.Errorf("full=%t: %s differs from the base in %d dimensions", tc.full, p.Name(), diff)
			}
			tasks, workers, users = append(tasks, p.Tasks), append(workers, p.Workers), append(users, p.Users)
			l, _ := sweepLoad(p)
			if l.total() != p.Tasks && !testing.Short() {
				t.Errorf("%s runs %d tasks", p.Name(), l.total())
			}
		}
		if slices.Min(tasks) != 10_000 || slices.Max(tasks) != tc.maxTasks || slices.Min(workers) != 1000 ||
			slices.Max(workers) != tc.maxW || slices.Min(users) != 1 || slices.Max(users) != tc.maxU {
			t.Errorf("full=%t: tasks %d..%d, workers %d..%d, users %d..%d", tc.full, slices.Min(tasks), slices.Max(tasks),
				slices.Min(workers), slices.Max(workers), slices.Min(users), slices.Max(users))
		}
	}
}
