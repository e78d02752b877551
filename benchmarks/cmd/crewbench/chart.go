package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// palette gives each contender its own colour, in the order of contenderNames (see colour):
// contenders.All, then the suites' own contenders, then one for a name that none of them has.
// crew is the one strong vermillion; its typed pool a pale shade of it. The peers take the
// other hues of the Okabe-Ito palette, which readers with the common colour-vision deficiencies
// tell apart, one family per library (ants blue, pond green), and a few more hues beyond them;
// the baselines are greys and the floors white and near-white, outlined (see barSet.fill).
var palette = []color.RGBA{
	{0xd5, 0x5e, 0x00, 0xff}, // crew: vermillion
	{0xf4, 0xb3, 0x8c, 0xff}, // crew-func: pale vermillion
	{0x00, 0x72, 0xb2, 0xff}, // ants: blue
	{0x56, 0xb4, 0xe9, 0xff}, // ants-func: sky blue
	{0x00, 0x9e, 0x73, 0xff}, // pond: bluish green
	{0x8f, 0xd8, 0xbd, 0xff}, // pond-v2: pale bluish green
	{0xf0, 0xe4, 0x42, 0xff}, // workerpool: yellow
	{0xcc, 0x79, 0xa7, 0xff}, // conc: reddish purple
	{0x5e, 0x3c, 0x99, 0xff}, // errgroup: violet
	{0x99, 0x7a, 0x3d, 0xff}, // gopool: ochre
	{0x33, 0x33, 0x33, 0xff}, // goroutines: near-black
	{0x80, 0x80, 0x80, 0xff}, // chan-unbuffered: grey
	{0xbd, 0xbd, 0xbd, 0xff}, // chan-buffered: light grey
	{0xf2, 0xf2, 0xf2, 0xff}, // static-floor: near-white
	{0xff, 0xff, 0xfe, 0xff}, // inline: white
	{0xe6, 0x9f, 0x00, 0xff}, // rill (streams): orange
	{0x00, 0x00, 0x80, 0xff}, // fixed-0.25C (adaptive): navy
	{0x80, 0x80, 0x00, 0xff}, // fixed-1C (adaptive): olive
	{0x80, 0x00, 0x00, 0xff}, // fixed-4C (adaptive): maroon
	{0xff, 0x00, 0xff, 0xff}, // fixed-16C (adaptive): magenta
	{0xc5, 0xb0, 0xd5, 0xff}, // a name none of them has: lavender
}

