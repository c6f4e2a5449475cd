package rls

import (
	"math"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/floodgate/floodgate/internal/rlsstats"
)

// Stats hears envoyproxy/ratelimit's per-rule statistics (Config.Stats):
// for each descriptor of a request that a rule limits (not unlimited, not
// replaced, not giving hits back), once the request is answered, the
// increments of the rule's counters, under the rule's key. It is called
// on the request path, concurrently. Every rlsstats.Sink is one.
type Stats interface {
	// Count adds c to the counters of the rule named key: the domain
	// and the key path as envoyproxy/ratelimit forms it
	// ("domain.key_value.key2", with the request's values where
	// detailed_metric or value_to_metric ask for them; a limit
	// override's names the descriptor's entries). The metrics are
	// upstream's ratelimit.service.rate_limit.<key>.<counter>.
	Add(key string, c Counts)
}

// Counts are the increments of one rule's counters for one descriptor,
// as envoyproxy/ratelimit computes them from the count before and after
// the descriptor's hits (its cost; 0 for a check with hits_addend 0),
// against the rule's requests_per_unit (the limit) and the near-limit
// threshold, floor(limit × Config.NearLimitRatio):
//
//   - TotalHits: the hits;
//   - WithinLimit: the hits when the count after is within the limit;
//     NearLimit then counts those past the threshold;
//   - OverLimit: those past the limit when the count after is over it
//     (all of them when the count before was at the limit already);
//     NearLimit then counts the hits between the threshold and the
//     limit;
//   - ShadowMode: for a rule in shadow mode, the hits OverLimit counts.
//   - OverLimitWithLocalCache: the hits OverLimit counts when the local
//     cache refused the descriptor (Config.LocalCacheBytes): it is over
//     its limit, with nothing left, and no store was asked.
//
// The count before is the limit minus what the descriptor's limiter had
// left for it; under ChargeStopWhenOver, a descriptor left uncharged
// because another was over its limit counts as upstream's does: its count
// is taken for the count after the hits. A descriptor that no limiter decided (a store failure; a
// shadow rule of a request refused all or nothing, or any descriptor of a
// request a rule refusing everything refused) counts in TotalHits alone.
type Counts = rlsstats.Counts

// count tells Config.Stats each limited descriptor's increments.
func (s *Service) count(domain string, descs []*rlcommon.RateLimitDescriptor, items []item) {
	for i := range items {
		it := &items[i]
		if it.rule == nil || it.rule.Unlimited || it.back {
			continue
		}
		s.c.Stats.Add(it.rule.statsKey(domain, descs[i]), s.counts(it))
	}
}

// counts computes it's increments (see Counts).
func (s *Service) counts(it *item) Counts {
	hits := uint64(it.cost)
	if it.probe {
		hits = 0
	}
	c := Counts{TotalHits: hits}
	var left int
	switch {
	case it.rule.DenyAll && !it.decided:
		left = 0 // a limit of 0: nothing is ever left
	case it.decided || it.drained:
		left = it.left
	default:
		return c
	}
	limit := uint64(it.rule.RequestsPerUnit)
	if it.rule.DenyAll {
		limit = 0
	}
	before := limit - min(uint64(max(left, 0)), limit)
	after := before + hits
	if it.held {
		// Upstream asks for no charge (INCRBY 0), and takes the count it
		// gets back for the count after the hits.
		after = before
		before -= min(hits, before)
	}
	near := uint64(math.Floor(float64(float32(limit) * s.c.NearLimitRatio)))
	if after > limit {
		if before >= limit {
			c.OverLimit = hits
		} else {
			c.OverLimit = after - limit
			c.NearLimit = limit - max(near, before)
		}
		if it.rule.Shadow {
			c.ShadowMode = c.OverLimit
		}
		if it.cached {
			c.OverLimitWithLocalCache = c.OverLimit
		}
		return c
	}
	c.WithinLimit = hits
	if after > near {
		if before >= near {
			c.NearLimit = hits
		} else {
			c.NearLimit = after - near
		}
	}
	return c
}
