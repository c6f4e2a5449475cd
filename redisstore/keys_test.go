package redisstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// keyRig holds limiters whose keys the tests read; no server is ever
// contacted (New does not connect).
type keyRig struct {
	lim   *redisstore.Limiter
	stack *redisstore.Stack
	dyn   *redisstore.Dynamic
	cc    *redisstore.Limiter
}

func newKeyRig(tb testing.TB) *keyRig {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	tb.Cleanup(func() { c.Close() })
	newOrFail := func(l *redisstore.Limiter, err error) *redisstore.Limiter {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return l
	}
	stack, err := redisstore.NewStack(c, []core.Limit{
		core.PerSecond(5),
		core.PerHour(1000).WithAlgorithm(core.SlidingLog),
		core.InFlight(8),
	})
	if err != nil {
		tb.Fatal(err)
	}
	dyn, err := redisstore.NewDynamic(c, func(string) core.Limit { return core.PerMinute(5).WithAlgorithm(core.GCRA) })
	if err != nil {
		tb.Fatal(err)
	}
	return &keyRig{
		lim:   newOrFail(redisstore.New(c, core.PerMinute(100))),
		stack: stack,
		dyn:   dyn,
		cc:    newOrFail(redisstore.New(c, core.InFlight(8))),
	}
}

// all returns every Redis key that holds key's state on the rig.
func (r *keyRig) all(key string) []string {
	return append([]string{r.lim.Key(key), r.dyn.Key(key), r.cc.Key(key)}, r.stack.Keys(key)...)
}