// Colours and sizes of the parts of a chart that are not bars.
var (
	chartGround  = color.RGBA{0xff, 0xff, 0xff, 0xff} // opaque, so a dark page shows no text on black
	barOutline   = draw.LineStyle{Color: color.RGBA{0x40, 0x40, 0x40, 0xff}, Width: vg.Points(0.3)}
	crewOutline  = draw.LineStyle{Color: color.RGBA{0x00, 0x00, 0x00, 0xff}, Width: vg.Points(1.2)}
	oneLineStyle = draw.LineStyle{Color: color.RGBA{0xd5, 0x5e, 0x00, 0xff}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
	floorStyle   = draw.LineStyle{Color: color.RGBA{0x00, 0x00, 0x00, 0xff}, Width: vg.Points(1.5)}
	rangeStyle   = draw.LineStyle{Color: color.RGBA{0x00, 0x00, 0x00, 0xff}, Width: vg.Points(0.8)}
)

// chartLegendWidth is the width of the column beside the plot that holds the legend.
const chartLegendWidth = 130

// chart writes an SVG grouped bar chart to path: one group per scenario, one bar per
// contender, its top at the contender's median time as a multiple of crew's on a log2 axis,
// so a bar reaching above the dashed line at 1× is slower than crew and one stopping below
// it is faster. The bars rise from the bottom of the axis, so crew's own bars, at 1×, show
// like the others, outlined in black; a thin line on each bar spans its samples from the
// fastest to the slowest, and a thick black line across each group marks the floor (the
// faster of static-floor and inline) where one ran. Under each group: the scenario, and
// crew's median time.
func (sr *suiteResult) chart(path string, names []string, machine string) error {
	width, height := sr.chartSize(names)
	canvas := vgsvg.New(width, height)
	if err := sr.drawChart(draw.New(canvas), names, machine); err != nil {
		return err
	}
	return writeFile(path, canvas)
}

// present is the contenders of names that ran at least one of the suite's scenarios.
func (sr *suiteResult) present(names []string) []string {
	var present []string
	for _, n := range names {
		if sr.has(n) {
			present = append(present, n)
		}
	}
	return present
}

// barWidth is the width of one bar: narrower when there are many scenarios.
func (sr *suiteResult) barWidth() vg.Length {
	if len(sr.scenarios) > 8 {
		return vg.Points(4)
	}
	return vg.Points(7)
}

// tickFont is the size of the scenarios' labels under the groups.
const tickFont = 9

// label is the text under a scenario's group: its name, a line per level, and crew's time.
func (sc *scenario) label() string {
	l := strings.ReplaceAll(sc.name, "/", "\n")
	if c := sc.cells[contenders.Reference]; c != nil && len(c.time) > 0 {
		l += "\ncrew " + fmtShortTime(summary(c.time).Center)
	}
	return l
}

// fmtShortTime writes a time with three significant digits: 199ms, 11.0ms, 1.25s.
func fmtShortTime(sec float64) string {
	for _, u := range []struct {
		scale float64
		unit  string
	}{{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}} {
		if sec >= u.scale {
			return strconv.FormatFloat(sec/u.scale, 'g', 3, 64) + u.unit
		}
	}
	return strconv.FormatFloat(sec*1e9, 'g', 3, 64) + "ns"
}

// groupWidth is the room one scenario takes on the x axis: its bars with a bar's width on
// either side, or its widest label line and a margin, whichever is wider.
func (sr *suiteResult) groupWidth(n int) vg.Length {
	w := sr.barWidth() * vg.Length(n+2)
	style := plot.New().X.Tick.Label
	style.Font.Size = vg.Points(tickFont)
	for _, sc := range sr.scenarios {
		for _, line := range strings.Split(sc.label(), "\n") {
			w = max(w, style.Width(line)+vg.Points(18))
		}
	}
	return w
}

// chartSize is the size of the suite's chart: wide enough for every group of bars with its
// label and the legend, high enough for the y axis' label and the legend's entries.
func (sr *suiteResult) chartSize(names []string) (width, height vg.Length) {
	n := len(sr.present(names))
	width = max(vg.Points(480), sr.groupWidth(n)*vg.Length(len(sr.scenarios))+vg.Points(120)) + vg.Points(chartLegendWidth)
	height = max(vg.Points(420), vg.Points(100+16*float64(n+1)))
	return width, height
}

// chartMargin keeps the title and the legend off the chart's edges.
const chartMargin = 10

// drawChart draws the suite's chart on dc, which has the size chartSize gives.
func (sr *suiteResult) drawChart(dc draw.Canvas, names []string, machine string) error {
	present := sr.present(names)
	dc.FillPolygon(chartGround, []vg.Point{
		{X: dc.Min.X, Y: dc.Min.Y}, {X: dc.Min.X, Y: dc.Max.Y}, {X: dc.Max.X, Y: dc.Max.Y}, {X: dc.Max.X, Y: dc.Min.Y},
	})

	p := plot.New()
	p.BackgroundColor = chartGround
	p.Title.Text = fmt.Sprintf("%s: time as a multiple of crew's (lower is faster)", sr.suite.title)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = "time ÷ crew's time (log scale)"
	p.X.Label.Text = machine
	p.X.Label.TextStyle.Font.Size = vg.Points(8)
	p.X.Tick.Label.Font.Size = vg.Points(tickFont)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.ThumbnailWidth = vg.Points(14)
	legend.Padding = vg.Points(3)

	barWidth := sr.barWidth()
	lo, hi := 0.0, 0.0
	for i, n := range present {
		b := barSet{heights: sr.bars(n), width: barWidth, colour: colour(n), crew: n == contenders.Reference}
		b.lows, b.highs = sr.ranges(n)
		b.offset = barWidth * vg.Length(float64(i)-float64(len(present)-1)/2)
		for _, vs := range [][]float64{b.heights, b.lows, b.highs} {
			for _, v := range vs {
				if !math.IsNaN(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		p.Add(b)
		legend.Add(n, b)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	// Half a power of two below the lowest bar: the shortest bar, crew's included when it is
	// the fastest everywhere, keeps a visible height.
	p.Y.Min, p.Y.Max = math.Floor(lo)-0.5, math.Ceil(hi)+0.25
	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 0}, {X: float64(len(sr.scenarios)) - 0.5, Y: 0}})
	if err != nil {
		return err
	}
	one.LineStyle = oneLineStyle
	p.Add(one)
	legend.Add("crew's time (1×)", one)
	if floors := sr.floors(present); slices.ContainsFunc(floors, func(v float64) bool { return !math.IsNaN(v) }) {
		f := floorMarks{levels: floors, width: barWidth * vg.Length(len(present)+1)}
		p.Add(f)
		legend.Add("floor", f)
	}
	p.Y.Tick.Marker = log2Ticks{}
	var labels []string
	for _, sc := range sr.scenarios {
		labels = append(labels, sc.label())
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = vg.Points(tickFont)

	legendWidth := vg.Points(chartLegendWidth)
	margin := vg.Points(chartMargin)
	p.Draw(draw.Crop(dc, margin, -legendWidth, margin, -margin))
	legend.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-legendWidth+vg.Points(8), -margin, 0, -vg.Points(36)))
	return nil
}

// barSet is one contender's bars, one per scenario, each drawn from the bottom of the y axis
// up to its height, with a thin line from lows to highs (its fastest and slowest samples). A
// NaN height is a scenario the contender did not run: no bar.
type barSet struct {
	heights, lows, highs []float64
	width, offset        vg.Length
	colour               color.Color
	crew                 bool // outlined thick: the reference
}

// Plot implements plot.Plotter.
func (b barSet) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	bottom := trY(p.Y.Min)
	for i, h := range b.heights {
		if math.IsNaN(h) {
			continue
		}
		x := trX(float64(i)) + b.offset
		b.fill(&c, x-b.width/2, bottom, x+b.width/2, trY(h))
		if i < len(b.lows) && !math.IsNaN(b.lows[i]) && b.highs[i] > b.lows[i] {
			c.StrokeLines(rangeStyle, c.ClipLinesY([]vg.Point{{X: x, Y: trY(b.lows[i])}, {X: x, Y: trY(b.highs[i])}})...)
		}
	}
}

