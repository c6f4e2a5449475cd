package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/core"
)

// MaxFileSize is the largest rules file Parse reads, so that a runaway file
// cannot make a reload hold megabytes of YAML nodes.
const MaxFileSize = 1 << 20

// MaxRules is the most rules a file may hold.
const MaxRules = 1000

// Error is what is wrong with a rules file: the file, the line (1-based; 0
// when the error concerns the whole file) and the field, as a path from the
// top ("rules[1].limit"), and why.
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error formats e as "file:line: field: why", the form compilers use, so
// that editors can jump to it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause, so that errors.Is sees core's errors.
func (e *Error) Unwrap() error { return e.Err }

// Rule is one parsed rule: what it matches and the policy it applies.
type Rule struct {
	// Name identifies the rule in logs and is the policy name clients see
	// in RateLimit-Policy when the limit carries no name= of its own.
	Name string
	// Line is where the rule starts in its file.
	Line int
	// Paths are exact paths ("/login") or prefixes ending in "/*"
	// ("/api/*" matches every path under "/api/"); "/*" matches all.
	Paths []string
	// Methods are HTTP methods, upper case; empty means any.
	Methods []string
	// GRPC are full gRPC methods ("/pkg.Service/Method"), whole services
	// ("/pkg.Service/*") or "*" for every method.
	GRPC []string
	// Limits are the rule's limits: one, or several enforced all or
	// nothing (a core.Stack).
	Limits []core.Limit
	// Algorithm applies to every limit (default core.TokenBucket).
	Algorithm core.Algorithm
	// WarmUp and ColdFactor configure core.WarmUp; MaxDelay configures
	// core.LeakyBucket (0: core's default).
	WarmUp     time.Duration
	ColdFactor float64
	MaxDelay   time.Duration
	// Key is what the rule counts by: parts joined by "+" (see the package
	// documentation), "ip" by default.
	Key []string
	// Cost is a fixed cost per request (0: 1), or with CostUnit > 0 the
	// body's Content-Length in units of CostUnit bytes, and CostUnknown
	// for a body of unknown length (httpmw.RefuseUnknownLength: refused).
	Cost        int
	CostUnit    int64
	CostUnknown int
	// Shadow runs the rule's middleware in shadow mode (httpmw.WithShadow,
	// grpcmw.WithShadow); ShadowHeaders sends its rate-limit fields.
	Shadow        bool
	ShadowHeaders bool
}

// policy is the part of a rule that decides its limiter's state: two
// rules with the same policy can share one limiter, and a reload keeps
// the limiter of a rule whose policy did not change.
func (r *Rule) policy() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %v %v %v %v", r.Name, r.Algorithm, r.WarmUp, r.ColdFactor, r.MaxDelay)
	for _, l := range r.Limits {
		fmt.Fprintf(&b, " [%d %d %d %q]", l.Events, l.Period, l.EffectiveBurst(), l.Name)
	}
	fmt.Fprintf(&b, " key=%q", r.Key)
	return b.String()
}

// algorithms maps the names the file accepts to core's algorithms: the
// names core's Algorithm.String gives them.
var algorithms = map[string]core.Algorithm{}

func init() {
	for _, a := range []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow,
		core.LeakyBucket, core.WarmUp, core.SlidingLog, core.Concurrency} {
		algorithms[a.String()] = a
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse reads a rules file's contents; file names it in errors. Every
// error is an *Error naming the file, the line and the field. Parse
// checks everything it can without building limiters: unknown fields,
// limits, algorithms and their options, keys, costs, matches and
// duplicate names. Keys registered with [WithKey] are checked when the
// rules are compiled.
func Parse(file string, data []byte) ([]Rule, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Err: fmt.Errorf("the file is %d bytes, more than %d", len(data), MaxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Err: errors.New("the file is empty; it needs a rules: list")}
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Err: errors.New("a second YAML document; a rules file holds one")}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(file, err)
	}
	p := parser{file: file}
	return p.document(&doc)
}

func yamlError(file string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: n, Err: errors.New("yaml: " + m[2])}
	}
	return &Error{File: file, Err: err}
}

