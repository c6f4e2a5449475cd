package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/promobs"
	"github.com/floodgate/floodgate/redisstore"
)

// listening is told the addresses the servers listen on, once they do
// (tests pass one; main passes nil).
type listening func(grpcAddr, httpAddr string)

// run runs the command until ctx ends (SIGTERM), then stops gracefully:
// the health service says NOT_SERVING at once, calls in flight get up to
// the -grace period, and the servers close.
func run(ctx context.Context, args []string, out io.Writer, ready listening) error {
	s, err := parse(args, out, os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(out, nil))
	if s.check {
		return check(s, out)
	}
	store, multi, closeStore, err := newStore(s)
	if err != nil {
		return err
	}
	defer closeStore()
	tuneGC(s, os.Getenv, log)
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	if err != nil {
		return err
	}
	svc, err := rls.New(rls.Config{Store: store, Multi: multi, Failure: s.failure, Observer: obs, Headers: s.headers, Shadow: s.shadow})
	if err != nil {
		return err
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus(rlsv3.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	loaded := func() {
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		hs.SetServingStatus(rlsv3.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	}
	if err := configure(ctx, s.config, s.merge, svc, log, loaded); err != nil {
		return err
	}

	gs := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(gs, svc)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	gl, err := net.Listen("tcp", s.grpcAddr)
	if err != nil {
		return err
	}
	served := make(chan error, 2)
	go func() { served <- gs.Serve(gl) }()

	var hsrv *http.Server
	httpAddr := ""
	if s.httpAddr != "" {
		hl, err := net.Listen("tcp", s.httpAddr)
		if err != nil {
			gs.Stop()
			return err
		}
		httpAddr = hl.Addr().String()
		mux := http.NewServeMux()
		mux.HandleFunc("/json", svc.JSON)
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, r *http.Request) {
			resp, err := hs.Check(r.Context(), &healthpb.HealthCheckRequest{})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				http.Error(w, "NOT_SERVING", http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, "OK\n")
		})
		hsrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { served <- hsrv.Serve(hl) }()
	}
	log.Info("serving", "grpc", gl.Addr().String(), "http", httpAddr, "store", storeName(s), "config", or(s.config, "(sample)"))
	if ready != nil {
		ready(gl.Addr().String(), httpAddr)
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		gs.Stop()
		return err
	}
	log.Info("stopping", "grace", s.grace)
	hs.Shutdown() // every service NOT_SERVING: Envoy's health checks move away
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
	if hsrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), s.grace)
		defer cancel()
		if err := hsrv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

// newStore returns the store the settings ask for, the Multi that decides
// a request's descriptors in one round trip on it (nil in memory), and
// what closes them.
func newStore(s *settings) (rls.Store, rls.Multi, func(), error) {
	if s.redisAddrs == "" {
		return rls.Memory(), nil, func() {}, nil
	}
	c := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 strings.Split(s.redisAddrs, ","),
		MasterName:            s.redisMaster,
		Password:              s.redisPass,
		ContextTimeoutEnabled: true,
	})
	store := func(limits []core.Limit) (core.Limiter, error) {
		if len(limits) == 1 {
			return redisstore.New(c, limits[0])
		}
		return redisstore.NewStack(c, limits)
	}
	m, err := redisstore.NewMulti(c) // the limiters' options: the same keys
	if err != nil {
		_ = c.Close()
		return nil, nil, nil, err
	}
	return store, redisMulti{m}, func() { _ = c.Close() }, nil
}

// redisMulti is a redisstore.Multi as the service takes it.
type redisMulti struct{ m *redisstore.Multi }

func (r redisMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	var buf [8]redisstore.Item
	ds, err := r.m.Allow(ctx, items(buf[:0], cs))
	if errors.Is(err, redisstore.ErrPartial) {
		err = fmt.Errorf("%w (%w)", err, rls.ErrPartial)
	}
	return ds, err
}

func (r redisMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	var buf [8]redisstore.Item
	return r.m.Refund(ctx, items(buf[:0], cs))
}

// items appends the charges to buf as a Multi's items.
func items(buf []redisstore.Item, cs []rls.Charge) []redisstore.Item {
	for _, c := range cs {
		buf = append(buf, redisstore.Item{Key: c.Key, Limits: c.Limits, Cost: c.Cost})
	}
	return buf
}

func storeName(s *settings) string {
	switch {
	case s.redisAddrs == "":
		return "memory"
	case s.redisMaster != "":
		return fmt.Sprintf("redis sentinel %s at %s", s.redisMaster, s.redisAddrs)
	default:
		return "redis " + s.redisAddrs
	}
}
