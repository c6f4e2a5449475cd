package rlsxds_test

import (
	"context"
	"fmt"
	"net"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"

	"github.com/floodgate/floodgate/internal/rlsconfig"
	"github.com/floodgate/floodgate/internal/rlsxds"
)

// A management server pushes one domain; the service's side watches it.
func Example() {
	ctx := context.Background()

	// The control plane: go-control-plane's snapshot cache and server,
	// holding a snapshot for node "ratelimit".
	snapshots := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	snap, err := cachev3.NewSnapshot("1", map[resource.Type][]types.Resource{
		resource.RateLimitConfigType: {&rlsconfv3.RateLimitConfig{
			Name:   "messaging",
			Domain: "messaging",
			Descriptors: []*rlsconfv3.RateLimitDescriptor{{
				Key:       "message_type",
				Value:     "marketing",
				RateLimit: &rlsconfv3.RateLimitPolicy{Unit: rlsconfv3.RateLimitUnit_DAY, RequestsPerUnit: 5},
			}},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := snapshots.SetSnapshot(ctx, "ratelimit", snap); err != nil {
		fmt.Println(err)
		return
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, serverv3.NewServer(ctx, snapshots, nil))
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	// The rate-limit service's side.
	cfg := rlsxds.DefaultConfig()
	cfg.Server = lis.Addr().String()
	cfg.NodeID = "ratelimit"
	loaded := make(chan *rlsconfig.Config, 1)
	w, err := rlsxds.Watch(ctx, cfg, func(c *rlsconfig.Config, errs []error) {
		// A service logs errs; a nil errs means c is new.
		if errs == nil {
			select {
			case loaded <- c:
			default:
			}
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	c := <-loaded
	r := c.Match("messaging", []rlsconfig.Entry{{Key: "message_type", Value: "marketing"}})
	fmt.Printf("version %s: %d per %s, counted under %s\n", w.Version(), r.RequestsPerUnit, r.Unit, r.Key([]rlsconfig.Entry{{Key: "message_type", Value: "marketing"}}))
	// Output:
	// version 1: 5 per day, counted under messaging|message_type=marketing
}

// Resources are checked as the YAML files of the same content are.
func ExampleConvert() {
	_, err := rlsxds.Convert([]*rlsconfv3.RateLimitConfig{{
		Name:   "messaging",
		Domain: "messaging",
		Descriptors: []*rlsconfv3.RateLimitDescriptor{{
			Key:       "message_type",
			RateLimit: &rlsconfv3.RateLimitPolicy{RequestsPerUnit: 5}, // no unit
		}},
	}}, false)
	fmt.Println(err)
	// Output:
	// RateLimitConfig "messaging": descriptors[0].rate_limit.unit: invalid rate limit unit "UNKNOWN"; use second, minute, hour, day, week, month or year (or unlimited: true)
}
