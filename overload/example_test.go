package overload_test

import (
	"context"
	"fmt"

	"github.com/floodgate/floodgate/overload"
)

// A request's priority travels in its context; a request with none set
// is Normal.
func ExampleNewContext() {
	ctx := overload.NewContext(context.Background(), overload.Critical)
	fmt.Println(overload.PriorityOf(ctx) == overload.Critical)
	fmt.Println(overload.PriorityOf(context.Background()) == overload.Normal)
	// Output:
	// true
	// true
}
