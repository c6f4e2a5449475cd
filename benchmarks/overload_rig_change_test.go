package benchmarks

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/benchmarks/internal/rigchart"
)

var nan = math.NaN()

// rigCapacityChange is the capacity-change run on transport: per
// protection, a fresh server offered -overloadrig.changeload × its
// capacity; halfway through, its work per request becomes
// -overloadrig.changework times what it was (a deploy that doubles the
// cost of a request, a dependency that slows down). Every 100 ms it
// records the guard's limit (read in the server) and the goodput,
// against the SLO and capacity measured before the change. It writes a
// summary into sb and returns the 100 ms rows.
func rigCapacityChange(t *testing.T, sb *strings.Builder, tr string, iters int) []rigchart.ChangeRow {
	b, base := measureBase(t, tr, iters)
	factor, run := *overloadRigChangeWork, *overloadRigChangeRun
	if factor <= 0 {
		t.Fatalf("-overloadrig.changework %v: not a positive multiple", factor)
	}
	// The capacity after the change, measured the same way.
	if err := base.setWork(factor); err != nil {
		t.Fatal(err)
	}
	call, closeCall := newCaller(tr, base.addr)
	after := capacity(call, 3*time.Second)
	closeCall()
	base.stop()
	changeAt := run / 2
	fmt.Fprintf(sb, "\n== capacity change, %s: %.1f× the capacity before (%.0f/s) offered for %v; at %v the work per request × %g (capacity %.0f/s after, closed loop); SLO %v (5 × the unloaded p50 before); limits read in the server every 100 ms\n\n",
		tr, *overloadRigChangeLoad, b.capacity, run, changeAt, factor, after, b.slo.Round(10*time.Microsecond))
	fmt.Fprintf(sb, "%-18s %12s %12s %14s %14s %12s %8s\n", "protection", "limit before", "limit after", "goodput before", "goodput after", "shed after", "back in")
	var rows []rigchart.ChangeRow
	for i, pr := range selected() {
		p := startRigServer(t, tr, pr.name, iters)
		call, closeCall := newCaller(tr, p.addr)
		changed := false
		control := func(at time.Duration) {
			if !changed && at >= changeAt {
				changed = true
				if err := p.setWork(factor); err != nil {
					t.Error(err)
				}
			}
		}
		r := drive(call, *overloadRigChangeLoad*b.capacity, run, b.slo, 100+uint64(i), control)
		closeCall()
		p.stop()
		samples := p.samplesIn(r.start.Add(-time.Second), r.start.Add(run))
		n := int(run / rigBucketLen)
		for k := range min(n, len(r.buckets)) {
			bk := r.buckets[k]
			from := r.start.Add(time.Duration(k) * rigBucketLen)
			row := rigchart.ChangeRow{Transport: tr, Protection: pr.name, T: float64(k) / 10, Work: 1, Limit: nan,
				Offered: 10 * float64(bk.offered), Goodput: 10 * float64(bk.good), Shed: 10 * float64(bk.shed), Capacity: b.capacity}
			if time.Duration(k)*rigBucketLen >= changeAt {
				row.Work, row.Capacity = factor, after
			}
			// The last reading by the end of these 100 ms: a limit
			// holds until the next.
			for _, s := range samples {
				if s.at.Before(from.Add(rigBucketLen)) {
					row.Limit = float64(s.limit)
				}
			}
			rows = append(rows, row)
		}
		tail := rows[len(rows)-min(n, len(r.buckets)):]
		before := changeWindow(tail, run/4, changeAt)
		late := changeWindow(tail, changeAt+run/4, run)
		fmt.Fprintf(sb, "%-18s %12s %12s %13.1f%% %13.1f%% %11.1f%% %8s\n", pr.name,
			medianLimit(before), medianLimit(late),
			100*meanOf(before, func(r rigchart.ChangeRow) float64 { return r.Goodput })/b.capacity,
			100*meanOf(late, func(r rigchart.ChangeRow) float64 { return r.Goodput })/after,
			100*meanOf(late, func(r rigchart.ChangeRow) float64 { return r.Shed })/
				max(meanOf(late, func(r rigchart.ChangeRow) float64 { return r.Offered }), 1),
			backIn(tail, changeAt, after))
	}
	fmt.Fprintf(sb, "\n(limit: the median of the readings; before: from the end of the first quarter to the change; after: the second half of the time after the change; goodput against the capacity of the time; back in: from the change until the goodput's 500 ms mean is at least 80 %% of the capacity after for a whole second, - if never)\n")
	return rows
}

// backIn returns how long after the change the goodput (the 500 ms mean
// the chart draws) took to reach 80 % of the capacity after the change
// and stay there for a second, "-" if it never did.
func backIn(rows []rigchart.ChangeRow, changeAt time.Duration, after float64) string {
	good := make([]float64, len(rows))
	for i, r := range rows {
		good[i] = r.Goodput
	}
	good = rigchart.Smooth(good, 2)
	const hold = int(time.Second / rigBucketLen)
	for i, r := range rows {
		at := time.Duration(math.Round(r.T*10)) * rigBucketLen
		if at < changeAt || i+hold > len(rows) {
			continue
		}
		if !slices.ContainsFunc(good[i:i+hold], func(g float64) bool { return !(g >= 0.8*after) }) {
			return (at - changeAt).String()
		}
	}
	return "-"
}

// changeWindow returns the rows whose 100 ms lie within [from, to).
func changeWindow(rows []rigchart.ChangeRow, from, to time.Duration) []rigchart.ChangeRow {
	var out []rigchart.ChangeRow
	for _, r := range rows {
		start := time.Duration(r.T * float64(time.Second))
		if start >= from-time.Millisecond && start < to-time.Millisecond {
			out = append(out, r)
		}
	}
	return out
}

func meanOf(rows []rigchart.ChangeRow, f func(rigchart.ChangeRow) float64) float64 {
	if len(rows) == 0 {
		return 0
	}
	sum := 0.0
	for _, r := range rows {
		sum += f(r)
	}
	return sum / float64(len(rows))
}

// medianLimit is the median of the rows' limits, "-" when none was read.
func medianLimit(rows []rigchart.ChangeRow) string {
	var v []float64
	for _, r := range rows {
		if !math.IsNaN(r.Limit) {
			v = append(v, r.Limit)
		}
	}
	if len(v) == 0 {
		return "-"
	}
	slices.Sort(v)
	return fmt.Sprint(v[len(v)/2])
}
