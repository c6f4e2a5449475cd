package rls

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// Config is what a Service is made of. Store is required.
//
// The zero values answer as floodgate does; each field marked "upstream"
// turns a deliberate difference off, giving envoyproxy/ratelimit's
// answer, and names the setting of envoyproxy/ratelimit it stands for.
type Config struct {
	// Store makes each rule's limiter.
	Store Store
	// Multi, when set, decides the enforced descriptors of a request in
	// one call (on Redis, one round trip) instead of one limiter call
	// each, and a refund each when one refuses. It must keep its state
	// where Store's limiters keep theirs, which still decide the requests
	// it does not (see Multi). nil: Store's limiters, one at a time.
	Multi Multi
	// Failure is what a descriptor gets when its store fails: OVER_LIMIT
	// under core.FailClosed (the zero value), OK under core.FailOpen.
	Failure core.FailureMode
	// FailCall (upstream's behaviour) fails the call, with gRPC
	// UNAVAILABLE, when a descriptor's store fails, for Envoy's
	// failure_mode_deny to decide; the request is decided as under
	// core.FailClosed first.
	FailCall bool
	// Observer hears of every descriptor decided; nil: none.
	Observer core.Observer
	// Headers is the style of the rate-limit header fields the response
	// asks Envoy to add (response_headers_to_add), as in httpmw, with
	// Retry-After on a refusal (1 second for a refusal of the failure
	// mode). core.HeadersNone sends none of them, Retry-After included.
	Headers core.HeaderStyle
	// UpstreamHeaders, when set, adds envoyproxy/ratelimit's three header
	// fields (upstream: LIMIT_RESPONSE_HEADERS_ENABLED, with
	// LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER and LIMIT_RESET_HEADER):
	// see HeaderNames. They are added to the fields Headers selects, whose
	// names they must not take; upstream sends no other, so its
	// configuration is Headers core.HeadersNone with these.
	UpstreamHeaders *HeaderNames
	// Shadow is global shadow mode (upstream: SHADOW_MODE): every request
	// is decided and charged as enforcing would, each descriptor's status
	// is what enforcing would answer (OVER_LIMIT included), and the
	// overall code is OK.
	Shadow bool
	// Quota is global quota mode (upstream: QUOTA_MODE): every rule is in
	// quota mode, as if its quota_mode were set.
	Quota bool
	// LocalQuota turns local quota on for every rule, as a rule's
	// LocalQuota does for its own: each Charge given to Multi says so
	// (Charge.Local), and a Multi that leases (cmd/floodgate-ratelimit's,
	// on redisstore's WithLocalQuota) decides a call whose every charge
	// does in memory when each key holds a lease, within the bound
	// docs/envoy.md states. The local cache (LocalCacheBytes) still
	// answers first.
	LocalQuota bool
	// Charging is what a request's descriptors are charged: all or
	// nothing (the zero value), or upstream's (see Charging).
	Charging Charging
	// DynamicMetadata (upstream: RESPONSE_DYNAMIC_METADATA) makes the
	// response carry dynamic_metadata as envoyproxy/ratelimit builds it:
	// the domain, each descriptor (its entries as "key=value", its limit
	// override's text and its hits_addend when set), the request's
	// hits_addend when not 0, and "metadata": the metadata of the rules
	// of the descriptors not over the limit, merged (on a key that two
	// rules give, the earlier descriptor's value stays, and two mappings
	// are merged).
	DynamicMetadata bool
	// Stats hears, for each descriptor of each request a rule limits,
	// the increments of envoyproxy/ratelimit's per-rule counters (see
	// Stats); nil: none, at no cost.
	Stats Stats
	// NearLimitRatio (upstream: NEAR_LIMIT_RATIO) is the share of a
	// rule's requests_per_unit past which Stats counts hits as near the
	// limit; 0 means 0.8, upstream's default.
	NearLimitRatio float32
	// LocalCacheBytes (upstream: LOCAL_CACHE_SIZE_IN_BYTES) bounds a
	// cache, in process, of the keys a limiter refused a request of cost
	// 1, each until that refusal's RetryAfter ends: until then a request
	// naming one is answered from the cache, with no store asked (see
	// the package documentation). It holds LocalCacheBytes /
	// LocalCacheEntryBytes entries, rounded down to a power of two; 0
	// (the default, as upstream's) is no cache.
	LocalCacheBytes int
	// Clock reads the time for what no limiter decides: the reset of a
	// rule that refuses every request (requests_per_unit 0), of
	// UpstreamHeaders, and the local cache's entries. nil:
	// core.SystemClock. It should be the clock of Store's limiters (on
	// Redis, which decides at its own time, the process's clock).
	Clock core.Clock
	// Log hears of what the service drops (limit overrides past the
	// maximum a configuration keeps); nil: nothing is logged.
	Log *slog.Logger
}

