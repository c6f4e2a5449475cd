package core

// Health is how a limiter's shared store is doing, as the limiter reports
// it ([HealthReporter]): the state of the circuit breaker that guards the
// store, and counters since the limiter was made. promobs and debugpage
// show it (their WithHealth options). The counters are read one by one, so
// under load they may be a few calls apart.
type Health struct {
	// Breaker is the circuit breaker's state: "closed" while calls go to
	// the store, "open" while they do not, "half-open" once the open period
	// has ended and the next call probes the store. A limiter without a
	// breaker reports "closed".
	Breaker string
	// StoreDecisions counts the decisions the store made, one per call
	// that reached it (refusals a limiter answers from memory, as
	// redisstore's deny cache does, are not counted); LocalDecisions counts
	// those made in memory, under the same policy, while the store failed
	// (a redisstore limiter made WithFallback).
	StoreDecisions, LocalDecisions uint64
	// Failures counts the calls to the store (Allow and Refund) that
	// failed, not those an open breaker kept from it.
	Failures uint64
	// Opens counts how often the breaker opened, from closed or after a
	// failed probe.
	Opens uint64
	// LeaseDecisions counts the decisions made from local quota leases
	// (redisstore's WithLocalQuota), the call that took a lease included,
	// Leases the leases the store granted (each a round trip), Returned the
	// units the leases gave back unspent, and Returns the round trips that
	// gave them back.
	LeaseDecisions, Leases, Returned, Returns uint64
}

// HealthReporter is a limiter that reports its store's health, as
// redisstore's limiters do. Health must be cheap and safe for concurrent
// use: metrics read it at every scrape.
type HealthReporter interface {
	Health() Health
}
