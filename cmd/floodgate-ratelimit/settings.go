package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsxds"
)

// lookupEnv looks a variable up as os.LookupEnv does: its value, and
// whether it is set at all. run takes one, so that tests give the command
// an environment without changing the process's.
type lookupEnv func(name string) (string, bool)

// upstreamNames are the environment variables envoyproxy/ratelimit reads
// (its src/settings/settings.go), in its order. A Deployment manifest
// written for it runs floodgate-ratelimit unchanged or not at all: each
// one is honoured with upstream's meaning, or refused at start by name
// with what to use instead. None is ignored; TestUpstreamNames checks
// that the parser reads every one.
var upstreamNames = []string{
	"HOST", "PORT", "DEBUG_HOST", "DEBUG_PORT",
	"GRPC_UDS", "GRPC_HOST", "GRPC_PORT", "GRPC_MAX_CONNECTION_AGE", "GRPC_MAX_CONNECTION_AGE_GRACE",
	"GRPC_SERVER_USE_TLS", "GRPC_SERVER_TLS_CERT", "GRPC_SERVER_TLS_KEY", "GRPC_CLIENT_TLS_CACERT", "GRPC_CLIENT_TLS_SAN",
	"LOG_LEVEL", "LOG_FORMAT",
	"CONFIG_TYPE", "FORCE_START_WITHOUT_INITIAL_CONFIG",
	"CONFIG_GRPC_XDS_NODE_ID", "CONFIG_GRPC_XDS_NODE_METADATA", "CONFIG_GRPC_XDS_SERVER_URL",
	"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS",
	"CONFIG_GRPC_XDS_SERVER_USE_TLS", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
	"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "CONFIG_GRPC_XDS_SERVER_TLS_SAN",
	"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "XDS_CLIENT_BACKOFF_MAX_INTERVAL", "XDS_CLIENT_BACKOFF_RANDOM_FACTOR",
	"XDS_CLIENT_BACKOFF_JITTER", "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES",
	"USE_DOG_STATSD", "USE_DOG_STATSD_MOGRIFIERS", "USE_STATSD", "STATSD_HOST", "STATSD_PORT", "EXTRA_TAGS",
	"STATS_FLUSH_INTERVAL", "DISABLE_STATS", "USE_PROMETHEUS", "PROMETHEUS_ADDR", "PROMETHEUS_PATH",
	"PROMETHEUS_MAPPER_YAML", "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS",
	"RUNTIME_ROOT", "RUNTIME_SUBDIRECTORY", "RUNTIME_APPDIRECTORY", "RUNTIME_IGNOREDOTFILES", "RUNTIME_WATCH_ROOT",
	"EXPIRATION_JITTER_MAX_SECONDS", "LOCAL_CACHE_SIZE_IN_BYTES", "NEAR_LIMIT_RATIO", "CACHE_KEY_PREFIX",
	"BACKEND_TYPE", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
	"LIMIT_RESPONSE_HEADERS_ENABLED", "LIMIT_LIMIT_HEADER", "LIMIT_REMAINING_HEADER", "LIMIT_RESET_HEADER",
	"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED",
	"REDIS_SOCKET_TYPE", "REDIS_TYPE", "REDIS_URL", "REDIS_POOL_SIZE", "REDIS_AUTH", "REDIS_TLS",
	"REDIS_TLS_CLIENT_CERT", "REDIS_TLS_CLIENT_KEY", "REDIS_TLS_CACERT", "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
	"REDIS_PIPELINE_WINDOW", "REDIS_PIPELINE_LIMIT", "REDIS_CLUSTER_PIPELINE_PARALLELISM",
	"REDIS_PERSECOND", "REDIS_PERSECOND_SOCKET_TYPE", "REDIS_PERSECOND_TYPE", "REDIS_PERSECOND_URL",
	"REDIS_PERSECOND_POOL_SIZE", "REDIS_PERSECOND_AUTH", "REDIS_PERSECOND_TLS",
	"REDIS_SENTINEL_AUTH", "REDIS_PERSECOND_SENTINEL_AUTH",
	"REDIS_PERSECOND_PIPELINE_WINDOW", "REDIS_PERSECOND_PIPELINE_LIMIT", "REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
	"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "REDIS_TIMEOUT", "REDIS_PERSECOND_TIMEOUT",
	"REDIS_POOL_ON_EMPTY_BEHAVIOR", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
	"REDIS_STARTUP_INITIAL_INTERVAL", "REDIS_STARTUP_MAX_INTERVAL", "REDIS_STARTUP_MAX_ELAPSED_TIME",
	"MEMCACHE_HOST_PORT", "MEMCACHE_MAX_IDLE_CONNS", "MEMCACHE_SRV", "MEMCACHE_SRV_REFRESH", "MEMCACHE_TLS",
	"MEMCACHE_TLS_CLIENT_CERT", "MEMCACHE_TLS_CLIENT_KEY", "MEMCACHE_TLS_CACERT", "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
	"SHADOW_MODE", "QUOTA_MODE", "RESPONSE_DYNAMIC_METADATA", "MERGE_DOMAIN_CONFIG",
	"TRACING_ENABLED", "TRACING_SERVICE_NAME", "TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID",
	"TRACING_EXPORTER_PROTOCOL", "TRACING_SAMPLING_RATE",
}

