// Package overloadsim is the deterministic simulation that issue 33 judges
// overload protection by: a server of N workers behind a FIFO queue, on a
// virtual clock, offered more than it can serve, with each anchor's rule
// for shedding written out beside a slot for floodgate's own.
//
// The server: N workers (Config.Workers) serve one request each, for a
// lognormal service time of mean Config.MeanService; a request admitted
// while every worker is busy waits in a FIFO queue, so latency grows with
// the queue. Its capacity C is N / MeanService requests a second. A
// request answered within Config.SLO (5 × the mean service time) counts
// as goodput; one answered later is dropped, as far as its controller is
// told. Requests arrive open-loop, as a Poisson stream whose rate follows
// a schedule in multiples of C (Config.Load), carry a priority and a
// tenant drawn from their weights, and workers can be removed live
// (Config.Resizes). With Config.Shared the N workers are instead N
// cores shared equally by every request in flight (processor sharing, as
// goroutines share GOMAXPROCS): no queue, but beyond N in flight every
// request is slowed alike, as on a small CPU-bound server. Not modelled: cancellation (the server serves every
// admitted request to the end, however late), retries, clients' timeouts.
//
// A Controller decides each admission (Admit) and hears of each end
// (Done, with the latency and whether it was dropped). Anchors lists the
// anchors: no protection, a static limit, Netflix's Gradient2 and Vegas,
// Envoy's gradient controller, aegis's BBR (with the server's busy share
// as its CPU) and failsafe-go's adaptive limiter, each from its source
// with its defaults. Bridge drives any core.Limiter as a Controller on a
// fake clock, which is how floodgate's limiters take the slot.
//
// Everything runs on one goroutine in virtual time, with seeded draws in
// separate streams, so that every controller sees the same requests and
// the same Config gives the same Result, bit for bit. The scenarios of
// the issue (Overload, StepUp, Halve, Recover, Drift, Bursts, Priorities)
// each return their figures; Measure runs them all for an anchor and
// WriteTable prints the results file's tables. docs/overload.md describes
// the simulation and its figures.
//
//	r, err := overloadsim.Run(overloadsim.Config{
//		Seed: 1, Duration: 10 * time.Second,
//		Load: []overloadsim.Step{{At: 0, Load: 0.5}, {At: 5 * time.Second, Load: 2}},
//	}, overloadsim.NewGradient2)
//	fmt.Println(r.Goodput(7*time.Second, 10*time.Second)) // share of C answered in time
package overloadsim
