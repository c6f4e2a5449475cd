package rules

import (
	"fmt"
	"strings"
	"time"

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
	// Limits are the rule's limits: one, or several enforced all or
	// nothing (a core.Stack).
	Limits []core.Limit
	// Algorithm applies to every limit (default core.TokenBucket).
	Algorithm core.Algorithm
	// WarmUp and ColdFactor configure core.WarmUp; MaxDelay configures
	// core.LeakyBucket (0: core's default).
	WarmUp     time.Duration
	ColdFactor float64
	MaxDelay   time.Duration
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
	fmt.Fprintf(&b, "%q %v %v %v %v", r.Name, r.Algorithm, r.WarmUp, r.ColdFactor, r.MaxDelay)
	for _, l := range r.Limits {
		fmt.Fprintf(&b, " [%d %d %d %q]", l.Events, l.Period, l.EffectiveBurst(), l.Name)
	}
	fmt.Fprintf(&b, " key=%q", r.Key)
	return b.String()
}

// algorithms maps the names the file accepts to core's algorithms: the
// names core's Algorithm.String gives them.
var algorithms = map[string]core.Algorithm{}

func init() {
	for _, a := range []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow,
		core.LeakyBucket, core.WarmUp, core.SlidingLog, core.Concurrency} {
		algorithms[a.String()] = a
	}
}
