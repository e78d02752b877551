package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// scalingResult is BenchmarkScaling's output: per shape, per contender, per processor count
// (GOMAXPROCS, the -cpu value), the ns/op samples, each the cost of one task.
type scalingResult struct {
	machine string   // the "# N processors: cpu" line scaling.sh writes first, without "# "
	shapes  []string // in the order of the output
	pools   []string
	procs   []int // sorted
	ns      map[string]map[string]map[int][]float64
}

// parseScaling reads BenchmarkScaling's raw output (benchmarks/scaling.sh run): lines named
// BenchmarkScaling/shape=<shape>/pool=<contender>-<procs> (no suffix at one processor).
// Other benchmarks and lines are skipped; a file with no BenchmarkScaling result is an error.
func parseScaling(raw []byte) (*scalingResult, error) {
	sr := &scalingResult{ns: map[string]map[string]map[int][]float64{}}
	for _, line := range strings.Split(string(raw), "\n") {
		if m, ok := strings.CutPrefix(line, "# "); ok && sr.machine == "" {
			sr.machine = strings.TrimSpace(m)
		}
	}
	r := benchfmt.NewReader(bytes.NewReader(raw), "scaling")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		base, parts := res.Name.Parts()
		if strings.TrimPrefix(string(base), "Benchmark") != "Scaling" { // benchfmt drops the prefix
			continue
		}
		var shape, pool string
		procs := 1
		for _, p := range parts {
			s := string(p)
			switch {
			case strings.HasPrefix(s, "/shape="):
				shape = strings.TrimPrefix(s, "/shape=")
			case strings.HasPrefix(s, "/pool="):
				pool = strings.TrimPrefix(s, "/pool=")
			case strings.HasPrefix(s, "-"):
				n, err := strconv.Atoi(s[1:])
				if err != nil {
					return nil, fmt.Errorf("%s: processors %q", res.Name, s)
				}
				procs = n
			}
		}
		v, ok := res.Value("sec/op")
		if shape == "" || pool == "" || !ok {
			continue
		}
		if sr.ns[shape] == nil {
			sr.ns[shape] = map[string]map[int][]float64{}
			sr.shapes = append(sr.shapes, shape)
		}
		if sr.ns[shape][pool] == nil {
			sr.ns[shape][pool] = map[int][]float64{}
		}
		if !slices.Contains(sr.pools, pool) {
			sr.pools = append(sr.pools, pool)
		}
		if !slices.Contains(sr.procs, procs) {
			sr.procs = append(sr.procs, procs)
		}
		sr.ns[shape][pool][procs] = append(sr.ns[shape][pool][procs], v*1e9)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(sr.shapes) == 0 {
		return nil, fmt.Errorf("no BenchmarkScaling results")
	}
	slices.Sort(sr.procs)
	return sr, nil
}

// median is the median ns per task of pool in shape at procs processors; ok is false when it
// did not run there.
func (sr *scalingResult) median(shape, pool string, procs int) (float64, bool) {
	v := sr.ns[shape][pool][procs]
	if len(v) == 0 {
		return 0, false
	}
	return summary(v).Center, true
}

// growth are the processor counts of the table's last column, the cost at the most
// processors over the cost at two (at the fewest if two did not run).
func (sr *scalingResult) growth() (from, to int) {
	from, to = sr.procs[0], sr.procs[len(sr.procs)-1]
	if slices.Contains(sr.procs, 2) {
		from = 2
	}
	return from, to
}

// passes is the most samples of one benchmark: the passes scaling.sh made.
func (sr *scalingResult) passes() int {
	n := 0
	for _, byPool := range sr.ns {
		for _, byProcs := range byPool {
			for _, v := range byProcs {
				n = max(n, len(v))
			}
		}
	}
	return n
}

