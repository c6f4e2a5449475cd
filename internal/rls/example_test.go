package rls_test

import (
	"context"
	"fmt"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
)

// Two descriptors, decided together: once the per-user limit refuses, the
// per-route limit is not charged either.
func Example() {
	route := &rls.Rule{ID: "route", Name: "route", Limits: []core.Limit{core.PerMinute(10).WithName("route")},
		RequestsPerUnit: 10, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}
	user := &rls.Rule{ID: "user", Name: "user", Limits: []core.Limit{core.PerMinute(1).WithName("user")},
		RequestsPerUnit: 1, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}
	svc, _ := rls.New(rls.Config{Store: rls.Memory()})
	_ = svc.SetRules(table{"api|path=/a": {route, "route:/a"}, "api|user=bob": {user, "user:bob"}}, []*rls.Rule{route, user})
	for range 2 {
		resp, _ := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{
			Domain:      "api",
			Descriptors: []*rlcommon.RateLimitDescriptor{desc("path=/a"), desc("user=bob")},
		})
		fmt.Println(resp.GetOverallCode(), resp.GetStatuses()[0].GetLimitRemaining(), resp.GetStatuses()[1].GetLimitRemaining())
	}
	// Output:
	// OK 9 0
	// OVER_LIMIT 9 0
}
