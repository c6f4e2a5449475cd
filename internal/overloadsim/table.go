package overloadsim

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// Loads are the steady overloads the table measures, in multiples of
// capacity.
var Loads = [3]float64{2, 5, 10}

// Row is one anchor's figures in every scenario.
type Row struct {
	Anchor               Anchor
	Steady               [len(Loads)]Steady
	Cold                 [len(ColdLoads)]Steady
	Step, Halve, Recover Convergence
	Bursts               BurstFigures
	Priorities           PriorityFigures
	// Drift is nil when the long run was not asked for.
	Drift *DriftFigures
}

// Measure runs every scenario for a, and Drift for drift when it is > 0.
func Measure(base Config, a Anchor, drift time.Duration) (Row, error) {
	row := Row{Anchor: a}
	var err error
	for i, l := range Loads {
		if row.Steady[i], err = Overload(base, a.New, l); err != nil {
			return row, err
		}
	}
	for i, l := range ColdLoads {
		if row.Cold[i], err = Cold(base, a.New, l); err != nil {
			return row, err
		}
	}
	if row.Step, err = StepUp(base, a.New); err != nil {
		return row, err
	}
	if row.Halve, err = Halve(base, a.New); err != nil {
		return row, err
	}
	if row.Recover, err = Recover(base, a.New); err != nil {
		return row, err
	}
	if row.Bursts, err = Bursts(base, a.New); err != nil {
		return row, err
	}
	if row.Priorities, err = Priorities(base, a.New); err != nil {
		return row, err
	}
	if drift > 0 {
		d, err := Drift(base, a.New, drift)
		if err != nil {
			return row, err
		}
		row.Drift = &d
	}
	return row, nil
}

// WriteTable writes the rows as the text tables of the results files:
// the server, the goals, each anchor's rule, then the figures.
func WriteTable(w io.Writer, base Config, rows []Row) error {
	c := base.withDefaults()
	server := fmt.Sprintf("%d workers, FIFO", c.Workers)
	if c.Shared {
		server = fmt.Sprintf("%d cores shared by the requests in flight", c.Workers)
	}
	fmt.Fprintf(w, "server: %s, lognormal service mean %v sigma %.2f, capacity %.0f req/s; unloaded p99 %v; SLO %v; seed %d\n",
		server, c.MeanService, c.Sigma, c.Capacity(), c.UnloadedP99().Round(time.Microsecond), c.SLO(), c.Seed)
	fmt.Fprintf(w, "goals: goodput >= %.0f%% of capacity, p99 <= %.1fx unloaded (at 5x); step to 3x <= 500ms; halved <= 2s; limit back <= 5s;\n", GoodputGoal*100, P99Goal)
	fmt.Fprintf(w, "       limit within ±15%% of workers (cores) for 10 min at 2x; <= 0.1%% refused at 0.8x; critical >= 99.9%%, inversions <= 0.1%%, Jain >= 0.95;\n       cold: the steady goals for a start into the load with no warm-up, measured from 2 s to 12 s\n\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%-16s %s\n", r.Anchor.Name, r.Anchor.Rule)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "anchor\t")
	for _, l := range Loads {
		fmt.Fprintf(tw, "%gx goodput\t%gx p99/unl.\t", l, l)
	}
	for _, l := range ColdLoads {
		fmt.Fprintf(tw, "cold %gx goodput\tcold %gx p99\t", l, l)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.Anchor.Name)
		for _, s := range append(r.Steady[:], r.Cold[:]...) {
			fmt.Fprintf(tw, "%s\t%s\t", pct(s.Goodput), times(s.P99))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "anchor\tstep 3x\thalved\tlimit back\tcalm refused\tburst refused\tcalm served\tcritical\tinversions\tJain\tdrift ±15%\tdrift mean\tdrift min-max\t\n")
	for _, r := range rows {
		p, b := r.Priorities, r.Bursts
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", r.Anchor.Name, conv(r.Step), conv(r.Halve), conv(r.Recover),
			pct2(b.RefusedCalm), pct(b.RefusedBurst), pct(b.ServedCalm), pct2(p.Critical), pct2(p.Inversions), index(p.Jain))
		if d := r.Drift; d != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s-%s\t", pct(d.Within), times(d.Mean), times(d.Min), times(d.Max))
		} else {
			fmt.Fprint(tw, "-\t-\t-\t")
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func pct(x float64) string  { return fmt.Sprintf("%.1f%%", 100*x) }
func pct2(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

func times(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "inf"
	}
	if x >= 100 {
		return fmt.Sprintf("%.0fx", x)
	}
	return fmt.Sprintf("%.2fx", x)
}

func index(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

func conv(c Convergence) string {
	if !c.OK {
		return "never"
	}
	return c.After.String()
}
