// Command overload drives a real loopback server past its capacity, first
// with no protection and then behind overload.Adaptive, and prints what
// each served in time.
//
//	go run ./examples/overload
//	go run ./examples/overload -load 5 -run 5s
//
// The service stands for a dependency of fixed concurrency: a pool of 16
// connections at 20 ms a query, 800 requests a second. Requests arrive
// open-loop (Poisson: a slow server does not slow its users down), a fifth
// of them Critical, half Normal and the rest Sheddable, their priority in
// a header that a middleware puts in the request's context
// (overload.NewContext) ahead of floodgate's. A request is served in time
// when it is answered 200 within the SLO, five times the unloaded latency.
//
// With no protection the queue grows as long as the overload lasts, every
// request waits longer than the one before, and almost nothing is served
// in time. Behind overload.Adaptive (its defaults: nothing to tune) the
// limit settles near the service's capacity, and what the service cannot
// serve is answered 503 with a Retry-After at once, Sheddable first.
//
// Everything runs on 127.0.0.1 and stops by itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

// config is one run's service and load.
type config struct {
	workers int           // the service's concurrency
	work    time.Duration // its time a request
	load    float64       // the offered load, in multiples of the capacity
	run     time.Duration // each phase's length
	seed    uint64        // the arrivals' seed
}

// capacity is the requests a second the service can serve.
func (c config) capacity() float64 { return float64(c.workers) / c.work.Seconds() }

// slo is the latency within which an answer counts as served in time.
func (c config) slo() time.Duration { return 5 * c.work }

func main() {
	cfg := config{workers: 16, work: 20 * time.Millisecond, seed: 1}
	flag.Float64Var(&cfg.load, "load", 2, "offered load, in multiples of the service's capacity")
	flag.DurationVar(&cfg.run, "run", 3*time.Second, "length of each phase")
	flag.Parse()
	if cfg.load <= 0 || cfg.run <= 0 {
		fmt.Fprintln(os.Stderr, "overload: -load and -run must be > 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "overload:", err)
		os.Exit(1)
	}
}

// run drives the service with no protection, then behind
// overload.Adaptive, printing a row for each; it returns the rows.
func run(ctx context.Context, w io.Writer, cfg config) ([]row, error) {
	fmt.Fprintf(w, "service: %d workers at %v a request, %.0f requests a second; offered %.0f a second (%g×) for %v a phase; in time: 200 within %v\n\n",
		cfg.workers, cfg.work, cfg.capacity(), cfg.load*cfg.capacity(), cfg.load, cfg.run, cfg.slo())
	var rows []row
	for _, p := range phases {
		r, err := runPhase(ctx, cfg, p)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", p.name, err)
		}
		rows = append(rows, r)
	}
	printRows(w, cfg, rows)
	return rows, nil
}
