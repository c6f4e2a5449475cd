package fields_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
)

// ceilSec is ceil(d) in seconds, 0 for d <= 0, computed in unsigned
// arithmetic (unlike the package) so that it cannot overflow.
func ceilSec(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((uint64(d) + uint64(time.Second) - 1) / uint64(time.Second))
}

// readString reads the Structured Field String at the start of v (RFC 8941
// §3.3.3) and returns its content and the rest of v.
func readString(v string) (s, rest string, ok bool) {
	if !strings.HasPrefix(v, `"`) {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			if i++; i == len(v) || v[i] != '"' && v[i] != '\\' {
				return "", "", false
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), v[i+1:], true
		case c < 0x20 || c > 0x7e:
			return "", "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// readItem reads `"name";k1=n1;k2=n2`, the two parameters in that order,
// each a non-negative decimal integer.
func readItem(v, k1, k2 string) (name string, n1, n2 int64, ok bool) {
	name, rest, ok := readString(v)
	if !ok {
		return "", 0, 0, false
	}
	var ns [2]int64
	for i, k := range []string{k1, k2} {
		var p string
		p, rest, _ = strings.Cut(strings.TrimPrefix(rest, ";"), ";")
		num, found := strings.CutPrefix(p, k+"=")
		n, err := strconv.ParseInt(num, 10, 64)
		if !found || err != nil || n < 0 || num != strconv.FormatInt(n, 10) {
			return "", 0, 0, false
		}
		ns[i] = n
	}
	return name, ns[0], ns[1], rest == ""
}

// clean is s as a String can carry it: every byte outside printable ASCII
// becomes '_' (what SFString does, written again).
func clean(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '_'
		}
	}
	return string(b)
}

// coreName reports whether core.Limit.Validate accepts name.
func coreName(name string) bool {
	return core.Limit{Events: 1, Period: time.Second, Name: name}.Validate() == nil
}

// checkFields formats d in style and checks every value against the
// documented formulas, whatever d.Limit.Name holds: every number present
// and exact, Retry-After >= 1 and t <= Retry-After on a denial, RateLimit
// and RateLimit-Policy naming the policy alike, with a valid String, and no
// byte outside printable ASCII in any value.
func checkFields(t *testing.T, d core.Decision, style core.HeaderStyle) {
	t.Helper()
	fatalf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("name %q (%d bytes), style %v, %+v:\n"+format,
			append([]any{d.Limit.Name, len(d.Limit.Name), style, d}, args...)...)
	}
	p := fields.NewPolicyText(d.Limit)
	var v fields.Values
	v.Format(d, &p, style)
	text := string(v.Text())
	got := map[fields.Field]string{}
	for i := 0; i < v.Len(); i++ {
		f, val := v.Field(i, text)
		if _, dup := got[f]; dup {
			fatalf("%s twice", f.HTTP())
		}
		for j := 0; j < len(val); j++ {
			if val[j] < 0x20 || val[j] > 0x7e {
				fatalf("%s: %q has byte %#x", f.HTTP(), val, val[j])
			}
		}
		got[f] = val
	}
	if err := samePut(d, &p, style, "", got); err != "" {
		fatalf("%s", err)
	}
	num := func(f fields.Field, want int64) {
		t.Helper()
		val, ok := got[f]
		if !ok {
			fatalf("%s missing", f.HTTP())
		}
		if n, err := strconv.ParseInt(val, 10, 64); err != nil || n != want {
			fatalf("%s: %q, want %d", f.HTTP(), val, want)
		}
	}
	remaining := max(int64(d.Remaining), 0)
	retry := max(ceilSec(d.RetryAfter), 1)
	if !d.Allowed {
		num(fields.RetryAfter, retry)
	} else if _, ok := got[fields.RetryAfter]; ok {
		t.Fatal("Retry-After on an allowed decision")
	}
	if style.Legacy() {
		num(fields.Limit, max(int64(d.Limit.Events), 0))
		num(fields.Remaining, remaining)
		num(fields.Reset, ceilSec(d.ResetAfter))
	}
	if style.IETF() {
		pname, q, w, ok := readItem(got[fields.Policy], "q", "w")
		if !ok || q != max(int64(d.Limit.Events), 0) || w != max(ceilSec(d.Limit.Period), 1) {
			fatalf("RateLimit-Policy %q for %+v", got[fields.Policy], d.Limit)
		}
		rname, r, tt, ok := readItem(got[fields.RateLimit], "r", "t")
		wantT := ceilSec(d.ResetAfter)
		if !d.Allowed {
			wantT = ceilSec(d.RetryAfter)
		}
		if !ok || rname != pname || r != remaining || tt != wantT {
			fatalf("RateLimit %q with RateLimit-Policy %q for %+v", got[fields.RateLimit], got[fields.Policy], d)
		}
		if !d.Allowed && tt > retry {
			fatalf("t=%d after Retry-After %d", tt, retry)
		}
		name := fields.PolicyName(d.Limit)
		switch {
		case coreName(d.Limit.Name):
			if pname != name {
				fatalf("valid name %q sent as %q", name, pname)
			}
		case len(fields.SFString(name)) <= fields.MaxQuotedName: // fits whole
			if pname != clean(name) {
				fatalf("name %q sent as %q", name, pname)
			}
		case !strings.HasPrefix(clean(name), pname) || len(fields.SFString(pname)) > fields.MaxQuotedName ||
			len(fields.SFString(pname)) < fields.MaxQuotedName-4: // a '"' or 3 bytes of a rune short at most
			fatalf("name %q cut to %q", name, pname)
		}
		if p.Name != pname {
			fatalf("PolicyText.Name %q, the fields say %q", p.Name, pname)
		}
	}
	want := 0
	if style.Legacy() {
		want += 3
	}
	if style.IETF() {
		want += 2
	}
	if !d.Allowed {
		want++
	}
	if len(got) != want {
		fatalf("%d fields in style %v, want %d: %v", len(got), style, want, got)
	}
}

