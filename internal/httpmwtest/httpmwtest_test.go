package httpmwtest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/floodgate/floodgate/internal/httpmwtest"
	"github.com/floodgate/floodgate/keyfunc"
)

// fatalTB records a Fatalf instead of stopping the test.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper()                        {}
func (f *fatalTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

func TestPeers(t *testing.T) {
	t.Parallel()
	reqs := httpmwtest.Peers(t, 70000, http.MethodPost, "/x", keyfunc.MustClientIP())
	if len(reqs) != 70000 || reqs[0].Method != http.MethodPost || reqs[0].URL.Path != "/x" || reqs[69999].RemoteAddr != "10.1.17.111:4242" {
		t.Errorf("got %d requests, first %s %s, last from %s", len(reqs), reqs[0].Method, reqs[0].URL.Path, reqs[69999].RemoteAddr)
	}
	tests := []struct {
		name string
		n    int
		key  keyfunc.Func
	}{
		{"one key for all", 2, keyfunc.Constant("all")},
		{"key error", 1, keyfunc.Header("X-Missing")},
		{"n < 1", 0, keyfunc.MustClientIP()},
	}
	for _, tt := range tests {
		tb := &fatalTB{TB: t}
		httpmwtest.Peers(tb, tt.n, http.MethodGet, "/", tt.key)
		if tb.failed == "" {
			t.Errorf("%s: Peers did not fail", tt.name)
		}
	}
}

func TestWriter(t *testing.T) {
	t.Parallel()
	w := httpmwtest.NewWriter()
	w.Header().Set("A", "1")
	w.WriteHeader(http.StatusTeapot)
	if n, err := w.Write([]byte("abc")); n != 3 || err != nil || w.Code != http.StatusTeapot {
		t.Errorf("Write: %d, %v; Code %d", n, err, w.Code)
	}
	w.Reset()
	if w.Code != 0 || len(w.Header()) != 0 {
		t.Errorf("after Reset: %d %v", w.Code, w.Header())
	}
}

func TestSameResponse(t *testing.T) {
	t.Parallel()
	resp := func(code int, header, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		w.Header().Set("X", header)
		w.WriteHeader(code)
		_, _ = w.WriteString(body)
		return w
	}
	httpmwtest.SameResponse(t, resp(200, "a", "b"), resp(200, "a", "b"))
	for _, other := range []*httptest.ResponseRecorder{resp(201, "a", "b"), resp(200, "A", "b"), resp(200, "a", "b\n")} {
		tb := &fatalTB{TB: t}
		httpmwtest.SameResponse(tb, other, resp(200, "a", "b"))
		if tb.failed == "" {
			t.Errorf("no failure for %d %v %q", other.Code, other.Header(), other.Body.String())
		}
	}
}
