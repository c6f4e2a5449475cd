// Package rlsprom exports cmd/floodgate-ratelimit's counters under the
// names and labels envoyproxy/ratelimit's Prometheus mode (USE_PROMETHEUS,
// with its default statsd mapping) gives them, so that dashboards and
// alerts built for it keep working:
//
//	ratelimit_service_rate_limit_total_hits{domain, key1, key2}
//	ratelimit_service_rate_limit_over_limit{domain, key1, key2}
//	ratelimit_service_rate_limit_near_limit{domain, key1, key2}
//	ratelimit_service_rate_limit_within_limit{domain, key1, key2}
//	ratelimit_service_rate_limit_shadow_mode{domain, key1, key2}
//	ratelimit_service_rate_limit_over_limit_with_local_cache{domain, key1, key2}
//	ratelimit_service_total_requests{grpc_method}
//	ratelimit_service_response_time_seconds{grpc_method}
//	ratelimit_service_should_rate_limit_error{err_type}
//	ratelimit_service_config_load_success, ratelimit_service_config_load_error
//
// A rule's counters are labelled from its stats key as upstream's mapping
// splits it: the domain, the first part of the key (key1) and the second
// (key2, empty for a one-part key, which Prometheus reads as absent).
// Upstream's keys carry descriptor values for rules with detailed_metric,
// so a client could make its series unbounded; here the distinct label
// sets are bounded (MaxSeries), and the counts of any past the bound go
// to one series labelled key1="overflow".
//
// Upstream's default mapping has no rule for over_limit_with_local_cache
// (the hits its local cache refused, LOCAL_CACHE_SIZE_IN_BYTES). Its
// statsd exporter then names the counter of a stats key of two parts
// ("domain.key1") from the whole statsd name, key included and no
// labels: ratelimit_service_rate_limit_domain_key1_over_limit_with_local_cache.
// For a longer key, the over_limit rule's regular expression, which is
// not anchored at its end, takes the counter, and over_limit counts those
// hits twice. Here it is one counter labelled as the others are, and
// over_limit counts each hit once.
package rlsprom
