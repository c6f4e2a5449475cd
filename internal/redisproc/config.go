package redisproc

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// Config says which redis-server to start, where, and how.
type Config struct {
	// Bin is the path of redis-server, as exec.LookPath finds it.
	Bin string
	// Dir is the server's working directory, which must exist. It holds
	// redis.conf, the server's log redis.log, stdout.log (what the server
	// printed before its log was open) and any data files.
	Dir string
	// Lines are appended to the generated redis.conf, after its own lines
	// (port, bind 127.0.0.1, daemonize no, dir, logfile), so they win.
	// Quote arguments that may hold spaces or quotes with [Quote].
	Lines []string
	// Args follow the config file on the command line: "--sentinel".
	Args []string
	// Password is sent with AUTH by the readiness check, for a server
	// whose Lines set requirepass.
	Password string
	// ClusterBus asks for a port whose cluster bus port (port+10000) is
	// free too, for a server with cluster-enabled yes.
	ClusterBus bool
	// OwnGroup gives the server a process group of its own; see
	// [SysProcAttr].
	OwnGroup bool
}

// busOffset: a cluster node's bus listens on its port+10000.
const busOffset = 10000

// conf returns redis.conf for port.
func (c Config) conf(port int) string {
	lines := append([]string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"daemonize no",
		"dir " + Quote(c.Dir),
		"logfile " + Quote(filepath.Join(c.Dir, "redis.log")),
	}, c.Lines...)
	return strings.Join(lines, "\n") + "\n"
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
	return 0, fmt.Errorf("redisproc: no free port on 127.0.0.1 (bus port too: %v): %v", bus, err)
}

// Quote writes s as one double-quoted redis.conf argument, escaping quotes,
// backslashes and control characters, so that a path or password with
// spaces or quotes stays one argument.
func Quote(s string) string {
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
