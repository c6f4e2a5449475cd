package fields

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/floodgate/floodgate/core"
)

// Field is one rate-limit field.
type Field uint8

// The fields, in the order a response carries them.
const (
	Limit      Field = iota // X-RateLimit-Limit: the policy's events per period
	Remaining               // X-RateLimit-Remaining: cost-1 requests that would pass now
	Reset                   // X-RateLimit-Reset: seconds until the quota is whole again
	Policy                  // RateLimit-Policy: "name";q=<events>;w=<period seconds>
	RateLimit               // RateLimit: "name";r=<remaining>;t=<seconds>
	RetryAfter              // Retry-After: seconds until a retry can succeed (denials)
	numFields
)

// httpNames are the header names in canonical MIME form, the keys
// textproto.CanonicalMIMEHeaderKey would produce, so that they can be
// assigned straight into an http.Header.
var httpNames = [numFields]string{
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
	"Ratelimit-Policy", "Ratelimit", "Retry-After",
}

// mdNames are the same names in lower case, as gRPC metadata requires.
var mdNames = [numFields]string{
	"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
	"ratelimit-policy", "ratelimit", "retry-after",
}

// HTTP returns the field's header name in canonical form.
func (f Field) HTTP() string { return httpNames[f] }

// Metadata returns the field's gRPC metadata key (lower case).
func (f Field) Metadata() string { return mdNames[f] }

// PolicyName is the name the fields use for l: its Name, or "default".
func PolicyName(l core.Limit) string {
	if l.Name == "" {
		return "default"
	}
	return l.Name
}

// CeilSeconds is d in whole seconds, rounded up, and 0 for d <= 0: a client
// that waits that long is never early.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// RetryAfterSeconds is the Retry-After value of a denial: ceil(RetryAfter),
// at least 1, because 0 would invite an immediate retry that RetryAfter says
// cannot succeed yet.
func RetryAfterSeconds(d core.Decision) int64 { return max(CeilSeconds(d.RetryAfter), 1) }

// resetSeconds is the RateLimit t parameter: on a denial, seconds until the
// same request can succeed; when allowed, until the quota is whole again.
// Retry-After is therefore never earlier than t, as the draft requires.
func resetSeconds(d core.Decision) int64 {
	if d.Allowed {
		return CeilSeconds(d.ResetAfter)
	}
	return CeilSeconds(d.RetryAfter)
}

func nonNeg(n int64) int64 { return max(n, 0) }

// PolicyText holds what the fields say about one Limit that never changes
// from one request to the next, formatted once.
type PolicyText struct {
	// Limit is the policy the text describes.
	Limit core.Limit
	// Name is the policy's name as the fields carry it, unquoted: the
	// name (or "default", see PolicyName), with bytes a Structured Field
	// String cannot hold replaced by '_', and cut when too long (see
	// [MaxQuotedName]). It is printable ASCII, so the problem+json body
	// and gRPC details can carry it as it is and name the policy exactly
	// as RateLimit-Policy does.
	Name string
	// Events is X-RateLimit-Limit's value.
	Events string
	// Policy is RateLimit-Policy's value.
	Policy string
	// prefix starts the RateLimit value: "name";r=
	prefix string
	// events and policy are Events and Policy as header values: shared,
	// read-only one-element slices (see [Put]).
	events, policy []string
}

// NewPolicyText formats l's constant fields.
func NewPolicyText(l core.Limit) PolicyText {
	name := fieldName(PolicyName(l))
	events := strconv.FormatInt(nonNeg(int64(l.Events)), 10)
	q := SFString(name)
	policy := q + ";q=" + events + ";w=" + strconv.FormatInt(max(CeilSeconds(l.Period), 1), 10)
	return PolicyText{
		Limit:  l,
		Name:   name,
		Events: events,
		Policy: policy,
		prefix: q + ";r=",
		events: []string{events},
		policy: []string{policy},
	}
}

// MaxQuotedName is the longest a policy name is in the fields, as a
// quoted String with its escapes: what [Values]'s buffer has left once it
// holds the longest numbers. Every name core.Limit.Validate accepts fits
// (64 bytes that need no escape, 66 quoted); a custom core.Limiter's
// longer name is cut (see fieldName) rather than dropping numbers or
// growing the buffer: Retry-After must never go missing, and a header
// that grows with a name could pass a proxy's header size limit.
const MaxQuotedName = bufLen - maxNumbers

// fieldName is name as the fields carry it: bytes a String cannot hold
// become '_', and the name is cut to the longest prefix whose quoted form
// is at most MaxQuotedName bytes long. The cut falls between escapes (a
// '"' or '\\' and its backslash stay together, by construction) and never
// inside a valid multi-byte rune of the original name, which is dropped
// whole (stray bytes of no valid rune are cut anywhere); the result is
// printable ASCII either way.
func fieldName(name string) string {
	b := make([]byte, 0, min(len(name), MaxQuotedName))
	quoted := 2 // the quotes
	for i := 0; i < len(name); i++ {
		c := name[i]
		w := 1
		if c == '"' || c == '\\' {
			w = 2
		}
		if quoted+w > MaxQuotedName {
			// name[i] is the first byte left out. Each byte of a rune is
			// one '_' in b, so dropping its first bytes is cutting b.
			return string(b[:runeCut(name, i)])
		}
		if c < 0x20 || c > 0x7e {
			c = '_'
		}
		b = append(b, c)
		quoted += w
	}
	return string(b)
}

// runeCut returns where to cut s so that s[:i] is kept at most: i, or the
// start of the valid multi-byte rune that s[i] is inside.
func runeCut(s string, i int) int {
	for j := i - 1; j >= 0 && j > i-utf8.UTFMax; j-- {
		if utf8.RuneStart(s[j]) {
			if _, size := utf8.DecodeRuneInString(s[j:]); size > 1 && j+size > i {
				return j
			}
			break
		}
	}
	return i
}

// SFString formats s as a Structured Field String (RFC 8941 §3.3.3): quoted,
// with '"' and '\' escaped. Bytes a String cannot hold (controls, non-ASCII)
// become '_'; core.Limit.Validate never lets them into a name, but a custom
// core.Limiter could, and a field value must never carry CR or LF.
func SFString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '_')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
