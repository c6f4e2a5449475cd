package main

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/tlstest"
)

// noEnv is an environment with nothing set.
func noEnv(string) (string, bool) { return "", false }

// envOf is an environment of m's variables.
func envOf(m map[string]string) lookupEnv {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// merged is m with more's variables added.
func merged(m map[string]string, more ...map[string]string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	for _, x := range more {
		maps.Copy(out, x)
	}
	return out
}

// onRedis are the variables of a Redis that parse accepts (nothing dials it).
var onRedis = map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:6379"}

// perSecondRedis adds a per-second Redis to onRedis.
var perSecondRedis = merged(onRedis, map[string]string{"REDIS_PERSECOND": "true", "REDIS_PERSECOND_SOCKET_TYPE": "tcp", "REDIS_PERSECOND_URL": "127.0.0.1:6380"})

// upstreamRow is one row of TestUpstreamSettings: an upstream variable set
// to value (with the variables of with), and either the effect on the
// settings it is honoured with (honoured) or the reason it is refused
// (refused, a part of the message naming it).
type upstreamRow struct {
	name, value string
	with        map[string]string
	honoured    func(*settings) bool
	refused     string
}

// upstreamRows are every upstream variable's rows; files are the test's
// certificates (see tlsFiles).
func upstreamRows(f tlsFiles) []upstreamRow {
	tlsOn := map[string]string{"GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": f.serverCert, "GRPC_SERVER_TLS_KEY": f.serverKey}
	mTLS := merged(tlsOn, map[string]string{"GRPC_CLIENT_TLS_CACERT": f.ca})
	redisTLSOn := merged(onRedis, map[string]string{"REDIS_TLS": "true"})
	sentinel := map[string]string{"REDIS_TYPE": "SENTINEL", "REDIS_URL": "mymaster,127.0.0.1:26379"}
	psSentinel := merged(perSecondRedis, map[string]string{"REDIS_PERSECOND_TYPE": "SENTINEL", "REDIS_PERSECOND_URL": "m2,127.0.0.1:26380"})
	memcache := map[string]string{"BACKEND_TYPE": "memcache"}
	prom := map[string]string{"USE_PROMETHEUS": "true"}
	return []upstreamRow{
		{name: "HOST", value: "127.0.0.1", honoured: func(s *settings) bool { return s.httpAddr == "127.0.0.1:8080" }},
		{name: "PORT", value: "9000", honoured: func(s *settings) bool { return s.httpAddr == ":9000" }},
		{name: "PORT", value: "http", refused: "whole number"},
		{name: "DEBUG_HOST", value: "127.0.0.1", honoured: func(s *settings) bool { return s.debugAddr == "127.0.0.1:6070" }},
		{name: "DEBUG_PORT", value: "7000", honoured: func(s *settings) bool { return s.debugAddr == ":7000" }},
		{name: "GRPC_UDS", value: "/run/rl.sock", honoured: func(s *settings) bool { return s.grpcAddr == "unix:/run/rl.sock" }},
		{name: "GRPC_HOST", value: "127.0.0.1", honoured: func(s *settings) bool { return s.grpcAddr == "127.0.0.1:8081" }},
		{name: "GRPC_PORT", value: "9001", honoured: func(s *settings) bool { return s.grpcAddr == ":9001" }},
		{name: "GRPC_PORT", value: "70000", refused: "from 0 to 65535"},
		{name: "GRPC_MAX_CONNECTION_AGE", value: "1h", honoured: func(s *settings) bool { return s.maxAge == time.Hour && s.maxAgeGrace == time.Hour }},
		{name: "GRPC_MAX_CONNECTION_AGE", value: "forever", refused: "duration"},
		{name: "GRPC_MAX_CONNECTION_AGE_GRACE", value: "5m", honoured: func(s *settings) bool { return s.maxAge == 24*time.Hour && s.maxAgeGrace == 5*time.Minute }},
		{name: "GRPC_SERVER_USE_TLS", value: "true", with: tlsOn, honoured: func(s *settings) bool { return s.grpcTLS != nil && s.grpcTLS.clientCAs == nil }},
		{name: "GRPC_SERVER_USE_TLS", value: "true", refused: "needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY"},
		{name: "GRPC_SERVER_USE_TLS", value: "yes", refused: "not a boolean"},
		{name: "GRPC_SERVER_TLS_CERT", value: f.serverCert, with: tlsOn, honoured: func(s *settings) bool { return s.grpcTLS.certFile == f.serverCert }},
		{name: "GRPC_SERVER_TLS_CERT", value: f.ca + ".missing", with: tlsOn, refused: "no such file"},
		{name: "GRPC_SERVER_TLS_KEY", value: f.serverKey, with: tlsOn, honoured: func(s *settings) bool { return s.grpcTLS.keyFile == f.serverKey }},
		{name: "GRPC_SERVER_TLS_KEY", value: f.clientKey, with: tlsOn, refused: "private key does not match public key"},
		{name: "GRPC_CLIENT_TLS_CACERT", value: f.ca, with: tlsOn, honoured: func(s *settings) bool { return s.grpcTLS.clientCAs != nil }},
		{name: "GRPC_CLIENT_TLS_CACERT", value: f.serverKey, with: tlsOn, refused: "no PEM certificate"},
		{name: "GRPC_CLIENT_TLS_SAN", value: "client.test", with: mTLS, honoured: func(s *settings) bool { return s.grpcTLS.san == "client.test" }},
		{name: "GRPC_CLIENT_TLS_SAN", value: "client.test", with: tlsOn, refused: "set it to the clients' CA"},
		{name: "LOG_LEVEL", value: "DEBUG", honoured: func(s *settings) bool { return s.logLevel == slog.LevelDebug }},
		{name: "LOG_LEVEL", value: "warning", honoured: func(s *settings) bool { return s.logLevel == slog.LevelWarn }},
		{name: "LOG_LEVEL", value: "verbose", refused: "use trace, debug, info, warn, error, fatal or panic"},
		{name: "LOG_FORMAT", value: "json", honoured: func(s *settings) bool { return s.logJSON }},
		{name: "LOG_FORMAT", value: "text", honoured: func(s *settings) bool { return !s.logJSON }},
		{name: "LOG_FORMAT", value: "xml", refused: "use text or json"},
		{name: "CONFIG_TYPE", value: "FILE", honoured: func(s *settings) bool { return s.config == "" }},
		{name: "CONFIG_TYPE", value: "GRPC_XDS_SOTW", honoured: func(s *settings) bool { return s.xdsOn }},
		{name: "CONFIG_TYPE", value: "CONSUL", refused: "use FILE or GRPC_XDS_SOTW"},
		{name: "FORCE_START_WITHOUT_INITIAL_CONFIG", value: "true", honoured: func(s *settings) bool { return s.forceStart }},
		{name: "CONFIG_GRPC_XDS_NODE_ID", value: "node-1", honoured: func(s *settings) bool { return s.xds.NodeID == "node-1" }},
		{name: "CONFIG_GRPC_XDS_NODE_METADATA", value: "zone:a,team:b", honoured: func(s *settings) bool {
			return maps.Equal(s.xds.NodeMetadata, map[string]string{"zone": "a", "team": "b"})
		}},
		{name: "CONFIG_GRPC_XDS_NODE_METADATA", value: "zone", refused: "key1:value1"},
		{name: "CONFIG_GRPC_XDS_SERVER_URL", value: "xds:18000", honoured: func(s *settings) bool { return s.xds.ServerURL == "xds:18000" }},
		{name: "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", value: "5s", honoured: func(s *settings) bool { return s.xds.RetryInterval == 5*time.Second }},
		{name: "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", value: "x-token:t", honoured: func(s *settings) bool { return s.xds.Headers["x-token"] == "t" }},
		{name: "CONFIG_GRPC_XDS_SERVER_USE_TLS", value: "true", honoured: func(s *settings) bool { return s.xds.UseTLS }},
		{name: "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", value: "/c.pem", honoured: func(s *settings) bool { return s.xds.ClientCert == "/c.pem" }},
		{name: "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", value: "/k.pem", honoured: func(s *settings) bool { return s.xds.ClientKey == "/k.pem" }},
		{name: "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", value: "/ca.pem", honoured: func(s *settings) bool { return s.xds.ServerCACert == "/ca.pem" }},
		{name: "CONFIG_GRPC_XDS_SERVER_TLS_SAN", value: "xds.test", honoured: func(s *settings) bool { return s.xds.ServerSAN == "xds.test" }},
		{name: "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", value: "2s", honoured: func(s *settings) bool { return s.xds.BackoffInitial == 2*time.Second }},
		{name: "XDS_CLIENT_BACKOFF_MAX_INTERVAL", value: "2m", honoured: func(s *settings) bool { return s.xds.BackoffMax == 2*time.Minute }},
		{name: "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", value: "0.25", honoured: func(s *settings) bool { return s.xds.BackoffRandomFactor == 0.25 }},
		{name: "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", value: "2", refused: "from 0 to 1"},
		{name: "XDS_CLIENT_BACKOFF_JITTER", value: "false", honoured: func(s *settings) bool { return !s.xds.BackoffJitter }},
		{name: "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", value: "8388608", honoured: func(s *settings) bool { return s.xds.MaxMsgSize == 8<<20 }},
		{name: "USE_DOG_STATSD", value: "false", honoured: func(s *settings) bool { return s.metrics }},
		{name: "USE_DOG_STATSD", value: "true", refused: "not DogStatsD"},
		{name: "USE_DOG_STATSD_MOGRIFIERS", value: "A", with: map[string]string{"USE_DOG_STATSD": "true"}, refused: "not DogStatsD"},
		{name: "USE_DOG_STATSD_MOGRIFIERS", value: "A", honoured: func(s *settings) bool { return s.metrics }},
		{name: "USE_STATSD", value: "false", honoured: func(s *settings) bool { return s.metrics && s.statsd.addr == "" }},
		{name: "USE_STATSD", value: "true", honoured: func(s *settings) bool {
			return s.statsd.addr == "localhost:8125" && s.statsd.interval == 10*time.Second
		}},
		{name: "STATSD_HOST", value: "statsd", honoured: func(s *settings) bool { return s.statsd.addr == "statsd:8125" }},
		{name: "STATSD_HOST", value: "statsd", with: map[string]string{"USE_STATSD": "false"}, honoured: func(s *settings) bool { return s.metrics && s.statsd.addr == "" }},
		{name: "STATSD_HOST", value: "statsd", with: map[string]string{"USE_PROMETHEUS": "true"}, honoured: func(s *settings) bool { return s.statsd.addr == "" }},
		{name: "STATSD_PORT", value: "9125", honoured: func(s *settings) bool { return s.statsd.addr == "localhost:9125" }},
		{name: "STATSD_PORT", value: "9125", with: map[string]string{"DISABLE_STATS": "true"}, honoured: func(s *settings) bool { return !s.metrics && s.statsd.addr == "" }},
		{name: "EXTRA_TAGS", value: "env:prod", refused: "relabeling"},
		{name: "EXTRA_TAGS", value: "env:prod", with: map[string]string{"DISABLE_STATS": "true"}, honoured: func(s *settings) bool { return !s.metrics }},
		{name: "STATS_FLUSH_INTERVAL", value: "5s", honoured: func(s *settings) bool { return s.metrics && s.statsd.addr == "" }},
		{name: "STATS_FLUSH_INTERVAL", value: "5s", with: map[string]string{"USE_STATSD": "true"}, honoured: func(s *settings) bool { return s.statsd.interval == 5*time.Second }},
		{name: "STATS_FLUSH_INTERVAL", value: "0s", with: map[string]string{"USE_STATSD": "true"}, refused: "at least 1ms"},
		{name: "STATS_FLUSH_INTERVAL", value: "often", refused: "duration"},
		{name: "DISABLE_STATS", value: "true", honoured: func(s *settings) bool { return !s.metrics }},
		{name: "USE_PROMETHEUS", value: "true", honoured: func(s *settings) bool { return s.promAddr == ":9090" && s.promPath == "/metrics" }},
		{name: "USE_PROMETHEUS", value: "true", with: map[string]string{"DISABLE_STATS": "true"}, honoured: func(s *settings) bool { return !s.metrics }},
		{name: "PROMETHEUS_ADDR", value: "127.0.0.1:9100", with: prom, honoured: func(s *settings) bool { return s.promAddr == "127.0.0.1:9100" }},
		{name: "PROMETHEUS_PATH", value: "/prom", with: prom, honoured: func(s *settings) bool { return s.promPath == "/prom" }},
		{name: "PROMETHEUS_PATH", value: "prom", with: prom, refused: "starts with /"},
		{name: "PROMETHEUS_MAPPER_YAML", value: "/m.yaml", with: prom, refused: "metric_relabel_configs"},
		{name: "PROMETHEUS_MAPPER_YAML", value: "/m.yaml", with: map[string]string{"USE_STATSD": "false"}, honoured: func(s *settings) bool { return s.promAddr == "" }},
		{name: "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", value: "true", with: prom, refused: "in seconds"},
		{name: "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", value: "false", with: prom, honoured: func(s *settings) bool { return s.promAddr == ":9090" }},
		{name: "RUNTIME_ROOT", value: "/data", honoured: func(s *settings) bool { return s.config == "/data/config" && s.runtime.Dir == "/data/config" }},
		{name: "RUNTIME_SUBDIRECTORY", value: "ratelimit", honoured: func(s *settings) bool { return s.config == "/srv/runtime_data/current/ratelimit/config" }},
		{name: "RUNTIME_APPDIRECTORY", value: "rl", honoured: func(s *settings) bool { return s.config == "/srv/runtime_data/current/rl" }},
		{name: "RUNTIME_IGNOREDOTFILES", value: "true", honoured: func(s *settings) bool { return s.runtime.IgnoreDotFiles == opt[bool]{true, true} }},
		{name: "RUNTIME_WATCH_ROOT", value: "false", honoured: func(s *settings) bool { return s.runtime.WatchRoot == opt[bool]{false, true} }},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "0", with: onRedis, honoured: func(s *settings) bool { return s.store.jitter == opt[time.Duration]{0, true} }},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "300", with: onRedis, honoured: func(s *settings) bool { return s.store.jitter == opt[time.Duration]{300 * time.Second, true} }},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "86400", with: perSecondRedis, honoured: func(s *settings) bool {
			return s.store.jitter == opt[time.Duration]{24 * time.Hour, true} && s.perSecond != nil
		}},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "86401", with: onRedis, refused: "from 0 (no jitter) to 86400 (a day"},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "-1", with: onRedis, refused: "from 0 (no jitter) to 86400 (a day"},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "5m", with: onRedis, refused: "whole number"},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "300", refused: "set REDIS_URL"},
		{name: "EXPIRATION_JITTER_MAX_SECONDS", value: "0", honoured: func(s *settings) bool { return s.redis == nil }},
		{name: "LOCAL_CACHE_SIZE_IN_BYTES", value: "0", with: onRedis, honoured: func(s *settings) bool {
			return s.store.localCache == 0 && s.store.denyCache == opt[int]{0, true}
		}},
		{name: "LOCAL_CACHE_SIZE_IN_BYTES", value: "1048576", with: onRedis, honoured: func(s *settings) bool {
			return s.store.localCache == 1048576 && s.store.denyCache == opt[int]{0, true}
		}},
		{name: "LOCAL_CACHE_SIZE_IN_BYTES", value: "1", with: onRedis, honoured: func(s *settings) bool { return s.store.localCache == 1 }},
		{name: "LOCAL_CACHE_SIZE_IN_BYTES", value: "-1", with: onRedis, refused: "whole number from 0 to 2147483647"},
		{name: "LOCAL_CACHE_SIZE_IN_BYTES", value: "1048576", refused: "set REDIS_URL"},
		{name: "NEAR_LIMIT_RATIO", value: "0.9", honoured: func(s *settings) bool { return s.behaviour.NearLimitRatio == opt[float64]{0.9, true} }},
		{name: "NEAR_LIMIT_RATIO", value: "1.5", refused: "from 0 to 1"},
		{name: "CACHE_KEY_PREFIX", value: "rl_", with: onRedis, honoured: func(s *settings) bool { return s.store.prefix == opt[string]{"rl_", true} }},
		{name: "CACHE_KEY_PREFIX", value: "{rl}", with: onRedis, refused: "without { or }"},
		{name: "CACHE_KEY_PREFIX", value: "rl_", refused: "set REDIS_URL"},
		{name: "BACKEND_TYPE", value: "redis", with: onRedis, honoured: func(s *settings) bool { return s.redis != nil }},
		{name: "BACKEND_TYPE", value: "redis", refused: "set REDIS_URL"},
		{name: "BACKEND_TYPE", value: "memcache", refused: "no memcache backend"},
		{name: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", value: "false", honoured: func(s *settings) bool {
			return s.behaviour.StopIncrementWhenOverLimit == opt[bool]{false, true}
		}},
		{name: "LIMIT_RESPONSE_HEADERS_ENABLED", value: "true", honoured: func(s *settings) bool {
			b := s.behaviour
			return b.LimitHeaders == opt[bool]{true, true} && b.LimitHeader == "RateLimit-Limit" && b.RemainingHeader == "RateLimit-Remaining" && b.ResetHeader == "RateLimit-Reset"
		}},
		{name: "LIMIT_LIMIT_HEADER", value: "X-Limit", honoured: func(s *settings) bool { return s.behaviour.LimitHeader == "X-Limit" }},
		{name: "LIMIT_LIMIT_HEADER", value: "X Limit", refused: "not a header field name"},
		{name: "LIMIT_REMAINING_HEADER", value: "X-Left", honoured: func(s *settings) bool { return s.behaviour.RemainingHeader == "X-Left" }},
		{name: "LIMIT_RESET_HEADER", value: "X-Reset", honoured: func(s *settings) bool { return s.behaviour.ResetHeader == "X-Reset" }},
		{name: "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", value: "false", honoured: func(s *settings) bool { return s.healthyWithConfig == opt[bool]{false, true} }},
		{name: "REDIS_SOCKET_TYPE", value: "unix", with: map[string]string{"REDIS_URL": "/run/redis.sock"}, honoured: func(s *settings) bool {
			return s.redis.network == "unix" && s.redis.addrs[0] == "/run/redis.sock"
		}},
		{name: "REDIS_SOCKET_TYPE", value: "udp", with: onRedis, refused: "use tcp or unix"},
		{name: "REDIS_SOCKET_TYPE", value: "tcp", refused: "set REDIS_URL"},
		{name: "REDIS_TYPE", value: "CLUSTER", with: map[string]string{"REDIS_URL": "10.0.0.1:6379,10.0.0.2:6379"}, honoured: func(s *settings) bool {
			return s.redis.kind == "cluster" && slices.Equal(s.redis.addrs, []string{"10.0.0.1:6379", "10.0.0.2:6379"})
		}},
		{name: "REDIS_TYPE", value: "SENTINEL", with: sentinel, honoured: func(s *settings) bool {
			return s.redis.kind == "sentinel" && s.redis.master == "mymaster" && slices.Equal(s.redis.addrs, []string{"127.0.0.1:26379"})
		}},
		{name: "REDIS_TYPE", value: "SENTINEL", with: onRedis, refused: "master name,sentinel1"},
		{name: "REDIS_TYPE", value: "RING", with: onRedis, refused: "use SINGLE or SENTINEL or CLUSTER"},
		{name: "REDIS_URL", value: "redis:6379", with: map[string]string{"REDIS_SOCKET_TYPE": "tcp"}, honoured: func(s *settings) bool {
			return s.redis.kind == "single" && s.redis.network == "tcp" && s.redis.addrs[0] == "redis:6379"
		}},
		{name: "REDIS_URL", value: "redis://alice:s3cret@redis:6380/2", with: map[string]string{"REDIS_SOCKET_TYPE": "tcp"}, honoured: func(s *settings) bool {
			return s.redis.addrs[0] == "redis:6380" && s.redis.user == "alice" && s.redis.password == "s3cret" && s.redis.db == 2
		}},
		{name: "REDIS_URL", value: "redis:6379", refused: "set REDIS_SOCKET_TYPE=tcp"},
		{name: "REDIS_URL", value: "a:1,b:2", with: map[string]string{"REDIS_SOCKET_TYPE": "tcp"}, refused: "set REDIS_TYPE to CLUSTER or SENTINEL"},
		{name: "REDIS_URL", value: "redis://alice:s3cret@a:1,redis://alice:s3cret@b:2", with: map[string]string{"REDIS_SOCKET_TYPE": "tcp"},
			refused: "REDIS_URL=redis://*****@a:1,redis://*****@b:2: a SINGLE Redis has one address"},
		{name: "REDIS_POOL_SIZE", value: "20", with: onRedis, honoured: func(s *settings) bool { return s.redis.poolSize == 20 }},
		{name: "REDIS_POOL_SIZE", value: "0", with: onRedis, refused: "from 1"},
		{name: "REDIS_AUTH", value: "alice:s3cret", with: onRedis, honoured: func(s *settings) bool { return s.redis.user == "alice" && s.redis.password == "s3cret" }},
		{name: "REDIS_AUTH", value: "s3cret", with: onRedis, honoured: func(s *settings) bool { return s.redis.user == "" && s.redis.password == "s3cret" }},
		{name: "REDIS_AUTH", value: "s3cret", with: merged(onRedis, map[string]string{"REDIS_PASSWORD": "other"}), refused: "keep one"},
		{name: "REDIS_TLS", value: "true", with: onRedis, honoured: func(s *settings) bool { return s.redis.tls != nil && !s.redis.tls.InsecureSkipVerify }},
		{name: "REDIS_TLS_CLIENT_CERT", value: f.clientCert, with: merged(redisTLSOn, map[string]string{"REDIS_TLS_CLIENT_KEY": f.clientKey}), honoured: func(s *settings) bool {
			return len(s.redis.tls.Certificates) == 1
		}},
		{name: "REDIS_TLS_CLIENT_CERT", value: f.clientCert, with: redisTLSOn, refused: "set both"},
		{name: "REDIS_TLS_CLIENT_KEY", value: f.clientKey, with: merged(redisTLSOn, map[string]string{"REDIS_TLS_CLIENT_CERT": f.clientCert}), honoured: func(s *settings) bool {
			return len(s.redis.tls.Certificates) == 1
		}},
		{name: "REDIS_TLS_CLIENT_KEY", value: f.serverKey, with: merged(redisTLSOn, map[string]string{"REDIS_TLS_CLIENT_CERT": f.clientCert}), refused: "does not match"},
		{name: "REDIS_TLS_CACERT", value: f.ca, with: redisTLSOn, honoured: func(s *settings) bool { return s.redis.tls.RootCAs != nil }},
		{name: "REDIS_TLS_CACERT", value: f.ca + ".missing", with: redisTLSOn, refused: "no such file"},
		{name: "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", value: "true", with: redisTLSOn, honoured: func(s *settings) bool {
			return s.redis.tls.InsecureSkipVerify && s.redis.tls.VerifyPeerCertificate != nil
		}},
		{name: "REDIS_PIPELINE_WINDOW", value: "150us", with: onRedis, honoured: func(s *settings) bool { return s.redis != nil && s.redis.batchSize == 0 }},
		{name: "REDIS_PIPELINE_LIMIT", value: "64", with: onRedis, honoured: func(s *settings) bool { return s.redis.batchSize == 64 }},
		{name: "REDIS_CLUSTER_PIPELINE_PARALLELISM", value: "4", with: onRedis, honoured: func(s *settings) bool { return s.redis != nil }},
		{name: "REDIS_CLUSTER_PIPELINE_PARALLELISM", value: "-1", with: onRedis, refused: "from 0"},
		{name: "REDIS_PERSECOND", value: "true", with: perSecondRedis, honoured: func(s *settings) bool {
			return s.perSecond != nil && s.perSecond.addrs[0] == "127.0.0.1:6380"
		}},
		{name: "REDIS_PERSECOND", value: "true", with: onRedis, refused: "needs REDIS_PERSECOND_URL"},
		{name: "REDIS_PERSECOND", value: "true", refused: "set REDIS_URL"},
		{name: "REDIS_PERSECOND_SOCKET_TYPE", value: "unix", with: merged(perSecondRedis, map[string]string{"REDIS_PERSECOND_URL": "/run/ps.sock"}), honoured: func(s *settings) bool {
			return s.perSecond.network == "unix"
		}},
		{name: "REDIS_PERSECOND_TYPE", value: "CLUSTER", with: merged(perSecondRedis, map[string]string{"REDIS_PERSECOND_URL": "a:1,b:2"}), honoured: func(s *settings) bool {
			return s.perSecond.kind == "cluster"
		}},
		{name: "REDIS_PERSECOND_URL", value: "ps:6379", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond.addrs[0] == "ps:6379" }},
		{name: "REDIS_PERSECOND_POOL_SIZE", value: "7", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond.poolSize == 7 && s.redis.poolSize == 0 }},
		{name: "REDIS_PERSECOND_AUTH", value: "bob:pw", with: perSecondRedis, honoured: func(s *settings) bool {
			return s.perSecond.user == "bob" && s.perSecond.password == "pw" && s.redis.password == ""
		}},
		{name: "REDIS_PERSECOND_TLS", value: "true", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond.tls != nil && s.redis.tls == nil }},
		{name: "REDIS_SENTINEL_AUTH", value: "sentinel:pw", with: sentinel, honoured: func(s *settings) bool {
			return s.redis.sentinelUser == "sentinel" && s.redis.sentinelPassword == "pw"
		}},
		{name: "REDIS_SENTINEL_AUTH", value: "pw", with: onRedis, refused: "is not SENTINEL"},
		{name: "REDIS_PERSECOND_SENTINEL_AUTH", value: "pw", with: psSentinel, honoured: func(s *settings) bool { return s.perSecond.sentinelPassword == "pw" }},
		{name: "REDIS_PERSECOND_PIPELINE_WINDOW", value: "1ms", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond.batchSize == 0 }},
		{name: "REDIS_PERSECOND_PIPELINE_LIMIT", value: "32", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond.batchSize == 32 && s.redis.batchSize == 0 }},
		{name: "REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM", value: "0", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond != nil }},
		{name: "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", value: "true", with: onRedis, honoured: func(s *settings) bool { return s.redisHealthActive }},
		{name: "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", value: "true", refused: "set REDIS_URL"},
		{name: "REDIS_TIMEOUT", value: "2s", with: onRedis, honoured: func(s *settings) bool { return s.redis.timeout == opt[time.Duration]{2 * time.Second, true} }},
		{name: "REDIS_PERSECOND_TIMEOUT", value: "50ms", with: perSecondRedis, honoured: func(s *settings) bool {
			return s.perSecond.timeout == opt[time.Duration]{50 * time.Millisecond, true} && !s.redis.timeout.set
		}},
		{name: "REDIS_POOL_ON_EMPTY_BEHAVIOR", value: "WAIT", with: onRedis, honoured: func(s *settings) bool { return s.redis != nil }},
		{name: "REDIS_POOL_ON_EMPTY_BEHAVIOR", value: "CREATE", with: onRedis, refused: "set WAIT, and raise REDIS_POOL_SIZE"},
		{name: "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR", value: "ERROR", with: perSecondRedis, refused: "raise REDIS_PERSECOND_POOL_SIZE"},
		{name: "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR", value: "wait", with: perSecondRedis, honoured: func(s *settings) bool { return s.perSecond != nil }},
		{name: "REDIS_STARTUP_INITIAL_INTERVAL", value: "2s", with: onRedis, honoured: func(s *settings) bool { return s.startup == backoff{2 * time.Second, 30 * time.Second, 0} }},
		{name: "REDIS_STARTUP_MAX_INTERVAL", value: "1m", with: onRedis, honoured: func(s *settings) bool { return s.startup == backoff{time.Second, time.Minute, 0} }},
		{name: "REDIS_STARTUP_MAX_INTERVAL", value: "10ms", with: onRedis, refused: "shorter than REDIS_STARTUP_INITIAL_INTERVAL"},
		{name: "REDIS_STARTUP_MAX_ELAPSED_TIME", value: "5m", with: onRedis, honoured: func(s *settings) bool { return s.startup == backoff{time.Second, 30 * time.Second, 5 * time.Minute} }},
		{name: "MEMCACHE_HOST_PORT", value: "mc:11211", honoured: func(s *settings) bool { return s.redis == nil }},
		{name: "MEMCACHE_HOST_PORT", value: "mc:11211", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_MAX_IDLE_CONNS", value: "4", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_SRV", value: "_mc._tcp.example", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_SRV_REFRESH", value: "1m", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_TLS", value: "true", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_TLS_CLIENT_CERT", value: "/c.pem", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_TLS_CLIENT_KEY", value: "/k.pem", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_TLS_CACERT", value: "/ca.pem", with: memcache, refused: "no memcache backend"},
		{name: "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION", value: "true", with: memcache, refused: "no memcache backend"},
		{name: "SHADOW_MODE", value: "true", honoured: func(s *settings) bool { return s.shadow }},
		{name: "QUOTA_MODE", value: "true", honoured: func(s *settings) bool { return s.behaviour.QuotaMode == opt[bool]{true, true} }},
		{name: "RESPONSE_DYNAMIC_METADATA", value: "true", honoured: func(s *settings) bool { return s.behaviour.DynamicMetadata == opt[bool]{true, true} }},
		{name: "MERGE_DOMAIN_CONFIG", value: "true", honoured: func(s *settings) bool { return s.merge }},
		{name: "MERGE_DOMAIN_CONFIG", value: "sometimes", refused: "not a boolean"},
		{name: "TRACING_ENABLED", value: "true", honoured: func(s *settings) bool { return s.tracing.Enabled }},
		{name: "TRACING_ENABLED", value: "false", honoured: func(s *settings) bool { return !s.tracing.Enabled }},
		{name: "TRACING_SERVICE_NAME", value: "rl", honoured: func(s *settings) bool { return s.tracing.ServiceName == "rl" }},
		{name: "TRACING_SERVICE_NAMESPACE", value: "edge", honoured: func(s *settings) bool { return s.tracing.Namespace == "edge" }},
		{name: "TRACING_SERVICE_INSTANCE_ID", value: "i-1", honoured: func(s *settings) bool { return s.tracing.InstanceID == "i-1" }},
		{name: "TRACING_EXPORTER_PROTOCOL", value: "grpc", honoured: func(s *settings) bool { return s.tracing.Protocol == "grpc" }},
		{name: "TRACING_EXPORTER_PROTOCOL", value: "thrift", refused: "use http or grpc"},
		{name: "TRACING_SAMPLING_RATE", value: "0.1", honoured: func(s *settings) bool { return s.tracing.SamplingRate == 0.1 }},
	}
}

