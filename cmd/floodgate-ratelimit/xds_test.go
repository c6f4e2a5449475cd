package main

import (
	"context"
	"net"
	"strings"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// perMinuteConfig is a RateLimitConfig of domain: (key, any value) n a
// minute.
func perMinuteConfig(domain, key string, n uint32) *rlsconfv3.RateLimitConfig {
	return &rlsconfv3.RateLimitConfig{Name: domain, Domain: domain, Descriptors: []*rlsconfv3.RateLimitDescriptor{{
		Key: key, RateLimit: &rlsconfv3.RateLimitPolicy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: n},
	}}}
}

// TestXDS: with CONFIG_TYPE=GRPC_XDS_SOTW the configuration comes from an
// xDS control plane (go-control-plane's server with a snapshot cache, as
// Envoy Gateway's is built): NOT_SERVING until the first push, then its
// limits; an update replaces them; a resource the store cannot take is
// refused and the configuration in force stays; each load is counted
// under upstream's metric names.
func TestXDS(t *testing.T) {
	cache := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gs := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, cache, nil))
	go func() { _ = gs.Serve(l) }()
	defer gs.Stop()
	set := func(version string, rcs ...*rlsconfv3.RateLimitConfig) {
		t.Helper()
		rs := make([]types.Resource, len(rcs))
		for i, r := range rcs {
			rs[i] = r
		}
		snap, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: rs})
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.SetSnapshot(context.Background(), "test-node-id", snap); err != nil {
			t.Fatal(err)
		}
	}

	r := launch(t, map[string]string{
		"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": l.Addr().String(), "CONFIG_GRPC_XDS_NODE_ID": "test-node-id",
		"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL": "50ms", "XDS_CLIENT_BACKOFF_MAX_INTERVAL": "200ms",
	}, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0")
	c := dial(t, r.addrs.grpc, nil)
	if st := healthOf(t, c, "ratelimit"); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health before a push: %v", st)
	}
	client := rlsv3.NewRateLimitServiceClient(c)
	codes := func(n int, domain, kv string) string {
		t.Helper()
		var out []string
		for range n {
			resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: []*rlcommon.RateLimitDescriptor{desc(kv)}})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, resp.GetOverallCode().String())
		}
		return strings.Join(out, " ")
	}

	set("1", perMinuteConfig("edge", "client", 2))
	waitFor(t, "SERVING after the first push", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
	if got := codes(3, "edge", "client=a"); got != "OK OK OVER_LIMIT" {
		t.Fatalf("version 1, 2 a minute: %s", got)
	}

	set("2", perMinuteConfig("edge", "client", 2), perMinuteConfig("api", "key", 1))
	waitFor(t, "version 2's second domain", func() bool {
		resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "api", Descriptors: []*rlcommon.RateLimitDescriptor{desc("key=k0")}})
		return err == nil && len(resp.GetStatuses()) == 1 && resp.GetStatuses()[0].GetCurrentLimit() != nil
	})
	if got := codes(1, "edge", "client=a"); got != "OVER_LIMIT" {
		t.Fatalf("an unchanged rule keeps its count across an update: %s", got)
	}

	// A descriptor with no key is not a configuration: refused, and
	// version 2 stays.
	bad := perMinuteConfig("api", "", 1)
	set("3", perMinuteConfig("edge", "client", 2), bad)
	waitFor(t, "the refusal logged", func() bool {
		return strings.Contains(r.out.String(), "configuration") && strings.Contains(r.out.String(), "level=ERROR")
	})
	if got := codes(2, "api", "key=k1"); got != "OK OVER_LIMIT" {
		t.Fatalf("after a refused version: %s", got)
	}
	metrics := get(t, "http://"+r.addrs.http+"/metrics")
	if strings.Count(r.out.String(), "configuration loaded") != 2 {
		t.Errorf("want the two versions loaded, no more:\n%s", r.out)
	}
	for _, want := range []string{"ratelimit_service_config_load_success 2", "ratelimit_service_config_load_error "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
