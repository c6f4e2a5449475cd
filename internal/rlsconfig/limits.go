package rlsconfig

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/yamlpos"

	"github.com/floodgate/floodgate/core"
)

// defaultAlgorithm is the algorithm of a limit that names none:
// envoyproxy/ratelimit's, a counter per window aligned to multiples of the
// unit since the Unix epoch.
const defaultAlgorithm = core.FixedWindow

var rateLimitFields = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "burst", "limits", "local_quota"}

var layerFields = []string{"unit", "requests_per_unit", "burst", "algorithm"}

// layer is one limit of a rate_limit block, as written.
type layer struct {
	rpu   uint32
	unit  Unit
	burst int
	alg   core.Algorithm
	node  *yaml.Node
	field string
}

// noAlgorithm stands for an algorithm that did not parse: limits that
// would inherit it are not checked against it.
const noAlgorithm core.Algorithm = math.MaxUint8

func (p *parser) rateLimit(n *yaml.Node, field string, r *Rule) {
	f, ok := p.fields(n, field, rateLimitFields...)
	if !ok {
		return
	}
	r.Name, _ = p.str(f["name"], yamlpos.Join(field, "name"))
	p.replaces(f["replaces"], yamlpos.Join(field, "replaces"), r)
	r.Unlimited, _ = p.boolean(f["unlimited"], yamlpos.Join(field, "unlimited"))
	r.LocalQuota, _ = p.boolean(f["local_quota"], yamlpos.Join(field, "local_quota"))
	if r.Unlimited {
		// As in envoyproxy/ratelimit, a unit it does not know is ignored,
		// and so is requests_per_unit.
		unitText, _ := p.str(f["unit"], yamlpos.Join(field, "unit"))
		if u, ok := f["unit"]; ok && parseUnit(unitText) != UnitUnknown {
			p.fail(u, yamlpos.Join(field, "unit"), "unlimited: true takes no unit; remove one of them")
		}
		for _, k := range []string{"algorithm", "burst", "limits", "local_quota"} {
			if v, ok := f[k]; ok {
				p.fail(v, yamlpos.Join(field, k), "unlimited: true takes no %s; remove one of them", k)
			}
		}
		return
	}
	top, ok := p.layer(n, f, field, defaultAlgorithm)
	layers := []layer{top}
	for i, ln := range p.list(f["limits"], yamlpos.Join(field, "limits"), "limits") {
		if ln == nil {
			ok = false
			continue
		}
		lf, fok := p.fields(ln, fmt.Sprintf("%s.limits[%d]", field, i), layerFields...)
		l, lok := p.layer(ln, lf, fmt.Sprintf("%s.limits[%d]", field, i), top.alg)
		layers = append(layers, l)
		ok = ok && fok && lok
	}
	if !ok {
		// The limits as a whole are checked once each is well formed.
		return
	}
	r.RequestsPerUnit, r.Unit = top.rpu, top.unit
	if r.LocalQuota {
		for _, l := range layers {
			if l.alg != core.FixedWindow && l.alg != core.TokenBucket && l.alg != core.GCRA {
				p.fail(f["local_quota"], yamlpos.Join(field, "local_quota"), "local quota leases fixed-window, token-bucket and gcra limits, not %v (%s): units of it cannot be charged ahead of time; remove local_quota or change the algorithm", l.alg, l.field)
				return
			}
		}
	}
	names := map[string]string{}
	for _, l := range layers {
		if l.rpu == 0 {
			r.DenyAll = true
		}
	}
	for _, l := range layers {
		// core counts up to 2³¹−1 events; a larger requests_per_unit, which
		// envoyproxy/ratelimit accepts, is as good as unlimited.
		lim := core.Limit{Events: min(int(l.rpu), math.MaxInt32), Period: l.unit.Period(), Burst: l.burst, Algorithm: l.alg}
		if r.DenyAll {
			continue
		}
		if err := lim.Validate(); err != nil {
			p.fail(l.node, l.field, "%v", err)
			continue
		}
		name := core.DefaultName(lim)
		if prev, ok := names[name]; ok {
			p.fail(l.node, l.field, "the same rate as %s (%d per %s); give each limit of a rate_limit its own rate", prev, l.rpu, l.unit)
			continue
		}
		names[name] = l.field
		r.Limits = append(r.Limits, lim)
	}
}