// tlsFiles are certificates and keys for the tests: a CA, a server's
// and a client's.
type tlsFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newTLSFiles(t *testing.T) tlsFiles {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	f := tlsFiles{ca: ca.File}
	f.serverCert, f.serverKey = ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth, "localhost", "127.0.0.1")
	f.clientCert, f.clientKey = ca.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth, "client.test")
	return f
}

// TestUpstreamSettings: each of upstream's variables, set, is honoured
// (its effect on the settings) or refused at start (exit status 2, a
// message naming it and what to do), and every name has a row.
func TestUpstreamSettings(t *testing.T) {
	rows := upstreamRows(newTLSFiles(t))
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.name] = true
	}
	for _, n := range upstreamNames {
		if !covered[n] {
			t.Errorf("%s has no row", n)
		}
		delete(covered, n)
	}
	for n := range covered {
		t.Errorf("row for %s, which is not one of upstream's names", n)
	}
	for _, r := range rows {
		t.Run(r.name+"="+r.value, func(t *testing.T) {
			var out strings.Builder
			env := merged(r.with, map[string]string{r.name: r.value})
			s, err := parse(nil, &out, envOf(env))
			if r.refused != "" {
				var exit exitCode
				if !errors.As(err, &exit) || exit != 2 {
					t.Fatalf("parse: %v, want exit status 2\n%s", err, out.String())
				}
				line := lineNaming(out.String(), r.name)
				if line == "" || !strings.Contains(line, r.refused) {
					t.Fatalf("no message naming %s and saying %q:\n%s", r.name, r.refused, out.String())
				}
				if (secret(r.name) || strings.Contains(r.value, "s3cret")) && strings.Contains(out.String(), r.value) {
					t.Fatalf("the message shows the secret: %s", line)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, out.String())
			}
			if !r.honoured(s) {
				t.Fatalf("%s=%s is not in the settings: %+v", r.name, r.value, s)
			}
		})
	}
}

