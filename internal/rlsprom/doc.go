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
package rlsprom
