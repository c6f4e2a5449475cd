package grpcmw

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Status messages. They are fixed: never an error's text, which can hold
// internal details (addresses, store names, the client's own metadata).
const (
	// messageDenied is the message of a refused call's ResourceExhausted
	// status.
	messageDenied = "rate limit exceeded"
	// messageUnavailable is the message of the ResourceExhausted status of a
	// call refused because the limiter's store failed (FailClosed).
	messageUnavailable = "rate limiter unavailable, retry later"
	// messageBadKey is the message of the InvalidArgument status of a call
	// that carries no usable key (core.ErrBadKey: missing or malformed
	// metadata).
	messageBadKey = "the call carries no usable rate-limit key"
	// messageKey is the message of the Internal status of a call whose key
	// function failed on the server's side.
	messageKey = "rate limiter could not identify the caller"
	// messageCost is the message of the Internal status of a call whose cost
	// function failed or returned a negative cost.
	messageCost = "rate limiter could not price the call"
	// messageInvalidCost is the message of the InvalidArgument status of a
	// call whose cost is invalid.
	messageInvalidCost = "the call's rate-limit cost is invalid"
	// messageCostTooLarge is the message of the InvalidArgument status of a
	// call that costs more than the limit can ever admit at once.
	messageCostTooLarge = "the call costs more than the rate limit can ever admit at once; retrying will not help"
	// messageShed is the message of the Unavailable status of a call an
	// overload guard shed (core.Decision.Shed).
	messageShed = "service overloaded, retry later"
	// messageInternal is the message of the Internal status of a call whose
	// core.Limiter failed in a way it does not classify (neither
	// core.ErrStore nor core.ErrInvalidCost).
	messageInternal = "rate limiter failed"
)

// ErrorInfo identification of refusals.
const (
	// Domain is the ErrorInfo domain of every refusal.
	Domain = "floodgate"
	// ReasonRateLimited is the ErrorInfo reason of a call refused by a limit.
	// It tells a rate-limit refusal apart from the other causes of
	// ResourceExhausted, such as a message over the size limit.
	ReasonRateLimited = "RATE_LIMITED"
	// ReasonUnavailable is the ErrorInfo reason of a call refused because
	// the limiter's store failed (FailClosed).
	ReasonUnavailable = "RATE_LIMITER_UNAVAILABLE"
	// ReasonOverloaded is the ErrorInfo reason of a call an overload guard
	// shed (core.Decision.Shed): the service, not the caller's quota, was
	// short.
	ReasonOverloaded = "OVERLOADED"
)

// PushbackKey is the trailer metadata key of a refusal's retry delay in
// whole milliseconds (gRFC A6): grpc-go's own retry policy and other gRPC
// clients read it.
const PushbackKey = "grpc-retry-pushback-ms"

// The answers to calls for which no decision could be made are the same
// every time, so they are made once.
var (
	statusBadKey       = status.Error(codes.InvalidArgument, messageBadKey)
	statusKey          = status.Error(codes.Internal, messageKey)
	statusCost         = status.Error(codes.Internal, messageCost)
	statusInvalidCost  = status.Error(codes.InvalidArgument, messageInvalidCost)
	statusCostTooLarge = status.Error(codes.InvalidArgument, messageCostTooLarge)
	statusInternal     = status.Error(codes.Internal, messageInternal)
	statusUnavailable  = status.ErrorProto(&spb.Status{
		Code:    int32(codes.ResourceExhausted),
		Message: messageUnavailable,
		Details: []*anypb.Any{
			mustAny(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}),
			mustAny(&errdetails.ErrorInfo{Reason: ReasonUnavailable, Domain: Domain}),
		},
	})
)

// infoOverloaded is the ErrorInfo of every shed.
var infoOverloaded = mustAny(&errdetails.ErrorInfo{Reason: ReasonOverloaded, Domain: Domain})

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil { // cannot happen: the messages are well-formed
		panic(err)
	}
	return a
}

