package rls_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/rls"
)

func TestJSON(t *testing.T) {
	a := perMinute("a", "one", 1)
	g := newRig(t, table{"d|one_per_minute=x": {a, "k"}}, rls.Config{})
	post := func(method, body string) (int, string) {
		rec := httptest.NewRecorder()
		rls.JSON(g.svc).ServeHTTP(rec, httptest.NewRequest(method, "/json", strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	req := `{"domain": "d", "descriptors": [{"entries": [{"key": "one_per_minute", "value": "x"}]}]}`
	if code, body := post(http.MethodPost, req); code != http.StatusOK || !strings.Contains(body, `"overallCode":"OK"`) || !strings.Contains(body, `"requestsPerUnit":1`) {
		t.Fatalf("first: %d %s", code, body)
	}
	if code, body := post(http.MethodPost, req); code != http.StatusTooManyRequests || !strings.Contains(body, `"overallCode":"OVER_LIMIT"`) {
		t.Fatalf("second: %d %s", code, body)
	}
	for _, c := range []struct {
		method, body string
		code         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "{", http.StatusBadRequest},
		{http.MethodPost, `{"domain": "d", "descriptors": [], "nope": 1}`, http.StatusBadRequest},
		{http.MethodPost, `{"descriptors": [{"entries": [{"key": "a", "value": "b"}]}]}`, http.StatusBadRequest},
	} {
		if code, body := post(c.method, c.body); code != c.code {
			t.Fatalf("%s %q: %d %s, want %d", c.method, c.body, code, body, c.code)
		}
	}
}
