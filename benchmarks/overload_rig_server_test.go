package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The server process of TestOverloadRig: one transport, one protection,
// a handler burning a set number of rounds of work. Its stdin is its
// control: "work 2" sets the work per request to twice the start's (the
// capacity-change run), the end of stdin stops it. It prints its address,
// then, every 100 ms, "sample <unix ns> <limit>" when its protection has a
// limit to read.

// rigServerEnv names, in a server process's environment, its transport,
// protection and rounds of work per request ("grpc-unary static 1900000").
const rigServerEnv = "FLOODGATE_RIG_SERVER"

// The rig's transports.
const (
	rigHTTP       = "http"
	rigGRPCUnary  = "grpc-unary"
	rigGRPCStream = "grpc-stream"
)

var rigTransports = []string{rigHTTP, rigGRPCUnary, rigGRPCStream}

// rigParts is how many messages a streaming call answers with, each after
// its share of the call's work: a server-streaming method that computes
// its results page by page (a search, an export) and sends each as it is
// ready. The whole call burns what a unary call burns, so that the
// transports' capacities compare; the guard's slot is held to the end.
const rigParts = 4

// rigWork is the work per request, which the control can change live.
type rigWork struct{ iters atomic.Int64 }

// do burns the current work, in parts shares.
func (w *rigWork) do(parts int) { burn(int(w.iters.Load()) / parts) }

// rigHandler is the HTTP server: the work behind guard g (nil: none).
type rigHandler struct {
	work *rigWork
	g    guard
}

func (s *rigHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.g == nil {
		s.work.do(1)
		return
	}
	done, ok := s.g()
	if !ok {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.work.do(1)
	done(r.Context().Err() == nil)
}

// The rig's gRPC service, written out by hand (no generated code): Work
// (unary) and WorkStream (server-streaming), Empty in and out.
const (
	rigService      = "rig.Rig"
	rigUnaryMethod  = "/rig.Rig/Work"
	rigStreamMethod = "/rig.Rig/WorkStream"
)

func rigServiceDesc(w *rigWork) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: rigService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Work",
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				in := new(emptypb.Empty)
				if err := dec(in); err != nil {
					return nil, err
				}
				h := func(ctx context.Context, _ any) (any, error) {
					w.do(1)
					// A service that calls anything after its work
					// learns here that its caller has gone.
					if err := ctx.Err(); err != nil {
						return nil, status.FromContextError(err).Err()
					}
					return in, nil
				}
				if ic == nil {
					return h(ctx, in)
				}
				return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: rigUnaryMethod}, h)
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "WorkStream",
			ServerStreams: true,
			Handler: func(_ any, ss grpc.ServerStream) error {
				in := new(emptypb.Empty)
				if err := ss.RecvMsg(in); err != nil {
					return err
				}
				for range rigParts {
					w.do(rigParts)
					if err := ss.Context().Err(); err != nil {
						return status.FromContextError(err).Err()
					}
					if err := ss.SendMsg(in); err != nil {
						return err
					}
				}
				return nil
			},
		}},
	}
}

// rigServe serves transport on ln: the work behind g's guard for it. It
// returns what stops the server.
func rigServe(ln net.Listener, transport string, g rigGuard, work *rigWork) (stop func()) {
	if transport == rigHTTP {
		var h http.Handler = &rigHandler{work: work, g: g.http}
		if g.mw != nil {
			h = g.mw(h)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		return func() { _ = srv.Close() }
	}
	var opts []grpc.ServerOption
	if g.unary != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(g.unary), grpc.ChainStreamInterceptor(g.stream))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(rigServiceDesc(work), nil)
	go func() { _ = srv.Serve(ln) }()
	return srv.Stop
}

