// Command echo shows floodgate limiting an Echo application: a limit for
// every route, and a stricter one of its own on POST /login whose refusals
// Echo's error handler renders.
//
//	go run ./examples/echo          # send a few requests, print the answers, exit
//	go run ./examples/echo -serve   # then keep serving, for curl -i, until Ctrl-C or SIGTERM
//
// It serves on a loopback port and, as a client, calls GET /hello once and
// POST /login four times: the fourth login within a minute is refused with
// 429 and headers that say when to try again. With -serve it then serves a
// fresh application on -addr, whose limits the demo did not spend, so that
// a first curl is admitted. Stopped, it shuts down gracefully: requests in
// flight may finish, for up to five seconds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/examples/internal/graceful"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// newServer limits every route to 10 requests a second per client IP, and
// POST /login to 3 a minute per client IP on top of that.
func newServer() *echo.Echo {
	// The socket peer is the client. Behind a proxy, say which:
	// keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8")).
	byIP := keyfunc.MustClientIP()

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Refusals answered by the middleware: the bytes net/http's httpmw writes.
	// It gives back what it charged a login that the login limiter refuses,
	// so refused logins spend no global quota.
	e.Use(echomw.New(httpmw.MustNew(core.MustNew(core.PerSecond(10).WithName("api")), byIP,
		httpmw.WithRefundOnInnerRefusal())))
	e.GET("/hello", func(c echo.Context) error { return c.String(http.StatusOK, "hello\n") })
	// Refusals returned to Echo as *echo.HTTPError, rendered by its error
	// handler like the application's other errors (here Echo's default, JSON).
	e.POST("/login", func(c echo.Context) error { return c.String(http.StatusOK, "welcome\n") },
		echomw.New(httpmw.MustNew(core.MustNew(core.PerMinute(3).WithName("login")), byIP), echomw.WithHTTPErrors()))
	return e
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	serve := flag.Bool("serve", false, "keep serving after the demo, until Ctrl-C or SIGTERM")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *addr, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "examples/echo:", err)
		os.Exit(1)
	}
}

// gracePeriod bounds how long a stopping server waits for requests in
// flight.
const gracePeriod = 5 * time.Second

// run runs the demo against a server of its own and, with keepServing,
// then serves a fresh application on addr until ctx ends, so that the
// demo's requests spend none of the quota the curl it suggests needs: its
// fourth login is refused for 20 s.
func run(ctx context.Context, out io.Writer, addr string, keepServing bool) error {
	demoAddr := addr
	if keepServing {
		demoAddr = "127.0.0.1:0"
	}
	d, err := start(ctx, demoAddr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Echo behind floodgate at %s\n\n", d.URL)
	if err := errors.Join(demo(ctx, out, d.URL), d.Stop()); err != nil || !keepServing {
		return err
	}
	s, err := start(ctx, addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nserving at %s with fresh limits until Ctrl-C or SIGTERM; try: curl -i -X POST %s/login\n", s.URL, s.URL)
	if err := s.Wait(); err != nil {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// start serves a new application, and so new limiters, on addr until ctx
// ends. An *echo.Echo is an http.Handler, so a plain http.Server serves it.
func start(ctx context.Context, addr string) (*graceful.Server, error) {
	return graceful.Start(ctx, &http.Server{Handler: newServer(), ReadHeaderTimeout: 5 * time.Second}, addr, gracePeriod)
}

// demo calls GET /hello once and POST /login four times, prints what came
// back, and then the refusal's headers.
func demo(ctx context.Context, out io.Writer, base string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(method, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		fmt.Fprintf(out, "%s %s: %s, RateLimit %s, body %q\n", method, path, resp.Status, resp.Header.Get("RateLimit"), body)
		return resp, err
	}
	if _, err := send(http.MethodGet, "/hello"); err != nil {
		return err
	}
	var last *http.Response
	for range 4 {
		var err error
		if last, err = send(http.MethodPost, "/login"); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "\nThe refusal's headers:")
	for _, k := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
		fmt.Fprintf(out, "  %s: %s\n", k, last.Header.Get(k))
	}
	return nil
}
