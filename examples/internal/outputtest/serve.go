package outputtest

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
)

// CheckFreshLogin runs an example's run with keepServing and checks that the
// server the reader is told to curl has spent nothing on the demo: its
// first login is admitted with the whole quota (3 per 20 s) left but one.
// Then it ends run's context and checks that the program stops. The Gin and
// Echo examples share it.
func CheckFreshLogin(t *testing.T, run func(ctx context.Context, out io.Writer, addr string, keepServing bool) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := New()
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, out, "127.0.0.1:0", true) }()
	url := out.WaitFor(t, regexp.MustCompile(`try: curl -i -X POST (http://127\.0\.0\.1:\d+/login)`))
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("RateLimit") != `"login";r=2;t=20` {
		t.Errorf("the suggested curl got %s, RateLimit %q; want 200 OK and \"login\";r=2;t=20", resp.Status, resp.Header.Get("RateLimit"))
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, regexp.MustCompile(`(?m)^(stopped)$`))
}
