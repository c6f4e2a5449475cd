package rlsconfig_test

import (
	"fmt"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

func Example() {
	d, err := rlsconfig.Parse("messaging.yaml", []byte(`
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
      algorithm: gcra
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, desc := range [][]rlsconfig.Entry{
		{{Key: "message_type", Value: "marketing"}, {Key: "to_number", Value: "2061111111"}},
		{{Key: "to_number", Value: "2061111111"}},
		{{Key: "message_type", Value: "marketing"}},
	} {
		r := d.Match(desc)
		if r == nil {
			fmt.Println("no limit")
			continue
		}
		fmt.Printf("%d per %s, %v, key %s\n", r.RequestsPerUnit, r.Unit, r.Limits[0].Algorithm, r.Key(desc))
	}
	// Output:
	// 5 per day, fixed-window, key messaging|message_type=marketing|to_number=2061111111
	// 100 per day, gcra, key messaging|to_number=2061111111
	// no limit
}
