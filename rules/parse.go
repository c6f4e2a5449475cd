package rules

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/yamlpos"
)

// maxFileSize is the largest rules file read, so that a runaway file
// cannot make a reload hold megabytes of YAML nodes.
const maxFileSize = 1 << 20

// maxRules is the most rules a file may hold.
const maxRules = 1000

// parse reads a rules file's contents; file names it in errors. Every
// error is an *Error naming the file, the line and the field. parse
// checks everything it can without building limiters: unknown fields,
// limits, algorithms and their options, keys, costs, matches and
// duplicate names. Keys registered with [WithKey] are checked when the
// rules are compiled.
func parse(file string, data []byte) ([]Rule, error) {
	root, second, err := yamlpos.Read(file, data, maxFileSize, "a rules: list")
	if err != nil {
		return nil, err
	}
	if second > 0 {
		return nil, &Error{File: file, Line: second, Err: errors.New("a second YAML document; a rules file holds one")}
	}
	p := parser{file: file}
	return p.document(root)
}

type parser struct {
	file string
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	return yamlpos.At(p.file, n, field, format, args...)
}

// fields reads a mapping's keys, refusing unknown and repeated ones.
func (p *parser) fields(n *yaml.Node, field string, known ...string) (map[string]*yaml.Node, error) {
	n = yamlpos.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, p.errf(n, field, "want a mapping (key: value lines), got %s", yamlpos.KindName(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	keys := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := yamlpos.Resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			return nil, p.errf(k, field, "a key must be a plain word")
		}
		if prev, ok := keys[k.Value]; ok {
			return nil, p.errf(k, yamlpos.Join(field, k.Value), "given twice (first at line %d)", prev)
		}
		ok := false
		for _, w := range known {
			ok = ok || w == k.Value
		}
		if !ok {
			return nil, p.errf(k, yamlpos.Join(field, k.Value), "unknown field; use %s", strings.Join(known, ", "))
		}
		keys[k.Value] = k.Line
		out[k.Value] = yamlpos.Resolve(v)
	}
	return out, nil
}

func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", p.errf(n, field, "want a single value, got %s", yamlpos.KindName(n))
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, error) {
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, nil
		}
	}
	return false, p.errf(n, field, "want true or false, got %s", yamlpos.KindName(n))
}

// list reads a list of strings; a single value is a list of one.
func (p *parser) list(n *yaml.Node, field string) ([]string, []*yaml.Node, error) {
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		return []string{n.Value}, []*yaml.Node{n}, nil
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, nil, p.errf(n, field, "want a list, got %s", yamlpos.KindName(n))
	}
	if len(n.Content) == 0 {
		return nil, nil, p.errf(n, field, "the list is empty; leave the field out instead")
	}
	var out []string
	var nodes []*yaml.Node
	for i, e := range n.Content {
		e = yamlpos.Resolve(e)
		s, err := p.str(e, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, s)
		nodes = append(nodes, e)
	}
	return out, nodes, nil
}

func (p *parser) document(root *yaml.Node) ([]Rule, error) {
	top, err := p.fields(root, "", "rules")
	if err != nil {
		return nil, err
	}
	rs, ok := top["rules"]
	if !ok {
		return nil, p.errf(yamlpos.Resolve(root), "", "no rules: list")
	}
	if rs == nil || rs.Kind != yaml.SequenceNode {
		return nil, p.errf(rs, "rules", "want a list of rules, got %s", yamlpos.KindName(rs))
	}
	if len(rs.Content) > maxRules {
		return nil, p.errf(rs, "rules", "%d rules, more than %d", len(rs.Content), maxRules)
	}
	var out []Rule
	names := map[string]int{}
	for i, n := range rs.Content {
		r, err := p.rule(yamlpos.Resolve(n), fmt.Sprintf("rules[%d]", i))
		if err != nil {
			return nil, err
		}
		if prev, ok := names[r.Name]; ok {
			return nil, p.errf(yamlpos.Resolve(n), fmt.Sprintf("rules[%d].name", i), "%q is the name of the rule at line %d too; names must be distinct", r.Name, prev)
		}
		names[r.Name] = r.Line
		out = append(out, r)
	}
	return out, nil
}

var ruleFields = []string{"name", "match", "limit", "limits", "algorithm", "warm-up", "cold-factor", "max-delay", "key", "cost", "shadow", "shadow-headers"}

func (p *parser) rule(n *yaml.Node, field string) (Rule, error) {
	f, err := p.fields(n, field, ruleFields...)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Line: n.Line}
	nameNode, ok := f["name"]
	if !ok {
		return Rule{}, p.errf(n, field, "no name; every rule needs one")
	}
	if r.Name, err = p.str(nameNode, field+".name"); err != nil {
		return Rule{}, err
	}
	if _, err := core.ParseLimit("1/s name=" + r.Name); err != nil || strings.ContainsAny(r.Name, " \t") {
		return Rule{}, p.errf(nameNode, field+".name", "%q: use 1 to 64 letters, digits and . _ - : (it names the policy)", r.Name)
	}

	m, ok := f["match"]
	if !ok {
		return Rule{}, p.errf(n, field, "no match; say which requests the rule applies to")
	}
	if err := p.match(m, field+".match", &r); err != nil {
		return Rule{}, err
	}

	if err := p.limits(n, f, field, &r); err != nil {
		return Rule{}, err
	}
	if err := p.algorithm(f, field, &r); err != nil {
		return Rule{}, err
	}

	r.Key = []string{"ip"}
	if k, ok := f["key"]; ok {
		if r.Key, err = p.key(k, field+".key", &r); err != nil {
			return Rule{}, err
		}
	}
	if c, ok := f["cost"]; ok {
		if err := p.cost(c, field+".cost", &r); err != nil {
			return Rule{}, err
		}
	}
	if s, ok := f["shadow"]; ok {
		if r.Shadow, err = p.boolean(s, field+".shadow"); err != nil {
			return Rule{}, err
		}
	}
	if s, ok := f["shadow-headers"]; ok {
		if r.ShadowHeaders, err = p.boolean(s, field+".shadow-headers"); err != nil {
			return Rule{}, err
		}
		if r.ShadowHeaders && !r.Shadow {
			return Rule{}, p.errf(s, field+".shadow-headers", "only means something with shadow: true")
		}
	}
	return r, nil
}
