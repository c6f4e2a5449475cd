package rlsprom_test

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/floodgate/floodgate/internal/rlsprom"
	"github.com/floodgate/floodgate/internal/rlsstats"
)

// A rule's counts under upstream's Prometheus name, labelled from its
// stats key.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := rlsprom.New(reg)
	if err != nil {
		panic(err)
	}
	m.Add("edge.remote_address_203.0.113.9.path_/login", rlsstats.Counts{TotalHits: 3, OverLimit: 1, WithinLimit: 2})
	out, _ := testutil.CollectAndFormat(reg, expfmt.TypeTextPlain, "ratelimit_service_rate_limit_over_limit")
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ratelimit_") {
			fmt.Println(line)
		}
	}
	// Output:
	// ratelimit_service_rate_limit_over_limit{domain="edge",key1="remote_address_203_0_113_9",key2="path_/login"} 1
}
