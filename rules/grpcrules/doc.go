// Package grpcrules enforces a rules file's limits on gRPC calls: unary
// and stream server interceptors driven by a rules.Set, so that one file
// can limit an HTTP API and a gRPC service, and a reload changes both.
//
//	set, err := rules.Watch("rules.yaml")
//	...
//	ic, err := grpcrules.New(set, grpcrules.WithGRPCOptions(grpcmw.WithObserver(metrics)))
//	...
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(ic.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(ic.StreamServerInterceptor()),
//	)
//
// A call is checked by the first rule, in file order, whose grpc patterns
// match its full method, through a grpcmw.Limiter made for that rule with
// the rule's limiter, key and cost; a call no rule matches goes on
// untouched. The rule's key parts mean, for gRPC: ip the peer's address
// (grpcmw.KeyByPeerIP, or the key [WithKey] registers as "ip"), header:NAME the
// incoming metadata of that name in lower case, method the full method,
// global one key for all, and a name registered with [WithKey]. The
// grpcmw Limiters are made for every Table the Set compiles, before it
// takes effect (rules.Set.Attach), so a file naming a key that is not
// registered here is rejected like any other bad file and the rules in
// force stay.
//
// Like grpcmw, each rule's Limiter skips the health and reflection
// services (grpcmw.SkipInfrastructure) unless a grpcmw.WithSkip among the
// options replaces that default: grpcmw.WithSkip(nil) limits them too.
package grpcrules
