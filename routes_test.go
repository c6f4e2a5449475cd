package floodgate_test

// The one-liners (LimitByIP on net/http, Gin and Echo) and per-route keys
// (keyfunc.Route on the HTTP adapters, grpcmw.KeyByMethod on gRPC) across
// the adapters: the same requests get the same answers.

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// TestConformanceLimitByIP: httpmw.LimitByIP, ginmw.LimitByIP and
// echomw.LimitByIP limit each client IP (the socket peer, IPv6 by /64) to
// the policy given, with the same answers.
func TestConformanceLimitByIP(t *testing.T) {
	t.Parallel()
	// Two a minute: nothing refills while the test runs.
	limit := core.PerMinute(2).WithName("ip")
	targets := map[string]func() http.Handler{
		"net/http": func() http.Handler { return httpmw.LimitByIP(limit)(hello) },
		"gin": func() http.Handler {
			e := gin.New()
			e.Use(ginmw.LimitByIP(limit))
			e.GET("/", gin.WrapH(hello))
			return e
		},
		"echo": func() http.Handler {
			e := echo.New()
			e.Use(echomw.LimitByIP(limit))
			e.GET("/", echo.WrapHandler(hello))
			return e
		},
	}
	steps := []struct {
		peer      string
		status    int
		remaining string
	}{
		{"192.0.2.1:1000", 200, "1"},
		{"192.0.2.1:1001", 200, "0"}, // another port, the same client
		{"192.0.2.1:1002", 429, "0"},
		{"192.0.2.2:1000", 200, "1"}, // another client
		{"[2001:db8:1:2::1]:1000", 200, "1"},
		{"[2001:db8:1:2::2]:1000", 200, "0"}, // the same /64
		{"[2001:db8:1:2::3]:1000", 429, "0"},
		{"[2001:db8:1:3::1]:1000", 200, "1"}, // another /64
	}
	for name, build := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := build()
			for i, st := range steps {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.RemoteAddr = st.peer
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != st.status || w.Header().Get("X-RateLimit-Remaining") != st.remaining ||
					!strings.HasPrefix(w.Header().Get("RateLimit"), `"ip";r=`+st.remaining+";") {
					t.Fatalf("step %d (%s): %d, remaining %q, RateLimit %q; want %d, %s",
						i, st.peer, w.Code, w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("RateLimit"), st.status, st.remaining)
				}
			}
		})
	}
}

// TestConformanceRouteKeys: keyed by route, /users/1 and /users/2 share
// /users/{id}'s limit (Gin and Echo: /users/:id) and /items/1 has its own;
// over gRPC, keyed by method, calls of Check share one limit and List has
// its own.
func TestConformanceRouteKeys(t *testing.T) {
	t.Parallel()
	limit := core.PerMinute(2).WithName("route")
	steps := []struct {
		path string
		want response
	}{
		{"/users/1", pass(limit, 1, 30)},
		{"/users/2", pass(limit, 0, 60)},
		{"/users/3", deny(limit, 0, 60, 30, 30*time.Second)},
		{"/items/1", pass(limit, 1, 30)},
		{"/items/2", pass(limit, 0, 60)},
	}
	targets := map[string]func(t *testing.T, lim core.Limiter) func(path string) response{
		"net/http": func(_ *testing.T, lim core.Limiter) func(string) response {
			// The pattern is the ServeMux's once it has matched: the
			// middleware sits on the routes.
			l := httpmw.MustNew(lim, keyfunc.Route())
			mux := http.NewServeMux()
			mux.Handle("GET /users/{id}", l.Handler(hello))
			mux.Handle("GET /items/{id}", l.Handler(hello))
			return serveRoute(mux)
		},
		"gin": func(_ *testing.T, lim core.Limiter) func(string) response {
			e := gin.New()
			e.Use(ginmw.New(httpmw.MustNew(lim, keyfunc.Route())))
			e.GET("/users/:id", gin.WrapH(hello))
			e.GET("/items/:id", gin.WrapH(hello))
			return serveRoute(e)
		},
		"echo": func(_ *testing.T, lim core.Limiter) func(string) response {
			e := echo.New()
			e.Use(echomw.New(httpmw.MustNew(lim, keyfunc.Route())))
			e.GET("/users/:id", echo.WrapHandler(hello))
			e.GET("/items/:id", echo.WrapHandler(hello))
			return serveRoute(e)
		},
		"grpc": routeGRPC,
	}
	for name, build := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
			do := build(t, core.MustNew(limit.WithAlgorithm(core.GCRA), core.WithClock(clock)))
			for i, st := range steps {
				got := do(st.path)
				if got.status != st.want.status || !sameFields(got.fields, st.want.fields) {
					t.Fatalf("step %d (%s): %d %v; want %d %v", i, st.path, got.status, got.fields, st.want.status, st.want.fields)
				}
			}
		})
	}
}

func sameFields(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// serveRoute answers GET path through h.
func serveRoute(h http.Handler) func(path string) response {
	return func(path string) response {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		res := response{status: w.Code, fields: map[string]string{}}
		for _, name := range fieldNames {
			if v := w.Header().Get(name); v != "" {
				res.fields[name] = v
			}
		}
		return res
	}
}

// routeGRPC serves the health service keyed by method: /users/… calls
// Check, /items/… calls List.
func routeGRPC(t *testing.T, lim core.Limiter) func(path string) response {
	l := grpcmw.MustNew(lim, grpcmw.KeyByMethod(), grpcmw.WithSkip(func(context.Context, string) bool { return false }),
		// Every call's fields, as HTTP sends them (the default: refusals and near the limit).
		grpcmw.WithHeaders(core.HeadersBoth))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close(); srv.Stop(); <-done })
	client := healthpb.NewHealthClient(cc)
	return func(path string) response {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var header metadata.MD
		if strings.HasPrefix(path, "/users/") {
			_, err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		} else {
			_, err = client.List(ctx, &healthpb.HealthListRequest{}, grpc.Header(&header))
		}
		res := response{status: httpStatus(status.Convert(err)), fields: map[string]string{}}
		for _, name := range fieldNames {
			if v := header.Get(name); len(v) > 0 {
				res.fields[name] = v[0]
			}
		}
		return res
	}
}
