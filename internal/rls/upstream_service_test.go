package rls_test

import (
	"fmt"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
)

// TestUpstreamService replays envoyproxy/ratelimit's own test cases
// against the service, in memory and on Redis: its service tests
// (test/service/ratelimit_test.go), the cases of its Redis cache's tests
// (test/redis/fixed_cache_impl_test.go) that a real store can reach, and
// the decisions of its integration tests
// (test/integration/integration_test.go). Upstream's service tests mock
// the cache: a row reaches the counts the mock returns by sending requests
// first (pre), and expects what a real store adds (the reset, the counts
// of statuses the mock left at 0). Every request carries hits_addend 1,
// as upstream's test helper sets it.
//
// A row marked upstream is a difference docs/envoy.md lists: it passes
// with the Config field it sets, which stands for upstream's behaviour
// (all of upstream's tests run with its default,
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false: ChargeAlways), and fails
// with floodgate's default. Not ported: health, tracing and configuration
// loading (other packages' tests), the local cache's own gauges
// (ratelimit.localcache.*: its hits, misses and entries) and
// base_limiter_test.go's direct calls, whose counts before and after no
// store can hold (their rules are those of the rows below). The local
// cache's decisions and counters are (Config.LocalCacheBytes).
func TestUpstreamService(t *testing.T) {
	t.Parallel()
	runPort(t, upstreamRows())
}

