package rules

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

func (s *Set) compile(rs []Rule, old *Table) (*Table, error) {
	t := &Table{byPolicy: make(map[string]core.Limiter, len(rs))}
	for i := range rs {
		r := &rs[i]
		field := fmt.Sprintf("rules[%d]", i)
		fail := func(f string, err error) error {
			return &Error{File: s.file, Line: r.Line, Field: field + f, Err: err}
		}
		c := &Compiled{Rule: *r}
		pol := r.policy()
		if old != nil {
			if lim, ok := old.byPolicy[pol]; ok {
				c.Limiter, c.kept = lim, true
			}
		}
		if c.Limiter == nil {
			lim, err := s.limiter(r)
			if err != nil {
				if len(r.Limits) > 1 {
					return nil, fail(".limits", err)
				}
				return nil, fail(".limit", err)
			}
			c.Limiter = lim
		}
		t.byPolicy[pol] = c.Limiter
		if r.Paths != nil {
			key, err := s.httpKey(r)
			if err != nil {
				return nil, fail(".key", err)
			}
			var opts []httpmw.Option
			if r.Shadow && r.ShadowHeaders {
				opts = append(opts, httpmw.WithHeaders(core.HeadersBoth))
			}
			opts = append(opts, s.o.http...)
			if r.Shadow {
				opts = append(opts, httpmw.WithShadow())
			}
			switch {
			case r.CostUnit > 0:
				opts = append(opts, httpmw.WithCost(httpmw.CostByContentLength(r.CostUnit, r.CostUnknown)))
			case r.Cost > 1:
				n := r.Cost
				opts = append(opts, httpmw.WithCost(func(*http.Request) (int, error) { return n, nil }))
			}
			h, err := httpmw.New(c.Limiter, key, opts...)
			if err != nil {
				return nil, fail("", err)
			}
			c.http = h
		}
		t.rules = append(t.rules, c)
	}
	return t, nil
}

func (s *Set) limiter(r *Rule) (core.Limiter, error) {
	if len(r.Limits) == 1 {
		return core.New(r.Limits[0], s.o.core...)
	}
	return core.NewStack(r.Limits, s.o.core...)
}

func (s *Set) httpKey(r *Rule) (keyfunc.Func, error) {
	var fns []keyfunc.Func
	for _, part := range r.Key {
		switch {
		case part == keyIP:
			fns = append(fns, s.ip)
		case part == keyPath:
			fns = append(fns, keyfunc.Route()) // the URL path outside a router that records its route
		case part == keyMethod:
			fns = append(fns, keyfunc.Method())
		case part == keyGlobal:
			fns = append(fns, keyfunc.Constant(r.Name))
		case strings.HasPrefix(part, "header:"):
			fns = append(fns, keyfunc.Header(part[len("header:"):]))
		default:
			f, ok := s.o.keys[part]
			if !ok {
				return nil, unknownKey(part, s.o.keys)
			}
			fns = append(fns, f)
		}
	}
	if len(fns) == 1 {
		return fns[0], nil
	}
	return keyfunc.Join(fns...), nil
}

// Middleware returns next behind the rules: each request is checked by the
// first rule that matches its method and path, with that rule's limiter,
// key and cost; a request no rule matches goes to next untouched. Its
// method value is a func(http.Handler) http.Handler.
func (s *Set) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := s.cur.Load().matchHTTP(r.Method, r.URL.Path)
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		a := c.http.Enter(w, r)
		if !a.Admitted() {
			return
		}
		defer a.End()
		next.ServeHTTP(w, a.Request())
	})
}

// unknownKey is the error of a rule whose key names a part that is
// neither built in nor registered with WithKey. It lists both, so that a
// typo ("ipp") shows beside what was meant.
func unknownKey(part string, given map[string]keyfunc.Func) error {
	names := "none"
	if len(given) > 0 {
		names = strings.Join(slices.Sorted(maps.Keys(given)), ", ")
	}
	return fmt.Errorf("unknown key %q; the built-in keys are ip, header:NAME, path, method and global, and rules.WithKey registered %s", part, names)
}
