package breaker

import (
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Rule says when a breaker opens and for how long; redisstore's
// BreakerConfig documents the fields for users and converts to it. The
// owning package fills in the defaults ([Rule.Or] with [Defaults]) and
// validates it first ([Rule.Problems]), with messages that name its own
// options.
type Rule struct {
	// Window is the span of the clock over which a Closed breaker counts
	// outcomes, cut into [Buckets] buckets; at least [MinWindow].
	Window time.Duration
	// MinCalls is how many outcomes the window must hold before their
	// failure rate opens the breaker; from 1 to [MaxMinCalls].
	MinCalls int
	// FailureRate is the share of failures, in percent (1 to 100), over
	// the window that opens the breaker once it holds MinCalls outcomes.
	FailureRate int
	// OpenFor is the first open period, > 0; each failed probe doubles it.
	OpenFor time.Duration
	// MaxOpenFor caps the doubled period, >= OpenFor.
	MaxOpenFor time.Duration
}

// The defaults of a Rule; redisstore's BreakerConfig gives the reasons for
// each.
const (
	DefaultWindow      = 10 * time.Second
	DefaultMinCalls    = 20
	DefaultFailureRate = 50
	DefaultOpenFor     = time.Second
	DefaultMaxOpenFor  = 4 * time.Second
)

// Defaults is the rule of a breaker configured with nothing but the
// defaults.
var Defaults = Rule{
	Window:      DefaultWindow,
	MinCalls:    DefaultMinCalls,
	FailureRate: DefaultFailureRate,
	OpenFor:     DefaultOpenFor,
	MaxOpenFor:  DefaultMaxOpenFor,
}

// Limits of a Rule.
const (
	// MinWindow is the shortest window: buckets of a millisecond.
	MinWindow = Buckets * time.Millisecond
	// MaxMinCalls is the largest MinCalls.
	MaxMinCalls = 1 << 30
)

// Or returns r with its zero fields taken from d, but for a zero
// MaxOpenFor, which becomes d's or the open period, whichever is longer.
func (r Rule) Or(d Rule) Rule {
	if r.Window == 0 {
		r.Window = d.Window
	}
	if r.MinCalls == 0 {
		r.MinCalls = d.MinCalls
	}
	if r.FailureRate == 0 {
		r.FailureRate = d.FailureRate
	}
	if r.OpenFor == 0 {
		r.OpenFor = d.OpenFor
	}
	if r.MaxOpenFor == 0 {
		r.MaxOpenFor = max(d.MaxOpenFor, r.OpenFor)
	}
	return r
}

// Problems returns what is wrong with r, each phrased as what to change,
// naming r's fields, without a package's prefix; none if r is valid.
func (r Rule) Problems() []string {
	var p []string
	if r.Window < MinWindow {
		p = append(p, fmt.Sprintf("Window must be at least %v, got %v", MinWindow, r.Window))
	}
	if r.MinCalls < 1 || r.MinCalls > MaxMinCalls {
		p = append(p, fmt.Sprintf("MinCalls must be from 1 to %d, got %d", MaxMinCalls, r.MinCalls))
	}
	if r.FailureRate < 1 || r.FailureRate > 100 {
		p = append(p, fmt.Sprintf("FailureRate must be from 1 to 100 (percent), got %d", r.FailureRate))
	}
	if r.OpenFor <= 0 {
		p = append(p, fmt.Sprintf("OpenFor must be > 0, got %v", r.OpenFor))
	} else if r.MaxOpenFor < r.OpenFor {
		p = append(p, fmt.Sprintf("MaxOpenFor %v is shorter than OpenFor %v; raise it, or make them equal for no doubling", r.MaxOpenFor, r.OpenFor))
	}
	return p
}

// Config is what [New] builds a Breaker from.
type Config struct {
	Rule
	// Clock times the window and the open periods; nil is an error.
	Clock core.Clock
	// OnFailure, if set, is told of every failure reported, with its error,
	// before any change of state it causes.
	OnFailure func(err error)
	// OnStateChange, if set, is told of every change of state. Open to
	// HalfOpen is reported when a caller takes the probe, not when the
	// period ends.
	OnStateChange func(from, to State)
}
