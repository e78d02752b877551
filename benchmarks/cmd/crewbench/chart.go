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

	"github.com/crewgo/crew/benchmarks/contenders"
)

// palette gives each contender its own colour, in the order of contenderNames (see colour):
// contenders.All, then the suites' own contenders, then one for a name that none of them has.
// crew's two entries are the strongest.
var palette = []color.RGBA{
	{0xd6, 0x27, 0x28, 0xff}, {0xff, 0x98, 0x96, 0xff}, {0x1f, 0x77, 0xb4, 0xff}, {0xae, 0xc7, 0xe8, 0xff},
	{0x2c, 0xa0, 0x2c, 0xff}, {0x98, 0xdf, 0x8a, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
	{0x9e, 0xda, 0xe5, 0xff}, {0x26, 0x26, 0x26, 0xff}, {0xc4, 0x9c, 0x94, 0xff}, {0xff, 0x7f, 0x0e, 0xff},
	{0xc5, 0xb0, 0xd5, 0xff},
}

// chart writes an SVG grouped bar chart to path: one group per scenario, one bar per
// contender, its height the contender's median time as a multiple of crew's on a log2 axis,
// so a bar above the line is slower than crew and one below is faster.
func (sr *suiteResult) chart(path string, names []string, machine string) error {
	var present []string
	for _, n := range names {
		if sr.has(n) {
			present = append(present, n)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: time as a multiple of crew's (lower is faster)", sr.suite.title)
	p.Y.Label.Text = "contender's median time ÷ crew's (log scale)"
	p.X.Label.Text = machine
	p.X.Label.TextStyle.Font.Size = vg.Points(8)

	barWidth := vg.Points(7)
	if len(sr.scenarios) > 8 {
		barWidth = vg.Points(4)
	}
	// The legend is drawn beside the plot rather than over its bars.
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	lo, hi := 0.0, 0.0
	for i, n := range present {
		vals := sr.bars(n)
		for _, v := range vals {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return err
		}
		bars.Color = colour(n)
		bars.LineStyle.Width = 0
		bars.Offset = barWidth * vg.Length(float64(i)-float64(len(present)-1)/2)
		p.Add(bars)
		legend.Add(n, bars)
	}
	p.Add(plotter.NewGrid())
	// crew's own bars have no height: the line at 1× stands for them.
	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 0}, {X: float64(len(sr.scenarios)) - 0.5, Y: 0}})
	if err != nil {
		return err
	}
	one.LineStyle.Width = vg.Points(1.5)
	one.LineStyle.Color = colour(contenders.Reference)
	p.Add(one)
	p.Y.Min, p.Y.Max = math.Floor(lo)-0.25, math.Ceil(hi)+0.25
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

	legendWidth := vg.Points(130)
	groupWidth := barWidth * vg.Length(len(present)+2)
	width := max(vg.Points(480), groupWidth*vg.Length(len(labels))+vg.Points(120)) + legendWidth
	height := vg.Points(360)
	canvas := vgsvg.New(width, height)
	dc := draw.New(canvas)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, width-legendWidth+vg.Points(8), 0, 0, -vg.Points(30)))
	return writeFile(path, canvas)
}

// bars are the heights of the contender's bars, one per scenario: the base-2 logarithm of its
// median time as a multiple of crew's, so 1 for twice crew's time and -1 for half; 0 (no bar)
// where either did not run.
func (sr *suiteResult) bars(name string) plotter.Values {
	vals := make(plotter.Values, len(sr.scenarios))
	for j, sc := range sr.scenarios {
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
