package rules

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
