package rlsxds

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// connectTimeout bounds one attempt to connect, TLS handshake included:
// gRPC's default.
const connectTimeout = 20 * time.Second

// Watcher keeps the configuration a management server pushes in force.
// It is safe for concurrent use.
type Watcher struct {
	cfg      Config
	onUpdate func(*rlsconfig.Config, []error)
	conn     *grpc.ClientConn
	node     *corev3.Node
	md       metadata.MD

	cur     atomic.Pointer[rlsconfig.Config]
	version atomic.Pointer[string]

	// Owned by the watch's goroutine.
	acked   string         // the version in force, "" before one
	refused *refusal       // the last response refused
	rand    func() float64 // the jitter's draws
	sleep   func(context.Context, time.Duration) error

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// Watch connects to cfg.Server and keeps the RateLimitConfig resources it
// pushes in force until ctx ends or [Watcher.Close] is called. It
// subscribes as envoyproxy/ratelimit's GRPC_XDS_SOTW client does: a
// state-of-the-world stream on the aggregated discovery service
// (envoy.service.discovery.v3.AggregatedDiscoveryService), for every
// resource of type [TypeURL], as node cfg.NodeID.
//
// Each response holds every resource; it is converted whole (see
// [Convert]) and checked by cfg.Check. If all is well, the configuration
// replaces the one in force and the response is acknowledged; if not, it
// is refused (NACK) with the errors as the reason, and the configuration
// in force stays. A response with no resources is an empty configuration,
// as in envoyproxy/ratelimit: no domain has limits. When the stream fails
// or ends, or cannot be opened, the client waits as cfg.Backoff says and
// opens another, asking for what is newer than the version in force.
//
// onUpdate, if not nil, is called with the configuration in force and
// what went wrong: after a response is taken (errors nil; before the
// acknowledgement is sent, so a server that has it sees the configuration
// in force), after one is refused (its errors; the same response sent
// again is not reported again), and when a stream fails (its error, the
// configuration unchanged). Before the first response is taken, the
// configuration in force is empty. onUpdate runs on the watch's goroutine,
// one call at a time, and must not call Close.
//
// Watch fails only when cfg is invalid; an unreachable server is reported
// through onUpdate and tried again.
func Watch(ctx context.Context, cfg Config, onUpdate func(*rlsconfig.Config, []error)) (*Watcher, error) {
	return start(ctx, cfg, onUpdate, timerSleep, rand.Float64)
}

// start is Watch with its waits and random draws given, for tests.
func start(ctx context.Context, cfg Config, onUpdate func(*rlsconfig.Config, []error), sleep func(context.Context, time.Duration) error, rnd func() float64) (*Watcher, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	w := &Watcher{cfg: cfg, onUpdate: onUpdate, rand: rnd, sleep: sleep, done: make(chan struct{})}
	empty, _ := rlsconfig.Of(nil)
	w.cur.Store(empty)
	w.version.Store(new(string))

	meta := make(map[string]*structpb.Value, len(cfg.NodeMetadata))
	for k, v := range cfg.NodeMetadata {
		meta[k] = structpb.NewStringValue(v)
	}
	w.node = &corev3.Node{Id: cfg.NodeID, Metadata: &structpb.Struct{Fields: meta}}
	w.md = metadata.New(cfg.Headers)

	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  cfg.ConnectRetryInterval,
				Multiplier: 1,
				Jitter:     0.5,
				MaxDelay:   cfg.ConnectRetryInterval,
			},
			// Left 0, it would bound each attempt by the interval.
			MinConnectTimeout: connectTimeout,
		}),
	}
	if cfg.MaxRecvMsgSize > 0 {
		opts = append(opts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxRecvMsgSize)))
	}
	conn, err := grpc.NewClient(cfg.Server, opts...)
	if err != nil {
		return nil, fmt.Errorf("rlsxds: the server address %q (CONFIG_GRPC_XDS_SERVER_URL): %w", cfg.Server, err)
	}
	w.conn = conn
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

// Config returns the configuration in force.
func (w *Watcher) Config() *rlsconfig.Config { return w.cur.Load() }

// Version returns the version of the configuration in force, as the
// server named it; "" before one is taken.
func (w *Watcher) Version() string { return *w.version.Load() }

// Close ends the watch, waits until its goroutine returns and closes the
// connection; the configuration in force stays. It is safe to call more
// than once.
func (w *Watcher) Close() error {
	var err error
	w.closeOnce.Do(func() {
		w.cancel()
		<-w.done
		err = w.conn.Close()
	})
	return err
}

// Done is closed when the watch has ended.
func (w *Watcher) Done() <-chan struct{} { return w.done }

func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	attempt := 0
	for {
		delivered, err := w.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if delivered {
			attempt = 0
		}
		wait := w.cfg.Backoff.Wait(attempt, w.rand())
		attempt++
		w.report(fmt.Errorf("rlsxds: the stream from %s ended: %w; opening another in %v", w.cfg.Server, err, wait))
		if w.sleep(ctx, wait) != nil {
			return
		}
	}
}

// stream runs one stream until it fails, and says whether it delivered a
// response.
func (w *Watcher) stream(ctx context.Context) (delivered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, w.md)
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(w.conn).StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	// The first request names the version in force, so that a server
	// which still has it need not send it again.
	if err := st.Send(w.request("", nil)); err != nil {
		return false, recvErr(st)
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return delivered, err
		}
		delivered = true
		req, err := w.handle(ctx, resp)
		if err != nil {
			return delivered, err
		}
		if req == nil {
			continue
		}
		if err := st.Send(req); err != nil {
			return delivered, recvErr(st)
		}
	}
}

// recvErr returns the stream's status when a Send failed: Send reports
// only io.EOF.
func recvErr(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient) error {
	for {
		if _, rerr := st.Recv(); rerr != nil {
			return rerr
		}
	}
}

// timerSleep waits d, or until ctx ends.
func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
