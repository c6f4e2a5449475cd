package rls

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// Store makes the limiter a rule's limits are enforced by: core's in
// memory ([Memory]), or redisstore's.
type Store func(limits []core.Limit) (core.Limiter, error)

// Memory is the in-memory store: a core.Keyed for one limit, a core.Stack
// (all or nothing) for more, each made with opts.
func Memory(opts ...core.Option) Store {
	return func(limits []core.Limit) (core.Limiter, error) {
		if len(limits) == 1 {
			return core.New(limits[0], opts...)
		}
		return core.NewStack(limits, opts...)
	}
}

// Service answers envoy.service.ratelimit.v3.RateLimitService. It is safe
// for concurrent use; SetRules swaps its configuration under traffic.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer
	c     Config
	state atomic.Pointer[state]
	mu    sync.Mutex // serialises SetRules

	dropped atomic.Uint64
	drop    func(domain string, rpu uint32, unit rlsconfig.Unit) // counts dropped

	cache *localCache // Config.LocalCacheBytes; nil: none

	checkMu sync.Mutex
	checked map[string][]*compiled // CheckRule's limiters, by limitsKey, for SetRules
}

// state is one configuration: its rules and each rule's compiled form.
type state struct {
	rules    Rules
	compiled map[*Rule]*compiled
	bySig    map[string]*compiled // what the next configuration may keep
	byLimits map[string]bool      // the limits (limitsKey) its store took
	// late holds the rules Rules made up after SetRules (a descriptor's
	// own limit): *Rule to *compiled, compiled on first use, or taken from
	// carried: the previous configuration's, by signature, so that a
	// reload keeps their state as it keeps the configured rules'. Only
	// the previous configuration's are carried, so that they stay as
	// bounded as Rules keeps them.
	late    sync.Map
	carried map[string]*compiled
}

// compiled is a rule with its limiter and the text of its header fields.
type compiled struct {
	lim    core.Limiter
	limits []core.Limit        // the store's limits, which a Multi's charges name
	texts  []fields.PolicyText // one per limit, in order (the rule's limits)
	list   string              // RateLimit-Policy of a stack; "" for one limit
	// past is set when the limiter counts one more than the rule's limit
	// (see pastLimits): its last unit stands for a count past the limit.
	past bool
}

// text returns the field text of l, one of c's limits (the first if l is
// none of them).
func (c *compiled) text(l core.Limit) *fields.PolicyText {
	for i := range c.texts {
		if c.texts[i].Limit == l {
			return &c.texts[i]
		}
	}
	return &c.texts[0]
}

// compile makes r's limiter and the text of its header fields.
func (s *Service) compile(r *Rule) (*compiled, error) {
	c, err := s.compileLimits(r.Limits)
	if err != nil {
		return nil, fmt.Errorf("rls: rule %s: %w", r.ID, err)
	}
	return c, nil
}

// compileLimits makes the limiter of limits and the text of their header
// fields.
func (s *Service) compileLimits(limits []core.Limit) (*compiled, error) {
	stored, past := s.pastLimits(limits)
	lim, err := s.c.Store(stored)
	if err != nil {
		return nil, err
	}
	c := &compiled{lim: lim, limits: stored, past: past}
	for _, l := range limits {
		c.texts = append(c.texts, fields.NewPolicyText(l))
	}
	if len(limits) > 1 {
		c.list = fields.JoinPolicies(limits)
	}
	return c, nil
}

// pastLimits returns the limits the store enforces for limits, a rule's,
// and whether they count past the limit. Under upstream's charging
// (ChargeAlways, ChargeStopWhenOver), one fixed window of L requests (what
// envoyproxy/ratelimit counts) is enforced as one of L+1: upstream's
// counter goes past the limit, and a check (hits_addend 0) is over the
// limit only past it, so a count at the limit and one past it must differ.
// The last unit stands for "past the limit": a charge that takes it is
// over the limit, and kept (see markPast). Other limits, and every limit
// under ChargeAllOrNothing, are enforced as they are.
func (s *Service) pastLimits(limits []core.Limit) ([]core.Limit, bool) {
	if s.c.Charging == ChargeAllOrNothing || len(limits) != 1 || limits[0].Algorithm != core.FixedWindow || limits[0].Events >= math.MaxInt32 {
		return limits, false
	}
	l := limits[0]
	l.Events++
	if l.Burst != 0 {
		l.Burst = l.Events // the fixed window ignores it; kept equal to Events
	}
	return []core.Limit{l}, true
}