type parser struct {
	file string
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// fields reads a mapping's keys, refusing unknown and repeated ones.
func (p *parser) fields(n *yaml.Node, field string, known ...string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, p.errf(n, field, "want a mapping (key: value lines), got %s", kindName(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	keys := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			return nil, p.errf(k, field, "a key must be a plain word")
		}
		if prev, ok := keys[k.Value]; ok {
			return nil, p.errf(k, join(field, k.Value), "given twice (first at line %d)", prev)
		}
		ok := false
		for _, w := range known {
			ok = ok || w == k.Value
		}
		if !ok {
			return nil, p.errf(k, join(field, k.Value), "unknown field; use %s", strings.Join(known, ", "))
		}
		keys[k.Value] = k.Line
		out[k.Value] = resolve(v)
	}
	return out, nil
}

func join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", p.errf(n, field, "want a single value, got %s", kindName(n))
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
	return false, p.errf(n, field, "want true or false, got %s", kindName(n))
}

// list reads a list of strings; a single value is a list of one.
func (p *parser) list(n *yaml.Node, field string) ([]string, []*yaml.Node, error) {
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		return []string{n.Value}, []*yaml.Node{n}, nil
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, nil, p.errf(n, field, "want a list, got %s", kindName(n))
	}
	if len(n.Content) == 0 {
		return nil, nil, p.errf(n, field, "the list is empty; leave the field out instead")
	}
	var out []string
	var nodes []*yaml.Node
	for i, e := range n.Content {
		e = resolve(e)
		s, err := p.str(e, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, s)
		nodes = append(nodes, e)
	}
	return out, nodes, nil
}