// Charging is how the descriptors of one request are charged.
type Charging uint8

const (
	// ChargeAllOrNothing, the default, charges a request's descriptors
	// only when it is admitted; a refused request is charged by none (see
	// the package documentation), and a refused descriptor reports what
	// is left.
	ChargeAllOrNothing Charging = iota
	// ChargeAlways is envoyproxy/ratelimit's default: every descriptor is
	// decided on its own and charged whatever the others say, and one
	// that refuses is charged too, past its limit: it reports 0
	// remaining, and what it had left is spent. A rule of one fixed
	// window (what upstream counts) is enforced by a counter that goes
	// one past the limit, no further: a charge that takes that last unit
	// is over the limit, and kept; a check (hits_addend 0) is over only
	// past the limit, as upstream's. Other limits stop at the limit.
	ChargeAlways
	// ChargeStopWhenOver is envoyproxy/ratelimit with
	// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true: when any descriptor
	// of the request (shadow and quota-mode ones included) would go over
	// its limit, only those are charged, past their limits as under
	// ChargeAlways; the others are not (a request admitted all the same,
	// by quota or shadow mode, is then charged nothing); else all are.
	ChargeStopWhenOver
)

// Valid reports whether c is a known way of charging.
func (c Charging) Valid() bool { return c <= ChargeStopWhenOver }

// String returns the way's name.
func (c Charging) String() string {
	switch c {
	case ChargeAllOrNothing:
		return "all-or-nothing"
	case ChargeAlways:
		return "always"
	case ChargeStopWhenOver:
		return "stop-when-over"
	}
	return fmt.Sprintf("Charging(%d)", int(c))
}

// HeaderNames are the names of envoyproxy/ratelimit's header fields
// (Config.UpstreamHeaders), taken from the descriptor closest to its
// limit (the last one over the limit, not in quota mode, when there is
// one; else the one with the least left):
//
//	Limit:     its requests_per_unit ("10")
//	Remaining: its limit_remaining
//	Reset:     its duration_until_reset in seconds: until its unit's
//	           window ends, for a fixed window (until its quota is whole,
//	           for floodgate's other algorithms)
type HeaderNames struct {
	Limit, Remaining, Reset string
}

// UpstreamHeaderNames returns envoyproxy/ratelimit's default names:
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset.
func UpstreamHeaderNames() *HeaderNames {
	return &HeaderNames{Limit: "RateLimit-Limit", Remaining: "RateLimit-Remaining", Reset: "RateLimit-Reset"}
}

// checkHeaderNames reports what is wrong with h's names: each must be a
// header name, and no two fields the response carries may share one.
func checkHeaderNames(h *HeaderNames, style core.HeaderStyle) error {
	if h == nil {
		return nil
	}
	taken := map[string]string{}
	if style != core.HeadersNone {
		taken["retry-after"] = "Retry-After, which Config.Headers sends"
	}
	if style.Legacy() {
		for _, f := range []fields.Field{fields.Limit, fields.Remaining, fields.Reset} {
			taken[f.Metadata()] = f.HTTP() + ", which Config.Headers sends"
		}
	}
	if style.IETF() {
		for _, f := range []fields.Field{fields.Policy, fields.RateLimit} {
			taken[f.Metadata()] = f.HTTP() + ", which Config.Headers sends"
		}
	}
	for _, n := range [...]struct{ field, name string }{{"Limit", h.Limit}, {"Remaining", h.Remaining}, {"Reset", h.Reset}} {
		if !validHeaderName(n.name) {
			return fmt.Errorf("rls: Config.UpstreamHeaders.%s %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", n.field, n.name)
		}
		low := strings.ToLower(n.name)
		if other, ok := taken[low]; ok {
			return fmt.Errorf("rls: Config.UpstreamHeaders.%s %q is the name of %s; rename it", n.field, n.name, other)
		}
		taken[low] = "UpstreamHeaders." + n.field
	}
	return nil
}

// validHeaderName reports whether s is an HTTP field name (a token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
