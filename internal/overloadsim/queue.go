package overloadsim

// job is a request the controller admitted, with its draws.
type job struct {
	req     Request
	service int64 // ns
	finish  int64 // ns, once started
	// class and tenant index Config.Classes and Config.Tenants.
	class, tenant int32
}

// fifo is the server's queue: admitted requests waiting for a worker.
type fifo struct {
	buf        []job
	head, size int
}

func (q *fifo) push(j job) {
	if q.size == len(q.buf) {
		buf := make([]job, max(16, 2*len(q.buf)))
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = j
	q.size++
}

func (q *fifo) pop() job {
	j := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return j
}

// running is a min-heap of the jobs in service by finish time (then by
// ID, so that ties finish in a fixed order).
type running []job

func (h running) less(i, k int) bool {
	return h[i].finish < h[k].finish || h[i].finish == h[k].finish && h[i].req.ID < h[k].req.ID
}

func (h *running) push(j job) {
	*h = append(*h, j)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *running) pop() job {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
