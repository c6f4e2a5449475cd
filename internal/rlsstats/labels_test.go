package rlsstats_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/rlsstats"
)

func TestLabels(t *testing.T) {
	for _, c := range []struct {
		key  string
		want [3]string
	}{
		{"domain1.key1_val1", [3]string{"domain1", "key1_val1", ""}},
		{"domain1.key1_val1.key2_val2", [3]string{"domain1", "key1_val1", "key2_val2"}},
		{"domain1.key3_val3.key4_val4.key5_val5", [3]string{"domain1", "key3_val3", "key4_val4"}},
		{"mongo_cps.database_users", [3]string{"mongo_cps", "database_users", ""}},
		{"edge.remote_address_10.0.0.1", [3]string{"edge", "remote_address_10_0_0_1", ""}},
		{"edge.remote_address_10.0.0.1.path_/a", [3]string{"edge", "remote_address_10_0_0_1", "path_/a"}},
		{"edge.key_a:b|c", [3]string{"edge", "key_a_b_c", ""}},
		{long, [3]string{"edge", "path_" + strings.Repeat("x", 246) + "#" + digest(long), ""}},
	} {
		if got := rlsstats.Labels(c.key); got != c.want {
			t.Errorf("Labels(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// long is a stats key past the bound: a client's long value in a
// detailed_metric rule's key.
var long = "edge.path_" + strings.Repeat("x", 300)

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