// errorStatus answers a call for which no decision could be made, by the
// kind of err, as httpmw answers the same error (its statuses in
// brackets):
//
//   - no usable key (core.ErrBadKey): InvalidArgument (400/431): the call
//     must carry one.
//   - the key function failed otherwise: Internal (500). It is a bug or a
//     misconfiguration, not the client's doing, and its text is not shown.
//   - an invalid cost (core.ErrInvalidCost): InvalidArgument (400; 413 for
//     a cost above what the limit can ever admit, whose message says that
//     retrying will not help). ResourceExhausted would promise a retry that
//     cannot work; Internal or Unavailable would invite retries.
//   - the cost function failed or returned a negative cost: Internal (500).
//   - the store failed (FailClosed): ResourceExhausted with a one-second
//     RetryInfo (429 with Retry-After: 1), see FailClosed.
//   - a shaped call whose context ended: its context's status (Canceled or
//     DeadlineExceeded); its units were refunded.
func (l *Limiter) errorStatus(ctx context.Context, s sink, err error) error {
	switch pipeline.Classify(err) {
	case core.OutcomeBadKey:
		return statusBadKey
	case core.OutcomeBadCost:
		if errors.Is(err, core.ErrCostTooLarge) {
			return statusCostTooLarge
		}
		return statusInvalidCost
	case core.OutcomeStoreError:
		// What httpmw sends: Retry-After: 1, no rate-limit fields (no quota
		// was read).
		s.setHeader(metadata.MD{fields.RetryAfter.Metadata(): {"1"}})
		s.setTrailer(metadata.MD{PushbackKey: {"1000"}})
		return statusUnavailable
	case core.OutcomeCanceled:
		return status.FromContextError(ctx.Err()).Err()
	}
	switch {
	case errors.Is(err, core.ErrKey):
		return statusKey
	case errors.Is(err, core.ErrCost):
		return statusCost
	}
	return statusInternal
}

// policy holds what a call's answer says about one Limit that does not
// change per call, made once per policy: the fields' text, and the
// QuotaFailure and usual ErrorInfo details of a refusal.
type policy struct {
	fields.PolicyText
	quota *anypb.Any // QuotaFailure
	info0 *anypb.Any // ErrorInfo with remaining 0, the usual case
}

func newPolicy(l core.Limit) *policy {
	p := &policy{PolicyText: fields.NewPolicyText(l)}
	desc := p.Events + " per " + l.Period.String()
	if l.Burst != 0 && l.Burst != l.Events {
		desc += ", burst " + strconv.Itoa(l.Burst)
	}
	p.quota = mustAny(&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     p.Name,
		Description: desc,
	}}})
	p.info0 = p.errorInfo(0)
	return p
}

// errorInfo is the ErrorInfo of a denial: the reason, and in its metadata
// the policy, limit and remaining quota, with the values of the
// x-ratelimit-limit and x-ratelimit-remaining fields.
func (p *policy) errorInfo(remaining int) *anypb.Any {
	return mustAny(&errdetails.ErrorInfo{
		Reason: ReasonRateLimited,
		Domain: Domain,
		Metadata: map[string]string{
			"policy":    p.Name,
			"limit":     p.Events,
			"remaining": strconv.Itoa(max(remaining, 0)),
		},
	})
}

// denied returns the status error of a refusal by d: ResourceExhausted,
// messageDenied, and RetryInfo, QuotaFailure and ErrorInfo details; for
// a shed, Unavailable (what gRPC clients retry, and what an overloaded
// server answers), messageShed, RetryInfo and ErrorInfo (no quota was
// exceeded).
func (l *Limiter) denied(d core.Decision) error {
	if d.Shed {
		return status.ErrorProto(&spb.Status{
			Code:    int32(codes.Unavailable),
			Message: messageShed,
			Details: []*anypb.Any{
				mustAny(&errdetails.RetryInfo{RetryDelay: durationpb.New(max(d.RetryAfter, time.Nanosecond))}),
				infoOverloaded,
			},
		})
	}
	p := l.policies.Get(d.Limit)
	info := p.info0
	if d.Remaining > 0 {
		info = p.errorInfo(d.Remaining)
	}
	// RetryInfo carries the exact RetryAfter, which a core.Limiter keeps
	// above 0 on every denial; a misbehaving one still never says "now".
	retry := max(d.RetryAfter, time.Nanosecond)
	return status.ErrorProto(&spb.Status{
		Code:    int32(codes.ResourceExhausted),
		Message: messageDenied,
		Details: []*anypb.Any{
			mustAny(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}),
			p.quota,
			info,
		},
	})
}

// pushbackMillis is grpc-retry-pushback-ms for a denial: RetryAfter in
// whole milliseconds, rounded up (a client waiting that long is never
// early), at least 1.
func pushbackMillis(d time.Duration) string {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(max(ms, 1), 10)
}

// ending is how a call whose handler returned err ended, for the limits
// that learn from it (core.Ending): dropped when it ran out of time or
// what it called was out of capacity (DeadlineExceeded, Unavailable,
// ResourceExhausted), done otherwise: a panic, which leaves err nil, and a
// client gone (Canceled), whose latency is a lower bound of the service's
// and, on a server without deadlines, the only sign that it is slow.
func ending(ctx context.Context, err error) core.Ending {
	if e := pipeline.Ending(ctx.Err()); e != core.EndDone {
		return e
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted:
		return core.EndDropped
	}
	return core.EndDone
}
