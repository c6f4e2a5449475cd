package main

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
)

// behaviour is what upstream's settings ask of the service's answers,
// each given by an rls.Config field (see apply). Unset fields keep
// floodgate's behaviour.
type behaviour struct {
	// QuotaMode is QUOTA_MODE: every rule in quota mode.
	QuotaMode opt[bool]
	// DynamicMetadata is RESPONSE_DYNAMIC_METADATA.
	DynamicMetadata opt[bool]
	// LimitHeaders is LIMIT_RESPONSE_HEADERS_ENABLED, with the header
	// names LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER and
	// LIMIT_RESET_HEADER (upstream's defaults when unset).
	LimitHeaders                              opt[bool]
	LimitHeader, RemainingHeader, ResetHeader string
	// NearLimitRatio is NEAR_LIMIT_RATIO, from 0 to 1.
	NearLimitRatio opt[float64]
	// StopIncrementWhenOverLimit is
	// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: unset, floodgate's all or
	// nothing (a refused request is charged nothing); set, upstream's
	// charging of refused requests, true or false.
	StopIncrementWhenOverLimit opt[bool]
}

// stats reads the metrics' settings: Prometheus (floodgate's own
// metrics and upstream's counters under its default mapping's names)
// unless DISABLE_STATS, and statsd as upstream sends it, over TCP, when
// USE_STATSD is true or the statsd address is set without it (upstream's
// USE_STATSD defaults to true; floodgate's stays off while nothing about
// statsd is set). DogStatsD is refused.
func (s *settings) stats(e *env) {
	disabled := e.boolean("DISABLE_STATS").v
	s.metrics = !disabled
	statsd, dog := e.boolean("USE_STATSD"), e.boolean("USE_DOG_STATSD")
	mogrifiers := e.str("USE_DOG_STATSD_MOGRIFIERS")
	host, port := e.str("STATSD_HOST"), e.port("STATSD_PORT")
	tags := e.pairs("EXTRA_TAGS")
	interval := e.duration("STATS_FLUSH_INTERVAL", time.Millisecond)
	prom := e.boolean("USE_PROMETHEUS")
	addr, path := e.str("PROMETHEUS_ADDR"), e.str("PROMETHEUS_PATH")
	mapper, ms := e.str("PROMETHEUS_MAPPER_YAML"), e.boolean("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS")
	if disabled {
		return // upstream's null sink: nothing else about stats applies
	}
	const instead = "floodgate exports Prometheus metrics (scrape /metrics on the HTTP port, or set USE_PROMETHEUS=true) and statsd (USE_STATSD=true), not DogStatsD"
	if dog.v {
		e.refuse("USE_DOG_STATSD", "%s; remove USE_DOG_STATSD", instead)
		if mogrifiers.set {
			e.refuse("USE_DOG_STATSD_MOGRIFIERS", "%s", instead)
		}
	}
	if statsd.v || !statsd.set && !dog.v && !prom.v && (host.set || port.set) {
		p := 8125
		if port.set {
			p = port.v
		}
		s.statsd.addr = net.JoinHostPort(or(host.v, "localhost"), strconv.Itoa(p))
		s.statsd.interval = durationOr(interval, 10*time.Second)
	}
	if tags.set {
		e.refuse("EXTRA_TAGS", "floodgate's metrics carry no extra tags; add them as labels where Prometheus scrapes the service (a relabeling rule), and remove EXTRA_TAGS")
	}
	if !prom.v {
		return
	}
	s.promAddr, s.promPath = or(addr.v, ":9090"), or(path.v, "/metrics")
	if !strings.HasPrefix(s.promPath, "/") {
		e.refuse("PROMETHEUS_PATH", "a path starts with /, such as /metrics")
	}
	if mapper.set {
		e.refuse("PROMETHEUS_MAPPER_YAML", "floodgate exports upstream's counters under its default mapping's names (ratelimit_service_*) and reads no other mapping; rename them where Prometheus scrapes the service (metric_relabel_configs), and remove PROMETHEUS_MAPPER_YAML")
	}
	if ms.v {
		e.refuse("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "floodgate's latency histogram is in seconds, Prometheus's base unit; remove it or set false")
	}
}

// apply sets the rls.Config fields that give b's settings. headersSet
// says -headers (or FLOODGATE_RLS_HEADERS) chose floodgate's fields,
// which LIMIT_RESPONSE_HEADERS_ENABLED then leaves as they are.
func (b *behaviour) apply(c *rls.Config, headersSet bool) {
	c.Quota = b.QuotaMode.v
	c.DynamicMetadata = b.DynamicMetadata.v
	if b.NearLimitRatio.set {
		c.NearLimitRatio = float32(b.NearLimitRatio.v)
	}
	if b.LimitHeaders.set {
		// Upstream's fields alone when enabled, none when not: its
		// answers, unless floodgate's were asked for by name too.
		if !headersSet {
			c.Headers = core.HeadersNone
		}
		if b.LimitHeaders.v {
			c.UpstreamHeaders = &rls.HeaderNames{Limit: b.LimitHeader, Remaining: b.RemainingHeader, Reset: b.ResetHeader}
		}
	}
	switch {
	case !b.StopIncrementWhenOverLimit.set:
		c.Charging = rls.ChargeAllOrNothing
	case b.StopIncrementWhenOverLimit.v:
		c.Charging = rls.ChargeStopWhenOver
	default:
		c.Charging = rls.ChargeAlways
	}
}

// answers reads the settings of the service's answers: modes, headers,
// near-limit ratio, the charging of refused requests, and health.
func (s *settings) answers(e *env) {
	b := &s.behaviour
	if v := e.boolean("SHADOW_MODE"); v.set && !s.shadowSet {
		s.shadow = v.v
	}
	b.QuotaMode = e.boolean("QUOTA_MODE")
	b.DynamicMetadata = e.boolean("RESPONSE_DYNAMIC_METADATA")
	b.LimitHeaders = e.boolean("LIMIT_RESPONSE_HEADERS_ENABLED")
	b.LimitHeader = e.header("LIMIT_LIMIT_HEADER", "RateLimit-Limit")
	b.RemainingHeader = e.header("LIMIT_REMAINING_HEADER", "RateLimit-Remaining")
	b.ResetHeader = e.header("LIMIT_RESET_HEADER", "RateLimit-Reset")
	b.NearLimitRatio = e.float("NEAR_LIMIT_RATIO", 0, 1)
	b.StopIncrementWhenOverLimit = e.boolean("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")
	s.healthyWithConfig = e.boolean("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED")
}
