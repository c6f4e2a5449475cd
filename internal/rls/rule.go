package rls

import (
	"fmt"
	"strings"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/core"
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
	// Replaces names the rules this one replaces: a request with a
	// descriptor under this rule is not checked against them.
	Replaces []string
}

// Rules finds what applies to one descriptor of a request in domain: its
// rule and the key its state lives at, or a nil rule when no limit
// applies. It is called for every descriptor and must be safe for
// concurrent use.
type Rules interface {
	Match(domain string, d *rlcommon.RateLimitDescriptor) (r *Rule, key string)
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
