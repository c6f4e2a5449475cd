package overloadsim

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"testing"
	"time"
)

var changeOut = flag.String("overloadsim.change", "", "write the capacity-change run (2x, the workers halved, then restored) to this TSV file, in the format of benchmarks/cmd/rigcharts -change")

// changeHeader is benchmarks/internal/rigchart's ChangeHeader: the rig's
// capacity-change files and this one are drawn by the same command.
const changeHeader = "transport\tprotection\tt_s\twork\tlimit\toffered_per_s\tgoodput_per_s\tshed_per_s\tcapacity_per_s"

// changeRun is the capacity-change run the chart shows: the warm-up, 2 ×
// the starting capacity from then on, the workers halved 10 s later and
// restored 10 s after that.
func changeRun(base Config, a Anchor) (*Result, error) {
	c := scenario(base, Warmup+30*time.Second, Step{0, 0.5}, Step{Warmup, 2}).withDefaults()
	c.Resizes = []Resize{{At: Warmup + 10*time.Second, Workers: max(1, c.Workers/2)}, {At: Warmup + 20*time.Second, Workers: c.Workers}}
	return Run(c, a.New)
}

// writeChange writes r's bins from 2 s before the overload on as rows of
// a capacity-change file, t from that instant. Its "work" column is the
// starting workers over those in force (2 while they are halved):
// the rig doubles the work per request, the simulation halves the
// workers, and both halve the capacity. A limit that is not finite (no
// protection, BBR below its threshold) is left empty.
func writeChange(w *bufio.Writer, name string, r *Result) {
	from := Warmup - 2*time.Second
	bin := r.Config.Bin.Seconds()
	for _, b := range r.Bins {
		if b.Start < from {
			continue
		}
		workers := r.Config.Workers // in force from the bin's start
		for _, z := range r.Config.Resizes {
			if z.At <= b.Start {
				workers = z.Workers
			}
		}
		limit := ""
		if !math.IsInf(b.Limit, 0) && !math.IsNaN(b.Limit) {
			limit = fmt.Sprint(b.Limit)
		}
		fmt.Fprintf(w, "sim\t%s\t%g\t%g\t%s\t%g\t%g\t%g\t%g\n", name, (b.Start - from).Seconds(),
			float64(r.Config.Workers)/float64(workers), limit, float64(b.Arrived)/bin, float64(b.Good)/bin, float64(b.Shed)/bin, b.Capacity/bin)
	}
}

// TestChangeFile writes the capacity-change run of a few anchors and of
// floodgate's Adaptive, when asked (-overloadsim.change): the chart of
// the limit following the capacity (benchmarks/README.md says how to
// draw it).
func TestChangeFile(t *testing.T) {
	if *changeOut == "" {
		t.Skip("opt-in: go test ./internal/overloadsim -run TestChangeFile -overloadsim.change <file>")
	}
	base := Config{Seed: *tableSeed, Sigma: *tableSigma}.withDefaults()
	f, err := os.Create(*changeOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, changeHeader)
	for _, a := range contenders(base.Workers) {
		switch a.Name {
		case "static N", "Gradient2", "Envoy gradient", "failsafe", "floodgate adaptive":
		default:
			continue
		}
		r, err := changeRun(base, a)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		writeChange(w, a.Name, r)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}
