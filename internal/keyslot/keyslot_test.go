package keyslot_test

import (
	"fmt"
	"testing"

	"github.com/floodgate/floodgate/internal/keyslot"
)

// The slots Redis gives these keys (CLUSTER KEYSLOT on redis-server 7).
func TestOf(t *testing.T) {
	for key, want := range map[string]uint16{
		"foo": 12182, "bar": 5061, "{user:1}:a": 10778, "{user:1}:b": 10778, "user:1": 10778,
		"{}x": 10595, "{": 4092, "": 0,
	} {
		if got := keyslot.Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
}

func ExampleOf() {
	fmt.Println(keyslot.Of("{tenant:7}:rate"), keyslot.Of("tenant:7"))
	// Output: 2624 2624
}
