package main

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/crewgo/crew/benchmarks/contenders"
	benchsuites "github.com/crewgo/crew/benchmarks/suites"
)

// sweepSuite is BenchmarkSweep: pond's two tasks at points that vary one dimension at a time.
// Its page is not the other suites' (see writeSweep): time and bytes per task, and log-log
// charts of both along each axis.
var sweepSuite = suite{
	name: "sweep", bench: "BenchmarkSweep",
	title:      "cost per task as the work grows",
	about:      "pond's two tasks (sleep 10ms, rand.Float64) on a fresh pool per run, its creation measured, varying one dimension at a time from a base: the tasks of a run, the pool's workers, the users that submit the tasks between them.",
	contenders: benchsuites.SweepContenders,
	quick:      benchsuites.SweepQuickFilter(), quickTime: "1x", fullTime: "1x",
	onlyNamed: true,
}

// sweepAxis is one dimension of the sweep.
type sweepAxis struct {
	name  string // in file names
	label string // the chart's x axis
	of    func(benchsuites.SweepPoint) int
	// on reports whether p lies on the axis through base: every other dimension equal.
	on func(p, base benchsuites.SweepPoint) bool
}

var sweepAxes = []sweepAxis{
	{"tasks", "tasks per run (log scale)",
		func(p benchsuites.SweepPoint) int { return p.Tasks },
		func(p, b benchsuites.SweepPoint) bool { return p.Workers == b.Workers && p.Users == b.Users }},
	{"workers", "workers: the pool's limit (log scale)",
		func(p benchsuites.SweepPoint) int { return p.Workers },
		func(p, b benchsuites.SweepPoint) bool { return p.Tasks == b.Tasks && p.Users == b.Users }},
	{"users", "users submitting the run's tasks between them (log scale)",
		func(p benchsuites.SweepPoint) int { return p.Users },
		func(p, b benchsuites.SweepPoint) bool { return p.Tasks == b.Tasks && p.Workers == b.Workers }},
}

// sweepCell is one contender at one point: medians per task.
type sweepCell struct {
	ns, bytes float64
}

// sweepTask is everything measured with one task.
type sweepTask struct {
	task   string
	points []benchsuites.SweepPoint                        // in the order they ran
	cells  map[benchsuites.SweepPoint]map[string]sweepCell // by point, then contender
}

// sweepData regroups the suite's scenarios ("sleep10ms/1u-1Mt-200Kw") by task and point, with
// each contender's median time and bytes divided by the point's tasks.
func (sr *suiteResult) sweepData() []*sweepTask {
	var out []*sweepTask
	for _, sc := range sr.scenarios {
		task, name, ok := strings.Cut(sc.name, "/")
		p, okp := benchsuites.ParseSweepPoint(name)
		if !ok || !okp {
			continue
		}
		i := slices.IndexFunc(out, func(t *sweepTask) bool { return t.task == task })
		if i < 0 {
			out = append(out, &sweepTask{task: task, cells: map[benchsuites.SweepPoint]map[string]sweepCell{}})
			i = len(out) - 1
		}
		st := out[i]
		if st.cells[p] == nil {
			st.points = append(st.points, p)
			st.cells[p] = map[string]sweepCell{}
		}
		for n, c := range sc.cells {
			if len(c.time) == 0 {
				continue
			}
			cell := sweepCell{ns: summary(c.time).Center * 1e9 / float64(p.Tasks)}
			if len(c.bytes) > 0 {
				cell.bytes = summary(c.bytes).Center / float64(p.Tasks)
			}
			st.cells[p][n] = cell
		}
	}
	return out
}

// base is the point whose three axes hold the most measured points: the full base after a
// full run, the quick one after a quick run.
func (st *sweepTask) base() benchsuites.SweepPoint {
	best, score := st.points[0], -1
	for _, b := range st.points {
		n := 0
		for _, p := range st.points {
			for _, a := range sweepAxes {
				if a.on(p, b) {
					n++
				}
			}
		}
		if n > score || (n == score && b.Tasks > best.Tasks) {
			best, score = b, n
		}
	}
	return best
}

// line is the points on axis a through base, in increasing order along it.
func (st *sweepTask) line(a sweepAxis, base benchsuites.SweepPoint) []benchsuites.SweepPoint {
	var pts []benchsuites.SweepPoint
	for _, p := range st.points {
		if a.on(p, base) {
			pts = append(pts, p)
		}
	}
	slices.SortFunc(pts, func(p, q benchsuites.SweepPoint) int { return cmp.Compare(a.of(p), a.of(q)) })
	return pts
}