// secret names the variables whose values must not be printed:
// credentials, and headers, which may carry a token.
func secret(name string) bool {
	return strings.HasSuffix(name, "_AUTH") || strings.HasSuffix(name, "_HEADERS")
}

// opt is a setting that may be unset: set says whether the environment
// gave it, which matters where unset keeps floodgate's behaviour and set
// asks for upstream's.
type opt[T any] struct {
	v   T
	set bool
}

// env reads upstream's variables, keeping every refusal. A variable is
// set when it holds a non-empty value: manifests render "" for a value
// they leave out, and upstream's defaults are its own.
type env struct {
	look lookupEnv
	errs []error
	read map[string]bool // every name looked up, for TestUpstreamNames
}

func newEnv(look lookupEnv) *env { return &env{look: look, read: map[string]bool{}} }

// str returns name's value.
func (e *env) str(name string) opt[string] {
	e.read[name] = true
	v, ok := e.look(name)
	return opt[string]{v, ok && v != ""}
}

// refuse records that name's value cannot be honoured: reason says why,
// and what to use instead.
func (e *env) refuse(name, reason string, args ...any) {
	v := e.str(name)
	shown := name
	if v.set && !secret(name) {
		parts := strings.Split(v.v, ",")
		for i, p := range parts {
			parts[i] = redactURL(p) // a redis:// URL's credentials
		}
		shown = name + "=" + strings.Join(parts, ",")
	}
	e.errs = append(e.errs, fmt.Errorf("%s: %s", shown, fmt.Sprintf(reason, args...)))
}

// boolean reads name as upstream does (strconv.ParseBool).
func (e *env) boolean(name string) opt[bool] {
	s := e.str(name)
	if !s.set {
		return opt[bool]{}
	}
	b, err := strconv.ParseBool(s.v)
	if err != nil {
		e.refuse(name, "not a boolean; use true or false")
		return opt[bool]{}
	}
	return opt[bool]{b, true}
}

// integer reads name as a whole number from lo to hi.
func (e *env) integer(name string, lo, hi int64) opt[int] {
	s := e.str(name)
	if !s.set {
		return opt[int]{}
	}
	n, err := strconv.ParseInt(s.v, 0, 64)
	if err != nil || n < lo || n > hi {
		e.refuse(name, "use a whole number from %d to %d", lo, hi)
		return opt[int]{}
	}
	return opt[int]{int(n), true}
}

// duration reads name as a Go duration ("10s", "1h"), at least lo.
func (e *env) duration(name string, lo time.Duration) opt[time.Duration] {
	s := e.str(name)
	if !s.set {
		return opt[time.Duration]{}
	}
	d, err := time.ParseDuration(s.v)
	if err != nil || d < lo {
		e.refuse(name, "use a duration of at least %v, such as 10s or 1m", lo)
		return opt[time.Duration]{}
	}
	return opt[time.Duration]{d, true}
}

// float reads name as a number from lo to hi.
func (e *env) float(name string, lo, hi float64) opt[float64] {
	s := e.str(name)
	if !s.set {
		return opt[float64]{}
	}
	f, err := strconv.ParseFloat(s.v, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		e.refuse(name, "use a number from %g to %g", lo, hi)
		return opt[float64]{}
	}
	return opt[float64]{f, true}
}

// pairs reads name as upstream's map form, "k1:v1,k2:v2".
func (e *env) pairs(name string) opt[map[string]string] {
	s := e.str(name)
	if !s.set {
		return opt[map[string]string]{}
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s.v, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || k == "" {
			e.refuse(name, "%q is not key:value; use key1:value1,key2:value2", kv)
			return opt[map[string]string]{}
		}
		m[k] = v
	}
	return opt[map[string]string]{m, true}
}

// port reads name as a TCP port.
func (e *env) port(name string) opt[int] { return e.integer(name, 0, 65535) }