// styles are the header styles, all of them.
var styles = []core.HeaderStyle{core.HeadersBoth, core.HeadersLegacy, core.HeadersIETF, core.HeadersNone}

// extremes are decisions whose numbers are as long as they get.
func extremes(l core.Limit) []core.Decision {
	return []core.Decision{
		{Allowed: true, Limit: l, Remaining: math.MaxInt, ResetAfter: math.MaxInt64},
		{Limit: l, Remaining: math.MaxInt, ResetAfter: math.MaxInt64, RetryAfter: math.MaxInt64},
		{Limit: l, Remaining: math.MaxInt, ResetAfter: math.MaxInt64 - 1, RetryAfter: 0},
		{Limit: l, Remaining: -1, ResetAfter: time.Minute, RetryAfter: 1500 * time.Millisecond},
	}
}

// TestLongName is issue 18's defect 5: a custom limiter's 140-byte name
// used to leave no room for the numbers, and a 429 went out without
// Retry-After and with "r=;t=".
func TestLongName(t *testing.T) {
	t.Parallel()
	l := core.Limit{Events: 5, Period: time.Second, Name: strings.Repeat("n", 140)}
	for _, style := range styles {
		for _, d := range extremes(l) {
			checkFields(t, d, style)
		}
	}
}

// TestNameLengths formats names of every length from 0 to 300 bytes, of
// bytes a core name may hold, bytes a String escapes (two bytes quoted),
// two- and three-byte runes (cut anywhere), bytes of no rune (a stray
// continuation byte, found by FuzzHeaders) and other bytes a String cannot
// hold, with the
// longest numbers, in every style.
func TestNameLengths(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"a", `"`, `x\`, "ü", "\xff", "\xa2", "\r\n", "é\"z", "€"} {
		for n := 0; n <= 300; n++ {
			name := strings.Repeat(unit, n)[:n]
			l := core.Limit{Events: math.MaxInt, Period: math.MaxInt64, Name: name}
			for _, style := range styles {
				for _, d := range extremes(l) {
					checkFields(t, d, style)
				}
			}
		}
	}
}

// TestMaxQuotedName checks that every name core.Limit.Validate accepts
// fits the fields whole: 64 bytes, 66 quoted.
func TestMaxQuotedName(t *testing.T) {
	t.Parallel()
	longest := strings.Repeat("z", 64)
	if !coreName(longest) || coreName(longest+"z") {
		t.Fatal("core's longest name is no longer 64 bytes")
	}
	if fields.MaxQuotedName < len(longest)+2 {
		t.Fatalf("MaxQuotedName %d cuts valid names", fields.MaxQuotedName)
	}
	if p := fields.NewPolicyText(core.PerSecond(1).WithName(longest)); p.Name != longest {
		t.Fatalf("a valid name sent as %q", p.Name)
	}
}
