package rlsprom_test

import (
	"fmt"

	"github.com/floodgate/floodgate/internal/rlsprom"
)

// A rule's stats key split into the labels upstream's Prometheus mapping
// gives it.
func ExampleLabels() {
	l := rlsprom.Labels("edge.remote_address_203.0.113.9.path_/login")
	fmt.Printf("domain=%s key1=%s key2=%s\n", l[0], l[1], l[2])
	// Output:
	// domain=edge key1=remote_address_203_0_113_9 key2=path_/login
}