// lineNaming returns the first line of out, the command's, that names
// name ("NAME=" or "NAME:", as a word).
func lineNaming(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, "floodgate-ratelimit: ")
		if !ok {
			continue
		}
		for _, sep := range []string{"=", ":"} {
			if strings.HasPrefix(rest, name+sep) || strings.Contains(rest, " "+name+sep) {
				return l
			}
		}
	}
	return ""
}

// TestUpstreamNames: the list is upstream's 114 names, each once, and the
// parser reads every one, whatever else is set: none is ignored.
func TestUpstreamNames(t *testing.T) {
	if n := len(upstreamNames); n != 114 {
		t.Fatalf("%d names, want upstream's 114", n)
	}
	if c := slices.Compact(slices.Sorted(slices.Values(upstreamNames))); len(c) != len(upstreamNames) {
		t.Fatalf("a name is listed twice")
	}
	for _, env := range []map[string]string{nil, perSecondRedis, {"DISABLE_STATS": "true", "GRPC_SERVER_USE_TLS": "true"}} {
		looked := map[string]bool{}
		look := func(k string) (string, bool) {
			looked[k] = true
			v, ok := env[k]
			return v, ok
		}
		if _, err := parse(nil, &strings.Builder{}, look); err != nil && len(env) == 0 {
			t.Fatal(err)
		}
		for _, n := range upstreamNames {
			if !looked[n] {
				t.Errorf("with %v set, %s is never read", env, n)
			}
		}
	}
}

// TestPrecedence: a flag wins over floodgate's own variable, which wins
// over upstream's, and the log says what was overridden.
func TestPrecedence(t *testing.T) {
	up := map[string]string{
		"GRPC_HOST": "127.0.0.2", "GRPC_PORT": "1", "PORT": "2", "RUNTIME_ROOT": "/data", "SHADOW_MODE": "true",
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "upstream:6379", "MERGE_DOMAIN_CONFIG": "true",
	}
	own := map[string]string{
		"FLOODGATE_RLS_GRPC": ":3", "FLOODGATE_RLS_HTTP": ":4", "FLOODGATE_RLS_CONFIG": "/own",
		"FLOODGATE_RLS_SHADOW": "false", "REDIS_ADDR": "own:6379",
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		check func(*settings) bool
		notes []string
	}{
		{"upstream's alone", up, nil, func(s *settings) bool {
			return s.grpcAddr == "127.0.0.2:1" && s.httpAddr == ":2" && s.config == "/data/config" && s.shadow && s.redis.addrs[0] == "upstream:6379" && s.merge
		}, nil},
		{"floodgate's variables win", merged(up, own), nil, func(s *settings) bool {
			return s.grpcAddr == ":3" && s.httpAddr == ":4" && s.config == "/own" && !s.shadow && s.redis.addrs[0] == "own:6379"
		}, []string{
			"FLOODGATE_RLS_HTTP overrides HOST/PORT", "FLOODGATE_RLS_GRPC overrides GRPC_HOST/GRPC_PORT",
			"FLOODGATE_RLS_CONFIG overrides RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY", "REDIS_ADDR overrides REDIS_URL",
		}},
		{"flags win", merged(up, own), []string{"-grpc", ":5", "-http", "", "-config", "/flag", "-shadow", "-redis", "flag:6379", "-merge-domains=false"}, func(s *settings) bool {
			return s.grpcAddr == ":5" && s.httpAddr == "" && s.config == "/flag" && s.shadow && s.redis.addrs[0] == "flag:6379" && !s.merge
		}, []string{
			"-http overrides HOST/PORT", "-grpc overrides GRPC_HOST/GRPC_PORT",
			"-config overrides RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY", "-redis overrides REDIS_URL",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			s, err := parse(tc.args, &out, envOf(tc.env))
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, out.String())
			}
			if !tc.check(s) {
				t.Fatalf("settings: %+v", s)
			}
			if !slices.Equal(s.notes, tc.notes) {
				t.Fatalf("notes %q, want %q", s.notes, tc.notes)
			}
		})
	}
}