// oneOf reads name as one of choices, in any case, and returns it in
// lower case.
func (e *env) oneOf(name string, choices ...string) opt[string] {
	s := e.str(name)
	if !s.set {
		return s
	}
	for _, c := range choices {
		if strings.EqualFold(s.v, c) {
			return opt[string]{strings.ToLower(c), true}
		}
	}
	e.refuse(name, "use %s", strings.Join(choices, " or "))
	return opt[string]{}
}

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

// runtimeDir is upstream's RUNTIME_* layout of the configuration.
type runtimeDir struct {
	// Dir is RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY, and
	// Root RUNTIME_ROOT (upstream's default when unset), or both ""
	// when none of the three is set.
	Dir, Root string
	// IgnoreDotFiles is RUNTIME_IGNOREDOTFILES; WatchRoot is
	// RUNTIME_WATCH_ROOT (see options).
	IgnoreDotFiles, WatchRoot opt[bool]
}

// xdsSettings are CONFIG_GRPC_XDS_* and XDS_CLIENT_*: how to reach an xDS
// control plane for the configuration (CONFIG_TYPE=GRPC_XDS_SOTW), with
// upstream's defaults filled in (see config).
type xdsSettings struct {
	NodeID, ServerURL                              string
	NodeMetadata, Headers                          map[string]string
	RetryInterval                                  time.Duration
	UseTLS                                         bool
	ClientCert, ClientKey, ServerCACert, ServerSAN string
	BackoffInitial, BackoffMax                     time.Duration
	BackoffRandomFactor                            float64
	BackoffJitter                                  bool
	MaxMsgSize                                     int // 0: gRPC's default
}

// config is x as the xDS client takes it; an error when the TLS files
// do not load.
func (x *xdsSettings) config() (rlsxds.Config, error) {
	c := rlsxds.DefaultConfig()
	c.Server, c.NodeID, c.NodeMetadata, c.Headers = x.ServerURL, x.NodeID, x.NodeMetadata, x.Headers
	c.ConnectRetryInterval = x.RetryInterval
	c.Backoff = rlsxds.Backoff{Initial: x.BackoffInitial, Max: x.BackoffMax, Factor: x.BackoffRandomFactor, Jitter: x.BackoffJitter}
	c.MaxRecvMsgSize = x.MaxMsgSize
	if x.UseTLS {
		t, err := rlsxds.ClientTLS(x.ClientCert, x.ClientKey, x.ServerCACert, x.ServerSAN)
		if err != nil {
			return c, err
		}
		c.TLS = t
	}
	return c, nil
}

// tracingSettings are TRACING_*, with upstream's defaults: OpenTelemetry
// spans of every call, exported over OTLP to the collector the standard
// OTEL_EXPORTER_OTLP_* variables name (see internal/rlstrace).
type tracingSettings struct {
	Enabled                            bool
	ServiceName, Namespace, InstanceID string
	Protocol                           string // "http" or "grpc"
	SamplingRate                       float64
}

// upstream reads upstream's variables into s, under the flags and
// floodgate's own variables that parse has already put there (set says
// which flags the command line gave); e keeps the refusals.
func (s *settings) upstream(e *env, set map[string]bool) {
	s.listeners(e, set)
	s.logging(e)
	s.configSource(e, set)
	s.stats(e)
	s.answers(e)
	s.redisSettings(e, set)
	s.memcache(e)
	s.tracingEnv(e)
}

// listeners reads the addresses and the gRPC server's settings.
func (s *settings) listeners(e *env, set map[string]bool) {
	host, port := e.str("HOST"), e.port("PORT")
	if host.set || port.set {
		s.choose(&s.httpAddr, set, "http", "FLOODGATE_RLS_HTTP", "HOST/PORT", hostPort(host, port, 8080))
	}
	uds, ghost, gport := e.str("GRPC_UDS"), e.str("GRPC_HOST"), e.port("GRPC_PORT")
	switch {
	case uds.set:
		s.choose(&s.grpcAddr, set, "grpc", "FLOODGATE_RLS_GRPC", "GRPC_UDS", "unix:"+uds.v)
	case ghost.set || gport.set:
		s.choose(&s.grpcAddr, set, "grpc", "FLOODGATE_RLS_GRPC", "GRPC_HOST/GRPC_PORT", hostPort(ghost, gport, 8081))
	}
	dhost, dport := e.str("DEBUG_HOST"), e.port("DEBUG_PORT")
	if dhost.set || dport.set {
		s.debugAddr = hostPort(dhost, dport, 6070)
	}
	s.maxAge, s.maxAgeGrace = 24*time.Hour, time.Hour
	if d := e.duration("GRPC_MAX_CONNECTION_AGE", time.Millisecond); d.set {
		s.maxAge = d.v
	}
	if d := e.duration("GRPC_MAX_CONNECTION_AGE_GRACE", time.Millisecond); d.set {
		s.maxAgeGrace = d.v
	}
	useTLS := e.boolean("GRPC_SERVER_USE_TLS")
	cert, key := e.str("GRPC_SERVER_TLS_CERT"), e.str("GRPC_SERVER_TLS_KEY")
	ca, san := e.str("GRPC_CLIENT_TLS_CACERT"), e.str("GRPC_CLIENT_TLS_SAN")
	if !useTLS.v {
		return // upstream serves plain gRPC and reads none of the files
	}
	if !cert.set || !key.set {
		e.refuse("GRPC_SERVER_USE_TLS", "needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY, the server's certificate chain and key (PEM files)")
		return
	}
	if san.set && !ca.set {
		e.refuse("GRPC_CLIENT_TLS_SAN", "checks the SAN of client certificates, which only GRPC_CLIENT_TLS_CACERT asks for: set it to the clients' CA (upstream checks nothing without it)")
		return
	}
	t, err := newServerTLS(cert.v, key.v, ca.v, san.v)
	if err != nil {
		e.errs = append(e.errs, err)
		return
	}
	s.grpcTLS = t
}

// hostPort joins host and port as a listening address: host "" (unset)
// is every interface, as floodgate's defaults listen, and port def when
// unset.
func hostPort(host opt[string], port opt[int], def int) string {
	p := def
	if port.set {
		p = port.v
	}
	return net.JoinHostPort(host.v, strconv.Itoa(p))
}

// choose sets *dst to value, upstream's (named by what), unless the flag
// of that name or floodgate's own variable env set it: those win, and a
// note says that upstream's was overridden.
func (s *settings) choose(dst *string, set map[string]bool, flag, env, what, value string) {
	switch {
	case set[flag]:
		s.note("-%s overrides %s", flag, what)
	case s.fromEnv[env]:
		s.note("%s overrides %s", env, what)
	default:
		*dst = value
	}
}

// note records something to log at start.
func (s *settings) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// logging reads LOG_LEVEL and LOG_FORMAT.
func (s *settings) logging(e *env) {
	s.logLevel = slog.LevelInfo
	if l := e.str("LOG_LEVEL"); l.set {
		lv, ok := logLevels[strings.ToLower(l.v)]
		if !ok {
			e.refuse("LOG_LEVEL", "use trace, debug, info, warn, error, fatal or panic")
		}
		s.logLevel = lv
	}
	s.logJSON = e.oneOf("LOG_FORMAT", "text", "json").v == "json"
}

// logLevels are upstream's level names (logrus's) as slog levels. slog
// has no trace, fatal or panic: trace shows debug and all above it, and
// fatal and panic show nothing floodgate logs (what stops it is printed
// on standard error whatever the level).
var logLevels = map[string]slog.Level{
	"trace": slog.LevelDebug - 4, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "warning": slog.LevelWarn, "error": slog.LevelError,
	"fatal": slog.LevelError + 4, "panic": slog.LevelError + 8,
}

// configSource reads where the configuration comes from: CONFIG_TYPE,
// the RUNTIME_* directory, xDS and the start without one.
func (s *settings) configSource(e *env, set map[string]bool) {
	s.xdsOn = e.oneOf("CONFIG_TYPE", "FILE", "GRPC_XDS_SOTW").v == "grpc_xds_sotw"
	s.forceStart = e.boolean("FORCE_START_WITHOUT_INITIAL_CONFIG").v
	root, sub, app := e.str("RUNTIME_ROOT"), e.str("RUNTIME_SUBDIRECTORY"), e.str("RUNTIME_APPDIRECTORY")
	if root.set || sub.set || app.set {
		s.runtime.Root = or(root.v, "/srv/runtime_data/current")
		dir := filepath.Join(s.runtime.Root, sub.v, or(app.v, "config"))
		s.runtime.Dir = dir
		s.choose(&s.config, set, "config", "FLOODGATE_RLS_CONFIG", "RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY", dir)
	}
	s.runtime.IgnoreDotFiles = e.boolean("RUNTIME_IGNOREDOTFILES")
	s.runtime.WatchRoot = e.boolean("RUNTIME_WATCH_ROOT")
	if merge := e.boolean("MERGE_DOMAIN_CONFIG"); !set["merge-domains"] {
		s.merge = merge.v
	}

	x := &s.xds
	x.NodeID = or(e.str("CONFIG_GRPC_XDS_NODE_ID").v, "default")
	x.NodeMetadata = e.pairs("CONFIG_GRPC_XDS_NODE_METADATA").v
	x.ServerURL = or(e.str("CONFIG_GRPC_XDS_SERVER_URL").v, "localhost:18000")
	x.RetryInterval = durationOr(e.duration("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", time.Millisecond), 3*time.Second)
	x.Headers = e.pairs("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS").v
	x.UseTLS = e.boolean("CONFIG_GRPC_XDS_SERVER_USE_TLS").v
	x.ClientCert, x.ClientKey = e.str("CONFIG_GRPC_XDS_CLIENT_TLS_CERT").v, e.str("CONFIG_GRPC_XDS_CLIENT_TLS_KEY").v
	x.ServerCACert, x.ServerSAN = e.str("CONFIG_GRPC_XDS_SERVER_TLS_CACERT").v, e.str("CONFIG_GRPC_XDS_SERVER_TLS_SAN").v
	x.BackoffInitial = durationOr(e.duration("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", time.Millisecond), 10*time.Second)
	x.BackoffMax = durationOr(e.duration("XDS_CLIENT_BACKOFF_MAX_INTERVAL", time.Millisecond), 60*time.Second)
	x.BackoffRandomFactor = 0.5
	if f := e.float("XDS_CLIENT_BACKOFF_RANDOM_FACTOR", 0, 1); f.set {
		x.BackoffRandomFactor = f.v
	}
	x.BackoffJitter = true
	if b := e.boolean("XDS_CLIENT_BACKOFF_JITTER"); b.set {
		x.BackoffJitter = b.v
	}
	x.MaxMsgSize = e.integer("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", 0, math.MaxInt32).v
}

