package rls

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// FromConfig returns what SetRules takes for a loaded configuration: its
// matching, and each of its rules as the service holds it. A rule's ID is
// its domain and full key, so that a reload keeps the state of every rule
// whose limits did not change. Every limit is named (see named): in the
// response's header fields and in metrics.
func FromConfig(c *rlsconfig.Config) (Rules, []*Rule) {
	m := &configRules{c: c, rules: make(map[*rlsconfig.Rule]*Rule)}
	var all []*Rule
	for _, d := range c.Domains() {
		for _, r := range d.Rules() {
			rr := &Rule{
				ID:              r.Domain + "\x00" + r.FullKey,
				Name:            r.Name,
				Limits:          r.Limits,
				RequestsPerUnit: r.RequestsPerUnit,
				Unit:            rlsv3.RateLimitResponse_RateLimit_Unit(r.Unit),
				Unlimited:       r.Unlimited,
				DenyAll:         r.DenyAll,
				Quota:           r.QuotaMode,
				Shadow:          r.ShadowMode,
				LocalQuota:      r.LocalQuota,
				Replaces:        r.Replaces,
				Metadata:        metadata(r.Metadata),
				StatsKey:        r.FullKey,
				conf:            r,
			}
			rr.Limits = named(r)
			m.rules[r] = rr
			all = append(all, rr)
		}
	}
	return m, all
}

// named returns r's limits with their names: the rule's name on the first
// when core takes it as a limit's name, and the others (or all, for a rule
// without a usable name) named by their rate, as core.NewStack names
// them.
func named(r *rlsconfig.Rule) []core.Limit {
	if len(r.Limits) == 0 {
		return nil
	}
	ls := make([]core.Limit, len(r.Limits))
	for i, l := range r.Limits {
		ls[i] = l.WithName(core.DefaultName(l))
		if i == 0 && r.Name != "" {
			if n := l.WithName(r.Name); n.Validate() == nil {
				ls[i] = n
			}
		}
	}
	return ls
}

// metadata is a rule's metadata as the response carries it: the YAML's
// values as protobuf's Struct holds them, as envoyproxy/ratelimit converts
// them (a key that is not a string is its text); nil when there is none.
func metadata(m map[string]any) *structpb.Struct {
	if len(m) == 0 {
		return nil
	}
	return structOf(m)
}

func structOf(m map[string]any) *structpb.Struct {
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(m))}
	for k, v := range m {
		s.Fields[k] = valueOf(v)
	}
	return s
}

// valueOf converts one YAML value. Scalars protobuf's Value cannot hold
// (a timestamp, say) become their text, so that no configuration is lost.
func valueOf(v any) *structpb.Value {
	switch x := v.(type) {
	case map[string]any:
		return structpb.NewStructValue(structOf(x))
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = e
		}
		return structpb.NewStructValue(structOf(m))
	case []any:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(x))}
		for i, e := range x {
			l.Values[i] = valueOf(e)
		}
		return structpb.NewListValue(l)
	}
	if pv, err := structpb.NewValue(v); err == nil {
		return pv
	}
	return structpb.NewStringValue(fmt.Sprint(v))
}

// configRules is a loaded configuration's matching.
type configRules struct {
	c     *rlsconfig.Config
	rules map[*rlsconfig.Rule]*Rule

	mu        sync.Mutex
	overrides map[rlcommonLimit]*Rule // see override
	// dropped, when set, hears of each descriptor whose override is
	// ignored because the configuration has maxOverrides already (the
	// Service counts and logs them).
	dropped atomic.Pointer[func(domain string, rpu uint32, unit rlsconfig.Unit)]
}

// rlcommonLimit is a descriptor's limit override.
type rlcommonLimit struct {
	rpu  uint32
	unit rlsconfig.Unit
}

// maxOverrides bounds the distinct limit overrides a configuration keeps
// a rule for, since each keeps a limiter and its keys' state; a descriptor
// with another is matched as if it had none, and the Service counts it
// (Service.DroppedOverrides) and logs it.
const maxOverrides = 256

// override returns the rule of a descriptor's own limit (Envoy's
// RateLimitDescriptor.limit), as envoyproxy/ratelimit applies it: to any
// descriptor of a configured domain, in place of what the configuration
// says, a fixed window never in shadow mode. nil: no override, or one of
// an unknown unit, or more distinct overrides than maxOverrides.
func (m *configRules) override(domain string, d *rlcommon.RateLimitDescriptor) *Rule {
	lim := d.GetLimit()
	if lim == nil || m.c.Domain(domain) == nil {
		return nil
	}
	o := rlcommonLimit{rpu: lim.GetRequestsPerUnit(), unit: rlsconfig.Unit(lim.GetUnit())}
	period := o.unit.Period()
	if period == 0 {
		return nil
	}
	r, full := m.overrideRule(o, period)
	if full {
		if f := m.dropped.Load(); f != nil {
			(*f)(domain, o.rpu, o.unit)
		}
	}
	return r
}

// overrideRule returns o's rule, made on first use; full reports that
// there is none because the configuration has maxOverrides already.
func (m *configRules) overrideRule(o rlcommonLimit, period time.Duration) (r *Rule, full bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.overrides[o]; r != nil {
		return r, false
	}
	if len(m.overrides) >= maxOverrides {
		return nil, true
	}
	r = &Rule{ID: fmt.Sprintf("override\x00%d/%s", o.rpu, o.unit), RequestsPerUnit: o.rpu, Unit: rlsv3.RateLimitResponse_RateLimit_Unit(o.unit), override: true}
	if o.rpu == 0 {
		r.DenyAll = true
	} else {
		l := core.Limit{Events: int(min(o.rpu, math.MaxInt32)), Period: period, Algorithm: core.FixedWindow}
		r.Limits = []core.Limit{l.WithName(core.DefaultName(l))}
	}
	if m.overrides == nil {
		m.overrides = make(map[rlcommonLimit]*Rule)
	}
	m.overrides[o] = r
	return r, false
}

// maxEntries is how many entries a descriptor has at most without its
// entries escaping to the heap while matched.
const maxEntries = 8

func (m *configRules) Match(domain string, d *rlcommon.RateLimitDescriptor) (*Rule, string) {
	var buf [maxEntries]rlsconfig.Entry
	entries := buf[:0]
	for _, e := range d.GetEntries() {
		entries = append(entries, rlsconfig.Entry{Key: e.GetKey(), Value: e.GetValue()})
	}
	if o := m.override(domain, d); o != nil {
		return o, (&rlsconfig.Rule{Domain: domain}).Key(entries)
	}
	r := m.c.Match(domain, entries)
	if r == nil {
		return nil, ""
	}
	return m.rules[r], r.Key(entries)
}
