package rls_test

import (
	"context"
	"fmt"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

func TestFromConfig(t *testing.T) {
	const y = `domain: web
descriptors:
  - key: user
    rate_limit:
      name: per-user
      unit: minute
      requests_per_unit: 2
      limits:
        - unit: hour
          requests_per_unit: 10
  - key: path
    value: /free
    rate_limit:
      unlimited: true
  - key: path
    value: /closed
    rate_limit:
      unit: second
      requests_per_unit: 0
`
	d, err := rlsconfig.Parse("web.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rlsconfig.Of([]*rlsconfig.Domain{d, d}); err == nil {
		t.Fatal("two domains of one name")
	}
	rules, all := rls.FromConfig(c)
	if len(all) != 3 {
		t.Fatalf("%d rules", len(all))
	}
	r, key := rules.Match("web", desc("user=bob"))
	if r == nil || r.Name != "per-user" || r.Unit != rlsv3.RateLimitResponse_RateLimit_MINUTE || r.RequestsPerUnit != 2 {
		t.Fatalf("user=bob: %+v", r)
	}
	if r.Limits[0].Name != "per-user" || r.Limits[1].Name != core.DefaultName(r.Limits[1]) || len(r.Limits) != 2 {
		t.Fatalf("limit names: %v", r.Limits)
	}
	if _, other := rules.Match("web", desc("user=ann")); other == key || key == "" {
		t.Fatalf("keys of two users: %q and %q", key, other)
	}
	if r, _ := rules.Match("web", desc("path=/free")); r == nil || !r.Unlimited {
		t.Fatalf("path=/free: %+v", r)
	}
	if r, _ := rules.Match("nope", desc("user=bob")); r != nil {
		t.Fatalf("an unknown domain matched %+v", r)
	}
	svc, err := rls.New(rls.Config{Store: rls.Memory()})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(rules, all); err != nil {
		t.Fatal(err)
	}
	codes := ""
	for range 3 {
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=bob"), desc("path=/free")}})
		if err != nil {
			t.Fatal(err)
		}
		codes += resp.GetOverallCode().String() + " "
	}
	resp, _ := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlcommon.RateLimitDescriptor{desc("path=/closed")}})
	codes += resp.GetOverallCode().String()
	if codes != "OK OK OVER_LIMIT OVER_LIMIT" {
		t.Fatalf("codes: %s", codes)
	}
}

// TestOverride: a descriptor's own limit replaces the configuration's, as
// envoyproxy/ratelimit applies it, for a configured domain only.
func TestOverride(t *testing.T) {
	d, err := rlsconfig.Parse("web.yaml", []byte("domain: web\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: second\n      requests_per_unit: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rls.New(rls.Config{Store: rls.Memory()})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(c)); err != nil {
		t.Fatal(err)
	}
	over := func(rpu uint32, kvs ...string) *rlcommon.RateLimitDescriptor {
		x := desc(kvs...)
		x.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: typev3.RateLimitUnit_MINUTE}
		return x
	}
	ask := func(domain string, x *rlcommon.RateLimitDescriptor) string {
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: []*rlcommon.RateLimitDescriptor{x}})
		if err != nil {
			t.Fatal(err)
		}
		st := resp.GetStatuses()[0]
		return fmt.Sprintf("%s %d/%s", resp.GetOverallCode(), st.GetCurrentLimit().GetRequestsPerUnit(), st.GetCurrentLimit().GetUnit())
	}
	for i, want := range []string{"OK 1/MINUTE", "OVER_LIMIT 1/MINUTE"} {
		if got := ask("web", over(1, "user=bob")); got != want {
			t.Fatalf("override %d: %s, want %s", i, got, want)
		}
	}
	// Any descriptor of the domain, configured or not.
	if got := ask("web", over(1, "other=x")); got != "OK 1/MINUTE" {
		t.Fatalf("override on an unconfigured descriptor: %s", got)
	}
	if got := ask("web", over(0, "user=ann")); got != "OVER_LIMIT 0/MINUTE" {
		t.Fatalf("override of 0: %s", got)
	}
	if got := ask("elsewhere", over(1, "user=bob")); got != "OK 0/UNKNOWN" {
		t.Fatalf("override in an unknown domain: %s", got)
	}
	if got := ask("web", desc("user=bob")); got != "OK 100/SECOND" {
		t.Fatalf("no override: %s", got)
	}
	// A reload (the same configuration loaded again) keeps an override's
	// count, as it keeps a configured rule's.
	if err := svc.SetRules(rls.FromConfig(c)); err != nil {
		t.Fatal(err)
	}
	if got := ask("web", over(1, "user=bob")); got != "OVER_LIMIT 1/MINUTE" {
		t.Fatalf("override after a reload: %s, want its minute still spent", got)
	}
}