// writeSweep writes the sweep's page, sweep.md, and one chart per task and axis,
// sweep-<axis>-<task>.svg and .png, into dir.
func (sr *suiteResult) writeSweep(dir string, rep *report) error {
	names := rep.opts.contendersOf(sr.suite)
	data := sr.sweepData()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s", upperFirst(sr.suite.title), rep.sweepHeader())
	fmt.Fprintf(&b, "%s Time and bytes are per task: a run's median time and allocated bytes divided by its tasks. "+
		"A point's name is pond's: users, tasks per user, workers (`100u-10Kt-200Kw`: 100 users submit 10,000 tasks each "+
		"to at most 200,000 workers). The static floor runs the tasks on exactly the workers' goroutines and ignores the users "+
		"(it takes no part where they outnumber the workers); inline runs each user's tasks on the user and ignores the "+
		"workers (`rand.Float64` only). The fastest peer is the bounded peer with the least time per task, as a multiple of crew's.\n\n",
		upperFirst(sr.suite.about))
	for _, st := range data {
		base := st.base()
		fmt.Fprintf(&b, "## task=%s\n\nBase point `%s`.\n\n", st.task, base.Name())
		for _, a := range sweepAxes {
			line := st.line(a, base)
			if len(line) == 0 {
				continue
			}
			file := fmt.Sprintf("sweep-%s-%s", a.name, st.task)
			if err := st.chart(filepath.Join(dir, file), a, line, base, names, tidyMachine(rep.machine)); err != nil {
				return fmt.Errorf("sweep chart %s: %w", file, err)
			}
			fmt.Fprintf(&b, "![%s along %s](%s.svg)\n\n", st.task, a.name, file)
		}
		b.WriteString(st.table("Time per task", names, func(c sweepCell) string { return fmtTime(c.ns / 1e9) }, true))
		b.WriteString(st.table("Bytes allocated per task", names, func(c sweepCell) string { return fmtBytes(c.bytes) }, false))
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return nil
}

// sweepHeader is the text above the sweep's page: the machine, the commands and the
// samples. The other suites' header speaks of multiples and significance, which this page
// does not show.
func (rep *report) sweepHeader() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s.\n\n", tidyMachine(rep.machine))
	for _, c := range rep.commands {
		fmt.Fprintf(&b, "Command (in `benchmarks/`): `%s`.\n\n", c)
	}
	lo, hi := rep.sampleCounts()
	n := fmt.Sprint(hi)
	if lo != hi {
		n = fmt.Sprintf("%d to %d", lo, hi)
	}
	fmt.Fprintf(&b, "Each figure is the median of %s samples, one per pass, the order of the contenders turned by one "+
		"place each pass; each sample is one run. With so few, read differences of a few tens of percent as noise.\n\n", n)
	return b.String()
}

// tidyMachine drops the padding some CPUs' names carry: "Processor     , 2 cores".
func tidyMachine(m string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(m), " "), " ,", ",")
}

