package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/keyslot"
	"github.com/floodgate/floodgate/internal/redisproc"
)

const (
	slotCount      = keyslot.Count
	clusterNodes   = 3
	clusterTimeout = 15 * time.Second // redis-cli --cluster create, or cluster_state:ok
)

// Cluster is Redis masters in cluster mode, without replicas, sharing the
// hash slots: three unless [WithMasters] says otherwise.
type Cluster struct {
	t     testing.TB
	nodes []*Server
	owner [slotCount]*Server
}

// StartCluster starts the cluster-enabled servers (three, or as many as
// [WithMasters] says), gives them the slots (redis-cli --cluster create
// joins three or more; a lone master is given all 16384 with CLUSTER
// ADDSLOTS), and waits until every node reports cluster_state:ok; the
// servers are stopped when t ends. Options apply to every node. It skips t
// as [Require] does when redis-server, or redis-cli for three or more
// masters, is not installed, and under go test -short (see [SkipShort]).
func StartCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	o := collect(opts)
	if o.masters != 1 && o.masters < clusterNodes {
		t.Fatalf("redistest: WithMasters(%d): a cluster here has 1 master or at least %d (redis-cli --cluster create needs %d)", o.masters, clusterNodes, clusterNodes)
	}
	SkipShort(t, "a Redis Cluster, which accepts writes only two seconds after it starts")
	bin := Require(t)
	cli := ""
	if o.masters > 1 {
		cli = requireTool(t, "redis-cli")
	}
	c := &Cluster{t: t}
	for range o.masters {
		s := newServer(t, bin, o.password, func(s *Server) []string {
			lines := []string{
				"cluster-enabled yes",
				"cluster-config-file " + redisproc.Quote(filepath.Join(s.dir, "nodes.conf")),
				// Small, so a killed node is noticed, and a restarted one
				// taken back, within seconds.
				"cluster-node-timeout 2000",
			}
			if cli == "" {
				// A node learns its address from the peers it meets; a
				// lone one would announce an empty one in CLUSTER SLOTS.
				lines = append(lines, "cluster-announce-ip 127.0.0.1")
			}
			return dataConfig(o, lines...)
		})
		if err := s.startFresh(true); err != nil {
			t.Fatalf("redistest: cluster node: %v", err)
		}
		c.nodes = append(c.nodes, s)
	}
	create := c.addAllSlots
	if cli != "" {
		create = func() error { return c.create(cli, o.password) }
	}
	if err := create(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := c.waitOK(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := c.loadSlots(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// Addrs returns the nodes' addresses, in the order of [Cluster.Nodes].
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the nodes, to Kill or Restart one of them; after a
// Restart, [Cluster.WaitOK] waits until the cluster has taken it back.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// NodeFor returns the node that serves key's hash slot ([KeySlot]), as the
// slots were assigned when the cluster started.
func (c *Cluster) NodeFor(key string) *Server { return c.owner[KeySlot(key)] }

// WaitOK waits until every node reports cluster_state:ok, failing t after
// 15 s. A node that was killed and not restarted never does.
func (c *Cluster) WaitOK() {
	c.t.Helper()
	if err := c.waitOK(); err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
}

func (c *Cluster) create(cli, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	if password != "" {
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+password)
	}
	cmd.SysProcAttr = redisproc.SysProcAttr(false)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli %s: %v (limit %v)\n%s", strings.Join(args, " "), err, clusterTimeout, out)
	}
	return nil
}

// addAllSlots gives the one node every slot, in one CLUSTER ADDSLOTS
// (ADDSLOTSRANGE would need Redis 7).
func (c *Cluster) addAllSlots() error {
	args := make([]string, 0, 1+slotCount)
	args = append(args, "CLUSTER", "ADDSLOTS")
	for slot := range slotCount {
		args = append(args, strconv.Itoa(slot))
	}
	n := c.nodes[0]
	if _, err := redisproc.Command(n.Addr(), n.password, args...); err != nil {
		return fmt.Errorf("CLUSTER ADDSLOTS 0..%d on %s: %v", slotCount-1, n.Addr(), err)
	}
	return nil
}

func (c *Cluster) waitOK() error {
	deadline := time.Now().Add(clusterTimeout)
	for _, n := range c.nodes {
		for {
			info, err := redisproc.CommandString(n.Addr(), n.password, "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster node %s not in cluster_state:ok within %v (CLUSTER INFO: %v %q); log:\n%s", n.Addr(), clusterTimeout, err, info, n.logTail())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// loadSlots reads which node serves each slot from CLUSTER SLOTS: a list of
// [start, end, [ip, port, id, ...], replicas...].
func (c *Cluster) loadSlots() error {
	byAddr := make(map[string]*Server)
	for _, n := range c.nodes {
		byAddr[n.Addr()] = n
	}
	n0 := c.nodes[0]
	reply, err := redisproc.Command(n0.Addr(), n0.password, "CLUSTER", "SLOTS")
	if err != nil {
		return fmt.Errorf("CLUSTER SLOTS on %s: %v", n0.Addr(), err)
	}
	ranges, _ := reply.([]any)
	for _, r := range ranges {
		r, _ := r.([]any)
		if len(r) < 3 {
			return fmt.Errorf("CLUSTER SLOTS: unexpected entry %v", r)
		}
		start, _ := r[0].(int64)
		end, _ := r[1].(int64)
		master, _ := r[2].([]any)
		if len(master) < 2 || start < 0 || end >= slotCount || start > end {
			return fmt.Errorf("CLUSTER SLOTS: unexpected entry %v", r)
		}
		ip, _ := master[0].(string)
		port, _ := master[1].(int64)
		node := byAddr[fmt.Sprintf("%s:%d", ip, port)]
		if node == nil {
			return fmt.Errorf("CLUSTER SLOTS: slots %d-%d served by %s:%d, not one of %v", start, end, ip, port, c.Addrs())
		}
		for slot := start; slot <= end; slot++ {
			c.owner[slot] = node
		}
	}
	for slot, node := range c.owner {
		if node == nil {
			return fmt.Errorf("CLUSTER SLOTS: slot %d unassigned: %v", slot, reply)
		}
	}
	return nil
}

// KeySlot returns the cluster hash slot of key, as CLUSTER KEYSLOT does:
// CRC16 (XMODEM) of the key modulo 16384, where a non-empty {hash tag}
// stands for the whole key, so "{user:1}:a" and "{user:1}:b" share a slot.
func KeySlot(key string) int { return int(keyslot.Of(key)) }
