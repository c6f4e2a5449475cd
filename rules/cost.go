package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/yamlpos"
)

func (p *parser) cost(n *yaml.Node, field string, r *Rule) error {
	if n != nil && n.Kind == yaml.ScalarNode {
		var c int
		if n.ShortTag() != "!!int" || n.Decode(&c) != nil || c < 1 || c > 1<<30 {
			return p.errf(n, field, "want a whole number of units from 1 up, or content-length: SIZE, got %s", yamlpos.KindName(n))
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
			return p.errf(u, field+".unknown", "want refuse or the units a body of unknown length costs, got %s", yamlpos.KindName(u))
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
