package fallback

import (
	"fmt"

	"github.com/floodgate/floodgate/internal/breaker"
)

// State is the circuit breaker's state: Closed, Open or HalfOpen. Its
// String method gives "closed", "open" or "half-open", fit for a metric
// label or a log.
type State = breaker.State

const (
	// Closed: the primary decides; its failures are counted.
	Closed = breaker.Closed
	// Open: the local limiter decides and the primary is not called, until
	// the open period ends.
	Open = breaker.Open
	// HalfOpen: the open period has ended. The next request probes the
	// primary; while the probe is out, the others are decided locally.
	HalfOpen = breaker.HalfOpen
)

// Side names the limiter that decided.
type Side uint8

const (
	// Primary: the limiter being protected, normally backed by a store
	// shared by the fleet.
	Primary Side = iota
	// Local: the in-process limiter used while the primary fails.
	Local
)

// String returns the side's name.
func (s Side) String() string {
	switch s {
	case Primary:
		return "primary"
	case Local:
		return "local"
	}
	return fmt.Sprintf("Side(%d)", int(s))
}

// EventKind says what an [Event] reports.
type EventKind uint8

const (
	// EventDecided: Side decided an Allow.
	EventDecided EventKind = iota
	// EventPrimaryFailed: a call to the primary (Allow or Refund) failed
	// with a store error or the timeout, Err says how, and the call was
	// answered locally instead. The breaker counted it.
	EventPrimaryFailed
	// EventStateChanged: the breaker went From one state To another.
	EventStateChanged
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventDecided:
		return "decided"
	case EventPrimaryFailed:
		return "primary-failed"
	case EventStateChanged:
		return "state-changed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is what an observer set by [WithObserver] is told. Only the fields
// its Kind names are set.
type Event struct {
	Kind     EventKind
	Side     Side  // EventDecided: who decided
	Err      error // EventPrimaryFailed: the primary's error; its text may hold internal details
	From, To State // EventStateChanged
}

// Stats counts what a [Limiter] did since it was made. The counters are
// read one by one, not as one snapshot, so under load they may be a few
// operations apart.
type Stats struct {
	// PrimaryDecisions and LocalDecisions count Allow calls that returned
	// a decision, by the side that made it.
	PrimaryDecisions uint64
	LocalDecisions   uint64
	// PrimaryFailures counts calls to the primary (Allow and Refund) that
	// failed with a store error or the timeout.
	PrimaryFailures uint64
	// Opens counts how often the breaker opened, from Closed or after a
	// failed probe.
	Opens uint64
}
