package redistest

import (
	"testing"
	"time"
)

func TestSentinel(t *testing.T) {
	t.Parallel()
	g := StartSentinel(t, WithPassword("s3cret"))
	if g.MasterName() != "floodgate" || len(g.SentinelAddrs()) != 1 {
		t.Fatalf("MasterName %q, SentinelAddrs %v", g.MasterName(), g.SentinelAddrs())
	}
	if got := g.MasterAddr(); got != g.Master().Addr() {
		t.Fatalf("MasterAddr() = %s, want the master %s", got, g.Master().Addr())
	}
	if got := mustDo(t, g.sentinel, "PING"); got != "PONG" {
		t.Fatalf("sentinel PING = %v", got)
	}
	mustDo(t, g.Master(), "SET", "k", "v")
	// Replication is asynchronous: wait until the replica has the write,
	// or killing the master may lose it.
	if got := mustDo(t, g.Master(), "WAIT", "1", "5000"); got != int64(1) {
		t.Fatalf("WAIT 1 5000 = %v, want 1 replica", got)
	}
	if _, err := do(t, g.Replica(), "SET", "k", "w"); err == nil {
		t.Error("the replica accepted a write")
	}

	start := time.Now()
	old := g.KillMaster()
	if old != g.Master().Addr() {
		t.Fatalf("KillMaster() = %s, want %s", old, g.Master().Addr())
	}
	addr := g.WaitForFailover(old)
	t.Logf("failover took %v", time.Since(start))
	if addr != g.Replica().Addr() || g.MasterAddr() != addr {
		t.Fatalf("new master %s (MasterAddr %s), want the replica %s", addr, g.MasterAddr(), g.Replica().Addr())
	}
	if got := mustDo(t, g.Replica(), "GET", "k"); got != "v" {
		t.Errorf("GET k on the promoted replica = %v, want v", got)
	}
	mustDo(t, g.Replica(), "SET", "k", "w")
}
