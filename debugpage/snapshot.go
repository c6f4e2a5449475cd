package debugpage

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/floodgate/floodgate/internal/obsreg"
	"github.com/floodgate/floodgate/overload"
)

// snapshot is what the page shows at one instant, and the JSON it serves
// (?format=json). Counts by outcome are keyed by core.Outcome's String
// ("allowed", "shaped", "denied", "bad_key", "bad_cost", "error",
// "store_error", "canceled", "shed", and "other" for outcomes this package does not
// know), and every outcome is present.
type snapshot struct {
	// Time is when the snapshot was taken, Since when the page was made,
	// both read from the page's clock.
	Time  time.Time `json:"time"`
	Since time.Time `json:"since"`
	// Totals counts every observed request since the page was made.
	Totals map[string]uint64 `json:"totals"`
	// ShadowDenied counts the denials among Totals["denied"] that a
	// limiter in shadow mode let through.
	ShadowDenied uint64 `json:"shadow_denied"`
	// Overflow counts decisions made on a limiter's shared overflow state
	// (core.Decision.Overflow): a steady rate means its capacity is too
	// small.
	Overflow uint64 `json:"overflow"`
	// windowCounts is the per-second counts of the last minutes.
	Window windowCounts `json:"window"`
	// KeyForm says how keys are shown: "hashed" by Redact, or "custom"
	// by the function given to WithKeyRedaction.
	KeyForm string `json:"key_form"`
	// HotKeys are the keys with the most requests, RefusedKeys those with
	// the most denials, both since the page was made.
	HotKeys     topList `json:"hot_keys"`
	RefusedKeys topList `json:"refused_keys"`
	// Policies lists the limits of each limiter registered with
	// WithLimiter, in the order of the options.
	Policies []limiterPolicies `json:"policies"`
	// Health lists each store registered with WithHealth.
	Health []healthView `json:"health"`
	// Guards lists each overload guard registered with WithGuard.
	Guards []guardView `json:"guards"`
	// ShedByPriority counts the sheds among Totals["shed"] by the
	// priority the request carried, highest priority first: the named
	// priorities always, any other once it has a shed.
	ShedByPriority []priorityCount `json:"shed_by_priority"`
}

// priorityCount is the sheds of one priority.
type priorityCount struct {
	// Priority is the priority's name as the metrics observers label it
	// (sheddable, normal, critical, or its number), Level its number
	// (overload.Priority).
	Priority string `json:"priority"`
	Level    int    `json:"level"`
	Count    uint64 `json:"count"`
}

// guardView is the state of one overload guard registered with WithGuard
// (overload.Reading).
type guardView struct {
	Name string `json:"name"`
	// Limit is the bound on requests in flight now; 0 while none applies.
	Limit    int `json:"limit"`
	InFlight int `json:"in_flight"`
	// LatencyMs is the latency the guard judges the service by, in ms.
	LatencyMs float64 `json:"latency_ms"`
}

// windowCounts holds the counts by outcome of the last Seconds seconds, the
// current one included.
type windowCounts struct {
	// Start is the Unix second of the first count.
	Start   int64 `json:"start"`
	Seconds int   `json:"seconds"`
	// Counts holds, by outcome, one count per second, oldest first.
	Counts map[string][]uint64 `json:"counts"`
	// Totals is the sum of each outcome's Counts.
	Totals map[string]uint64 `json:"totals"`
	// PerSecond is each outcome's average rate over the last 10 whole
	// seconds (the current second left out, as it is not over).
	PerSecond map[string]float64 `json:"per_second"`
}

// topList is a top-k list from a Space-Saving sketch. Keys are ordered by
// Count, highest first. A key's true count lies between Count-Error and
// Count; Error is 0 while the key's shard had a free counter for it. A key
// not listed may have a higher true count than the last one listed only
// if it was not monitored, and then its count is at most Unmonitored.
type topList struct {
	Keys        []keyCount `json:"keys"`
	Unmonitored uint64     `json:"unmonitored"`
	// Monitored is how many keys the sketch keeps counters for.
	Monitored int `json:"monitored"`
}

// keyCount is one key of a [topList].
type keyCount struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
	Error uint64 `json:"error"`
}

// limiterPolicies is the limits one registered limiter enforces.
type limiterPolicies struct {
	Limiter string       `json:"limiter"`
	Limits  []policyView `json:"limits"`
}

// policyView is one core.Limit, as the page shows it.
type policyView struct {
	Name   string `json:"name"`
	Events int    `json:"events"`
	// Period is the limit's period as time.Duration's String writes it.
	Period string `json:"period"`
	// Burst is the effective burst (core.Limit.EffectiveBurst).
	Burst int `json:"burst"`
}

// healthView is the state of one store registered with WithHealth.
type healthView struct {
	Name string `json:"name"`
	// State is the breaker's state: "closed", "open" or "half-open".
	State string `json:"state"`
	// Stats are the store's counters.
	Stats *breakerStats `json:"stats,omitempty"`
}

