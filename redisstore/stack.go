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
	"github.com/floodgate/floodgate/internal/option"
)

// Layer is one limit of a [Stack] and the options of its algorithm
// ([WithAlgorithm] and the algorithm's own settings). Options that concern
// the connection, the keys or the cache belong to the whole stack: give
// them to [NewStack].
type Layer struct {
	Limit   core.Limit
	Options []Option
}

// Stack enforces several limits on every key at once, each with its own
// algorithm, all or nothing, in one script and one round trip: a request is
// admitted only if every limit admits it, and when one refuses, none is
// charged. It decides exactly as core.Stack does (the same decisions, the
// same limit named) and plays the same tables.
//
// A layer's state is held where a Limiter with that layer's limit and
// algorithm, and the stack's prefix, would hold it (see [Stack.Keys]); the
// keys of one request share a hash slot, so a stack runs on a Cluster as
// one script on one master. Batching, the circuit breaker, the deny cache
// and the failure reporting are a Limiter's. A Stack is safe for concurrent
// use.
type Stack struct {
	l *Limiter
}

var (
	_ core.Limiter      = (*Stack)(nil)
	_ core.PolicyLister = (*Stack)(nil)
)

// NewStack returns a Stack of layers, in order (at least one), on client.
// opts apply to the whole stack and are the defaults of every layer. A
// layer without a name is named after its limit, as core.NewStack names it;
// names must be distinct.
func NewStack(client redis.UniversalClient, layers []Layer, opts ...Option) (*Stack, error) {
	if client == nil {
		return nil, errNilClient
	}
	if len(layers) == 0 {
		return nil, errors.New("redisstore: NewStack needs at least one layer")
	}
	o := defaultOptions()
	errs := option.Errors{Prefix: "redisstore: "}
	if err := option.Apply(&o, &errs, opts); err != nil {
		return nil, err
	}
	if err := o.validate(&errs); err != nil {
		return nil, err
	}
	var (
		limits []core.Limit
		ends   []string
		algs   []core.Algorithm
		fixed  = []any{strconv.FormatInt(o.margin.Milliseconds(), 10)}
		names  = map[string]int{}
		most   = -1
		bound  core.Limit
	)
	for i, layer := range layers {
		l := layer.Limit
		if l.Name == "" {
			l.Name = strconv.Itoa(l.Events) + "-per-" + l.Period.String()
		}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("redisstore: stack layer %d (%v): %w", i, l, err)
		}
		if j, ok := names[l.Name]; ok {
			return nil, fmt.Errorf("redisstore: stack layers %d and %d are both named %q; give each a distinct name with Limit.WithName", j, i, l.Name)
		}
		names[l.Name] = i
		lo := o
		lerrs := option.Errors{Prefix: fmt.Sprintf("redisstore: stack layer %d (%v): ", i, l)}
		if err := option.Apply(&lo, &lerrs, layer.Options); err != nil {
			return nil, err
		}
		if err := lo.validate(&lerrs); err != nil {
			return nil, err
		}
		if lo.algorithm == core.Concurrency {
			return nil, fmt.Errorf("redisstore: stack layer %d (%v): a concurrency limit cannot be a stack's layer; put it in a Limiter of its own", i, l)
		}
		if o.wide() != lo.wide() {
			return nil, fmt.Errorf("redisstore: stack layer %d (%v): only WithAlgorithm and the algorithm's own settings may be given to a layer; pass the others to NewStack", i, l)
		}
		if _, ok := sources[lo.algorithm]; !ok || lo.algorithm == core.SlidingLog || lo.subWindows != 0 {
			return nil, fmt.Errorf("redisstore: stack layer %d (%v): %v%s cannot be a stack's layer yet; use a Limiter of its own", i, l, lo.algorithm, map[bool]string{true: " with WithSubWindows"}[lo.subWindows != 0])
		}
		_, tag, p, maxCost, err := compile(&lo, l)
		if err != nil {
			return nil, fmt.Errorf("redisstore: stack layer %d: %w", i, err)
		}
		if most < 0 || maxCost < most {
			most, bound = maxCost, l
		}
		limits = append(limits, l)
		algs = append(algs, lo.algorithm)
		ends = append(ends, ":"+keyTag(tag, l)+lo.settingsTag())
		fixed = append(fixed, strconv.Itoa(len(p)))
		for _, v := range p {
			fixed = append(fixed, v)
		}
	}
	lim, err := newLimiter(client, o, stackScript(algs), "}")
	if err != nil {
		return nil, err
	}
	lim.pol = &policy{limit: bound, maxCost: most, fixed: fixed}
	lim.limits, lim.layers = limits, ends
	return &Stack{l: lim}, nil
}

// wideOptions are the settings of a whole stack, which its layers may not
// change.
type wideOptions struct {
	prefix                               string
	clock, script                        core.Clock
	timeout, margin, openFor, maxOpenFor time.Duration
	denyCache, inFlight, batchSize       int
	threshold                            int
	batching, breaker                    bool
}

func (o *options) wide() wideOptions {
	return wideOptions{o.prefix, o.clock, o.script, o.timeout, o.margin, o.openFor, o.maxOpenFor,
		o.denyCache, o.inFlight, o.batchSize, o.threshold, o.batching, o.breaker}
}

// Allow decides whether key may spend cost units now under every limit of
// the stack and, if so, charges them to every limit, in one round trip
// (none when the deny cache answers). It fails as Limiter.Allow does.
func (s *Stack) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	return s.l.Allow(ctx, key, cost)
}

// Refund gives cost units back to key under every limit of the stack,
// never beyond a whole quota, in one round trip.
func (s *Stack) Refund(ctx context.Context, key string, cost int) error {
	return s.l.Refund(ctx, key, cost)
}

// Policies returns the stack's limits, in order, with the names they carry
// in decisions. The slice is shared and must not be modified.
func (s *Stack) Policies() []core.Limit { return s.l.limits }

// Keys returns the Redis keys that hold key's state, one per layer.
func (s *Stack) Keys(key string) []string { return s.l.keys(s.l.Key(key)) }

// stackScripts holds the script of each sequence of algorithms a stack has
// been made with.
var stackScripts sync.Map // string of algorithms → *redis.Script

// stackScript returns the script deciding layers of algs (lua/stack.lua).
func stackScript(algs []core.Algorithm) *redis.Script {
	var id strings.Builder
	for _, a := range algs {
		id.WriteString(strconv.Itoa(int(a)))
		id.WriteByte(',')
	}
	if s, ok := stackScripts.Load(id.String()); ok {
		return s.(*redis.Script)
	}
	head, tail, _ := strings.Cut(source("stack.lua"), "-- LAYERS --\n")
	var src strings.Builder
	src.WriteString(head)
	for i, a := range algs {
		fmt.Fprintf(&src, "layers[%d] = function(KEYS, ARGV, redis)\n%send\n", i+1, source(sources[a]...))
	}
	src.WriteString(tail)
	s, _ := stackScripts.LoadOrStore(id.String(), redis.NewScript(src.String()))
	return s.(*redis.Script)
}
