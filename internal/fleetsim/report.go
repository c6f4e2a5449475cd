package fleetsim

import (
	"fmt"
	"strings"
	"time"
)

// Scenario is the report's traffic over 10 s for three regions: uneven,
// and changing every few seconds (region 1 bursts, then region 0 goes
// quiet), always more than the 10,000/s limit in total.
func Scenario() []Phase {
	return []Phase{
		{Start: 0, Rates: []float64{6000, 4000, 3000}},
		{Start: 3 * time.Second, Rates: []float64{4000, 12000, 2000}},
		{Start: 6 * time.Second, Rates: []float64{0, 6000, 8000}},
		{Start: 9 * time.Second, Rates: []float64{5000, 5000, 5000}},
	}
}

// ReportConfig is the report's fleet for one strategy and algorithm: a
// limit of 10,000/s with a burst of 10,000, 3 regions 80 ms apart (40 ms
// one-way; 0.25 ms one-way inside a region), 4 instances per region.
func ReportConfig(s Strategy, alg Algorithm) Config {
	return Config{
		Strategy:  s,
		Limit:     Limit{Events: 10000, Period: time.Second, Burst: 10000, Algorithm: alg},
		Regions:   3,
		Instances: 4,
		Local:     250 * time.Microsecond,
		Remote:    40 * time.Millisecond,
		SyncEvery: 500 * time.Microsecond,
		Phases:    Scenario(),
		Duration:  10 * time.Second,
		Seed:      20,
	}
}

// Row is one line of the report: a name and its run's configuration.
type Row struct {
	Name   string
	Config Config
}

// ReportRows are the report's runs: every strategy on GCRA, gubernator's
// default sync interval and a slow one, a regional run with an instance
// of the bursting region killed mid-lease, and a fixed window.
func ReportRows() []Row {
	slow := ReportConfig(AsyncHits, GCRA)
	slow.SyncEvery = 500 * time.Millisecond
	killed := ReportConfig(RegionalLeases, GCRA)
	killed.Kill = &Kill{At: 4500 * time.Millisecond, Region: 1, Instance: 0}
	return []Row{
		{"1 one global store", ReportConfig(GlobalStore, GCRA)},
		{"2 regional leases", ReportConfig(RegionalLeases, GCRA)},
		{"3 global leases", ReportConfig(GlobalLeases, GCRA)},
		{"4 async hits, sync 0.5 ms", ReportConfig(AsyncHits, GCRA)},
		{"4 async hits, sync 500 ms", slow},
		{"5 = 2, one instance killed", killed},
		{"1 one global store", ReportConfig(GlobalStore, FixedWindow)},
		{"2 regional leases", ReportConfig(RegionalLeases, FixedWindow)},
		{"3 global leases", ReportConfig(GlobalLeases, FixedWindow)},
		{"4 async hits, sync 0.5 ms", ReportConfig(AsyncHits, FixedWindow)},
	}
}

// Report renders runs as the markdown table of docs/multi-region.md.
func Report(rows []Row, results []*Result) string {
	var b strings.Builder
	b.WriteString("| run | limit | widening | per 1 s: max / mean / over limit / over bound | per 100 ms: max / mean / over limit / over bound | latency p50 / p99 | calls per decision: all / cross-region |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for i, row := range rows {
		r := results[i]
		c := r.Config
		s, ms := r.Windows(time.Second), r.Windows(100*time.Millisecond)
		all, cross := r.CallsPerDecision()
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s / %s | %.4f / %.4f |\n",
			row.Name, c.Limit.Algorithm, widening(c), cell(s), cell(ms),
			dur(r.Latency(50)), dur(r.Latency(99)), all, cross)
	}
	for i, row := range rows {
		if r := results[i]; row.Config.Kill != nil {
			fmt.Fprintf(&b, "\nRun %q: the instance killed at %s lost %d units; its last lease would have ended at %s, and its grantor counted it as a holder until %s.\n",
				row.Name, dur(r.KilledAt), r.Lost, dur(r.KillLeaseEnd), dur(r.HolderUntil))
		}
	}
	return b.String()
}

func cell(ws Windows) string {
	return fmt.Sprintf("%d / %.0f / %d of %d / %d", ws.Max(), ws.Mean(), ws.OverLimit(), len(ws.Counts), ws.OverBound())
}

// dur prints a duration rounded to 0.1 ms, the report's resolution.
func dur(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.Round(100 * time.Microsecond).String()
}

// widening is how far the bound widens each window: for leases on a fixed
// window, not at all (a unit is spent in the window it was charged in).
func widening(c Config) string {
	if c.Limit.Algorithm == FixedWindow && c.leased() {
		return "same window"
	}
	return dur(c.widen())
}
