package redisstore

import (
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/breaker"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a Limiter.
type Option func(*options)

type options struct {
	algorithm core.Algorithm
	prefix    string
	clock     core.Clock
	script    core.Clock
	timeout   time.Duration
	margin    time.Duration
	denyCache int

	subWindows int // core.SlidingWindow; 0: the two-window estimate
	maxEntries int // core.SlidingLog and sub-windows; 0: core.DefaultMaxEntries

	batching            bool // false: WithoutBatching
	inFlight, batchSize int

	breaker bool                   // false: WithoutBreaker
	rule    fallback.BreakerConfig // as WithBreaker set it, zero fields for the defaults

	leaseTTL time.Duration                                      // core.Concurrency; 0: DefaultLeaseTTL
	after    func(d time.Duration, f func()) (stop func() bool) // schedules renewals; tests replace it

	// The algorithms' settings, as core's (see policies.go).
	overdraft  bool
	maxDelay   time.Duration // LeakyBucket; 0: core.DefaultMaxDelay
	warmUp     time.Duration // WarmUp; required
	coldFactor float64       // WarmUp; 0: core.DefaultColdFactor
}

// Defaults.
const (
	// DefaultPrefix starts every key the package writes.
	DefaultPrefix = "floodgate:"
	// DefaultTimeout bounds one round trip from when it is sent, and how
	// long a call waits in all, the caller's own deadline permitting: a
	// hung server costs a request this much at most, queued or not (see
	// "When Redis fails"). A healthy server answers in well under a millisecond, but
	// the timeout also runs while this process writes the command and
	// reads the reply, and a process short of CPU is slow at both. In
	// TestSpike (8 Limiters × 64 goroutines, a busy goroutine on every P,
	// -race, 2 cores), 100 ms cut round trips in 8 runs of 10, while 250
	// ms cut none in 15 and 500 ms none in 25, the slowest round trip
	// taking 80–230 ms; 500 ms keeps twice the margin of the smallest that
	// passed, and is still short beside the deadlines of the requests
	// being limited. (A machine busy with other work slows round trips
	// further: with eight runnable jobs on the same 2 cores, 500 ms cut
	// some in 4 runs of 20, and even 1 s in 1.)
	DefaultTimeout = 500 * time.Millisecond
	// DefaultTTLMargin is added to every key's time to live past the
	// instant its quota is whole again.
	DefaultTTLMargin = time.Second
	// DefaultDenyCacheSize is how many refused keys the deny cache holds.
	DefaultDenyCacheSize = 4096
	// DefaultInFlight is how many round trips one Limiter has in flight at
	// once before further calls queue and go together in pipelines.
	DefaultInFlight = 2
	// DefaultBatchSize is the most calls one pipeline carries.
	DefaultBatchSize = 128
	// DefaultBreakerWindow is the span over which the circuit breaker
	// counts round trips, in ten buckets of 1 s: fallback.DefaultWindow,
	// whose reasons apply here as well (see fallback.BreakerConfig).
	DefaultBreakerWindow = fallback.DefaultWindow
	// DefaultBreakerMinCalls is how many round trips the window must hold
	// before their failure rate opens the breaker: fallback.DefaultMinCalls,
	// 20. A pipeline is one round trip however many calls it carries, and
	// with batching a Limiter has at most DefaultInFlight (2) round trips
	// in flight to a server: a pause of the process fails at most 2 at
	// once, never the 20 that make a rate.
	DefaultBreakerMinCalls = fallback.DefaultMinCalls
	// DefaultBreakerFailureRate is the share of failed round trips, in
	// percent, that opens the breaker: fallback.DefaultFailureRate, 50.
	DefaultBreakerFailureRate = fallback.DefaultFailureRate
	// DefaultBreakerOpenFor is how long the breaker first stays open: a
	// dead server is asked once a second, and after a blip (a failover, a
	// restart) decisions come from Redis again a second later.
	DefaultBreakerOpenFor = fallback.DefaultOpenFor
	// DefaultBreakerMaxOpenFor caps the open period that failed probes
	// double: a long outage costs one probe every 4 s, and Redis decides
	// again at most 4 s after it is back.
	DefaultBreakerMaxOpenFor = fallback.DefaultMaxOpenFor
	// DefaultLeaseTTL is how long a core.Concurrency lease lives in Redis
	// unless renewed: the longest an instance that dies holds its
	// requests' slots. Leases are renewed every third of it, so a request
	// shorter than 10 s costs no renewal, a longer one a round trip per
	// 10 s, and a lease outlives a Redis outage (a Sentinel failover, a
	// restart) of up to 20 s.
	DefaultLeaseTTL = 30 * time.Second
)

func defaultOptions() options {
	return options{
		algorithm: core.TokenBucket,
		clock:     core.SystemClock,
		prefix:    DefaultPrefix,
		timeout:   DefaultTimeout,
		margin:    DefaultTTLMargin,
		denyCache: DefaultDenyCacheSize,
		batching:  true,
		inFlight:  DefaultInFlight,
		batchSize: DefaultBatchSize,

		breaker: true,

		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
	}
}

// WithPrefix sets the prefix of every key (default DefaultPrefix). It must
// not contain '{' or '}', which would change the keys' hash slot.
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithClock sets the process's own clock (default core.SystemClock). It
// times only what happens in process: the deny cache's entries, which are
// kept relative to it, and the circuit breaker's open periods. Decisions are
// made at the server's TIME, the one clock every instance agrees on, so one
// instance's clock skew changes no decision.
func WithClock(c core.Clock) Option { return func(o *options) { o.clock = c } }

// WithScriptClock makes the scripts decide at c's time instead of the
// server's TIME. It exists for tests that compare Redis with the in-memory
// limiter on one fake clock; never use it in production, where it would
// bring back the clock skew between instances that TIME removes.
func WithScriptClock(c core.Clock) Option { return func(o *options) { o.script = c } }

// WithTimeout bounds each round trip (default DefaultTimeout) from when it
// is sent: a call sent at once from then, a batched call from when its
// pipeline leaves. Time queued before that is bounded by the caller's
// context alone. 0 leaves only the caller's context and the client's own
// timeouts.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithTTLMargin sets what is added to every key's time to live past the
// instant its quota is whole again (default DefaultTTLMargin, at least 1ms).
func WithTTLMargin(d time.Duration) Option { return func(o *options) { o.margin = d } }

// WithDenyCache sets how many refused keys are remembered in process (default
// DefaultDenyCacheSize); 0 turns the deny cache off. See the package
// documentation.
func WithDenyCache(size int) Option { return func(o *options) { o.denyCache = size } }

// WithBatching sets how concurrent calls share round trips (default
// DefaultInFlight and DefaultBatchSize): a call is sent at once while fewer
// than inFlight of the Limiter's round trips are under way; otherwise it
// waits for one to end and goes with the other calls that waited, in one
// pipeline of at most size scripts. A lone caller is never delayed; under
// load, many decisions share a round trip. See the package documentation.
func WithBatching(inFlight, size int) Option {
	return func(o *options) { o.batching, o.inFlight, o.batchSize = true, inFlight, size }
}

// WithoutBatching sends every call in a round trip of its own, however many
// are under way.
func WithoutBatching() Option { return func(o *options) { o.batching = false } }

// WithBreaker configures the circuit breaker, which is on by default, and
// turns it back on after WithoutBreaker. c says when it opens and for how
// long, exactly as for package fallback's breaker (fallback.BreakerConfig
// documents each field), counting round trips: each pipeline is one, and
// only those that show the server failing are failures (see "When Redis
// fails" in the package documentation). Zero fields keep their defaults:
// DefaultBreakerWindow, DefaultBreakerMinCalls, DefaultBreakerFailureRate,
// DefaultBreakerOpenFor and DefaultBreakerMaxOpenFor (or OpenFor if
// longer). While open, Allow and Refund fail at once with ErrCircuitOpen
// and send nothing. A Cluster client gets a breaker so configured for
// each master.
func WithBreaker(c fallback.BreakerConfig) Option {
	return func(o *options) { o.breaker, o.rule = true, c }
}

// WithLeaseTTL sets how long a core.Concurrency lease lives in Redis
// unless renewed (default DefaultLeaseTTL; from 3 ms to about 52 days). A
// Limiter renews each lease it handed out every ttl/3 while it is held, so
// a request may run for any time; an instance that dies stops renewing,
// and the slots its requests held come back at most ttl later. It applies
// to core.Concurrency only.
func WithLeaseTTL(ttl time.Duration) Option { return func(o *options) { o.leaseTTL = ttl } }

// WithoutBreaker turns the circuit breaker off: every call goes to Redis,
// however often it failed before, and waits up to the timeout when the
// server hangs. It is for callers that handle outages themselves and want
// every call to reach the server.
func WithoutBreaker() Option { return func(o *options) { o.breaker = false } }

func (o *options) validate(errs *option.Errors) error {
	errs.Require(!strings.ContainsAny(o.prefix, "{}"), "prefix %q contains a brace; braces would move keys out of their hash slot", o.prefix)
	errs.Require(o.timeout >= 0, "timeout must be >= 0, got %v", o.timeout)
	errs.Require(o.margin >= time.Millisecond, "TTL margin must be >= 1ms, got %v", o.margin)
	errs.Require(o.denyCache >= 0, "deny cache size must be >= 0 (0 turns it off), got %d", o.denyCache)
	// Checked even when WithoutBatching follows, as the breaker's are.
	errs.Require(o.inFlight >= 1 && o.batchSize >= 1, "WithBatching(%d, %d): both numbers must be >= 1 (WithoutBatching turns batching off)", o.inFlight, o.batchSize)
	errs.Require(o.clock != nil, "nil clock; leave WithClock out for the system clock")
	// Checked even when WithoutBreaker follows: a bad argument is a bug.
	for _, p := range o.breakerRule().Problems() {
		errs.Require(false, "WithBreaker: %s", p)
	}
	errs.Require(o.script == nil || o.script.Now() >= 0, "the script clock reads before the Unix epoch")
	errs.Require(o.leaseTTL == 0 || o.leaseTTL >= 3*time.Millisecond && o.leaseTTL <= maxSpan, "WithLeaseTTL(%v): the TTL must be from 3ms (renewed every third of it) to %v", o.leaseTTL, maxSpan)
	return errs.Err()
}

// setPolicy takes the algorithm and its settings from l, which is valid:
// what the limit is belongs to the policy, what the store is to the
// options.
func (o *options) setPolicy(l core.Limit) {
	o.algorithm, o.overdraft, o.maxDelay = l.Algorithm, l.Overdraft, l.MaxDelay
	o.warmUp, o.coldFactor = l.WarmUp, l.ColdFactor
	o.subWindows, o.maxEntries = l.SubWindows, l.MaxEntries
}

// breakerRule is the breaker's rule under o, the defaults filled in.
func (o *options) breakerRule() breaker.Rule {
	return breaker.Rule(o.rule).Or(breaker.Rule{
		Window:      DefaultBreakerWindow,
		MinCalls:    DefaultBreakerMinCalls,
		FailureRate: DefaultBreakerFailureRate,
		OpenFor:     DefaultBreakerOpenFor,
		MaxOpenFor:  DefaultBreakerMaxOpenFor,
	})
}

// ttl is a concurrency lease's TTL under o.
func (o *options) ttl() time.Duration {
	if o.leaseTTL == 0 {
		return DefaultLeaseTTL
	}
	return o.leaseTTL
}
