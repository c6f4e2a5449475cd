package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// Set is a rules file in force: its compiled rules, which [Set.Reload],
// [Watch] or [Set.Apply] replace atomically. Requests read the rules once,
// when they start, so that a request in flight finishes under the rules it
// started with. A Set is safe for concurrent use.
type Set struct {
	file string // the path, or the name given to New
	disk bool   // file is a path to read on Reload
	o    options
	ip   keyfunc.Func

	mu       sync.Mutex // serialises reloads and Attach
	cur      atomic.Pointer[Table]
	seen     []byte // the contents last tried, so that the watch skips unchanged files
	builders []func(*Table) (any, error)

	watch *watcher // nil unless Watch started one
}

// Table is one version of a Set's compiled rules. It never changes once
// made: a reload makes a new Table.
type Table struct {
	rules    []*Compiled
	byPolicy map[string]core.Limiter
	attached []any
}

// Compiled is one rule made ready to enforce.
type Compiled struct {
	// Rule is the rule as parsed.
	Rule Rule
	// Limiter enforces the rule: a *core.Keyed for one limit, a
	// *core.Stack for several, inside a *core.Shadow when the rule is in
	// shadow mode, which never refuses, whoever asks it.
	Limiter core.Limiter
	// Kept reports that Limiter's state (its keys' counts) was carried
	// over from the rules before the reload that made this Table.
	Kept bool

	base core.Limiter    // Limiter without the Shadow: what reloads keep
	http *httpmw.Limiter // nil for a rule without paths
}

// Rules returns the table's rules, in file order. The slice is shared and
// must not be modified.
func (t *Table) Rules() []*Compiled { return t.rules }

// MatchHTTP returns the first rule, in file order, whose paths match path
// and whose methods, if any, include method; nil when none does.
func (t *Table) MatchHTTP(method, path string) *Compiled {
	for _, c := range t.rules {
		if c.http != nil && matchPath(c.Rule.Paths, path) && matchMethod(c.Rule.Methods, method) {
			return c
		}
	}
	return nil
}

// MatchGRPC returns the first rule, in file order, whose grpc patterns
// match fullMethod ("/pkg.Service/Method"); nil when none does.
func (t *Table) MatchGRPC(fullMethod string) *Compiled {
	for _, c := range t.rules {
		for _, g := range c.Rule.GRPC {
			if g == "*" || g == fullMethod ||
				strings.HasSuffix(g, "/*") && strings.HasPrefix(fullMethod, g[:len(g)-1]) {
				return c
			}
		}
	}
	return nil
}

// Attached returns what the function [Set.Attach] returned slot for made
// of this table.
func (t *Table) Attached(slot Slot) any {
	if int(slot) < len(t.attached) {
		return t.attached[slot]
	}
	return nil
}

func matchPath(paths []string, path string) bool {
	for _, p := range paths {
		if strings.HasSuffix(p, "/*") {
			if strings.HasPrefix(path, p[:len(p)-1]) {
				return true
			}
		} else if p == path {
			return true
		}
	}
	return false
}

func matchMethod(methods []string, m string) bool {
	if len(methods) == 0 {
		return true
	}
	for _, x := range methods {
		if x == m {
			return true
		}
	}
	return false
}

// Open reads, checks and compiles the rules file at path. Errors say where
// the file is wrong (an *Error) or which option is. [Set.Reload] reads the
// file again; [Watch] also reloads it when it changes.
func Open(path string, opts ...Option) (*Set, error) {
	s, err := newSet(path, true, opts)
	if err != nil {
		return nil, err
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if err := s.apply(data); err != nil {
		return nil, err
	}
	return s, nil
}

// New compiles rules from data, as if read from a file named name (which
// errors and logs quote). Such a Set has no file to reload: change its
// rules with [Set.Apply].
func New(name string, data []byte, opts ...Option) (*Set, error) {
	s, err := newSet(name, false, opts)
	if err != nil {
		return nil, err
	}
	if err := s.apply(data); err != nil {
		return nil, err
	}
	return s, nil
}

func newSet(file string, disk bool, opts []Option) (*Set, error) {
	s := &Set{file: file, disk: disk, o: defaultOptions()}
	for _, opt := range opts {
		opt(&s.o)
	}
	if len(s.o.errs) > 0 {
		return nil, errors.New("rules: " + strings.Join(s.o.errs, "; "))
	}
	if s.o.logger == nil {
		s.o.logger = slog.Default()
	}
	ip, err := keyfunc.ClientIP(s.o.ip...)
	if err != nil {
		return nil, fmt.Errorf("rules: WithClientIP: %w", err)
	}
	s.ip = ip
	return s, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return b.Bytes(), nil
}

// Table returns the rules in force.
func (s *Set) Table() *Table { return s.cur.Load() }

// Reload reads the file again and, if it is valid, puts its rules in
// force; if not, the rules in force stay, and the error (an *Error for a
// bad file) is returned, logged and reported to the observer. Rules whose
// policy did not change keep their limiters, and so their keys' state:
// the same name, limits, algorithm and its options, and key. A Set made by
// [New] has no file: Reload fails.
func (s *Set) Reload() error {
	if !s.disk {
		return fmt.Errorf("rules: %s was not read from a file; use Apply", s.file)
	}
	data, err := readFile(s.file)
	if err != nil {
		s.report(err)
		return err
	}
	return s.Apply(data)
}

// Apply puts the rules in data in force, as Reload does with the file's
// contents.
func (s *Set) Apply(data []byte) error {
	err := s.apply(data)
	s.report(err)
	return err
}

// reloadIfChanged is the watch's reload: it skips contents it tried last.
func (s *Set) reloadIfChanged() {
	data, err := readFile(s.file)
	if err != nil {
		s.report(err)
		return
	}
	s.mu.Lock()
	same := s.seen != nil && bytes.Equal(s.seen, data)
	s.mu.Unlock()
	if !same {
		s.Apply(data)
	}
}

func (s *Set) apply(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen[:0:0], data...)
	rs, err := Parse(s.file, data)
	if err != nil {
		return err
	}
	t, err := s.compile(rs, s.cur.Load())
	if err != nil {
		return err
	}
	for _, b := range s.builders {
		v, err := b(t)
		if err != nil {
			return err
		}
		t.attached = append(t.attached, v)
	}
	s.cur.Store(t)
	return nil
}

