package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/overload"
)

// service is a dependency of fixed concurrency: a request waits for one
// of its workers, in arrival order, then holds it for its work. A request
// whose client gave up leaves the queue.
type service struct {
	workers chan struct{}
	work    time.Duration
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case s.workers <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	time.Sleep(s.work)
	<-s.workers
	w.WriteHeader(http.StatusOK)
}

// phase is a way to serve the service: with no protection, or behind a
// guard. guard returns the handler in front of the service and, if any,
// the guard to report on.
type phase struct {
	name  string
	guard func(http.Handler) (http.Handler, *overload.Adaptive, error)
}

var phases = []phase{
	{"no protection", func(h http.Handler) (http.Handler, *overload.Adaptive, error) { return h, nil, nil }},
	{"overload.Adaptive", func(h http.Handler) (http.Handler, *overload.Adaptive, error) {
		guard, err := overload.NewAdaptive(overload.AdaptiveConfig{})
		if err != nil {
			return nil, nil, err
		}
		// The tenant is the client: one flooding the service would be
		// shed before the others once it takes more than its share.
		l, err := httpmw.New(guard, keyfunc.Header("X-Client"))
		if err != nil {
			return nil, nil, err
		}
		return withPriority(l.Handler(h)), guard, nil
	}},
}

// withPriority puts the request's priority, from its X-Priority header,
// in its context, where the guard reads it; a request without one is
// Normal.
func withPriority(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := overload.Normal
		switch r.Header.Get("X-Priority") {
		case "critical":
			p = overload.Critical
		case "sheddable":
			p = overload.Sheddable
		}
		next.ServeHTTP(w, r.WithContext(overload.NewContext(r.Context(), p)))
	})
}

// limitEvery is how often a phase samples its guard's limit.
const limitEvery = 250 * time.Millisecond

// runPhase serves a fresh service on 127.0.0.1 as p says, drives it for
// cfg.run, and returns the phase's row once every request has ended.
func runPhase(ctx context.Context, cfg config, p phase) (row, error) {
	svc := &service{workers: make(chan struct{}, cfg.workers), work: cfg.work}
	h, guard, err := p.guard(svc)
	if err != nil {
		return row{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return row{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var limits []int
	done := make(chan struct{})
	if guard != nil {
		go func() {
			defer close(done)
			tick := time.NewTicker(limitEvery)
			defer tick.Stop()
			for range int(cfg.run / limitEvery) {
				<-tick.C
				limits = append(limits, guard.Stats().Limit)
			}
		}()
	} else {
		close(done)
	}
	rs := drive(ctx, "http://"+ln.Addr().String()+"/", cfg)
	<-done
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return row{}, fmt.Errorf("shutting the server down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return row{}, err
	}
	r := tally(p.name, cfg, rs)
	r.limits = limits
	if guard != nil {
		r.baseline = guard.Stats().Baseline
	}
	return r, ctx.Err()
}
