package grpcrules

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/rules"
)

// Option configures [New].
type Option func(*options)

type options struct {
	grpc []grpcmw.Option
	keys map[string]grpcmw.KeyFunc
	errs []string
}

// WithGRPCOptions passes opts to every rule's grpcmw.Limiter, before the
// rule's own cost: an observer, a header style, a failure mode.
func WithGRPCOptions(opts ...grpcmw.Option) Option {
	return func(o *options) { o.grpc = append(o.grpc, opts...) }
}

// WithKey registers a key part under name for gRPC, as rules.WithKey does
// for HTTP. A key named "ip" replaces the built-in one, the call's peer
// (grpcmw.KeyByPeerIP()): behind a gateway, give
// WithKey("ip", grpcmw.MustKeyByPeerIP(keyfunc.WithTrustedProxies(...))).
func WithKey(name string, f grpcmw.KeyFunc) Option {
	return func(o *options) {
		switch {
		case f == nil:
			o.errs = append(o.errs, fmt.Sprintf("WithKey(%q, nil): give a key function", name))
		case name == "path" || name == "method" || name == "global" || strings.Contains(name, ":"):
			o.errs = append(o.errs, fmt.Sprintf("WithKey(%q): the name is built in or not a key name", name))
		default:
			if o.keys == nil {
				o.keys = map[string]grpcmw.KeyFunc{}
			}
			o.keys[name] = f
		}
	}
}

// Interceptors limits gRPC calls by the rules of a Set. It is safe for
// concurrent use.
type Interceptors struct {
	set *rules.Set
	get func(*rules.Table) any // this Interceptors' state in a Table
	o   options
	ip  grpcmw.KeyFunc
}

// table is what Interceptors keeps in each rules.Table.
type table struct {
	byRule map[*rules.Compiled]*rule
}

type rule struct {
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
}

// New returns interceptors for set's rules. It makes a grpcmw.Limiter for
// every rule with grpc patterns now, and for every set of rules set loads
// from now on; an error says which rule could not have one.
func New(set *rules.Set, opts ...Option) (*Interceptors, error) {
	if set == nil {
		return nil, errors.New("grpcrules: nil rules.Set; make one with rules.Open or rules.Watch")
	}
	ic := &Interceptors{set: set}
	for _, opt := range opts {
		opt(&ic.o)
	}
	if len(ic.o.errs) > 0 {
		return nil, errors.New("grpcrules: " + strings.Join(ic.o.errs, "; "))
	}
	ic.ip = ic.o.keys["ip"]
	if ic.ip == nil {
		ic.ip = grpcmw.MustKeyByPeerIP() // no options: it cannot fail
	}
	get, err := set.Attach(ic.build)
	if err != nil {
		return nil, err
	}
	ic.get = get
	return ic, nil
}

func (ic *Interceptors) build(t *rules.Table) (any, error) {
	out := &table{byRule: map[*rules.Compiled]*rule{}}
	for i, c := range t.Rules() {
		if c.Rule.GRPC == nil {
			continue
		}
		key, err := ic.key(&c.Rule)
		if err != nil {
			return nil, fmt.Errorf("grpcrules: rules[%d] (%s, line %d): %w", i, c.Rule.Name, c.Rule.Line, err)
		}
		var opts []grpcmw.Option
		if c.Rule.Shadow && c.Rule.ShadowHeaders {
			opts = append(opts, grpcmw.WithHeaders(core.HeadersBoth))
		}
		opts = append(opts, ic.o.grpc...)
		if c.Rule.Shadow {
			opts = append(opts, grpcmw.WithShadow())
		}
		if n := c.Rule.Cost; n > 1 {
			opts = append(opts, grpcmw.WithCost(func(context.Context, string) (int, error) { return n, nil }))
		}
		l, err := grpcmw.New(c.Limiter, key, opts...)
		if err != nil {
			return nil, fmt.Errorf("grpcrules: rules[%d] (%s, line %d): %w", i, c.Rule.Name, c.Rule.Line, err)
		}
		out.byRule[c] = &rule{unary: l.UnaryServerInterceptor(), stream: l.StreamServerInterceptor()}
	}
	return out, nil
}

func (ic *Interceptors) key(r *rules.Rule) (grpcmw.KeyFunc, error) {
	var fns []grpcmw.KeyFunc
	for _, part := range r.Key {
		switch {
		case part == "ip":
			fns = append(fns, ic.ip)
		case part == "method":
			fns = append(fns, grpcmw.KeyByMethod())
		case part == "global":
			fns = append(fns, grpcmw.Constant(r.Name))
		case strings.HasPrefix(part, "header:"):
			fns = append(fns, grpcmw.KeyByMetadata(strings.ToLower(part[len("header:"):])))
		default:
			f, ok := ic.o.keys[part]
			if !ok {
				names := "none"
				if len(ic.o.keys) > 0 {
					names = strings.Join(slices.Sorted(maps.Keys(ic.o.keys)), ", ")
				}
				return nil, fmt.Errorf("unknown gRPC key %q; the built-in keys are ip, header:NAME, method and global, and grpcrules.WithKey registered %s", part, names)
			}
			fns = append(fns, f)
		}
	}
	if len(fns) == 1 {
		return fns[0], nil
	}
	return grpcmw.JoinKeys(fns...), nil
}

// lookup returns the interceptors of the rule that matches fullMethod in
// the rules in force, or nil.
func (ic *Interceptors) lookup(fullMethod string) *rule {
	t := ic.set.Table()
	c := t.MatchGRPC(fullMethod)
	if c == nil {
		return nil
	}
	return ic.get(t).(*table).byRule[c]
}

// UnaryServerInterceptor limits unary calls by the rules in force when
// each call starts.
func (ic *Interceptors) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r := ic.lookup(info.FullMethod)
		if r == nil {
			return handler(ctx, req)
		}
		return r.unary(ctx, req, info, handler)
	}
}

// StreamServerInterceptor limits streams by the rules in force when each
// stream starts.
func (ic *Interceptors) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		r := ic.lookup(info.FullMethod)
		if r == nil {
			return handler(srv, ss)
		}
		return r.stream(srv, ss, info, handler)
	}
}
