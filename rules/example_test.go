package rules_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"

	"github.com/floodgate/floodgate/rules"
)

// Rules from memory, a request through each, then a change that keeps
// one rule's counts and raises the other's limit.
func Example() {
	const file = `rules:
  - name: login
    match: {paths: [/login], methods: [POST]}
    limit: "2/min"
  - name: api
    match: {paths: ["/api/*"]}
    limits: ["1/s", "100/h"]
`
	set, err := rules.New("rules.yaml", []byte(file), rules.WithOnReload(func(error) {}),
		rules.WithCoreOptions(core.WithClock(coretest.NewClock(time.Unix(1_700_000_000, 0))))) // a clock that stands still
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range set.Table().Rules() {
		fmt.Println(c.Rule.Name, c.Rule.Paths, c.Rule.Limits, c.Rule.Key)
	}
	h := set.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	send := func(method, path string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		rl := w.Header().Get("RateLimit")
		if rl == "" {
			rl = "(no rate-limit fields)"
		}
		fmt.Println(method, path, w.Code, rl)
	}
	send("POST", "/login")
	send("GET", "/api/items")
	send("GET", "/api/items")
	send("GET", "/about")

	// login unchanged (its count stays), api raised (a fresh limiter).
	err = set.Apply([]byte(`rules:
  - name: login
    match: {paths: [/login], methods: [POST]}
    limit: "2/min"
  - name: api
    match: {paths: ["/api/*"]}
    limits: ["5/s", "100/h"]
`))
	fmt.Println("reloaded:", err)
	send("POST", "/login")
	send("GET", "/api/items")

	// A bad file changes nothing.
	fmt.Println(set.Apply([]byte("rules:\n  - name: login\n    match: {paths: [/login]}\n    limit: 2/min\n    algorithm: fast\n")))
	send("POST", "/login")
	// Output:
	// login [/login] [2/min name=login] [ip]
	// api [/api/*] [1/s name=api-1s 100/h name=api-1h] [ip]
	// POST /login 200 "login";r=1;t=30
	// GET /api/items 200 "api-1s";r=0;t=1
	// GET /api/items 429 "api-1s";r=0;t=1
	// GET /about 200 (no rate-limit fields)
	// reloaded: <nil>
	// POST /login 200 "login";r=0;t=60
	// GET /api/items 200 "api-1s";r=4;t=1
	// rules.yaml:5: rules[0].algorithm: unknown algorithm "fast"; use token-bucket, gcra, fixed-window, sliding-window, sliding-log, leaky-bucket, warm-up or concurrency
	// POST /login 429 "login";r=0;t=30
}
