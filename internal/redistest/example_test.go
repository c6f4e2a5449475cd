package redistest_test

import (
	"fmt"

	"github.com/floodgate/floodgate/internal/redistest"
)

// A cluster test picks keys by slot, here without any server: keys sharing
// a {hash tag} share a slot, so a multi-key script may touch them together.
func ExampleKeySlot() {
	fmt.Println(redistest.KeySlot("foo"))
	fmt.Println(redistest.KeySlot("{user:1}:tokens") == redistest.KeySlot("{user:1}:stamp"))
	fmt.Println(redistest.KeySlot("{}foo") == redistest.KeySlot("foo")) // an empty tag is no tag
	// Output:
	// 12182
	// true
	// false
}
