package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlstrace"
	"github.com/floodgate/floodgate/promobs"
)

// addresses are where the servers listen, once they do: "" for one
// that does not run; the gRPC server's is "unix:PATH" on a Unix socket.
type addresses struct{ grpc, http, debug, prometheus string }

// listening is told the addresses the servers listen on, once they do
// (tests pass one; main passes nil).
type listening func(addresses)

// The HTTP servers' timeouts. The service's requests (/json, a health
// check, a scrape) are small and answered at once; the limits only close
// connections that hold a server's resources: a client that sends its
// request slowly or never reads the answer, or sits idle.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 10 * time.Second
	httpIdleTimeout       = 2 * time.Minute
	// debugWriteTimeout leaves room for a CPU profile or a trace, which
	// run for the seconds the request asks (30 by default).
	debugWriteTimeout = 5 * time.Minute
)

// newHTTPServer is an HTTP server of h with the timeouts above; write is
// its write timeout.
func newHTTPServer(h http.Handler, write time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout, WriteTimeout: write, IdleTimeout: httpIdleTimeout}
}

// run runs the command until ctx ends (SIGTERM), then stops gracefully:
// the health service says NOT_SERVING at once, calls in flight get up to
// the -grace period, and the servers close. look is the environment.
func run(ctx context.Context, args []string, look lookupEnv, out io.Writer, ready listening) error {
	s, err := parse(args, out, look)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage is written: what was asked for
	}
	if err != nil {
		return err
	}
	log := newLogger(out, s.logLevel, s.logJSON)
	if s.check {
		return check(s, out)
	}
	for _, n := range s.notes {
		log.Info("setting overridden", "detail", n)
	}
	store, multi, backends, closeStore, err := newStore(s)
	if err != nil {
		return err
	}
	defer closeStore()
	tuneGC(s, look, log)
	reg := prometheus.NewRegistry()
	var obs core.Observer
	if s.metrics {
		if obs, err = promobs.New(reg); err != nil {
			return err
		}
	}
	bg, cancel := context.WithCancel(ctx) // the background work's: ends with run
	defer cancel()
	stats, err := newStats(bg, s, reg, log)
	if err != nil {
		return err
	}
	cfg := rls.Config{Store: store, Multi: multi, Failure: s.failure, FailCall: s.failCall, Observer: obs, Headers: s.headers, Shadow: s.shadow, Log: log,
		LocalCacheBytes: s.store.localCache, LocalQuota: s.localQuota}
	s.behaviour.apply(&cfg, s.headersSet)
	if stats != nil {
		cfg.Stats = stats
		cfg.Observer = core.JoinObservers(obs, storeErrors(stats))
	}
	svc, err := rls.New(cfg)
	if err != nil {
		return err
	}
	// front is the service as callers reach it: counted, then traced.
	var front rlsv3.RateLimitServiceServer = svc
	if stats != nil {
		if err := droppedOverrides(reg, svc); err != nil {
			return err
		}
		front = counted{srv: front, sink: stats}
	}
	jsonHandler := rls.JSON(front)
	if s.tracing.Enabled {
		t := s.tracing
		tr, err := rlstrace.New(bg, rlstrace.Config{Protocol: t.Protocol, ServiceName: t.ServiceName, ServiceNamespace: t.Namespace, ServiceInstanceID: t.InstanceID, SamplingRate: t.SamplingRate})
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tr.Shutdown(sctx)
		}()
		front = tr.Service(front)
		jsonHandler = tr.HTTP(rls.JSON(front))
	}
	var components []string
	if !s.healthyWithConfig.set || s.healthyWithConfig.v {
		components = append(components, configComponent)
	}
	backendComponents := []string{redisComponent, perSecondComponent}
	components = append(components, backendComponents[:len(backends)]...)
	h := newHealth(components...)

	fatal := make(chan error, len(backends))
	for i, b := range backends {
		go watchRedis(bg, s, b, backendComponents[i], h, log, fatal)
	}
	src := &source{s: s, svc: svc, log: log, stats: stats, loaded: func(domains bool) { h.set(configComponent, domains) }}
	if err := src.start(bg); err != nil {
		if !s.forceStart {
			return err
		}
		log.Error("no configuration yet; starting without one (FORCE_START_WITHOUT_INITIAL_CONFIG), and trying again", "error", err)
		go retryConfigure(bg, src)
	}

	gopts := []grpc.ServerOption{grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: s.maxAge, MaxConnectionAgeGrace: s.maxAgeGrace})}
	if s.grpcTLS != nil {
		stop, err := s.grpcTLS.watch(log)
		if err != nil {
			return err
		}
		defer stop()
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(s.grpcTLS.config())))
	}
	gs := grpc.NewServer(gopts...)
	rlsv3.RegisterRateLimitServiceServer(gs, front)
	healthpb.RegisterHealthServer(gs, h.hs)
	reflection.Register(gs)
	gl, grpcAddr, err := listen(s.grpcAddr)
	if err != nil {
		return err
	}
	served := make(chan error, 4)
	go func() { served <- gs.Serve(gl) }()

	var https []*http.Server
	serve := func(addr, what string, hd http.Handler, write time.Duration) (string, error) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		srv := newHTTPServer(hd, write)
		https = append(https, srv)
		go func() { served <- srv.Serve(l) }()
		return l.Addr().String(), nil
	}
	var a addresses
	a.grpc = grpcAddr
	err = func() error {
		if s.httpAddr != "" {
			mux := http.NewServeMux()
			mux.Handle("/json", jsonHandler)
			mux.Handle("/healthcheck", h)
			if s.metrics {
				mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			}
			if a.http, err = serve(s.httpAddr, "the HTTP listener (-http, HOST/PORT)", mux, httpWriteTimeout); err != nil {
				return err
			}
		}
		if s.debugAddr != "" {
			if a.debug, err = serve(s.debugAddr, "the debug listener (DEBUG_HOST/DEBUG_PORT)", debugMux(&src.current), debugWriteTimeout); err != nil {
				return err
			}
		}
		if s.metrics && s.promAddr != "" {
			mux := http.NewServeMux()
			mux.Handle(s.promPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			if a.prometheus, err = serve(s.promAddr, "the Prometheus listener (PROMETHEUS_ADDR)", mux, httpWriteTimeout); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		gs.Stop()
		for _, srv := range https {
			_ = srv.Close()
		}
		return err
	}
	log.Info("serving", "grpc", a.grpc, "http", a.http, "debug", a.debug, "prometheus", a.prometheus, "store", storeName(s), "config", configName(s))
	if ready != nil {
		ready(a)
	}

	select {
	case <-ctx.Done():
	case err := <-fatal:
		h.shutdown()
		gs.Stop()
		for _, srv := range https {
			_ = srv.Close()
		}
		return err
	case err := <-served:
		gs.Stop()
		for _, srv := range https {
			_ = srv.Close()
		}
		return err
	}
	log.Info("stopping", "grace", s.grace)
	h.shutdown() // every service NOT_SERVING: Envoy's health checks move away
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(s.grace)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		gs.Stop()
	}
	sctx, cancelStop := context.WithTimeout(context.Background(), s.grace)
	defer cancelStop()
	var errs []error
	for _, srv := range https {
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listen listens on addr, "unix:PATH" for a Unix socket, and returns the
// address as a gRPC client dials it. A socket file left by a process
// that is gone (no one answers on it) is removed first, so that a
// restart after a crash can listen again.
func listen(addr string) (net.Listener, string, error) {
	path, unix := strings.CutPrefix(addr, "unix:")
	if !unix {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("the gRPC listener (-grpc, GRPC_HOST/GRPC_PORT): %w", err)
		}
		return l, l.Addr().String(), nil
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
		} else {
			_ = os.Remove(path)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", fmt.Errorf("the gRPC listener (GRPC_UDS): %w", err)
	}
	return l, "unix:" + path, nil
}

// retryConfigure starts src until it starts or ctx ends, after 1 s, then
// twice as long each time up to 30 s.
func retryConfigure(ctx context.Context, src *source) {
	for wait := time.Second; sleep(ctx, wait); wait = min(2*wait, 30*time.Second) {
		err := src.start(ctx)
		if err == nil {
			return
		}
		src.log.Error("no configuration yet; trying again", "in", min(2*wait, 30*time.Second), "error", err)
	}
}
