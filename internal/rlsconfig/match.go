package rlsconfig

import "strings"

// node is a descriptor of the configuration, or a domain's top level: the
// descriptors nested in it, indexed for matching, and its rule if it has a
// rate_limit block.
type node struct {
	exact    map[Entry]*node  // descriptors with a value (wildcards too)
	wild     []wildcard       // descriptors whose value holds '*', in order
	byKey    map[string]*node // descriptors without a value
	children int
	rule     *Rule // nil without rate_limit
	// names holds the composite keys envoyproxy/ratelimit indexes the
	// children by (key, or key_value), with their lines, to refuse the
	// files it refuses.
	names map[string]place
}

type place struct {
	file string
	line int
}

type wildcard struct {
	key   string
	parts []string
	n     *node
}

// Match returns the rule that applies to a request descriptor of domain d,
// or nil when none does (an unknown domain, no descriptor matching, a
// matching descriptor without rate_limit).
//
// As in envoyproxy/ratelimit, the entries are matched level by level, and
// at each level the first of these that exists is taken: the descriptor
// with the entry's key and value, the first (in the configuration's order)
// with the entry's key and a wildcard value that matches it, the
// descriptor with the entry's key and no value. A rule applies only at the
// level of the last entry: a descriptor with more or fewer entries than
// the rule's depth does not match it.
func (c *Config) Match(domain string, entries []Entry) *Rule {
	d := c.domains[domain]
	if d == nil {
		return nil
	}
	return d.Match(entries)
}

// Match returns the rule of d that applies to a request descriptor, as
// [Config.Match] does.
func (d *Domain) Match(entries []Entry) *Rule {
	n := d.root
	for i, e := range entries {
		next := n.exact[e]
		if next == nil {
			for _, w := range n.wild {
				if w.key == e.Key && wildMatch(w.parts, e.Value) {
					next = w.n
					break
				}
			}
		}
		if next == nil {
			next = n.byKey[e.Key]
		}
		if next == nil {
			return nil
		}
		if i == len(entries)-1 {
			return next.rule
		}
		if next.children == 0 {
			return nil
		}
		n = next
	}
	return nil
}

// wildMatch reports whether v matches a value split at its '*'s: each '*'
// stands for any run of bytes, the empty one included.
func wildMatch(parts []string, v string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(v) < len(first)+len(last) || !strings.HasPrefix(v, first) || !strings.HasSuffix(v, last) {
		return false
	}
	mid := v[len(first) : len(v)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(mid, p)
		if i < 0 {
			return false
		}
		mid = mid[i+len(p):]
	}
	return true
}
