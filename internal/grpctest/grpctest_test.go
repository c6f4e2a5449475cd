package grpctest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/internal/grpctest"
)

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestServe: the server options reach the server, the dial options the
// client, Check returns the server's metadata, Chat exchanges as many
// messages as asked, and both ends stop with the test.
func TestServe(t *testing.T) {
	t.Parallel()
	var dialed atomic.Int32
	var e *grpctest.Env
	t.Run("serve", func(t *testing.T) {
		e = grpctest.Serve(t, []grpc.ServerOption{
			grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				_ = grpc.SetHeader(ctx, metadata.Pairs("x-h", "1"))
				_ = grpc.SetTrailer(ctx, metadata.Pairs("x-t", "2"))
				return h(ctx, req)
			}),
			grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if info.FullMethod != grpctest.ChatMethod {
					t.Errorf("stream method %s, want %s", info.FullMethod, grpctest.ChatMethod)
				}
				return h(srv, ss)
			}),
		}, grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			dialed.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
		ctx := callCtx(t)
		header, trailer, err := e.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if header.Get("x-h")[0] != "1" || trailer.Get("x-t")[0] != "2" {
			t.Errorf("header %v, trailer %v", header, trailer)
		}
		if n := dialed.Load(); n != 1 {
			t.Errorf("the client interceptor saw %d calls, want 1", n)
		}
		for _, n := range []int{0, 1, 5} {
			if sent, err := e.Chat(ctx, n); sent != n || err != nil {
				t.Errorf("Chat(%d) = %d, %v", n, sent, err)
			}
		}
	})
	// The subtest's cleanups have run: the connection is closed.
	_, _, err := e.Check(callCtx(t))
	if status.Code(err) != codes.Canceled || !strings.Contains(err.Error(), "closing") {
		t.Errorf("Check after the test: %v, want Canceled (connection closing)", err)
	}
}

// TestChatFails: Chat reports how many exchanges succeeded before the
// stream failed: here the server refuses the second message.
func TestChatFails(t *testing.T) {
	t.Parallel()
	e := grpctest.Serve(t, []grpc.ServerOption{grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, &refuseSecond{ServerStream: ss})
	})})
	sent, err := e.Chat(callCtx(t), 3)
	if sent != 1 || status.Code(err) != codes.ResourceExhausted {
		t.Errorf("Chat = %d, %v; want 1, ResourceExhausted", sent, err)
	}
}

// refuseSecond fails the stream when the second message arrives.
type refuseSecond struct {
	grpc.ServerStream
	n int
}

func (s *refuseSecond) RecvMsg(m any) error {
	if s.n++; s.n == 2 {
		return status.Error(codes.ResourceExhausted, "second message")
	}
	return s.ServerStream.RecvMsg(m)
}