// breakerStats are a store's counters (core.Health): decisions the store
// made (primary) and those made in memory while it failed (local), failed
// calls, and times its breaker opened; decisions made from local quota
// leases, the leases granted and the units they gave back.
type breakerStats struct {
	PrimaryDecisions uint64 `json:"primary_decisions"`
	LocalDecisions   uint64 `json:"local_decisions"`
	PrimaryFailures  uint64 `json:"primary_failures"`
	Opens            uint64 `json:"opens"`
	LeaseDecisions   uint64 `json:"lease_decisions"`
	Leases           uint64 `json:"leases"`
	Returned         uint64 `json:"returned_units"`
	Returns          uint64 `json:"returns"`
}

// snapshot returns what the page shows now. It locks each shard in turn
// for as long as it takes to copy its counters, so concurrent Observe
// calls wait at most that long.
func (p *Page) snapshot() snapshot {
	now := p.clock.Now()
	nowSec := floorSecond(now)
	var (
		totals      [numKinds]uint64
		perSec      = make([][numKinds]uint64, p.window)
		hot, ref    []counter
		hotU, refU  uint64
		shadow, ovf uint64
		shed        [priorities]uint64
	)
	for _, s := range p.shards {
		s.mu.Lock()
		for k, v := range s.totals {
			totals[k] += v
		}
		shadow += s.shadowDenied
		ovf += s.overflow
		for i, v := range s.shed {
			shed[i] += v
		}
		s.ring.sumInto(perSec, nowSec)
		hot = s.hot.appendTo(hot)
		ref = s.refused.appendTo(ref)
		hotU = max(hotU, s.hot.min())
		refU = max(refU, s.refused.min())
		s.mu.Unlock()
	}
	snap := snapshot{
		Time:         time.Unix(0, now),
		Since:        p.since,
		Totals:       make(map[string]uint64, numKinds),
		ShadowDenied: shadow,
		Overflow:     ovf,
		Window: windowCounts{
			Start:     nowSec - int64(p.window) + 1,
			Seconds:   p.window,
			Counts:    make(map[string][]uint64, numKinds),
			Totals:    make(map[string]uint64, numKinds),
			PerSecond: make(map[string]float64, numKinds),
		},
		KeyForm:        "hashed",
		HotKeys:        p.topKeys(hot, hotU),
		RefusedKeys:    p.topKeys(ref, refU),
		Policies:       []limiterPolicies{},
		Health:         []healthView{},
		Guards:         []guardView{},
		ShedByPriority: shedByPriority(&shed),
	}
	const rateSeconds = 10
	for k := range numKinds {
		name := kindName(k)
		snap.Totals[name] = totals[k]
		counts := make([]uint64, p.window)
		var sum, recent uint64
		for i := range perSec {
			counts[i] = perSec[i][k]
			sum += counts[i]
			if i >= p.window-1-rateSeconds && i < p.window-1 {
				recent += counts[i]
			}
		}
		snap.Window.Counts[name] = counts
		snap.Window.Totals[name] = sum
		snap.Window.PerSecond[name] = float64(recent) / rateSeconds
	}
	for _, src := range p.policies {
		ps := limiterPolicies{Limiter: src.name, Limits: []policyView{}}
		for _, l := range src.limits() {
			ps.Limits = append(ps.Limits, policyView{Name: l.Name, Events: l.Events, Period: l.Period.String(), Burst: l.EffectiveBurst()})
		}
		snap.Policies = append(snap.Policies, ps)
	}
	for _, src := range p.health {
		st := src.health.Health()
		snap.Health = append(snap.Health, healthView{Name: src.name, State: st.Breaker,
			Stats: &breakerStats{st.StoreDecisions, st.LocalDecisions, st.Failures, st.Opens, st.LeaseDecisions, st.Leases, st.Returned, st.Returns}})
	}
	for _, src := range p.guards {
		r := src.guard.Reading()
		snap.Guards = append(snap.Guards, guardView{Name: src.name, Limit: r.Limit, InFlight: r.InFlight,
			LatencyMs: float64(r.Latency) / float64(time.Millisecond)})
	}
	if p.custom {
		snap.KeyForm = "custom"
	}
	return snap
}

// shedByPriority lists the counts of shed, indexed by uint8(priority),
// from the highest priority to the lowest: the named priorities always,
// any other only if it has a shed.
func shedByPriority(shed *[priorities]uint64) []priorityCount {
	var list []priorityCount
	for level := math.MaxInt8; level >= math.MinInt8; level-- {
		p := overload.Priority(level)
		n := shed[uint8(p)]
		if n == 0 && p != overload.Critical && p != overload.Normal && p != overload.Sheddable {
			continue
		}
		list = append(list, priorityCount{Priority: obsreg.PriorityLabel(p), Level: level, Count: n})
	}
	return list
}

// topKeys orders the counters of every shard and keeps the page's top.
func (p *Page) topKeys(cs []counter, unmonitored uint64) topList {
	slices.SortFunc(cs, func(a, b counter) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	cs = cs[:min(len(cs), p.top)]
	t := topList{Keys: make([]keyCount, len(cs)), Unmonitored: unmonitored, Monitored: p.capacity}
	for i, c := range cs {
		t.Keys[i] = keyCount{Key: p.redact(c.key), Count: c.count, Error: c.err}
	}
	return t
}
