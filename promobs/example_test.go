package promobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/promobs"
)

// An Observer counts what the middleware reports; the registry serves it.
func Example() {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	if err != nil {
		panic(err)
	}
	lim, err := core.New(core.PerMinute(2).WithName("api"))
	if err != nil {
		panic(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", httpmw.MustNew(lim, keyfunc.Header("X-API-Key"), httpmw.WithObserver(obs)).Handler(app))

	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", "k1")
		mux.ServeHTTP(httptest.NewRecorder(), r)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if strings.HasPrefix(line, "floodgate_requests_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// floodgate_requests_total{limit="api",outcome="allowed",shadow="false",transport="http"} 2
	// floodgate_requests_total{limit="api",outcome="denied",shadow="false",transport="http"} 1
}

// Counting events fed by hand: two admissions and a refusal of the limit
// "login", seen through a registry's text format.
func ExampleObserver_Observe() {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	if err != nil {
		panic(err)
	}
	login := core.PerMinute(5).WithName("login")
	for _, allowed := range []bool{true, true, false} {
		out := core.OutcomeAllowed
		if !allowed {
			out = core.OutcomeDenied
		}
		obs.Observe(context.Background(), core.Event{
			Transport: "http",
			Outcome:   out,
			Key:       "203.0.113.9", // never exported
			Decision:  core.Decision{Allowed: allowed, Limit: login},
		})
	}
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			fmt.Print(mf.GetName())
			for _, l := range m.GetLabel() {
				fmt.Printf(" %s=%q", l.GetName(), l.GetValue())
			}
			fmt.Println(":", m.GetCounter().GetValue())
		}
	}
	// Output:
	// floodgate_requests_total limit="login" outcome="allowed" shadow="false" transport="http": 2
	// floodgate_requests_total limit="login" outcome="denied" shadow="false" transport="http": 1
}
