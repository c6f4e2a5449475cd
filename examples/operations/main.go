// Command operations runs a rate-limited API the way one deploys it with
// floodgate's operational pieces: Prometheus metrics (promobs), the same
// metrics through OpenTelemetry (otelobs), log lines (slogobs) and the
// live debug page (debugpage), all fed by the one observer the middleware
// reports to.
//
//	go run ./examples/operations          # serve, send some traffic, print what the metrics say, exit
//	go run ./examples/operations -serve   # then keep serving, until Ctrl-C or SIGTERM
//
// It listens on two loopback ports, as a deployment would on two
// interfaces: the API (GET /api/hello, 10 requests a minute per client
// IP) and an admin port for operators, with /metrics for Prometheus,
// /otel-metrics showing what the OpenTelemetry instruments hold, and the
// debug page at /debug/floodgate/. The debug page tells outsiders who
// your clients are, so it sits behind a token: FLOODGATE_DEBUG_TOKEN (16
// characters at least), or else one drawn at random and printed at start.
// Send it as a bearer token, or, from a browser, as the password of the
// login prompt (any user name):
//
//	curl -H "Authorization: Bearer $FLOODGATE_DEBUG_TOKEN" 'http://127.0.0.1:PORT/debug/floodgate/?format=json'
//
// Refusals are logged to stderr, sampled (10 lines a second at most).
// Stopped, it shuts down gracefully: requests in flight may finish, for up
// to five seconds, and it says "stopped".
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/examples/internal/graceful"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/promobs"
	"github.com/floodgate/floodgate/slogobs"
)

func main() {
	serve := flag.Bool("serve", false, "keep serving after the demo, until Ctrl-C or SIGTERM")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{
		api: "127.0.0.1:0", admin: "127.0.0.1:0",
		token: os.Getenv(tokenVar), serve: *serve,
		out: os.Stdout, log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "examples/operations:", err)
		os.Exit(1)
	}
}

// tokenVar names the environment variable the debug page's token is read
// from.
const tokenVar = "FLOODGATE_DEBUG_TOKEN"

// config holds what main reads from its flags and environment, and what
// tests replace.
type config struct {
	api, admin string // addresses to listen on
	token      string // the debug page's token; "" draws one
	serve      bool   // keep serving after the demo
	out        io.Writer
	log        *slog.Logger
	ready      func(api, admin, token string) // called once both servers listen
}

// gracePeriod bounds how long a stopping server waits for requests in
// flight.
const gracePeriod = 5 * time.Second

// run serves the API and the admin port, runs the demo against them and,
// with cfg.serve, serves on until ctx ends.
func run(ctx context.Context, cfg config) error {
	token, drawn, err := debugToken(cfg.token)
	if err != nil {
		return err
	}
	api, admin, err := servers(cfg.log, token)
	if err != nil {
		return err
	}
	apiLn, err := net.Listen("tcp", cfg.api)
	if err != nil {
		return err
	}
	adminLn, err := net.Listen("tcp", cfg.admin)
	if err != nil {
		apiLn.Close()
		return err
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 2)
	go func() { served <- graceful.Serve(serveCtx, api, apiLn, gracePeriod) }()
	go func() { served <- graceful.Serve(serveCtx, admin, adminLn, gracePeriod) }()
	stopped := func(err error) error {
		stopServing()
		err = errors.Join(err, <-served, <-served)
		if err == nil {
			fmt.Fprintln(cfg.out, "stopped")
		}
		return err
	}

	apiURL, adminURL := "http://"+apiLn.Addr().String(), "http://"+adminLn.Addr().String()
	fmt.Fprintf(cfg.out, "API at %s/api/hello (10 requests a minute per client IP)\n", apiURL)
	fmt.Fprintf(cfg.out, "metrics at %s/metrics\n", adminURL)
	fmt.Fprintf(cfg.out, "OpenTelemetry metrics at %s/otel-metrics\n", adminURL)
	fmt.Fprintf(cfg.out, "debug page at %s/debug/floodgate/\n", adminURL)
	if drawn {
		fmt.Fprintf(cfg.out, "debug page token: %s (drawn at random; set %s to choose one)\n", token, tokenVar)
	} else {
		fmt.Fprintf(cfg.out, "debug page token: from %s\n", tokenVar)
	}
	if cfg.ready != nil {
		cfg.ready(apiURL, adminURL, token)
	}
	if err := demo(ctx, cfg.out, apiURL, adminURL, token); err != nil || !cfg.serve {
		return stopped(err)
	}
	fmt.Fprintf(cfg.out, "\nserving until Ctrl-C or SIGTERM; try:\n  curl -H \"Authorization: Bearer $%s\" '%s/debug/floodgate/?format=json'\n", tokenVar, adminURL)
	<-ctx.Done()
	return stopped(nil)
}

// debugToken returns the token the debug page asks for: given, or drawn
// at random (128 bits) when empty, and then drawn is true.
func debugToken(given string) (token string, drawn bool, err error) {
	if given != "" {
		if len(given) < 16 {
			return "", false, fmt.Errorf("%s is %d characters long; give at least 16, or unset it to have one drawn", tokenVar, len(given))
		}
		return given, false, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(b[:]), true, nil
}

// servers builds the API server, limited per client IP, and the admin
// server with the metrics and the debug page; one observer made of the
// four reporters sees every decision.
func servers(log *slog.Logger, token string) (api, admin *http.Server, err error) {
	lim, err := core.New(core.PerMinute(10).WithName("api"))
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	metrics, err := promobs.New(reg)
	if err != nil {
		return nil, nil, err
	}
	otelObs, otelPage, err := otelMetrics()
	if err != nil {
		return nil, nil, err
	}
	logs, err := slogobs.New(log)
	if err != nil {
		return nil, nil, err
	}
	page, err := debugpage.New(debugpage.WithLimiter("api", lim))
	if err != nil {
		return nil, nil, err
	}
	// The socket peer is the client. Behind a proxy, say which:
	// keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8")).
	mw, err := httpmw.New(lim, keyfunc.MustClientIP(),
		httpmw.WithObserver(core.JoinObservers(metrics, otelObs, logs, page)))
	if err != nil {
		return nil, nil, err
	}

	apiMux := http.NewServeMux()
	apiMux.HandleFunc("GET /api/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	adminMux := http.NewServeMux()
	adminMux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	adminMux.Handle("GET /otel-metrics", otelPage)
	adminMux.Handle("/debug/floodgate/", requireToken(token, page))
	return &http.Server{Handler: mw.Handler(apiMux), ReadHeaderTimeout: 5 * time.Second},
		&http.Server{Handler: adminMux, ReadHeaderTimeout: 5 * time.Second}, nil
}
