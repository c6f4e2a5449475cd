package floodgate_test

// Shadow mode across every consumer of a core.Limiter in the module: a
// shadow limit never refuses and never waits, whoever calls it, and the
// consumers that report to an Observer report what enforcing would have
// done.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/echomw"
	"github.com/floodgate/floodgate/ginmw"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// used is what one request through a consumer came to.
type used struct {
	passed bool           // it went on (to the handler, the server) or was admitted
	d      *core.Decision // what a caller of Allow got; nil for the adapters, whose Observer reports
}

// A consumer makes one request through lim, under a context that has
// ended (a consumer that waited would fail it), and reports to obs when it
// takes an Observer.
type consumer struct {
	name     string
	observed bool // it takes an Observer
	use      func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used
}

const shadowMethod = "/floodgate.test.Chat/Talk"

var consumers = []consumer{
	{"net/http", true, func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		h := httpmw.MustNew(lim, keyfunc.Constant("k"), shadowHTTPOpts(obs)...).Handler(http.HandlerFunc(served))
		return serveHTTP(ctx, h)
	}},
	{"gin", true, func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		e := gin.New()
		e.GET("/", ginmw.MustNew(lim, keyfunc.Constant("k"), shadowHTTPOpts(obs)...), gin.WrapF(served))
		return serveHTTP(ctx, e)
	}},
	{"echo", true, func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		e := echo.New()
		e.GET("/", echo.WrapHandler(http.HandlerFunc(served)), echomw.MustNew(lim, keyfunc.Constant("k"), shadowHTTPOpts(obs)...))
		return serveHTTP(ctx, e)
	}},
	{"grpc unary", true, func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		l := grpcmw.MustNew(lim, grpcmw.Constant("k"), shadowGRPCOpts(obs)...)
		_, err := l.UnaryServerInterceptor()(grpcCtx(ctx), nil, &grpc.UnaryServerInfo{FullMethod: shadowMethod}, answered)
		return used{passed: err == nil}
	}},
	{"grpc stream", true, func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		l := grpcmw.MustNew(lim, grpcmw.Constant("k"), shadowGRPCOpts(obs)...)
		err := l.StreamServerInterceptor()(nil, stream{ctx: grpcCtx(ctx)}, &grpc.StreamServerInfo{FullMethod: shadowMethod},
			func(any, grpc.ServerStream) error { return nil })
		return used{passed: err == nil}
	}},
	{"go-grpc-middleware bridge", true, func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		l := grpcmw.MustNew(lim, grpcmw.Constant("k"), shadowGRPCOpts(obs)...)
		_, err := ratelimit.UnaryServerInterceptor(l)(grpcCtx(ctx), nil, &grpc.UnaryServerInfo{FullMethod: shadowMethod}, answered)
		return used{passed: err == nil}
	}},
	{"httpclient", false, func(t *testing.T, ctx context.Context, lim core.Limiter, _ core.Observer) used {
		waited := false
		rt, err := httpclient.NewLimitedTransport(roundTrip(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok"))}, nil
		}), lim, nil, httpclient.WithSleep(func(context.Context, time.Duration) error { waited = true; return nil }))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(httptest.NewRequest("GET", "http://api.test/", nil))
		if err == nil {
			resp.Body.Close()
		}
		return used{passed: err == nil && !waited}
	}},
	{"core.Reserve", false, func(t *testing.T, ctx context.Context, lim core.Limiter, _ core.Observer) used {
		r, d, err := core.Reserve(ctx, lim, "k", 1)
		return used{passed: err == nil && r != nil && d.Allowed && d.Delay == 0, d: &d}
	}},
}

