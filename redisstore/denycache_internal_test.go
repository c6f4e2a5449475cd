package redisstore

import "testing"

// TestDenyCacheRefundInFlight: a refusal whose request set out before a
// refund ended is not kept, since the server may have decided it before
// the units came back; one that set out after is.
func TestDenyCacheRefundInFlight(t *testing.T) {
	p := &policy{}
	c := newDenyCache(16)

	before := c.since()
	c.refunded("k") // the refund ends while the refusal is in flight
	c.keep(before, "k", p, 100, 100, 0)
	if _, _, ok := c.lookup("k", p, 0); ok {
		t.Fatal("kept a refusal decided before a refund that has since ended")
	}

	after := c.since()
	c.keep(after, "k", p, 100, 100, 0)
	d, _, ok := c.lookup("k", p, 40)
	if !ok || d.RetryAfter != 60 || d.ResetAfter != 60 {
		t.Fatalf("refusal after the refund: got %+v, %v; want RetryAfter and ResetAfter 60ns", d, ok)
	}

	c.refunded("k")
	if _, _, ok := c.lookup("k", p, 40); ok {
		t.Fatal("a refund left the key's refusal in place")
	}

	c.keep(after, "other", p, 100, 100, 0)
	if _, _, ok := c.lookup("other", p, 0); ok {
		t.Fatal("kept a refusal for another key that set out before a refund ended")
	}
}