// hashTag returns what Redis hashes in rkey: the bytes between the first
// '{' and the first '}' after it, when there are any.
func hashTag(rkey string) (string, bool) {
	i := strings.IndexByte(rkey, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(rkey[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return rkey[i+1 : i+1+j], true
}

var errBadTag = errors.New("not an encoded key")

// decodeTag undoes the encoding the package documents: '%' alone is the
// empty key; otherwise %25, %7B and %7D are '%', '{' and '}', and no other
// '%' may appear.
func decodeTag(tag string) (string, error) {
	if tag == "%" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(tag); i++ {
		if tag[i] != '%' {
			b.WriteByte(tag[i])
			continue
		}
		if i+3 > len(tag) {
			return "", errBadTag
		}
		switch tag[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "7B":
			b.WriteByte('{')
		case "7D":
			b.WriteByte('}')
		default:
			return "", errBadTag
		}
		i += 2
	}
	return b.String(), nil
}

// ordinary reports whether the package keeps key as it is in its keys.
func ordinary(key string) bool { return key != "" && !strings.ContainsAny(key, "%{}") }

// checkKey checks the properties every key's Redis keys must have, and
// returns the hash tag they share.
func checkKey(t testing.TB, r *keyRig, key string) string {
	t.Helper()
	rkeys := r.all(key)
	tag, ok := hashTag(rkeys[0])
	if !ok {
		t.Fatalf("key %q: Redis key %q has no hash tag", key, rkeys[0])
	}
	if strings.ContainsAny(tag, "{}") {
		t.Fatalf("key %q: hash tag %q holds a brace", key, tag)
	}
	for _, rk := range rkeys {
		if got, _ := hashTag(rk); got != tag || redistest.KeySlot(rk) != redistest.KeySlot(rkeys[0]) {
			t.Fatalf("key %q: Redis keys %q and %q differ in hash tag or slot: a script on both would fail with CROSSSLOT", key, rkeys[0], rk)
		}
		if !strings.HasPrefix(rk, redisstore.DefaultPrefix+"{"+tag+"}:") {
			t.Fatalf("key %q: Redis key %q is not <prefix>{<tag>}:...", key, rk)
		}
	}
	if got, err := decodeTag(tag); err != nil || got != key {
		t.Fatalf("key %q: tag %q decodes to %q, %v", key, tag, got, err)
	}
	if ordinary(key) && tag != key {
		t.Fatalf("ordinary key %q: tag %q, want the key itself", key, tag)
	}
	return tag
}

// TestKeyEncoding: every key's Redis keys (a Limiter's, a Dynamic's, a
// concurrency Limiter's, each layer of a Stack) share one non-empty hash
// tag without braces, hence one slot; the tag decodes back to the key, so
// distinct keys never share state; an ordinary key is its own tag.
func TestKeyEncoding(t *testing.T) {
	t.Parallel()
	r := newKeyRig(t)
	tests := []struct {
		key, tag string
	}{
		{"203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{"tenant-7", "tenant-7"},
		{"\x00\xff", "\x00\xff"},
		{"", "%"},
		{"%", "%25"},
		{"{", "%7B"},
		{"}", "%7D"},
		{"}x", "%7Dx"},
		{"}{", "%7D%7B"},
		{"{{}}", "%7B%7B%7D%7D"},
		{"a}b{c", "a%7Db%7Bc"},
		{"%7B", "%257B"},
		{"%25", "%2525"},
		{"100%", "100%25"},
	}
	for _, tc := range tests {
		if got := checkKey(t, r, tc.key); got != tc.tag {
			t.Errorf("key %q: tag %q, want %q", tc.key, got, tc.tag)
		}
	}
	if got, want := r.lim.Key("}x"), "floodgate:{%7Dx}:tb:100/60000000000:100"; got != want {
		t.Errorf("Key(%q) = %q, want %q", "}x", got, want)
	}
}

// TestKeyInjective: over every key of up to four bytes from the bytes an
// encoding could confuse, no two keys share a Redis key.
func TestKeyInjective(t *testing.T) {
	t.Parallel()
	r := newKeyRig(t)
	alphabet := []byte("%{}725BDbd\x00")
	keys := []string{""}
	for n, from := 1, 0; n <= 4; n++ {
		to := len(keys)
		for _, k := range keys[from:to] {
			for _, c := range alphabet {
				keys = append(keys, k+string(c))
			}
		}
		from = to
	}
	seen := make(map[string]string, len(keys))
	for _, k := range keys {
		checkKey(t, r, k)
		for _, rk := range r.all(k) { // a stack's layer shares a Limiter's key
			if other, ok := seen[rk]; ok && other != k {
				t.Fatalf("keys %q and %q share the Redis key %q", other, k, rk)
			}
			seen[rk] = k
		}
	}
	t.Logf("%d keys, %d Redis keys, all distinct", len(keys), len(seen))
}

// FuzzKey checks TestKeyEncoding's properties on any key: one non-empty
// hash tag without braces for all of its state, which decodes back to the
// key (so no two keys share state), and an ordinary key kept as it is.
func FuzzKey(f *testing.F) {
	r := newKeyRig(f)
	f.Add("}x")
	f.Fuzz(func(t *testing.T, key string) { checkKey(t, r, key) })
}

// TestKeyAllocs: building a key's Redis key allocates the key and nothing
// else, ordinary or encoded.
func TestKeyAllocs(t *testing.T) {
	r := newKeyRig(t)
	for _, key := range []string{"203.0.113.7", "}x", "", strings.Repeat("{", 1024)} {
		if n := testing.AllocsPerRun(100, func() { _ = r.lim.Key(key) }); n != 1 {
			t.Errorf("Key(%q): %v allocations, want 1", key, n)
		}
	}
}

// BenchmarkKey measures building a Redis key: an ordinary key is copied as
// it is; a key holding braces is encoded.
func BenchmarkKey(b *testing.B) {
	r := newKeyRig(b)
	for _, bc := range []struct{ name, key string }{
		{"ipv4", "203.0.113.7"},
		{"ipv6", "2001:db8:1:2::/64"},
		{"api-key-64", strings.Repeat("k", 64)},
		{"braces", "}x{y}"},
		{"empty", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.lim.Key(bc.key)
			}
		})
	}
}
