// Command redis shows one limit held for a fleet: two HTTP servers, as two
// instances of a service behind a load balancer would be, each with its own
// Redis client and its own redisstore.Limiter, share one limit through one
// Redis.
//
//	go run ./examples/redis           # run the demo and exit
//	go run ./examples/redis -serve    # then keep serving, for curl -i, until Ctrl-C or SIGTERM
//
// The limit is 10 requests a minute per X-API-Key. The program sends 30
// requests for one key, alternately to each server, and prints what each
// server admitted: 10 in all, not 10 each. It exits with status 1 if the
// fleet admitted more than the limit.
//
// Redis is at REDIS_ADDR (host:port) if that is set. Otherwise, if
// redis-server is in PATH, the program starts a throwaway one on a free
// 127.0.0.1 port, in a temporary directory, without persistence, and stops
// it and removes the directory when it exits, on Ctrl-C and SIGTERM too.
// Stopped, the servers shut down gracefully: requests in flight may finish,
// for up to five seconds.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/examples/internal/graceful"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/redisstore"
)

func main() {
	serve := flag.Bool("serve", false, "keep serving after the demo, until Ctrl-C or SIGTERM")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := withRedis(ctx, func(addr, about string) error {
		_, err := run(ctx, os.Stdout, config{redisAddr: addr, redisAbout: about, serve: *serve})
		return err
	})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "examples/redis:", err)
		os.Exit(1)
	}
}

// config is what one run needs.
type config struct {
	redisAddr  string
	redisAbout string // printed after the address
	serve      bool
}

// policy is the fleet's limit: 10 requests a minute per API key, all at
// once if need be.
var policy = core.PerMinute(10).WithName("fleet")

const (
	// header carries the key the limit counts by.
	header = "X-API-Key"
	// requests is how many requests the demo sends for its key.
	requests = 30
	// gracePeriod bounds how long a stopping server waits for requests in
	// flight.
	gracePeriod = 5 * time.Second
)

// server is one instance of the service.
type server struct {
	name   string
	url    string
	client *redis.Client
	lim    *redisstore.Limiter
}

// report is what the demo counted from the responses.
type report struct {
	admitted    []int // per server, in the order of servers
	storeFailed int   // refused because Redis failed (fail closed), not by the limit
}

// run starts two servers sharing policy through the Redis at
// cfg.redisAddr, sends the demo's requests and prints what came back; with
// cfg.serve it then serves until ctx ends.
func run(ctx context.Context, out io.Writer, cfg config) (report, error) {
	if err := ping(ctx, cfg.redisAddr); err != nil {
		return report{}, err
	}
	fmt.Fprintf(out, "Redis at %s (%s)\n", cfg.redisAddr, cfg.redisAbout)

	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.client.Close()
		}
	}()
	// served hears from each server once, when it has stopped.
	served := make(chan error, 2)
	running := 0
	// stopAll stops the servers still running and waits for them.
	stopAll := func(errs ...error) error {
		stopServing()
		for ; running > 0; running-- {
			errs = append(errs, <-served)
		}
		return errors.Join(errs...)
	}
	defer stopAll()
	for _, name := range []string{"A", "B"} {
		// A client per server, as two processes would each have their own.
		// ContextTimeoutEnabled lets redisstore's per-round-trip timeout
		// hold on the socket; go-redis ignores context deadlines without it.
		client := redis.NewClient(&redis.Options{Addr: cfg.redisAddr, ContextTimeoutEnabled: true})
		s := &server{name: name, client: client}
		servers = append(servers, s)
		var err error
		if s.lim, err = redisstore.New(client, policy); err != nil {
			return report{}, err
		}
		// An API key is no client IP: there is no proxy to trust, the
		// header is the key, and a request without it is a 400.
		mw, err := httpmw.New(s.lim, keyfunc.Header(header))
		if err != nil {
			return report{}, err
		}
		hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from server %s\n", name)
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return report{}, err
		}
		s.url = "http://" + ln.Addr().String() + "/"
		srv := &http.Server{Handler: mw.Handler(hello), ReadHeaderTimeout: 5 * time.Second}
		running++
		go func() { served <- graceful.Serve(serveCtx, srv, ln, gracePeriod) }()
		fmt.Fprintf(out, "server %s at %s (its own *redis.Client and redisstore.Limiter)\n", name, s.url)
	}
	fmt.Fprintf(out, "one limit for both: %q allows %d requests per %v (burst %d) per %s\n\n",
		policy.Name, policy.Events, policy.Period, policy.EffectiveBurst(), header)

	rep, err := demo(ctx, out, servers)
	if err != nil || !cfg.serve {
		return rep, stopAll(err)
	}
	fmt.Fprintf(out, "\nserving until Ctrl-C or SIGTERM; both servers count every key against one limit; try:\n")
	for _, s := range servers {
		fmt.Fprintf(out, "  curl -i -H '%s: me' %s\n", header, s.url)
	}
	// Until the stop signal, or until a server fails.
	first := <-served
	running--
	if err := stopAll(first); err != nil {
		return rep, err
	}
	fmt.Fprintln(out, "stopped")
	return rep, nil
}

