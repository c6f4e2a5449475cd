package fleetsim

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden")

// The report's runs take about a second together; every test shares them.
var (
	reportOnce    sync.Once
	reportResults []*Result
	reportErr     error
)

func reportRuns(t *testing.T) ([]Row, []*Result) {
	t.Helper()
	rows := ReportRows()
	reportOnce.Do(func() {
		for _, row := range rows {
			r, err := Run(row.Config)
			if err != nil {
				reportErr = err
				return
			}
			reportResults = append(reportResults, r)
		}
	})
	if reportErr != nil {
		t.Fatal(reportErr)
	}
	return rows, reportResults
}

// TestReport prints the table of docs/multi-region.md (go test -v) and
// compares it with the golden file; -update rewrites the file.
func TestReport(t *testing.T) {
	rows, results := reportRuns(t)
	got := Report(rows, results)
	t.Log("\n" + got)
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the report changed; if on purpose, run go test ./internal/fleetsim -run TestReport -update and copy the table into docs/multi-region.md\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// TestBound: for the exact store and the lease strategies, every unit
// spent was charged to the global state before it was spent and within
// the run's widening of it (in the same window, for leases on a fixed
// window); the charges of the spent units are a sequence one shared
// limiter admits in full; and no window admits more than its trace bound
// or its documented bound.
func TestBound(t *testing.T) {
	rows, results := reportRuns(t)
	for i, row := range rows {
		c := results[i].Config
		if c.Strategy == AsyncHits {
			continue
		}
		t.Run(row.Name+"/"+c.Limit.Algorithm.String(), func(t *testing.T) {
			r := results[i]
			wide := c.widen()
			for _, a := range r.Admissions {
				if a.ChargedAt > a.At || a.At-a.ChargedAt > wide {
					t.Fatalf("instance %d spent at %v a unit charged at %v; widening %v", a.Instance, a.At, a.ChargedAt, wide)
				}
				if c.Limit.Algorithm == FixedWindow && c.leased() && !c.Limit.sameWindow(a.At, a.ChargedAt) {
					t.Fatalf("instance %d spent at %v a unit charged at %v, in another window", a.Instance, a.At, a.ChargedAt)
				}
			}
			replay(t, c.Limit, r.Admissions)
			for _, w := range []time.Duration{time.Second, 100 * time.Millisecond} {
				ws := r.Windows(w)
				if n := ws.OverTrace(); n != 0 {
					t.Errorf("per %v: %d windows over their trace bound", w, n)
				}
				if n := ws.OverBound(); n != 0 {
					t.Errorf("per %v: %d windows over the documented bound", w, n)
				}
			}
		})
	}
}

// replay feeds the charge instants of the spent units, in order, to one
// fresh shared limiter (drained, as the runs start) and fails at the
// first it would have refused.
func replay(t *testing.T, lim Limit, adm []Admission) {
	t.Helper()
	charges := make([]time.Duration, len(adm))
	for i, a := range adm {
		charges[i] = a.ChargedAt
	}
	slices.Sort(charges)
	st := newState(lim, 0, true)
	for i, at := range charges {
		if st.available(at) < 1 {
			t.Fatalf("one shared limiter would refuse charge %d of %d, at %v", i+1, len(charges), at)
		}
		st.take(at, 1)
	}
}

// TestAsyncOvershoots: asynchronous hits admit more than the limit in
// some windows of the bursty scenario, with either sync interval.
func TestAsyncOvershoots(t *testing.T) {
	rows, results := reportRuns(t)
	seen := 0
	for i, row := range rows {
		r := results[i]
		if r.Config.Strategy != AsyncHits {
			continue
		}
		seen++
		ws := r.Windows(time.Second)
		if ws.OverLimit() == 0 {
			t.Errorf("%s (%v): no 1 s window over the limit; max %d", row.Name, r.Config.Limit.Algorithm, ws.Max())
		}
	}
	if seen == 0 {
		t.Fatal("no async run in the report")
	}
}

// TestSteadyState: with demand over the limit in every second, the lease
// strategies admit at least 95 % of the limit per second on average after
// the first second (which starts with no leases).
func TestSteadyState(t *testing.T) {
	rows, results := reportRuns(t)
	for i, row := range rows {
		r := results[i]
		c := r.Config
		if !c.leased() {
			continue
		}
		ws := r.Windows(c.Limit.Period)
		sum := 0
		for w := 1; w < len(ws.Counts); w++ {
			if r.Demand[w] <= c.Limit.Events {
				t.Fatalf("%s: demand %d in window %d is not over the limit", row.Name, r.Demand[w], w)
			}
			sum += ws.Counts[w]
		}
		mean := float64(sum) / float64(len(ws.Counts)-1)
		if mean < 0.95*float64(c.Limit.Events) {
			t.Errorf("%s (%v): %.0f admitted per period after the first, under 95 %% of %d; per period: %v", row.Name, c.Limit.Algorithm, mean, c.Limit.Events, ws.Counts)
		}
	}
}

// TestKill: the killed instance loses only what it held (at most one
// lease's worth), stops counting as a holder no later than its lease's
// end, and from that end the fleet admits at least 95 % of the limit.
func TestKill(t *testing.T) {
	rows, results := reportRuns(t)
	for i, row := range rows {
		r := results[i]
		k := r.Config.Kill
		if k == nil {
			continue
		}
		if r.Lost < 1 || r.Lost > r.Config.Limit.capacity()/2 {
			t.Errorf("%s: lost %d units; want 1 to %d", row.Name, r.Lost, r.Config.Limit.capacity()/2)
		}
		if r.KilledAt < k.At {
			t.Errorf("%s: killed at %v, before %v", row.Name, r.KilledAt, k.At)
		}
		if r.KillLeaseEnd <= r.KilledAt || r.KillLeaseEnd > r.KilledAt+r.Config.Lease {
			t.Errorf("%s: lease end %v not within L of the kill at %v", row.Name, r.KillLeaseEnd, r.KilledAt)
		}
		if r.HolderUntil > r.KillLeaseEnd {
			t.Errorf("%s: counted as a holder until %v, after its lease's end %v", row.Name, r.HolderUntil, r.KillLeaseEnd)
		}
		n := 0
		for _, a := range r.Admissions {
			if a.At >= r.KillLeaseEnd && a.At < r.KillLeaseEnd+time.Second {
				n++
			}
		}
		if float64(n) < 0.95*float64(r.Config.Limit.Events) {
			t.Errorf("%s: %d admitted in the second after the lease's end, under 95 %% of %d", row.Name, n, r.Config.Limit.Events)
		}
	}
}

// TestDeterministic: a run depends on its Config only.
func TestDeterministic(t *testing.T) {
	c := ReportConfig(RegionalLeases, GCRA)
	c.Duration = 2 * time.Second
	a, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Admissions, b.Admissions) || a.Calls != b.Calls || a.Requests != b.Requests {
		t.Fatal("the same Config gave two different runs")
	}
	c.Seed++
	d, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.Admissions, d.Admissions) {
		t.Fatal("another seed gave the same run")
	}
}

func TestConfigErrors(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Limit.Events = 0 },
		func(c *Config) { c.Limit.Events = 3 }, // 1 s is not a whole number of ns per 3
		func(c *Config) { c.Strategy = 9 },
		func(c *Config) { c.Phases = nil },
		func(c *Config) { c.Phases = []Phase{{Rates: []float64{1}}} },
		func(c *Config) { c.RegionLease = time.Millisecond },
		func(c *Config) { c.Strategy, c.SyncEvery = AsyncHits, 0 },
		func(c *Config) { c.Kill = &Kill{} },
	}
	for i, mutate := range bad {
		c := ReportConfig(GlobalStore, GCRA)
		mutate(&c)
		if _, err := Run(c); err == nil {
			t.Errorf("case %d: Run accepted %+v", i, c)
		}
	}
}
