package rules

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

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
