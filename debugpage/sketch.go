package debugpage

// spaceSaving is the Space-Saving heavy-hitters summary (Metwally, Agrawal
// and El Abbadi, 2005) over a fixed number of counters: a key already
// monitored has its counter raised; a new key takes over the counter with
// the smallest count c, starting at c plus its weight and remembering c as
// its possible overestimate.
//
// With m counters over a stream of total weight N, every monitored key's
// count is within [true, true+err] with err <= min <= N/m, and every key
// whose true weight exceeds N/m is monitored. The counters are a min-heap
// (the next to be taken over is at the root) over keys found through a
// linear-probing table of their hashes, so add costs O(log m) and allocates nothing once the
// heap has grown to m.
//
// It is not safe for concurrent use; the Page shards and locks it.
type spaceSaving struct {
	keys  []entry // the monitored keys; an entry's index never changes
	heap  []node  // min-heap by count over keys; len(heap) == len(keys)
	table []int32 // index in keys + 1, 0 for an empty slot; len a power of 2
	mask  uint64
	total uint64 // weight added since creation
}

// entry is one monitored key. Its count lives in the heap, whose nodes
// are kept small so that sifting moves 16 bytes at a time.
type entry struct {
	key  string
	hash uint64
	err  uint64 // count - err is a lower bound of the key's true weight
	slot int32  // where table points at this entry
	pos  int32  // where heap holds this entry's node
}

type node struct {
	count uint64 // an upper bound of the key's true weight
	key   int32  // index in keys
}

// counter is one monitored key as the page reads it.
type counter struct {
	key        string
	count, err uint64
}

// newSpaceSaving returns a summary of m >= 1 counters.
func newSpaceSaving(m int) *spaceSaving {
	size := 1
	for size < 2*m {
		size <<= 1
	}
	return &spaceSaving{
		keys:  make([]entry, 0, m),
		heap:  make([]node, 0, m),
		table: make([]int32, size),
		mask:  uint64(size - 1),
	}
}

// add counts w more for key, whose hash is h.
func (s *spaceSaving) add(key string, h, w uint64) {
	s.total += w
	p := h & s.mask
	for s.table[p] != 0 {
		if e := &s.keys[s.table[p]-1]; e.hash == h && e.key == key {
			s.heap[e.pos].count += w
			s.down(int(e.pos))
			return
		}
		p = (p + 1) & s.mask
	}
	if len(s.keys) < cap(s.keys) {
		i := len(s.keys)
		s.keys = append(s.keys, entry{key: key, hash: h, slot: int32(p), pos: int32(i)})
		s.heap = append(s.heap, node{count: w, key: int32(i)})
		s.table[p] = int32(i + 1)
		s.up(i)
		return
	}
	// Take over the smallest counter. Deleting its table entry may shift
	// others, so the free slot is found again afterwards.
	least, i := s.heap[0].count, s.heap[0].key
	s.unlink(uint64(s.keys[i].slot))
	p = h & s.mask
	for s.table[p] != 0 {
		p = (p + 1) & s.mask
	}
	s.keys[i] = entry{key: key, hash: h, err: least, slot: int32(p), pos: 0}
	s.table[p] = i + 1
	s.heap[0].count = least + w
	s.down(0)
}

// unlink empties table slot p, moving later entries of the probe run back
// so that every entry stays reachable from its home slot (backward-shift
// deletion; linear probing needs no tombstones).
func (s *spaceSaving) unlink(p uint64) {
	s.table[p] = 0
	hole := p
	for q := (p + 1) & s.mask; s.table[q] != 0; q = (q + 1) & s.mask {
		home := s.keys[s.table[q]-1].hash & s.mask
		// The entry at q stays if its home lies cyclically in (hole, q].
		if hole <= q {
			if hole < home && home <= q {
				continue
			}
		} else if hole < home || home <= q {
			continue
		}
		s.table[hole] = s.table[q]
		s.keys[s.table[hole]-1].slot = int32(hole)
		s.table[q] = 0
		hole = q
	}
}

func (s *spaceSaving) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.keys[s.heap[i].key].pos = int32(i)
	s.keys[s.heap[j].key].pos = int32(j)
}

func (s *spaceSaving) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if s.heap[parent].count <= s.heap[i].count {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

func (s *spaceSaving) down(i int) {
	n := len(s.heap)
	for {
		least := i
		if l := 2*i + 1; l < n && s.heap[l].count < s.heap[least].count {
			least = l
		}
		if r := 2*i + 2; r < n && s.heap[r].count < s.heap[least].count {
			least = r
		}
		if least == i {
			return
		}
		s.swap(i, least)
		i = least
	}
}

// appendTo appends every monitored key to dst.
func (s *spaceSaving) appendTo(dst []counter) []counter {
	for _, n := range s.heap {
		e := &s.keys[n.key]
		dst = append(dst, counter{e.key, n.count, e.err})
	}
	return dst
}

// min is the smallest count when every counter is in use, which bounds
// the true weight of every key not monitored; 0 while counters are free.
func (s *spaceSaving) min() uint64 {
	if len(s.heap) < cap(s.heap) {
		return 0
	}
	return s.heap[0].count
}
