package main

import (
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/rlsxds"
)

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
