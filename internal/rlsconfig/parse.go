package rlsconfig

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/yamlpos"
)

// maxFileSize is the largest configuration file read.
const maxFileSize = 16 << 20

// maxDepth is the deepest nesting of descriptors accepted.
const maxDepth = 32

// Domain is one configuration file: a domain and its descriptors.
type Domain struct {
	// Name is the domain, which requests name.
	Name string
	// File and Line say where the domain is defined.
	File string
	Line int

	root  *node
	rules []*Rule
}

// Rules returns the domain's rules in the order of the file. The slice is
// shared and must not be modified.
func (d *Domain) Rules() []*Rule { return d.rules }

// Parse reads one configuration file in envoyproxy/ratelimit's format,
// with floodgate's additions to rate_limit (see the package
// documentation); file names it in errors. Every error is an *Error naming
// the file, the line and the field.
func Parse(file string, data []byte) (*Domain, error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: file, Err: fmt.Errorf("the file is %d bytes, more than %d", len(data), maxFileSize)}
	}
	doc, err := decode(data)
	var e *Error
	switch {
	case errors.Is(err, io.EOF):
		return nil, &Error{File: file, Err: errors.New("the file is empty; it needs a domain: and its descriptors:")}
	case errors.As(err, &e):
		e.File = file
		return nil, e
	case err != nil:
		line, msg := yamlpos.Line(data, err, func(b []byte) error {
			_, err := decode(b)
			return err
		})
		return nil, &Error{File: file, Line: line, Err: errors.New(msg)}
	}
	p := parser{file: file}
	return p.document(doc)
}

// decode reads the one YAML document data holds: io.EOF when there is
// none, an *Error without its file when there is a second.
func decode(data []byte) (*yaml.Node, error) {
	doc, second, err := yamlpos.One(data)
	if err == nil && second > 0 {
		return nil, &Error{Line: second, Err: errors.New("a second YAML document; a file holds one domain (envoyproxy/ratelimit reads only the first); split it into files")}
	}
	return doc, err
}

type parser struct {
	file   string
	domain string
	rules  []*Rule
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

func (p *parser) document(doc *yaml.Node) (*Domain, error) {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, &Error{File: p.file, Err: errors.New("the file is empty; it needs a domain: and its descriptors:")}
		}
		root = root.Content[0]
	}
	if isNull(root) {
		return nil, &Error{File: p.file, Err: errors.New("the file is empty; it needs a domain: and its descriptors:")}
	}
	top, err := p.fields(root, "", "domain", "descriptors")
	if err != nil {
		return nil, err
	}
	name, err := p.str(top["domain"], "domain")
	if err != nil {
		return nil, err
	}
	if name == "" {
		at := resolve(root)
		if n, ok := top["domain"]; ok {
			at = n
		}
		return nil, p.errf(at, "domain", "the domain is empty; every file needs one (domain: name)")
	}
	p.domain = name
	d := &Domain{Name: name, File: p.file, Line: resolve(root).Line, root: newNode()}
	if n, ok := top["domain"]; ok {
		d.Line = n.Line
	}
	if err := p.descriptors(top["descriptors"], "descriptors", d.root, name, nil); err != nil {
		return nil, err
	}
	d.rules = p.rules
	return d, nil
}

func newNode() *node {
	return &node{exact: map[Entry]*node{}, byKey: map[string]*node{}, names: map[string]place{}}
}

var descriptorFields = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold", "metadata"}

