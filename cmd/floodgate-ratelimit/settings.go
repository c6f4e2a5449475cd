package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
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
