package redisstore_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestFleetMatrix (opt-in, -fleetmatrix; a few minutes) measures issue
// 32's table: how much of its limit a fleet on one hot key admits with
// local quota, by algorithm, burst, lease length and number of processes,
// against exact mode. Each cell is a run of the fleet (fleet_test.go): 1
// or 4 worker processes × 32 goroutines, each goroutine calling again
// -fleetmatrix.pace after its last call returned, which asks far more than
// the limit (the cell's "demand" says how much). Cells go one after the
// other on one redis-server, so that they do not share the CPU.
//
// Per cell: the admissions whose call returned after the first second
// (the first burst excluded), as a percentage of rate × that time; the
// server's commands (total_commands_processed, which counts a script's own
// calls) and the commands the clients sent (each script call one; a
// round trip) over the whole run per admission; and the
// windows of 100 ms and 1 s over the bound that TestFleet checks, from the
// logs timed on both sides of each call. A cell fails if a window is over
// the bound, or if local quota admitted less than 95 % of the limit while
// the workers asked well over it (judgeLower).
//
// Then the instant burst: one instance, 100 a second, burst 100, 300 calls
// at once, from 300 goroutines (one call each) and from 10 (30 calls each,
// back to back), on a cold key; and from 300 on a warm key: one that took
// 16 calls 10 ms apart (100 a second: hot, and leased under local quota)
// and then none for 50 ms, by when its bucket is full again. Local quota fails it if fewer
// than the burst are admitted; every mode, if more than the bound.
//
// -fleetmatrix.out writes the tables to a file, with the flags used.
// Choose cells with -run, by their names: TestFleetMatrix/gcra/burst4/procs1/quota100ms.
func TestFleetMatrix(t *testing.T) {
	if !*fleetMatrix {
		t.Skip("opt-in: -fleetmatrix runs issue 32's table (a few minutes)")
	}
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	checkServerClock(t, c)

	pace := *fleetMatrixPace
	if pace == 0 {
		pace = -1 // runFleet's "no pause"
	}
	var cells []matrixCell
	n := 0
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket} {
		for _, burst := range []int{1, 4, 20, 200} {
			for _, procs := range []int{1, 4} {
				for _, mode := range matrixModes {
					limit := core.Limit{Events: 200, Period: time.Second, Burst: burst, Algorithm: alg}
					cell := matrixCell{alg: alg, burst: burst, procs: procs, mode: mode.name}
					t.Run(cell.name(), func(t *testing.T) {
						n++
						run := fleetRun{
							name: cell.name(), limit: limit, quota: mode.quota, length: mode.length,
							duration: *fleetMatrixRun, workers: procs, routines: matrixRoutines, pace: pace, jitter: *fleetMatrixJitter,
						}
						res := runFleet(t, srv, c, run, fmt.Sprintf("matrix%d:", n))
						cell.measure(t, res)
						cells = append(cells, cell)
					})
				}
			}
		}
	}
	var bursts []instantBurst
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket} {
		for _, shape := range []struct {
			routines int
			warm     bool
		}{{instantCalls, false}, {10, false}, {instantCalls, true}} {
			for _, mode := range matrixModes {
				b := instantBurst{alg: alg, mode: mode.name, routines: shape.routines, warm: shape.warm}
				t.Run(fmt.Sprintf("instant/%s/%s/%s", matrixAlg(alg), b.shape(), mode.name), func(t *testing.T) {
					for trial := range instantTrials {
						n++
						b.measure(t, c, mode, fmt.Sprintf("matrix%d:", n), trial)
					}
					bursts = append(bursts, b)
				})
			}
		}
	}

	table := matrixTable(cells, bursts)
	t.Log("\n" + table)
	if *fleetMatrixOut != "" {
		var flags []string
		flag.Visit(func(f *flag.Flag) { flags = append(flags, fmt.Sprintf("-%s=%s", f.Name, f.Value)) })
		head := fmt.Sprintf("%s, %s, GOMAXPROCS %d; flags: %s\n\n", time.Now().UTC().Format(time.RFC3339), runtime.Version(), runtime.GOMAXPROCS(0), strings.Join(flags, " "))
		if err := os.WriteFile(*fleetMatrixOut, []byte(head+table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	fleetMatrix       = flag.Bool("fleetmatrix", false, "TestFleetMatrix: run issue 32's table (a few minutes)")
	fleetMatrixPace   = flag.Duration("fleetmatrix.pace", 2*time.Millisecond, "TestFleetMatrix: each goroutine's pause between calls; 0: none")
	fleetMatrixJitter = flag.Bool("fleetmatrix.jitter", false, "TestFleetMatrix: draw each pause evenly from [0, 2 × pace), so that the goroutines do not call in waves")
	fleetMatrixRun    = flag.Duration("fleetmatrix.run", 3*time.Second, "TestFleetMatrix: the length of a cell's run; its first second is not counted")
	fleetMatrixOut    = flag.String("fleetmatrix.out", "", "TestFleetMatrix: also write its tables to this file")
)

const (
	matrixRoutines = 32
	instantTrials  = 10
	instantCalls   = 300
)

// matrixModes are the table's columns: local quota with two lease lengths,
// and exact mode.
var matrixModes = []matrixMode{
	{"quota100ms", true, 100 * time.Millisecond},
	{"quota500ms", true, 500 * time.Millisecond},
	{"exact", false, 0},
}

type matrixMode struct {
	name   string
	quota  bool
	length time.Duration
}

func matrixAlg(a core.Algorithm) string {
	if a == core.GCRA {
		return "gcra"
	}
	return "token"
}

// matrixCell is one run of the matrix and what it measured.
type matrixCell struct {
	alg          core.Algorithm
	burst, procs int
	mode         string

	steady           share
	verdict          string  // judgeLower's; "" in exact mode
	admitted         int     // the whole run's
	commands, sent   float64 // per admission, the whole run
	grants, returned uint64
	demand           float64 // calls a second over the limit's rate
	win100, over100  int
	win1s, over1s    int
	fair, fairL      fairness // procs > 1 only: per 100 ms, and per lease length
}

// fairness is how evenly the workers shared the admissions after the
// first second: per interval (100 ms, or a lease length), the most any
// worker admitted over the least, and the median of that ratio over the
// intervals (+Inf when a worker got none in most of them).
type fairness struct {
	median      float64
	bins, zeros int   // intervals; those where some worker got none
	totals      []int // each worker's admissions after the first second
}

func (m *matrixCell) name() string {
	return fmt.Sprintf("%s/burst%d/procs%d/%s", matrixAlg(m.alg), m.burst, m.procs, m.mode)
}

func (m *matrixCell) measure(t *testing.T, res *fleetResult) {
	t.Helper()
	workers := make([]int, m.procs)
	for w := range workers {
		workers[w] = w
	}
	adm := res.merged(0, workers...)
	m.admitted = len(adm)
	m.commands = float64(res.commands) / float64(max(m.admitted, 1))
	m.sent = float64(res.sent) / float64(max(m.admitted, 1))
	for _, h := range res.health {
		m.grants, m.returned = m.grants+h.Leases, m.returned+h.Returned
	}
	m.demand = res.demandRatio()
	m.win100, m.over100 = checkGCRAWindows(t, 0, adm, res.run.limit, res.length, int64(100*time.Millisecond))
	m.win1s, m.over1s = checkGCRAWindows(t, 0, adm, res.run.limit, res.length, int64(time.Second))
	from := res.start + int64(time.Second)
	if res.run.quota {
		m.steady, m.verdict = judgeLower(t, res, "steady state", workers, from, res.end, lowest())
	} else {
		m.steady = steadyShare(t, res, workers, from, res.end)
	}
	// Where a small burst loses its refill: the time between consecutive
	// admissions (by r) after the first second, against the interval.
	var gaps []time.Duration
	for i := 1; i < len(adm); i++ {
		if adm[i-1].r >= from {
			gaps = append(gaps, time.Duration(adm[i].r-adm[i-1].r))
		}
	}
	slices.Sort(gaps)
	if len(gaps) > 0 {
		q := func(f float64) time.Duration { return gaps[int(f*float64(len(gaps)-1))].Round(10 * time.Microsecond) }
		t.Logf("%s: between consecutive admissions after the first second: median %v, 90th percentile %v, 99th %v, longest %v (the limit's interval %v)",
			m.name(), q(0.5), q(0.9), q(0.99), q(1), res.run.limit.Interval())
	}
	if m.procs > 1 {
		m.fair = fairShares(res, m.procs, from, int64(100*time.Millisecond))
		m.fairL = fairShares(res, m.procs, from, max(res.length, int64(100*time.Millisecond))) // exact mode: 0
		t.Logf("%s: per 100 ms after the first second, the most a worker admitted over the least: median %.2f over %d intervals (a worker admitted none in %d); per lease length (%v): %.2f over %d (none in %d); each worker's admissions %v",
			m.name(), m.fair.median, m.fair.bins, m.fair.zeros, time.Duration(res.length), m.fairL.median, m.fairL.bins, m.fairL.zeros, m.fair.totals)
	}
	calls, failed := res.decisions()
	t.Logf("%s: %.1f %% of the limit after the first second (%d admitted); demand %.0f× the limit (%d calls, %d failed); %.3f commands, %.3f sent by the clients per admission; %d grants, %d units returned",
		m.name(), m.steady.pct, m.steady.got, m.demand, calls, failed, m.commands, m.sent, m.grants, m.returned)
	if failed > calls/100 {
		t.Errorf("%d of %d calls failed", failed, calls)
	}
}

func fairShares(res *fleetResult, procs int, from, bin int64) fairness {
	bins := int((res.end - from) / bin)
	counts := make([][]int, bins)
	for i := range counts {
		counts[i] = make([]int, procs)
	}
	f := fairness{bins: bins, totals: make([]int, procs)}
	for w := range procs {
		for _, a := range res.adm[w] {
			if a.key != 0 || a.r < from || a.r >= res.end {
				continue
			}
			f.totals[w]++
			if i := int((a.r - from) / bin); i < bins {
				counts[i][w]++
			}
		}
	}
	var ratios []float64
	for _, c := range counts {
		lo, hi := slices.Min(c), slices.Max(c)
		switch {
		case hi == 0:
			continue // nothing admitted: no share to compare
		case lo == 0:
			f.zeros++
			ratios = append(ratios, math.Inf(1))
		default:
			ratios = append(ratios, float64(hi)/float64(lo))
		}
	}
	slices.Sort(ratios)
	if len(ratios) > 0 {
		f.median = ratios[len(ratios)/2]
	}
	return f
}

// instantBurst is the instant burst of one mode, over its trials.
type instantBurst struct {
	alg      core.Algorithm
	mode     string
	routines int  // each calls instantCalls / routines times
	warm     bool // the key warmed first
	admitted []int
	took     []time.Duration
}

func (b *instantBurst) shape() string {
	if b.warm {
		return fmt.Sprintf("warm%d", b.routines)
	}
	return fmt.Sprintf("cold%d", b.routines)
}

func (b *instantBurst) measure(t *testing.T, c *redis.Client, mode matrixMode, prefix string, trial int) {
	t.Helper()
	l := core.Limit{Events: 100, Period: time.Second, Burst: 100, Algorithm: b.alg}
	opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithTimeout(5 * time.Second)}
	if mode.quota {
		opts = append(opts, redisstore.WithLocalQuota(redisstore.LocalQuota{Length: mode.length}))
	}
	lim, err := redisstore.New(c, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if b.warm {
		for range 16 {
			if _, err := lim.Allow(context.Background(), "burst", 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := lim.Health()
	var calls sync.WaitGroup
	var mu sync.Mutex
	n, errs := 0, 0
	start := make(chan struct{})
	for range b.routines {
		calls.Go(func() {
			<-start
			for range instantCalls / b.routines {
				d, err := lim.Allow(context.Background(), "burst", 1)
				mu.Lock()
				switch {
				case err != nil:
					errs++
				case d.Allowed:
					n++
				}
				mu.Unlock()
			}
		})
	}
	begin := time.Now()
	close(start)
	calls.Wait()
	took := time.Since(begin)
	h := lim.Health()
	b.admitted, b.took = append(b.admitted, n), append(b.took, took)
	// The calls spread over took: the bucket refills meanwhile, and a
	// lease's units may have been charged up to its length before.
	bound := float64(l.Burst) + rateOf(l)*float64(took+mode.length)
	t.Logf("trial %d: %d of %d admitted in %v (%d failed); bound %.1f; %d grants, %d decided from a lease, %d returned",
		trial, n, instantCalls, took, errs, bound, h.Leases-before.Leases, h.LeaseDecisions-before.LeaseDecisions, h.Returned-before.Returned)
	if errs > 0 {
		t.Errorf("trial %d: %d calls failed", trial, errs)
	}
	if float64(n) > bound {
		t.Errorf("trial %d: %d admitted, over the bound %.1f", trial, n, bound)
	}
	if mode.quota && n < l.Burst {
		t.Errorf("trial %d: %d admitted of an instant burst of %d: want the whole burst", trial, n, l.Burst)
	}
}

// matrixTable: the shape first (admitted % of the limit per mode),
// then each cell's details, then the instant bursts.
func matrixTable(cells []matrixCell, bursts []instantBurst) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Admitted after the first second, %% of the limit (200/s); * = local quota under the floor (95 %%; 90 %% under -race), ? = not judged (the machine too busy to make the demand)\n")
	fmt.Fprintf(&sb, "%-6s %5s %5s", "alg", "burst", "procs")
	for _, m := range matrixModes {
		fmt.Fprintf(&sb, " %11s", m.name)
	}
	sb.WriteString("\n")
	for i := 0; i < len(cells); {
		c := cells[i]
		fmt.Fprintf(&sb, "%-6s %5d %5d", matrixAlg(c.alg), c.burst, c.procs)
		for _, m := range matrixModes {
			if i < len(cells) && cells[i].alg == c.alg && cells[i].burst == c.burst && cells[i].procs == c.procs && cells[i].mode == m.name {
				mark := " "
				switch v := cells[i].verdict; {
				case strings.HasPrefix(v, "under "):
					mark = "*"
				case v == "not judged":
					mark = "?"
				}
				fmt.Fprintf(&sb, " %8.1f %%%s", cells[i].steady.pct, mark)
				i++
			} else {
				fmt.Fprintf(&sb, " %11s", "-")
			}
		}
		sb.WriteString("\n")
	}
	fmt.Fprintf(&sb, "\nEach cell: admitted after the first second; demand (calls a second over the rate); Redis commands (total_commands_processed) and the commands clients sent (FCALL, EVALSHA: round trips) per admission, whole run; grants and units returned; windows over the bound at 100 ms and 1 s; the longest pause between a worker's ticks after the first second (100 ms when none stalled; longer: the machine was busy); fairness on 4 processes: per 100 ms after the first second, the most a worker admitted over the least, its median over the intervals (intervals where a worker admitted none / intervals), the same per lease length L (exact mode: 100 ms), [each worker's admissions]\n")
	fmt.Fprintf(&sb, "%-36s %8s %6s %8s %8s %8s %7s %8s %12s %12s %8s  %s\n", "cell", "adm %", "adm", "demand", "cmd/adm", "sent/adm", "grants", "returned", "over@100ms", "over@1s", "stall", "fair")
	for _, c := range cells {
		fair := "-"
		if c.procs > 1 {
			fair = fmt.Sprintf("%.2f (%d/%d), per L %.2f (%d/%d) %v", c.fair.median, c.fair.zeros, c.fair.bins, c.fairL.median, c.fairL.zeros, c.fairL.bins, c.fair.totals)
		}
		fmt.Fprintf(&sb, "%-36s %7.1f%% %6d %7.0f× %8.3f %8.3f %7d %8d %12s %12s %8v  %s\n", c.name(), c.steady.pct, c.steady.got, c.demand,
			c.commands, c.sent, c.grants, c.returned, fmt.Sprintf("%d/%d", c.over100, c.win100), fmt.Sprintf("%d/%d", c.over1s, c.win1s),
			time.Duration(c.steady.gap).Round(time.Millisecond), fair)
	}
	fmt.Fprintf(&sb, "\nInstant burst: one instance, 100/s burst 100, %d calls at once (cold300: 300 goroutines, cold10: 10 × 30 calls, on a cold key; warm300: 300 goroutines on a key warmed at 100/s and idle for 50 ms); admitted per trial (want 100) and the time the calls took\n", instantCalls)
	for _, b := range bursts {
		var took []string
		for _, d := range b.took {
			took = append(took, d.Round(100*time.Microsecond).String())
		}
		fmt.Fprintf(&sb, "%-6s %-8s %-11s admitted %v in %s\n", matrixAlg(b.alg), b.shape(), b.mode, b.admitted, strings.Join(took, " "))
	}
	return sb.String()
}
