package debugpage

import (
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/overload"
)

// Option configures a [Page] made by [New].
type Option func(*options)

// The defaults; the option that sets each says why it was chosen.
const (
	DefaultWindow = 5 * time.Minute
	DefaultTop    = 10
)

// minCapacity is how many keys each top-k sketch monitors at least; with
// more keys shown, 32 for each (see WithTop).
const minCapacity = 512

// shards is how many independently locked parts a Page's counters are
// split into, by key hash.
const shards = 8

type options struct {
	clock    core.Clock
	window   time.Duration
	top      int
	redact   func(string) string
	custom   bool // redact was set by WithKeyRedaction
	policies []policySource
	health   []healthSource
	guards   []guardSource
	names    map[string]bool
	errs     option.Errors
}

type policySource struct {
	name   string
	limits func() []core.Limit
}

type healthSource struct {
	name   string
	health core.HealthReporter
}

type guardSource struct {
	name  string
	guard overload.Guard
}

// name records a section's name, which must be non-empty and unique among
// the page's policies and health sections so that readers can tell them
// apart.
func (o *options) name(opt, section, name string) bool {
	if !o.errs.Require(name != "", "%s(\"\", ...): the name must not be empty; it titles the section", opt) {
		return false
	}
	if !o.errs.Require(!o.names[section+"\x00"+name], "%s(%q, ...) names a section already; give each its own name", opt, name) {
		return false
	}
	o.names[section+"\x00"+name] = true
	return true
}

// WithLimiter lists the limits lim enforces under the given name: every
// layer of a stack (a core.PolicyLister such as core.Stack or a
// redisstore stack), or the one limit of a limiter with a
// Limit() core.Limit method (core.Keyed, core.Adaptive, redisstore's
// Limiter), read each time the page or its JSON is served, so that a
// limit changed at run time (core.Keyed.SetLimit) shows its new value.
// Other limiters are refused at construction.
func WithLimiter(name string, lim core.Limiter) Option {
	return func(o *options) {
		if !o.name("WithLimiter", "policies", name) {
			return
		}
		switch l := lim.(type) {
		case core.PolicyLister:
			o.policies = append(o.policies, policySource{name, l.Policies})
		case interface{ Limit() core.Limit }:
			o.policies = append(o.policies, policySource{name, func() []core.Limit { return []core.Limit{l.Limit()} }})
		default:
			o.errs.Require(false, "WithLimiter(%q, %T): the limiter neither lists its policies (core.PolicyLister) nor has a Limit() core.Limit method; name the limiter it wraps", name, lim)
		}
	}
}

// WithHealth shows, under the given name, the health of a limiter's
// shared store, read from r (a redisstore Limiter, Stack or Dynamic: see
// core.HealthReporter): its circuit breaker's state and its counters.
// r.Health is called each time the page or its JSON is served.
func WithHealth(name string, r core.HealthReporter) Option {
	return func(o *options) {
		if o.name("WithHealth", "health", name) && o.errs.Require(r != nil, "WithHealth(%q, nil): pass the limiter whose store to show, such as a redisstore.Limiter", name) {
			o.health = append(o.health, healthSource{name, r})
		}
	}
}

// WithGuard shows, under the given name, the state of an overload guard
// (overload.Adaptive, overload.BBR): the bound it puts on requests in
// flight now, the requests in flight and the latency it judges the
// service by, read each time the page or its JSON is served. Its sheds
// count in the totals by outcome ("shed"), and by priority; sheds count
// there whether or not their guard is registered.
func WithGuard(name string, g overload.Guard) Option {
	return func(o *options) {
		if o.name("WithGuard", "guards", name) && o.errs.Require(g != nil, "WithGuard(%q, nil): pass the overload guard to show, such as an overload.Adaptive", name) {
			o.guards = append(o.guards, guardSource{name, g})
		}
	}
}

// WithWindow sets how far back the per-second counts go (default
// [DefaultWindow], 5 minutes): a whole number of seconds from 10 s to 1 h.
// Each second costs 36 bytes in each of the page's 8 shards, 86 KB for the
// default.
func WithWindow(d time.Duration) Option {
	return func(o *options) {
		if o.errs.Require(d >= 10*time.Second && d <= time.Hour && d%time.Second == 0,
			"WithWindow(%v): the window must be a whole number of seconds from 10s to 1h", d) {
			o.window = d
		}
	}
}

// WithTop sets how many keys each list (hottest keys, most refused keys)
// shows (default [DefaultTop], 10), from 1 to 100. Each list comes from a
// Space-Saving top-k sketch that monitors 512 keys, or 32 for each key
// shown when that is more: n/8 counters in each of 8 shards. A listed
// count overestimates a key's true count by at most the shard's events
// divided by its counters, and shows that bound.
func WithTop(n int) Option {
	return func(o *options) {
		if o.errs.Require(n >= 1 && n <= 100, "WithTop(%d): the number of keys shown must be from 1 to 100", n) {
			o.top = n
		}
	}
}

// WithKeyRedaction sets the function that turns a key into what the page
// shows (default [Redact], a short keyed hash, since keys are often
// personal data: IP addresses, user or API-key identifiers). To show keys
// as they are, pass a function that returns its argument; do so only where
// whoever can reach the page may see them. To match the page with logs,
// give slogobs.WithKeyRedaction the same function.
func WithKeyRedaction(f func(key string) string) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithKeyRedaction(nil); leave the option out for Redact, or pass func(k string) string { return k } to show keys as they are") {
			o.redact, o.custom = f, true
		}
	}
}

// withClock sets the clock the per-second counts read (default
// core.SystemClock); tests reach it through export_test.go.
func withClock(c core.Clock) Option {
	return func(o *options) { o.clock = c }
}

func buildOptions(opts []Option) (options, error) {
	o := options{
		clock:  core.SystemClock,
		window: DefaultWindow,
		top:    DefaultTop,
		redact: Redact,
		names:  map[string]bool{},
		errs:   option.Errors{Prefix: "debugpage: "},
	}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return o, err
	}
	return o, o.errs.Err()
}
