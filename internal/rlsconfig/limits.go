package rlsconfig

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/core"
)

// defaultAlgorithm is the algorithm of a limit that names none:
// envoyproxy/ratelimit's, a counter per window aligned to multiples of the
// unit since the Unix epoch.
const defaultAlgorithm = core.FixedWindow

var rateLimitFields = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "burst", "limits"}

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

func (p *parser) rateLimit(n *yaml.Node, field string, r *Rule) error {
	f, err := p.fields(n, field, rateLimitFields...)
	if err != nil {
		return err
	}
	if r.Name, err = p.str(f["name"], join(field, "name")); err != nil {
		return err
	}
	if err := p.replaces(f["replaces"], join(field, "replaces"), r); err != nil {
		return err
	}
	if r.Unlimited, err = p.boolean(f["unlimited"], join(field, "unlimited")); err != nil {
		return err
	}
	unitText, err := p.str(f["unit"], join(field, "unit"))
	if err != nil {
		return err
	}
	if r.Unlimited {
		// As in envoyproxy/ratelimit, a unit it does not know is ignored,
		// and so is requests_per_unit.
		if u, ok := f["unit"]; ok && parseUnit(unitText) != UnitUnknown {
			return p.errf(u, join(field, "unit"), "unlimited: true takes no unit; remove one of them")
		}
		for _, k := range []string{"algorithm", "burst", "limits"} {
			if v, ok := f[k]; ok {
				return p.errf(v, join(field, k), "unlimited: true takes no %s; remove one of them", k)
			}
		}
		return nil
	}
	top, err := p.layer(n, f, field, defaultAlgorithm)
	if err != nil {
		return err
	}
	layers := []layer{top}
	list, err := p.list(f["limits"], join(field, "limits"), "limits")
	if err != nil {
		return err
	}
	for i, ln := range list {
		lf, err := p.fields(ln, fmt.Sprintf("%s.limits[%d]", field, i), layerFields...)
		if err != nil {
			return err
		}
		l, err := p.layer(ln, lf, fmt.Sprintf("%s.limits[%d]", field, i), top.alg)
		if err != nil {
			return err
		}
		layers = append(layers, l)
	}
	r.RequestsPerUnit, r.Unit = top.rpu, top.unit
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
			return p.errf(l.node, l.field, "%v", err)
		}
		name := core.DefaultName(lim)
		if prev, ok := names[name]; ok {
			return p.errf(l.node, l.field, "the same rate as %s (%d per %s); give each limit of a rate_limit its own rate", prev, l.rpu, l.unit)
		}
		names[name] = l.field
		r.Limits = append(r.Limits, lim)
	}
	return nil
}

// layer reads a limit's unit, requests_per_unit, burst and algorithm from
// f, the fields of n; alg is the algorithm when none is named.
func (p *parser) layer(n *yaml.Node, f map[string]*yaml.Node, field string, alg core.Algorithm) (layer, error) {
	l := layer{alg: alg, node: n, field: field}
	text, err := p.str(f["unit"], join(field, "unit"))
	if err != nil {
		return l, err
	}
	if l.unit = parseUnit(text); l.unit == UnitUnknown {
		at := n
		if u, ok := f["unit"]; ok {
			at = u
		}
		return l, p.errf(at, join(field, "unit"), "invalid rate limit unit %q; use second, minute, hour, day, week, month or year (or unlimited: true)", text)
	}
	if v := f["requests_per_unit"]; !isNull(v) {
		var x uint64
		if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || x > math.MaxUint32 {
			return l, p.errf(v, join(field, "requests_per_unit"), "want a whole number from 0 to %d, got %s", uint32(math.MaxUint32), kindName(v))
		}
		l.rpu = uint32(x)
	}
	if v, ok := f["algorithm"]; ok {
		text, err := p.str(v, join(field, "algorithm"))
		if err != nil {
			return l, err
		}
		if l.alg, err = core.ParseAlgorithm(text); err != nil {
			return l, p.errf(v, join(field, "algorithm"), "%v", err)
		}
		if l.alg == core.Concurrency {
			return l, p.errf(v, join(field, "algorithm"), "concurrency counts requests in flight, and the rate-limit service never learns when one ends; use a rate algorithm")
		}
	}
	if v := f["burst"]; !isNull(v) {
		var x int64
		if v.Kind != yaml.ScalarNode || v.Decode(&x) != nil || x < 0 || x > math.MaxInt32 {
			return l, p.errf(v, join(field, "burst"), "want a whole number from 0 to %d, got %s", math.MaxInt32, kindName(v))
		}
		if x > 0 && l.alg != core.TokenBucket && l.alg != core.GCRA {
			return l, p.errf(v, join(field, "burst"), "%v ignores burst; set algorithm: token-bucket or gcra, or remove burst", l.alg)
		}
		l.burst = int(x)
	}
	return l, nil
}

func (p *parser) replaces(n *yaml.Node, field string, r *Rule) error {
	list, err := p.list(n, field, "replaces entries (- name: rule)")
	if err != nil {
		return err
	}
	for i, e := range list {
		ef := fmt.Sprintf("%s[%d]", field, i)
		f, err := p.fields(e, ef, "name")
		if err != nil {
			return err
		}
		name, err := p.str(f["name"], join(ef, "name"))
		if err != nil {
			return err
		}
		switch {
		case name == "":
			return p.errf(e, join(ef, "name"), "an empty replaces entry; name the rate_limit it replaces")
		case name == r.Name:
			return p.errf(e, join(ef, "name"), "replaces its own rate_limit's name %q; a rule cannot replace itself", name)
		}
		r.Replaces = append(r.Replaces, name)
	}
	return nil
}