// Thumbnail implements plot.Thumbnailer: the legend's swatch.
func (b barSet) Thumbnail(c *draw.Canvas) {
	b.fill(c, c.Min.X, c.Min.Y, c.Max.X, c.Max.Y)
}

// fill draws one bar, outlined so that a light colour shows on the white ground, and crew's
// thicker.
func (b barSet) fill(c *draw.Canvas, x0, y0, x1, y1 vg.Length) {
	pts := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
	c.FillPolygon(b.colour, c.ClipPolygonY(pts))
	outline := barOutline
	if b.crew {
		outline = crewOutline
	}
	c.StrokeLines(outline, c.ClipLinesY(append(pts, pts[0]))...)
}

// floorMarks draws, across each scenario's group, a line at the floor's time as a multiple of
// crew's; NaN: no floor ran there.
type floorMarks struct {
	levels []float64
	width  vg.Length
}

// Plot implements plot.Plotter.
func (f floorMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range f.levels {
		if math.IsNaN(v) {
			continue
		}
		x, y := trX(float64(i)), trY(v)
		c.StrokeLines(floorStyle, c.ClipLinesY([]vg.Point{{X: x - f.width/2, Y: y}, {X: x + f.width/2, Y: y}})...)
	}
}

// Thumbnail implements plot.Thumbnailer.
func (f floorMarks) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(floorStyle, c.Min.X, y, c.Max.X, y)
}

// floors are the log2 multiples of crew's time of each scenario's floor among present, NaN
// where none ran.
func (sr *suiteResult) floors(present []string) []float64 {
	out := make([]float64, len(sr.scenarios))
	for i, sc := range sr.scenarios {
		out[i] = math.NaN()
		if name, ok := sc.fastest(present, contenders.Floor); ok {
			if r, _, ok := sc.ratio(name); ok && r > 0 {
				out[i] = math.Log2(r)
			}
		}
	}
	return out
}

// ranges are, per scenario, the log2 of the contender's fastest and slowest samples over
// crew's median time; NaN where either did not run.
func (sr *suiteResult) ranges(name string) (lows, highs []float64) {
	lows, highs = make([]float64, len(sr.scenarios)), make([]float64, len(sr.scenarios))
	for i, sc := range sr.scenarios {
		lows[i], highs[i] = math.NaN(), math.NaN()
		c, ref := sc.cells[name], sc.cells[contenders.Reference]
		if c == nil || ref == nil || len(c.time) == 0 || len(ref.time) == 0 {
			continue
		}
		if med := summary(ref.time).Center; med > 0 && slices.Min(c.time) > 0 {
			lows[i], highs[i] = math.Log2(slices.Min(c.time)/med), math.Log2(slices.Max(c.time)/med)
		}
	}
	return lows, highs
}

// bars are the heights of the contender's bars, one per scenario: the base-2 logarithm of its
// median time as a multiple of crew's, so 1 for twice crew's time, -1 for half and 0 for crew
// itself; NaN (no bar) where either did not run.
func (sr *suiteResult) bars(name string) []float64 {
	vals := make([]float64, len(sr.scenarios))
	for j, sc := range sr.scenarios {
		vals[j] = math.NaN()
		if r, _, ok := sc.ratio(name); ok && r > 0 {
			vals[j] = math.Log2(r)
		}
	}
	return vals
}

// colour is the colour of the contender called name: the palette's entry at its place in
// contenderNames, whichever contenders a chart shows. A name that contenderNames lacks (from
// an older raw file) takes the palette's last entry.
func colour(name string) color.RGBA {
	i := slices.Index(contenderNames(), name)
	if i < 0 || i >= len(palette) {
		i = len(palette) - 1
	}
	return palette[i]
}

// log2Ticks labels a log2 axis with the multiples it stands for: 1/4×, 1/2×, 1×, 2×, 4×…
type log2Ticks struct{}

// Ticks implements plot.Ticker.
func (log2Ticks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	step := 1.0
	if max-min > 8 {
		step = 2
	}
	for v := math.Ceil(min/step) * step; v <= max; v += step {
		var label string
		switch {
		case v >= 0:
			label = fmt.Sprintf("%g×", math.Exp2(v))
		default:
			label = fmt.Sprintf("1/%g×", math.Exp2(-v))
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}
