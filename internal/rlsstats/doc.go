// Package rlsstats is where cmd/floodgate-ratelimit's upstream-style
// counters go: envoyproxy/ratelimit's per-rule counts (total_hits,
// over_limit, near_limit, within_limit, shadow_mode,
// over_limit_with_local_cache), its calls, errors and configuration
// loads. A [Sink] takes them; [Statsd] sends them to a statsd server over
// TCP as upstream does with USE_STATSD (the default there), under
// upstream's names; package rlsprom exports them to Prometheus under the
// names upstream's Prometheus mode gives them.
package rlsstats
