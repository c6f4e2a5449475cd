package rlsconfig

import (
	"slices"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Entry is one entry of a request's descriptor: Envoy's
// RateLimitDescriptor.Entry.
type Entry struct{ Key, Value string }

// Unit is a rate limit's unit. Its values are those of Envoy's
// RateLimitResponse.RateLimit.Unit, so that a conversion is a cast.
type Unit int32

// The units envoyproxy/ratelimit accepts, with Envoy's numbers.
const (
	UnitUnknown Unit = 0
	Second      Unit = 1
	Minute      Unit = 2
	Hour        Unit = 3
	Day         Unit = 4
	Month       Unit = 5
	Year        Unit = 6
	Week        Unit = 7
)

var unitNames = [...]string{"unknown", "second", "minute", "hour", "day", "month", "year", "week"}

// String returns the unit's name in lower case, as configurations spell it.
func (u Unit) String() string {
	if u >= 0 && int(u) < len(unitNames) {
		return unitNames[u]
	}
	return "unknown"
}

// Period returns the unit's length, as envoyproxy/ratelimit counts it: a
// month is 30 days and a year 365. It is 0 for UnitUnknown.
func (u Unit) Period() time.Duration {
	const day = 24 * time.Hour
	switch u {
	case Second:
		return time.Second
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	case Day:
		return day
	case Week:
		return 7 * day
	case Month:
		return 30 * day
	case Year:
		return 365 * day
	}
	return 0
}

// parseUnit reads a unit's name in any case, as envoyproxy/ratelimit does.
func parseUnit(s string) Unit {
	for u := Second; u <= Week; u++ {
		if strings.EqualFold(s, unitNames[u]) {
			return u
		}
	}
	return UnitUnknown
}

// Rule is a descriptor of the configuration that has a rate_limit block:
// what applies to a request descriptor that matches it. Rules are shared
// by all requests and must not be modified.
type Rule struct {
	// Domain is the rule's domain.
	Domain string
	// FullKey names the rule as envoyproxy/ratelimit does: the domain and
	// each descriptor on the way to the rule, as key or key_value, joined
	// by dots ("messaging.message_type_marketing.to_number"). It is the
	// metrics key of requests without detailed_metric or value_to_metric.
	FullKey string
	// File and Line say where the rule is defined.
	File string
	Line int

	// Name is rate_limit's name (may be empty), which other rules'
	// Replaces name.
	Name string
	// Replaces lists the names of the rules this one replaces: when one
	// request's descriptors match both, the replaced rule is not applied.
	Replaces []string

	// Unlimited is rate_limit's unlimited: the descriptor is allowed
	// without counting (Limits is empty, Unit is UnitUnknown).
	Unlimited bool
	// RequestsPerUnit and Unit are rate_limit's limit, as the response's
	// current_limit reports it.
	RequestsPerUnit uint32
	Unit            Unit
	// Limits are what to enforce, all or nothing: rate_limit's own limit
	// first, then those of its limits list. It is empty when Unlimited or
	// DenyAll.
	Limits []core.Limit
	// LocalQuota is rate_limit's local_quota (floodgate's): the service
	// decides the rule's hot descriptors in memory from leases (see
	// docs/envoy.md). Only fixed-window, token-bucket and gcra limits take
	// it.
	LocalQuota bool
	// DenyAll is set when requests_per_unit is 0 (in rate_limit or in any
	// of its limits): every request is over the limit, as
	// envoyproxy/ratelimit's fixed window with a quota of 0 decides.
	DenyAll bool

	// ShadowMode is the descriptor's shadow_mode: the rule is counted
	// and reported, but never refuses.
	ShadowMode bool
	// QuotaMode is the descriptor's quota_mode: in envoyproxy/ratelimit,
	// a request is over the limit for quota rules only when all of its
	// quota-mode descriptors are.
	QuotaMode bool
	// DetailedMetric and ValueToMetric are the descriptor's flags, which
	// [Rule.StatsKey] applies.
	DetailedMetric bool
	ValueToMetric  bool
	// Metadata is the descriptor's metadata, as YAML decodes it (maps
	// with string keys, lists, strings, numbers, booleans), or nil.
	Metadata map[string]any

	path []step // one per level, from the top
	// limitLine and limitField say where rate_limit is, for the errors
	// of a rule check (CheckRules).
	limitLine  int
	limitField string
}

// step is how a level on the way to a rule matches, for its keys.
type step struct {
	key, value    string   // value is "" for a key-only descriptor
	parts         []string // value split at '*' when it holds one
	share         bool     // share_threshold, on a wildcard value
	valueToMetric bool
}

// StatsKey returns the key envoyproxy/ratelimit's statistics of a request
// descriptor entries, which matched r, go under: [Rule.FullKey], unless
// the rule's flags add values.
//
//   - detailed_metric on the rule: every entry as key_value (the pattern
//     for entries matched with share_threshold; a value left out when
//     empty, if any entry shares a threshold);
//   - otherwise, per entry: key_value for a value the configuration gives
//     (the pattern, for a wildcard); for a key-only descriptor, the
//     request's value when its value_to_metric is set; for a wildcard,
//     the request's value when its value_to_metric is set, but the pattern
//     when it shares a threshold.
func (r *Rule) StatsKey(entries []Entry) string {
	var b strings.Builder
	b.WriteString(r.Domain)
	shared := false
	for _, s := range r.path {
		shared = shared || (s.share && s.parts != nil)
	}
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.Key)
		var s step
		if i < len(r.path) {
			s = r.path[i]
		}
		v := e.Value
		switch {
		case r.DetailedMetric && s.share && s.parts != nil:
			v = s.value
		case r.DetailedMetric:
			if shared && v == "" {
				continue
			}
			b.WriteByte('_')
			b.WriteString(v)
			continue
		case s.parts != nil && s.share:
			v = s.value
		case s.parts != nil && !s.valueToMetric:
			v = s.value
		case s.value == "" && !s.valueToMetric:
			v = ""
		}
		if v != "" {
			b.WriteByte('_')
			b.WriteString(v)
		}
	}
	return b.String()
}

// Replace applies replaces to the rules one request's descriptors
// matched, in place, as envoyproxy/ratelimit does: a rule whose name a
// matched rule (unlimited ones included) replaces is set to nil, so that
// it is neither checked nor charged. nil entries (descriptors without a
// rule) stay nil.
func Replace(rules []*Rule) {
	var replaced []string
	for _, r := range rules {
		if r != nil {
			replaced = append(replaced, r.Replaces...)
		}
	}
	if len(replaced) == 0 {
		return
	}
	for i, r := range rules {
		if r != nil && r.Name != "" && slices.Contains(replaced, r.Name) {
			rules[i] = nil
		}
	}
}