func upstreamRows() []portRow {
	const svc = "test/service/ratelimit_test.go "
	const cache = "test/redis/fixed_cache_impl_test.go "
	const integ = "test/integration/integration_test.go "
	always := func(c *rls.Config) { c.Charging = rls.ChargeAlways }
	fooBar, helloWorld := desc("foo=bar"), desc("hello=world")
	two := func(domain string) *rlsv3.RateLimitRequest { return rq(domain, 1, fooBar, helloWorld) }
	rows := []portRow{
		{source: svc + "TestService (a descriptor no rule matches)",
			yaml:  []string{"domain: test-domain\ndescriptors:\n  - key: other\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"},
			steps: []portStep{{req: rq("test-domain", 1, helloWorld), want: resp(OK, none())}}},
		{source: svc + "TestService (over a limit named key_name)",
			yaml: []string{"domain: different-domain\ndescriptors:\n  - key: foo\n    value: bar\n    rate_limit: {unit: minute, requests_per_unit: 10, name: key_name}\n"},
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, fooBar), 10}}, req: two("different-domain"),
				want: resp(OVER, named(st(OVER, 10, mnt, 0), "key_name"), none())}}},
		{source: svc + "TestService (the other descriptor over its limit)",
			yaml: []string{"domain: different-domain\ndescriptors:\n  - key: hello\n    value: world\n    rate_limit: {unit: minute, requests_per_unit: 10}\n"},
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, helloWorld), 10}}, req: two("different-domain"),
				want: resp(OVER, none(), st(OVER, 10, mnt, 0))}}},
		{source: svc + "TestServiceGlobalShadowMode", config: rls.Config{Shadow: true},
			yaml: []string{"domain: different-domain\ndescriptors:\n  - key: foo\n    value: bar\n    rate_limit: {unit: minute, requests_per_unit: 10}\n"},
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, fooBar), 10}}, req: two("different-domain"),
				want: resp(OK, st(OVER, 10, mnt, 0), none())}}},
		{source: svc + "TestRuleShadowMode",
			yaml: []string{`domain: different-domain
descriptors:
  - {key: foo, value: bar, shadow_mode: true, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: hello, value: world, shadow_mode: true, rate_limit: {unit: minute, requests_per_unit: 10}}
`},
			// The mock gives the second status no limit; a real store
			// reports both.
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, fooBar), 10}, {rq("different-domain", 1, helloWorld), 10}}, req: two("different-domain"),
				want: resp(OK, st(OK, 10, mnt, 0), st(OK, 10, mnt, 0))}}},
		{source: svc + "TestMixedRuleShadowMode", upstream: always,
			yaml: []string{`domain: different-domain
descriptors:
  - {key: foo, value: bar, shadow_mode: true, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: hello, value: world, rate_limit: {unit: minute, requests_per_unit: 10}}
`},
			// All or nothing, a refused request's shadow descriptor is not
			// decided: its status has no count.
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, fooBar), 10}, {rq("different-domain", 1, helloWorld), 10}}, req: two("different-domain"),
				want: resp(OVER, st(OK, 10, mnt, 0), st(OVER, 10, mnt, 0))}}},
		{source: svc + "TestServiceWithCustomRatelimitHeaders",
			config: rls.Config{Headers: core.HeadersNone, UpstreamHeaders: &rls.HeaderNames{Limit: "A-Ratelimit-Limit", Remaining: "A-Ratelimit-Remaining", Reset: "A-Ratelimit-Reset"}},
			yaml:   []string{"domain: different-domain\ndescriptors:\n  - key: foo\n    value: bar\n    rate_limit: {unit: minute, requests_per_unit: 10}\n"},
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, fooBar), 10}}, req: two("different-domain"),
				want: withHeaders(resp(OVER, st(OVER, 10, mnt, 0), none()), "A-Ratelimit-Limit", "10", "A-Ratelimit-Remaining", "0", "A-Ratelimit-Reset", "@MINUTE")}}},
		{source: svc + "TestServiceWithDefaultRatelimitHeaders",
			config: rls.Config{Headers: core.HeadersNone, UpstreamHeaders: rls.UpstreamHeaderNames()},
			yaml:   []string{"domain: different-domain\ndescriptors:\n  - key: foo\n    value: bar\n    rate_limit: {unit: minute, requests_per_unit: 10}\n"},
			steps: []portStep{{pre: []fill{{rq("different-domain", 1, fooBar), 10}}, req: two("different-domain"),
				want: withHeaders(resp(OVER, st(OVER, 10, mnt, 0), none()), "RateLimit-Limit", "10", "RateLimit-Remaining", "0", "RateLimit-Reset", "@MINUTE")}}},
		{source: svc + "TestEmptyDomain", yaml: []string{"domain: test-domain\n"},
			steps: []portStep{{req: rq("", 1, helloWorld), err: true}}},
		{source: svc + "TestEmptyDescriptors", yaml: []string{"domain: test-domain\n"},
			steps: []portStep{{req: rq("test-domain", 1), err: true}}},
		{source: svc + "TestCacheError", down: true, upstream: func(c *rls.Config) { c.FailCall = true },
			yaml:  []string{"domain: different-domain\ndescriptors:\n  - key: foo\n    value: bar\n    rate_limit: {unit: minute, requests_per_unit: 10}\n"},
			steps: []portStep{{req: rq("different-domain", 1, fooBar), err: true}}},
		{source: svc + "TestInitialLoadError",
			steps: []portStep{{req: rq("test-domain", 1, helloWorld), err: true}}},
		{source: svc + "TestUnlimited",
			yaml: []string{`domain: some-domain
descriptors:
  - {key: foo, value: bar, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: baz, value: qux, rate_limit: {unlimited: true}}
`},
			steps: []portStep{{req: rq("some-domain", 1, fooBar, helloWorld, desc("baz=qux")),
				want: resp(OK, st(OK, 10, mnt, 9), none(), unlimited())}}},
		{source: svc + "TestServiceGlobalQuotaMode", config: rls.Config{Quota: true},
			yaml: []string{`domain: quota-domain
descriptors:
  - {key: foo, value: bar, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: hello, value: world, rate_limit: {unit: minute, requests_per_unit: 5}}
`},
			steps: []portStep{{pre: []fill{{rq("quota-domain", 1, fooBar), 10}, {rq("quota-domain", 1, helloWorld), 5}}, req: two("quota-domain"),
				want: resp(OVER, st(OVER, 10, mnt, 0), st(OVER, 5, mnt, 0))}}},
	}
	// The metadata cases: the rules' metadata of the descriptors not
	// over the limit, under global quota mode.
	regular, quota := desc("regular=limit"), desc("quota=limit")
	meta := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(map[string]any{"domain": "quota-domain", "hitsAddend": 1,
			"descriptors": []any{map[string]any{"entries": []any{"regular=limit"}}, map[string]any{"entries": []any{"quota=limit"}}}, "metadata": m})
		if err != nil {
			panic(err)
		}
		return s
	}
	withMeta := func(r *rlsv3.RateLimitResponse, m *structpb.Struct) *rlsv3.RateLimitResponse {
		r.DynamicMetadata = m
		return r
	}
	metaConfig := rls.Config{Quota: true, DynamicMetadata: true}
	rows = append(rows,
		portRow{source: svc + "TestMetadataReturnedForPassedDescriptors", config: metaConfig,
			yaml: []string{`domain: quota-domain
descriptors:
  - {key: regular, value: limit, metadata: {name: service_1}, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: quota, value: limit, quota_mode: true, metadata: {name: service_2}, rate_limit: {unit: minute, requests_per_unit: 5}}
`},
			steps: []portStep{{pre: []fill{{rq("quota-domain", 1, regular), 4}, {rq("quota-domain", 1, quota), 5}}, req: rq("quota-domain", 1, regular, quota),
				want: withMeta(resp(OK, st(OK, 10, mnt, 5), st(OVER, 5, mnt, 0)), meta(map[string]any{"name": "service_1"}))}}},
		// The mock's counts (5 and 6 left) are past what the limits hold;
		// a real store's are those of a first request.
		portRow{source: svc + "TestMetadataReturnedForAllPassedDescriptors", config: metaConfig,
			yaml: []string{`domain: quota-domain
descriptors:
  - {key: regular, value: limit, quota_mode: true, metadata: {name: service_1}, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: quota, value: limit, quota_mode: true, metadata: {some_other_name: service_2}, rate_limit: {unit: minute, requests_per_unit: 5}}
`},
			steps: []portStep{{req: rq("quota-domain", 1, regular, quota),
				want: withMeta(resp(OK, st(OK, 10, mnt, 9), st(OK, 5, mnt, 4)), meta(map[string]any{"name": "service_1", "some_other_name": "service_2"}))}}},
		portRow{source: svc + "TestOverlappingMetadataReturnsTheFirstValue", config: metaConfig,
			yaml: []string{`domain: quota-domain
descriptors:
  - {key: regular, value: limit, quota_mode: true, metadata: {name: service_1}, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: quota, value: limit, quota_mode: true, metadata: {name: service_2}, rate_limit: {unit: minute, requests_per_unit: 5}}
`},
			steps: []portStep{{req: rq("quota-domain", 1, regular, quota),
				want: withMeta(resp(OK, st(OK, 10, mnt, 9), st(OK, 5, mnt, 4)), meta(map[string]any{"name": "service_1"}))}}},
	)
	// The quota-mode cases: regular=limit (5 a minute) and quota=limit
	// (3 a minute, quota_mode), or two rules in quota mode.
	const mixed = `domain: quota-domain
descriptors:
  - {key: regular, value: limit, rate_limit: {unit: minute, requests_per_unit: 5}}
  - {key: quota, value: limit, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 3}}
`
	const quotas = `domain: quota-domain
descriptors:
  - {key: quota1, value: limit, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 5}}
  - {key: quota2, value: limit, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 3}}
`
	q1, q2 := desc("quota1=limit"), desc("quota2=limit")
	pre := func(a, b *rlcommon.RateLimitDescriptor, na, nb int) []fill {
		return []fill{{rq("quota-domain", 1, a), na}, {rq("quota-domain", 1, b), nb}}
	}
	rows = append(rows,
		// All or nothing, the refused request does not charge quota=limit:
		// it has one left.
		portRow{source: svc + "TestServicePerDescriptorQuotaMode", yaml: []string{mixed}, upstream: always,
			steps: []portStep{{pre: pre(regular, quota, 5, 2), req: rq("quota-domain", 1, regular, quota),
				want: resp(OVER, st(OVER, 5, mnt, 0), st(OK, 3, mnt, 0))}}},
		portRow{source: svc + "TestServiceMixedPerDescriptorModes", yaml: []string{mixed}, upstream: always,
			steps: []portStep{{pre: pre(regular, quota, 4, 3), req: rq("quota-domain", 1, regular, quota),
				want: resp(OVER, st(OK, 5, mnt, 0), st(OVER, 3, mnt, 0))}}},
		portRow{source: svc + "TestServiceMixedPerDescriptorModesUnderLimit", yaml: []string{mixed},
			steps: []portStep{{pre: pre(regular, quota, 4, 2), req: rq("quota-domain", 1, regular, quota),
				want: resp(OK, st(OK, 5, mnt, 0), st(OK, 3, mnt, 0))}}},
		portRow{source: svc + "TestServiceQuotaModeOnlyAllOverTheLimit", yaml: []string{quotas},
			steps: []portStep{{pre: pre(q1, q2, 5, 3), req: rq("quota-domain", 1, q1, q2),
				want: resp(OVER, st(OVER, 5, mnt, 0), st(OVER, 3, mnt, 0))}}},
		portRow{source: svc + "TestServiceQuotaModeOnlySomeOverTheLimit", yaml: []string{quotas},
			steps: []portStep{{pre: pre(q1, q2, 5, 2), req: rq("quota-domain", 1, q1, q2),
				want: resp(OK, st(OVER, 5, mnt, 0), st(OK, 3, mnt, 0))}}},
		portRow{source: svc + "TestServiceQuotaModeWithShadowMode", config: rls.Config{Shadow: true},
			yaml: []string{`domain: quota-domain
descriptors:
  - {key: regular, value: limit, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 5}}
  - {key: quota, value: limit, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 3}}
`},
			steps: []portStep{{pre: pre(regular, quota, 5, 3), req: rq("quota-domain", 1, regular, quota),
				want: resp(OK, st(OVER, 5, mnt, 0), st(OVER, 3, mnt, 0))}}},
		portRow{source: svc + "TestServiceMixedModeWithShadowMode", config: rls.Config{Shadow: true}, yaml: []string{mixed},
			steps: []portStep{{pre: pre(regular, quota, 5, 3), req: rq("quota-domain", 1, regular, quota),
				want: resp(OK, st(OVER, 5, mnt, 0), st(OVER, 3, mnt, 0))}}},
	)
	rows = append(rows, cacheRows(cache, always)...)
	rows = append(rows, integrationRows(integ, always)...)
	return rows
}

