package rlsconfig

import (
	"crypto/sha256"
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

// Key returns the key of the state a request descriptor entries, which
// matched r, counts in. As envoyproxy/ratelimit's cache key it holds the
// domain and every entry's key and value as the request gave them (a
// key-only or wildcard descriptor limits each value on its own), except
// that an entry matched by a wildcard value with share_threshold holds the
// pattern instead, so that all matching values share one count. Unlike
// envoyproxy/ratelimit's, it holds no prefix and no window (the algorithm
// keeps time), and its parts are escaped so that two descriptors never
// share a key: upstream joins them with '_', and ("a", "b_c") and
// ("a_b", "c") meet there.
//
// A part longer than MaxKeyPart bytes (a client's 1 MB header value, say)
// is held as its digest instead: '\#' and the first 128 bits of its
// SHA-256 in hex, 34 bytes, so that a store keeps no client's long text
// for a rule's period, and two values share a key only if SHA-256 collides
// on 128 bits. Escaping never writes "\#", so a digest never meets a
// value as written; shorter parts are as they were, and so are their keys'
// states.
func (r *Rule) Key(entries []Entry) string {
	var b strings.Builder
	n := min(len(r.Domain), MaxKeyPart) + 2
	for _, e := range entries {
		n += min(len(e.Key), MaxKeyPart) + min(len(e.Value), MaxKeyPart) + 2
	}
	b.Grow(n)
	escape(&b, r.Domain)
	for i, e := range entries {
		b.WriteByte('|')
		escape(&b, e.Key)
		b.WriteByte('=')
		if i < len(r.path) && r.path[i].share && r.path[i].parts != nil {
			escape(&b, r.path[i].value)
		} else {
			escape(&b, e.Value)
		}
	}
	return b.String()
}

// MaxKeyPart is the longest domain, descriptor key or value [Rule.Key]
// holds as it is; a longer one is held as its digest.
const MaxKeyPart = 128

// escape writes s with '\\', '|' and '=' escaped by a backslash, or, when
// s is longer than MaxKeyPart, its digest.
func escape(b *strings.Builder, s string) {
	if len(s) > MaxKeyPart {
		digest(b, s)
		return
	}
	if !strings.ContainsAny(s, `\|=`) {
		b.WriteString(s)
		return
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '|' || c == '=' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// digest writes '\#' and the first 16 bytes of s's SHA-256 in hex.
func digest(b *strings.Builder, s string) {
	h := sha256.New()
	var buf [512]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	b.WriteString(`\#`)
	var hex [32]byte
	const digits = "0123456789abcdef"
	for i, c := range sum[:16] {
		hex[2*i], hex[2*i+1] = digits[c>>4], digits[c&15]
	}
	b.Write(hex[:])
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
