package debugpage

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Page collects what the adapters report and serves it as a web page and
// as JSON. It is a core.Observer, to attach to every adapter whose traffic
// it should show, and an http.Handler, to mount behind authentication.
// It is safe for concurrent use; make one with [New].
type Page struct {
	shards [shards]*shard
	seed   maphash.Seed
	clock  core.Clock
	since  time.Time
	window int // seconds
	top    int
	raw    bool

	policies []policySource
	health   []healthSource
}

var _ core.Observer = (*Page)(nil)

// shard holds the counters of the keys whose hash selects it, under one
// lock, so that concurrent requests for different keys seldom wait on each
// other. Shards are allocated one by one and padded so that two locks do
// not share a cache line.
type shard struct {
	mu           sync.Mutex
	totals       [numKinds]uint64
	shadowDenied uint64
	overflow     uint64
	ring         ring
	hot          *spaceSaving
	refused      *spaceSaving
	_            [64]byte
}

// New returns a page configured by opts; with none it shows the traffic
// of the adapters it is attached to over the last 5 minutes, with keys
// redacted. Invalid options are reported all at once.
func New(opts ...Option) (*Page, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	p := &Page{
		seed:     maphash.MakeSeed(),
		clock:    o.clock,
		since:    time.Unix(0, o.clock.Now()),
		window:   int(o.window / time.Second),
		top:      o.top,
		raw:      o.raw,
		policies: o.policies,
		health:   o.health,
	}
	for i := range p.shards {
		p.shards[i] = &shard{
			ring:    newRing(p.window),
			hot:     newSpaceSaving(o.capacity / shards),
			refused: newSpaceSaving(o.capacity / shards),
		}
	}
	return p, nil
}

// MustNew is like [New] but panics on invalid options, for package-level
// variables.
func MustNew(opts ...Option) *Page {
	p, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return p
}

// kind maps an outcome to its counter.
func kind(o core.Outcome) int {
	if int(o) < numKinds-1 {
		return int(o)
	}
	return numKinds - 1
}

// kindName is the name counter k has in the JSON and on the page.
func kindName(k int) string {
	if k == numKinds-1 {
		return "other"
	}
	return core.Outcome(k).String()
}

// Observe counts e: in the totals and the current second by outcome, in
// the hottest keys, and, for a denial (enforced or shadow), in the most
// refused keys. A request without a key counts in the totals only. It
// takes one lock of eight, chosen by the key's hash, allocates nothing,
// and keeps e.Key (not a copy) while the key is among the monitored ones.
func (p *Page) Observe(_ context.Context, e core.Event) {
	now := p.clock.Now()
	h := maphash.String(p.seed, e.Key)
	// The top bits pick the shard, the low ones the sketch's table slot,
	// so that the keys of one shard still spread over its table.
	s := p.shards[h>>(64-3)]
	k := kind(e.Outcome)
	s.mu.Lock()
	s.totals[k]++
	if e.Decision.Overflow {
		s.overflow++
	}
	s.ring.add(floorSecond(now), k)
	if e.Key != "" {
		s.hot.add(e.Key, h, 1)
		if e.Outcome == core.OutcomeDenied {
			s.refused.add(e.Key, h, 1)
		}
	}
	if e.Shadow && e.Outcome == core.OutcomeDenied {
		s.shadowDenied++
	}
	s.mu.Unlock()
}

// Snapshot is what the page shows at one instant, and the JSON it serves
// (?format=json). Counts by outcome are keyed by core.Outcome's String
// ("allowed", "shaped", "denied", "bad_key", "bad_cost", "error",
// "store_error", "canceled", and "other" for outcomes this package does not
// know), and every outcome is present.
type Snapshot struct {
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
	// Window is the per-second counts of the last minutes.
	Window Window `json:"window"`
	// RawKeys reports that keys are shown as they are; otherwise each is
	// Redact's hash of it.
	RawKeys bool `json:"raw_keys"`
	// HotKeys are the keys with the most requests, RefusedKeys those with
	// the most denials, both since the page was made.
	HotKeys     TopKeys `json:"hot_keys"`
	RefusedKeys TopKeys `json:"refused_keys"`
	// Policies lists the limits of each limiter registered with
	// WithLimiter or WithPolicies, in the order of the options.
	Policies []Policies `json:"policies"`
	// Health lists each store registered with WithHealth.
	Health []Health `json:"health"`
}

// Window holds the counts by outcome of the last Seconds seconds, the
// current one included.
type Window struct {
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

// TopKeys is a top-k list from a Space-Saving sketch. Keys are ordered by
// Count, highest first. A key's true count lies between Count-Error and
// Count; Error is 0 while the key's shard had a free counter for it. A key
// not listed may have a higher true count than the last one listed only
// if it was not monitored, and then its count is at most Unmonitored.
type TopKeys struct {
	Keys        []KeyCount `json:"keys"`
	Unmonitored uint64     `json:"unmonitored"`
}

// KeyCount is one key of a [TopKeys] list.
type KeyCount struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
	Error uint64 `json:"error"`
}