// cacheRows are test/redis/fixed_cache_impl_test.go's cases: the counts
// its mock returns are reached by sending requests first, and its rules'
// statistics are those of a configuration's rule (domain.key_value).
func cacheRows(src string, always func(*rls.Config)) []portRow {
	const domain = `domain: domain
descriptors:
  - {key: key, value: value, rate_limit: {unit: second, requests_per_unit: 10}}
  - key: key2
    value: value2
    descriptors:
      - {key: subkey2, value: subvalue2, rate_limit: {unit: minute, requests_per_unit: 10}}
  - key: key3
    value: value3
    rate_limit: {unit: hour, requests_per_unit: 10}
    descriptors:
      - {key: subkey3, value: subvalue3, rate_limit: {unit: day, requests_per_unit: 10}}
  - {key: key4, value: value4, rate_limit: {unit: hour, requests_per_unit: 15}}
  - {key: key5, value: value5, rate_limit: {unit: second, requests_per_unit: 20}}
  - {key: key6, value: value6, rate_limit: {unit: second, requests_per_unit: 8}}
  - {key: key7, value: value7, rate_limit: {unit: second, requests_per_unit: 20}}
  - {key: key8, value: value8, rate_limit: {unit: second, requests_per_unit: 20}}
  - {key: key9, value: value9, rate_limit: {unit: second, requests_per_unit: 20}}
  - {key: key10, value: value10, rate_limit: {unit: second, requests_per_unit: 10}}
`
	one := func(hits uint32, kv string) *rlsv3.RateLimitRequest { return rq("domain", hits, desc(kv)) }
	k4 := one(1, "key4=value4")
	type C = rls.Counts
	nearRow := func(n int, key string, rpu uint32, hits uint32, code rlsv3.RateLimitResponse_Code, left uint32, c C) portRow {
		kv := key + "=" + "value" + key[3:]
		return portRow{source: fmt.Sprintf("%sTestNearLimit (%s, %d hits on %d of %d)", src, key, hits, n, rpu), yaml: []string{domain},
			steps: []portStep{{pre: []fill{{one(1, kv), n}}, req: one(hits, kv), want: resp(code, st(code, rpu, sec, left)),
				stats: map[string]C{"domain." + key + "_value" + key[3:]: c}}}}
	}
	k2 := []*rlcommon.RateLimitDescriptor{dh(0, "key2=value2"), dh(1, "key2=value2", "subkey2=subvalue2")}
	k3 := []*rlcommon.RateLimitDescriptor{dh(0, "key3=value3"), dh(1, "key3=value3", "subkey3=subvalue3")}
	rows := []portRow{
		{source: src + "TestRedis (within the limit)", yaml: []string{domain},
			steps: []portStep{{pre: []fill{{one(1, "key=value"), 4}}, req: one(1, "key=value"),
				want: resp(OK, st(OK, 10, sec, 5)), stats: map[string]C{"domain.key_value": {TotalHits: 1, WithinLimit: 1}}}}},
		// A descriptor with hits_addend 0 and no rule; the other over its limit.
		{source: src + "TestRedis (a check without a rule, one over the limit)", yaml: []string{domain},
			steps: []portStep{{pre: []fill{{rq("domain", 1, desc("key2=value2", "subkey2=subvalue2")), 10}}, req: rq("domain", 1, k2...),
				want:  resp(OVER, none(), st(OVER, 10, mnt, 0)),
				stats: map[string]C{"domain.key2_value2.subkey2_subvalue2": {TotalHits: 1, OverLimit: 1}}}}},
		// A check (hits_addend 0) past the limit is over it, and counts
		// nothing.
		{source: src + "TestRedis (a check past the limit)", yaml: []string{domain},
			steps: []portStep{{pre: []fill{{rq("domain", 1, desc("key3=value3")), 10}, {rq("domain", 1, desc("key3=value3", "subkey3=subvalue3")), 10}}, req: rq("domain", 1, k3...),
				want:  resp(OVER, st(OVER, 10, hour, 0), st(OVER, 10, day, 0)),
				stats: map[string]C{"domain.key3_value3": {}, "domain.key3_value3.subkey3_subvalue3": {TotalHits: 1, OverLimit: 1}}}}},
		{source: src + "TestNearLimit (key4: under, at and over the near-limit ratio)", yaml: []string{domain},
			steps: []portStep{
				{pre: []fill{{k4, 10}}, req: k4, want: resp(OK, st(OK, 15, hour, 4)), stats: map[string]C{"domain.key4_value4": {TotalHits: 1, WithinLimit: 1}}},
				{pre: []fill{{k4, 1}}, req: k4, want: resp(OK, st(OK, 15, hour, 2)), stats: map[string]C{"domain.key4_value4": {TotalHits: 2, NearLimit: 1, WithinLimit: 2}}},
				{pre: []fill{{k4, 2}}, req: k4, want: resp(OVER, st(OVER, 15, hour, 0)), stats: map[string]C{"domain.key4_value4": {TotalHits: 3, OverLimit: 1, NearLimit: 1, WithinLimit: 2}}},
			}},
		nearRow(2, "key5", 20, 3, OK, 15, C{TotalHits: 3, WithinLimit: 3}),
		nearRow(5, "key6", 8, 2, OK, 1, C{TotalHits: 2, NearLimit: 1, WithinLimit: 2}),
		nearRow(16, "key7", 20, 3, OK, 1, C{TotalHits: 3, NearLimit: 3, WithinLimit: 3}),
		// Upstream's count goes from 27 to 30; floodgate's stops at the
		// limit: the same case, all of the hits over the limit.
		nearRow(10, "key10", 10, 3, OVER, 0, C{TotalHits: 3, OverLimit: 3}),
	}
	// Some of the hits over the limit: all or nothing, the refusal
	// reports what is left (1 and 5); upstream, 0.
	for _, r := range []portRow{
		nearRow(19, "key8", 20, 3, OVER, 0, C{TotalHits: 3, OverLimit: 2, NearLimit: 1}),
		nearRow(15, "key9", 20, 7, OVER, 0, C{TotalHits: 7, OverLimit: 2, NearLimit: 4}),
	} {
		r.upstream = always
		rows = append(rows, r)
	}
	k5 := desc("key5=value5")
	both := func(a, b uint64) *rlsv3.RateLimitRequest {
		return rq("domain", 1, dh(a, "key4=value4"), dh(b, "key5=value5"))
	}
	rows = append(rows,
		portRow{source: src + "TestOverLimitWithStopCacheKeyIncrementWhenOverlimitConfig", config: rls.Config{Charging: rls.ChargeStopWhenOver},
			yaml: []string{"domain: domain\ndescriptors:\n  - {key: key4, value: value4, rate_limit: {unit: hour, requests_per_unit: 15}}\n  - {key: key5, value: value5, rate_limit: {unit: hour, requests_per_unit: 14}}\n"},
			steps: []portStep{
				{pre: []fill{{k4, 10}, {rq("domain", 1, k5), 10}}, req: both(1, 1), want: resp(OK, st(OK, 15, hour, 4), st(OK, 14, hour, 3)),
					stats: map[string]C{"domain.key4_value4": {TotalHits: 1, WithinLimit: 1}, "domain.key5_value5": {TotalHits: 1, WithinLimit: 1}}},
				{req: both(2, 2), want: resp(OK, st(OK, 15, hour, 2), st(OK, 14, hour, 1)),
					stats: map[string]C{"domain.key4_value4": {TotalHits: 3, NearLimit: 1, WithinLimit: 3}, "domain.key5_value5": {TotalHits: 3, NearLimit: 2, WithinLimit: 3}}},
				// key5 would go over: it alone is charged.
				{req: both(2, 2), want: resp(OVER, st(OK, 15, hour, 2), st(OVER, 14, hour, 0)),
					stats: map[string]C{"domain.key4_value4": {TotalHits: 5, NearLimit: 2, WithinLimit: 5}, "domain.key5_value5": {TotalHits: 5, OverLimit: 1, NearLimit: 3, WithinLimit: 3}}},
				// key4 was not charged: 2 are still left.
				{req: rq("domain", 1, dh(2, "key4=value4")), want: resp(OK, st(OK, 15, hour, 0)),
					stats: map[string]C{"domain.key4_value4": {TotalHits: 7, NearLimit: 4, WithinLimit: 7}}},
			}},
		portRow{source: src + "TestOverLimitWithLocalCache", config: rls.Config{LocalCacheBytes: 100},
			yaml: []string{"domain: domain\ndescriptors:\n  - {key: key4, value: value4, rate_limit: {unit: hour, requests_per_unit: 15}}\n"},
			steps: []portStep{
				{pre: []fill{{k4, 10}}, req: k4, want: resp(OK, st(OK, 15, hour, 4)), stats: map[string]C{"domain.key4_value4": {TotalHits: 1, WithinLimit: 1}}},
				{pre: []fill{{k4, 1}}, req: k4, want: resp(OK, st(OK, 15, hour, 2)), stats: map[string]C{"domain.key4_value4": {TotalHits: 2, NearLimit: 1, WithinLimit: 2}}},
				{pre: []fill{{k4, 2}}, req: k4, want: resp(OVER, st(OVER, 15, hour, 0)), stats: map[string]C{"domain.key4_value4": {TotalHits: 3, OverLimit: 1, NearLimit: 1, WithinLimit: 2}}},
				// From the local cache.
				{req: k4, want: resp(OVER, st(OVER, 15, hour, 0)), stats: map[string]C{"domain.key4_value4": {TotalHits: 4, OverLimit: 2, OverLimitWithLocalCache: 1, NearLimit: 1, WithinLimit: 2}}},
			}},
		portRow{source: src + "TestOverLimitWithLocalCacheShadowRule", config: rls.Config{LocalCacheBytes: 100},
			yaml: []string{"domain: domain\ndescriptors:\n  - {key: key4, value: value4, shadow_mode: true, rate_limit: {unit: hour, requests_per_unit: 15}}\n"},
			steps: []portStep{
				{pre: []fill{{k4, 10}}, req: k4, want: resp(OK, st(OK, 15, hour, 4)), stats: map[string]C{"domain.key4_value4": {TotalHits: 1, WithinLimit: 1}}},
				{pre: []fill{{k4, 1}}, req: k4, want: resp(OK, st(OK, 15, hour, 2)), stats: map[string]C{"domain.key4_value4": {TotalHits: 2, NearLimit: 1, WithinLimit: 2}}},
				{pre: []fill{{k4, 2}}, req: k4, want: resp(OK, st(OK, 15, hour, 0)), stats: map[string]C{"domain.key4_value4": {TotalHits: 3, OverLimit: 1, NearLimit: 1, WithinLimit: 2, ShadowMode: 1}}},
				{req: k4, want: resp(OK, st(OK, 15, hour, 0)), stats: map[string]C{"domain.key4_value4": {TotalHits: 4, OverLimit: 2, OverLimitWithLocalCache: 1, NearLimit: 1, WithinLimit: 2, ShadowMode: 2}}},
			}},
		portRow{source: src + "TestOverLimitWithLocalCacheShadowRule (its statuses and counters, without the local cache)",
			yaml: []string{"domain: domain\ndescriptors:\n  - {key: key4, value: value4, shadow_mode: true, rate_limit: {unit: hour, requests_per_unit: 15}}\n"},
			steps: []portStep{
				{pre: []fill{{k4, 10}}, req: k4, want: resp(OK, st(OK, 15, hour, 4)), stats: map[string]C{"domain.key4_value4": {TotalHits: 1, WithinLimit: 1}}},
				{pre: []fill{{k4, 1}}, req: k4, want: resp(OK, st(OK, 15, hour, 2)), stats: map[string]C{"domain.key4_value4": {TotalHits: 2, NearLimit: 1, WithinLimit: 2}}},
				{pre: []fill{{k4, 2}}, req: k4, want: resp(OK, st(OK, 15, hour, 0)), stats: map[string]C{"domain.key4_value4": {TotalHits: 3, OverLimit: 1, NearLimit: 1, WithinLimit: 2, ShadowMode: 1}}},
			}},
	)
	return rows
}

