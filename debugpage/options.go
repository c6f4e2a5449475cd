package debugpage

import (
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a [Page] made by [New].
type Option func(*options)

// The defaults; the option that sets each says why it was chosen.
const (
	DefaultWindow   = 5 * time.Minute
	DefaultCapacity = 512
	DefaultTop      = 10
)

// shards is how many independently locked parts a Page's counters are
// split into, by key hash.
const shards = 8

type options struct {
	clock    core.Clock
	window   time.Duration
	capacity int
	top      int
	raw      bool
	policies []policySource
	health   []healthSource
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

// WithPolicies lists the limits returned by policies under the given name.
// The function is called each time the page or its JSON is served, so a
// limit changed at run time (core.Keyed.SetLimit) shows its new value. It
// must be safe for concurrent use and must not modify what it returns.
func WithPolicies(name string, policies func() []core.Limit) Option {
	return func(o *options) {
		if o.name("WithPolicies", "policies", name) && o.errs.Require(policies != nil, "WithPolicies(%q, nil): pass a function returning the limits", name) {
			o.policies = append(o.policies, policySource{name, policies})
		}
	}
}

// WithLimiter lists the limits lim enforces under the given name: every
// layer of a stack (a core.PolicyLister such as core.Stack or a
// redisstore stack), or the one limit of a limiter with a
// Limit() core.Limit method (core.Keyed, core.Adaptive, redisstore's
// Limiter). Other limiters are refused at construction; use
// [WithPolicies] for them.
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
			o.errs.Require(false, "WithLimiter(%q, %T): the limiter neither lists its policies (core.PolicyLister) nor has a Limit() core.Limit method; use WithPolicies", name, lim)
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

// WithCapacity sets how many keys each of the two top-k sketches (hottest
// keys, most refused keys) monitors: n/8 counters in each of 8 shards
// (default [DefaultCapacity], 512, so 64 per shard). A listed count
// overestimates a key's true count by at most the shard's events divided
// by n/8, and shows that bound; more counters make it tighter and cost
// about 50 bytes each. n must be a multiple of 8 from 64 to 65536.
func WithCapacity(n int) Option {
	return func(o *options) {
		if o.errs.Require(n >= 64 && n <= 1<<16 && n%shards == 0,
			"WithCapacity(%d): the capacity must be a multiple of 8 from 64 to 65536", n) {
			o.capacity = n
		}
	}
}

// WithTop sets how many keys each list shows (default [DefaultTop], 10),
// from 1 to 100. It must not exceed the capacity.
func WithTop(n int) Option {
	return func(o *options) {
		if o.errs.Require(n >= 1 && n <= 100, "WithTop(%d): the number of keys shown must be from 1 to 100", n) {
			o.top = n
		}
	}
}

// WithRawKeys shows keys as they are. By default a key is shown as
// [Redact] makes it, a short keyed hash, since keys are often personal data
// (IP addresses, user or API-key identifiers). Use it only where whoever
// can reach the page may see those.
func WithRawKeys() Option {
	return func(o *options) { o.raw = true }
}

// WithClock sets the clock the per-second counts read (default
// core.SystemClock); tests pass a coretest.Clock.
func WithClock(c core.Clock) Option {
	return func(o *options) {
		if o.errs.Require(c != nil, "WithClock(nil); leave the option out for the system clock") {
			o.clock = c
		}
	}
}

func buildOptions(opts []Option) (options, error) {
	o := options{
		clock:    core.SystemClock,
		window:   DefaultWindow,
		capacity: DefaultCapacity,
		top:      DefaultTop,
		names:    map[string]bool{},
		errs:     option.Errors{Prefix: "debugpage: "},
	}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return o, err
	}
	if o.top > o.capacity {
		o.errs.Require(false, "WithTop(%d) exceeds WithCapacity(%d): show fewer keys or monitor more", o.top, o.capacity)
	}
	return o, o.errs.Err()
}