// TestRefusalsTogether: every refused setting is reported at once, so
// that a manifest is fixed in one go.
func TestRefusalsTogether(t *testing.T) {
	var out strings.Builder
	_, err := parse(nil, &out, envOf(map[string]string{"USE_DOG_STATSD": "true", "BACKEND_TYPE": "memcache", "CACHE_KEY_PREFIX": "{a}", "REDIS_URL": "127.0.0.1:6379", "REDIS_SOCKET_TYPE": "tcp"}))
	var exit exitCode
	if !errors.As(err, &exit) || exit != 2 {
		t.Fatalf("parse: %v", err)
	}
	want := "floodgate-ratelimit: BACKEND_TYPE=memcache: floodgate has no memcache backend; use Redis (BACKEND_TYPE=redis with REDIS_URL), or leave REDIS_URL unset for the in-memory store\n" +
		"floodgate-ratelimit: CACHE_KEY_PREFIX={a}: floodgate puts each key's name in braces (its Redis Cluster hash tag), and braces in the prefix would move keys out of it; use a prefix without { or }\n" +
		"floodgate-ratelimit: USE_DOG_STATSD=true: floodgate exports Prometheus metrics (scrape /metrics on the HTTP port, or set USE_PROMETHEUS=true) and statsd (USE_STATSD=true), not DogStatsD; remove USE_DOG_STATSD\n"
	if out.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", out.String(), want)
	}
}

