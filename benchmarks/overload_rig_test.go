package benchmarks

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/floodgate/floodgate/benchmarks/internal/rigchart"
)

// Issue 33's real-server comparison (opt-in, -overloadrig; several
// minutes): a server whose handler burns a fixed amount of CPU, in a
// process of its own pinned to one core (GOMAXPROCS 1, taskset), driven
// past its capacity over loopback by an open-loop generator in the test's
// process, pinned to the other core: arrivals at a set rate, Poisson,
// seeded, so that a slow server does not slow the arrivals, as real
// clients do not wait for each other. Each protection runs in a fresh
// server. Per transport (HTTP, gRPC unary, gRPC server-streaming),
// protection and offered load: goodput (answers within the SLO, 5 × the
// unloaded median latency) as a share of the measured capacity, the shed
// share, and the p99 of the answered requests against the unloaded p99.
// Then the capacity-change run: at a set load, the work per request
// changes halfway through, and every 100 ms the rig records each guard's
// limit and the goodput. It needs a machine with at least 2 cores and
// nothing else running: on a busy one the figures say how busy it was.
//
// The protections: none; a static concurrency limit of 1 (core's
// Concurrency algorithm: one core, a CPU-bound handler); kratos/aegis BBR
// (its defaults: CPU over 800‰ from its own reader, then Little's law);
// failsafe-go's adaptive limiter (its defaults); floodgate's
// overload.Adaptive and overload.BBR (their defaults). On gRPC, floodgate's
// through grpcmw, failsafe-go's through failsafegrpc (unary; the rig's
// own interceptor for streams, which failsafegrpc has none for) and
// kratos's through an interceptor doing what kratos's ratelimit
// middleware does.
var (
	overloadRig           = flag.Bool("overloadrig", false, "TestOverloadRig: run issue 33's real-server comparison (several minutes)")
	overloadRigRun        = flag.Duration("overloadrig.run", 4*time.Second, "TestOverloadRig: each run's length; its first quarter is not counted")
	overloadRigWork       = flag.Duration("overloadrig.work", 2*time.Millisecond, "TestOverloadRig: the CPU each request burns, on an idle core")
	overloadRigOut        = flag.String("overloadrig.out", "", "TestOverloadRig: write the report to this file, and its figures to <name>-sweep.tsv and <name>-change.tsv beside it")
	overloadRigCharts     = flag.String("overloadrig.charts", "", "TestOverloadRig: write the SVG charts into this directory (needs -overloadrig.out)")
	overloadRigLoad       = flag.String("overloadrig.loads", "0.8,2,5,10", "TestOverloadRig: the offered loads, in multiples of the capacity")
	overloadRigOnly       = flag.String("overloadrig.only", "", "TestOverloadRig: run only the protections whose name contains this")
	overloadRigTransports = flag.String("overloadrig.transports", strings.Join(rigTransports, ","), "TestOverloadRig: the transports of the load sweep (empty: no sweep)")
	overloadRigChange     = flag.String("overloadrig.change", rigHTTP, "TestOverloadRig: the transport of the capacity-change run (empty: no such run)")
	overloadRigChangeRun  = flag.Duration("overloadrig.changerun", 12*time.Second, "TestOverloadRig: the capacity-change run's length; the work changes halfway")
	overloadRigChangeWork = flag.Float64("overloadrig.changework", 2, "TestOverloadRig: the work per request after the change, in multiples of the work before")
	overloadRigChangeLoad = flag.Float64("overloadrig.changeload", 2, "TestOverloadRig: the capacity-change run's offered load, in multiples of the capacity before the change")
)

// rigBase is a transport's reference figures, measured with no guard.
type rigBase struct {
	p50, p99, slo time.Duration
	capacity      float64 // calls a second, closed loop
}

// measureBase starts a server with no guard on transport and measures
// its unloaded latency and its capacity.
func measureBase(t *testing.T, transport string, iters int) (rigBase, *rigProc) {
	p := startRigServer(t, transport, "none", iters)
	call, closeCall := newCaller(transport, p.addr)
	defer closeCall()
	unloaded := drive(call, 20, 3*time.Second, time.Second, 1, nil)
	b := rigBase{p50: unloaded.p(0.5), p99: unloaded.p(0.99)}
	b.slo = 5 * b.p50
	b.capacity = capacity(call, 3*time.Second)
	return b, p
}

// selected returns the protections -overloadrig.only names.
func selected() []protection {
	var out []protection
	for _, p := range protections {
		if strings.Contains(p.name, *overloadRigOnly) {
			out = append(out, p)
		}
	}
	return out
}

