// Command floodgate-ratelimit serves Envoy's rate-limit service
// (envoy.service.ratelimit.v3.RateLimitService) on floodgate's engine. See
// doc.go for its flags and what it serves.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// go-redis's own messages (a dial that failed, a pool's trouble) go to
	// the service's log, not to the standard logger on stderr. Set here,
	// once: the client's logger is global, and tests call run many times.
	redis.SetLogger(redisLog{loggerOf(os.LookupEnv, os.Stdout)})
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "floodgate-ratelimit:", err)
		var exit exitCode
		if errors.As(err, &exit) {
			os.Exit(int(exit))
		}
		os.Exit(1)
	}
}

// redisLog writes go-redis's messages to log as warnings.
type redisLog struct{ log *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

// exitCode is an error that asks for a particular exit status: 2 for a
// bad command line.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// settings are the command line's, with the environment's defaults:
// a flag wins over floodgate's own variables (FLOODGATE_RLS_*, REDIS_ADDR,
// REDIS_MASTER, REDIS_PASSWORD), which win over upstream's
// (envoyproxy/ratelimit's, see settings.go).
type settings struct {
	config      string // directory; "" for the sample configuration
	grpcAddr    string // "unix:PATH" for a Unix socket
	httpAddr    string // "": none
	debugAddr   string // "": none (DEBUG_HOST, DEBUG_PORT)
	redisAddrs  string // -redis or REDIS_ADDR; see redis
	redisMaster string // a Sentinel master name
	redisPass   string
	failure     core.FailureMode
	failCall    bool // -failure call: the call fails, as upstream's does
	headers     core.HeaderStyle
	headersSet  bool // by -headers or FLOODGATE_RLS_HEADERS, over LIMIT_RESPONSE_HEADERS_ENABLED
	shadow      bool
	shadowSet   bool // by -shadow or FLOODGATE_RLS_SHADOW, over SHADOW_MODE
	localQuota  bool // -local-quota or FLOODGATE_RLS_LOCAL_QUOTA: every rule's
	merge       bool
	check       bool
	grace       time.Duration

	// The store: nil redis is the in-memory one. perSecond, when set,
	// holds the limits whose unit is a second (REDIS_PERSECOND).
	redis, perSecond  *redisTarget
	store             storeOptions
	redisHealthActive bool    // REDIS_HEALTH_CHECK_ACTIVE_CONNECTION
	startup           backoff // how Redis is tried at start

	// Metrics: none when metrics is false (DISABLE_STATS); besides
	// /metrics on the HTTP port, the registry at promAddr's promPath
	// (USE_PROMETHEUS) when promAddr is set.
	metrics            bool
	promAddr, promPath string
	// statsd is where upstream's counters also go over TCP (USE_STATSD);
	// its addr is "" for nowhere.
	statsd struct {
		addr     string
		interval time.Duration
	}

	logLevel slog.Level
	logJSON  bool

	grpcTLS             *serverTLS // nil: plain gRPC
	maxAge, maxAgeGrace time.Duration

	// healthyWithConfig is HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED; unset,
	// the service is healthy once a configuration of at least one domain
	// is loaded, as when true; false, once the first load is done, domains
	// or not.
	healthyWithConfig opt[bool]
	// forceStart (FORCE_START_WITHOUT_INITIAL_CONFIG) starts the service
	// when the configuration directory cannot be watched yet: it is tried
	// again until it can.
	forceStart bool

	// Upstream's settings of the answers, the RUNTIME_* layout, the xDS
	// configuration source and tracing.
	behaviour behaviour
	runtime   runtimeDir
	xds       xdsSettings
	xdsOn     bool // CONFIG_TYPE=GRPC_XDS_SOTW
	tracing   tracingSettings

	fromEnv map[string]bool // floodgate's own variables that are set
	notes   []string        // logged at start: settings overridden
}

// parse reads args into settings; env looks up the environment. Every
// refused setting is written to out, and the error is exitCode(2).
func parse(args []string, out io.Writer, look lookupEnv) (*settings, error) {
	s := &settings{fromEnv: map[string]bool{}}
	get := func(name string) string {
		v, _ := look(name)
		s.fromEnv[name] = v != ""
		return v
	}
	fs := flag.NewFlagSet("floodgate-ratelimit", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&s.config, "config", get("FLOODGATE_RLS_CONFIG"), "`directory` of configuration files in envoyproxy/ratelimit's YAML format (default: a sample configuration); $FLOODGATE_RLS_CONFIG, or upstream's $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/$RUNTIME_APPDIRECTORY")
	fs.StringVar(&s.grpcAddr, "grpc", or(get("FLOODGATE_RLS_GRPC"), ":8081"), "`address` the gRPC service listens on, unix:PATH for a Unix socket; $FLOODGATE_RLS_GRPC, or upstream's $GRPC_UDS, $GRPC_HOST:$GRPC_PORT")
	fs.StringVar(&s.httpAddr, "http", or(get("FLOODGATE_RLS_HTTP"), ":8080"), "`address` of /json, /healthcheck and /metrics; empty: none; $FLOODGATE_RLS_HTTP, or upstream's $HOST:$PORT")
	fs.StringVar(&s.redisAddrs, "redis", get("REDIS_ADDR"), "Redis `host:port`, comma-separated for a Cluster's or Sentinels' addresses; empty: the in-memory store; $REDIS_ADDR, or upstream's $REDIS_URL with $REDIS_TYPE")
	fs.StringVar(&s.redisMaster, "redis-master", get("REDIS_MASTER"), "the Sentinel master `name` (with -redis naming the Sentinels); $REDIS_MASTER")
	s.redisPass = get("REDIS_PASSWORD")
	failure := fs.String("failure", or(get("FLOODGATE_RLS_FAILURE"), "closed"), "when the store fails: `closed` (OVER_LIMIT), open (OK) or call (the call fails with UNAVAILABLE, as envoyproxy/ratelimit's does, and Envoy's failure_mode_deny decides); $FLOODGATE_RLS_FAILURE")
	headers := fs.String("headers", or(get("FLOODGATE_RLS_HEADERS"), "both"), "rate-limit response headers: `both`, ietf, legacy or none; $FLOODGATE_RLS_HEADERS")
	fs.BoolVar(&s.shadow, "shadow", get("FLOODGATE_RLS_SHADOW") == "true", "global shadow mode: decide and count, answer OK; $FLOODGATE_RLS_SHADOW=true, or upstream's $SHADOW_MODE")
	fs.BoolVar(&s.localQuota, "local-quota", get("FLOODGATE_RLS_LOCAL_QUOTA") == "true", "decide hot descriptors in memory from leases of Redis's counts, every rule's (a rule's own: local_quota: true in its rate_limit); $FLOODGATE_RLS_LOCAL_QUOTA=true")
	windows := fs.String("client-clock-windows", get("FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS"), "`true` or false: charge fixed windows on Redis as envoyproxy/ratelimit does, INCRBY and PEXPIRE of a key named by the window's index on this process's clock, no script (default true, but false with -local-quota, whose leases are the script's); $FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS")
	fs.BoolVar(&s.merge, "merge-domains", false, "merge a domain configured by several files (their top-level descriptors must differ); upstream's $MERGE_DOMAIN_CONFIG=true")
	fs.BoolVar(&s.check, "check", false, "check the -config directory and exit: status 0 if every file loads, 1 with each error if not")
	fs.DurationVar(&s.grace, "grace", 10*time.Second, "how long a SIGTERM waits for calls in flight")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of floodgate-ratelimit:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nenvoyproxy/ratelimit's environment variables are honoured or refused by name; docs/envoy.md lists them.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, exitCode(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(out, "floodgate-ratelimit: unexpected argument %q\n", fs.Arg(0))
		return nil, exitCode(2)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	s.shadowSet = set["shadow"] || s.fromEnv["FLOODGATE_RLS_SHADOW"]
	e := newEnv(look)
	s.upstream(e, set)
	bad := sortedErrs(e.errs)
	switch strings.ToLower(*failure) {
	case "closed":
		s.failure = core.FailClosed
	case "open":
		s.failure = core.FailOpen
	case "call":
		s.failCall = true
	default:
		bad = append(bad, fmt.Sprintf("-failure %q: use closed, open or call", *failure))
	}
	h, ok := headerStyles[strings.ToLower(*headers)]
	if !ok {
		bad = append(bad, fmt.Sprintf("-headers %q: use both, ietf, legacy or none", *headers))
	}
	s.headers = h
	s.headersSet = set["headers"] || s.fromEnv["FLOODGATE_RLS_HEADERS"]
	switch strings.ToLower(*windows) {
	case "":
		s.store.windows = !s.localQuota
	case "true":
		s.store.windows = true
		if s.localQuota {
			bad = append(bad, "-client-clock-windows true and -local-quota cannot be combined: the leases are taken from the script's counts, which the client-clock windows do not keep; drop one of them")
		}
	case "false":
	default:
		bad = append(bad, fmt.Sprintf("-client-clock-windows %q: use true or false", *windows))
	}
	if s.check && s.config == "" {
		bad = append(bad, "-check needs -config DIR")
	}
	if s.grace <= 0 {
		bad = append(bad, "-grace must be positive")
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintln(out, "floodgate-ratelimit:", b)
		}
		return nil, exitCode(2)
	}
	return s, nil
}

var headerStyles = map[string]core.HeaderStyle{
	"both": core.HeadersBoth, "ietf": core.HeadersIETF, "legacy": core.HeadersLegacy, "none": core.HeadersNone,
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