// TestUnsetNeverRefused: an environment with none of upstream's names
// starts floodgate with its own defaults, and so does one that sets
// every name to "" (as manifests render a value left out).
func TestUnsetNeverRefused(t *testing.T) {
	empty := map[string]string{}
	for _, n := range upstreamNames {
		empty[n] = ""
	}
	for _, env := range []map[string]string{nil, empty} {
		var out strings.Builder
		s, err := parse(nil, &out, envOf(env))
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, out.String())
		}
		if s.grpcAddr != ":8081" || s.httpAddr != ":8080" || s.debugAddr != "" || s.redis != nil || s.config != "" || !s.metrics || s.promAddr != "" ||
			s.logLevel != slog.LevelInfo || s.logJSON || s.grpcTLS != nil || s.maxAge != 24*time.Hour || s.maxAgeGrace != time.Hour || s.healthyWithConfig.set || len(s.notes) > 0 {
			t.Fatalf("defaults: %+v", s)
		}
	}
}

// TestHelp: -h writes the usage and exits 0.
func TestHelp(t *testing.T) {
	out := &coretest.Buffer{}
	if err := run(context.Background(), []string{"-h"}, noEnv, out, nil); err != nil {
		t.Fatalf("-h: %v", err)
	}
	if !strings.Contains(out.String(), "-grpc address") || !strings.Contains(out.String(), "docs/envoy.md") {
		t.Fatalf("usage:\n%s", out)
	}
}

