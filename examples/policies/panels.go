package main

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// newPanel is a plot over the traffic's length in seconds.
func newPanel(title string, length time.Duration) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(titleSize)
	p.X.Label.TextStyle.Font.Size = vg.Points(labelSize)
	p.Y.Label.TextStyle.Font.Size = vg.Points(labelSize)
	p.X.Tick.Label.Font.Size = vg.Points(tickSize)
	p.Y.Tick.Label.Font.Size = vg.Points(tickSize)
	p.Legend.TextStyle.Font.Size = vg.Points(labelSize)
	p.X.Label.Text = "time (s)"
	p.X.Min, p.X.Max = 0, length.Seconds()
	p.X.Tick.Marker = secondTicks{}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// secondTicks marks whole seconds.
type secondTicks struct{}

// Ticks returns a labelled tick at each whole second in [lo, hi].
func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for s := math.Ceil(lo); s <= hi; s++ {
		ts = append(ts, plot.Tick{Value: s, Label: fmt.Sprintf("%g", s)})
	}
	return ts
}

// countTicks labels whole counts at a step of 1, 2 or 5 times a power of
// ten, the smallest that needs at most 7 labels, so that a panel whose
// counts stay small (a cold start's 0 to 6 per bin) still gets a label on
// every level the lines take.
type countTicks struct{}

// Ticks returns labelled ticks at multiples of the step in [lo, hi].
func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for i := 0; (hi-lo)/step > 6; i++ {
		step *= []float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50, ...
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
	}
	return ts
}

// bars draws counts per bin as touching bars.
func bars(counts []float64, c color.Color) *plotter.Histogram {
	h := &plotter.Histogram{Width: bin.Seconds(), FillColor: c}
	h.LineStyle.Width = 0
	for i, v := range counts {
		lo := float64(i) * bin.Seconds()
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: lo, Max: lo + bin.Seconds(), Weight: v})
	}
	return h
}

// stepLine draws counts per bin as a line that holds each bin's value
// across the bin.
func stepLine(counts []float64) *plotter.Line {
	pts := make(plotter.XYs, 0, len(counts)+1)
	for i, v := range counts {
		pts = append(pts, plotter.XY{X: float64(i) * bin.Seconds(), Y: v})
	}
	// One more point so that the last bin has a width.
	pts = append(pts, plotter.XY{X: float64(len(counts)) * bin.Seconds(), Y: counts[len(counts)-1]})
	l := &plotter.Line{XYs: pts, StepStyle: plotter.PostStep}
	return l
}

// rateLine marks the policy's rate, in requests per bin.
func rateLine(length time.Duration) *plotter.Line {
	return horizontal(length, float64(limit.Events)*bin.Seconds()/limit.Period.Seconds())
}

// horizontal is a dashed black line at y across the traffic's length.
func horizontal(length time.Duration, y float64) *plotter.Line {
	l := &plotter.Line{XYs: plotter.XYs{{X: 0, Y: y}, {X: length.Seconds(), Y: y}}}
	l.Color = color.Black
	l.Width = vg.Points(1)
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	return l
}
