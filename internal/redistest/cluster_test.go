package redistest

import (
	"fmt"
	"strings"
	"testing"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, WithPassword("s3cret"))
	nodes := c.Nodes()
	if len(nodes) != 3 || len(c.Addrs()) != 3 {
		t.Fatalf("%d nodes, addresses %v; want 3", len(nodes), c.Addrs())
	}

	// KeySlot agrees with the server, hash tags included.
	for _, key := range []string{"", "foo", "{user:1}:a", "{user:1}:b", "{}x", "a{}{b}", "{{a}}", "}{x}", "a{b", "rate:203.0.113.7"} {
		got, err := do(t, nodes[0], "CLUSTER", "KEYSLOT", key)
		if err != nil || got != int64(KeySlot(key)) {
			t.Errorf("CLUSTER KEYSLOT %q = %v %v, KeySlot = %d", key, got, err, KeySlot(key))
		}
	}

	// Each node serves its own keys and redirects the others'.
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		for j := 0; keys[i] == ""; j++ {
			if k := fmt.Sprintf("key-%d", j); c.NodeFor(k) == n {
				keys[i] = k
			}
		}
		mustDo(t, n, "SET", keys[i], "v")
		other := nodes[(i+1)%len(nodes)]
		want := fmt.Sprintf("MOVED %d %s", KeySlot(keys[i]), n.Addr())
		if _, err := do(t, other, "SET", keys[i], "v"); err == nil || err.Error() != want {
			t.Errorf("SET %s on %s: %v, want %s", keys[i], other.Addr(), err, want)
		}
	}

	nodes[0].Kill()
	if _, err := command(nodes[0].Addr(), "s3cret", "PING"); err == nil {
		t.Fatal("killed node still answers")
	}
	nodes[0].Restart()
	c.WaitOK()
	if got := mustDo(t, nodes[0], "GET", keys[0]); got != nil {
		t.Errorf("GET %s on the restarted node = %v, want nil (no persistence)", keys[0], got)
	}
	mustDo(t, nodes[0], "SET", keys[0], "v")
	if info := mustDo(t, nodes[1], "CLUSTER", "INFO").(string); !strings.Contains(info, "cluster_known_nodes:3") {
		t.Errorf("after the restart, CLUSTER INFO:\n%s", info)
	}
}
