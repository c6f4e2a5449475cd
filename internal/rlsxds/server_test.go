package rlsxds

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// waitLimit bounds every wait of these tests; they end far sooner.
const waitLimit = 10 * time.Second

// recorder keeps what a callback saw, for tests to wait on.
type recorder[T any] struct {
	mu     sync.Mutex
	items  []T
	signal chan struct{}
}

func newRecorder[T any]() *recorder[T] { return &recorder[T]{signal: make(chan struct{}, 1)} }

func (r *recorder[T]) add(v T) {
	r.mu.Lock()
	r.items = append(r.items, v)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *recorder[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// waitFor returns the index and value of the first item from index from
// on that pred accepts, waiting for it up to waitLimit.
func (r *recorder[T]) waitFor(t *testing.T, from int, what string, pred func(T) bool) (int, T) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		items := r.all()
		for i := from; i < len(items); i++ {
			if pred(items[i]) {
				return i, items[i]
			}
		}
		select {
		case <-r.signal:
		case <-deadline.C:
			var zero T
			t.Fatalf("no %s within %v; saw %d items", what, waitLimit, len(items))
			return 0, zero
		}
	}
}

// update is one call of Watch's callback.
type update struct {
	c    *rlsconfig.Config
	errs []error
}

// xdsServer is a go-control-plane management server on 127.0.0.1, with a
// snapshot cache in ADS mode, as envoyproxy/ratelimit's tests run it.
type xdsServer struct {
	t     *testing.T
	cache cachev3.SnapshotCache
	addr  string
	opts  []grpc.ServerOption
	// wrap, if not nil, wraps the listener.
	wrap func(net.Listener) net.Listener

	reqs  *recorder[*discoveryv3.DiscoveryRequest]
	resps *recorder[*discoveryv3.DiscoveryResponse]
	opens *recorder[metadata.MD]

	mu   sync.Mutex
	srv  *grpc.Server
	done chan struct{}
	ctx  context.Context
}

func startServer(t *testing.T, opts ...grpc.ServerOption) *xdsServer {
	t.Helper()
	s := newServer(t, "127.0.0.1:0", opts...)
	s.serve()
	return s
}

// newServer returns a server for addr that is not serving yet, stopped
// when the test ends.
func newServer(t *testing.T, addr string, opts ...grpc.ServerOption) *xdsServer {
	ctx, cancel := context.WithCancel(context.Background())
	s := &xdsServer{
		t: t, cache: cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil), addr: addr, opts: opts,
		reqs: newRecorder[*discoveryv3.DiscoveryRequest](), resps: newRecorder[*discoveryv3.DiscoveryResponse](),
		opens: newRecorder[metadata.MD](), ctx: ctx,
	}
	t.Cleanup(func() {
		s.stop()
		cancel()
	})
	return s
}

// serve listens on the server's address (a fresh port the first time)
// and serves until stop.
func (s *xdsServer) serve() {
	s.t.Helper()
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = lis.Addr().String()
	if s.wrap != nil {
		lis = s.wrap(lis)
	}
	cb := serverv3.CallbackFuncs{
		StreamOpenFunc: func(ctx context.Context, _ int64, _ string) error {
			md, _ := metadata.FromIncomingContext(ctx)
			s.opens.add(md)
			return nil
		},
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			s.reqs.add(req)
			return nil
		},
		StreamResponseFunc: func(_ context.Context, _ int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			s.resps.add(resp)
		},
	}
	g := grpc.NewServer(s.opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, serverv3.NewServer(s.ctx, s.cache, cb))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	s.mu.Lock()
	s.srv, s.done = g, done
	s.mu.Unlock()
}

// stop closes the server's connections and its listener.
func (s *xdsServer) stop() {
	s.mu.Lock()
	g, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if g != nil {
		g.Stop()
		<-done
	}
}

// set makes version, with resources, the snapshot of node.
func (s *xdsServer) set(node, version string, resources ...*rlsconfv3.RateLimitConfig) {
	s.t.Helper()
	rs := make([]types.Resource, len(resources))
	for i, r := range resources {
		rs[i] = r
	}
	snap, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: rs})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cache.SetSnapshot(context.Background(), node, snap); err != nil {
		s.t.Fatal(err)
	}
}

// ack reports whether req acknowledges version.
func ack(version string) func(*discoveryv3.DiscoveryRequest) bool {
	return func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetVersionInfo() == version && r.GetResponseNonce() != "" && r.GetErrorDetail() == nil
	}
}

// nack reports whether req refuses the response with nonce.
func nack(nonce string) func(*discoveryv3.DiscoveryRequest) bool {
	return func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetResponseNonce() == nonce && r.GetErrorDetail() != nil
	}
}

// response reports whether resp carries version.
func response(version string) func(*discoveryv3.DiscoveryResponse) bool {
	return func(r *discoveryv3.DiscoveryResponse) bool { return r.GetVersionInfo() == version }
}

// fastConfig is a client configuration for s whose waits are short.
func fastConfig(s *xdsServer, node string) Config {
	c := DefaultConfig()
	c.Server = s.addr
	c.NodeID = node
	c.ConnectRetryInterval = 5 * time.Millisecond
	c.Backoff = Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Factor: 2}
	return c
}

// watch starts a watch whose updates the returned recorder keeps, ended
// when the test ends.
func watch(t *testing.T, cfg Config, sleep func(context.Context, time.Duration) error) (*Watcher, *recorder[update]) {
	t.Helper()
	rec := newRecorder[update]()
	if sleep == nil {
		sleep = timerSleep
	}
	w, err := start(context.Background(), cfg, func(c *rlsconfig.Config, errs []error) { rec.add(update{c, errs}) }, sleep, func() float64 { return 0.5 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w, rec
}

// rateLimit is a resource of one descriptor, key=value, limited to rpu
// per unit.
func rateLimit(name, domain, key, value string, rpu uint32, unit rlsconfv3.RateLimitUnit) *rlsconfv3.RateLimitConfig {
	return &rlsconfv3.RateLimitConfig{Name: name, Domain: domain, Descriptors: []*rlsconfv3.RateLimitDescriptor{{
		Key: key, Value: value, RateLimit: &rlsconfv3.RateLimitPolicy{Unit: unit, RequestsPerUnit: rpu},
	}}}
}
