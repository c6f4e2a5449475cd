package option_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/option"
)

type opts struct{ n int }

type Option func(*opts)

func TestApply(t *testing.T) {
	t.Parallel()
	var o opts
	errs := option.Errors{Prefix: "pkg: "}
	set := func(n int) Option {
		return func(o *opts) {
			if errs.Require(n > 0, "WithN(%d): want > 0", n) {
				o.n = n
			}
		}
	}
	if err := option.Apply(&o, &errs, []Option{set(3)}); err != nil || o.n != 3 {
		t.Fatalf("valid: %v, n=%d", err, o.n)
	}
	err := option.Apply(&o, &errs, []Option{set(-1), set(-2)})
	if err == nil || !strings.Contains(err.Error(), "pkg: WithN(-1): want > 0") || !strings.Contains(err.Error(), "pkg: WithN(-2)") || o.n != 3 {
		t.Fatalf("invalid: %v, n=%d", err, o.n)
	}
	if err := option.Apply(&o, &option.Errors{Prefix: "pkg: "}, []Option{set(1), nil}); err == nil || err.Error() != "pkg: nil Option (argument 2); leave it out instead" {
		t.Fatalf("nil option: %v", err)
	}
}

func Example() {
	errs := option.Errors{Prefix: "mypkg: "}
	var cost func() int
	if errs.Require(cost != nil, "WithCost(nil); leave the option out for a cost of 1") {
		fmt.Println("set")
	}
	fmt.Println(errs.Err())
	// Output: mypkg: WithCost(nil); leave the option out for a cost of 1
}
