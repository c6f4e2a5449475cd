package rules

import (
	"strings"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
)

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
	// *core.Stack for several. A rule in shadow mode is shadowed by the
	// middleware the Set builds for it (httpmw.WithShadow, and
	// grpcmw.WithShadow in grpcrules); code that asks Limiter itself
	// enforces it.
	Limiter core.Limiter

	kept bool            // Limiter's state was carried over from the rules before the reload
	http *httpmw.Limiter // nil for a rule without paths
}

// Rules returns the table's rules, in file order. The slice is shared and
// must not be modified.
func (t *Table) Rules() []*Compiled { return t.rules }

// matchHTTP returns the first rule, in file order, whose paths match path
// and whose methods, if any, include method; nil when none does.
func (t *Table) matchHTTP(method, path string) *Compiled {
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
