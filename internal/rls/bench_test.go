package rls_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// BenchmarkShouldRateLimit is the service's own work on a request of three
// descriptors, each under its own rule, over 4,096 values, in memory:
// matching, deciding all or nothing, and the response with its header
// fields (BenchmarkEnvoyRLS in the benchmarks module measures it over gRPC
// and Redis).
func BenchmarkShouldRateLimit(b *testing.B) {
	d, err := rlsconfig.Parse("bench.yaml", []byte(`domain: bench
descriptors:
  - key: k1
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: k2
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: k3
    rate_limit: {unit: second, requests_per_unit: 1000000000}
`))
	if err != nil {
		b.Fatal(err)
	}
	c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := rls.New(rls.Config{Store: rls.Memory()})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(c)); err != nil {
		b.Fatal(err)
	}
	reqs := make([]*rlsv3.RateLimitRequest, 4096)
	for i := range reqs {
		req := &rlsv3.RateLimitRequest{Domain: "bench"}
		for _, k := range []string{"k1", "k2", "k3"} {
			req.Descriptors = append(req.Descriptors, &rlcommon.RateLimitDescriptor{
				Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: k, Value: fmt.Sprint("v", i)}},
			})
		}
		reqs[i] = req
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := svc.ShouldRateLimit(context.Background(), reqs[next.Add(1)%int64(len(reqs))])
			if err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
				b.Fatalf("%v, %v", resp, err)
			}
		}
	})
}
