package grpcclient_test

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floodgate/floodgate/grpcclient"
)

// A client that waits out refusals: it retries a call refused with a retry
// delay, waiting the delay plus jitter, at most three times in all and never
// past the call's deadline.
func ExampleUnaryClientInterceptor() {
	retry, err := grpcclient.UnaryClientInterceptor(grpcclient.WithMaxAttempts(3))
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient("dns:///api.example:443",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(retry))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	// Calls on cc now wait out rate-limit refusals.
}
