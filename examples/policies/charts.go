package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// bin is the width of the charts' bars: four requests' worth at the
// policy's rate.
const bin = 200 * time.Millisecond

// Chart geometry and type sizes. The charts are shown scaled down (the
// README's column is about 60 % of their width), so text is set large
// enough to stay legible there.
const (
	panelWidth  = 7 * vg.Inch
	panelHeight = 2.2 * vg.Inch
	legendWidth = 2.4 * vg.Inch // the comparison chart's legend column
	dpi         = 96

	titleSize = 13 // points
	labelSize = 13
	tickSize  = 12
)

var (
	admittedColor = color.RGBA{R: 46, G: 139, B: 87, A: 255}  // green
	refusedColor  = color.RGBA{R: 214, G: 69, B: 65, A: 255}  // red
	delayColor    = color.RGBA{R: 52, G: 101, B: 164, A: 255} // blue
	// palette tells the algorithms apart in the comparison chart (Tableau
	// 10); past ten, lines repeat a colour with a dash pattern.
	palette = []color.Color{
		color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
		color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
		color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
		color.RGBA{23, 190, 207, 255},
	}
)

// writeCharts writes one chart per policy, <name>.png, and comparison.png
// into dir.
func writeCharts(dir string, results []result) error {
	for i := range policies {
		var rows []result
		for _, r := range results {
			if r.policy == &policies[i] {
				rows = append(rows, r)
			}
		}
		if err := save(filepath.Join(dir, policies[i].name+".png"), policyChart(rows), panelHeight, nil); err != nil {
			return err
		}
	}
	grid, legend := comparisonChart(results, "boundary", "cold-start")
	return save(filepath.Join(dir, "comparison.png"), grid, 1.8*panelHeight, legend)
}

// policyChart is one row per shape: admitted and refused requests per bin
// and, when any request of the policy had to wait (a shaper), each admitted
// request's delay beside it.
func policyChart(rows []result) [][]*plot.Plot {
	shaper := false
	for i := range rows {
		shaper = shaper || rows[i].stats().delayed > 0
	}
	grid := make([][]*plot.Plot, len(rows))
	for i := range rows {
		r := &rows[i]
		p := newPanel(fmt.Sprintf("%s on %s: %s", r.policy.name, r.shape.name, r.shape.about), r.shape.length)
		p.Y.Label.Text = "requests / " + bin.String()
		admitted, refused := r.bins(bin)
		total := make([]float64, len(admitted))
		for j := range total {
			total[j] = admitted[j] + refused[j]
		}
		// Refused bars stand on the admitted ones: drawn to the total
		// first, then covered up to the admitted count.
		tot, adm := bars(total, refusedColor), bars(admitted, admittedColor)
		p.Add(tot, adm)
		top := slices.Max(total)
		p.Legend.Add("admitted", adm)
		p.Legend.Add("refused", tot)
		if r.policy.own.Events == 0 {
			// A policy with a limit of its own (requests in flight) has
			// no rate to draw.
			rate := rateLine(r.shape.length)
			p.Add(rate)
			p.Legend.Add("limit rate", rate)
			top = max(top, rate.XYs[0].Y)
		}
		// Headroom for the legend above the tallest bar.
		p.Y.Max = math.Ceil(top * 1.6)
		grid[i] = []*plot.Plot{p}
		if shaper {
			grid[i] = append(grid[i], delayPanel(r))
		}
	}
	return grid
}

// delayPanel shows how long each admitted request waits, by arrival.
func delayPanel(r *result) *plot.Plot {
	p := newPanel(fmt.Sprintf("%s on %s: delay of admitted requests", r.policy.name, r.shape.name), r.shape.length)
	p.Y.Label.Text = "delay (ms)"
	p.Y.Min = 0
	var pts plotter.XYs
	for _, o := range r.outcomes {
		if o.allowed {
			pts = append(pts, plotter.XY{X: o.at.Seconds(), Y: float64(o.delay) / float64(time.Millisecond)})
		}
	}
	if len(pts) > 0 {
		s, err := plotter.NewScatter(pts)
		if err == nil { // only fails on NaN or infinite points
			s.GlyphStyle = draw.GlyphStyle{Color: delayColor, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
			p.Add(s)
		}
	}
	return p
}

// comparisonChart is one row per named shape: on the left every policy's
// admitted requests per bin, on the right the cost it admitted within the
// last period at each instant (the sliding count the summary's maximum is
// taken over), one line each. Lines are drawn widest first, so that
// policies that decide alike still show one above the other. The legend,
// one for every panel since a policy keeps its colour throughout, goes in
// a column of its own beside them, where it hides no line.
func comparisonChart(results []result, shapeNames ...string) ([][]*plot.Plot, *plot.Legend) {
	var grid [][]*plot.Plot
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(labelSize)
	legend.ThumbnailWidth = vg.Points(28)
	legend.Padding = vg.Points(3)
	for row, name := range shapeNames {
		var perBin, sliding *plot.Plot
		var n int
		for i := range results {
			r := &results[i]
			if r.shape.name != name {
				continue
			}
			if perBin == nil {
				perBin = newPanel(fmt.Sprintf("%s (%s): admitted per %v", name, r.shape.about, bin), r.shape.length)
				perBin.Y.Label.Text = "admitted / " + bin.String()
				sliding = newPanel(fmt.Sprintf("%s: cost admitted in the last %v", name, limit.Period), r.shape.length)
				sliding.Y.Label.Text = "admitted / " + limit.Period.String()
				limitLine := horizontal(r.shape.length, float64(limit.Events))
				sliding.Add(limitLine)
				if row == 0 {
					legend.Add(fmt.Sprintf("limit: %d per %v", limit.Events, limit.Period), limitLine)
				}
			}
			admitted, _ := r.bins(bin)
			a, b := stepLine(admitted), &plotter.Line{XYs: r.slidingCost(10 * time.Millisecond)}
			for _, l := range []*plotter.Line{a, b} {
				l.Color = palette[n%len(palette)]
				l.Width = vg.Points(max(4.5-0.5*float64(n), 1.2))
				if n >= len(palette) {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
				}
			}
			perBin.Add(a)
			sliding.Add(b)
			if row == 0 {
				legend.Add(r.policy.name, b)
			}
			n++
		}
		if perBin != nil {
			perBin.Y.Tick.Marker = countTicks{}
			sliding.Y.Tick.Marker = countTicks{}
			grid = append(grid, []*plot.Plot{perBin, sliding})
		}
	}
	return grid, &legend
}

// save draws a grid of panels, each height high, into a PNG file, with
// legend, when there is one, in a column of its own on the right.
func save(path string, grid [][]*plot.Plot, height vg.Length, legend *plot.Legend) error {
	cols := 0
	for _, row := range grid {
		cols = max(cols, len(row))
	}
	width := panelWidth * vg.Length(cols)
	if legend != nil {
		width += legendWidth
	}
	img := vgimg.NewWith(vgimg.UseWH(width, height*vg.Length(len(grid))), vgimg.UseDPI(dpi))
	canvas := draw.New(img)
	if legend != nil {
		// The legend's column starts level with the panels' tops, below
		// the first title.
		col := draw.Crop(canvas, width-legendWidth+vg.Millimeter*2, 0, 0, -vg.Millimeter*10)
		legend.Draw(col)
		canvas = draw.Crop(canvas, 0, -legendWidth, 0, 0)
	}
	tiles := draw.Tiles{
		Rows: len(grid), Cols: cols,
		PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4,
	}
	canvases := plot.Align(grid, tiles, canvas)
	for i, row := range grid {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
