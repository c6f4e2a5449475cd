package clientip

import "net/netip"

// parseIPv4Prefix parses the dotted quad at the start of s and reports how
// many bytes it used. It accepts exactly what netip.ParseAddr accepts for
// IPv4 (four decimal octets, no leading zeros), but without first scanning
// the whole string to guess the family: a peer's or hop's address is
// usually IPv4, and this is the hottest code in the package.
func parseIPv4Prefix(s string) (ip [4]byte, n int, ok bool) {
	i := 0
	for k := 0; k < 4; k++ {
		if k > 0 {
			if i >= len(s) || s[i] != '.' {
				return ip, 0, false
			}
			i++
		}
		start, v := i, 0
		for i < len(s) && i-start < 3 && s[i] >= '0' && s[i] <= '9' {
			v = v*10 + int(s[i]-'0')
			i++
		}
		if i == start || v > 255 || (s[start] == '0' && i-start > 1) {
			return ip, 0, false
		}
		ip[k] = byte(v)
	}
	return ip, i, true
}

// appendKey6 appends p (IPv6, not IPv4-mapped, already masked) in the
// canonical text form of RFC 5952, as netip.Prefix.String would, without
// the general formatter's cost.
func appendKey6(b []byte, p netip.Prefix) []byte {
	a := p.Addr().As16()
	var g [8]uint16
	for i := range g {
		g[i] = uint16(a[2*i])<<8 | uint16(a[2*i+1])
	}
	// The longest run of two or more zero groups becomes "::"; the first
	// wins a tie.
	zs, zl := -1, 1
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i > zl {
			zs, zl = i, j-i
		}
		i = j
	}
	for i := 0; i < 8; i++ {
		if i == zs {
			b = append(b, ':', ':')
			i += zl - 1
			continue
		}
		if i > 0 && i != zs+zl {
			b = append(b, ':')
		}
		b = appendHex16(b, g[i])
	}
	b = append(b, '/')
	return appendSmall(b, p.Bits())
}

func appendHex16(b []byte, v uint16) []byte {
	const digits = "0123456789abcdef"
	switch {
	case v >= 0x1000:
		return append(b, digits[v>>12], digits[v>>8&0xf], digits[v>>4&0xf], digits[v&0xf])
	case v >= 0x100:
		return append(b, digits[v>>8], digits[v>>4&0xf], digits[v&0xf])
	case v >= 0x10:
		return append(b, digits[v>>4], digits[v&0xf])
	default:
		return append(b, digits[v])
	}
}

// appendSmall appends 0 <= v <= 999 in decimal.
func appendSmall(b []byte, v int) []byte {
	switch {
	case v >= 100:
		return append(b, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	case v >= 10:
		return append(b, byte('0'+v/10), byte('0'+v%10))
	default:
		return append(b, byte('0'+v))
	}
}