func (p *parser) descriptors(n *yaml.Node, field string, parent *node, fullKey string, path []step) error {
	list, err := p.list(n, field, "descriptors")
	if err != nil {
		return err
	}
	if len(list) > 0 && len(path) >= maxDepth {
		return p.errf(n, field, "descriptors nested more than %d deep", maxDepth)
	}
	for i, dn := range list {
		if err := p.descriptor(dn, fmt.Sprintf("%s[%d]", field, i), parent, fullKey, path); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) descriptor(dn *yaml.Node, field string, parent *node, fullKey string, path []step) error {
	f, err := p.fields(dn, field, descriptorFields...)
	if err != nil {
		return err
	}
	var s step
	if s.key, err = p.str(f["key"], field+".key"); err != nil {
		return err
	}
	if s.key == "" {
		return p.errf(dn, join(field, "key"), "the descriptor has an empty key; every descriptor needs one (key: name)")
	}
	if s.value, err = p.str(f["value"], field+".value"); err != nil {
		return err
	}
	composite := s.key
	if s.value != "" {
		composite += "_" + s.value
	}
	if prev, ok := parent.names[composite]; ok {
		at := fmt.Sprintf("line %d", prev.line)
		if prev.file != p.file {
			at = fmt.Sprintf("%s:%d", prev.file, prev.line)
		}
		return p.errf(dn, field, "duplicate descriptor %s.%s (also at %s): a key and value may appear once per level, and envoyproxy/ratelimit joins them as key_value, so key: a_b and key: a, value: b are the same", fullKey, composite, at)
	}
	if strings.Contains(s.value, "*") {
		s.parts = strings.Split(s.value, "*")
	}
	flags := [...]struct {
		name string
		to   *bool
	}{{"share_threshold", &s.share}, {"value_to_metric", &s.valueToMetric}}
	for _, fl := range flags {
		if *fl.to, err = p.boolean(f[fl.name], join(field, fl.name)); err != nil {
			return err
		}
	}
	if s.share && !strings.Contains(composite, "*") {
		return p.errf(f["share_threshold"], join(field, "share_threshold"), "share_threshold applies only to a wildcard value (one with '*'), and %q has none", s.value)
	}

	n := newNode()
	myKey := fullKey + "." + composite
	myPath := append(slices.Clip(path), s)
	if rl := f["rate_limit"]; !isNull(rl) {
		r := &Rule{Domain: p.domain, FullKey: myKey, File: p.file, Line: dn.Line, ValueToMetric: s.valueToMetric, path: myPath}
		for _, fl := range [...]struct {
			name string
			to   *bool
		}{{"shadow_mode", &r.ShadowMode}, {"quota_mode", &r.QuotaMode}, {"detailed_metric", &r.DetailedMetric}} {
			if *fl.to, err = p.boolean(f[fl.name], join(field, fl.name)); err != nil {
				return err
			}
		}
		if m := f["metadata"]; !isNull(m) {
			if m.Kind != yaml.MappingNode {
				return p.errf(m, join(field, "metadata"), "want a mapping, got %s", kindName(m))
			}
			if err := m.Decode(&r.Metadata); err != nil {
				return p.errf(m, join(field, "metadata"), "%v", err)
			}
		}
		if err := p.rateLimit(rl, join(field, "rate_limit"), r); err != nil {
			return err
		}
		n.rule = r
		p.rules = append(p.rules, r)
	} else {
		// The flags mean nothing without a rule, but must still be
		// well formed.
		for _, name := range []string{"shadow_mode", "quota_mode", "detailed_metric"} {
			if _, err := p.boolean(f[name], join(field, name)); err != nil {
				return err
			}
		}
		if m := f["metadata"]; !isNull(m) && m.Kind != yaml.MappingNode {
			return p.errf(m, join(field, "metadata"), "want a mapping, got %s", kindName(m))
		}
	}
	if err := p.descriptors(f["descriptors"], join(field, "descriptors"), n, myKey, myPath); err != nil {
		return err
	}
	parent.add(s, n, place{p.file, dn.Line}, composite)
	return nil
}

// add puts child, the descriptor s, under n.
func (n *node) add(s step, child *node, at place, composite string) {
	n.names[composite] = at
	n.children++
	switch {
	case s.value == "":
		n.byKey[s.key] = child
	default:
		n.exact[Entry{s.key, s.value}] = child
		if s.parts != nil {
			n.wild = append(n.wild, wildcard{key: s.key, parts: s.parts, n: child})
		}
	}
}
