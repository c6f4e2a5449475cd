package rigchart

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// order returns the distinct values of key over n items, in the order
// they first appear.
func order(n int, key func(i int) string) []string {
	var out []string
	for i := range n {
		if k := key(i); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// SweepCharts returns, per transport, the chart of the load sweep:
// goodput and p99 against the offered load, one line per protection,
// keyed by file name (overload-rig-<transport>.svg).
func SweepCharts(rows []SweepRow) map[string][]byte {
	out := map[string][]byte{}
	names := order(len(rows), func(i int) string { return rows[i].Protection })
	for _, tr := range order(len(rows), func(i int) string { return rows[i].Transport }) {
		good := Panel{Title: "goodput within the SLO", XLabel: "offered load (× capacity)", YLabel: "% of capacity", Markers: true}
		p99 := Panel{Title: "p99 of the answered calls", XLabel: "offered load (× capacity)", YLabel: "ms (log scale)", Markers: true, LogY: true}
		var loads []float64
		unloaded := math.NaN()
		for _, pr := range names {
			g, l := Series{Name: pr}, Series{Name: pr}
			for _, r := range rows {
				if r.Transport != tr || r.Protection != pr {
					continue
				}
				g.X, g.Y = append(g.X, r.Load), append(g.Y, r.Goodput)
				l.X, l.Y = append(l.X, r.Load), append(l.Y, r.P99)
				if !slices.Contains(loads, r.Load) {
					loads = append(loads, r.Load)
				}
				if r.P99 > 0 && r.P99Ratio > 0 {
					unloaded = r.P99 / r.P99Ratio
				}
			}
			if len(g.X) > 0 {
				good.Series = append(good.Series, g)
				p99.Series = append(p99.Series, l)
			}
		}
		slices.Sort(loads)
		if len(loads) > 0 {
			full := Series{Name: "capacity", X: []float64{loads[0], loads[len(loads)-1]}, Y: []float64{100, 100}, Dashed: true}
			good.Series = append(good.Series, full)
		}
		if !math.IsNaN(unloaded) && len(loads) > 0 {
			u := Series{Name: "unloaded p99", X: []float64{loads[0], loads[len(loads)-1]}, Y: []float64{unloaded, unloaded}, Dashed: true}
			p99.Series = append(p99.Series, u)
		}
		out["overload-rig-"+tr+".svg"] = SVG("Overload on one core, "+tr+": goodput and p99 against offered load", names, []Panel{good, p99})
	}
	return out
}

// Smooth returns the centred mean of ys over 2k+1 points (fewer at the
// ends), NaN skipped.
func Smooth(ys []float64, k int) []float64 {
	out := make([]float64, len(ys))
	for i := range ys {
		sum, n := 0.0, 0
		for j := max(i-k, 0); j <= min(i+k, len(ys)-1); j++ {
			if !math.IsNaN(ys[j]) {
				sum += ys[j]
				n++
			}
		}
		out[i] = math.NaN()
		if n > 0 {
			out[i] = sum / float64(n)
		}
	}
	return out
}

// ChangeCharts returns, per transport, the chart of the capacity-change
// run: each guard's limit over time, and the goodput (a 500 ms mean of
// the 100 ms figures) beside the capacity, keyed by file name
// (overload-rig-change-<transport>.svg).
func ChangeCharts(rows []ChangeRow) map[string][]byte {
	out := map[string][]byte{}
	names := order(len(rows), func(i int) string { return rows[i].Protection })
	for _, tr := range order(len(rows), func(i int) string { return rows[i].Transport }) {
		limit := Panel{Title: "limit on requests in flight", XLabel: "time (s)", YLabel: "requests (log scale)", LogY: true}
		good := Panel{Title: "goodput within the SLO (500 ms mean)", XLabel: "time (s)", YLabel: "calls a second"}
		var capX, capY []float64
		var marks []float64 // the times the work changed
		var parts []string  // the title's account of each change
		for _, pr := range names {
			l, g := Series{Name: pr}, Series{Name: pr}
			var c []float64 // the capacity at each point
			hasLimit := false
			for _, r := range rows {
				if r.Transport != tr || r.Protection != pr {
					continue
				}
				l.X, l.Y = append(l.X, r.T), append(l.Y, r.Limit)
				g.X, g.Y = append(g.X, r.T), append(g.Y, r.Goodput)
				hasLimit = hasLimit || !math.IsNaN(r.Limit)
				c = append(c, r.Capacity)
			}
			if capX == nil {
				capX, capY = l.X, c
				marks, parts = changes(rows, tr, pr)
			}
			g.Y = Smooth(g.Y, 2)
			if hasLimit {
				limit.Series = append(limit.Series, l)
			}
			good.Series = append(good.Series, g)
		}
		good.Series = append(good.Series, Series{Name: "capacity", X: capX, Y: capY, Dashed: true})
		title := "Capacity change, " + tr
		if len(marks) > 0 {
			limit.XMarks, good.XMarks = marks, marks
			title += ": the capacity " + strings.Join(parts, ", ")
		}
		out["overload-rig-change-"+tr+".svg"] = SVG(title, names, []Panel{limit, good})
	}
	return out
}

// changes returns the times at which the work per call of protection pr
// on transport tr changed, and for each how the title tells it, as the
// capacity it leaves: "÷ 2 at 6 s" for work twice the start's, "back at
// 22 s" when it returns to it. The rig doubles the work once (the
// capacity it then measures is about half); the simulation's file halves
// the workers and restores them, which it writes as the work doubling
// and coming back.
func changes(rows []ChangeRow, tr, pr string) (marks []float64, parts []string) {
	first, last := math.NaN(), math.NaN()
	for _, r := range rows {
		if r.Transport != tr || r.Protection != pr {
			continue
		}
		switch {
		case math.IsNaN(first):
			first, last = r.Work, r.Work
		case r.Work != last:
			last = r.Work
			marks = append(marks, r.T)
			if r.Work == first {
				parts = append(parts, fmt.Sprintf("back at %s s", label(r.T)))
			} else {
				parts = append(parts, fmt.Sprintf("÷ %s at %s s", label(r.Work/first), label(r.T)))
			}
		}
	}
	return marks, parts
}

// WriteAll reads the sweep and capacity-change TSV files (either path
// may be empty) and writes their charts into dir, returning the files
// it wrote.
func WriteAll(sweepPath, changePath, dir string) ([]string, error) {
	charts := map[string][]byte{}
	if sweepPath != "" {
		b, err := os.ReadFile(sweepPath)
		if err != nil {
			return nil, err
		}
		rows, err := ReadSweep(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sweepPath, err)
		}
		for k, v := range SweepCharts(rows) {
			charts[k] = v
		}
	}
	if changePath != "" {
		b, err := os.ReadFile(changePath)
		if err != nil {
			return nil, err
		}
		rows, err := ReadChange(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", changePath, err)
		}
		for k, v := range ChangeCharts(rows) {
			charts[k] = v
		}
	}
	var wrote []string
	for _, name := range slices.Sorted(maps.Keys(charts)) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, charts[name], 0o644); err != nil {
			return wrote, err
		}
		wrote = append(wrote, p)
	}
	return wrote, nil
}
