package overloadsim

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	tableFlag  = flag.Bool("overloadsim", false, "run every scenario for every anchor and print the table (about a minute, plus the drift run)")
	tableOut   = flag.String("overloadsim.out", "", "also write the table to this file")
	tableLong  = flag.Duration("overloadsim.drift", 10*time.Minute, "the drift scenario's length at 2x (0: skip it)")
	tableSeed  = flag.Uint64("overloadsim.seed", 1, "the seed of the table's runs")
	tableSigma = flag.Float64("overloadsim.sigma", 0.5, "the spread of the service time (Config.Sigma; negative: none)")
	tableCores = flag.String("overloadsim.cores", "1,2,4", "after the FIFO table, one for a server of each of these numbers of cores shared by the requests in flight (empty: none)")
	tableFIFO  = flag.Bool("overloadsim.fifo", true, "the FIFO table (50 workers)")
)

// contenders are the anchors and floodgate's own limiters through the
// bridge: core's static concurrency limit of the workers, overload's
// Adaptive and BBR.
func contenders(workers int) []Anchor {
	return append(Anchors(), Anchor{
		Name: "core static",
		Rule: "floodgate's core.Concurrency limit of N, one key, through Bridge (the slot for ours)",
		New:  staticCore(workers),
	}, Anchor{
		Name: "floodgate adaptive",
		Rule: "overload.Adaptive through Bridge, its defaults, keyed by tenant",
		New:  floodgateAdaptive(),
	}, Anchor{
		Name: "floodgate BBR",
		Rule: "overload.BBR through Bridge; CPU = busy share sampled every 250 ms, smoothed over 400 ms",
		New:  floodgateBBR(),
	})
}

// TestTable runs the whole table when asked (-overloadsim): every anchor
// in every scenario, on the default server.
func TestTable(t *testing.T) {
	if !*tableFlag {
		t.Skip("the whole table is opt-in: go test ./internal/overloadsim -run TestTable -overloadsim")
	}
	var bases []Config
	if *tableFIFO {
		bases = append(bases, Config{Seed: *tableSeed, Sigma: *tableSigma}.withDefaults())
	}
	for _, f := range strings.FieldsFunc(*tableCores, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("-overloadsim.cores: %q is not a number of cores", f)
		}
		bases = append(bases, Config{Seed: *tableSeed, Sigma: *tableSigma, Workers: n, Shared: true}.withDefaults())
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# go test ./internal/overloadsim -count=1 -timeout 30m -run TestTable -overloadsim -overloadsim.drift %v -overloadsim.seed %d -overloadsim.sigma %g -overloadsim.fifo=%v -overloadsim.cores '%s' -overloadsim.out <file>\n",
		*tableLong, *tableSeed, *tableSigma, *tableFIFO, *tableCores)
	for i, base := range bases {
		var rows []Row
		for _, a := range contenders(base.Workers) {
			start := time.Now()
			row, err := Measure(base, a, *tableLong)
			if err != nil {
				t.Fatalf("%s: %v", a.Name, err)
			}
			t.Logf("%s: %v", a.Name, time.Since(start).Round(time.Millisecond))
			rows = append(rows, row)
		}
		if i > 0 {
			buf.WriteString("\n")
		}
		if err := WriteTable(&buf, base, rows); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Print(buf.String())
	if *tableOut != "" {
		if err := os.WriteFile(*tableOut, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScenarios runs each scenario on a small server for the two anchors
// whose figures are known: no protection collapses and refuses nothing;
// a static limit keeps the unloaded p99, and its limit never moves.
func TestScenarios(t *testing.T) {
	base := Config{Seed: 2, Workers: 10}
	none, err := Measure(base, Anchors()[0], 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	static, err := Measure(base, Anchors()[1], 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range Loads {
		if s := none.Steady[i]; s.Goodput != 0 || s.P99 < 10 {
			t.Errorf("none at %gx: %+v, want no goodput and a p99 over 10x", l, s)
		}
		if s := static.Steady[i]; s.Goodput < 0.9 || s.P99 > 1.1 {
			t.Errorf("static at %gx: %+v, want goodput >= 90%% and p99 <= 1.1x", l, s)
		}
	}
	for i, l := range ColdLoads {
		if s := none.Cold[i]; s.Goodput != 0 || s.P99 < 10 {
			t.Errorf("none started at %gx: %+v, want no goodput and a p99 over 10x", l, s)
		}
		if s := static.Cold[i]; s.Goodput < 0.9 || s.P99 > 1.1 {
			t.Errorf("static started at %gx: %+v, want goodput >= 90%% and p99 <= 1.1x", l, s)
		}
	}
	if none.Step.OK || none.Halve.OK || !none.Recover.OK || none.Recover.After != 0 {
		t.Errorf("none: step %+v, halve %+v, recover %+v; want never, never, 0s", none.Step, none.Halve, none.Recover)
	}
	if !static.Recover.OK || static.Recover.After != 0 {
		t.Errorf("static: recover %+v, want 0s", static.Recover)
	}
	if b := none.Bursts; b.RefusedCalm != 0 || b.RefusedBurst != 0 || b.ServedCalm > 0.5 {
		t.Errorf("none in bursts: %+v, want nothing refused and most late", b)
	}
	if d := static.Drift; d == nil || d.Within != 1 || d.Mean != 1 {
		t.Errorf("static drift: %+v, want the limit at the workers throughout", d)
	}
	// A limit blind to priority sheds Critical as often as Normal, and
	// serves each tenant in proportion to what it asks: the heavy tenant,
	// asking half, gets 4 × its fair share (an eighth), the 7 others 4/7
	// of theirs; Jain's index is 8² / (8 (4² + 7 (4/7)²)) = 0.4375.
	if p := static.Priorities; p.Critical > 0.5 || p.Inversions < 0.5 || math.Abs(p.Jain-0.4375) > 0.02 {
		t.Errorf("static priorities: %+v, want critical served like the rest, inversions, and Jain 0.4375", p)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, base, []Row{none, static}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 workers", "none", "static N", "never", "inf"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}
