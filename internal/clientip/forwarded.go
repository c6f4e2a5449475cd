package clientip

import "strings"

// fwdElem is what ClientIP needs from one RFC 7239 forwarded-element: its
// for= node, unparsed. Other parameters are checked for syntax only.
type fwdElem struct {
	// start and end delimit the value of for= in the line, inside the
	// quotes when quoted. Offsets rather than a string keep the element
	// array that ClientIP zeroes on every call small.
	start, end int32
	flags      uint8
}

const (
	fwdEmpty   uint8 = 1 << iota // no parameters: an empty list element
	fwdHasFor                    // node is set
	fwdDupFor                    // for= appeared more than once
	fwdEscaped                   // node holds quoted-pairs to undo
)

// parseForwarded splits one Forwarded header line into elements, filling
// elems in order. It returns the number of elements, the byte offset of the
// first syntax error (-1 if none), and overflow when the line has more
// elements than elems holds.
//
// Grammar (RFC 7239 §4 with RFC 9110 lists): elements are separated by
// commas, parameters by semicolons, each parameter is token=value where
// value is a token or a quoted string, and parameter names are
// case-insensitive. Spaces and tabs are tolerated around elements and
// parameters but not around "=". Unquoted values may also contain ':', '['
// and ']', because proxies commonly write "for=192.0.2.1:4711" or bare
// IPv6 unquoted; those bytes are not separators, so this does not change
// where any element begins.
func parseForwarded(line string, elems []fwdElem) (n, errAt int, overflow bool) {
	cur := fwdElem{flags: fwdEmpty}
	i := 0
	for {
		i = skipOWS(line, i)
		if i == len(line) || line[i] == ',' {
			if n == len(elems) {
				return n, -1, true
			}
			elems[n] = cur
			n++
			if i == len(line) {
				return n, -1, false
			}
			i++
			cur = fwdElem{flags: fwdEmpty}
			continue
		}
		if line[i] == ';' {
			i++
			continue
		}

		start := i
		for i < len(line) && IsTchar(line[i]) {
			i++
		}
		if i == start || i == len(line) || line[i] != '=' {
			return n, i, false
		}
		name := line[start:i]
		i++

		var (
			vs, ve  int
			escaped bool
		)
		if i < len(line) && line[i] == '"' {
			i++
			vs = i
			for {
				if i == len(line) {
					return n, i, false
				}
				c := line[i]
				if c == '"' {
					break
				}
				if c == '\\' {
					i++
					if i == len(line) || !isQuotedPairChar(line[i]) {
						return n, i, false
					}
					escaped = true
				} else if !isQdtext(c) {
					return n, i, false
				}
				i++
			}
			ve = i
			i++
		} else {
			vs = i
			for i < len(line) && valueCharTable[line[i]] {
				i++
			}
			if i == vs {
				return n, i, false
			}
			ve = i
		}

		cur.flags &^= fwdEmpty
		if len(name) == 3 && strings.EqualFold(name, "for") {
			if cur.flags&fwdHasFor != 0 {
				cur.flags |= fwdDupFor
			} else {
				cur.flags |= fwdHasFor
				cur.start, cur.end = int32(vs), int32(ve)
				if escaped {
					cur.flags |= fwdEscaped
				}
			}
		}

		i = skipOWS(line, i)
		if i < len(line) {
			switch line[i] {
			case ';':
				i++
			case ',':
				// ends the element on the next turn
			default:
				return n, i, false
			}
		}
	}
}

// unescapeQuoted undoes quoted-pairs. Senders have no reason to escape an
// address, so this rare path may allocate.
func unescapeQuoted(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isQdtext reports whether c may appear unescaped in a quoted string.
func isQdtext(c byte) bool {
	return qdtextTable[c]
}

var qdtextTable = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5B) || (c >= 0x5D && c <= 0x7E) || c >= 0x80
	}
	return t
}()

// valueCharTable holds the bytes of an unquoted parameter value: a token,
// plus the address punctuation proxies leave unquoted.
var valueCharTable = func() (t [256]bool) {
	t = tcharTable
	t[':'], t['['], t[']'] = true, true, true
	return t
}()

// isQuotedPairChar reports whether c may follow a backslash in a quoted
// string.
func isQuotedPairChar(c byte) bool {
	return c == '\t' || c == ' ' || (c >= 0x21 && c <= 0x7E) || c >= 0x80
}
