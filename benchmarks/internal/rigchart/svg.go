package rigchart

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Series is one line of a panel: Y[i] at X[i]; a NaN Y leaves a gap (a
// load at which nothing was answered has no p99).
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool // a reference line, such as the measured capacity
}

// Panel is one plot: its series share the axes, which start at 0 and end
// at a round number past the largest value.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
	Markers               bool      // a dot at every point
	LogY                  bool      // a log scale (ticks 1, 2, 5 × 10ⁿ); values ≤ 0 are gaps
	XMarks                []float64 // dashed vertical lines, such as an event's time
}

// The geometry of a panel, in SVG units.
const (
	panelW, panelH           = 460, 320
	marginL, marginR         = 60, 16
	marginT, marginB         = 34, 44
	plotW                    = panelW - marginL - marginR
	plotH                    = panelH - marginT - marginB
	titleH, legendH, legendW = 28, 22, 175
)

// palette colours the series by the order their names first appear in a
// chart, so that a protection has one colour in all of its panels.
var palette = []string{"#444444", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// SVG draws panels side by side under title, with one legend below them
// naming every series. The series named in names get the palette's
// colours in that order, and the others the next ones, so that charts
// given the same names colour a name alike whatever their panels hold.
func SVG(title string, names []string, panels []Panel) []byte {
	names = slices.Clone(names)
	for _, p := range panels {
		for _, s := range p.Series {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	dashed := map[string]bool{}
	colour := map[string]string{}
	var shown []string // the names with a series, for the legend
	for i, n := range names {
		colour[n] = palette[i%len(palette)]
		for _, p := range panels {
			for _, s := range p.Series {
				if s.Name == n && !slices.Contains(shown, n) {
					shown = append(shown, n)
					dashed[n] = s.Dashed
				}
			}
		}
	}
	names = shown
	width := max(len(panels), 1) * panelW
	perRow := max(width/legendW, 1)
	rows := (len(names) + perRow - 1) / perRow
	height := titleH + panelH + rows*legendH + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="19" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, html.EscapeString(title))
	for i, p := range panels {
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", i*panelW, titleH)
		drawPanel(&b, p, colour)
		b.WriteString("</g>\n")
	}
	for i, n := range names {
		x := 20 + (i%perRow)*legendW
		y := titleH + panelH + (i/perRow)*legendH + 12
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`, x, y, x+24, y, colour[n], dash(dashed[n]))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+30, y+4, html.EscapeString(n))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func dash(d bool) string {
	if d {
		return ` stroke-dasharray="6,4"`
	}
	return ""
}

// axis is one axis's range and tick step (for a log axis, the range
// only).
type axis struct {
	lo, hi, step float64
	log          bool
}

// logAxis returns a log axis from the power of ten at or below the least
// positive value of vs to the one at or above the largest.
func logAxis(vs []float64) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	return axis{lo: lo, hi: hi, log: true}
}

// niceAxis returns an axis from 0 (or below, for negative values) to a
// round number at or past the largest of vs, ticked at 1, 2 or 5 × a
// power of ten, about five ticks.
func niceAxis(vs []float64) axis {
	lo, hi := 0.0, math.Inf(-1)
	for _, v := range vs {
		if math.IsNaN(v) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if math.IsInf(hi, -1) || hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, f := range []float64{1, 2, 5} {
		if raw/mag <= f {
			step = f * mag
			break
		}
	}
	return axis{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step, step: step}
}

func (a axis) ticks() []float64 {
	var t []float64
	if a.log {
		for e := a.lo; e <= a.hi*(1+1e-9); e *= 10 {
			for _, m := range []float64{1, 2, 5} {
				if v := m * e; v <= a.hi*(1+1e-9) {
					t = append(t, v)
				}
			}
		}
		return t
	}
	for i := 0; ; i++ {
		v := a.lo + float64(i)*a.step
		if v > a.hi+a.step/1e6 {
			return t
		}
		t = append(t, v)
	}
}

// at maps v to a position between 0 and span.
func (a axis) at(v, span float64) float64 {
	if a.log {
		return math.Log10(v/a.lo) / math.Log10(a.hi/a.lo) * span
	}
	return (v - a.lo) / (a.hi - a.lo) * span
}

func label(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'g', 6, 64)
}

func drawPanel(b *strings.Builder, p Panel, colour map[string]string) {
	var xs, ys []float64
	for _, s := range p.Series {
		xs = append(xs, s.X...)
		ys = append(ys, s.Y...)
	}
	xs = append(xs, p.XMarks...)
	ax, ay := niceAxis(xs), niceAxis(ys)
	if p.LogY {
		ay = logAxis(ys)
	}
	px := func(x float64) float64 { return marginL + ax.at(x, plotW) }
	py := func(y float64) float64 { return marginT + plotH - ay.at(y, plotH) }
	fmt.Fprintf(b, `<text x="%d" y="18" text-anchor="middle" font-size="13">%s</text>`+"\n", marginL+plotW/2, html.EscapeString(p.Title))
	for _, t := range ay.ticks() {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`, marginL, y, marginL+plotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-5, y+4, label(t))
	}
	for _, t := range ax.ticks() {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`, x, marginT+plotH, x, marginT+plotH+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, marginT+plotH+17, label(t))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", marginL, marginT, plotW, plotH)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+plotW/2, panelH-6, html.EscapeString(p.XLabel))
	fmt.Fprintf(b, `<text transform="translate(14,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+plotH/2, html.EscapeString(p.YLabel))
	for _, m := range p.XMarks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="3,3"/>`+"\n", px(m), marginT, px(m), marginT+plotH)
	}
	for _, s := range p.Series {
		c := colour[s.Name]
		for _, run := range runs(s, p.LogY) {
			var pts []string
			for _, i := range run {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
			}
			if len(run) > 1 {
				fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), c, dash(s.Dashed))
			}
			if p.Markers || len(run) == 1 {
				for _, i := range run {
					fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(s.X[i]), py(s.Y[i]), c)
				}
			}
		}
	}
}

// runs splits a series' indices at its gaps: NaN values, and values ≤ 0
// on a log axis.
func runs(s Series, logY bool) [][]int {
	var out [][]int
	var cur []int
	for i := range min(len(s.X), len(s.Y)) {
		if math.IsNaN(s.Y[i]) || math.IsNaN(s.X[i]) || logY && s.Y[i] <= 0 {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, i)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