// later compiles r, a rule the configuration's Rules made up after
// SetRules (a descriptor's own limit), once per state.
func (s *Service) later(st *state, r *Rule) (*compiled, error) {
	if c, ok := st.late.Load(r); ok {
		return c.(*compiled), nil
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	c := st.carried[r.signature()]
	if c == nil {
		var err error
		if c, err = s.compile(r); err != nil {
			return nil, err
		}
	}
	v, _ := st.late.LoadOrStore(r, c)
	return v.(*compiled), nil
}

// New returns a Service with no configuration: it answers UNAVAILABLE until
// the first SetRules.
func New(c Config) (*Service, error) {
	if c.Store == nil {
		return nil, errors.New("rls: Config.Store is nil; use rls.Memory() or a Redis store")
	}
	if !c.Charging.Valid() {
		return nil, fmt.Errorf("rls: Config.Charging %v is unknown; use ChargeAllOrNothing, ChargeAlways or ChargeStopWhenOver", c.Charging)
	}
	if !c.Headers.Valid() {
		return nil, fmt.Errorf("rls: Config.Headers %v is unknown", c.Headers)
	}
	r := c.NearLimitRatio
	if r != r || r < 0 || r > 1 {
		return nil, fmt.Errorf("rls: Config.NearLimitRatio %v: want a share from 0 to 1 (0: 0.8)", r)
	}
	if r == 0 {
		c.NearLimitRatio = 0.8
	}
	if err := checkHeaderNames(c.UpstreamHeaders, c.Headers); err != nil {
		return nil, err
	}
	if c.LocalCacheBytes < 0 {
		return nil, fmt.Errorf("rls: Config.LocalCacheBytes %d: want 0 (no local cache) or more", c.LocalCacheBytes)
	}
	if c.Clock == nil {
		c.Clock = core.SystemClock
	}
	if c.FailCall {
		c.Failure = core.FailClosed
	}
	s := &Service{c: c}
	s.drop = s.dropOverride
	if c.LocalCacheBytes > 0 {
		s.cache = newLocalCache(c.LocalCacheBytes)
	}
	return s, nil
}

// DroppedOverrides returns how many descriptors had a limit override
// that was ignored (the descriptor matched as if it had none) because
// their configuration kept the most distinct overrides it keeps (256)
// already. Config.Log hears of the first and of every count that is a
// power of two.
func (s *Service) DroppedOverrides() uint64 { return s.dropped.Load() }

func (s *Service) dropOverride(domain string, rpu uint32, unit rlsconfig.Unit) {
	n := s.dropped.Add(1)
	if s.c.Log != nil && n&(n-1) == 0 {
		s.c.Log.Warn("rls: a descriptor's limit override is ignored: the configuration keeps 256 distinct overrides already, so the descriptor is matched as if it had none",
			"domain", domain, "requests_per_unit", rpu, "unit", unit.String(), "ignored", n)
	}
}

// SetRules makes rules the configuration: all lists every rule it can
// match. A rule of the same ID and limits as one of the configuration it
// replaces keeps that rule's limiter, and so its keys' state; the others
// get new ones, or the one CheckRule made for their limits. So does a
// rule Rules makes up after (a descriptor's own limit) as one the replaced
// configuration made up. An invalid rule (CheckRule's refusals included)
// is an error, and the configuration in place stays: a configuration's
// rules are checked with CheckRule as it loads, so that a rule the store
// refuses keeps its own file out instead.
func (s *Service) SetRules(rules Rules, all []*Rule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		s.checkMu.Lock()
		s.checked = nil // made for this configuration, or for one refused
		s.checkMu.Unlock()
	}()
	var old map[string]*compiled
	next := &state{rules: rules, compiled: make(map[*Rule]*compiled, len(all)), bySig: make(map[string]*compiled, len(all)), byLimits: make(map[string]bool, len(all))}
	if st := s.state.Load(); st != nil {
		old = st.bySig
		st.late.Range(func(k, v any) bool {
			if next.carried == nil {
				next.carried = make(map[string]*compiled)
			}
			next.carried[k.(*Rule).signature()] = v.(*compiled)
			return true
		})
	}
	for _, r := range all {
		if err := r.check(); err != nil {
			return err
		}
		if r.Unlimited || r.DenyAll {
			continue
		}
		if err := enforceable(r.Limits); err != nil {
			return fmt.Errorf("%w (rule %s)", err, strings.ReplaceAll(r.ID, "\x00", " "))
		}
		sig := r.signature()
		c := next.bySig[sig]
		if c == nil {
			c = old[sig]
		}
		key := limitsKey(r.Limits)
		if c == nil {
			c = s.takeChecked(key)
		}
		if c == nil {
			var err error
			if c, err = s.compile(r); err != nil {
				return err
			}
		}
		next.bySig[sig] = c
		next.compiled[r] = c
		next.byLimits[key] = true
	}
	if m, ok := rules.(*configRules); ok {
		m.dropped.Store(&s.drop)
	}
	s.state.Store(next)
	return nil
}
