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
	redis.SetLogger(redisLog{slog.New(slog.NewTextHandler(os.Stdout, nil))})
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
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

// settings are the command line's, with the environment's defaults.
type settings struct {
	config      string // directory; "" for the sample configuration
	grpcAddr    string
	httpAddr    string
	redisAddrs  string // comma-separated; "" for the in-memory store
	redisMaster string // a Sentinel master name
	redisPass   string
	failure     core.FailureMode
	headers     core.HeaderStyle
	shadow      bool
	merge       bool
	check       bool
	grace       time.Duration
}

// parse reads args into settings; env looks up the environment.
func parse(args []string, out io.Writer, env func(string) string) (*settings, error) {
	s := &settings{}
	fs := flag.NewFlagSet("floodgate-ratelimit", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&s.config, "config", env("FLOODGATE_RLS_CONFIG"), "`directory` of configuration files in envoyproxy/ratelimit's YAML format (default: a sample configuration); $FLOODGATE_RLS_CONFIG")
	fs.StringVar(&s.grpcAddr, "grpc", or(env("FLOODGATE_RLS_GRPC"), ":8081"), "`address` the gRPC service listens on; $FLOODGATE_RLS_GRPC")
	fs.StringVar(&s.httpAddr, "http", or(env("FLOODGATE_RLS_HTTP"), ":8080"), "`address` of /json, /healthcheck and /metrics; empty: none; $FLOODGATE_RLS_HTTP")
	fs.StringVar(&s.redisAddrs, "redis", env("REDIS_ADDR"), "Redis `host:port`, comma-separated for a Cluster's or Sentinels' addresses; empty: the in-memory store; $REDIS_ADDR")
	fs.StringVar(&s.redisMaster, "redis-master", env("REDIS_MASTER"), "the Sentinel master `name` (with -redis naming the Sentinels); $REDIS_MASTER")
	s.redisPass = env("REDIS_PASSWORD")
	failure := fs.String("failure", or(env("FLOODGATE_RLS_FAILURE"), "closed"), "when the store fails: `closed` (OVER_LIMIT) or open (OK); $FLOODGATE_RLS_FAILURE")
	headers := fs.String("headers", or(env("FLOODGATE_RLS_HEADERS"), "both"), "rate-limit response headers: `both`, ietf, legacy or none; $FLOODGATE_RLS_HEADERS")
	fs.BoolVar(&s.shadow, "shadow", env("FLOODGATE_RLS_SHADOW") == "true", "global shadow mode: decide and count, answer OK; $FLOODGATE_RLS_SHADOW=true")
	fs.BoolVar(&s.merge, "merge-domains", env("MERGE_DOMAIN_CONFIG") == "true", "merge a domain configured by several files (their top-level descriptors must differ); $MERGE_DOMAIN_CONFIG=true")
	fs.BoolVar(&s.check, "check", false, "check the -config directory and exit: status 0 if every file loads, 1 with each error if not")
	fs.DurationVar(&s.grace, "grace", 10*time.Second, "how long a SIGTERM waits for calls in flight")
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
	switch strings.ToLower(*failure) {
	case "closed":
		s.failure = core.FailClosed
	case "open":
		s.failure = core.FailOpen
	default:
		fmt.Fprintf(out, "floodgate-ratelimit: -failure %q: use closed or open\n", *failure)
		return nil, exitCode(2)
	}
	h, ok := headerStyles[strings.ToLower(*headers)]
	if !ok {
		fmt.Fprintf(out, "floodgate-ratelimit: -headers %q: use both, ietf, legacy or none\n", *headers)
		return nil, exitCode(2)
	}
	s.headers = h
	if s.check && s.config == "" {
		fmt.Fprintln(out, "floodgate-ratelimit: -check needs -config DIR")
		return nil, exitCode(2)
	}
	if s.grace <= 0 {
		fmt.Fprintln(out, "floodgate-ratelimit: -grace must be positive")
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