// ping checks that Redis answers, so that an unreachable server is one
// clear error rather than thirty refusals.
func ping(ctx context.Context, addr string) error {
	// Dialled first by hand: the client would also log each failed dial.
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("Redis at %s does not answer: %w", addr, err)
	}
	conn.Close()
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("Redis at %s does not answer PING: %w", addr, err)
	}
	return nil
}

// demo sends the requests for one fresh key, alternately to each server,
// prints each answer and what each server and the fleet admitted, and
// fails if the fleet admitted more than the limit.
func demo(ctx context.Context, out io.Writer, servers []*server) (report, error) {
	// A key of its own, so that an earlier run against the same Redis
	// (within the minute its state lives) does not count.
	var b [4]byte
	rand.Read(b[:])
	key := "demo-" + hex.EncodeToString(b[:])
	client := &http.Client{Timeout: 5 * time.Second}
	rep := report{admitted: make([]int, len(servers))}
	sent := make([]int, len(servers))

	fmt.Fprintf(out, "%d requests with %s: %s, alternately to A and B\n", requests, header, key)
	fmt.Fprintf(out, "(request number, server, status, X-RateLimit-Remaining: the count falls across both servers)\n")
	const perLine = 5
	for n := 1; n <= requests; n++ {
		i := (n - 1) % len(servers)
		s := servers[i]
		resp, err := get(ctx, client, s.url, key)
		if err != nil {
			return rep, err
		}
		sent[i]++
		remaining := resp.Header.Get("X-RateLimit-Remaining")
		switch {
		case resp.StatusCode == http.StatusOK:
			rep.admitted[i]++
		case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("X-RateLimit-Limit") == "":
			// No quota was read: Redis failed and the request was
			// refused by the failure mode, not by the limit.
			rep.storeFailed++
			remaining = "-"
		case resp.StatusCode == http.StatusTooManyRequests:
		default:
			return rep, fmt.Errorf("server %s answered %s", s.name, resp.Status)
		}
		entry := fmt.Sprintf("%4d %s %d r=%s", n, s.name, resp.StatusCode, remaining)
		if n%perLine == 0 || n == requests {
			fmt.Fprintln(out, entry)
		} else {
			fmt.Fprintf(out, "%-17s", entry)
		}
	}

	fmt.Fprintln(out)
	total := 0
	for i, s := range servers {
		fmt.Fprintf(out, "server %s admitted %d of %d\n", s.name, rep.admitted[i], sent[i])
		total += rep.admitted[i]
	}
	switch {
	case total == policy.Events:
		fmt.Fprintf(out, "the fleet admitted %d of %d: the limit of %d held for the fleet as a whole, not for each server (which would have admitted %d)\n",
			total, requests, policy.Events, len(servers)*policy.Events)
	case total < policy.Events:
		fmt.Fprintf(out, "the fleet admitted %d of %d, fewer than its limit of %d\n", total, requests, policy.Events)
	default:
		fmt.Fprintf(out, "the fleet admitted %d of %d, MORE than its limit of %d\n", total, requests, policy.Events)
	}
	// The key's state, where the package documentation says it is:
	// <prefix>{<key>}:<algorithm>:<limit>.
	if keys, err := servers[0].client.Keys(ctx, "floodgate:{"+key+"}:*").Result(); err == nil && len(keys) == 1 {
		if ttl, err := servers[0].client.PTTL(ctx, keys[0]).Result(); err == nil {
			fmt.Fprintf(out, "the fleet's state for the key: one Redis key, %s, expiring in %v\n", keys[0], ttl.Round(time.Second))
		}
	}
	if rep.storeFailed > 0 {
		return rep, fmt.Errorf("%d requests were refused because Redis failed (the default, fail closed), not by the limit", rep.storeFailed)
	}
	if total > policy.Events {
		return rep, fmt.Errorf("the fleet admitted %d, more than the limit of %d", total, policy.Events)
	}
	return rep, nil
}

// get sends one request with the API key and reads the body, so that the
// connection is reused.
func get(ctx context.Context, client *http.Client, url, key string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(header, key)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}