func rigList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func TestOverloadRig(t *testing.T) {
	if !*overloadRig {
		t.Skip("issue 33's real-server comparison is opt-in: go test -run '^TestOverloadRig$' -overloadrig (several minutes, 2 idle cores)")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("the rig needs 2 cores: one for the server, one for the load")
	}
	if *overloadRigCharts != "" && *overloadRigOut == "" {
		t.Fatal("-overloadrig.charts draws from the files -overloadrig.out names: give both")
	}
	transports := rigList(*overloadRigTransports)
	for _, tr := range append(slices.Clone(transports), rigList(*overloadRigChange)...) {
		if !slices.Contains(rigTransports, tr) {
			t.Fatalf("no transport %q: the rig has %v", tr, rigTransports)
		}
	}
	var loads []float64
	for _, f := range rigList(*overloadRigLoad) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			t.Fatalf("-overloadrig.loads: %q is not a positive number", f)
		}
		loads = append(loads, v)
	}
	// This process makes the load, on CPU 1; the servers run on CPU 0.
	var set unix.CPUSet
	set.Set(1)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Logf("the load is not pinned: %v", err)
	}
	iters := calibrate(*overloadRigWork)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s, %s; the server on 1 core (GOMAXPROCS 1), the load on another; work %v a request (%d rounds); runs of %v, the first quarter not counted\n",
		time.Now().UTC().Format(time.RFC3339), runtime.Version(), *overloadRigWork, iters, *overloadRigRun)
	var sweep []rigchart.SweepRow
	for _, tr := range transports {
		sweep = append(sweep, rigSweep(t, &sb, tr, iters, loads)...)
	}
	var change []rigchart.ChangeRow
	if tr := *overloadRigChange; tr != "" {
		change = rigCapacityChange(t, &sb, tr, iters)
	}
	t.Log("\n" + sb.String())
	if *overloadRigOut == "" {
		return
	}
	base := strings.TrimSuffix(*overloadRigOut, ".txt")
	sweepPath, changePath := base+"-sweep.tsv", base+"-change.tsv"
	if len(sweep) == 0 {
		sweepPath = ""
	}
	if len(change) == 0 {
		changePath = ""
	}
	if err := os.WriteFile(*overloadRigOut, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTSV(t, sweepPath, func(f *os.File) error { return rigchart.WriteSweep(f, sweep) })
	writeTSV(t, changePath, func(f *os.File) error { return rigchart.WriteChange(f, change) })
	if *overloadRigCharts != "" {
		wrote, err := rigchart.WriteAll(sweepPath, changePath, *overloadRigCharts)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("charts: %v", wrote)
	}
}

func writeTSV(t *testing.T, path string, write func(*os.File) error) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// ms is d in milliseconds, NaN for 0 (no answered call to measure).
func ms(d time.Duration) float64 {
	if d == 0 {
		return nan
	}
	return float64(d) / 1e6
}

// rigSweep runs every protection at every load on transport, writing its
// table into sb and returning its rows.
func rigSweep(t *testing.T, sb *strings.Builder, tr string, iters int, loads []float64) []rigchart.SweepRow {
	b, base := measureBase(t, tr, iters)
	base.stop()
	fmt.Fprintf(sb, "\n== %s: unloaded p50 %v, p99 %v; SLO 5 × p50 = %v; capacity (closed loop, 4 callers, no guard) %.0f/s\n\n",
		tr, b.p50.Round(10*time.Microsecond), b.p99.Round(10*time.Microsecond), b.slo.Round(10*time.Microsecond), b.capacity)
	fmt.Fprintf(sb, "%-18s %5s %9s %9s %7s %8s %9s %9s %10s\n", "protection", "load", "offered/s", "goodput", "shed", "timeout", "p50", "p99", "p99/unl.")
	var rows []rigchart.SweepRow
	for _, load := range loads {
		for i, pr := range selected() {
			p := startRigServer(t, tr, pr.name, iters)
			call, closeCall := newCaller(tr, p.addr)
			r := drive(call, load*b.capacity, *overloadRigRun, b.slo, uint64(10*load)+uint64(i), nil)
			closeCall()
			p.stop()
			n := float64(max(r.offered, 1))
			row := rigchart.SweepRow{Transport: tr, Protection: pr.name, Load: load,
				Offered: float64(r.offered) / r.secs, Goodput: 100 * float64(r.good) / r.secs / b.capacity,
				Shed: 100 * float64(r.shed) / n, Timeout: 100 * float64(r.timedOut) / n,
				P50: ms(r.p(0.5)), P99: ms(r.p(0.99)), P99Ratio: float64(r.p(0.99)) / float64(max(b.p99, 1))}
			if r.p(0.99) == 0 {
				row.P99Ratio = nan
			}
			rows = append(rows, row)
			fmt.Fprintf(sb, "%-18s %4.1f× %9.0f %8.1f%% %6.1f%% %7.1f%% %9v %9v %9.2f×\n", pr.name, load,
				row.Offered, row.Goodput, row.Shed, row.Timeout, r.p(0.5).Round(10*time.Microsecond),
				r.p(0.99).Round(10*time.Microsecond), float64(r.p(0.99))/float64(max(b.p99, 1)))
		}
	}
	return rows
}
