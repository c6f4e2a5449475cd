package redistest

import (
	"fmt"
	"runtime"
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

// TestClusterOneMaster: WithMasters(1) starts one node holding every slot,
// which refuses keys of different slots in one command or script
// (CROSSSLOT) as a cluster of three does, and takes its slots back after
// a restart.
func TestClusterOneMaster(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, WithMasters(1), WithPassword("s3cret"))
	nodes := c.Nodes()
	if len(nodes) != 1 || len(c.Addrs()) != 1 {
		t.Fatalf("%d nodes, addresses %v; want 1", len(nodes), c.Addrs())
	}
	n := nodes[0]
	for _, key := range []string{"a", "b", "{user:1}:x", "rate:203.0.113.7"} {
		if c.NodeFor(key) != n {
			t.Errorf("NodeFor(%q) is not the one node", key)
		}
	}
	info := mustDo(t, n, "CLUSTER", "INFO").(string)
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:1"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLUSTER INFO lacks %s:\n%s", want, info)
		}
	}

	if KeySlot("a") == KeySlot("b") {
		t.Fatal("a and b share a slot; pick other keys")
	}
	const script = "return redis.call('SET', KEYS[1], 'v') and redis.call('SET', KEYS[2], 'v')"
	cases := []struct {
		name      string
		args      []string
		crossSlot bool
	}{
		{"MSET, two slots", []string{"MSET", "a", "1", "b", "2"}, true},
		{"MSET, one tag", []string{"MSET", "{u}a", "1", "{u}b", "2"}, false},
		{"EVAL, two slots", []string{"EVAL", script, "2", "a", "b"}, true},
		{"EVAL, one tag", []string{"EVAL", script, "2", "{u}a", "{u}b"}, false},
	}
	for _, tc := range cases {
		_, err := do(t, n, tc.args...)
		if got := err != nil && strings.HasPrefix(err.Error(), "CROSSSLOT"); got != tc.crossSlot || (err != nil && !got) {
			t.Errorf("%s: %v; want CROSSSLOT %v", tc.name, err, tc.crossSlot)
		}
	}

	n.Kill()
	n.Restart()
	c.WaitOK()
	mustDo(t, n, "SET", "a", "v")
}

// fatalTB records a Fatalf and ends the goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestClusterMastersInvalid: a master count redis-cli cannot create fails
// the test before any server starts.
func TestClusterMastersInvalid(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 0, 2} {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			StartCluster(f, WithMasters(n))
		}()
		<-done
		if want := fmt.Sprintf("WithMasters(%d)", n); !strings.Contains(f.msg, want) {
			t.Errorf("WithMasters(%d): StartCluster failed with %q, want a message naming %s", n, f.msg, want)
		}
	}
}
