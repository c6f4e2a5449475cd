package rlsprom_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floodgate/floodgate/internal/rlsprom"
	"github.com/floodgate/floodgate/internal/rlsstats"
)

// TestUpstreamNames exposes the counters under upstream's names and
// labels: the series of upstream's own sink test, which sums the counts of
// the keys that share a label set.
func TestUpstreamNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := rlsprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Add("domain1.key1_val1", rlsstats.Counts{OverLimit: 1})
	m.Add("domain1.key1_val1.key2_val2", rlsstats.Counts{OverLimit: 2})
	m.Add("domain1.key3_val3.key4_val4", rlsstats.Counts{OverLimit: 1})
	m.Add("domain1.key3_val3.key4_val4.key5_val5", rlsstats.Counts{OverLimit: 2})
	m.Add("mongo_cps.database_users", rlsstats.Counts{TotalHits: 5, WithinLimit: 4, NearLimit: 1, ShadowMode: 1})
	m.Add("domain1.key1_val1.key2_val2", rlsstats.Counts{TotalHits: 3, OverLimit: 3, OverLimitWithLocalCache: 3})
	m.Request("ShouldRateLimit", 2*time.Millisecond)
	m.Error("redis_error")
	m.ConfigLoad(true)
	m.ConfigLoad(false)
	m.ConfigLoad(true)
	want := `
# HELP ratelimit_service_rate_limit_over_limit Hits a rate limit refused.
# TYPE ratelimit_service_rate_limit_over_limit counter
ratelimit_service_rate_limit_over_limit{domain="domain1",key1="key1_val1",key2=""} 1
ratelimit_service_rate_limit_over_limit{domain="domain1",key1="key1_val1",key2="key2_val2"} 5
ratelimit_service_rate_limit_over_limit{domain="domain1",key1="key3_val3",key2="key4_val4"} 3
ratelimit_service_rate_limit_over_limit{domain="mongo_cps",key1="database_users",key2=""} 0
# HELP ratelimit_service_rate_limit_total_hits Hits asked of a rate limit (the sum of the descriptors' hits addends).
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{domain="domain1",key1="key1_val1",key2=""} 0
ratelimit_service_rate_limit_total_hits{domain="domain1",key1="key1_val1",key2="key2_val2"} 3
ratelimit_service_rate_limit_total_hits{domain="domain1",key1="key3_val3",key2="key4_val4"} 0
ratelimit_service_rate_limit_total_hits{domain="mongo_cps",key1="database_users",key2=""} 5
# HELP ratelimit_service_rate_limit_within_limit Hits a rate limit admitted.
# TYPE ratelimit_service_rate_limit_within_limit counter
ratelimit_service_rate_limit_within_limit{domain="domain1",key1="key1_val1",key2=""} 0
ratelimit_service_rate_limit_within_limit{domain="domain1",key1="key1_val1",key2="key2_val2"} 0
ratelimit_service_rate_limit_within_limit{domain="domain1",key1="key3_val3",key2="key4_val4"} 0
ratelimit_service_rate_limit_within_limit{domain="mongo_cps",key1="database_users",key2=""} 4
# HELP ratelimit_service_rate_limit_near_limit Hits admitted past the near-limit ratio of a rate limit.
# TYPE ratelimit_service_rate_limit_near_limit counter
ratelimit_service_rate_limit_near_limit{domain="domain1",key1="key1_val1",key2=""} 0
ratelimit_service_rate_limit_near_limit{domain="domain1",key1="key1_val1",key2="key2_val2"} 0
ratelimit_service_rate_limit_near_limit{domain="domain1",key1="key3_val3",key2="key4_val4"} 0
ratelimit_service_rate_limit_near_limit{domain="mongo_cps",key1="database_users",key2=""} 1
# HELP ratelimit_service_rate_limit_shadow_mode Hits over a rate limit that shadow mode admitted.
# TYPE ratelimit_service_rate_limit_shadow_mode counter
ratelimit_service_rate_limit_shadow_mode{domain="domain1",key1="key1_val1",key2=""} 0
ratelimit_service_rate_limit_shadow_mode{domain="domain1",key1="key1_val1",key2="key2_val2"} 0
ratelimit_service_rate_limit_shadow_mode{domain="domain1",key1="key3_val3",key2="key4_val4"} 0
ratelimit_service_rate_limit_shadow_mode{domain="mongo_cps",key1="database_users",key2=""} 1
# HELP ratelimit_service_rate_limit_over_limit_with_local_cache Hits a rate limit refused from the local cache of refused keys, with no store asked (over_limit counts them too).
# TYPE ratelimit_service_rate_limit_over_limit_with_local_cache counter
ratelimit_service_rate_limit_over_limit_with_local_cache{domain="domain1",key1="key1_val1",key2=""} 0
ratelimit_service_rate_limit_over_limit_with_local_cache{domain="domain1",key1="key1_val1",key2="key2_val2"} 3
ratelimit_service_rate_limit_over_limit_with_local_cache{domain="domain1",key1="key3_val3",key2="key4_val4"} 0
ratelimit_service_rate_limit_over_limit_with_local_cache{domain="mongo_cps",key1="database_users",key2=""} 0
# HELP ratelimit_service_total_requests Calls to the service, by gRPC method.
# TYPE ratelimit_service_total_requests counter
ratelimit_service_total_requests{grpc_method="ShouldRateLimit"} 1
# HELP ratelimit_service_should_rate_limit_error Calls answered by the failure mode (redis_error) or failed (service_error).
# TYPE ratelimit_service_should_rate_limit_error counter
ratelimit_service_should_rate_limit_error{err_type="redis_error"} 1
# HELP ratelimit_service_config_load_success Configurations loaded.
# TYPE ratelimit_service_config_load_success counter
ratelimit_service_config_load_success 2
# HELP ratelimit_service_config_load_error Configuration loads that found an error.
# TYPE ratelimit_service_config_load_error counter
ratelimit_service_config_load_error 1
`
	names := []string{
		"ratelimit_service_rate_limit_over_limit", "ratelimit_service_rate_limit_total_hits", "ratelimit_service_rate_limit_within_limit",
		"ratelimit_service_rate_limit_near_limit", "ratelimit_service_rate_limit_shadow_mode", "ratelimit_service_rate_limit_over_limit_with_local_cache",
		"ratelimit_service_total_requests",
		"ratelimit_service_should_rate_limit_error", "ratelimit_service_config_load_success", "ratelimit_service_config_load_error",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "ratelimit_service_response_time_seconds"); n != 1 {
		t.Errorf("%d response-time series, want 1", n)
	}
}

