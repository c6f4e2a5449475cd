package redisstore_test

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The chart TestFleet writes with -fleetchart: admissions per 100 ms of
// the 4 workers, stacked, against the limit, for exact mode, local quota,
// and local quota with worker 0 killed. Drawn as examples/policies draws
// its charts (gonum/plot, PNG, 96 dpi).

const (
	fleetBin     = 100 * time.Millisecond
	fleetSpan    = 3 * time.Second // the x axis: the longest run
	fleetPanelW  = 7 * vg.Inch
	fleetPanelH  = 2.2 * vg.Inch
	fleetYMax    = 500 // per bin: the burst's first bins are cut off
	fleetDPI     = 96
	fleetTextPts = 12
)

var fleetColors = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255},
	color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255},
}

func writeFleetChart(path string, runs ...*fleetResult) error {
	titles := []string{
		"exact mode: every decision a script in Redis",
		"local quota (WithLocalQuota, L = 100 ms)",
		"local quota, worker 1 killed (SIGKILL) at the dashed line",
	}
	var grid [][]*plot.Plot
	for i, res := range runs {
		if res == nil {
			return fmt.Errorf("fleet chart: run %q missing", titles[i])
		}
		grid = append(grid, []*plot.Plot{fleetPanel(titles[i], res)})
	}
	img := vgimg.NewWith(vgimg.UseWH(fleetPanelW, fleetPanelH*vg.Length(len(grid))), vgimg.UseDPI(fleetDPI))
	tiles := draw.Tiles{
		Rows: len(grid), Cols: 1,
		PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4,
	}
	canvases := plot.Align(grid, tiles, draw.New(img))
	for i, row := range grid {
		row[0].Draw(canvases[i][0])
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

// fleetPanel stacks the workers' admissions of the hot key per bin, each
// worker's bars drawn over the sum of those after it.
func fleetPanel(title string, res *fleetResult) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	for _, s := range []*vg.Length{&p.Title.TextStyle.Font.Size, &p.X.Label.TextStyle.Font.Size, &p.Y.Label.TextStyle.Font.Size,
		&p.X.Tick.Label.Font.Size, &p.Y.Tick.Label.Font.Size, &p.Legend.TextStyle.Font.Size} {
		*s = vg.Points(fleetTextPts)
	}
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "admitted per 100 ms"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	bins := int(fleetSpan / fleetBin)
	counts := make([][]float64, fleetWorkers)
	for w := range fleetWorkers {
		counts[w] = make([]float64, bins)
		for _, a := range res.adm[w] {
			if a.key != 0 {
				continue
			}
			if i := int((a.r - res.start) / int64(fleetBin)); i >= 0 && i < bins {
				counts[w][i]++
			}
		}
	}
	for w := range fleetWorkers {
		h := &plotter.Histogram{Width: fleetBin.Seconds(), FillColor: fleetColors[w]}
		h.LineStyle.Width = 0
		for i := range bins {
			sum := 0.0
			for v := w; v < fleetWorkers; v++ {
				sum += counts[v][i]
			}
			lo := float64(i) * fleetBin.Seconds()
			h.Bins = append(h.Bins, plotter.HistogramBin{Min: lo, Max: lo + fleetBin.Seconds(), Weight: sum})
		}
		p.Add(h)
		p.Legend.Add(fmt.Sprintf("worker %d", w+1), h)
	}
	perBin := float64(res.run.limit.Events) * fleetBin.Seconds() / res.run.limit.Period.Seconds()
	limit := fleetDashed(plotter.XYs{{X: 0, Y: perBin}, {X: time.Duration(res.end - res.start).Seconds(), Y: perBin}})
	p.Add(limit)
	p.Legend.Add(fmt.Sprintf("limit (%.0f per 100 ms)", perBin), limit)
	if res.killedAt != 0 {
		x := time.Duration(res.killedAt - res.start).Seconds()
		p.Add(fleetDashed(plotter.XYs{{X: x, Y: 0}, {X: x, Y: math.Inf(1)}}))
	}
	// After Add, which widens the axes to the data.
	p.X.Min, p.X.Max = 0, fleetSpan.Seconds()
	p.Y.Min, p.Y.Max = 0, fleetYMax
	var ticks plot.ConstantTicks
	for y := 0; y <= fleetYMax; y += 100 {
		ticks = append(ticks, plot.Tick{Value: float64(y), Label: fmt.Sprint(y)})
	}
	p.Y.Tick.Marker = ticks
	return p
}

func fleetDashed(xys plotter.XYs) *plotter.Line {
	for i := range xys {
		xys[i].Y = min(xys[i].Y, fleetYMax)
	}
	l := &plotter.Line{XYs: xys}
	l.Color = color.Black
	l.Width = vg.Points(1.5)
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	return l
}
