package overloadsim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seedsFlag = flag.String("overloadsim.seeds", "", "run overload.Adaptive alone over these seeds (a list or ranges: 1-8,12) on the table's servers, one line of figures and missed goals per seed and server")
	seedsJobs = flag.Int("overloadsim.jobs", 2, "with -overloadsim.seeds, how many runs at once")
)

// parseSeeds reads a list of seeds and ranges, as "1-8,12".
func parseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for _, f := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(f), "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed", f)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range of seeds", f)
			}
		}
		for x := a; x <= b; x++ {
			seeds = append(seeds, x)
		}
	}
	return seeds, nil
}

// Misses lists the goals a row misses, by name. A server of
// shared cores is judged on its steady figures and the calm one only:
// the convergence, priority and drift goals are not met there by any
// anchor (docs/overload.md says why), so listing them on every seed
// would hide what changes.
func Misses(r Row, shared bool) []string {
	var m []string
	for i, s := range r.Steady {
		if s.Goodput < GoodputGoal {
			m = append(m, fmt.Sprintf("%gx goodput", Loads[i]))
		}
		if Loads[i] == 5 && s.P99 > P99Goal {
			m = append(m, "5x p99")
		}
	}
	if r.Bursts.RefusedCalm > 0.001 {
		m = append(m, "calm refused")
	}
	if shared {
		return m
	}
	for _, c := range []struct {
		name string
		c    Convergence
		goal time.Duration
	}{{"step", r.Step, 500 * time.Millisecond}, {"halved", r.Halve, 2 * time.Second}, {"back", r.Recover, 5 * time.Second}} {
		if !c.c.OK || c.c.After > c.goal {
			m = append(m, c.name)
		}
	}
	if p := r.Priorities; p.Critical < 0.999 || p.Inversions > 0.001 || !(p.Jain >= 0.95) {
		m = append(m, "priorities")
	}
	if d := r.Drift; d != nil && d.Within < 1 {
		m = append(m, "drift")
	}
	return m
}

// seedLine is one row in one line: the figures and the goals missed.
func seedLine(seed uint64, r Row, shared bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %2d  goodput", seed)
	for _, s := range r.Steady {
		fmt.Fprintf(&b, " %s", pct(s.Goodput))
	}
	fmt.Fprintf(&b, "  p99")
	for _, s := range r.Steady {
		fmt.Fprintf(&b, " %s", times(s.P99))
	}
	fmt.Fprintf(&b, "  cold %s %s", pct(r.Cold[0].Goodput), pct(r.Cold[1].Goodput))
	fmt.Fprintf(&b, "  step %s halved %s back %s  calm %s", conv(r.Step), conv(r.Halve), conv(r.Recover), pct2(r.Bursts.RefusedCalm))
	p := r.Priorities
	fmt.Fprintf(&b, "  crit %s inv %s Jain %s", pct2(p.Critical), pct2(p.Inversions), index(p.Jain))
	if d := r.Drift; d != nil {
		fmt.Fprintf(&b, "  drift %s (%s, %s-%s)", pct(d.Within), times(d.Mean), times(d.Min), times(d.Max))
	}
	m := Misses(r, shared)
	if len(m) == 0 {
		fmt.Fprintf(&b, "  misses: none")
	} else {
		fmt.Fprintf(&b, "  misses: %s", strings.Join(m, ", "))
	}
	return b.String()
}

// TestSeeds runs overload.Adaptive alone over many seeds when asked
// (-overloadsim.seeds 1-8): every scenario of the table, on the FIFO
// server and the shared cores of -overloadsim.cores, one line a seed,
// so that a change to the estimator is judged on more than one seed.
func TestSeeds(t *testing.T) {
	if *seedsFlag == "" {
		t.Skip("opt-in: go test ./internal/overloadsim -run TestSeeds -overloadsim.seeds 1-8")
	}
	seeds, err := parseSeeds(*seedsFlag)
	if err != nil {
		t.Fatalf("-overloadsim.seeds: %v", err)
	}
	type server struct {
		name string
		base Config
	}
	var servers []server
	if *tableFIFO {
		servers = append(servers, server{"FIFO, 50 workers", Config{Sigma: *tableSigma}})
	}
	for _, f := range strings.FieldsFunc(*tableCores, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("-overloadsim.cores: %q is not a number of cores", f)
		}
		servers = append(servers, server{fmt.Sprintf("%d shared cores", n), Config{Sigma: *tableSigma, Workers: n, Shared: true}})
	}
	lines := make([][]string, len(servers))
	var failed error
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *seedsJobs))
	for i, sv := range servers {
		lines[i] = make([]string, len(seeds))
		for k, seed := range seeds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				base := sv.base
				base.Seed = seed
				a := Anchor{Name: "floodgate adaptive", New: floodgateAdaptive()}
				row, err := Measure(base.withDefaults(), a, *tableLong)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = err
					return
				}
				lines[i][k] = seedLine(seed, row, sv.base.Shared)
			}()
		}
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# go test ./internal/overloadsim -count=1 -timeout 60m -run TestSeeds -overloadsim.seeds %s -overloadsim.drift %v -overloadsim.sigma %g -overloadsim.fifo=%v -overloadsim.cores '%s'\n",
		*seedsFlag, *tableLong, *tableSigma, *tableFIFO, *tableCores)
	for i, sv := range servers {
		fmt.Fprintf(&buf, "%s:\n", sv.name)
		for _, l := range lines[i] {
			fmt.Fprintln(&buf, l)
		}
	}
	fmt.Print(buf.String())
	if *tableOut != "" {
		if err := os.WriteFile(*tableOut, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