func durationOr(d opt[time.Duration], def time.Duration) time.Duration {
	if d.set {
		return d.v
	}
	return def
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

// header reads name as an HTTP header field name, def when unset.
func (e *env) header(name, def string) string {
	h := e.str(name)
	if !h.set {
		return def
	}
	if !validToken(h.v) {
		e.refuse(name, "not a header field name (letters, digits and !#$%%&'*+-.^_`|~)")
		return def
	}
	return h.v
}

// validToken reports whether s is an HTTP token, as header names are.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// redisEnv is one Redis's variables: the main one's or the per-second
// one's (names with REDIS_PERSECOND_).
type redisEnv struct {
	socketType, kind, url                          opt[string]
	poolSize, pipelineLimit, parallelism           opt[int]
	auth, sentinelAuth, onEmpty                    opt[string]
	tls                                            opt[bool]
	pipelineWindow, timeout                        opt[time.Duration]
	socketName, kindName, urlName, authName, sAuth string
}

// readRedis reads the variables of one Redis, their names starting with
// prefix ("REDIS_" or "REDIS_PERSECOND_").
func readRedis(e *env, prefix string) redisEnv {
	r := redisEnv{socketName: prefix + "SOCKET_TYPE", kindName: prefix + "TYPE", urlName: prefix + "URL", authName: prefix + "AUTH", sAuth: prefix + "SENTINEL_AUTH"}
	r.socketType = e.oneOf(r.socketName, "tcp", "unix")
	r.kind = e.oneOf(r.kindName, "SINGLE", "SENTINEL", "CLUSTER")
	r.url = e.str(r.urlName)
	r.poolSize = e.integer(prefix+"POOL_SIZE", 1, math.MaxInt32)
	r.auth = e.str(r.authName)
	r.sentinelAuth = e.str(r.sAuth)
	r.tls = e.boolean(prefix + "TLS")
	r.pipelineWindow = e.duration(prefix+"PIPELINE_WINDOW", 0)
	r.pipelineLimit = e.integer(prefix+"PIPELINE_LIMIT", 0, math.MaxInt32)
	r.parallelism = e.integer(prefix+"CLUSTER_PIPELINE_PARALLELISM", 0, math.MaxInt32)
	r.timeout = e.duration(prefix+"TIMEOUT", 0)
	r.onEmpty = e.oneOf(prefix+"POOL_ON_EMPTY_BEHAVIOR", "WAIT", "CREATE", "ERROR")
	switch r.onEmpty.v {
	case "create", "error":
		e.refuse(prefix+"POOL_ON_EMPTY_BEHAVIOR", "a call waits for a free connection when the pool is full, as upstream's WAIT (upstream refuses CREATE and ERROR too); set WAIT, and raise %sPOOL_SIZE if calls wait", prefix)
	}
	return r
}

// anySet reports whether any of r's variables is set, and names one.
func (r redisEnv) anySet(prefix string) (string, bool) {
	for _, v := range []struct {
		name string
		set  bool
	}{
		{r.socketName, r.socketType.set}, {r.kindName, r.kind.set}, {prefix + "POOL_SIZE", r.poolSize.set},
		{r.authName, r.auth.set}, {r.sAuth, r.sentinelAuth.set}, {prefix + "TLS", r.tls.set},
		{prefix + "PIPELINE_WINDOW", r.pipelineWindow.set}, {prefix + "PIPELINE_LIMIT", r.pipelineLimit.set},
		{prefix + "CLUSTER_PIPELINE_PARALLELISM", r.parallelism.set}, {prefix + "TIMEOUT", r.timeout.set},
		{prefix + "POOL_ON_EMPTY_BEHAVIOR", r.onEmpty.set},
	} {
		if v.set {
			return v.name, true
		}
	}
	return "", false
}

// redisSettings reads the Redis variables into s.redis and s.perSecond.
// Where Redis is comes from -redis, else REDIS_ADDR (floodgate's own),
// else REDIS_URL; how to reach it (auth, TLS, pool, timeouts) from
// upstream's variables whichever gave the address.
func (s *settings) redisSettings(e *env, set map[string]bool) {
	primary := readRedis(e, "REDIS_")
	ps := readRedis(e, "REDIS_PERSECOND_")
	perSecond := e.boolean("REDIS_PERSECOND")
	tlsFiles := struct{ cert, key, ca opt[string] }{e.str("REDIS_TLS_CLIENT_CERT"), e.str("REDIS_TLS_CLIENT_KEY"), e.str("REDIS_TLS_CACERT")}
	skipVerify := e.boolean("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION")
	s.redisHealthActive = e.boolean("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION").v
	initial := e.duration("REDIS_STARTUP_INITIAL_INTERVAL", time.Millisecond)
	most := e.duration("REDIS_STARTUP_MAX_INTERVAL", time.Millisecond)
	elapsed := e.duration("REDIS_STARTUP_MAX_ELAPSED_TIME", 0)
	startup := [3]bool{initial.set, most.set, elapsed.set}
	s.startup = backoff{initial: durationOr(initial, time.Second), max: durationOr(most, 30*time.Second), maxElapsed: elapsed.v}
	if s.startup.max < s.startup.initial {
		e.refuse("REDIS_STARTUP_MAX_INTERVAL", "shorter than REDIS_STARTUP_INITIAL_INTERVAL (%v); make it at least as long", s.startup.initial)
	}
	prefix := e.str("CACHE_KEY_PREFIX")
	jitter := e.integer("EXPIRATION_JITTER_MAX_SECONDS", 0, math.MaxInt32)
	cache := e.integer("LOCAL_CACHE_SIZE_IN_BYTES", 0, math.MaxInt32)
	backend := e.oneOf("BACKEND_TYPE", "redis", "memcache")
	if backend.v == "memcache" {
		e.refuse("BACKEND_TYPE", "floodgate has no memcache backend; use Redis (BACKEND_TYPE=redis with REDIS_URL), or leave REDIS_URL unset for the in-memory store")
	}
	if prefix.set {
		if strings.ContainsAny(prefix.v, "{}") {
			e.refuse("CACHE_KEY_PREFIX", "floodgate puts each key's name in braces (its Redis Cluster hash tag), and braces in the prefix would move keys out of it; use a prefix without { or }")
		}
		s.store.prefix = prefix
	}
	if jitter.set && jitter.v != 0 {
		e.refuse("EXPIRATION_JITTER_MAX_SECONDS", "floodgate adds no random time to its keys' TTLs (each expires 1 s after its quota is whole again); the jitter spreads Redis's expiry work and changes no decision: set 0 or remove it")
	}
	if cache.set {
		// The service's cache of refused keys, in front of the Multi and
		// the limiters alike, is the only one: the limiters' own is off.
		s.store.localCache = cache.v
		s.store.denyCache = opt[int]{0, true}
	}

	var tlsConf *tls.Config
	if primary.tls.v || perSecond.v && ps.tls.v {
		if tlsFiles.cert.set != tlsFiles.key.set {
			e.refuse("REDIS_TLS_CLIENT_CERT", "REDIS_TLS_CLIENT_CERT and REDIS_TLS_CLIENT_KEY go together: set both (the client's certificate and key) or neither")
		} else if c, err := redisTLS(tlsFiles.cert.v, tlsFiles.key.v, tlsFiles.ca.v, skipVerify.v); err != nil {
			e.errs = append(e.errs, err)
		} else {
			tlsConf = c
		}
	}

	// Where: -redis, REDIS_ADDR, then REDIS_URL.
	switch {
	case set["redis"] || s.fromEnv["REDIS_ADDR"]:
		by := "-redis"
		if !set["redis"] {
			by = "REDIS_ADDR"
		}
		if primary.url.set {
			s.note("%s overrides REDIS_URL", by)
		}
		if s.redisAddrs != "" {
			t := &redisTarget{addrs: strings.Split(s.redisAddrs, ","), master: s.redisMaster, network: "tcp", source: by}
			switch {
			case t.master != "":
				t.kind = "sentinel"
			case len(t.addrs) > 1:
				t.kind = "cluster"
			default:
				t.kind = "single"
			}
			s.redis = t
		}
	case primary.url.set:
		s.redis = primary.target(e, "REDIS_")
	case perSecond.v:
		e.refuse("REDIS_PERSECOND", "per-second limits go to a second Redis, and the others to the main one, which REDIS_URL names: set REDIS_URL")
	default:
		if name, ok := primary.anySet("REDIS_"); ok {
			e.refuse(name, "configures Redis, but REDIS_URL is not set, and floodgate then keeps limits in memory (upstream would use its default, the Unix socket /var/run/nutcracker/ratelimit.sock): set REDIS_URL, or remove %s", name)
		}
		for _, v := range []struct {
			name string
			set  bool
		}{
			{"CACHE_KEY_PREFIX", prefix.set}, {"LOCAL_CACHE_SIZE_IN_BYTES", cache.set}, {"BACKEND_TYPE", backend.v == "redis"},
			{"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", s.redisHealthActive}, {"REDIS_STARTUP_INITIAL_INTERVAL", startup[0]},
			{"REDIS_STARTUP_MAX_INTERVAL", startup[1]}, {"REDIS_STARTUP_MAX_ELAPSED_TIME", startup[2]},
		} {
			if v.set {
				e.refuse(v.name, "configures Redis, but REDIS_URL is not set, and floodgate then keeps limits in memory: set REDIS_URL, or remove %s", v.name)
			}
		}
	}
	if s.redis == nil {
		return
	}
	s.redis.apply(e, primary, "REDIS_", tlsConf, s.redisPass)
	if perSecond.v {
		if !ps.url.set {
			e.refuse("REDIS_PERSECOND", "needs REDIS_PERSECOND_URL, the Redis that holds the per-second limits")
			return
		}
		s.perSecond = ps.target(e, "REDIS_PERSECOND_")
		if s.perSecond != nil {
			s.perSecond.apply(e, ps, "REDIS_PERSECOND_", tlsConf, "")
		}
	}
}

// target returns the Redis r's URL and types name, nil if they are
// refused. Upstream's URL is one address for SINGLE ("host:port", or a
// socket path when the socket type is unix, its default), "master name,
// sentinel1,sentinel2,..." for SENTINEL, and "node1,node2,..." for
// CLUSTER; an address may also be a redis:// URL with credentials.
func (r redisEnv) target(e *env, prefix string) *redisTarget {
	t := &redisTarget{kind: or(r.kind.v, "single"), network: "tcp", source: r.urlName}
	parts := strings.Split(r.url.v, ",")
	switch t.kind {
	case "single":
		if len(parts) > 1 {
			e.refuse(r.urlName, "a SINGLE Redis has one address; for several set %s to CLUSTER or SENTINEL", r.kindName)
			return nil
		}
		t.network = or(r.socketType.v, "unix")
		if t.network == "unix" && !r.socketType.set && !strings.Contains(parts[0], "/") {
			e.refuse(r.urlName, "is read as a Unix socket's path, since %s defaults to unix as upstream's does: set %s=tcp for a host:port", r.socketName, r.socketName)
			return nil
		}
	case "sentinel":
		if len(parts) < 2 {
			e.refuse(r.urlName, "with %s=SENTINEL, it is: master name,sentinel1 host:port,...,sentinelN host:port", r.kindName)
			return nil
		}
		t.master, parts = parts[0], parts[1:]
	}
	for _, p := range parts {
		addr, user, pass, db, tlsURL, err := parseAddr(p, t.network == "unix")
		if err != nil {
			e.refuse(r.urlName, "%v", err)
			return nil
		}
		if user != "" || pass != "" {
			if t.urlAuth != "" && t.urlAuth != user+":"+pass {
				e.refuse(r.urlName, "its addresses carry different credentials; give them once in %s", r.authName)
				return nil
			}
			t.user, t.password, t.urlAuth = user, pass, user+":"+pass
		}
		if db != 0 {
			if t.kind == "cluster" {
				e.refuse(r.urlName, "a Redis Cluster has database 0 only; remove /%d", db)
				return nil
			}
			t.db = db
		}
		t.urlTLS = t.urlTLS || tlsURL
		t.addrs = append(t.addrs, addr)
	}
	return t
}

// parseAddr reads one address of a Redis URL: host:port, a socket path
// (unix), or redis://[user:password@]host:port[/db] (rediss:// for TLS).
func parseAddr(a string, unix bool) (addr, user, pass string, db int, tlsOn bool, err error) {
	if !strings.HasPrefix(a, "redis://") && !strings.HasPrefix(a, "rediss://") {
		if !unix {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return "", "", "", 0, false, fmt.Errorf("%q is not host:port", a)
			}
		}
		return a, "", "", 0, false, nil
	}
	u, err := url.Parse(a)
	if err != nil || u.Host == "" {
		return "", "", "", 0, false, fmt.Errorf("%q is not a redis://[user:password@]host:port[/db] URL", redactURL(a))
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if db, err = strconv.Atoi(p); err != nil || db < 0 {
			return "", "", "", 0, false, fmt.Errorf("%q: the path is a database number, such as /0", redactURL(a))
		}
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "6379")
	}
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		if pass == "" {
			user, pass = "", user // redis://secret@host: a password alone
		}
	}
	return addr, user, pass, db, u.Scheme == "rediss", nil
}

