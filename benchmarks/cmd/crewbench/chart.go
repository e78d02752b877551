package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette gives each contender its own colour, in the order of contenderNames (see colour):
// contenders.All, then the suites' own contenders, then one for a name that none of them has.
// Contenders that come in pairs (crew and crew-func, ants and ants-func, pond and pond-v2, the
// two channel baselines) have different hues, not two shades of one, so that thin bars tell
// them apart; every colour is dark or saturated enough to show on the chart's white ground.
var palette = []color.RGBA{
	{0xd6, 0x27, 0x28, 0xff}, // crew: red
	{0xff, 0x7f, 0x0e, 0xff}, // crew-func: orange
	{0x1f, 0x77, 0xb4, 0xff}, // ants: blue
	{0x6a, 0x3d, 0x9a, 0xff}, // ants-func: violet
	{0x2c, 0xa0, 0x2c, 0xff}, // pond: green
	{0xb8, 0x86, 0x0b, 0xff}, // pond-v2: dark gold
	{0x8c, 0x56, 0x4b, 0xff}, // workerpool: brown
	{0xe3, 0x77, 0xc2, 0xff}, // conc: pink
	{0x17, 0xbe, 0xcf, 0xff}, // errgroup: cyan
	{0x7f, 0x7f, 0x7f, 0xff}, // gopool: grey
	{0x00, 0x00, 0x00, 0xff}, // goroutines: black
	{0x9a, 0xcd, 0x32, 0xff}, // chan-unbuffered: yellow-green
	{0x00, 0x80, 0x80, 0xff}, // chan-buffered: teal
	{0xc0, 0xc0, 0xc0, 0xff}, // static-floor: light grey
	{0xf0, 0xc8, 0x00, 0xff}, // inline: yellow
	{0x1b, 0x9e, 0x77, 0xff}, // rill (streams): green-teal
	{0xc5, 0xb0, 0xd5, 0xff}, // a name none of them has: lavender
}

// Colours and sizes of the parts of a chart that are not bars.
var (
	chartGround  = color.RGBA{0xff, 0xff, 0xff, 0xff} // opaque, so a dark page shows no text on black
	barOutline   = draw.LineStyle{Color: color.RGBA{0x40, 0x40, 0x40, 0xff}, Width: vg.Points(0.3)}
	oneLineStyle = draw.LineStyle{Color: color.RGBA{0x40, 0x40, 0x40, 0xff}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
)

// chartLegendWidth is the width of the column beside the plot that holds the legend.
const chartLegendWidth = 130

// chart writes an SVG grouped bar chart to path: one group per scenario, one bar per
// contender, its top at the contender's median time as a multiple of crew's on a log2 axis,
// so a bar reaching above the dashed line at 1× is slower than crew and one stopping below
// it is faster. The bars rise from the bottom of the axis, so crew's own bars, at 1×, show
// like the others, and so does the shortest bar.
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

// chartSize is the size of the suite's chart: wide enough for every group of bars and the
// legend, high enough for the y axis' label and the legend's entries.
func (sr *suiteResult) chartSize(names []string) (width, height vg.Length) {
	n := len(sr.present(names))
	groupWidth := sr.barWidth() * vg.Length(n+2)
	width = max(vg.Points(480), groupWidth*vg.Length(len(sr.scenarios))+vg.Points(120)) + vg.Points(chartLegendWidth)
	height = max(vg.Points(400), vg.Points(60+16*float64(n)))
	return width, height
}

// drawChart draws the suite's chart on dc, which has the size chartSize gives.
func (sr *suiteResult) drawChart(dc draw.Canvas, names []string, machine string) error {
	present := sr.present(names)
	dc.FillPolygon(chartGround, []vg.Point{
		{X: dc.Min.X, Y: dc.Min.Y}, {X: dc.Min.X, Y: dc.Max.Y}, {X: dc.Max.X, Y: dc.Max.Y}, {X: dc.Max.X, Y: dc.Min.Y},
	})

	p := plot.New()
	p.BackgroundColor = chartGround
	p.Title.Text = fmt.Sprintf("%s: time as a multiple of crew's (lower is faster)", sr.suite.title)
	p.Y.Label.Text = "time ÷ crew's time (log scale)"
	p.X.Label.Text = machine
	p.X.Label.TextStyle.Font.Size = vg.Points(8)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.ThumbnailWidth = vg.Points(14)

	barWidth := sr.barWidth()
	lo, hi := 0.0, 0.0
	for i, n := range present {
		b := barSet{heights: sr.bars(n), width: barWidth, colour: colour(n)}
		b.offset = barWidth * vg.Length(float64(i)-float64(len(present)-1)/2)
		for _, v := range b.heights {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
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
	p.Y.Tick.Marker = log2Ticks{}
	var labels []string
	for _, sc := range sr.scenarios {
		labels = append(labels, sc.name)
	}
	p.NominalX(labels...)
	if len(labels) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}

	legendWidth := vg.Points(chartLegendWidth)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-legendWidth+vg.Points(8), 0, 0, -vg.Points(30)))
	return nil
}

// barSet is one contender's bars, one per scenario, each drawn from the bottom of the y axis
// up to its height. A NaN height is a scenario the contender did not run: no bar.
type barSet struct {
	heights       []float64
	width, offset vg.Length
	colour        color.Color
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
	}
}

// Thumbnail implements plot.Thumbnailer: the legend's swatch.
func (b barSet) Thumbnail(c *draw.Canvas) {
	b.fill(c, c.Min.X, c.Min.Y, c.Max.X, c.Max.Y)
}

// fill draws one bar, outlined so that a light colour shows on the white ground.
func (b barSet) fill(c *draw.Canvas, x0, y0, x1, y1 vg.Length) {
	pts := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
	c.FillPolygon(b.colour, c.ClipPolygonY(pts))
	c.StrokeLines(barOutline, c.ClipLinesY(append(pts, pts[0]))...)
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
