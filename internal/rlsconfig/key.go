package rlsconfig

import (
	"crypto/sha256"
	"strings"
)

// Key returns the key of the state a request descriptor entries, which
// matched r, counts in. As envoyproxy/ratelimit's cache key it holds the
// domain and every entry's key and value as the request gave them (a
// key-only or wildcard descriptor limits each value on its own), except
// that an entry matched by a wildcard value with share_threshold holds the
// pattern instead, so that all matching values share one count. Unlike
// envoyproxy/ratelimit's, it holds no prefix and no window (the algorithm
// keeps time), and its parts are escaped so that two descriptors never
// share a key: upstream joins them with '_', and ("a", "b_c") and
// ("a_b", "c") meet there.
//
// A part longer than MaxKeyPart bytes (a client's 1 MB header value, say)
// is held as its digest instead: '\#' and the first 128 bits of its
// SHA-256 in hex, 34 bytes, so that a store keeps no client's long text
// for a rule's period, and two values share a key only if SHA-256 collides
// on 128 bits. Escaping never writes "\#", so a digest never meets a
// value as written; shorter parts are as they were, and so are their keys'
// states.
func (r *Rule) Key(entries []Entry) string {
	var b strings.Builder
	n := min(len(r.Domain), MaxKeyPart) + 2
	for _, e := range entries {
		n += min(len(e.Key), MaxKeyPart) + min(len(e.Value), MaxKeyPart) + 2
	}
	b.Grow(n)
	escape(&b, r.Domain)
	for i, e := range entries {
		b.WriteByte('|')
		escape(&b, e.Key)
		b.WriteByte('=')
		if i < len(r.path) && r.path[i].share && r.path[i].parts != nil {
			escape(&b, r.path[i].value)
		} else {
			escape(&b, e.Value)
		}
	}
	return b.String()
}

// MaxKeyPart is the longest domain, descriptor key or value [Rule.Key]
// holds as it is; a longer one is held as its digest.
const MaxKeyPart = 128

// escape writes s with '\\', '|' and '=' escaped by a backslash, or, when
// s is longer than MaxKeyPart, its digest.
func escape(b *strings.Builder, s string) {
	if len(s) > MaxKeyPart {
		digest(b, s)
		return
	}
	if !strings.ContainsAny(s, `\|=`) {
		b.WriteString(s)
		return
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '|' || c == '=' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// digest writes '\#' and the first 16 bytes of s's SHA-256 in hex.
func digest(b *strings.Builder, s string) {
	h := sha256.New()
	var buf [512]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	b.WriteString(`\#`)
	var hex [32]byte
	const digits = "0123456789abcdef"
	for i, c := range sum[:16] {
		hex[2*i], hex[2*i+1] = digits[c>>4], digits[c&15]
	}
	b.Write(hex[:])
}
