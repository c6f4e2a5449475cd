package pipeline_test

import (
	"context"
	"fmt"
	"net/url"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// An adapter builds one Pipeline for its request type and translates each
// Result into its wire form.
func Example() {
	lim := core.MustNew(core.PerMinute(2))
	p := pipeline.New(pipeline.Config[*url.URL]{
		Transport: "example",
		Key: func(u *url.URL) (string, error) {
			if k := u.Query().Get("key"); k != "" {
				return k, nil
			}
			return "", fmt.Errorf("no key parameter: %w", core.ErrBadKey)
		},
	})
	for _, raw := range []string{"/?key=a", "/?key=a", "/?key=a", "/"} {
		u, _ := url.Parse(raw)
		var res pipeline.Result
		p.Run(context.Background(), u, lim, 0, &res)
		fmt.Println(raw, res.Outcome, res.Admitted())
	}
	// Output:
	// /?key=a allowed true
	// /?key=a allowed true
	// /?key=a denied false
	// / bad_key false
}
