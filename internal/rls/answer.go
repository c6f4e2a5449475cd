package rls

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
	"github.com/floodgate/floodgate/internal/pipeline"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// answer builds the response to req: each descriptor's status, the
// overall code, the header fields and, when asked for, the dynamic
// metadata.
func (s *Service) answer(req *rlsv3.RateLimitRequest, items []item, refused bool) *rlsv3.RateLimitResponse {
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
		resp.Statuses[i] = s.statusOf(it)
		if it.c == nil || !it.decided && !it.drained {
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
	if s.c.Headers != core.HeadersNone {
		resp.ResponseHeadersToAdd = s.headers(items, by, refused)
	}
	if s.c.UpstreamHeaders != nil {
		resp.ResponseHeadersToAdd = s.upstreamHeaders(resp.ResponseHeadersToAdd, items, resp.Statuses)
	}
	if s.c.DynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, items, resp.Statuses)
	}
	return resp
}

// statusOf is one descriptor's status. Its remaining count and reset are
// its limiter's, the reset in whole seconds rounded up (as
// envoyproxy/ratelimit's: the seconds until the window ends); a rule that
// refuses every request has its unit's window.
func (s *Service) statusOf(it *item) *rlsv3.RateLimitResponse_DescriptorStatus {
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
	if it.refused && !r.Shadow {
		st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	switch {
	case it.decided || it.drained:
		st.LimitRemaining = uint32(min(max(it.d.Remaining, 0), math.MaxUint32))
		st.DurationUntilReset = &durationpb.Duration{Seconds: fields.CeilSeconds(it.d.ResetAfter)}
	case r.DenyAll && !it.back:
		if sec := s.windowLeft(r.Unit); sec > 0 {
			st.DurationUntilReset = &durationpb.Duration{Seconds: sec}
		}
	}
	return st
}

// windowLeft is the whole seconds until the current window of unit
// ends, windows starting at the Unix epoch, as envoyproxy/ratelimit's
// are; 0 for an unknown unit.
func (s *Service) windowLeft(unit rlsv3.RateLimitResponse_RateLimit_Unit) int64 {
	p := int64(rlsconfig.Unit(unit).Period().Seconds())
	if p <= 0 {
		return 0
	}
	now := s.c.Clock.Now() / 1e9
	return p - ((now%p)+p)%p
}

// headers are the rate-limit fields of by's decision, in Config.Headers'
// style, as Envoy adds them to the response, sorted by name. A request
// refused by the failure mode alone (no limiter refused it) gets
// Retry-After: 1, as the middleware answers a store failure.
func (s *Service) headers(items []item, by *item, refused bool) []*corev3.HeaderValue {
	if refused && !s.c.Shadow && (by == nil || by.d.Allowed) && failedClosed(items) {
		return []*corev3.HeaderValue{{Key: fields.RetryAfter.HTTP(), Value: "1"}}
	}
	if by == nil {
		return nil
	}
	h := make(map[string][]string, 6)
	d := by.d
	if s.c.Shadow || by.rule.Shadow {
		d.Allowed = true // no Retry-After for a request that goes on
	}
	fields.Put(h, fields.HTTPKeys, &d, by.c.text(d.Limit), s.c.Headers, by.c.list)
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

// failedClosed reports whether a store failure refused an enforced
// descriptor.
func failedClosed(items []item) bool {
	for i := range items {
		if it := &items[i]; it.refused && !it.rule.Shadow && it.err != nil && pipeline.Classify(it.err) == core.OutcomeStoreError {
			return true
		}
	}
	return false
}

// upstreamHeaders appends envoyproxy/ratelimit's three fields to h, from
// the status it takes them from: the last one over the limit whose rule
// is not in quota mode, else the first with the least left among those
// with a limit; none when no status has a limit.
func (s *Service) upstreamHeaders(h []*corev3.HeaderValue, items []item, sts []*rlsv3.RateLimitResponse_DescriptorStatus) []*corev3.HeaderValue {
	var by *rlsv3.RateLimitResponse_DescriptorStatus
	least := uint32(math.MaxUint32)
	for i, st := range sts {
		if st.GetCurrentLimit() != nil && st.GetLimitRemaining() < least {
			by, least = st, st.GetLimitRemaining()
		}
		if r := items[i].rule; st.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT && r != nil && !s.quota(r) {
			by, least = st, 0
		}
	}
	if by == nil {
		return h
	}
	reset := by.GetDurationUntilReset().GetSeconds()
	if by.GetDurationUntilReset() == nil {
		reset = s.windowLeft(by.GetCurrentLimit().GetUnit())
	}
	n := s.c.UpstreamHeaders
	return append(h,
		&corev3.HeaderValue{Key: n.Limit, Value: strconv.FormatUint(uint64(by.GetCurrentLimit().GetRequestsPerUnit()), 10)},
		&corev3.HeaderValue{Key: n.Remaining, Value: strconv.FormatUint(uint64(by.GetLimitRemaining()), 10)},
		&corev3.HeaderValue{Key: n.Reset, Value: strconv.FormatInt(reset, 10)},
	)
}

// dynamicMetadata is the response's dynamic_metadata, as
// envoyproxy/ratelimit builds it (see Config.DynamicMetadata).
func dynamicMetadata(req *rlsv3.RateLimitRequest, items []item, sts []*rlsv3.RateLimitResponse_DescriptorStatus) *structpb.Struct {
	f := make(map[string]*structpb.Value, 4)
	f["domain"] = structpb.NewStringValue(req.GetDomain())
	descs := make([]*structpb.Value, 0, len(req.GetDescriptors()))
	for _, d := range req.GetDescriptors() {
		if d != nil {
			descs = append(descs, structpb.NewStructValue(descriptorStruct(d)))
		}
	}
	f["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: descs})
	if h := req.GetHitsAddend(); h != 0 {
		f["hitsAddend"] = structpb.NewNumberValue(float64(h))
	}
	passed := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := range items {
		r := items[i].rule
		if r == nil || r.Unlimited || r.Metadata == nil || sts[i].GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT {
			continue
		}
		merge(passed, r.Metadata)
	}
	if len(passed.Fields) > 0 {
		f["metadata"] = structpb.NewStructValue(passed)
	}
	return &structpb.Struct{Fields: f}
}

// descriptorStruct is one descriptor in the dynamic metadata: its
// entries as "key=value", its limit override's text and its hits_addend,
// when set.
func descriptorStruct(d *rlcommon.RateLimitDescriptor) *structpb.Struct {
	entries := make([]*structpb.Value, 0, len(d.GetEntries()))
	for _, e := range d.GetEntries() {
		entries = append(entries, structpb.NewStringValue(fmt.Sprintf("%s=%s", e.GetKey(), e.GetValue())))
	}
	f := map[string]*structpb.Value{"entries": structpb.NewListValue(&structpb.ListValue{Values: entries})}
	if l := d.GetLimit(); l != nil {
		f["limit"] = structpb.NewStringValue(l.String())
	}
	if h := d.GetHitsAddend(); h != nil {
		f["hitsAddend"] = structpb.NewNumberValue(float64(h.GetValue()))
	}
	return &structpb.Struct{Fields: f}
}

// merge adds src's fields to dst: a key dst has keeps its value, but two
// mappings are merged. What it adds is a copy, so that a later merge
// never changes a rule's metadata.
func merge(dst, src *structpb.Struct) {
	for k, v := range src.GetFields() {
		if have, ok := dst.Fields[k]; ok {
			if a, b := have.GetStructValue(), v.GetStructValue(); a != nil && b != nil {
				merge(a, b)
			}
			continue
		}
		dst.Fields[k] = proto.Clone(v).(*structpb.Value)
	}
}
