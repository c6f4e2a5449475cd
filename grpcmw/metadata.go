package grpcmw

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// headerMD returns the response header metadata for d: the values httpmw
// writes as headers for the same Decision (the same formatter), under
// lower-case keys. list is the deciding limiter's RateLimit-Policy list
// when it is a stack ("" otherwise).
func (l *Limiter) headerMD(d core.Decision, list string) metadata.MD {
	var pt *fields.PolicyText
	if l.o.headers != HeadersNone {
		pt = &l.policies.Get(d.Limit).PolicyText
	}
	if l.o.headers == HeadersNone && d.Allowed {
		return nil
	}
	md := make(metadata.MD, 6)
	fields.Put(md, fields.MetadataKeys, &d, pt, l.o.headers, list)
	return md
}

// sink is where a call's response metadata goes: its grpc.ServerStream,
// or for unary calls the grpc.ServerTransportStream in its context. Outside
// a gRPC server (a handler called directly) both are nil and metadata is
// dropped. Errors are ignored: setting headers fails only once they are
// sent, which a call that is just starting has not done.
type sink struct {
	ss grpc.ServerStream
	ts grpc.ServerTransportStream
}

func (k sink) setHeader(md metadata.MD) {
	switch {
	case len(md) == 0:
	case k.ss != nil:
		_ = k.ss.SetHeader(md)
	case k.ts != nil:
		_ = k.ts.SetHeader(md)
	}
}

// setTrailer adds md to the trailer. grpc appends to trailer values rather
// than replacing them, so a stream that may be refused many times sets its
// pushback once, when it ends (see meteredStream).
func (k sink) setTrailer(md metadata.MD) {
	switch {
	case k.ss != nil:
		k.ss.SetTrailer(md)
	case k.ts != nil:
		_ = k.ts.SetTrailer(md)
	}
}
