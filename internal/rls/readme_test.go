package rls_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// TestReadmeDecisions drives the service through the decisions
// envoyproxy/ratelimit's README describes for its examples (the matching
// of every example is internal/rlsconfig's TestReadmeExamples, on the same
// files, internal/rlsconfig/testdata/readme): each row
// sends one request n times within one second, on a frozen clock, and
// states how many are admitted.
func TestReadmeDecisions(t *testing.T) {
	rows := []struct {
		source, file string // file: internal/rlsconfig/testdata/readme/file.yaml
		domain       string
		descs        [][]string // each request's descriptors, as k=v entries
		n, admitted  int
	}{
		{"envoyproxy/ratelimit README.md, Example 3: 10 a second per IP", "example-3", "edge_proxy_per_ip",
			[][]string{{"remote_address=50.0.0.1"}}, 12, 10},
		{"README.md, Example 3: each IP its own count", "example-3", "edge_proxy_per_ip",
			[][]string{{"remote_address=50.0.0.2"}}, 10, 10},
		{"README.md, Example 3: the black-listed IP (0 a second)", "example-3", "edge_proxy_per_ip",
			[][]string{{"remote_address=50.0.0.5"}}, 3, 0},
		{"README.md, Example 6: user-a in shadow mode is never refused", "example-6", "example6",
			[][]string{{"service=auth-service", "user=user-a"}}, 25, 25},
		{"README.md, Example 6: user-b at 20 a second", "example-6", "example6",
			[][]string{{"service=auth-service", "user=user-b"}}, 25, 20},
		{"README.md, Example 7: alone, the specific limit (5 a second)", "example-7", "example7",
			[][]string{{"key_1=value_1", "user=bkthomps"}}, 8, 5},
		{"README.md, Example 7: together, the replacing limit alone (10 a second)", "example-7", "example7",
			[][]string{{"key_1=value_1", "user=bkthomps"}, {"key_2=value_2", "user=bkthomps"}}, 12, 10},
	}
	for _, row := range rows {
		t.Run(row.source, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "rlsconfig", "testdata", "readme", row.file+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := rlsconfig.Parse(row.file+".yaml", data)
			if err != nil {
				t.Fatal(err)
			}
			c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
			if err != nil {
				t.Fatal(err)
			}
			clock := coretest.NewClock(time.Unix(1_800_000_000, 0))
			svc, err := rls.New(rls.Config{Store: rls.Memory(core.WithClock(clock))})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.SetRules(rls.FromConfig(c)); err != nil {
				t.Fatal(err)
			}
			var ds []*rlcommon.RateLimitDescriptor
			for _, kvs := range row.descs {
				ds = append(ds, desc(kvs...))
			}
			admitted := 0
			for range row.n {
				resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: row.domain, Descriptors: ds})
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					admitted++
				}
			}
			if admitted != row.admitted {
				t.Fatalf("%d of %d admitted, want %d", admitted, row.n, row.admitted)
			}
		})
	}
}
