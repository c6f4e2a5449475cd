package rlsconfig

import (
	"errors"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/yamlpos"
)

// DomainData is a configuration file's content as Go values, for
// configurations that arrive as data rather than YAML: envoyproxy/ratelimit's
// xDS RateLimitConfig resources, say. It holds envoyproxy/ratelimit's
// fields only; floodgate's additions to rate_limit are YAML's alone.
type DomainData struct {
	Domain      string
	Descriptors []DescriptorData
}

// DescriptorData is one descriptor, with the fields of the format's
// descriptor of the same names.
type DescriptorData struct {
	Key, Value     string
	RateLimit      *RateLimitData // nil: no rate_limit
	Descriptors    []DescriptorData
	ShadowMode     bool
	QuotaMode      bool
	DetailedMetric bool
	ValueToMetric  bool
	ShareThreshold bool
	// Metadata holds maps with string keys, slices, strings, numbers,
	// booleans and nil, as encoding/json or structpb's AsMap give them.
	Metadata map[string]any
}

// RateLimitData is a descriptor's rate_limit.
type RateLimitData struct {
	// Unit is the unit's name in any case ("SECOND"); "" is no unit.
	Unit            string
	RequestsPerUnit uint32
	Unlimited       bool
	Name            string
	// Replaces are the names of the rules this one replaces.
	Replaces []string
}

// FromData returns the domain d describes, checked as [Parse] checks a
// file with the same content: the same rules, and the same errors for
// the same mistakes. file names the source in errors and rules.
// Errors are *Error values with the field's path and no line, since data
// has none; a repeated descriptor's error names the first one's path
// where a file's gives its line.
func FromData(file string, d *DomainData) (*Domain, error) {
	if d == nil {
		return nil, &Error{File: file, Err: errors.New("no domain data")}
	}
	b := dataBuilder{file: file}
	root := mapping("domain", str(d.Domain))
	if list := b.descriptors(d.Descriptors, "descriptors", d.Domain, 0); list != nil {
		root.Content = append(root.Content, str("descriptors"), list)
	}
	p := parser{file: file, seen: map[string]bool{}}
	dom := p.document(root)
	errs := p.errs
	if b.stop != nil {
		// The tree ends where the builder found its error, so the
		// parser's errors all come before it, as in a file.
		errs = append(errs, b.stop)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return dom, nil
}

// dataBuilder turns data into the YAML nodes the parser reads, so that one
// set of checks serves both. The nodes carry no lines.
type dataBuilder struct {
	file string
	// stop is the first error the builder finds itself; the tree stops
	// there.
	stop *Error
}

func (b *dataBuilder) descriptors(list []DescriptorData, field, fullKey string, depth int) *yaml.Node {
	if len(list) == 0 {
		return nil
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if depth >= maxDepth {
		// The parser refuses a list this deep before it reads an entry.
		seq.Content = append(seq.Content, mapping())
		return seq
	}
	// The parser's error for a repeated descriptor gives the first one's
	// line, which data does not have; this one gives its path.
	first := make(map[string]string, len(list))
	for i, d := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		composite := d.Key
		if d.Value != "" {
			composite += "_" + d.Value
		}
		if prev, ok := first[composite]; ok && d.Key != "" {
			b.stop = &Error{File: b.file, Field: f, Err: fmt.Errorf("duplicate descriptor %s.%s (also %s): a key and value may appear once per level, and envoyproxy/ratelimit joins them as key_value, so key: a_b and key: a, value: b are the same", fullKey, composite, prev)}
			return seq
		}
		first[composite] = f
		seq.Content = append(seq.Content, b.descriptor(d, f, fullKey+"."+composite, depth))
		if b.stop != nil {
			return seq
		}
	}
	return seq
}

func (b *dataBuilder) descriptor(d DescriptorData, field, fullKey string, depth int) *yaml.Node {
	n := mapping("key", str(d.Key))
	if d.Value != "" {
		n.Content = append(n.Content, str("value"), str(d.Value))
	}
	if rl := d.RateLimit; rl != nil {
		r := mapping("requests_per_unit", scalar("!!int", strconv.FormatUint(uint64(rl.RequestsPerUnit), 10)))
		if rl.Unit != "" {
			r.Content = append(r.Content, str("unit"), str(rl.Unit))
		}
		if rl.Unlimited {
			r.Content = append(r.Content, str("unlimited"), scalar("!!bool", "true"))
		}
		if rl.Name != "" {
			r.Content = append(r.Content, str("name"), str(rl.Name))
		}
		if len(rl.Replaces) > 0 {
			rep := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, name := range rl.Replaces {
				rep.Content = append(rep.Content, mapping("name", str(name)))
			}
			r.Content = append(r.Content, str("replaces"), rep)
		}
		n.Content = append(n.Content, str("rate_limit"), r)
	}
	for _, fl := range [...]struct {
		name string
		on   bool
	}{{"shadow_mode", d.ShadowMode}, {"quota_mode", d.QuotaMode}, {"detailed_metric", d.DetailedMetric}, {"value_to_metric", d.ValueToMetric}, {"share_threshold", d.ShareThreshold}} {
		if fl.on {
			n.Content = append(n.Content, str(fl.name), scalar("!!bool", "true"))
		}
	}
	if d.Metadata != nil {
		var m yaml.Node
		if err := m.Encode(d.Metadata); err != nil {
			b.stop = &Error{File: b.file, Field: yamlpos.Join(field, "metadata"), Err: err}
			return n
		}
		n.Content = append(n.Content, str("metadata"), &m)
	}
	if list := b.descriptors(d.Descriptors, yamlpos.Join(field, "descriptors"), fullKey, depth+1); list != nil {
		n.Content = append(n.Content, str("descriptors"), list)
	}
	return n
}

// mapping returns a mapping node of alternating keys (plain strings) and
// values.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

// str is a string scalar, tagged so that no value reads as another type
// ("true", "1", "" stay strings).
func str(s string) *yaml.Node { return scalar("!!str", s) }

func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}
