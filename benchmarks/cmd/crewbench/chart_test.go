package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/crewgo/crew/benchmarks/contenders"
)

// TestPaletteGivesEachContenderItsOwnColour checks that the palette has a colour for every
// contender -contenders knows, one more for an unknown name, and no colour twice.
func TestPaletteGivesEachContenderItsOwnColour(t *testing.T) {
	if len(palette) < len(contenderNames())+1 {
		t.Fatalf("%d colours for %d contenders and unknown names", len(palette), len(contenderNames()))
	}
	for i, c := range palette {
		if j := slices.Index(palette[i+1:], c); j >= 0 {
			t.Errorf("palette[%d] and palette[%d] are both %v", i, i+1+j, c)
		}
	}
	if got, want := colour("not-a-contender"), palette[len(palette)-1]; got != want {
		t.Errorf("colour of an unknown name = %v, want the last entry %v", got, want)
	}
}

// TestColourDependsOnlyOnPlaceInContendersAll checks that a chart draws each contender in the
// palette's colour at its place in contenders.All, however many of the contenders before it
// are absent, and uses no absent contender's colour.
func TestColourDependsOnlyOnPlaceInContendersAll(t *testing.T) {
	o := taskqOptions(t)
	o.contenders = []string{"crew", "ants", "static-floor"} // crew-func, pond, … absent
	rep, err := analyze(rawOf(taskqBench, map[string][]float64{
		"crew": {100}, "ants": {200}, "static-floor": {50},
	}), o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "taskq.svg")
	if err := rep.suites[0].chart(path, o.contenders, "test machine"); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range contenders.All {
		fill := fmt.Sprintf("fill:#%02X%02X%02X", palette[i].R, palette[i].G, palette[i].B)
		if drawn := strings.Contains(string(svg), fill); drawn != slices.Contains(o.contenders, c.Name) {
			t.Errorf("%s (%s) drawn: %t, want %t", fill, c.Name, drawn, !drawn)
		}
	}
}

// TestBarsAreLog2OfMultiple checks the chart's bar heights: the base-2 logarithm of the
// contender's time as a multiple of crew's, NaN (no bar) where it did not run.
func TestBarsAreLog2OfMultiple(t *testing.T) {
	rep, err := analyze(rawOf(taskqBench, map[string][]float64{
		"crew": {100}, "pond": {200}, "ants": {25},
	}), taskqOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.suites[0]
	for name, want := range map[string]float64{"crew": 0, "pond": 1, "ants": -2} {
		if got := sr.bars(name); len(got) != 1 || got[0] != want {
			t.Errorf("bars(%s) = %v, want [%g]", name, got, want)
		}
	}
	if got := sr.bars("gopool"); len(got) != 1 || !math.IsNaN(got[0]) {
		t.Errorf("bars(gopool), which did not run = %v, want [NaN]", got)
	}
}

// TestChartIsOpaqueAndShowsEveryContendersBars renders a chart in which crew is the fastest in
// every scenario, so that its bars are the shortest, and checks that every pixel is opaque
// (the chart reads the same on a dark page as on a light one) and that each contender's
// colour shows in the plot, left of the legend: crew's bars have a height too.
func TestChartIsOpaqueAndShowsEveryContendersBars(t *testing.T) {
	o := taskqOptions(t) // crew, pond, ants
	var raw bytes.Buffer
	for _, bench := range []string{taskqBench, "BenchmarkTaskQ/workers=NumCPU/task=sleep1ms"} {
		raw.Write(rawOf(bench, map[string][]float64{"crew": {50}, "pond": {100}, "ants": {400}}))
	}
	rep, err := analyze(raw.Bytes(), o)
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.suites[0]
	w, h := sr.chartSize(o.contenders)
	// A transparent canvas, as an SVG's is: only what the chart draws covers it.
	canvas := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseBackgroundColor(color.Transparent))
	if err := sr.drawChart(draw.New(canvas), o.contenders, "test machine"); err != nil {
		t.Fatal(err)
	}
	img := canvas.Image()
	b := img.Bounds()
	plotRight := b.Min.X + int(float64(b.Dx())*float64((w-vg.Points(chartLegendWidth))/w))
	seen := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if a != 0xffff {
				t.Fatalf("pixel (%d, %d) has alpha %#x: the chart is not opaque", x, y, a)
			}
			if x < plotRight {
				seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}]++
			}
		}
	}
	for _, n := range o.contenders {
		if seen[colour(n)] == 0 {
			t.Errorf("no bar of %s (%v) shows in the plot", n, colour(n))
		}
	}
}

// TestLog2TicksLabelMultiples checks that the log2 axis is labelled with the multiples it
// stands for, 1/4× … 4×, every other power of two when it spans more than eight.
func TestLog2TicksLabelMultiples(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		values   []float64
		labels   []string
	}{
		{-2.25, 2.25, []float64{-2, -1, 0, 1, 2}, []string{"1/4×", "1/2×", "1×", "2×", "4×"}},
		{-0.25, 1.25, []float64{0, 1}, []string{"1×", "2×"}},
		{-5.25, 4.25, []float64{-4, -2, 0, 2, 4}, []string{"1/16×", "1/4×", "1×", "4×", "16×"}},
	} {
		var values []float64
		var labels []string
		for _, tick := range (log2Ticks{}).Ticks(tc.min, tc.max) {
			values, labels = append(values, tick.Value), append(labels, tick.Label)
		}
		if !slices.Equal(values, tc.values) || !slices.Equal(labels, tc.labels) {
			t.Errorf("Ticks(%g, %g) = %v %q, want %v %q", tc.min, tc.max, values, labels, tc.values, tc.labels)
		}
	}
}

// TestShortTimeKeepsThreeDigits checks crew's time under each group of a chart.
func TestShortTimeKeepsThreeDigits(t *testing.T) {
	for sec, want := range map[float64]string{0.19916: "199ms", 0.011: "11ms", 1.254: "1.25s", 140.94e-6: "141µs", 95e-9: "95ns", 1234: "1.23e+03s"} {
		if got := fmtShortTime(sec); got != want {
			t.Errorf("fmtShortTime(%g) = %q, want %q", sec, got, want)
		}
	}
}
