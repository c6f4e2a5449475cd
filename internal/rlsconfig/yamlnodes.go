package rlsconfig

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

func join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// Where each of envoyproxy/ratelimit's keys belongs, for the error of a
// key in the wrong place (which it accepts and ignores).
var belongs = map[string]string{
	"domain": "the top", "descriptors": "the top or a descriptor",
	"key": "a descriptor", "value": "a descriptor", "rate_limit": "a descriptor",
	"shadow_mode": "a descriptor, beside rate_limit", "quota_mode": "a descriptor, beside rate_limit",
	"detailed_metric": "a descriptor, beside rate_limit", "value_to_metric": "a descriptor, beside rate_limit",
	"share_threshold": "a descriptor, beside rate_limit", "metadata": "a descriptor, beside rate_limit",
	"unit": "rate_limit", "requests_per_unit": "rate_limit", "unlimited": "rate_limit",
	"name": "rate_limit or one of its replaces", "replaces": "rate_limit",
	"algorithm": "rate_limit or one of its limits", "burst": "rate_limit or one of its limits", "limits": "rate_limit",
}

// fields reads a mapping's keys, refusing unknown, misplaced and repeated
// ones, and keys that are not strings. A merge key ("<<: *anchor") takes
// the anchored mapping's keys that the mapping does not set itself.
func (p *parser) fields(n *yaml.Node, field string, known ...string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, p.errf(n, field, "want a mapping (key: value lines), got %s", kindName(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	lines := make(map[string]int, len(n.Content)/2)
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, resolve(v))
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, p.errf(k, field, "the key %s is not a string; use one of %s", kindName(k), strings.Join(known, ", "))
		}
		if prev, ok := lines[k.Value]; ok {
			return nil, p.errf(k, join(field, k.Value), "given twice (first at line %d); keep one", prev)
		}
		if !slices.Contains(known, k.Value) {
			if where, ok := belongs[k.Value]; ok {
				return nil, p.errf(k, join(field, k.Value), "unknown key here; it belongs in %s (envoyproxy/ratelimit ignores it here)", where)
			}
			return nil, p.errf(k, join(field, k.Value), "unknown key %q; use one of %s", k.Value, strings.Join(known, ", "))
		}
		lines[k.Value] = k.Line
		out[k.Value] = resolve(v)
	}
	for _, m := range merged {
		from, err := p.fields(m, field, known...)
		if err != nil {
			return nil, err
		}
		for k, v := range from {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

// str reads a single value as text, as envoyproxy/ratelimit does (a
// number stays as written); nothing is "".
func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, field, "want a single value, got %s", kindName(n))
	}
	return n.Value, nil
}

// boolean reads true or false, and YAML 1.1's spellings (yes, on, ...)
// that envoyproxy/ratelimit's decoder accepts; nothing is false.
func (p *parser) boolean(n *yaml.Node, field string) (bool, error) {
	if isNull(n) {
		return false, nil
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "" || n.ShortTag() == "!!bool" || n.ShortTag() == "!!str") {
		switch n.Value {
		case "true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
			return true, nil
		case "false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
			return false, nil
		}
	}
	return false, p.errf(n, field, "want true or false, got %s", kindName(n))
}

// list reads a list of mappings; nothing is an empty list.
func (p *parser) list(n *yaml.Node, field, what string) ([]*yaml.Node, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "want a list of %s, got %s", what, kindName(n))
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		e = resolve(e)
		if e.Kind != yaml.MappingNode {
			return nil, p.errf(e, fmt.Sprintf("%s[%d]", field, i), "want %s (a mapping, key: value lines), got %s", what, kindName(e))
		}
		out[i] = e
	}
	return out, nil
}
