package promobs

import (
	"strings"
	"testing"
	"unsafe"
)

func TestSame(t *testing.T) {
	t.Parallel()
	api := "api"
	clone := strings.Clone(api)
	tests := []struct {
		a, b string
		want bool
	}{
		{api, api, true},
		{api, clone, false}, // the same bytes in other memory
		{api, api[:2], false},
		{"", strings.Clone(""), true},
		{"", api[:0], true},
		{api[1:], api[1:], true},
	}
	for _, tc := range tests {
		if got := same(tc.a, tc.b); got != tc.want {
			t.Errorf("same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if tc.want && identityHash(tc.a, "http") != identityHash(tc.b, "http") {
			t.Errorf("%q and %q are the same string but hash apart", tc.a, tc.b)
		}
	}
}

// TestIdentityCacheBounded: names in new memory fill the slots their hash
// probes and then are no longer recorded: nothing is replaced and nothing
// allocated.
func TestIdentityCacheBounded(t *testing.T) { // not parallel: AllocsPerRun
	var c identityCache
	const h = identitySlots - 2 // the probes wrap around the table's end
	var names []string
	var ss []*series
	for i := range identityProbes + 1 {
		names = append(names, strings.Clone("api"))
		ss = append(ss, &series{limit: names[i]})
	}
	for i := range identityProbes {
		if got := c.find(h, names[i], "http"); got != nil {
			t.Fatalf("name %d found before it was added", i)
		}
		c.add(h, names[i], "http", ss[i])
		c.add(h, names[i], "http", ss[i]) // again: no second slot
	}
	last := names[identityProbes]
	if n := testing.AllocsPerRun(100, func() { c.add(h, last, "http", ss[identityProbes]) }); n != 0 {
		t.Errorf("adding to full slots: %v allocations", n)
	}
	for i, name := range names {
		got := c.find(h, name, "http")
		if want := ss[i]; i == identityProbes {
			if got != nil {
				t.Errorf("the name beyond the probed slots was found")
			}
		} else if got != want {
			t.Errorf("name %d: found %p, want %p", i, got, want)
		}
		if got := c.find(h, name, "grpc"); got != nil {
			t.Errorf("name %d found with another transport", i)
		}
	}
	filled := 0
	for i := range c.slots {
		if c.slots[i].Load() != nil {
			filled++
		}
	}
	if filled != identityProbes {
		t.Errorf("%d slots filled, want %d", filled, identityProbes)
	}
}

// TestStripesApart: every cell starts on a 128-byte boundary and the
// cells do not overlap, so two cores adding to two cells never share a
// cache line.
func TestStripesApart(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 16, 17, 47, 48, 49} {
		c := newStripedCounts(n)
		if c.stride < n || c.stride%lineWords != 0 || len(c.words) != stripes*c.stride {
			t.Fatalf("n=%d: stride %d, %d words", n, c.stride, len(c.words))
		}
		for i := 0; i < len(c.words); i += c.stride {
			if a := addrOf(&c.words[i]); a%(8*lineWords) != 0 {
				t.Errorf("n=%d: cell %d at %#x, not on a line boundary", n, i/c.stride, a)
			}
		}
		for range 1000 {
			c.cell()[n-1].Add(1)
		}
		if got := c.sum(n - 1); got != 1000 {
			t.Errorf("n=%d: sum %d, want 1000", n, got)
		}
	}
}

func addrOf[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }
