package core

// Test knobs, visible to core's external tests only.
var (
	WithShards    = withShards
	WithDenyCache = withDenyCache
	WithSeed      = withSeed
)

// Examined returns how many keys k's shards have looked at to find idle
// ones, since k was made.
func (k *Keyed) Examined() int64 {
	n := int64(0)
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += s.examined
		s.mu.Unlock()
	}
	return n
}

// Layer returns the Keyed holding the stack's layer i, so that tests can
// see what each layer was charged.
func (s *Stack) Layer(i int) *Keyed { return s.layers[i] }