// redactURL hides a URL's credentials.
func redactURL(a string) string {
	if i := strings.LastIndex(a, "@"); i >= 0 {
		if j := strings.Index(a, "://"); j >= 0 && j < i {
			return a[:j+3] + "*****" + a[i:]
		}
	}
	return a
}

// apply reads how to reach t from r: credentials (password, if given,
// is floodgate's REDIS_PASSWORD, which wins over REDIS_AUTH), TLS, the
// pool, the timeout and the pipelines.
func (t *redisTarget) apply(e *env, r redisEnv, prefix string, tlsConf *tls.Config, password string) {
	switch {
	case password != "":
		if r.auth.set {
			e.refuse(r.authName, "REDIS_PASSWORD (floodgate's name) is set too: keep one")
		}
		t.user, t.password = "", password
	case r.auth.set:
		if t.urlAuth != "" {
			e.refuse(r.authName, "%s carries credentials too: keep one", r.urlName)
		}
		t.user, t.password = splitAuth(r.auth.v)
	}
	if r.sentinelAuth.set {
		if t.kind != "sentinel" {
			e.refuse(r.sAuth, "authenticates to Sentinels, and %s is not SENTINEL: remove it", r.kindName)
		}
		t.sentinelUser, t.sentinelPassword = splitAuth(r.sentinelAuth.v)
	}
	if r.tls.v || t.urlTLS {
		if tlsConf == nil {
			tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.tls = tlsConf
	}
	t.poolSize = r.poolSize.v
	t.timeout = r.timeout
	t.batchSize = r.pipelineLimit.v
}

// splitAuth reads upstream's auth, "password" or "user:password".
func splitAuth(a string) (user, pass string) {
	if u, p, ok := strings.Cut(a, ":"); ok {
		return u, p
	}
	return "", a
}

// memcache refuses the memcache variables when BACKEND_TYPE asks for it
// (upstream reads them only then).
func (s *settings) memcache(e *env) {
	names := []string{"MEMCACHE_HOST_PORT", "MEMCACHE_MAX_IDLE_CONNS", "MEMCACHE_SRV", "MEMCACHE_SRV_REFRESH", "MEMCACHE_TLS",
		"MEMCACHE_TLS_CLIENT_CERT", "MEMCACHE_TLS_CLIENT_KEY", "MEMCACHE_TLS_CACERT", "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION"}
	backend := e.str("BACKEND_TYPE")
	for _, n := range names {
		if e.str(n).set && strings.EqualFold(backend.v, "memcache") {
			e.refuse(n, "floodgate has no memcache backend; use Redis (REDIS_URL) and remove the MEMCACHE_* variables")
		}
	}
}

// tracingEnv reads TRACING_*.
func (s *settings) tracingEnv(e *env) {
	t := &s.tracing
	t.Enabled = e.boolean("TRACING_ENABLED").v
	t.ServiceName = or(e.str("TRACING_SERVICE_NAME").v, "RateLimit")
	t.Namespace = e.str("TRACING_SERVICE_NAMESPACE").v
	t.InstanceID = e.str("TRACING_SERVICE_INSTANCE_ID").v
	t.Protocol = or(e.oneOf("TRACING_EXPORTER_PROTOCOL", "http", "grpc").v, "http")
	t.SamplingRate = 1
	if f := e.float("TRACING_SAMPLING_RATE", 0, 1); f.set {
		t.SamplingRate = f.v
	}
}

// sortedErrs returns errs' messages in name order, each once.
func sortedErrs(errs []error) []string {
	var out []string
	for _, err := range errs {
		out = append(out, err.Error())
	}
	slices.Sort(out)
	return slices.Compact(out)
}
