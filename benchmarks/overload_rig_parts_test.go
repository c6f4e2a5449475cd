package benchmarks

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/go-kratos/aegis/ratelimit"

	"github.com/floodgate/floodgate/benchmarks/internal/rigchart"
	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// TestRigCallers checks, in this process and in well under a second,
// that the rig's generator classes each server's answers as the report
// counts them: served calls on every transport, each protection's shed
// answer (floodgate's through grpcmw, kratos's, failsafe-go's through
// failsafegrpc and the stream interceptor) as a shed, and a call past
// its deadline as a timeout. The rig itself stays opt-in.
func TestRigCallers(t *testing.T) {
	work := &rigWork{}
	work.iters.Store(1000)
	full, err := overload.NewAdaptive(overload.AdaptiveConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := full.Acquire(overload.Normal, 1); !ok {
		t.Fatal("the limit of 1 is taken already")
	}
	static := core.MustNew(core.InFlight(1).WithAlgorithm(core.Concurrency))
	if d, err := static.Allow(context.Background(), "all", 1); err != nil || !d.Allowed {
		t.Fatal("the static limit of 1 is taken already")
	}
	failsafeFull := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1, 1).Build()
	if _, ok := failsafeFull.TryAcquirePermit(); !ok {
		t.Fatal("failsafe-go's limit of 1 is taken already")
	}
	shedAll := guard(func() (func(bool), bool) { return nil, false })
	kratosFull := kratosGuard(refuseAll{})
	for _, c := range []struct {
		name, transport string
		g               rigGuard
		want            outcome
	}{
		{"http/none", rigHTTP, rigGuard{}, answered},
		{"http/shed", rigHTTP, rigGuard{http: shedAll}, shedOut},
		{"unary/none", rigGRPCUnary, rigGuard{}, answered},
		{"stream/none", rigGRPCStream, rigGuard{}, answered},
		{"http/floodgate", rigHTTP, floodgateGuard(full), shedOut},
		{"http/static", rigHTTP, floodgateGuard(static), shedOut},
		{"unary/floodgate", rigGRPCUnary, floodgateGuard(full), shedOut},
		{"stream/floodgate", rigGRPCStream, floodgateGuard(full), shedOut},
		{"unary/kratos", rigGRPCUnary, kratosFull, shedOut},
		{"stream/kratos", rigGRPCStream, kratosFull, shedOut},
		{"unary/failsafe", rigGRPCUnary, failsafeGuard(failsafeFull), shedOut},
		{"stream/failsafe", rigGRPCStream, failsafeGuard(failsafeFull), shedOut},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := serveRig(t, c.transport, c.g, work)
			call, closeCall := newCaller(c.transport, addr)
			defer closeCall()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if got := call(ctx); got != c.want {
				t.Errorf("outcome %d, want %d", got, c.want)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		slow := &rigWork{}
		// Three times the deadline's worth of work (handlers do not stop
		// when their caller goes).
		slow.iters.Store(int64(calibrate(150 * time.Millisecond)))
		for _, tr := range rigTransports {
			call, closeCall := newCaller(tr, serveRig(t, tr, rigGuard{}, slow))
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			if got := call(ctx); got != timedOut {
				t.Errorf("%s: outcome %d, want a timeout (%d)", tr, got, timedOut)
			}
			cancel()
			closeCall()
		}
	})
}

// refuseAll is an aegis limiter past its bound.
type refuseAll struct{}

func (refuseAll) Allow() (ratelimit.DoneFunc, error) { return nil, ratelimit.ErrLimitExceed }

// serveRig serves transport on loopback in this process, as the server
// process does, until the test ends.
func serveRig(t *testing.T, transport string, g rigGuard, work *rigWork) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rigServe(ln, transport, g, work))
	return ln.Addr().String()
}

func TestRigBackIn(t *testing.T) {
	rows := make([]rigchart.ChangeRow, 60)
	for i := range rows {
		rows[i].T = float64(i) / 10
		if i >= 35 {
			rows[i].Goodput = 100
		}
	}
	// From 3.5 s the 500 ms mean is 60, then 80 from 3.6 s on.
	if got := backIn(rows, 3*time.Second, 100); got != "600ms" {
		t.Errorf("backIn = %s, want 600ms", got)
	}
	// Two 100 ms with nothing at 4.5 s: the mean is below 80 from 4.4 to
	// 4.7 s, and holds from 4.8 s.
	rows[45].Goodput, rows[46].Goodput = 0, 0
	if got := backIn(rows, 3*time.Second, 100); got != "1.8s" {
		t.Errorf("backIn with a dip = %s, want 1.8s", got)
	}
	if got := backIn(rows, 3*time.Second, 130); got != "-" {
		t.Errorf("backIn below 80 %% throughout = %s, want -", got)
	}
}
