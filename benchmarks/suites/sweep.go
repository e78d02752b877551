package suites

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SweepPoint is one workload of BenchmarkSweep: Users goroutines submit Tasks tasks in all,
// Tasks/Users each and without pauses, to a fresh pool of at most Workers workers.
type SweepPoint struct {
	Tasks, Workers, Users int
}

// Name is the point's load= level, in pond's style: users, tasks per user, workers, e.g.
// 100u-10Kt-200Kw for 100 users submitting 10,000 tasks each to 200,000 workers. The
// points of the sweep that are pond's workloads carry pond's names followed by -200Kw.
func (p SweepPoint) Name() string {
	return siCount(p.Users) + "u-" + siCount(p.Tasks/p.Users) + "t-" + siCount(p.Workers) + "w"
}

// ParseSweepPoint reads a point back from its Name.
func ParseSweepPoint(name string) (SweepPoint, bool) {
	m := pointName.FindStringSubmatch(name)
	if m == nil {
		return SweepPoint{}, false
	}
	users, ok1 := parseSI(m[1])
	perUser, ok2 := parseSI(m[2])
	workers, ok3 := parseSI(m[3])
	if !ok1 || !ok2 || !ok3 || users < 1 || perUser < 1 || workers < 1 {
		return SweepPoint{}, false
	}
	return SweepPoint{Tasks: users * perUser, Workers: workers, Users: users}, true
}

var pointName = regexp.MustCompile(`^(\d+[KM]?)u-(\d+[KM]?)t-(\d+[KM]?)w$`)

// siCount writes n with a K or M suffix when it is a whole number of thousands or millions.
func siCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "K"
	default:
		return strconv.Itoa(n)
	}
}

func parseSI(s string) (int, bool) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1000, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.Atoi(s)
	return n * mult, err == nil
}

// The sweep's two base points. Each axis varies one dimension of its base by factors of 10
// and keeps the other two. The full base is pond's 1u-1Mt on pond's 200,000 workers. The quick
// base has a tenth of its tasks, so that its workers axis, where 1,000 workers sleep their way
// through every task in turn, takes a second per contender instead of ten.
var (
	SweepFullBase  = SweepPoint{Tasks: 1_000_000, Workers: 200_000, Users: 1}
	SweepQuickBase = SweepPoint{Tasks: 100_000, Workers: 200_000, Users: 1}
)

// SweepContenders are the contenders of BenchmarkSweep: crew's two pools, the three bounded
// peers with the lowest geometric mean of their times over pond's ten published workloads
// (pond v1, errgroup and ants, at 1.72, 1.88 and 1.89 times crew's; the next, gopool, at 2.07),
// and the two floors.
var SweepContenders = []string{"crew", "crew-func", "pond", "errgroup", "ants", "static-floor", "inline"}

// SweepPoints are the points of the sweep, each once, in the order they run: with full, the
// axes through SweepFullBase (tasks 10K to 10M, workers 1K to 1M, users 1 to 1M); without,
// the small end of each axis through SweepQuickBase (tasks 10K to 1M, workers 1K to 100K,
// users 1 to 100). A full run also runs the quick points (see SweepQuickFilter).
func SweepPoints(full bool) []SweepPoint {
	var pts []SweepPoint
	add := func(p SweepPoint) {
		for _, q := range pts {
			if q == p {
				return
			}
		}
		pts = append(pts, p)
	}
	base, top := SweepQuickBase, 3
	if full {
		base, top = SweepFullBase, 7
	}
	for i, n := 0, 10_000; i < top && n <= 10_000_000; i, n = i+1, n*10 {
		add(SweepPoint{Tasks: n, Workers: base.Workers, Users: base.Users})
	}
	for i, n := 0, 1000; i < top && n <= 1_000_000; i, n = i+1, n*10 {
		add(SweepPoint{Tasks: base.Tasks, Workers: n, Users: base.Users})
	}
	add(base)
	for i, n := 0, 1; i < top && n <= base.Tasks; i, n = i+1, n*10 {
		add(SweepPoint{Tasks: base.Tasks, Workers: base.Workers, Users: n})
	}
	return pts
}

// SweepQuickFilter is the -test.bench filter of the two levels of BenchmarkSweep between the
// function and the contender that keeps the quick points only.
func SweepQuickFilter() string {
	var names []string
	for _, p := range SweepPoints(false) {
		names = append(names, regexp.QuoteMeta(p.Name()))
	}
	return fmt.Sprintf("./^load=(%s)$", strings.Join(names, "|"))
}
