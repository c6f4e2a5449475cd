package rls

import (
	"fmt"
	"strings"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// Rule is what applies to the descriptors that fall under one rate limit
// of the configuration.
type Rule struct {
	// ID names the rule across reloads: a rule keeps its limiter, and so
	// its keys' state, while a new configuration has a rule of the same ID
	// and limits.
	ID string
	// Name is the rate limit's name: what other rules' Replaces name, and
	// what the response's current_limit carries.
	Name string
	// Limits all apply to a descriptor under the rule; none when
	// Unlimited.
	Limits []core.Limit
	// RequestsPerUnit and Unit are the limit as configured, for the
	// response's current_limit.
	RequestsPerUnit uint32
	Unit            rlsv3.RateLimitResponse_RateLimit_Unit
	// Unlimited rules are answered OK and never charged.
	Unlimited bool
	// DenyAll rules (a quota of 0) refuse every request, charging
	// nothing; they have no Limits.
	DenyAll bool
	// Quota rules (envoyproxy/ratelimit's quota_mode) refuse a request
	// only when every quota rule of the request refuses it.
	Quota bool
	// Shadow rules are decided and charged but never refuse a request.
	Shadow bool
	// LocalQuota rules (rate_limit's local_quota) have their descriptors
	// decided in memory from leases when Config.Multi leases (see
	// Config.LocalQuota).
	LocalQuota bool
	// Replaces names the rules this one replaces: a request with a
	// descriptor under this rule is not checked against them.
	Replaces []string
	// Metadata is the rule's metadata, which the response's
	// dynamic_metadata carries when Config.DynamicMetadata is set and a
	// request's descriptor under the rule is not over the limit; nil:
	// none. It is shared by every request and never modified.
	Metadata *structpb.Struct
	// StatsKey names the rule to Config.Stats: envoyproxy/ratelimit's
	// key of the rule's statistics (the domain and the key path,
	// "domain.key_value.key2"). A rule of a configuration forms it from
	// each request's values where detailed_metric or value_to_metric say
	// so; this is the key used otherwise.
	StatsKey string

	conf     *rlsconfig.Rule // the configuration's rule, which forms the stats key; nil for others
	override bool            // made up for a descriptor's own limit
}

// Rules finds what applies to one descriptor of a request in domain: its
// rule and the key its state lives at, or a nil rule when no limit
// applies. It is called for every descriptor and must be safe for
// concurrent use.
type Rules interface {
	Match(domain string, d *rlcommon.RateLimitDescriptor) (r *Rule, key string)
}

// statsKey is the key of r's statistics for a descriptor d of a request
// in domain, as envoyproxy/ratelimit forms it: a limit override's names
// the descriptor's entries ("domain.key_value.key2"); a configured rule's
// is rlsconfig's Rule.StatsKey.
func (r *Rule) statsKey(domain string, d *rlcommon.RateLimitDescriptor) string {
	switch {
	case r.override:
		var b strings.Builder
		b.WriteString(domain)
		b.WriteByte('.')
		for i, e := range d.GetEntries() {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.GetKey())
			if v := e.GetValue(); v != "" {
				b.WriteByte('_')
				b.WriteString(v)
			}
		}
		return b.String()
	case r.conf != nil:
		var buf [maxEntries]rlsconfig.Entry
		entries := buf[:0]
		for _, e := range d.GetEntries() {
			entries = append(entries, rlsconfig.Entry{Key: e.GetKey(), Value: e.GetValue()})
		}
		return r.conf.StatsKey(entries)
	}
	return r.StatsKey
}

// check reports what is wrong with r, which the service would otherwise
// find only when a request falls under it.
func (r *Rule) check() error {
	switch {
	case r.ID == "":
		return fmt.Errorf("rls: a rule without an ID (%q)", r.Name)
	case r.Unlimited && r.DenyAll:
		return fmt.Errorf("rls: rule %s is unlimited and denies all", r.ID)
	case (r.Unlimited || r.DenyAll) && len(r.Limits) > 0:
		return fmt.Errorf("rls: rule %s is unlimited or denies all, and has limits", r.ID)
	case !r.Unlimited && !r.DenyAll && len(r.Limits) == 0:
		return fmt.Errorf("rls: rule %s has no limit; mark it unlimited", r.ID)
	}
	for _, l := range r.Limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("rls: rule %s: %w", r.ID, err)
		}
	}
	return nil
}

// signature identifies r's limiter: rules of the same ID and limits share
// one, across reloads too.
func (r *Rule) signature() string {
	var b strings.Builder
	b.WriteString(r.ID)
	for _, l := range r.Limits {
		fmt.Fprintf(&b, "\x00%#v", l)
	}
	return b.String()
}