func (s *Set) report(err error) {
	if err != nil {
		s.o.logger.Error("rules: reload failed; the rules in force stay", "file", s.file, "err", err)
		if s.o.observer != nil {
			s.o.observer.Observe(context.Background(), core.Event{Transport: "rules", Outcome: core.OutcomeError, Err: err})
		}
	} else {
		t := s.cur.Load()
		kept := 0
		for _, c := range t.rules {
			if c.Kept {
				kept++
			}
		}
		s.o.logger.Info("rules: reloaded", "file", s.file, "rules", len(t.rules), "kept", kept)
	}
	if s.o.onReload != nil {
		s.o.onReload(err)
	}
}

// Slot names what one [Set.Attach] function made of each Table.
type Slot int

// Attach runs build on the rules in force and then on every Table a
// reload compiles, before the Table takes effect; what it returns is kept
// in the Table ([Table.Attached]). An error from build on a reload
// rejects the new rules as a bad file would. Adapters for other
// transports (package grpcrules) build their per-rule state with it.
func (s *Set) Attach(build func(*Table) (any, error)) (Slot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	v, err := build(old)
	if err != nil {
		return 0, err
	}
	t := *old
	t.attached = append(append([]any(nil), old.attached...), v)
	s.builders = append(s.builders, build)
	s.cur.Store(&t)
	return Slot(len(t.attached) - 1), nil
}

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
				c.base, c.Kept = lim, true
			}
		}
		if c.base == nil {
			lim, err := s.limiter(r)
			if err != nil {
				if len(r.Limits) > 1 {
					return nil, fail(".limits", err)
				}
				return nil, fail(".limit", err)
			}
			c.base = lim
		}
		t.byPolicy[pol] = c.base
		c.Limiter = c.base
		if r.Shadow {
			c.Limiter = &core.Shadow{Limiter: c.base, Headers: r.ShadowHeaders}
		}
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
			h, err := httpmw.New(c.base, key, opts...)
			if err != nil {
				return nil, fail("", err)
			}
			c.http = h
		}
		t.rules = append(t.rules, c)
	}
	return t, nil
}

// AlgorithmOptions returns the core options that r's algorithm fields
// stand for.
func (r *Rule) AlgorithmOptions() []core.Option {
	opts := []core.Option{core.WithAlgorithm(r.Algorithm)}
	if r.WarmUp > 0 {
		opts = append(opts, core.WithWarmUp(r.WarmUp, r.ColdFactor))
	}
	if r.MaxDelay > 0 {
		opts = append(opts, core.WithMaxDelay(r.MaxDelay))
	}
	return opts
}

func (s *Set) limiter(r *Rule) (core.Limiter, error) {
	if len(r.Limits) == 1 {
		return core.New(r.Limits[0], append(r.AlgorithmOptions(), s.o.core...)...)
	}
	layers := make([]core.Layer, len(r.Limits))
	for i, l := range r.Limits {
		layers[i] = core.Layer{Limit: l, Options: r.AlgorithmOptions()}
	}
	return core.NewStack(layers, s.o.core...)
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
				return nil, fmt.Errorf("rules: no key named %q; register it with rules.WithKey", part)
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
		c := s.cur.Load().MatchHTTP(r.Method, r.URL.Path)
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