// TestBounded: a client spraying values into a detailed_metric rule's key
// cannot grow the series past MaxSeries; the rest are counted, as one
// overflow series per domain.
func TestBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := rlsprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	const extra = 500
	for i := range rlsprom.MaxSeries + extra {
		m.Add(fmt.Sprintf("edge.path_/%d", i), rlsstats.Counts{TotalHits: 1})
	}
	m.Add("edge.path_/0", rlsstats.Counts{TotalHits: 1}) // an early key keeps its series
	if n := testutil.CollectAndCount(reg, "ratelimit_service_rate_limit_total_hits"); n != rlsprom.MaxSeries+1 {
		t.Errorf("%d series, want %d and the overflow one", n, rlsprom.MaxSeries)
	}
	total := 0.0
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "ratelimit_service_rate_limit_total_hits" {
			continue
		}
		for _, s := range mf.GetMetric() {
			v := s.GetCounter().GetValue()
			total += v
			for _, l := range s.GetLabel() {
				if l.GetName() == "key1" && l.GetValue() == "overflow" && v != extra {
					t.Errorf("overflow series %v, want %d", v, extra)
				}
				if l.GetName() == "key1" && l.GetValue() == "path_/0" && v != 2 {
					t.Errorf("path_/0 series %v, want 2", v)
				}
			}
		}
	}
	if total != rlsprom.MaxSeries+extra+1 {
		t.Errorf("total hits %v, want every one counted (%d)", total, rlsprom.MaxSeries+extra+1)
	}
}

func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := rlsprom.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := rlsprom.New(reg); err == nil || !strings.HasPrefix(err.Error(), "rlsprom: ") {
		t.Errorf("second New: %v", err)
	}
}