// TestSettingsDocumented: docs/envoy.md's Settings table has a row for
// every upstream name.
func TestSettingsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/envoy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Settings\n")
	if !ok {
		t.Fatal("docs/envoy.md has no Settings section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	for _, n := range upstreamNames {
		if !strings.Contains(section, "| `"+n+"`") && !strings.Contains(section, ", `"+n+"`") && !strings.Contains(section, "`"+n+"`,") {
			t.Errorf("the Settings section has no row naming %s", n)
		}
	}
}

// TestComposeExampleEnv: the environment of upstream's
// docker-compose-example.yml is taken as it is: its Redis, configuration
// directory, log level and statsd sink.
func TestComposeExampleEnv(t *testing.T) {
	compose := map[string]string{
		"USE_STATSD": "true", "STATSD_HOST": "statsd", "STATSD_PORT": "9125", "LOG_LEVEL": "debug",
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379", "RUNTIME_ROOT": "/data", "RUNTIME_SUBDIRECTORY": "ratelimit",
		"RUNTIME_WATCH_ROOT": "false", "CONFIG_TYPE": "FILE", "CONFIG_GRPC_XDS_NODE_ID": "test-node-id",
		"CONFIG_GRPC_XDS_SERVER_URL": "ratelimit-xds-config-server:18000",
	}
	var out strings.Builder
	s, err := parse(nil, &out, envOf(compose))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, out.String())
	}
	if s.config != "/data/ratelimit/config" || s.redis.String() != "redis single at redis:6379" || s.logLevel != slog.LevelDebug ||
		s.runtime.WatchRoot != (opt[bool]{false, true}) || s.statsd.addr != "statsd:9125" {
		t.Fatalf("settings: %+v", s)
	}
}
