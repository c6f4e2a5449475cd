package redistest

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// dataConfig is the redis.conf of a data node (not a sentinel); extra
// comes before the lines of WithConfig, so those win.
func (s *Server) dataConfig(port int, o options, extra ...string) string {
	lines := s.baseConfig(port)
	lines = append(lines, `save ""`)
	if o.persist {
		lines = append(lines, "appendonly yes", "appendfsync always")
	} else {
		lines = append(lines, "appendonly no")
	}
	if o.password != "" {
		lines = append(lines, "requirepass "+quote(o.password), "masterauth "+quote(o.password))
	}
	lines = append(lines, extra...)
	lines = append(lines, o.config...)
	return strings.Join(lines, "\n") + "\n"
}

func (s *Server) baseConfig(port int) []string {
	return []string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"daemonize no",
		"dir " + quote(s.dir),
		"logfile " + quote(filepath.Join(s.dir, "redis.log")),
	}
}

// freePort returns a port that was free on 127.0.0.1 a moment ago; with
// bus, port+10000 (the cluster bus) was free too.
func freePort(bus bool) (int, error) {
	var err error
	for try := 0; try < 50; try++ {
		var l net.Listener
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port, nil
		}
		if port+busOffset > 65535 {
			l.Close()
			continue
		}
		b, berr := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+busOffset)))
		l.Close()
		if berr == nil {
			b.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 (bus port too: %v): %v", bus, err)
}

// quote writes s as a double-quoted redis.conf argument.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
