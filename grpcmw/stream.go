package grpcmw

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// meteredStream charges every message the client sends on a stream.
type meteredStream struct {
	grpc.ServerStream
	l      *Limiter
	method string
	lim    core.Limiter
	key    string
	// pushback is the latest refusal's grpc-retry-pushback-ms, set in the
	// trailer once when the stream ends: grpc appends every SetTrailer, and
	// a client refused message after message must not receive a value per
	// refusal. Only the handler's goroutine calls RecvMsg.
	pushback string
}

// RecvMsg receives a message and charges it; a refused message is dropped
// and RecvMsg returns the refusal's status.
func (s *meteredStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	ctx := s.Context()
	var res pipeline.Result
	s.l.p.Decide(ctx, s.lim, s.key, 1, &res)
	switch {
	case res.Err == nil && !res.Skipped && !res.Decision.Allowed:
		s.pushback = pushbackMillis(res.Decision.RetryAfter)
	case res.Outcome == core.OutcomeStoreError && !res.FailedOpen:
		s.pushback = "1000"
	}
	// No sink: header metadata has gone with the first message, and the
	// trailer is set once by finish.
	return s.l.answer(ctx, s.method, sink{}, &res, false)
}

// finish sets the stream's trailer after its handler returned.
func (s *meteredStream) finish() {
	if s.pushback != "" {
		s.ServerStream.SetTrailer(metadata.MD{PushbackKey: {s.pushback}})
	}
}
