package redistest

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redisproc"
)

const (
	masterName      = "floodgate"
	sentinelTimeout = 15 * time.Second // replica in sync, sentinel aware, failover done
)

// Sentinel is a master, one replica of it, and one sentinel monitoring the
// master as [Sentinel.MasterName] with quorum 1. The sentinel declares the
// master down after 1 s without an answer and then promotes the replica.
type Sentinel struct {
	t        testing.TB
	master   *Server
	replica  *Server
	sentinel *Server
}

// StartSentinel starts the master, the replica and the sentinel, and waits
// until the replica is in sync and the sentinel knows both; the servers are
// stopped when t ends. Options apply to the master and the replica. It skips
// t as [Require] does when redis-server is not installed, and under go test
// -short (see [SkipShort]).
func StartSentinel(t testing.TB, opts ...Option) *Sentinel {
	t.Helper()
	SkipShort(t, "Redis Sentinel, whose tests wait seconds for a failover")
	bin := Require(t)
	o := collect(opts)
	// Diskless sync without its default delay (5 s in Redis 7) makes a
	// replica's first sync immediate.
	repl := []string{"repl-diskless-sync yes", "repl-diskless-sync-delay 0"}
	start := func(extra ...string) *Server {
		s := newServer(t, bin, o.password, func(*Server) []string {
			return dataConfig(o, append(repl, extra...)...)
		})
		if err := s.startFresh(false); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		return s
	}
	g := &Sentinel{t: t}
	g.master = start()
	g.replica = start("replicaof 127.0.0.1 " + strconv.Itoa(g.master.port))
	if err := g.waitInSync(); err != nil {
		t.Fatalf("redistest: %v", err)
	}

	// Started after the replica is in sync, so the sentinel's first INFO
	// to the master already lists the replica.
	g.sentinel = newServer(t, bin, "", func(*Server) []string {
		lines := []string{
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1", masterName, g.master.port),
			"sentinel down-after-milliseconds " + masterName + " 1000",
			"sentinel failover-timeout " + masterName + " 5000",
			"sentinel parallel-syncs " + masterName + " 1",
		}
		if o.password != "" {
			lines = append(lines, "sentinel auth-pass "+masterName+" "+redisproc.Quote(o.password))
		}
		return lines
	})
	g.sentinel.sentinel = true
	if err := g.sentinel.startFresh(false); err != nil {
		t.Fatalf("redistest: sentinel: %v", err)
	}
	if err := g.waitWatching(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return g
}

// MasterName returns the name the sentinel monitors the master as.
func (g *Sentinel) MasterName() string { return masterName }

// SentinelAddrs returns the sentinels' addresses (there is one).
func (g *Sentinel) SentinelAddrs() []string { return []string{g.sentinel.Addr()} }

// Master returns the server started as the master; after a failover it may
// no longer be one.
func (g *Sentinel) Master() *Server { return g.master }

// Replica returns the server started as the replica; after a failover it
// may be the master.
func (g *Sentinel) Replica() *Server { return g.replica }

// MasterAddr returns the master's address as the sentinel reports it now.
func (g *Sentinel) MasterAddr() string {
	g.t.Helper()
	addr, err := g.masterAddr()
	if err != nil {
		g.t.Fatalf("redistest: %v", err)
	}
	return addr
}

// KillMaster kills the current master (as the sentinel reports it) with
// SIGKILL and returns its address, for [Sentinel.WaitForFailover].
func (g *Sentinel) KillMaster() string {
	g.t.Helper()
	addr := g.MasterAddr()
	switch addr {
	case g.master.Addr():
		g.master.Kill()
	case g.replica.Addr():
		g.replica.Kill()
	default:
		g.t.Fatalf("redistest: sentinel reports master %s, neither %s nor %s", addr, g.master.Addr(), g.replica.Addr())
	}
	return addr
}

// WaitForFailover waits until the sentinel reports a master other than old
// and that server answers as a master, and returns its address. It fails t
// after 15 s.
func (g *Sentinel) WaitForFailover(old string) string {
	g.t.Helper()
	deadline := time.Now().Add(sentinelTimeout)
	for {
		addr, err := g.masterAddr()
		if err == nil && addr != old {
			role, rerr := g.role(addr)
			if rerr == nil && role == "master" {
				return addr
			}
			err = fmt.Errorf("sentinel reports %s, which answers role %q (%v)", addr, role, rerr)
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("redistest: no failover from %s within %v (last: %s %v); sentinel log:\n%s", old, sentinelTimeout, addr, err, g.sentinel.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (g *Sentinel) masterAddr() (string, error) {
	reply, err := redisproc.Command(g.sentinel.Addr(), "", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName)
	if err != nil {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: %v", g.sentinel.Addr(), err)
	}
	hp, _ := reply.([]any)
	if len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: got %v", g.sentinel.Addr(), reply)
	}
	host, _ := hp[0].(string)
	port, _ := hp[1].(string)
	return net.JoinHostPort(host, port), nil
}

// role returns the role line of INFO replication on addr.
func (g *Sentinel) role(addr string) (string, error) {
	info, err := redisproc.CommandString(addr, g.master.password, "INFO", "replication")
	return redisproc.InfoField(info, "role"), err
}

func (g *Sentinel) waitInSync() error {
	r := g.replica
	return waitUntil(sentinelTimeout, func() (bool, string) {
		info, err := redisproc.CommandString(r.Addr(), r.password, "INFO", "replication")
		status := redisproc.InfoField(info, "master_link_status")
		return status == "up", fmt.Sprintf("replica %s master_link_status %q (%v); log:\n%s", r.Addr(), status, err, r.logTail())
	})
}

// waitWatching waits until the sentinel reports the master and sees the
// replica as a healthy one, so that it can promote it.
func (g *Sentinel) waitWatching() error {
	return waitUntil(sentinelTimeout, func() (bool, string) {
		addr, err := g.masterAddr()
		if err != nil || addr != g.master.Addr() {
			return false, fmt.Sprintf("sentinel reports master %q (%v), want %s", addr, err, g.master.Addr())
		}
		reply, err := redisproc.Command(g.sentinel.Addr(), "", "SENTINEL", "REPLICAS", masterName)
		if _, unknown := err.(redisproc.ReplyError); unknown { // before Redis 5
			reply, err = redisproc.Command(g.sentinel.Addr(), "", "SENTINEL", "SLAVES", masterName)
		}
		replicas, _ := reply.([]any)
		for _, r := range replicas {
			fields, _ := r.([]any)
			f := make(map[string]string)
			for i := 0; i+1 < len(fields); i += 2 {
				k, _ := fields[i].(string)
				v, _ := fields[i+1].(string)
				f[k] = v
			}
			if net.JoinHostPort(f["ip"], f["port"]) == g.replica.Addr() && f["flags"] == "slave" && f["master-link-status"] == "ok" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("sentinel does not see replica %s in sync: %v %v; log:\n%s", g.replica.Addr(), reply, err, g.sentinel.logTail())
	})
}

// waitUntil polls done until it reports true, or returns its last message
// as an error after timeout.
func waitUntil(timeout time.Duration, done func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := done()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
