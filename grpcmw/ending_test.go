package grpcmw_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestLeaseEndings: a call's lease is told how the call ended, from the
// handler's status and the call's context: dropped for DeadlineExceeded,
// Unavailable and ResourceExhausted (it ran out of time, or what it
// called was out of capacity), done otherwise, Canceled and a client gone
// included (measured), on unary calls and streams alike.
func TestLeaseEndings(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		err  error
		want core.Ending
	}{
		{"ok", context.Background(), nil, core.EndDone},
		{"application error", context.Background(), status.Error(codes.NotFound, "no such row"), core.EndDone},
		{"plain error", context.Background(), errors.New("boom"), core.EndDone},
		{"deadline exceeded", context.Background(), status.Error(codes.DeadlineExceeded, "slow"), core.EndDropped},
		{"unavailable", context.Background(), status.Error(codes.Unavailable, "downstream shed"), core.EndDropped},
		{"resource exhausted", context.Background(), status.Error(codes.ResourceExhausted, "quota"), core.EndDropped},
		{"canceled status", context.Background(), status.Error(codes.Canceled, "gone"), core.EndDone},
		{"client gone", canceled, nil, core.EndDone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim := &coretest.Endings{}
			l := grpcmw.MustNew(lim, grpcmw.Constant("k"), limitAll)
			_, _ = l.UnaryServerInterceptor()(tt.ctx, nil, &grpc.UnaryServerInfo{FullMethod: mCheck},
				func(context.Context, any) (any, error) { return nil, tt.err })
			if got := lim.Take(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("unary: endings %v, want [%v]", got, tt.want)
			}
			ss := &fakeStream{ctx: tt.ctx}
			_ = l.StreamServerInterceptor()(nil, ss, &grpc.StreamServerInfo{FullMethod: mCheck},
				func(any, grpc.ServerStream) error { return tt.err })
			if got := lim.Take(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("stream: endings %v, want [%v]", got, tt.want)
			}
		})
	}
}
