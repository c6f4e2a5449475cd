package rls

import (
	"math"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/floodgate/floodgate/internal/fields"
)

// answer builds the response: each descriptor's status, the overall code
// and the header fields of the descriptor that decided.
func (s *Service) answer(items []item, refused bool) *rlsv3.RateLimitResponse {
	resp := &rlsv3.RateLimitResponse{
		OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses:    make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(items)),
	}
	if refused && !s.c.Shadow {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	var by *item // the descriptor whose fields the response carries
	for i := range items {
		it := &items[i]
		resp.Statuses[i] = statusOf(it, s.c.Shadow)
		if it.c == nil || !it.decided {
			continue
		}
		switch {
		case by == nil:
			by = it
		case refused:
			// The refusal that waits longest: a retry sooner fails.
			if !it.d.Allowed && (by.d.Allowed || it.d.RetryAfter > by.d.RetryAfter) {
				by = it
			}
		case it.d.Remaining < by.d.Remaining:
			by = it
		}
	}
	if by != nil {
		resp.ResponseHeadersToAdd = s.headers(by)
	}
	return resp
}

// statusOf is one descriptor's status.
func statusOf(it *item, shadow bool) *rlsv3.RateLimitResponse_DescriptorStatus {
	st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
	r := it.rule
	switch {
	case r == nil:
		return st
	case r.Unlimited:
		st.LimitRemaining = math.MaxUint32
		return st
	}
	st.CurrentLimit = &rlsv3.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: r.Unit}
	if it.refused && !r.Shadow && !shadow && it.cost > 0 {
		st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	if it.decided {
		st.LimitRemaining = uint32(min(max(it.d.Remaining, 0), math.MaxUint32))
		st.DurationUntilReset = durationpb.New(it.d.ResetAfter)
	}
	return st
}

// headers are the rate-limit fields of it's decision, in Config.Headers'
// style, as Envoy adds them to the response; sorted by name.
func (s *Service) headers(it *item) []*corev3.HeaderValue {
	h := make(map[string][]string, 6)
	d := it.d
	if s.c.Shadow || it.rule.Shadow {
		d.Allowed = true // no Retry-After for a request that goes on
	}
	fields.Put(h, fields.HTTPKeys, &d, it.c.text(d.Limit), s.c.Headers, it.c.list)
	if len(h) == 0 {
		return nil
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]*corev3.HeaderValue, 0, len(names))
	for _, k := range names {
		for _, v := range h[k] {
			out = append(out, &corev3.HeaderValue{Key: k, Value: v})
		}
	}
	return out
}