// table is one markdown table of the task's points by contender; with peer, a last column
// gives the fastest bounded peer's time per task as a multiple of crew's.
func (st *sweepTask) table(title string, names []string, cell func(sweepCell) string, peer bool) string {
	var present []string
	for _, n := range names {
		for _, p := range st.points {
			if _, ok := st.cells[p][n]; ok {
				present = append(present, n)
				break
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n\n| load | tasks | workers | users |", title)
	for _, n := range present {
		fmt.Fprintf(&b, " %s |", n)
	}
	if peer {
		b.WriteString(" fastest peer ÷ crew |")
	}
	b.WriteString("\n|---|--:|--:|--:|" + strings.Repeat("--:|", len(present)))
	if peer {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range st.ordered() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", p.Name(), fmtQuantity(float64(p.Tasks)), fmtQuantity(float64(p.Workers)), fmtQuantity(float64(p.Users)))
		for _, n := range present {
			if c, ok := st.cells[p][n]; ok {
				fmt.Fprintf(&b, " %s |", cell(c))
			} else {
				b.WriteString(" |")
			}
		}
		if peer {
			b.WriteString(" " + st.fastestPeer(p, present) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

// ordered is the task's points along each axis through the base in turn, each once, then
// the points on none of them (a full run's quick points).
func (st *sweepTask) ordered() []benchsuites.SweepPoint {
	base := st.base()
	var pts []benchsuites.SweepPoint
	for _, a := range sweepAxes {
		for _, p := range st.line(a, base) {
			if !slices.Contains(pts, p) {
				pts = append(pts, p)
			}
		}
	}
	for _, p := range st.points {
		if !slices.Contains(pts, p) {
			pts = append(pts, p)
		}
	}
	return pts
}

// fastestPeer names the bounded peer with the least time per task at p and gives its time
// as a multiple of crew's; empty when either did not run.
func (st *sweepTask) fastestPeer(p benchsuites.SweepPoint, present []string) string {
	crew, ok := st.cells[p][contenders.Reference]
	if !ok || crew.ns == 0 {
		return ""
	}
	best, bestNS := "", 0.0
	for _, n := range present {
		c, ok := st.cells[p][n]
		if !ok || kindOf(n) != contenders.Bounded {
			continue
		}
		if best == "" || c.ns < bestNS {
			best, bestNS = n, c.ns
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("%s %.2f", best, bestNS/crew.ns)
}

func fmtBytes(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1f MB", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f kB", v/1e3)
	case v >= 10:
		return fmt.Sprintf("%.0f B", v)
	default:
		return fmt.Sprintf("%.2g B", v)
	}
}

// sweepStyle is how a contender's line is drawn: crew's two lines thick, solid and dashed,
// in the colours of the other charts' crew bars but darker for crew-func, the peers thin with
// their own glyphs, the floors dotted.
func sweepStyle(name string) (draw.LineStyle, draw.GlyphStyle) {
	c := colour(name)
	line := draw.LineStyle{Color: c, Width: vg.Points(1.3)}
	glyph := draw.GlyphStyle{Color: c, Radius: vg.Points(2.8), Shape: draw.CircleGlyph{}}
	switch name {
	case contenders.Reference:
		line.Width, glyph.Radius = vg.Points(3), vg.Points(3.5)
	case "crew-func":
		c = color.RGBA{0x99, 0x3d, 0x00, 0xff} // the palette's pale vermillion is too faint for a line
		line.Color, glyph.Color = c, c
		line.Width, glyph.Radius = vg.Points(2.5), vg.Points(3.5)
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		glyph.Shape = draw.TriangleGlyph{}
	case "pond":
		glyph.Shape = draw.SquareGlyph{}
	case "errgroup":
		glyph.Shape = draw.PyramidGlyph{}
	case "ants":
		glyph.Shape = draw.BoxGlyph{}
	case "inline":
		c = color.RGBA{0x55, 0x55, 0x55, 0xff}
		line.Color, glyph.Color = c, c
		line.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		glyph.Shape = draw.CrossGlyph{}
	case "static-floor":
		c = color.RGBA{0x55, 0x55, 0x55, 0xff} // near-white in the bar charts
		line.Color, glyph.Color = c, c
		line.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		glyph.Shape = draw.RingGlyph{}
	}
	return line, glyph
}

// sweepChartSize is a sweep chart's size: two panels side by side and the legend.
var sweepChartWidth, sweepChartHeight = vg.Points(900), vg.Points(380)

// chart writes path.svg and path.png: ns/task (left) and B/task (right) of every contender
// along axis a through base, both axes logarithmic, on an opaque white background.
func (st *sweepTask) chart(path string, a sweepAxis, line []benchsuites.SweepPoint, base benchsuites.SweepPoint, names []string, machine string) error {
	svg := vgsvg.New(sweepChartWidth, sweepChartHeight)
	if err := st.drawChart(draw.New(svg), a, line, base, names, machine); err != nil {
		return err
	}
	if err := writeFile(path+".svg", svg); err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(sweepChartWidth, sweepChartHeight), vgimg.UseDPI(144),
		vgimg.UseBackgroundColor(color.White))
	if err := st.drawChart(draw.New(img), a, line, base, names, machine); err != nil {
		return err
	}
	f, err := os.Create(path + ".png")
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (st *sweepTask) drawChart(dc draw.Canvas, a sweepAxis, line []benchsuites.SweepPoint, base benchsuites.SweepPoint, names []string, machine string) error {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	tasks, workers, users := quantity(base.Tasks, "task"), quantity(base.Workers, "worker"), quantity(base.Users, "user")
	fixed := map[string]string{
		"tasks": workers + ", " + users, "workers": tasks + ", " + users, "users": tasks + ", " + workers,
	}[a.name]
	title := fmt.Sprintf("task %s: cost per task as the %s vary (%s; fresh pool per run, lower is better)", st.task, a.name, fixed)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.ThumbnailWidth = vg.Points(30)

	panels := []struct {
		ylabel string
		value  func(sweepCell) float64
		tick   func(float64) string
	}{
		{"time per task (log scale)", func(c sweepCell) float64 { return c.ns }, fmtNanos},
		{"bytes allocated per task (log scale)", func(c sweepCell) float64 { return c.bytes }, fmtBytes},
	}
	legendWidth := vg.Points(120)
	top, bottom, xLabelHeight := vg.Points(26), vg.Points(16), vg.Points(16)
	panelWidth := (dc.Max.X - dc.Min.X - legendWidth) / 2
	for i, pan := range panels {
		p := plot.New()
		// The x label is drawn below the panel, not by the plot: the plot places its label
		// at the arithmetic middle of the axis, far right on a log scale, and pads the whole
		// panel for it.
		p.Y.Label.Text = pan.ylabel
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker = logTicks{format: fmtQuantity}
		p.Y.Tick.Marker = logTicks{format: pan.tick}
		p.Add(plotter.NewGrid())
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, n := range names {
			var xys plotter.XYs
			for _, pt := range line {
				c, ok := st.cells[pt][n]
				if v := pan.value(c); ok && v > 0 {
					xys = append(xys, plotter.XY{X: float64(a.of(pt)), Y: v})
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			if err := addSeries(p, &legend, i == 0, n, xys); err != nil {
				return err
			}
		}
		if math.IsInf(lo, 1) {
			lo, hi = 1, 10
		}
		p.Y.Min, p.Y.Max = lo/1.6, hi*1.6
		p.X.Min, p.X.Max = float64(a.of(line[0]))/1.6, float64(a.of(line[len(line)-1]))*1.6
		x0 := dc.Min.X + panelWidth*vg.Length(i)
		p.Draw(draw.Crop(dc, x0-dc.Min.X, x0+panelWidth-dc.Max.X, bottom+xLabelHeight, -top))
		xLabel := p.Y.Label.TextStyle
		xLabel.Rotation, xLabel.XAlign, xLabel.YAlign = 0, draw.XCenter, draw.YBottom
		dc.FillText(xLabel, vg.Point{X: x0 + panelWidth/2 + vg.Points(20), Y: dc.Min.Y + bottom}, a.label)
	}
	legend.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-legendWidth+vg.Points(10), 0, bottom, -top-vg.Points(10)))

	titleStyle := plot.New().Title.TextStyle
	titleStyle.Font.Size = vg.Points(12)
	titleStyle.XAlign, titleStyle.YAlign = draw.XCenter, draw.YTop
	dc.FillText(titleStyle, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(6)}, title)
	foot := titleStyle
	foot.Font.Size = vg.Points(8)
	foot.XAlign, foot.YAlign = draw.XLeft, draw.YBottom
	dc.FillText(foot, vg.Point{X: dc.Min.X + vg.Points(6), Y: dc.Min.Y + vg.Points(3)}, machine)
	return nil
}

// addSeries draws the line of contender name through xys on p, in sweepStyle, and adds it to
// legend if inLegend; with no points it draws nothing.
func addSeries(p *plot.Plot, legend *plot.Legend, inLegend bool, name string, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.LineStyle, s.GlyphStyle = sweepStyle(name)
	p.Add(l, s)
	if inLegend {
		legend.Add(name, l, s)
	}
	return nil
}

// logTicks marks a logarithmic axis at each power of 10, labelled, and at 2 and 5 times it,
// labelled only when the axis spans less than two powers of 10.
type logTicks struct{ format func(float64) string }

// Ticks implements plot.Ticker.
func (t logTicks) Ticks(min, max float64) []plot.Tick {
	narrow := math.Log10(max/min) < 2
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			label := ""
			if m == 1 || (narrow && (m == 2 || m == 5)) {
				label = t.format(v)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// quantity writes n of a noun: 1 user, 200k workers.
func quantity(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmtQuantity(float64(n)) + " " + noun + "s"
}

// fmtQuantity writes a count of tasks, workers or users: 10k, 200k, 1M.
func fmtQuantity(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}

// fmtNanos writes a tick's time, given in nanoseconds: 200ns, 1µs, 10ms.
func fmtNanos(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%gs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%gms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%gµs", ns/1e3)
	default:
		return fmt.Sprintf("%gns", ns)
	}
}
