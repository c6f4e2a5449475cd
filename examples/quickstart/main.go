// Command quickstart shows floodgate limiting a real net/http server.
//
//	go run ./examples/quickstart           # run the demo and exit
//	go run ./examples/quickstart -serve    # then keep serving, for curl -i, until Ctrl-C or SIGTERM
//
// It starts a server on a loopback port with the in-memory limiter (core.New)
// and the httpmw middleware, keyed by client IP, under a policy of 5 requests
// a second with a burst of 5 named "demo". It sends a burst of 8 requests,
// prints what each got back, waits as long as Retry-After said and shows the
// next request succeeding. Stopped, it shuts down gracefully: requests in
// flight may finish, for up to five seconds.
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
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/examples/internal/graceful"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

func main() {
	serve := flag.Bool("serve", false, "keep serving after the demo, until Ctrl-C or SIGTERM")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, config{addr: *addr, serve: *serve}); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// config holds what tests replace: a fake clock and a sleep that moves it,
// so that the output does not depend on how fast the machine is.
type config struct {
	addr  string
	serve bool
	clock core.Clock                // nil: the system clock
	sleep func(time.Duration) error // nil: a real, interruptible sleep
}

// gracePeriod bounds how long a stopping server waits for requests in
// flight.
const gracePeriod = 5 * time.Second

// policy is the demo's limit: 5 a second, at most 5 at once.
var policy = core.PerSecond(5).WithName("demo")

func run(ctx context.Context, out io.Writer, cfg config) error {
	opts := []core.Option{}
	if cfg.clock != nil {
		opts = append(opts, core.WithClock(cfg.clock))
	}
	lim, err := core.New(policy, opts...)
	if err != nil {
		return err
	}
	byIP, err := keyfunc.ClientIP()
	if err != nil {
		return err
	}
	mw, err := httpmw.New(lim, byIP)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from behind floodgate")
	})

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mw.Handler(mux), ReadHeaderTimeout: 5 * time.Second}
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- graceful.Serve(serveCtx, srv, ln, gracePeriod) }()
	url := "http://" + ln.Addr().String() + "/"

	fmt.Fprintf(out, "floodgate quickstart: policy %q allows %d requests per %v (burst %d) per client IP\nserver at %s\n\n",
		policy.Name, policy.Events, policy.Period, policy.EffectiveBurst(), url)
	if err := demo(ctx, out, url, cfg); err != nil || !cfg.serve {
		stopServing()
		return errors.Join(err, <-served)
	}
	fmt.Fprintf(out, "\nserving at %s until Ctrl-C or SIGTERM; try:\n  curl -i %s\n", url, url)
	if err := <-served; err != nil {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// demo sends the burst, waits for Retry-After once, and sends one more.
func demo(ctx context.Context, out io.Writer, url string, cfg config) error {
	client := &http.Client{Timeout: 5 * time.Second}
	const burst = 8
	// Fixed widths rather than a tabwriter, so that the rows before and
	// after the wait line up.
	const format = "%3s  %-22s  %-21s  %-11s  %s\n"
	fmt.Fprintf(out, format, "#", "status", "X-RateLimit-Remaining", "Retry-After", "RateLimit")
	row := func(n int, resp *http.Response) {
		retry := resp.Header.Get("Retry-After")
		if retry == "" {
			retry = "-"
		}
		fmt.Fprintf(out, format, strconv.Itoa(n), resp.Status, resp.Header.Get("X-RateLimit-Remaining"), retry, resp.Header.Get("RateLimit"))
	}
	var wait time.Duration
	for n := 1; n <= burst; n++ {
		resp, err := get(ctx, client, url)
		if err != nil {
			return err
		}
		row(n, resp)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && wait == 0 {
			wait = time.Duration(s) * time.Second
		}
	}
	if wait == 0 {
		return nil
	}
	fmt.Fprintf(out, "     ... waiting %v, as Retry-After said ...\n", wait)
	sleep := cfg.sleep
	if sleep == nil {
		sleep = func(d time.Duration) error {
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return errors.New("interrupted")
			}
		}
	}
	if err := sleep(wait); err != nil {
		return err
	}
	resp, err := get(ctx, client, url)
	if err != nil {
		return err
	}
	row(burst+1, resp)
	return nil
}

// get fetches url and reads the body, so that the connection is reused.
func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}
