package debugpage

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// Page collects what the adapters report and serves it as a web page and
// as JSON. It is a core.Observer, to attach to every adapter whose traffic
// it should show, and an http.Handler, to mount behind authentication.
// It is safe for concurrent use; make one with [New].
type Page struct {
	shards   [shards]*shard
	seed     maphash.Seed
	clock    core.Clock
	since    time.Time
	window   int // seconds
	top      int
	capacity int // keys monitored by each sketch
	redact   func(string) string
	custom   bool // redact is the caller's, not Redact

	policies []policySource
	health   []healthSource
	guards   []guardSource
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
	// shed counts the sheds by the priority their context carried,
	// indexed by uint8(priority): every priority has its counter (2 KB),
	// so counting one takes no lookup and no allocation. It comes last,
	// away from the counters every request writes.
	shed [priorities]uint64
	_    [64]byte
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
		capacity: max(minCapacity, 32*o.top),
		redact:   o.redact,
		custom:   o.custom,
		policies: o.policies,
		health:   o.health,
		guards:   o.guards,
	}
	for i := range p.shards {
		p.shards[i] = &shard{
			ring:    newRing(p.window),
			hot:     newSpaceSaving(p.capacity / shards),
			refused: newSpaceSaving(p.capacity / shards),
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

// priorities is how many values an overload.Priority takes.
const priorities = 1 << 8

// Observe counts e: in the totals and the current second by outcome, in
// the hottest keys, for a denial (enforced or shadow) in the most refused
// keys, and for a shed by the priority ctx carries (overload.PriorityOf).
// A request without a key counts in the totals only. It takes one lock of
// eight, chosen by the key's hash, allocates nothing, and keeps e.Key (not
// a copy) while the key is among the monitored ones.
func (p *Page) Observe(ctx context.Context, e core.Event) {
	now := p.clock.Now()
	var prio overload.Priority
	if e.Outcome == core.OutcomeShed {
		prio = overload.PriorityOf(ctx) // outside the lock: it walks the context
	}
	h := maphash.String(p.seed, e.Key)
	// The top bits pick the shard, the low ones the sketch's table slot,
	// so that the keys of one shard still spread over its table.
	s := p.shards[h>>(64-3)]
	k := kind(e.Outcome)
	s.mu.Lock()
	s.totals[k]++
	if e.Outcome == core.OutcomeShed {
		s.shed[uint8(prio)]++
	}
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
