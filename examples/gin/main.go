// Command gin shows floodgate limiting a Gin application: a limit for every
// route, and a stricter one of its own on POST /login.
//
//	go run ./examples/gin          # send a few requests, print the answers, exit
//	go run ./examples/gin -serve   # then keep serving, for curl -i, until Ctrl-C or SIGTERM
//
// It serves on a loopback port and, as a client, calls GET /hello once and
// POST /login four times: the fourth login within a minute is refused with
// 429 and headers that say when to try again. With -serve it then serves a
// fresh router on -addr, whose limits the demo did not spend, so that a
// first curl is admitted. Stopped, it shuts down gracefully: requests in
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
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/examples/internal/graceful"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// router limits every route to 10 requests a second per client IP, and
// POST /login to 3 a minute per client IP on top of that.
func router() *gin.Engine {
	// The socket peer is the client. Behind a proxy, say which:
	// keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8")).
	byIP := keyfunc.MustClientIP()

	r := gin.New()
	// The global limiter gives back what it charged a login that the
	// login limiter refuses, so refused logins spend no global quota.
	r.Use(gin.Recovery(), ginmw.New(httpmw.MustNew(core.MustNew(core.PerSecond(10).WithName("api")), byIP,
		httpmw.WithRefundOnInnerRefusal())))
	r.GET("/hello", func(c *gin.Context) { c.String(http.StatusOK, "hello\n") })
	r.POST("/login", ginmw.New(httpmw.MustNew(core.MustNew(core.PerMinute(3).WithName("login")), byIP)),
		func(c *gin.Context) { c.String(http.StatusOK, "welcome\n") })
	return r
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	serve := flag.Bool("serve", false, "keep serving after the demo, until Ctrl-C or SIGTERM")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *addr, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "examples/gin:", err)
		os.Exit(1)
	}
}

// gracePeriod bounds how long a stopping server waits for requests in
// flight.
const gracePeriod = 5 * time.Second

// run runs the demo against a server of its own and, with keepServing,
// then serves a fresh router on addr until ctx ends, so that the demo's
// requests spend none of the quota the curl it suggests needs: its fourth
// login is refused for 20 s.
func run(ctx context.Context, out io.Writer, addr string, keepServing bool) error {
	gin.SetMode(gin.ReleaseMode)
	demoAddr := addr
	if keepServing {
		demoAddr = "127.0.0.1:0"
	}
	d, err := start(ctx, demoAddr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Gin behind floodgate at %s\n\n", d.URL)
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

// start serves a new router, and so new limiters, on addr until ctx ends.
func start(ctx context.Context, addr string) (*graceful.Server, error) {
	return graceful.Start(ctx, &http.Server{Handler: router(), ReadHeaderTimeout: 5 * time.Second}, addr, gracePeriod)
}

// demo calls GET /hello once and POST /login four times, and prints what
// came back: the headers of every answer, and in full the refusal's.
func demo(ctx context.Context, out io.Writer, base string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, call := range []string{"GET /hello", "POST /login", "POST /login", "POST /login", "POST /login"} {
		method, path, _ := strings.Cut(call, " ")
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-11s -> %-21s RateLimit: %s\n", call, resp.Status, resp.Header.Get("RateLimit"))
		if resp.StatusCode == http.StatusTooManyRequests {
			for _, k := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
				fmt.Fprintf(out, "    %s: %s\n", k, resp.Header.Get(k))
			}
			fmt.Fprintf(out, "    body: %q\n", body)
		}
	}
	return nil
}
