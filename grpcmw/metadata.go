package grpcmw

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// nearLimit reports whether d leaves at most a tenth of its policy's burst
// (Events when Burst is 0), rounded down: 10 or fewer of a burst of 100,
// none left of a burst under 10.
func nearLimit(d *core.Decision) bool {
	quota := d.Limit.Burst
	if quota <= 0 {
		quota = d.Limit.Events
	}
	return d.Remaining <= quota/10
}

// headerMD returns the response header metadata for d: the values httpmw
// writes as headers for the same Decision (the same formatter), under
// lower-case keys, or nil when the style sends none for d. list is the
// deciding limiter's RateLimit-Policy list when it is a stack ("" otherwise).
func (l *Limiter) headerMD(d core.Decision, list string) metadata.MD {
	style := l.o.Headers // HeadersBoth unless WithHeaders said otherwise
	if !l.o.HeadersSet && d.Allowed && !nearLimit(&d) {
		// The default: gRPC clients rarely read rate-limit metadata on
		// success, and five fields on every call cost more than the
		// decision (grpc joins and encodes each), so only refusals and
		// admissions near the limit carry them.
		return nil
	}
	if style == core.HeadersNone && d.Allowed {
		return nil
	}
	var pt *fields.PolicyText
	if style != core.HeadersNone {
		pt = &l.policies.Get(d.Limit).PolicyText
	}
	md := make(metadata.MD, 6)
	fields.Put(md, fields.MetadataKeys, &d, pt, style, list)
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
