package floodgate_test

// Shadow mode (WithShadow) across every adapter: a shadow limit never
// refuses and never waits, and the Observer hears what enforcing would
// have done.

import (
	"context"
	"net/http"
	"net/http/httptest"
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
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// used is what one request through a consumer came to.
type used struct {
	passed bool // it went on (to the handler, the server)
}

// A consumer makes one request through lim in shadow mode, under a
// context that has ended (a consumer that waited would fail it), and
// reports to obs.
type consumer struct {
	name string
	use  func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used
}

const shadowMethod = "/floodgate.test.Chat/Talk"

var consumers = []consumer{
	{"net/http", func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		h := httpmw.MustNew(lim, keyfunc.Constant("k"), shadowHTTPOpts(obs)...).Handler(http.HandlerFunc(served))
		return serveHTTP(ctx, h)
	}},
	{"gin", func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		e := gin.New()
		e.GET("/", ginmw.New(httpmw.MustNew(lim, keyfunc.Constant("k"), shadowHTTPOpts(obs)...)), gin.WrapF(served))
		return serveHTTP(ctx, e)
	}},
	{"echo", func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		e := echo.New()
		e.GET("/", echo.WrapHandler(http.HandlerFunc(served)), echomw.New(httpmw.MustNew(lim, keyfunc.Constant("k"), shadowHTTPOpts(obs)...)))
		return serveHTTP(ctx, e)
	}},
	{"grpc unary", func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		l := grpcmw.MustNew(lim, grpcmw.Constant("k"), shadowGRPCOpts(obs)...)
		_, err := l.UnaryServerInterceptor()(grpcCtx(ctx), nil, &grpc.UnaryServerInfo{FullMethod: shadowMethod}, answered)
		return used{passed: err == nil}
	}},
	{"grpc stream", func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		l := grpcmw.MustNew(lim, grpcmw.Constant("k"), shadowGRPCOpts(obs)...)
		err := l.StreamServerInterceptor()(nil, stream{ctx: grpcCtx(ctx)}, &grpc.StreamServerInfo{FullMethod: shadowMethod},
			func(any, grpc.ServerStream) error { return nil })
		return used{passed: err == nil}
	}},
	{"go-grpc-middleware bridge", func(t *testing.T, ctx context.Context, lim core.Limiter, obs core.Observer) used {
		l := grpcmw.MustNew(lim, grpcmw.Constant("k"), shadowGRPCOpts(obs)...)
		_, err := ratelimit.UnaryServerInterceptor(l)(grpcCtx(ctx), nil, &grpc.UnaryServerInfo{FullMethod: shadowMethod}, answered)
		return used{passed: err == nil}
	}},
}

// TestShadowEveryConsumer: an exhausted limit, refusing or shaping, handed
// to every adapter in shadow mode lets the request through at once, and
// the Observer hears of it as a shadow request with the outcome enforcing
// would have had.
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
		for _, c := range consumers {
			t.Run(kind.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
				lim := core.MustNew(kind.set(core.PerMinute(1).WithName("trial")), core.WithClock(clock))
				if d, err := lim.Allow(context.Background(), "k", 1); err != nil || !d.Allowed || d.Delay != 0 {
					t.Fatalf("spending the quota: %+v, %v", d, err)
				}
				var events []core.Event
				obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if u := c.use(t, ctx, lim, obs); !u.passed {
					t.Fatalf("refused or made to wait")
				}
				if len(events) != 1 || !events[0].Shadow || !events[0].Admitted || events[0].Outcome != kind.outcome ||
					events[0].Decision.Limit.Name != "trial" {
					t.Errorf("observed %+v; want one shadow event, admitted, %v, by trial", events, kind.outcome)
				}
			})
		}
	}
}

func shadowHTTPOpts(obs core.Observer) []httpmw.Option {
	return []httpmw.Option{httpmw.WithShadow(), httpmw.WithObserver(obs), httpmw.WithFailureMode(core.FailClosed), httpmw.WithDenialHold(time.Hour, 8)}
}

func shadowGRPCOpts(obs core.Observer) []grpcmw.Option {
	return []grpcmw.Option{grpcmw.WithShadow(), grpcmw.WithObserver(obs), grpcmw.WithFailureMode(core.FailClosed), grpcmw.WithDenialHold(time.Hour, 8)}
}

func served(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Served", "yes") }

func serveHTTP(ctx context.Context, h http.Handler) used {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	return used{passed: w.Code == http.StatusOK && w.Header().Get("X-Served") == "yes"}
}

func answered(context.Context, any) (any, error) { return "ok", nil }

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
