package httpmw

import (
	"fmt"
	"net/http"

	"github.com/floodgate/floodgate/core"
)

// RefuseUnknownLength, as the unknown argument of [CostByContentLength],
// refuses requests whose body length is not declared.
const RefuseUnknownLength = -1

// CostByContentLength prices a request by its body, for byte quotas: cost
// is the declared Content-Length in units of unit bytes, rounded up, and at
// least 1, so that a request without a body still counts as one unit (a
// limit of 1000 per minute with a unit of 1024 bytes is a quota of about 1 MiB a
// minute, in requests of at least 1 KiB). Pass it to [WithCost]:
//
//	httpmw.WithCost(httpmw.CostByContentLength(1024, 64)) // units of 1 KiB
//
// A body whose length is unknown (chunked, or streamed by HTTP/2 without a
// content-length: r.ContentLength < 0) costs unknown units, which should be
// as much as such a body may be (the server's body size limit, in units);
// or with [RefuseUnknownLength] it is refused with 411 Length Required's
// meaning as an invalid cost (400: [core.ErrInvalidCost]), so that a client
// cannot escape its quota by not declaring its length. A declared length
// is what the client promises; the server must still cap what it reads
// (http.MaxBytesReader) so that a client cannot send more than it paid for.
//
// It panics when unit is less than 1 or unknown is neither at least 1 nor
// RefuseUnknownLength: it is meant for set-up code.
func CostByContentLength(unit int64, unknown int) func(*http.Request) (int, error) {
	if unit < 1 {
		panic(fmt.Sprintf("httpmw: CostByContentLength(%d, %d): unit must be at least 1 byte, such as 1024", unit, unknown))
	}
	if unknown < 1 && unknown != RefuseUnknownLength {
		panic(fmt.Sprintf("httpmw: CostByContentLength(%d, %d): unknown must be the cost of a body of unknown length (at least 1) or httpmw.RefuseUnknownLength", unit, unknown))
	}
	return func(r *http.Request) (int, error) {
		n := r.ContentLength
		switch {
		case n < 0 && unknown == RefuseUnknownLength:
			return 0, errUnknownLength
		case n < 0:
			return unknown, nil
		}
		units := n / unit
		if n%unit != 0 {
			units++
		}
		// A length too large for an int cannot be admitted anyway: the
		// limiter refuses a cost above its burst as ErrCostTooLarge (413).
		return int(min(max(units, 1), int64(maxInt))), nil
	}
}

const maxInt = int(^uint(0) >> 1)

var errUnknownLength = fmt.Errorf("httpmw: the request body's length is unknown and must be declared in Content-Length: %w", core.ErrInvalidCost)
