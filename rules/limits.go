package rules

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/yamlpos"
)

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
		var ls []core.Limit
		for i, s := range ss {
			l, err := core.ParseLimit(s)
			if err != nil {
				return p.errf(nodes[i], fmt.Sprintf("%s.limits[%d]", field, i), "%w", err)
			}
			ls = append(ls, l)
		}
		nameLayers(r.Name, ls)
		names := map[string]int{}
		for i, l := range ls {
			if j, ok := names[l.Name]; ok {
				return p.errf(nodes[i], fmt.Sprintf("%s.limits[%d]", field, i), "limits %d and %d are both named %q; add name= to one", j, i, l.Name)
			}
			names[l.Name] = i
		}
		r.Limits = ls
	default:
		return p.errf(n, field, "no limit; give limit: \"100/min\" or limits: [\"10/s\", \"1000/h\"]")
	}
	return nil
}

// algorithm reads the rule's algorithm and its settings and compiles them
// into every limit of r, which hold the rule's policies from then on. A
// limit string that names an algorithm of its own (algorithm=gcra) keeps
// it, and may not be given one by the rule as well.
func (p *parser) algorithm(f map[string]*yaml.Node, field string, r *Rule) error {
	var set core.Limit // the rule's algorithm and settings
	a, hasAlg := f["algorithm"]
	if hasAlg {
		s, err := p.str(a, field+".algorithm")
		if err != nil {
			return err
		}
		alg, err := core.ParseAlgorithm(s)
		if err != nil {
			return p.errf(a, field+".algorithm", "unknown algorithm %q; use token-bucket, gcra, fixed-window, sliding-window, sliding-log, leaky-bucket, warm-up or concurrency", s)
		}
		set.Algorithm = alg
	}
	if v, ok := f["warm-up"]; ok {
		if set.Algorithm != core.WarmUp {
			return p.errf(v, field+".warm-up", "only the warm-up algorithm has a warm-up period")
		}
		d, err := p.duration(v, field+".warm-up")
		if err != nil {
			return err
		}
		set.WarmUp = d
	} else if set.Algorithm == core.WarmUp {
		return p.errf(a, field+".warm-up", "the warm-up algorithm needs warm-up: the time a cold key takes to reach the full rate, like 30s")
	}
	if v, ok := f["cold-factor"]; ok {
		if set.Algorithm != core.WarmUp {
			return p.errf(v, field+".cold-factor", "only the warm-up algorithm has a cold factor")
		}
		var x float64
		if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") || v.Decode(&x) != nil || !(x >= 1 && x <= 1000) {
			return p.errf(v, field+".cold-factor", "want a number from 1 to 1000, got %s", yamlpos.KindName(v))
		}
		set.ColdFactor = x
	}
	if v, ok := f["max-delay"]; ok {
		if set.Algorithm != core.LeakyBucket {
			return p.errf(v, field+".max-delay", "only the leaky-bucket algorithm has a max delay")
		}
		d, err := p.duration(v, field+".max-delay")
		if err != nil {
			return err
		}
		set.MaxDelay = d
	}
	if set == (core.Limit{}) {
		return nil // each limit keeps what its string says
	}
	for i, l := range r.Limits {
		if l.Algorithm != core.TokenBucket || l.Overdraft || l.SubWindows != 0 || l.MaxEntries != 0 {
			return p.errf(a, field+".algorithm", "limit %d names its algorithm (%s); give the algorithm in the rule or in its limits, not both", i, l)
		}
		l.Algorithm, l.WarmUp, l.ColdFactor, l.MaxDelay = set.Algorithm, set.WarmUp, set.ColdFactor, set.MaxDelay
		if err := l.Validate(); err != nil {
			return p.errf(a, field+".algorithm", "%w", err)
		}
		r.Limits[i] = l
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

// nameLayers names each limit of a stacked rule that has no name= of its
// own, since the name is what clients see in RateLimit-Policy and what
// tells them which layer decided: the rule's name and the layer's period,
// as in "api-1s" and "api-1h", or, where two such layers share a period,
// the rule's name, the events and the period ("api-10-per-1s"). A name
// depends only on the rule's name and the layer, so it stays the same
// across reloads that keep them, and fits core's 64 bytes: a long rule
// name is cut to make room for the suffix.
func nameLayers(rule string, ls []core.Limit) {
	periods := map[time.Duration]int{}
	for _, l := range ls {
		if l.Name == "" {
			periods[l.Period]++
		}
	}
	for i, l := range ls {
		if l.Name != "" {
			continue
		}
		suffix := "-" + periodText(l.Period)
		if periods[l.Period] > 1 {
			suffix = "-" + strconv.Itoa(l.Events) + "-per-" + periodText(l.Period)
		}
		ls[i].Name = rule[:min(len(rule), maxNameLen-len(suffix))] + suffix
	}
}

// maxNameLen is core's limit on a limit's name.
const maxNameLen = 64

// periodText writes a period in its largest whole unit, in the characters
// a limit's name may hold: 1s, 90s, 1min, 1h, 1d, 500ms.
func periodText(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
