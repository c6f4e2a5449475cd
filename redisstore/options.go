package redisstore

import (
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a Limiter, a Stack or a Dynamic: the store, never the
// policy, which is the core.Limit they are given.
type Option func(*options)

type options struct {
	algorithm core.Algorithm
	prefix    string
	clock     core.Clock
	script    core.Clock
	timeout   time.Duration
	margin    time.Duration
	jitter    time.Duration // WithTTLJitter; 0: none
	denyCache int

	subWindows int // core.SlidingWindow; 0: the two-window estimate
	maxEntries int // core.SlidingLog and sub-windows; 0: core.DefaultMaxEntries

	inFlight, batchSize int // both 0: no batching

	breaker BreakerConfig // the zero value: no breaker

	leaseTTL time.Duration                                      // core.Concurrency; 0: defaultLeaseTTL
	after    func(d time.Duration, f func()) (stop func() bool) // schedules renewals; tests replace it

	quota *LocalQuota // WithLocalQuota; nil: none

	clientWindows bool // WithClientClockWindows (NewMulti only)

	fallback bool          // WithFallback
	local    []core.Option // WithFallback's options of the in-memory limiter

	// The algorithms' settings, as core's (see policies.go).
	overdraft  bool
	maxDelay   time.Duration // LeakyBucket; 0: core.DefaultMaxDelay
	warmUp     time.Duration // WarmUp; required
	coldFactor float64       // WarmUp; 0: core.DefaultColdFactor
}

// The defaults, which the options' documentation gives.
const (
	defaultPrefix = "floodgate:"
	// defaultTimeout bounds one round trip from when it is sent, and how
	// long a call waits in all. A healthy server answers in well under a
	// millisecond, but the timeout also runs while this process writes the
	// command and reads the reply, and a process short of CPU is slow at
	// both. In TestSpike (8 Limiters × 64 goroutines, a busy goroutine on
	// every P, -race, 2 cores), 100 ms cut round trips in 8 runs of 10,
	// while 250 ms cut none in 15 and 500 ms none in 25, the slowest round
	// trip taking 80–230 ms; 500 ms keeps twice the margin of the smallest
	// that passed, and is still short beside the deadlines of the requests
	// being limited. (A machine busy with other work slows round trips
	// further: with eight runnable jobs on the same 2 cores, 500 ms cut
	// some in 4 runs of 20, and even 1 s in 1.)
	defaultTimeout = 500 * time.Millisecond
	// defaultTTLMargin is added to every key's time to live past the
	// instant its quota is whole again.
	defaultTTLMargin     = time.Second
	defaultDenyCacheSize = 4096
	defaultInFlight      = 2
	defaultBatchSize     = 128
	// defaultLeaseTTL: a request shorter than 10 s costs no renewal, a
	// longer one a round trip per 10 s, and a lease outlives a Redis
	// outage (a Sentinel failover, a restart) of up to 20 s.
	defaultLeaseTTL = 30 * time.Second
)

func defaultOptions() options {
	return options{
		algorithm: core.TokenBucket,
		clock:     core.SystemClock,
		prefix:    defaultPrefix,
		timeout:   defaultTimeout,
		margin:    defaultTTLMargin,
		denyCache: defaultDenyCacheSize,
		inFlight:  defaultInFlight,
		batchSize: defaultBatchSize,
		breaker:   BreakerConfig{Window: breaker.Defaults.Window},

		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
	}
}

// WithPrefix sets the prefix of every key (default "floodgate:"). It must
// not contain '{' or '}', which would change the keys' hash slot.
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithTimeout bounds each round trip (default 500 ms) from when it is
// sent: a call sent at once from then, a batched call from when its
// pipeline leaves. It also bounds how long a call waits in all, queued or
// not, the caller's own deadline permitting, so a hung server costs a
// request this much at most (see "When Redis fails" in the package
// documentation). 0 leaves only the caller's context and the client's own
// timeouts. Keep it below the deadlines callers set, or a hung server that
// outlasts them is never counted by the breaker.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithTTLJitter adds a random time from 0 to max to every key's time to
// live, drawn on each call (default 0: none), so that keys written
// together, such as the fixed windows of many clients that all start at
// the top of the minute, do not all expire at the same instant: Redis's
// expiry work and the memory it frees are spread over max. The time is
// one of 64 evenly spaced steps from 0 to max inclusive (every
// millisecond when max is shorter than 64 ms), each as likely. It
// changes no decision, since a key outlives the instant its quota is
// whole again with or without it, but every key is kept max/2 longer on
// average, so Redis holds more keys, most of all for short periods. max
// is in whole milliseconds (truncated), from 1ms to 24h, or 0. It applies
// to a Limiter, a Stack, a Dynamic and a Multi alike.
func WithTTLJitter(max time.Duration) Option { return func(o *options) { o.jitter = max } }

// WithDenyCache sets how many refused keys are remembered in process
// (default 4096); 0 turns the deny cache off. See the package
// documentation.
func WithDenyCache(size int) Option { return func(o *options) { o.denyCache = size } }

// WithBatching sets how concurrent calls share round trips (default 2 and
// 128): a call is sent at once while fewer than inFlight of the limiter's
// round trips to its server are under way; otherwise it waits for one to
// end and goes with the other calls that waited, in one pipeline of at
// most size scripts. A lone caller is never delayed; under load, many
// decisions share a round trip. WithBatching(0, 0) turns batching off:
// every call goes in a round trip of its own, however many are under way.
func WithBatching(inFlight, size int) Option {
	return func(o *options) { o.inFlight, o.batchSize = inFlight, size }
}

// WithBreaker configures the circuit breaker, which is on by default with
// the defaults BreakerConfig gives; the zero BreakerConfig turns it off, so
// that every call goes to Redis, however often it failed before, and waits
// up to the timeout when the server hangs. A Cluster client gets a breaker
// so configured for each master.
func WithBreaker(c BreakerConfig) Option { return func(o *options) { o.breaker = c } }

// WithLeaseTTL sets how long a core.Concurrency lease lives in Redis
// unless renewed (default 30 s; from 3 ms to about 52 days): the longest
// an instance that dies holds its requests' slots. The limiter renews each
// lease it handed out every ttl/3 while it is held, so a request may run
// for any time. It applies to the concurrency limits of a Limiter or
// Stack, and to nothing else.
func WithLeaseTTL(ttl time.Duration) Option { return func(o *options) { o.leaseTTL = ttl } }

// WithFallback makes the limiter fail local: while Redis fails (a call
// gets a store error: the server down, slower than WithTimeout, or the
// breaker open), each call is decided in memory by a core limiter of the
// same policy, made with opts (core.WithCapacity and the like), instead of
// returning the error. Calls go back to Redis as soon as it answers, that
// is when the breaker's probe succeeds. Health counts the decisions made
// locally. With WithLocalQuota, a Limiter, Stack or Dynamic decides
// instead under this instance's share of each key's limit (the limit among
// the key's lease holders), so that a fleet stays near the limit; opts
// then serve only a Dynamic's keys whose limit cannot be used. See "Failing local" in the package documentation.
func WithFallback(opts ...core.Option) Option {
	return func(o *options) { o.fallback, o.local = true, opts }
}

// withClock sets the process's own clock (default core.SystemClock). It
// times only what happens in process: the deny cache's entries and the
// circuit breaker's window and open periods. Decisions are made at the
// server's TIME. Tests reach it through export_test.go.
func withClock(c core.Clock) Option { return func(o *options) { o.clock = c } }

// withScriptClock makes the scripts decide at c's time instead of the
// server's TIME, so that tests can compare Redis with the in-memory
// limiter on one fake clock.
func withScriptClock(c core.Clock) Option { return func(o *options) { o.script = c } }

// withTTLMargin sets what is added to every key's time to live past the
// instant its quota is whole again (default 1 s, at least 1 ms).
func withTTLMargin(d time.Duration) Option { return func(o *options) { o.margin = d } }

func (o *options) validate(errs *option.Errors) error {
	errs.Require(!strings.ContainsAny(o.prefix, "{}"), "prefix %q contains a brace; braces would move keys out of their hash slot", o.prefix)
	errs.Require(o.timeout >= 0, "timeout must be >= 0, got %v", o.timeout)
	errs.Require(o.margin >= time.Millisecond, "TTL margin must be >= 1ms, got %v", o.margin)
	errs.Require(o.jitter == 0 || o.jitter >= time.Millisecond && o.jitter <= maxTTLJitter, "WithTTLJitter(%v): the jitter must be 0 (none) or from 1ms to %v", o.jitter, maxTTLJitter)
	errs.Require(o.denyCache >= 0, "deny cache size must be >= 0 (0 turns it off), got %d", o.denyCache)
	errs.Require(o.batching() || o.inFlight == 0 && o.batchSize == 0, "WithBatching(%d, %d): both numbers must be >= 1, or both 0 to turn batching off", o.inFlight, o.batchSize)
	errs.Require(o.clock != nil, "nil clock")
	if o.breaker != (BreakerConfig{}) {
		for _, p := range o.breakerRule().Problems() {
			errs.Require(false, "WithBreaker: %s", p)
		}
	}
	errs.Require(o.script == nil || o.script.Now() >= 0, "the script clock reads before the Unix epoch")
	errs.Require(o.leaseTTL == 0 || o.leaseTTL >= 3*time.Millisecond && o.leaseTTL <= maxSpan, "WithLeaseTTL(%v): the TTL must be from 3ms (renewed every third of it) to %v", o.leaseTTL, maxSpan)
	for _, opt := range o.local {
		errs.Require(opt != nil, "WithFallback: nil core.Option")
	}
	if q := o.quota; q != nil {
		errs.Require(q.Length >= 0 && q.Length <= time.Minute, "WithLocalQuota: Length must be from 0 (a tenth of the period, at most 1s) to 1m, got %v", q.Length)
		errs.Require(q.Hot >= 0, "WithLocalQuota: Hot must be >= 0 (0: %d), got %d", defaultQuotaHot, q.Hot)
		errs.Require(q.MaxKeys >= 0, "WithLocalQuota: MaxKeys must be >= 0 (0: %d), got %d", defaultQuotaKeys, q.MaxKeys)
	}
	return errs.Err()
}

// batching reports whether calls share round trips.
func (o *options) batching() bool { return o.inFlight >= 1 && o.batchSize >= 1 }

// setPolicy takes the algorithm and its settings from l, which is valid:
// what the limit is belongs to the policy, what the store is to the
// options.
func (o *options) setPolicy(l core.Limit) {
	o.algorithm, o.overdraft, o.maxDelay = l.Algorithm, l.Overdraft, l.MaxDelay
	o.warmUp, o.coldFactor = l.WarmUp, l.ColdFactor
	o.subWindows, o.maxEntries = l.SubWindows, l.MaxEntries
}

// ttl is a concurrency lease's TTL under o.
func (o *options) ttl() time.Duration {
	if o.leaseTTL == 0 {
		return defaultLeaseTTL
	}
	return o.leaseTTL
}

// WithLocalQuota decides the keys that are hot on this instance in
// memory, from leases, instead of one round trip per call: a hot key's
// instance takes a batch of units in one round trip (charged to the key's
// shared state as admissions, sized to the key's recent demand here),
// spends them until they run out or q.Length has passed, and gives back
// what it did not spend. Keys that are not hot keep one round trip per
// call. It is for GCRA, TokenBucket (without WithOverdraft) and
// FixedWindow limits, alone (New), stacked (NewStack: a lease is charged
// to every layer, all or nothing, in one script) or chosen per key
// (NewDynamic); New and NewStack refuse it for other algorithms, and a
// Dynamic fails the requests of a first limit of another algorithm.
//
// The bound: every unit spent was charged to the shared state before it
// was spent, and is spent no sooner than a shared limiter would have
// admitted it and at most Length later; a spent unit is never given back.
// (When no unit fits now, a GCRA's or token bucket's grant may charge the
// next units due within half a Length, spent once due: so a small burst
// loses none of its refill to the round trip asking for each unit. Their
// state then lies further ahead than a Limiter without local quota reads
// back, which would cut it: keep every Limiter of a key on local quota, or
// none.) So the instances together admit no more than one shared limiter
// would have admitted over the same interval widened by Length; a fixed
// window's lease also ends with its window, so no window admits more than
// its limit. Approximate: Remaining and ResetAfter of a decision made from
// a lease (the shared state as the lease's grant saw it, plus the units
// still held), RetryAfter of a refusal made locally, and, while units sit
// unspent in leases, the fleet admits less than a shared limiter would.
// An instance that stops holding units loses them: they count as admitted.
//
// A Dynamic's lease is bound to the limit it was granted under, and lasts
// q.Length or, by default, a tenth of that limit's period (at most 1 s).
// The first call that finds the key under another
// limit ends the lease before spending any of it and goes to Redis under
// the new limit (a round trip, or a new lease). What the lease left goes
// back only in a measure that never exceeds what its grant charged: under
// GCRA, the time it charged (units × the old interval, never before now);
// under TokenBucket, as many tokens under the new limit (tokens are tokens
// under any limit); under FixedWindow, into the window they were taken
// from if the period is the same, else nothing (they stay charged until
// that window ends, as a killed instance's do). So the bound holds across
// limit changes: no more is admitted than by a Dynamic without local
// quota whose key's limit changed alike, over the interval widened by the
// Length of the leases in force (exactly the window, for fixed windows).
func WithLocalQuota(q LocalQuota) Option {
	return func(o *options) { o.quota = &q }
}
