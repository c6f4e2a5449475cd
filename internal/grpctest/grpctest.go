package grpctest

import (
	"context"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// ChatMethod is the full method name of [ChatService]'s one stream.
const ChatMethod = "/floodgate.test.Chat/Chat"

// ChatService is a bidirectional stream service written by hand, so that
// tests need no generated code: every request message (a
// HealthCheckRequest) is answered with one HealthCheckResponse saying
// SERVING, until the client closes its side.
var ChatService = grpc.ServiceDesc{
	ServiceName: "floodgate.test.Chat",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Chat",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(_ any, ss grpc.ServerStream) error {
			for {
				var req healthpb.HealthCheckRequest
				if err := ss.RecvMsg(&req); err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
				if err := ss.SendMsg(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
					return err
				}
			}
		},
	}},
}

// Env is a running server with the health service and [ChatService], and
// a client connected to it.
type Env struct {
	// Conn is the client's connection to the server.
	Conn *grpc.ClientConn
	// Health is a health client on Conn.
	Health healthpb.HealthClient

	srv  *grpc.Server
	done chan struct{} // closed when Serve has returned
}

// Serve starts a server with srvOpts on 127.0.0.1, with the health service
// and [ChatService], and a client connected to it with dialOpts (after
// insecure transport credentials, which dialOpts may replace). Both stop
// when the test ends; a failure to start fails the test.
func Serve(tb testing.TB, srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *Env {
	tb.Helper()
	e, err := Start(srvOpts, dialOpts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

// Start is [Serve] outside a test: the caller stops the server and the
// client with [Env.Close].
func Start(srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) (*Env, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(srvOpts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	srv.RegisterService(&ChatService, struct{}{})
	e := &Env{srv: srv, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		_ = srv.Serve(lis)
	}()
	e.Conn, err = grpc.NewClient(lis.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		srv.Stop()
		<-e.done
		return nil, err
	}
	e.Health = healthpb.NewHealthClient(e.Conn)
	return e, nil
}

// Close closes the client connection, stops the server at once (calls in
// progress end) and waits for it to finish.
func (e *Env) Close() {
	_ = e.Conn.Close()
	e.srv.Stop()
	<-e.done
}

// Check calls Health.Check and returns its header and trailer metadata.
func (e *Env) Check(ctx context.Context) (header, trailer metadata.MD, err error) {
	_, err = e.Health.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	return header, trailer, err
}

// Chat opens a [ChatService] stream and exchanges n messages (one sent,
// one received), returning how many exchanges succeeded and the error of
// the first that failed.
func (e *Env) Chat(ctx context.Context, n int) (sent int, err error) {
	cs, err := e.Conn.NewStream(ctx, &ChatService.Streams[0], ChatMethod)
	if err != nil {
		return 0, err
	}
	defer func() { _ = cs.CloseSend() }()
	for i := range n {
		if err := cs.SendMsg(&healthpb.HealthCheckRequest{}); err != nil && err != io.EOF {
			return i, err
		}
		var resp healthpb.HealthCheckResponse
		if err := cs.RecvMsg(&resp); err != nil {
			return i, err
		}
	}
	return n, nil
}
