package benchmarks

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

// The gRPC rows: a unary call to a method that does nothing, on an
// in-process server over bufconn (grpc's in-memory listener: the HTTP/2
// transport, metadata encoding included, without the kernel's loopback and
// its noise), with each library's interceptor. The server sees the client
// as 127.0.0.1:4242, so that per-peer limits have an IP address to key by.

// benchMethod is the one method of the benchmark's service.
const benchMethod = "/bench.Bench/Call"

// benchService is a service with one unary method from Empty to Empty,
// written out by hand so that the benchmark needs no generated code.
var benchService = grpc.ServiceDesc{
	ServiceName: "bench.Bench",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(context.Context, any) (any, error) { return in, nil }
			if ic == nil {
				return h(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: benchMethod}, h)
		},
	}},
}

// perPeer is the go-grpc-middleware v2 ratelimit.Limiter its
// documentation suggests writing: one x/time/rate limiter per peer IP in a
// map under a mutex, unbounded.
type perPeer struct {
	mu    sync.Mutex
	m     map[string]*rate.Limiter
	r     rate.Limit
	burst int
}

var errPerPeerLimited = errors.New("rate limit exceeded")

func (p *perPeer) Limit(ctx context.Context) error {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return errors.New("no peer")
	}
	host, _, err := net.SplitHostPort(pr.Addr.String())
	if err != nil {
		return err
	}
	p.mu.Lock()
	l := p.m[host]
	if l == nil {
		l = rate.NewLimiter(p.r, p.burst)
		p.m[host] = l
	}
	p.mu.Unlock()
	if !l.Allow() {
		return errPerPeerLimited
	}
	return nil
}

type grpcRow struct {
	name string
	// ic returns the row's interceptor for the policy (events per period,
	// burst), keyed by the peer's IP address; nil for the bare server.
	ic func(tb testing.TB, events, burst int) grpc.UnaryServerInterceptor
	// md: the row sends rate-limit metadata on an admitted call far from
	// its limit.
	md bool
}

func newGRPCMW(alg core.Algorithm, opts ...grpcmw.Option) func(testing.TB, int, int) grpc.UnaryServerInterceptor {
	return func(tb testing.TB, events, burst int) grpc.UnaryServerInterceptor {
		lim, err := core.New((core.Limit{Events: events, Period: period, Burst: burst, Name: "bench"}).WithAlgorithm(alg))
		if err != nil {
			tb.Fatal(err)
		}
		l, err := grpcmw.New(lim, grpcmw.MustKeyByPeerIP(), opts...)
		if err != nil {
			tb.Fatal(err)
		}
		return l.UnaryServerInterceptor()
	}
}

var grpcRows = []grpcRow{
	{"bare", nil, false},
	{"ggm-perpeer", func(tb testing.TB, events, burst int) grpc.UnaryServerInterceptor {
		return ratelimit.UnaryServerInterceptor(&perPeer{m: map[string]*rate.Limiter{}, r: rate.Limit(float64(events) / period.Seconds()), burst: burst})
	}, false},
	{"floodgate", newGRPCMW(core.TokenBucket), false},
	{"floodgate-gcra", newGRPCMW(core.GCRA), false},
	// The full metadata on every call: the default before issue 19.
	{"floodgate-allmd", newGRPCMW(core.TokenBucket, grpcmw.WithHeaders(core.HeadersBoth)), true},
}

// serveGRPC starts a server with ic (none if nil) and returns a client
// connection to it; both end with tb.
func serveGRPC(tb testing.TB, ic grpc.UnaryServerInterceptor) *grpc.ClientConn {
	tb.Helper()
	lis := bufconn.Listen(1 << 20)
	var opts []grpc.ServerOption
	if ic != nil {
		opts = append(opts, grpc.UnaryInterceptor(ic))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&benchService, struct{}{})
	done := make(chan struct{})
	go func() { _ = srv.Serve(peerListener{lis}); close(done) }()
	cc, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cc.Close()
		srv.Stop()
		<-done
	})
	return cc
}

// peerListener hands out connections whose remote address is a TCP one,
// which bufconn's are not.
type peerListener struct{ net.Listener }

var benchPeer = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}

func (l peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return peerConn{c}, nil
}

type peerConn struct{ net.Conn }

func (peerConn) RemoteAddr() net.Addr { return benchPeer }

// BenchmarkGRPC measures a unary call through each interceptor, and with
// none ("bare"), from one goroutine and from RunParallel's, on one client
// connection. Every call is allowed (the policy of BenchmarkHTTP).
func BenchmarkGRPC(b *testing.B) {
	for _, row := range grpcRows {
		b.Run(row.name, func(b *testing.B) {
			run := func(b *testing.B, par bool) {
				var ic grpc.UnaryServerInterceptor
				if row.ic != nil {
					ic = row.ic(b, httpEvents, httpBurst)
				}
				cc := serveGRPC(b, ic)
				var bad atomic.Int64
				call := func(in, out *emptypb.Empty) {
					if err := cc.Invoke(context.Background(), benchMethod, in, out); err != nil {
						bad.Add(1)
					}
				}
				b.ReportAllocs()
				if par {
					b.RunParallel(func(pb *testing.PB) {
						in, out := new(emptypb.Empty), new(emptypb.Empty)
						for pb.Next() {
							call(in, out)
						}
					})
				} else {
					in, out := new(emptypb.Empty), new(emptypb.Empty)
					for b.Loop() {
						call(in, out)
					}
				}
				if n := bad.Load(); n > 0 {
					b.Errorf("%d of %d calls failed", n, b.N)
				}
			}
			b.Run("seq", func(b *testing.B) { run(b, false) })
			b.Run("par", func(b *testing.B) { run(b, true) })
		})
	}
}

// TestGRPCPolicy checks that every limited row applies the policy per peer
// (the burst at one instant, then ResourceExhausted) and that the
// benchmark's policy admits, with rate-limit metadata where the row sends
// it far from the limit.
func TestGRPCPolicy(t *testing.T) {
	for _, row := range grpcRows[1:] {
		t.Run(row.name, func(t *testing.T) {
			// 3 a second: a third of a second refills one.
			cc := serveGRPC(t, row.ic(t, 3, 3))
			in, out := new(emptypb.Empty), new(emptypb.Empty)
			admitted := 0
			for range 5 {
				err := cc.Invoke(t.Context(), benchMethod, in, out)
				switch status.Code(err) {
				case codes.OK:
					admitted++
				case codes.ResourceExhausted:
				default:
					t.Fatal(err)
				}
			}
			if admitted < 3 || admitted > 4 { // a refill during the calls at most
				t.Errorf("%d of 5 calls admitted, want 3", admitted)
			}

			cc = serveGRPC(t, row.ic(t, httpEvents, httpBurst))
			for range 3 {
				var md metadata.MD
				if err := cc.Invoke(t.Context(), benchMethod, in, out, grpc.Header(&md)); err != nil {
					t.Fatal(err)
				}
				if _, ok := md["ratelimit"]; ok != row.md {
					t.Errorf("ratelimit metadata %v, want present: %v", md["ratelimit"], row.md)
				}
			}
		})
	}
}
