package rlsstats_test

import (
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
	} {
		if got := rlsstats.Labels(c.key); got != c.want {
			t.Errorf("Labels(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}
