// Package grpctest starts real gRPC servers for the module's tests
// (internal: test support, not API): a server on a free 127.0.0.1 port
// with the health service and a hand-written bidirectional stream
// ([ChatService]), and a client connected to it. The server options say
// what the test puts in front of the services, typically a limiter's
// interceptors:
//
//	func TestDeny(t *testing.T) {
//		e := grpctest.Serve(t, []grpc.ServerOption{
//			grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
//			grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
//		})
//		header, trailer, err := e.Check(ctx) // a unary call
//		sent, err := e.Chat(ctx, 3)          // a stream of 3 exchanges
//		...
//	}
//
// Serve stops both ends in t.Cleanup; [Start] and [Env.Close] do the same
// outside a test.
package grpctest