// Policies is the limits one registered limiter enforces.
type Policies struct {
	Limiter string   `json:"limiter"`
	Limits  []Policy `json:"limits"`
}

// Policy is one core.Limit, as the page shows it.
type Policy struct {
	Name   string `json:"name"`
	Events int    `json:"events"`
	// Period is the limit's period as time.Duration's String writes it.
	Period string `json:"period"`
	// Burst is the effective burst (core.Limit.EffectiveBurst).
	Burst int `json:"burst"`
}

// Health is the state of one store registered with WithHealth.
type Health struct {
	Name string `json:"name"`
	// State is the breaker's state: "closed", "open" or "half-open".
	State string `json:"state"`
	// Stats are the store's counters.
	Stats *Stats `json:"stats,omitempty"`
}

// Stats are a store's counters (core.Health): decisions the store made
// (primary) and those made in memory while it failed (local), failed
// calls, and times its breaker opened.
type Stats struct {
	PrimaryDecisions uint64 `json:"primary_decisions"`
	LocalDecisions   uint64 `json:"local_decisions"`
	PrimaryFailures  uint64 `json:"primary_failures"`
	Opens            uint64 `json:"opens"`
}

// Snapshot returns what the page shows now. It locks each shard in turn
// for as long as it takes to copy its counters, so concurrent Observe
// calls wait at most that long.
func (p *Page) Snapshot() Snapshot {
	now := p.clock.Now()
	nowSec := floorSecond(now)
	var (
		totals      [numKinds]uint64
		perSec      = make([][numKinds]uint64, p.window)
		hot, ref    []counter
		hotU, refU  uint64
		shadow, ovf uint64
	)
	for _, s := range p.shards {
		s.mu.Lock()
		for k, v := range s.totals {
			totals[k] += v
		}
		shadow += s.shadowDenied
		ovf += s.overflow
		s.ring.sumInto(perSec, nowSec)
		hot = s.hot.appendTo(hot)
		ref = s.refused.appendTo(ref)
		hotU = max(hotU, s.hot.min())
		refU = max(refU, s.refused.min())
		s.mu.Unlock()
	}
	snap := Snapshot{
		Time:         time.Unix(0, now),
		Since:        p.since,
		Totals:       make(map[string]uint64, numKinds),
		ShadowDenied: shadow,
		Overflow:     ovf,
		Window: Window{
			Start:     nowSec - int64(p.window) + 1,
			Seconds:   p.window,
			Counts:    make(map[string][]uint64, numKinds),
			Totals:    make(map[string]uint64, numKinds),
			PerSecond: make(map[string]float64, numKinds),
		},
		RawKeys:     p.raw,
		HotKeys:     p.topKeys(hot, hotU),
		RefusedKeys: p.topKeys(ref, refU),
		Policies:    []Policies{},
		Health:      []Health{},
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
		ps := Policies{Limiter: src.name, Limits: []Policy{}}
		for _, l := range src.limits() {
			ps.Limits = append(ps.Limits, Policy{Name: l.Name, Events: l.Events, Period: l.Period.String(), Burst: l.EffectiveBurst()})
		}
		snap.Policies = append(snap.Policies, ps)
	}
	for _, src := range p.health {
		st := src.health.Health()
		snap.Health = append(snap.Health, Health{Name: src.name, State: st.Breaker,
			Stats: &Stats{st.StoreDecisions, st.LocalDecisions, st.Failures, st.Opens}})
	}
	return snap
}

// topKeys orders the counters of every shard and keeps the page's top.
func (p *Page) topKeys(cs []counter, unmonitored uint64) TopKeys {
	slices.SortFunc(cs, func(a, b counter) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	cs = cs[:min(len(cs), p.top)]
	t := TopKeys{Keys: make([]KeyCount, len(cs)), Unmonitored: unmonitored}
	for i, c := range cs {
		key := c.key
		if !p.raw {
			key = Redact(key)
		}
		t.Keys[i] = KeyCount{Key: key, Count: c.count, Error: c.err}
	}
	return t
}

var (
	secretOnce sync.Once
	secret     [32]byte
)

// Redact returns the form a key is shown in by default: the first 12 hex
// digits of its HMAC-SHA256 under a secret drawn at random once per
// process. The same key gives the same text in every page of the process,
// so it can be followed over time and matched with logs that call Redact
// too, but not reversed by guessing likely keys (IP addresses are few)
// without the secret, and not matched across processes or restarts.
func Redact(key string) string {
	secretOnce.Do(func() { rand.Read(secret[:]) })
	m := hmac.New(sha256.New, secret[:])
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:6])
}