// TestShadowEveryConsumer: an exhausted shadow limit, refusing or shaping,
// handed to every consumer of a core.Limiter as itself or inside another
// limiter, lets the request through at once; the adapters' Observer hears
// of it as a shadow request with the outcome enforcing would have had, and
// a caller of Allow finds that outcome in Decision.Would.
func TestShadowEveryConsumer(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name    string
		set     func(core.Limit) core.Limit
		outcome core.Outcome
	}{
		{"refusing", func(l core.Limit) core.Limit { return l.WithAlgorithm(core.GCRA) }, core.OutcomeDenied},
		{"shaping", func(l core.Limit) core.Limit { return l.WithMaxDelay(time.Hour) }, core.OutcomeShaped},
	}
	for _, kind := range kinds {
		for _, inside := range []bool{false, true} {
			for _, c := range consumers {
				name := kind.name + "/itself/" + c.name
				if inside {
					name = kind.name + "/inside/" + c.name
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
					inner := core.MustNew(kind.set(core.PerMinute(1).WithName("trial")), core.WithClock(clock))
					// Every consumer above asks for key "k", but httpclient,
					// which asks for the host.
					for _, key := range []string{"k", "api.test"} {
						if d, err := inner.Allow(context.Background(), key, 1); err != nil || !d.Allowed || d.Delay != 0 {
							t.Fatalf("spending the quota: %+v, %v", d, err)
						}
					}
					var lim core.Limiter = &core.Shadow{Limiter: inner}
					if inside {
						lim = veiled{lim}
					}
					var events []core.Event
					obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					u := c.use(t, ctx, lim, obs)
					if !u.passed {
						t.Fatalf("refused or made to wait")
					}
					if d := u.d; d != nil {
						if !d.Shadow || d.Would != kind.outcome || d.RetryAfter != 0 || d.Delay != 0 {
							t.Errorf("decision %+v; want a shadow one, Would %v, no wait", *d, kind.outcome)
						}
						return
					}
					if c.observed && (len(events) != 1 || !events[0].Shadow || !events[0].Admitted || events[0].Outcome != kind.outcome ||
						events[0].Decision.Limit.Name != "trial") {
						t.Errorf("observed %+v; want one shadow event, admitted, %v, by trial", events, kind.outcome)
					}
				})
			}
		}
	}
}

// veiled hides the limiter it holds from a type assertion, as a user's
// instrumentation does.
type veiled struct{ core.Limiter }

func shadowHTTPOpts(obs core.Observer) []httpmw.Option {
	return []httpmw.Option{httpmw.WithObserver(obs), httpmw.WithFailureMode(httpmw.FailClosed), httpmw.WithDenialHold(time.Hour, 8)}
}

func shadowGRPCOpts(obs core.Observer) []grpcmw.Option {
	return []grpcmw.Option{grpcmw.WithObserver(obs), grpcmw.WithFailureMode(grpcmw.FailClosed), grpcmw.WithDenialHold(time.Hour, 8)}
}

func served(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Served", "yes") }

func serveHTTP(ctx context.Context, h http.Handler) used {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	return used{passed: w.Code == http.StatusOK && w.Header().Get("X-Served") == "yes"}
}

func allowed(ctx context.Context, lim core.Limiter) used {
	d, err := lim.Allow(ctx, "k", 1)
	return used{passed: err == nil && d.Allowed && d.Delay == 0, d: &d}
}

func answered(context.Context, any) (any, error) { return "ok", nil }

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// transport is a server transport stream outside a server.
type transport struct{}

func (transport) Method() string                  { return shadowMethod }
func (transport) SetHeader(md metadata.MD) error  { return nil }
func (transport) SendHeader(md metadata.MD) error { return nil }
func (transport) SetTrailer(md metadata.MD) error { return nil }

func grpcCtx(ctx context.Context) context.Context {
	return grpc.NewContextWithServerTransportStream(ctx, transport{})
}

// stream is a server stream outside a server.
type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s stream) Context() context.Context    { return s.ctx }
func (s stream) SetHeader(metadata.MD) error { return nil }
func (s stream) SetTrailer(metadata.MD)      {}