// layer reads a limit's unit, requests_per_unit, burst and algorithm from
// f, the fields of n; alg is the algorithm when none is named. ok is
// false when it reported an error.
func (p *parser) layer(n *yaml.Node, f map[string]*yaml.Node, field string, alg core.Algorithm) (l layer, ok bool) {
	l = layer{alg: alg, node: n, field: field}
	before := p.count()
	if text, tok := p.str(f["unit"], yamlpos.Join(field, "unit")); tok {
		if l.unit = parseUnit(text); l.unit == UnitUnknown {
			at := n
			if u, ok := f["unit"]; ok {
				at = u
			}
			p.fail(at, yamlpos.Join(field, "unit"), "invalid rate limit unit %q; use second, minute, hour, day, week, month or year (or unlimited: true)", text)
		}
	}
	if v := f["requests_per_unit"]; !yamlpos.IsNull(v) {
		var x uint64
		if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || x > math.MaxUint32 {
			p.fail(v, yamlpos.Join(field, "requests_per_unit"), "want a whole number from 0 to %d, got %s", uint32(math.MaxUint32), yamlpos.KindName(v))
		}
		l.rpu = uint32(x)
	}
	if v, has := f["algorithm"]; has {
		l.alg = noAlgorithm
		if text, tok := p.str(v, yamlpos.Join(field, "algorithm")); tok {
			a, err := core.ParseAlgorithm(text)
			switch {
			case err != nil:
				p.fail(v, yamlpos.Join(field, "algorithm"), "%v", err)
			case a == core.Concurrency:
				p.fail(v, yamlpos.Join(field, "algorithm"), "concurrency counts requests in flight, and the rate-limit service never learns when one ends; use a rate algorithm")
			case a == core.LeakyBucket:
				p.fail(v, yamlpos.Join(field, "algorithm"), "leaky-bucket admits a request after a wait for its turn, and Envoy never waits: the rate-limit service answers at once; use a rate algorithm (gcra spaces requests as evenly, refusing those that would wait)")
			default:
				l.alg = a
			}
		}
	}
	if v := f["burst"]; !yamlpos.IsNull(v) {
		var x int64
		switch {
		case v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || x < 0 || x > math.MaxInt32:
			p.fail(v, yamlpos.Join(field, "burst"), "want a whole number from 0 to %d, got %s", math.MaxInt32, yamlpos.KindName(v))
		case x > 0 && l.alg != noAlgorithm && l.alg != core.TokenBucket && l.alg != core.GCRA:
			p.fail(v, yamlpos.Join(field, "burst"), "%v ignores burst; set algorithm: token-bucket or gcra, or remove burst", l.alg)
		default:
			l.burst = int(x)
		}
	}
	return l, p.count() == before
}

// count is how many errors p has found, repeats included.
func (p *parser) count() int { return p.found }

func (p *parser) replaces(n *yaml.Node, field string, r *Rule) {
	for i, e := range p.list(n, field, "replaces entries (- name: rule)") {
		if e == nil {
			continue
		}
		ef := fmt.Sprintf("%s[%d]", field, i)
		f, ok := p.fields(e, ef, "name")
		if !ok {
			continue
		}
		name, ok := p.str(f["name"], yamlpos.Join(ef, "name"))
		switch {
		case !ok:
		case name == "":
			p.fail(e, yamlpos.Join(ef, "name"), "an empty replaces entry; name the rate_limit it replaces")
		case name == r.Name:
			p.fail(e, yamlpos.Join(ef, "name"), "replaces its own rate_limit's name %q; a rule cannot replace itself", name)
		default:
			r.Replaces = append(r.Replaces, name)
		}
	}
}
