package fields

import (
	"sync"
	"unsafe"
)

// A slab hands out storage for field values in bulk, so that writing the
// rate-limit fields (HTTP headers or gRPC metadata) costs no allocation on
// most requests.
//
// Every header value needs a []string backing array of its own, and the
// per-request numbers need bytes for their text. Allocating both per request
// costs two mallocs, which measured about as much as the five map
// assignments themselves (httpmw's bench_test.go). A slab is one 2 KiB allocation
// that serves about 35 to 45 requests: each takes fresh value slots and text bytes
// from it, and nothing handed out is ever written again or handed out twice,
// so responses never share storage.
//
// The price is retention: a response's header values keep their whole slab
// alive until the response is garbage. The slab is kept small so that a
// long-lived response (a stream, a WebSocket) pins at most 2 KiB; allocation
// is already rare at this size, and larger slabs would not be measurably
// faster.
//
// Slabs with room left wait in a sync.Pool, so goroutines on different Ps
// fill different slabs without contention.
type slab struct {
	vals [slabVals]string
	text [slabText]byte
	nv   int // vals[:nv] are handed out
	nt   int // text[:nt] is handed out
}

const (
	slabVals = 72  // 1 or 2 a request (Put shares the repeating values), 1 more on a denial
	slabText = 880 // typically 20–30 bytes a request; 2048 bytes in all
)

var slabs = sync.Pool{New: func() any { return new(slab) }}

// Take returns nvals fresh value slots (len nvals, cap nvals, so that an
// append copies) and a string holding a copy of text. The caller owns both.
func Take(nvals int, text []byte) ([]string, string) {
	if nvals > slabVals/8 || len(text) > slabText/4 {
		// Outsized (a policy name near the 64-byte limit is fine; a custom
		// limiter's huge one is not): not worth a slab.
		return make([]string, nvals), string(text)
	}
	s := slabs.Get().(*slab)
	if s.nv+nvals > slabVals || s.nt+len(text) > slabText {
		// Full: drop it, its storage belongs to earlier responses now.
		s = new(slab)
	}
	vals := s.vals[s.nv : s.nv+nvals : s.nv+nvals]
	s.nv += nvals
	var str string
	if len(text) > 0 {
		start := s.nt
		n := copy(s.text[start:], text)
		s.nt += n
		// These bytes are never written again (nt only grows and a slab is
		// never reset), which is what unsafe.String requires.
		str = unsafe.String(&s.text[start], n)
	}
	slabs.Put(s)
	return vals, str
}
