// Command floodgate-ratelimit is a rate-limit service for Envoy, Istio and
// Envoy Gateway: it serves envoy.service.ratelimit.v3.RateLimitService
// (ShouldRateLimit) over gRPC on floodgate's engine, the same limiters the
// middleware uses, in memory or on Redis.
//
//	go run ./cmd/floodgate-ratelimit                        # the sample configuration, in memory
//	go run ./cmd/floodgate-ratelimit -config ./ratelimit    # a directory of YAML files
//	go run ./cmd/floodgate-ratelimit -config ./ratelimit -redis 127.0.0.1:6379
//	go run ./cmd/floodgate-ratelimit -config ./ratelimit -check
//
// The configuration is envoyproxy/ratelimit's YAML format as it is
// (domain, nested descriptors with key and value, rate_limit with unit and
// requests_per_unit, unlimited, shadow_mode, replaces, name,
// detailed_metric), one domain per file (-merge-domains merges a domain
// split over files), every *.yaml and *.yml file of the directory;
// floodgate's additions are optional fields of rate_limit (algorithm,
// burst, and further limits that all apply). A changed file
// is reloaded while the service runs; a file that does not load is kept
// out, reported, and the rest stays in force. -check loads the directory
// and exits, 0 if every file loads and 1 with every error if not.
//
// The descriptors of one request are decided all or nothing (see
// internal/rls): a request one limit refuses is charged by none.
//
// It serves, besides the rate-limit service on -grpc (default :8081), the
// gRPC health service (NOT_SERVING until a configuration is loaded, and
// from the moment SIGTERM arrives) and server reflection; on -http
// (default :8080) envoyproxy/ratelimit's /json endpoint, /healthcheck and
// Prometheus metrics at /metrics (promobs's floodgate_* metrics). On
// SIGTERM it stops taking calls, gives those in flight up to -grace, and
// exits.
//
// Most flags have an environment variable of floodgate's own (-check,
// -grace and -merge-domains do not); run with -h for the list.
// envoyproxy/ratelimit's own variables (HOST, PORT, GRPC_PORT, REDIS_URL,
// RUNTIME_ROOT, ...: all 114 of them) are each honoured with its meaning
// or refused at start by name, with what to use instead (settings.go;
// docs/envoy.md's Settings table). A flag wins over floodgate's
// variables, which win over upstream's.
// -redis takes one address, or several (a Cluster's nodes, or with
// -redis-master a Sentinel master's Sentinels); REDIS_PASSWORD is read
// from the environment only. -failure says what a descriptor gets while
// the store fails: closed (OVER_LIMIT, the default) or open (OK). On
// Redis, unless GOGC is set, the garbage collector's target is 400, not
// Go's 100 (see gc.go): the heap holds no key's state there, and the
// collector would otherwise run often under load.
//
// It logs to standard output as slog's text lines: what it serves, each
// configuration load or rejected file, the stop; and, as warnings, the
// Redis client's own messages (a node it cannot dial).
package main
