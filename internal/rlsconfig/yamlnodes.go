package rlsconfig

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/yamlpos"
)

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
	"local_quota": "rate_limit",
}

// fields reads a mapping's keys, reporting unknown, misplaced and
// repeated ones, and keys that are not strings, and leaving them out. A
// merge key ("<<: *anchor") takes the anchored mapping's keys that the
// mapping does not set itself. ok is false when n is not a mapping.
func (p *parser) fields(n *yaml.Node, field string, known ...string) (map[string]*yaml.Node, bool) {
	n = yamlpos.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.fail(n, field, "want a mapping (key: value lines), got %s", yamlpos.KindName(n))
		return nil, false
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	lines := make(map[string]int, len(n.Content)/2)
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := yamlpos.Resolve(n.Content[i]), n.Content[i+1]
		switch {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			merged = append(merged, yamlpos.Resolve(v))
		case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
			p.fail(k, field, "the key %s is not a string; use one of %s", yamlpos.KindName(k), strings.Join(known, ", "))
		case lines[k.Value] > 0:
			p.fail(k, yamlpos.Join(field, k.Value), "given twice (first at line %d); keep one", lines[k.Value])
		case !slices.Contains(known, k.Value):
			if where, ok := belongs[k.Value]; ok {
				p.fail(k, yamlpos.Join(field, k.Value), "unknown key here; it belongs in %s (envoyproxy/ratelimit ignores it here)", where)
			} else {
				p.fail(k, yamlpos.Join(field, k.Value), "unknown key %q; use one of %s", k.Value, strings.Join(known, ", "))
			}
		default:
			lines[k.Value] = max(k.Line, 1)
			out[k.Value] = yamlpos.Resolve(v)
		}
	}
	for _, m := range merged {
		from, ok := p.fields(m, field, known...)
		if !ok {
			continue
		}
		for k, v := range from {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out, true
}

// str reads a single value as text, as envoyproxy/ratelimit does (a
// number stays as written); nothing is "". ok is false, the error
// reported, for anything else.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	if yamlpos.IsNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		p.fail(n, field, "want a single value, got %s", yamlpos.KindName(n))
		return "", false
	}
	return n.Value, true
}

// boolean reads true or false, and YAML 1.1's spellings (yes, on, ...)
// that envoyproxy/ratelimit's decoder accepts; nothing is false. ok is
// false, the error reported, for anything else.
func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	if yamlpos.IsNull(n) {
		return false, true
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "" || n.ShortTag() == "!!bool" || n.ShortTag() == "!!str") {
		switch n.Value {
		case "true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
			return true, true
		case "false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
			return false, true
		}
	}
	p.fail(n, field, "want true or false, got %s", yamlpos.KindName(n))
	return false, false
}

// list reads a list of mappings; nothing is an empty list. An entry that
// is not a mapping is reported and nil in the list, so that the others
// keep their indexes.
func (p *parser) list(n *yaml.Node, field, what string) []*yaml.Node {
	if yamlpos.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "want a list of %s, got %s", what, yamlpos.KindName(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		e = yamlpos.Resolve(e)
		if e.Kind != yaml.MappingNode {
			p.fail(e, fmt.Sprintf("%s[%d]", field, i), "want %s (a mapping, key: value lines), got %s", what, yamlpos.KindName(e))
			continue
		}
		out[i] = e
	}
	return out
}
