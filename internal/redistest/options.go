package redistest

// Option configures the servers that [Start], [StartCluster] and
// [StartSentinel] run. For a cluster or a sentinel group, options apply to
// every data node (not to the sentinel itself).
type Option func(*options)

type options struct {
	password string
	persist  bool
	config   []string
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

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
