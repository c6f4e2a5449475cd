// Package fleetsim simulates a rate limit shared by a fleet of instances
// in several regions, to compare ways of deciding it: one global store,
// local quota leases (one level from the global store, or two levels
// through a grantor per region), and gubernator-style asynchronous hits.
// docs/multi-region.md holds the design it models and the table it
// produces.
//
// It is a discrete-event simulation on a virtual clock: messages take a
// fixed one-way delay inside a region (Config.Local) and between regions
// (Config.Remote), requests arrive as seeded Poisson streams, and nothing
// reads the wall clock, sleeps or starts a goroutine. The same Config
// gives the same Result, to the nanosecond. Not modelled: packet loss,
// clock drift between machines, queueing or service time in a store,
// time spent deciding in process (a local decision takes 0).
//
// A lease strategy follows the design of redisstore's local quota
// leases: a holder asks its grantor for s units; the grantor charges
// k = min(s, available) to its state when the ask arrives; the holder
// spends them, one per admitted request, from the reply until they run
// out or L after it sent the ask (no later than the window's end, for a
// fixed window), then returns the rest. Result.Admissions logs, for each
// admitted request, when it was let through and when its unit was charged
// to the global state, so the tests check the documented bound from the
// trace of charges, exactly.
//
//	r, err := fleetsim.Run(fleetsim.ReportConfig(fleetsim.RegionalLeases, fleetsim.GCRA))
//	if err != nil { ... }
//	ws := r.Windows(time.Second) // admissions per second, with their bounds
package fleetsim
