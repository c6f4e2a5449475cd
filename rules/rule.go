package rules

import (
	"fmt"
	"strings"

	"github.com/floodgate/floodgate/core"
)

// Rule is one parsed rule: what it matches and the policy it applies.
type Rule struct {
	// Name identifies the rule in logs and is the policy name clients see
	// in RateLimit-Policy when the limit carries no name= of its own.
	Name string
	// Line is where the rule starts in its file.
	Line int
	// Paths are exact paths ("/login") or prefixes ending in "/*"
	// ("/api/*" matches every path under "/api/"); "/*" matches all.
	Paths []string
	// Methods are HTTP methods, upper case; empty means any.
	Methods []string
	// GRPC are full gRPC methods ("/pkg.Service/Method"), whole services
	// ("/pkg.Service/*") or "*" for every method.
	GRPC []string
	// Limits are the rule's policies: one, or several enforced all or
	// nothing (a core.Stack). Each holds its algorithm and settings: the
	// rule's algorithm, warm-up, cold-factor and max-delay fields, or
	// those its limit string names (algorithm=gcra and the like).
	Limits []core.Limit
	// Key is what the rule counts by: parts joined by "+" (see the package
	// documentation), "ip" by default.
	Key []string
	// Cost is a fixed cost per request (0: 1), or with CostUnit > 0 the
	// body's Content-Length in units of CostUnit bytes, and CostUnknown
	// for a body of unknown length (httpmw.RefuseUnknownLength: refused).
	Cost        int
	CostUnit    int64
	CostUnknown int
	// Shadow runs the rule's middleware in shadow mode (httpmw.WithShadow,
	// grpcmw.WithShadow); ShadowHeaders sends its rate-limit fields.
	Shadow        bool
	ShadowHeaders bool
}

// policy is the part of a rule that decides its limiter's state: two
// rules with the same policy can share one limiter, and a reload keeps
// the limiter of a rule whose policy did not change.
func (r *Rule) policy() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q", r.Name)
	for _, l := range r.Limits {
		l.Burst = l.EffectiveBurst()
		fmt.Fprintf(&b, " [%s]", l)
	}
	fmt.Fprintf(&b, " key=%q", r.Key)
	return b.String()
}
