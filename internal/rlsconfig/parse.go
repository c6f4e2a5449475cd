package rlsconfig

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// documentation); file names it in errors. A file with errors gives no
// Domain, and an error that holds every error found (up to maxErrors), in
// the order of the file: each an *Error naming the file, the line and the
// field (errors.Join's; errors.As finds the first).
func Parse(file string, data []byte) (*Domain, error) {
	d, errs := parse(file, data)
	return d, errors.Join(errs...)
}

// maxErrors is the most errors reported of one file; a last one says how
// many more there are.
const maxErrors = 100

// parse is Parse, with its errors apart.
func parse(file string, data []byte) (*Domain, []error) {
	root, second, err := yamlpos.Read(file, data, maxFileSize, "a domain: and its descriptors:")
	if err != nil {
		return nil, []error{err}
	}
	p := parser{file: file, seen: map[string]bool{}}
	d := p.document(root)
	if second > 0 {
		p.add(&Error{File: file, Line: second, Err: errors.New("a second YAML document; a file holds one domain (envoyproxy/ratelimit reads only the first); split it into files")})
	}
	if len(p.errs) > 0 {
		// By line: a merged mapping's errors are found where it is merged.
		slices.SortStableFunc(p.errs, func(a, b error) int { return cmp.Compare(a.(*Error).Line, b.(*Error).Line) })
		if p.more > 0 {
			p.errs = append(p.errs, &Error{File: file, Line: p.moreLine, Err: fmt.Errorf("%d more errors from here on; fix the ones above first", p.more)})
		}
		return nil, p.errs
	}
	return d, nil
}

// parser reads one file. It goes on after an error, so that one reading
// reports them all: a part in error is left out of what it builds, and
// what depends on it is not checked (a duplicate of a descriptor whose key
// is wrong, say), so that no error is the echo of another.
type parser struct {
	file   string
	domain string
	rules  []*Rule

	errs     []error
	found    int             // errors found, repeats included
	seen     map[string]bool // errors' lines and texts: a merge key may repeat a part
	more     int             // errors past maxErrors
	moreLine int             // the line of the first of them
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) *Error {
	return yamlpos.At(p.file, n, field, format, args...)
}

// fail reports an error at n.
func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	p.add(p.errf(n, field, format, args...))
}

func (p *parser) add(e *Error) {
	p.found++
	// One line's one problem, whatever the field's path: a mapping
	// merged in two places has the same error in both.
	text := strconv.Itoa(e.Line) + " " + e.Err.Error()
	if p.seen[text] {
		return
	}
	p.seen[text] = true
	if len(p.errs) >= maxErrors {
		if p.more == 0 {
			p.moreLine = e.Line
		}
		p.more++
		return
	}
	p.errs = append(p.errs, e)
}

func (p *parser) document(root *yaml.Node) *Domain {
	if yamlpos.IsNull(root) {
		p.add(&Error{File: p.file, Err: errors.New("the file is empty; it needs a domain: and its descriptors:")})
		return nil
	}
	top, ok := p.fields(root, "", "domain", "descriptors")
	if !ok {
		return nil
	}
	name, ok := p.str(top["domain"], "domain")
	if ok && name == "" {
		at := yamlpos.Resolve(root)
		if n, ok := top["domain"]; ok {
			at = n
		}
		p.fail(at, "domain", "the domain is empty; every file needs one (domain: name)")
	}
	p.domain = name
	d := &Domain{Name: name, File: p.file, Line: yamlpos.Resolve(root).Line, root: newNode()}
	if n, ok := top["domain"]; ok {
		d.Line = n.Line
	}
	p.descriptors(top["descriptors"], "descriptors", d.root, name, nil)
	d.rules = p.rules
	return d
}

func newNode() *node {
	return &node{exact: map[Entry]*node{}, byKey: map[string]*node{}, names: map[string]place{}}
}

var descriptorFields = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold", "metadata"}

