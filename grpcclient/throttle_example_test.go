package grpcclient_test

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floodgate/floodgate/grpcclient"
	"github.com/floodgate/floodgate/overload"
)

// A client that stops hammering a backend that sheds load: once the
// backend refuses too many calls (RESOURCE_EXHAUSTED, UNAVAILABLE,
// DEADLINE_EXCEEDED), the client rejects some locally with UNAVAILABLE,
// matching overload.ErrThrottled, retries included. One throttle per
// backend, shared by both interceptors (TestThrottleUnaryAndStream runs
// this against a shedding server).
func ExampleWithThrottle() {
	th, err := overload.NewThrottle(overload.ThrottleConfig{})
	if err != nil {
		panic(err)
	}
	unary, err := grpcclient.UnaryClientInterceptor(grpcclient.WithThrottle(th))
	if err != nil {
		panic(err)
	}
	stream, err := grpcclient.StreamClientInterceptor(grpcclient.WithThrottle(th))
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient("dns:///api.example:443",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
}
