package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
)

// Stack enforces several limits on every key at once, each with its own
// algorithm, all or nothing, in one script and one round trip: a request is
// admitted only if every limit admits it, and when one refuses, none is
// charged. It decides exactly as core.Stack does (the same decisions, the
// same limit named) and plays the same tables.
//
// A layer's state is held where a Limiter with that layer's limit and
// algorithm, and the stack's prefix, would hold it (the package
// documentation's Keys section gives the layout); the keys of one request
// share a hash slot, so a stack runs on a Cluster as one script on one
// master. A layer may be any algorithm; with a
// concurrency layer (core.Concurrency) every admission carries a Lease,
// held in each concurrency layer, renewed every third of WithLeaseTTL while
// held and released in one round trip: release
// the Lease or Refund the cost, not both (Refund lowers the units held, as
// a Limiter's does). Batching, the circuit breaker, the deny cache (never
// for a refusal a concurrency layer names) and the failure reporting are a
// Limiter's. A Stack is safe for concurrent use.
type Stack struct {
	l *Limiter
}

var (
	_ core.Limiter      = (*Stack)(nil)
	_ core.PolicyLister = (*Stack)(nil)
)

// NewStack returns a Stack of layers, in order (at least one), on client.
// Each limit is a whole policy, its algorithm and settings included; opts
// configure the store and apply to the whole stack. A layer without a name
// is named after its limit, as core.NewStack names it; names must be
// distinct.
func NewStack(client redis.UniversalClient, layers []core.Limit, opts ...Option) (*Stack, error) {
	if client == nil {
		return nil, errNilClient
	}
	if len(layers) == 0 {
		return nil, errors.New("redisstore: NewStack needs at least one limit")
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	var (
		limits []core.Limit
		ends   []string
		srcs   [][]string // each layer's script files
		leased []bool
		renew  time.Duration // the shortest lease TTL of a concurrency layer
		fixed  = []any{strconv.FormatInt(o.margin.Milliseconds(), 10)}
		names  = map[string]int{}
		most   = -1
		bound  core.Limit
		// shortest is the layer of the shortest period, which sets a local
		// quota lease's default length.
		shortest core.Limit
	)
	for i, l := range layers {
		if l.Name == "" {
			l.Name = core.DefaultName(l)
		}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("redisstore: stack limit %d (%v): %w", i, l, err)
		}
		if j, ok := names[l.Name]; ok {
			return nil, fmt.Errorf("redisstore: stack limits %d and %d are both named %q; give each a distinct name with Limit.WithName", j, i, l.Name)
		}
		names[l.Name] = i
		lo := o
		lo.quota = nil // a layer's script is the algorithm's alone: stack.lua grants
		lo.setPolicy(l)
		if o.quota != nil {
			if err := quotaAlgorithm(l.Algorithm, l.Overdraft); err != nil {
				return nil, fmt.Errorf("redisstore: stack limit %d: %w", i, err)
			}
			if shortest.Period == 0 || l.Period < shortest.Period {
				shortest = l
			}
		}
		_, tag, p, maxCost, err := compile(&lo, l)
		if err != nil {
			return nil, fmt.Errorf("redisstore: stack limit %d: %w", i, err)
		}
		if lo.algorithm == core.Concurrency {
			ttl := lo.ttl()
			p = append(p, strconv.FormatInt(ttl.Microseconds(), 10))
			if leased == nil {
				leased = make([]bool, len(layers))
			}
			leased[i] = true
			if renew == 0 || ttl < renew {
				renew = ttl
			}
		}
		if most < 0 || maxCost < most {
			most, bound = maxCost, l
		}
		limits = append(limits, l)
		srcs = append(srcs, sourceOf(&lo))
		ends = append(ends, ":"+keyTag(tag, l)+lo.settingsTag())
		fixed = append(fixed, strconv.Itoa(len(p)))
		for _, v := range p {
			fixed = append(fixed, v)
		}
	}
	lim, err := newLimiter(client, o, stackScript(srcs, leased, o.quota != nil), "}")
	if err != nil {
		return nil, err
	}
	lim.pol = &policy{limit: bound, maxCost: most, fixed: fixed}
	if o.quota != nil {
		lim.quota = newQuotas(*o.quota, shortest, lim.pol)
	}
	lim.limits, lim.layers, lim.leased = limits, ends, leased
	if leased != nil {
		lim.leases = newLeases(o, renew)
	}
	if lim.local, err = localLimiter(&o, func(opts ...core.Option) (*core.Stack, error) { return core.NewStack(limits, opts...) }); err != nil {
		return nil, err
	}
	lim.share = lim.sharesOf()
	return &Stack{l: lim}, nil
}

// Allow decides whether key may spend cost units now under every limit of
// the stack and, if so, charges them to every limit, in one round trip
// (none when the deny cache answers). It fails, or falls back, as
// Limiter.Allow does.
func (s *Stack) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	if s.l.quota != nil {
		return s.l.allowQuota(ctx, s.l.pol, key, cost)
	}
	return s.l.allow(ctx, s.l.pol, key, cost)
}

// Refund gives cost units back to key under every limit of the stack,
// never beyond a whole quota, in one round trip.
func (s *Stack) Refund(ctx context.Context, key string, cost int) error {
	return s.l.refund(ctx, s.l.pol, key, cost)
}

// Policies returns the stack's limits, in order, with the names they carry
// in decisions. The slice is shared and must not be modified.
func (s *Stack) Policies() []core.Limit { return s.l.limits }

// stackScripts holds the script of each sequence of layers a stack has
// been made with.
var stackScripts sync.Map // the layers' script files and leases → *script

// stackScript returns the script deciding layers whose scripts are made of
// srcs, the layers leased[i] being concurrency limits (lua/stack.lua).
func stackScript(srcs [][]string, leased []bool, quota bool) *script {
	var id strings.Builder
	if quota {
		id.WriteString("quota;")
	}
	for i, files := range srcs {
		id.WriteString(strings.Join(files, "+"))
		if leased != nil && leased[i] {
			id.WriteString("+lease")
		}
		id.WriteByte(',')
	}
	if s, ok := stackScripts.Load(id.String()); ok {
		return s.(*script)
	}
	head, tail, _ := strings.Cut(source("stack.lua"), "-- LAYERS --\n")
	var src strings.Builder
	fmt.Fprintf(&src, "local quota = %v\n", quota)
	src.WriteString(head)
	for i, files := range srcs {
		fmt.Fprintf(&src, "layers[%d] = function(KEYS, ARGV, redis)\n%send\n", i+1, source(files...))
		if leased != nil && leased[i] {
			fmt.Fprintf(&src, "leased[%d] = true\n", i+1)
		}
	}
	src.WriteString(tail)
	n := newScript(src.String())
	n.lib = stackLibrary(srcs, leased, quota)
	n.fn = n.lib.fn("stack")
	s, _ := stackScripts.LoadOrStore(id.String(), n)
	return s.(*script)
}
