// Command policies drives the same synthetic traffic through every core
// algorithm and charts what each admits.
//
//	go run ./examples/policies                  # charts into examples/policies/charts
//	go run ./examples/policies -out /tmp/charts # or anywhere else
//
// Every run uses one key under one policy (20 requests a second, burst 10)
// on a fake clock (coretest.Clock): no real time passes, and the same seed
// gives the same traffic, the same decisions and the same charts. The
// traffic shapes are steady traffic below and above the rate, on/off
// bursts, bursts on either side of a window boundary (where the fixed
// window admits twice its quota within one period), a cold start (idle,
// then a steady load: where WarmUp ramps up) and a mix of cheap and costly
// requests (where the token bucket's overdraft lets the costly ones
// through).
//
// It writes one chart per algorithm, admitted and refused requests per
// 100 ms for each shape (and, for the shaper, each request's delay), and
// a comparison chart of every algorithm on the boundary and cold-start
// traffic, then prints a summary as a markdown table.
//
// To add an algorithm, add an entry to policies in sim.go.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// defaultOut is where charts go, relative to the module root.
const defaultOut = "examples/policies/charts"

func main() {
	out := flag.String("out", "", "directory to write the charts to (default "+defaultOut+" under the module root)")
	seed := flag.Uint64("seed", 1, "seed of the synthetic traffic")
	flag.Parse()

	dir := *out
	if dir == "" {
		dir = defaultDir()
	}
	if err := run(os.Stdout, dir, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "policies:", err)
		os.Exit(1)
	}
}

// defaultDir is defaultOut under the module root, found by walking up from
// the working directory to go.mod, so that `go run .` from this folder
// writes to the same place as `go run ./examples/policies` from the root.
// Outside the module it is defaultOut under the working directory.
func defaultDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return defaultOut
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, defaultOut)
		}
		if filepath.Dir(d) == d {
			return defaultOut
		}
	}
}

// run simulates, writes the charts into dir and prints the summary.
func run(out io.Writer, dir string, seed uint64) error {
	results, err := simulate(seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCharts(dir, results); err != nil {
		return errors.Join(errors.New("writing charts"), err)
	}
	fmt.Fprintf(out, "policy %s (%d per %v, burst %d), seed %d; charts in %s\n\n", limit.Name, limit.Events, limit.Period, limit.EffectiveBurst(), seed, dir)
	summary(out, results)
	return nil
}

// summary prints one row per policy and shape, as a markdown table. "max
// cost" is the most cost admitted in any period-long sliding window,
// counted when each request proceeds (after its delay, for the shaper);
// delays are shown only for policies that made a request wait.
func summary(out io.Writer, results []result) {
	rows := [][]string{{"algorithm", "traffic", "requests", "admitted", "refused", "cost admitted", "max cost/" + limit.Period.String(), "mean delay", "max delay"}}
	for i := range results {
		r := &results[i]
		s := r.stats()
		mean, most := "-", "-"
		if s.delayed > 0 {
			mean, most = s.meanDelay.Round(time.Millisecond/10).String(), s.maxDelay.Round(time.Millisecond/10).String()
		}
		rows = append(rows, []string{r.policy.name, r.shape.name,
			fmt.Sprint(s.requests), fmt.Sprint(s.admitted), fmt.Sprint(s.refused), fmt.Sprint(s.units), fmt.Sprint(s.maxPerPeriod), mean, most})
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for j, cell := range row {
			widths[j] = max(widths[j], len(cell))
		}
	}
	line := func(cells []string) {
		for j, cell := range cells {
			if j < 2 {
				fmt.Fprintf(out, "| %-*s ", widths[j], cell)
			} else {
				fmt.Fprintf(out, "| %*s ", widths[j], cell)
			}
		}
		fmt.Fprintln(out, "|")
	}
	line(rows[0])
	rule := make([]string, len(widths))
	for j, w := range widths {
		rule[j] = strings.Repeat("-", w)
		if j >= 2 {
			rule[j] = rule[j][1:] + ":"
		}
	}
	line(rule)
	for _, row := range rows[1:] {
		line(row)
	}
}