// TestOverloadRigServer is the server process of TestOverloadRig.
func TestOverloadRigServer(t *testing.T) {
	spec := os.Getenv(rigServerEnv)
	if spec == "" {
		t.Skip("the server process of TestOverloadRig")
	}
	var transport, name string
	var iters int64
	if _, err := fmt.Sscan(spec, &transport, &name, &iters); err != nil {
		t.Fatal(err)
	}
	work := &rigWork{}
	work.iters.Store(iters)
	var g rigGuard
	for _, p := range protections {
		if p.name == name {
			g = p.make()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := rigServe(ln, transport, g, work)
	fmt.Printf("addr %s\n", ln.Addr())
	if g.limit != nil {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		go func() {
			for now := range tick.C {
				fmt.Printf("sample %d %d\n", now.UnixNano(), g.limit())
			}
		}()
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "work "); ok {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || x <= 0 {
				t.Errorf("control: %q", sc.Text())
				continue
			}
			work.iters.Store(int64(float64(iters) * x))
		}
	}
	stop()
}

// rigSample is a limit the server read at an instant.
type rigSample struct {
	at    time.Time
	limit int
}

// rigProc is a running server process.
type rigProc struct {
	addr    string
	control io.Writer
	stop    func() // ends the process and waits for it; again: nothing
	mu      sync.Mutex
	samples []rigSample
}

// setWork sets the work per request to x times the start's.
func (p *rigProc) setWork(x float64) error {
	_, err := fmt.Fprintf(p.control, "work %g\n", x)
	return err
}

// samplesIn returns the samples taken from from to to.
func (p *rigProc) samplesIn(from, to time.Time) []rigSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s []rigSample
	for _, x := range p.samples {
		if !x.at.Before(from) && !x.at.After(to) {
			s = append(s, x)
		}
	}
	return s
}

// startRigServer starts a server process, pinned to CPU 0 when taskset is
// there; it stops at cleanup.
func startRigServer(t *testing.T, transport, name string, iters int) *rigProc {
	t.Helper()
	args := []string{os.Args[0], "-test.run=^TestOverloadRigServer$", "-test.count=1", "-test.v"}
	if ts, err := exec.LookPath("taskset"); err == nil {
		args = append([]string{ts, "-c", "0"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", rigServerEnv, transport, name, iters), "GOMAXPROCS=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &rigProc{control: stdin, stop: sync.OnceFunc(func() { _ = stdin.Close(); _ = cmd.Wait() })}
	t.Cleanup(p.stop)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "addr "); ok {
			p.addr = addr
			go p.read(sc)
			return p
		}
	}
	t.Fatalf("the server process printed no address: %v", sc.Err())
	return nil
}

// read keeps the samples the server prints until it stops.
func (p *rigProc) read(sc *bufio.Scanner) {
	for sc.Scan() {
		var ns int64
		var limit int
		if _, err := fmt.Sscanf(sc.Text(), "sample %d %d", &ns, &limit); err == nil {
			p.mu.Lock()
			p.samples = append(p.samples, rigSample{at: time.Unix(0, ns), limit: limit})
			p.mu.Unlock()
		}
	}
}

// sink keeps burn's result alive.
var sink atomic.Uint64

// burn runs n rounds of a multiply-add, about 1 ns each, yielding the
// processor every 100,000 (about 100 µs): the requests in flight share
// it, as a server's handlers do when they make calls or allocate. A loop
// that never yields would run each request to its end before the next is
// even read (Go preempts a running goroutine only after 10 ms), so the
// queue would sit in the scheduler, where no limit on requests in flight
// can see it.
func burn(n int) {
	x := uint64(n)
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407
		if i%100_000 == 99_999 {
			runtime.Gosched()
		}
	}
	sink.Add(x)
}

// calibrate returns the rounds of burn that take d here (the fastest of
// a few tries, the machine being shared).
func calibrate(d time.Duration) int {
	const n = 1 << 20
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		burn(n)
		best = min(best, time.Since(start))
	}
	return int(float64(n) * float64(d) / float64(max(best, 1)))
}