func (p *parser) descriptors(n *yaml.Node, field string, parent *node, fullKey string, path []step) {
	list := p.list(n, field, "descriptors")
	if len(list) > 0 && len(path) >= maxDepth {
		p.fail(n, field, "descriptors nested more than %d deep", maxDepth)
		return
	}
	for i, dn := range list {
		if dn != nil {
			p.descriptor(dn, fmt.Sprintf("%s[%d]", field, i), parent, fullKey, path)
		}
	}
}

func (p *parser) descriptor(dn *yaml.Node, field string, parent *node, fullKey string, path []step) {
	f, ok := p.fields(dn, field, descriptorFields...)
	if !ok {
		return
	}
	// named: the key and value are well formed and new at this level, so
	// that the descriptor can be added to its parent.
	var s step
	var okValue bool
	s.key, ok = p.str(f["key"], field+".key")
	s.value, okValue = p.str(f["value"], field+".value")
	named := ok && okValue
	if ok && s.key == "" {
		p.fail(dn, yamlpos.Join(field, "key"), "the descriptor has an empty key; every descriptor needs one (key: name)")
		named = false
	}
	composite := s.key
	if s.value != "" {
		composite += "_" + s.value
	}
	if prev, ok := parent.names[composite]; ok && named {
		at := fmt.Sprintf("line %d", prev.line)
		if prev.file != p.file {
			at = fmt.Sprintf("%s:%d", prev.file, prev.line)
		}
		p.fail(dn, field, "duplicate descriptor %s.%s (also at %s): a key and value may appear once per level, and envoyproxy/ratelimit joins them as key_value, so key: a_b and key: a, value: b are the same", fullKey, composite, at)
		named = false
	}
	if strings.Contains(s.value, "*") {
		s.parts = strings.Split(s.value, "*")
	}
	s.share, _ = p.boolean(f["share_threshold"], yamlpos.Join(field, "share_threshold"))
	s.valueToMetric, _ = p.boolean(f["value_to_metric"], yamlpos.Join(field, "value_to_metric"))
	if s.share && okValue && !strings.Contains(composite, "*") {
		p.fail(f["share_threshold"], yamlpos.Join(field, "share_threshold"), "share_threshold applies only to a wildcard value (one with '*'), and %q has none", s.value)
	}

	n := newNode()
	myKey := fullKey + "." + composite
	myPath := append(slices.Clip(path), s)
	var r *Rule
	rl := f["rate_limit"]
	if !yamlpos.IsNull(rl) {
		r = &Rule{Domain: p.domain, FullKey: myKey, File: p.file, Line: dn.Line, ValueToMetric: s.valueToMetric, path: myPath,
			limitLine: rl.Line, limitField: yamlpos.Join(field, "rate_limit")}
	}
	// The flags mean nothing without a rule, but must still be well
	// formed.
	var flags [3]bool
	for i, name := range []string{"shadow_mode", "quota_mode", "detailed_metric"} {
		flags[i], _ = p.boolean(f[name], yamlpos.Join(field, name))
	}
	m := f["metadata"]
	if !yamlpos.IsNull(m) && m.Kind != yaml.MappingNode {
		p.fail(m, yamlpos.Join(field, "metadata"), "want a mapping, got %s", yamlpos.KindName(m))
	} else if !yamlpos.IsNull(m) && r != nil {
		if err := m.Decode(&r.Metadata); err != nil {
			p.fail(m, yamlpos.Join(field, "metadata"), "%v", err)
		}
	}
	if r != nil {
		r.ShadowMode, r.QuotaMode, r.DetailedMetric = flags[0], flags[1], flags[2]
		p.rateLimit(rl, yamlpos.Join(field, "rate_limit"), r)
		n.rule = r
		p.rules = append(p.rules, r)
	}
	p.descriptors(f["descriptors"], yamlpos.Join(field, "descriptors"), n, myKey, myPath)
	if named {
		parent.add(s, n, place{p.file, dn.Line}, composite)
	}
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
