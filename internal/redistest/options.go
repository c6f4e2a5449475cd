package redistest

// Option configures the servers that [Start], [StartCluster] and
// [StartSentinel] run. For a cluster or a sentinel group, options apply to
// every data node (not to the sentinel itself).
type Option func(*options)

type options struct {
	password string
	persist  bool
	config   []string
	masters  int // StartCluster's; clusterNodes unless WithMasters
}

// WithPassword makes the servers require password (requirepass) and use it
// towards their master (masterauth); a sentinel is given it as auth-pass.
// An empty password leaves authentication off, as without the option.
func WithPassword(password string) Option {
	return func(o *options) { o.password = password }
}

// WithPersistence turns on the append-only file with an fsync after every
// write, so data written before [Server.Kill] is there again after
// [Server.Restart]. Without it a restarted server starts empty.
func WithPersistence() Option {
	return func(o *options) { o.persist = true }
}

// WithConfig appends lines to the generated redis.conf, after the
// harness's own, so they win: WithConfig("maxmemory 1mb",
// "maxmemory-policy noeviction").
func WithConfig(lines ...string) Option {
	return func(o *options) { o.config = append(o.config, lines...) }
}

// WithMasters sets how many masters [StartCluster] starts (default 3):
// 1, a one-node cluster serving all 16384 slots, which is as strict as
// three masters about a script or command whose keys span slots
// (CROSSSLOT) at a third of the cost, or 3 or more, which redis-cli
// --cluster create joins and splits the slots among. Any other number
// fails the test. [Start] and [StartSentinel] ignore it.
func WithMasters(n int) Option {
	return func(o *options) { o.masters = n }
}

func collect(opts []Option) options {
	o := options{masters: clusterNodes}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