// tables is one markdown table per shape: a row per contender, its median ns per task at
// each processor count, and the growth column.
func (sr *scalingResult) tables() string {
	var b strings.Builder
	from, to := sr.growth()
	for _, shape := range sr.shapes {
		fmt.Fprintf(&b, "## %s\n\n| pool |", shape)
		for _, p := range sr.procs {
			fmt.Fprintf(&b, " %d |", p)
		}
		fmt.Fprintf(&b, " %d/%d |\n|---|%s---:|\n", to, from, strings.Repeat("---:|", len(sr.procs)))
		for _, pool := range sr.pools {
			if sr.ns[shape][pool] == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s |", pool)
			for _, p := range sr.procs {
				if v, ok := sr.median(shape, pool, p); ok {
					fmt.Fprintf(&b, " %.0f |", v)
				} else {
					b.WriteString(" – |")
				}
			}
			lo, ok1 := sr.median(shape, pool, from)
			hi, ok2 := sr.median(shape, pool, to)
			if ok1 && ok2 && lo > 0 {
				fmt.Fprintf(&b, " %.2f |\n", hi/lo)
			} else {
				b.WriteString(" – |\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// page is scaling.md: old's text up to its first table and from its "## Reading" section on,
// which describe the machine and what the run shows, around new tables and the chart; with no
// old page, a header stating the machine and the samples.
func (sr *scalingResult) page(old string) string {
	head, tail := "", ""
	if i := strings.Index(old, "\n## "); i >= 0 {
		// The chart written last time goes: it is added again below.
		var kept []string
		for _, l := range strings.Split(old[:i], "\n") {
			if !strings.Contains(l, "](scaling.svg)") {
				kept = append(kept, l)
			}
		}
		head = strings.TrimRight(strings.Join(kept, "\n"), "\n") + "\n"
		if j := strings.Index(old, "\n## Reading"); j >= 0 {
			tail = old[j+1:]
		}
	}
	if head == "" {
		from, to := sr.growth()
		head = fmt.Sprintf("# Scaling: cost per task against processors\n\nMachine: %s. Each cell is the median ns "+
			"per task of the %d passes; the last column is the cost at %d processors over the cost at %d. Raw "+
			"output: [scaling-raw.txt](scaling-raw.txt).\n", sr.machine, sr.passes(), to, from)
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("\n![cost per task against processors, one panel per shape](scaling.svg)\n\n")
	b.WriteString(sr.tables())
	b.WriteString(tail)
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// Sizes of the scaling chart: panels of this size, two a row, and the legend beside them.
var scalingPanelWidth, scalingPanelHeight, scalingLegendWidth = vg.Points(360), vg.Points(260), vg.Points(120)

// chart writes the SVG: one panel per shape, ns per task (log scale) against processors (log2
// scale), one line per contender in its colour of the other charts.
func (sr *scalingResult) chart(path string) error {
	rows := (len(sr.shapes) + 1) / 2
	cols := min(len(sr.shapes), 2)
	w := scalingPanelWidth*vg.Length(cols) + scalingLegendWidth
	h := scalingPanelHeight*vg.Length(rows) + vg.Points(50)
	canvas := vgsvg.New(w, h)
	if err := sr.drawChart(draw.New(canvas), cols); err != nil {
		return err
	}
	return writeFile(path, canvas)
}

func (sr *scalingResult) drawChart(dc draw.Canvas, cols int) error {
	dc.SetColor(chartGround)
	dc.Fill(dc.Rectangle.Path())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.ThumbnailWidth = vg.Points(24)
	legend.Padding = vg.Points(3)
	top := vg.Points(34)
	for i, shape := range sr.shapes {
		p := plot.New()
		p.Title.Text = shape
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Label.Text = "processors (GOMAXPROCS)"
		p.Y.Label.Text = "ns per task (log scale)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker = procTicks(sr.procs)
		p.Y.Tick.Marker = logTicks{format: fmtNanos}
		p.Add(plotter.NewGrid())
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pool := range sr.pools {
			var xys plotter.XYs
			for _, procs := range sr.procs {
				if v, ok := sr.median(shape, pool, procs); ok && v > 0 {
					xys = append(xys, plotter.XY{X: float64(procs), Y: v})
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			if err := addSeries(p, &legend, i == 0, pool, xys); err != nil {
				return err
			}
		}
		if math.IsInf(lo, 1) {
			lo, hi = 1, 10
		}
		p.Y.Min, p.Y.Max = lo/1.4, hi*1.4
		p.X.Min, p.X.Max = float64(sr.procs[0])/1.3, float64(sr.procs[len(sr.procs)-1])*1.3
		row, col := i/cols, i%cols
		x0 := scalingPanelWidth * vg.Length(col)
		y1 := top + scalingPanelHeight*vg.Length(row) // from the top
		p.Draw(draw.Crop(dc, x0+vg.Points(6), x0+scalingPanelWidth-(dc.Max.X-dc.Min.X), dc.Max.Y-dc.Min.Y-y1-scalingPanelHeight+vg.Points(16), -y1))
	}
	legend.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-scalingLegendWidth+vg.Points(10), -vg.Points(chartMargin), 0, -top))
	title := plot.New().Title.TextStyle
	title.Font.Size = vg.Points(12)
	title.XAlign, title.YAlign = draw.XCenter, draw.YTop
	dc.FillText(title, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(chartMargin)},
		"BenchmarkScaling: cost per task against processors (lower is better)")
	foot := title
	foot.Font.Size = vg.Points(8)
	foot.XAlign, foot.YAlign = draw.XLeft, draw.YBottom
	dc.FillText(foot, vg.Point{X: dc.Min.X + vg.Points(6), Y: dc.Min.Y + vg.Points(3)}, sr.machine)
	return nil
}

// procTicks marks each processor count that ran.
type procTicks []int

// Ticks implements plot.Ticker.
func (t procTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for _, p := range t {
		if v := float64(p); v >= min && v <= max {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.Itoa(p)})
		}
	}
	return ticks
}

// runScaling is -scaling: it reads BenchmarkScaling's raw output from in and writes
// scaling.md (keeping the text around the tables of one already there) and scaling.svg to
// dir, and names them on w.
func runScaling(w io.Writer, in, dir string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	sr, err := parseScaling(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if dir == "" {
		_, err := fmt.Fprint(w, sr.tables())
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	md := filepath.Join(dir, "scaling.md")
	old, err := os.ReadFile(md)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.WriteFile(md, []byte(sr.page(string(old))), 0o644); err != nil {
		return err
	}
	if err := sr.chart(filepath.Join(dir, "scaling.svg")); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "crewbench: %d shapes × %d contenders × %d processor counts: %s, %s\n",
		len(sr.shapes), len(sr.pools), len(sr.procs), md, filepath.Join(dir, "scaling.svg"))
	return err
}