func (p *parser) document(doc *yaml.Node) ([]Rule, error) {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, &Error{File: p.file, Err: errors.New("the file is empty; it needs a rules: list")}
		}
		root = root.Content[0]
	}
	top, err := p.fields(root, "", "rules")
	if err != nil {
		return nil, err
	}
	rs, ok := top["rules"]
	if !ok {
		return nil, p.errf(resolve(root), "", "no rules: list")
	}
	if rs == nil || rs.Kind != yaml.SequenceNode {
		return nil, p.errf(rs, "rules", "want a list of rules, got %s", kindName(rs))
	}
	if len(rs.Content) > MaxRules {
		return nil, p.errf(rs, "rules", "%d rules, more than %d", len(rs.Content), MaxRules)
	}
	var out []Rule
	names := map[string]int{}
	for i, n := range rs.Content {
		r, err := p.rule(resolve(n), fmt.Sprintf("rules[%d]", i))
		if err != nil {
			return nil, err
		}
		if prev, ok := names[r.Name]; ok {
			return nil, p.errf(resolve(n), fmt.Sprintf("rules[%d].name", i), "%q is the name of the rule at line %d too; names must be distinct", r.Name, prev)
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

func (p *parser) match(n *yaml.Node, field string, r *Rule) error {
	f, err := p.fields(n, field, "paths", "methods", "grpc")
	if err != nil {
		return err
	}
	if v, ok := f["paths"]; ok {
		paths, nodes, err := p.list(v, field+".paths")
		if err != nil {
			return err
		}
		for i, s := range paths {
			if err := checkPath(s); err != nil {
				return p.errf(nodes[i], fmt.Sprintf("%s.paths[%d]", field, i), "%q: %v", s, err)
			}
		}
		r.Paths = paths
	}
	if v, ok := f["methods"]; ok {
		if r.Paths == nil {
			return p.errf(v, field+".methods", "methods need paths: they restrict which HTTP requests on those paths match")
		}
		ms, nodes, err := p.list(v, field+".methods")
		if err != nil {
			return err
		}
		for i, s := range ms {
			if !isMethod(s) {
				return p.errf(nodes[i], fmt.Sprintf("%s.methods[%d]", field, i), "%q is not an HTTP method; write it in upper case, like GET or POST", s)
			}
		}
		r.Methods = ms
	}
	if v, ok := f["grpc"]; ok {
		gs, nodes, err := p.list(v, field+".grpc")
		if err != nil {
			return err
		}
		for i, s := range gs {
			if !isGRPCPattern(s) {
				return p.errf(nodes[i], fmt.Sprintf("%s.grpc[%d]", field, i), "%q: want a full method \"/pkg.Service/Method\", a service \"/pkg.Service/*\" or \"*\"", s)
			}
		}
		r.GRPC = gs
	}
	if r.Paths == nil && r.GRPC == nil {
		return p.errf(n, field, "matches nothing; give paths, grpc or both")
	}
	return nil
}

func checkPath(s string) error {
	if !strings.HasPrefix(s, "/") {
		return errors.New("a path starts with /")
	}
	if i := strings.IndexByte(s, '*'); i >= 0 && (i != len(s)-1 || !strings.HasSuffix(s, "/*")) {
		return errors.New("* may only end a prefix, as in /api/*")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f || s[i] == '?' || s[i] == '#' {
			return fmt.Errorf("byte %q at %d has no place in a path", s[i], i)
		}
	}
	return nil
}

func isMethod(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isGRPCPattern(s string) bool {
	if s == "*" {
		return true
	}
	svc, m, ok := strings.Cut(strings.TrimPrefix(s, "/"), "/")
	if !ok || !strings.HasPrefix(s, "/") || svc == "" || m == "" || strings.Contains(m, "/") {
		return false
	}
	if strings.Contains(svc, "*") || (strings.Contains(m, "*") && m != "*") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (p *parser) limits(n *yaml.Node, f map[string]*yaml.Node, field string, r *Rule) error {
	one, hasOne := f["limit"]
	many, hasMany := f["limits"]
	switch {
	case hasOne && hasMany:
		return p.errf(many, field+".limits", "give limit or limits, not both")
	case hasOne:
		s, err := p.str(one, field+".limit")
		if err != nil {
			return err
		}
		l, err := core.ParseLimit(s)
		if err != nil {
			return p.errf(one, field+".limit", "%w", err)
		}
		if l.Name == "" {
			l.Name = r.Name
		}
		r.Limits = []core.Limit{l}
	case hasMany:
		ss, nodes, err := p.list(many, field+".limits")
		if err != nil {
			return err
		}
		names := map[string]int{}
		for i, s := range ss {
			sub := fmt.Sprintf("%s.limits[%d]", field, i)
			l, err := core.ParseLimit(s)
			if err != nil {
				return p.errf(nodes[i], sub, "%w", err)
			}
			if l.Name == "" {
				// Named after the rule, so that RateLimit-Policy tells
				// which rule's layer decided.
				l.Name = r.Name + ":" + strconv.Itoa(l.Events) + "-per-" + l.Period.String()
				if len(l.Name) > 64 {
					l.Name = l.Name[:64]
				}
			}
			if j, ok := names[l.Name]; ok {
				return p.errf(nodes[i], sub, "limits %d and %d are both named %q; add name= to one", j, i, l.Name)
			}
			names[l.Name] = i
			r.Limits = append(r.Limits, l)
		}
	default:
		return p.errf(n, field, "no limit; give limit: \"100/min\" or limits: [\"10/s\", \"1000/h\"]")
	}
	return nil
}

func (p *parser) algorithm(f map[string]*yaml.Node, field string, r *Rule) error {
	r.Algorithm = core.TokenBucket
	if a, ok := f["algorithm"]; ok {
		s, err := p.str(a, field+".algorithm")
		if err != nil {
			return err
		}
		alg, ok := algorithms[strings.ToLower(s)]
		if !ok {
			return p.errf(a, field+".algorithm", "unknown algorithm %q; use token-bucket, gcra, fixed-window, sliding-window, sliding-log, leaky-bucket, warm-up or concurrency", s)
		}
		r.Algorithm = alg
	}
	if v, ok := f["warm-up"]; ok {
		if r.Algorithm != core.WarmUp {
			return p.errf(v, field+".warm-up", "only the warm-up algorithm has a warm-up period")
		}
		d, err := p.duration(v, field+".warm-up")
		if err != nil {
			return err
		}
		r.WarmUp = d
	} else if r.Algorithm == core.WarmUp {
		return p.errf(f["algorithm"], field+".warm-up", "the warm-up algorithm needs warm-up: the time a cold key takes to reach the full rate, like 30s")
	}
	if v, ok := f["cold-factor"]; ok {
		if r.Algorithm != core.WarmUp {
			return p.errf(v, field+".cold-factor", "only the warm-up algorithm has a cold factor")
		}
		var x float64
		if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") || v.Decode(&x) != nil || !(x >= 1 && x <= 1000) {
			return p.errf(v, field+".cold-factor", "want a number from 1 to 1000, got %s", kindName(v))
		}
		r.ColdFactor = x
	}
	if v, ok := f["max-delay"]; ok {
		if r.Algorithm != core.LeakyBucket {
			return p.errf(v, field+".max-delay", "only the leaky-bucket algorithm has a max delay")
		}
		d, err := p.duration(v, field+".max-delay")
		if err != nil {
			return err
		}
		r.MaxDelay = d
	}
	return nil
}

func (p *parser) duration(n *yaml.Node, field string) (time.Duration, error) {
	s, err := p.str(n, field)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 365*24*time.Hour {
		return 0, p.errf(n, field, "%q: want a positive duration up to a year, like 500ms or 30s", s)
	}
	return d, nil
}

// Built-in key parts.
const (
	keyIP     = "ip"
	keyPath   = "path"
	keyMethod = "method"
	keyGlobal = "global"
)

func (p *parser) key(n *yaml.Node, field string, r *Rule) ([]string, error) {
	s, err := p.str(n, field)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(s, "+")
	seen := map[string]bool{}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		parts[i] = part
		if seen[part] {
			return nil, p.errf(n, field, "%q is given twice", part)
		}
		seen[part] = true
		switch {
		case part == keyIP || part == keyMethod || part == keyGlobal:
		case part == keyPath:
			if r.GRPC != nil {
				return nil, p.errf(n, field, "path has no meaning for gRPC calls; use method (the full method name)")
			}
		case strings.HasPrefix(part, "header:"):
			h := part[len("header:"):]
			if !validHeader(h) {
				return nil, p.errf(n, field, "%q: a header name is letters, digits, - and _", h)
			}
		case validKeyName(part):
			// A key registered with WithKey; checked at compile time.
		default:
			return nil, p.errf(n, field, "%q: use ip, header:NAME, path, method, global, a name given to WithKey, or several joined by +", part)
		}
	}
	if seen[keyGlobal] && len(parts) > 1 {
		return nil, p.errf(n, field, "global is one key for every request; it joins with nothing")
	}
	return parts, nil
}

// validHeader accepts header names that are also valid gRPC metadata keys
// once lower-cased, so that one key works for both transports.
func validHeader(h string) bool {
	if h == "" || len(h) > 128 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func validKeyName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s[0] >= 'a' && s[0] <= 'z'
}

func (p *parser) cost(n *yaml.Node, field string, r *Rule) error {
	if n != nil && n.Kind == yaml.ScalarNode {
		var c int
		if n.ShortTag() != "!!int" || n.Decode(&c) != nil || c < 1 || c > 1<<30 {
			return p.errf(n, field, "want a whole number of units from 1 up, or content-length: SIZE, got %s", kindName(n))
		}
		r.Cost = c
		return nil
	}
	f, err := p.fields(n, field, "content-length", "unknown")
	if err != nil {
		return err
	}
	cl, ok := f["content-length"]
	if !ok {
		return p.errf(n, field, "give content-length: the bytes one unit stands for, like 1KiB")
	}
	if r.GRPC != nil {
		return p.errf(cl, field+".content-length", "gRPC calls have no content length; give a fixed cost")
	}
	s, err := p.str(cl, field+".content-length")
	if err != nil {
		return err
	}
	unit, err := parseSize(s)
	if err != nil {
		return p.errf(cl, field+".content-length", "%q: %v", s, err)
	}
	r.CostUnit = unit
	r.CostUnknown = -1 // httpmw.RefuseUnknownLength
	if u, ok := f["unknown"]; ok {
		var c int
		switch {
		case u.Kind == yaml.ScalarNode && u.Value == "refuse":
		case u.Kind == yaml.ScalarNode && u.ShortTag() == "!!int" && u.Decode(&c) == nil && c >= 1 && c <= 1<<30:
			r.CostUnknown = c
		default:
			return p.errf(u, field+".unknown", "want refuse or the units a body of unknown length costs, got %s", kindName(u))
		}
	}
	return nil
}

// parseSize reads a byte count: a whole number with an optional unit B,
// KB, KiB, MB, MiB, GB or GiB.
func parseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n < 1 {
		return 0, errors.New("want a positive size like 512, 1KiB or 4MB")
	}
	mult := map[string]int64{"": 1, "b": 1, "kb": 1000, "kib": 1 << 10, "mb": 1000 * 1000, "mib": 1 << 20, "gb": 1000 * 1000 * 1000, "gib": 1 << 30}[strings.ToLower(strings.TrimSpace(s[i:]))]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q; use B, KB, KiB, MB, MiB, GB or GiB", s[i:])
	}
	if n > (1<<40)/mult {
		return 0, errors.New("too large; at most 1TiB")
	}
	return n * mult, nil
}
