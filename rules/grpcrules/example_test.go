package grpcrules_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/rules"
	"github.com/floodgate/floodgate/rules/grpcrules"
)

// One rule for a gRPC method; the interceptor is called here directly, as
// a grpc.Server would call it, for a client at 192.0.2.7.
func Example() {
	set, err := rules.New("rules.yaml", []byte(`rules:
  - name: query
    match: {grpc: ["/pkg.Search/*"]}
    limit: "2/min"
`), rules.WithOnReload(func(error) {}),
		rules.WithCoreOptions(core.WithClock(coretest.NewClock(time.Unix(1_700_000_000, 0))))) // a clock that stands still
	if err != nil {
		fmt.Println(err)
		return
	}
	ic, err := grpcrules.New(set)
	if err != nil {
		fmt.Println(err)
		return
	}
	unary := ic.UnaryServerInterceptor() // grpc.NewServer(grpc.ChainUnaryInterceptor(unary))
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4000}})
	handler := func(context.Context, any) (any, error) { return "results", nil }
	for _, m := range []string{"/pkg.Search/Query", "/pkg.Search/Query", "/pkg.Search/Suggest", "/pkg.Other/Ping"} {
		_, err := unary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: m}, handler)
		fmt.Println(m, status.Code(err))
	}
	// Output:
	// /pkg.Search/Query OK
	// /pkg.Search/Query OK
	// /pkg.Search/Suggest ResourceExhausted
	// /pkg.Other/Ping OK
}