// integrationRows are test/integration/integration_test.go's decisions:
// testBasicBaseConfig under STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT false
// (upstream's default) and true, and testShareThreshold, with its
// configuration files (test/integration/runtime/current/ratelimit/config).
func integrationRows(src string, always func(*rls.Config)) []portRow {
	const basic = `domain: basic
descriptors:
  - {key: key1, rate_limit: {unit: second, requests_per_unit: 50}}
  - {key: key1_local, rate_limit: {unit: second, requests_per_unit: 50}}
  - {key: one_per_minute, rate_limit: {unit: minute, requests_per_unit: 1}}
`
	const another = `domain: another
descriptors:
  - {key: key2, rate_limit: {unit: minute, requests_per_unit: 20}}
  - {key: key3, rate_limit: {unit: hour, requests_per_unit: 10}}
  - {key: key2_local, rate_limit: {unit: minute, requests_per_unit: 20}}
  - {key: key3_local, rate_limit: {unit: hour, requests_per_unit: 10}}
  - {key: key4, rate_limit: {unit: day, requests_per_unit: 20}}
  - {key: key4_local, rate_limit: {unit: day, requests_per_unit: 20}}
`
	base := func(stop bool) []portStep {
		steps := []portStep{
			{req: rq("foo", 1, desc("hello=world")), want: resp(OK, none())},
			{req: rq("basic", 1, desc("key1=foo")), want: resp(OK, st(OK, 50, sec, 49)), hits: map[string][2]uint64{"basic.key1": {1, 0}}},
		}
		for i := range 25 {
			code, left := OK, uint32(20-(i+1))
			if i >= 20 {
				code, left = OVER, 0
			}
			steps = append(steps, portStep{req: rq("another", 1, desc("key2=7")), want: resp(code, st(code, 20, mnt, left)),
				hits: map[string][2]uint64{"another.key2": {uint64(i + 1), uint64(max(0, i-19))}}})
		}
		for i := range 15 {
			code, left1, left2 := OK, uint32(20-(i+1)), uint32(10-(i+1))
			if i >= 10 {
				code, left2 = OVER, 0
				if stop {
					left1 = 10 // key2 is no longer charged
				}
			}
			steps = append(steps, portStep{req: rq("another", 1, desc("key2=8"), desc("key3=8")),
				want: resp(code, st(OK, 20, mnt, left1), st(code, 10, hour, left2)),
				hits: map[string][2]uint64{"another.key2": {uint64(i + 26), 5}, "another.key3": {uint64(i + 1), uint64(max(0, i-9))}}})
		}
		// The reset counts down (upstream sleeps 2 s; the memory store's
		// clock moves on, Redis's time passes on its own).
		dur := rq("another", 1, desc("key4=durTest"))
		return append(steps,
			portStep{req: dur, want: resp(OK, st(OK, 20, day, 19))},
			portStep{advance: 2 * time.Second, req: dur, want: resp(OK, st(OK, 20, day, 18))})
	}
	files := func(v string) *rlsv3.RateLimitRequest { return rq("share-threshold-test", 1, desc("files="+v)) }
	share := []portStep{{pre: []fill{{files("files/a.pdf"), 10}}, req: files("files/b.csv"), want: resp(OVER, st(OVER, 10, hour, 0))}}
	for i := range 10 {
		share = append(share, portStep{req: rq("share-threshold-test", 1, desc(fmt.Sprintf("files_no_share=files_no_share/%d", i))),
			want: resp(OK, st(OK, 10, hour, 9))})
	}
	// integration-test/scripts/token-quota.sh and
	// multiservice-tokenquota.sh: Envoy checks the services with
	// hits_addend 0 as a request arrives, routes it to the first not over
	// its quota, and debits that one 1 hit when the stream is done.
	// Upstream, a check is over once the count is past the quota: the
	// last check of a window lets its request through, whose debit goes
	// past the quota (over it, charged). floodgate's default refuses a
	// check once nothing is left, one request fewer per window.
	const tokens = `domain: rl
descriptors:
  - {key: service, value: service_1, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 1}}
  - {key: service, value: service_2, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 2}}
`
	check := func(svcs ...string) *rlsv3.RateLimitRequest {
		var ds []*rlcommon.RateLimitDescriptor
		for _, v := range svcs {
			ds = append(ds, dh(0, "service="+v))
		}
		return rq("rl", 0, ds...)
	}
	debit := func(v string) *rlsv3.RateLimitRequest { return rq("rl", 0, dh(1, "service="+v)) }
	type C = rls.Counts
	tokenQuota := []portStep{
		{req: check("service_2"), want: resp(OK, st(OK, 2, mnt, 2))},
		{req: debit("service_2"), want: resp(OK, st(OK, 2, mnt, 1))},
		{req: check("service_2"), want: resp(OK, st(OK, 2, mnt, 1))},
		{req: debit("service_2"), want: resp(OK, st(OK, 2, mnt, 0))},
		{req: check("service_2"), want: resp(OK, st(OK, 2, mnt, 0))},
		{req: debit("service_2"), want: resp(OVER, st(OVER, 2, mnt, 0))},
		{req: check("service_2"), want: resp(OVER, st(OVER, 2, mnt, 0)),
			stats: map[string]C{"rl.service_service_2": {TotalHits: 3, WithinLimit: 2, NearLimit: 1, OverLimit: 1}}},
	}
	both := func() *rlsv3.RateLimitRequest { return check("service_1", "service_2") }
	multiservice := []portStep{
		{req: both(), want: resp(OK, st(OK, 1, mnt, 1), st(OK, 2, mnt, 2))}, // service_1
		{req: debit("service_1"), want: resp(OK, st(OK, 1, mnt, 0))},
		{req: both(), want: resp(OK, st(OK, 1, mnt, 0), st(OK, 2, mnt, 2))}, // service_1
		{req: debit("service_1"), want: resp(OVER, st(OVER, 1, mnt, 0))},
		{req: both(), want: resp(OK, st(OVER, 1, mnt, 0), st(OK, 2, mnt, 2))}, // service_2
		{req: debit("service_2"), want: resp(OK, st(OK, 2, mnt, 1))},
		{req: both(), want: resp(OK, st(OVER, 1, mnt, 0), st(OK, 2, mnt, 1))}, // service_2
		{req: debit("service_2"), want: resp(OK, st(OK, 2, mnt, 0))},
		{req: both(), want: resp(OK, st(OVER, 1, mnt, 0), st(OK, 2, mnt, 0))}, // service_2
		{req: debit("service_2"), want: resp(OVER, st(OVER, 2, mnt, 0))},
		{req: both(), want: resp(OVER, st(OVER, 1, mnt, 0), st(OVER, 2, mnt, 0)),
			stats: map[string]C{
				"rl.service_service_1": {TotalHits: 2, WithinLimit: 1, NearLimit: 1, OverLimit: 1}, // the near-limit threshold is 0
				"rl.service_service_2": {TotalHits: 3, WithinLimit: 2, NearLimit: 1, OverLimit: 1},
			}},
	}
	stop := rls.Config{Charging: rls.ChargeStopWhenOver}
	return []portRow{
		{source: "integration-test/scripts/token-quota.sh", yaml: []string{tokens}, upstream: always, steps: tokenQuota},
		{source: "integration-test/scripts/token-quota.sh (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true)", yaml: []string{tokens}, config: stop, steps: tokenQuota},
		{source: "integration-test/scripts/multiservice-tokenquota.sh", yaml: []string{tokens}, upstream: always, steps: multiservice},
		{source: "integration-test/scripts/multiservice-tokenquota.sh (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true)", yaml: []string{tokens}, config: stop, steps: multiservice},
		// Refused by key3, the request still charges key2 upstream.
		{source: src + "TestBasicConfig (testBasicBaseConfig)", yaml: []string{basic, another}, upstream: always, steps: base(false)},
		{source: src + "TestBasicConfig (testBasicBaseConfig, WithstopCacheKeyIncrementWhenOverlimitConfig)", yaml: []string{basic, another},
			config: rls.Config{Charging: rls.ChargeStopWhenOver}, steps: base(true)},
		// LOCAL_CACHE_SIZE_IN_BYTES=1000 (upstream asks its _local
		// keys): the same answers and counts.
		{source: src + "TestBasicConfig (testBasicBaseConfig, WithLocalCache)", yaml: []string{basic, another}, upstream: always,
			config: rls.Config{LocalCacheBytes: 1000}, steps: base(false)},
		{source: src + "TestBasicConfig (testBasicBaseConfig, WithLocalCacheAndstopCacheKeyIncrementWhenOverlimitConfig)", yaml: []string{basic, another},
			config: rls.Config{Charging: rls.ChargeStopWhenOver, LocalCacheBytes: 1000}, steps: base(true)},
		{source: src + "TestShareThreshold", steps: share, yaml: []string{`domain: share-threshold-test
descriptors:
  - {key: files, value: files/*, share_threshold: true, rate_limit: {unit: hour, requests_per_unit: 10}}
  - {key: files_no_share, value: files_no_share/*, rate_limit: {unit: hour, requests_per_unit: 10}}
`}},
	}
}
