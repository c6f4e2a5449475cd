package redisstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// masters keeps a route per Cluster master, so that a dead master turns
// away only the keys it holds while the others go on deciding. Masters are
// told apart by address, which a restarted node keeps.
type masters struct {
	client *redis.ClusterClient
	routes routes
	// unknown takes the calls whose master the client cannot name: it has
	// no cluster state yet, and loading it failed.
	unknown *route

	byAddr atomic.Pointer[map[string]*route] // copied on write
	mu     sync.Mutex                        // serializes writes
}

func newMasters(c *redis.ClusterClient, rs routes) (*masters, error) {
	unknown, err := rs.make()
	if err != nil {
		return nil, err
	}
	m := &masters{client: c, routes: rs, unknown: unknown}
	m.byAddr.Store(&map[string]*route{})
	return m, nil
}

// forKey returns the route of the master that holds the Redis key rkey.
// With the cluster state loaded, finding the master takes no round trip.
func (m *masters) forKey(ctx context.Context, rkey string) *route {
	if b := m.unknown.b; b != nil && !b.Closed() {
		// The state could not be loaded: calls wait on unknown's probe
		// rather than try again, each, to load it.
		return m.unknown
	}
	node, err := m.client.MasterForKey(ctx, rkey)
	if err != nil {
		return m.unknown
	}
	addr := node.Options().Addr
	if r := (*m.byAddr.Load())[addr]; r != nil {
		return r
	}
	return m.add(addr)
}

// add returns addr's route, made if no other caller made it first.
func (m *masters) add(addr string) *route {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.byAddr.Load()
	if r := old[addr]; r != nil {
		return r
	}
	r, _ := m.routes.make() // the same routes made unknown, so they are valid
	next := make(map[string]*route, len(old)+1)
	for a, x := range old {
		next[a] = x
	}
	next[addr] = r
	m.byAddr.Store(&next)
	return r
}
