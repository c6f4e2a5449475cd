package keyfunc

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/core"
)

func TestKeyFuncs(t *testing.T) {
	t.Parallel()
	withHeader := func(lines ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/items/42", nil)
		if lines != nil {
			r.Header["X-Api-Key"] = lines
		}
		return r
	}
	withPattern := func(pattern, path string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Pattern = pattern
		return r
	}
	long := strings.Repeat("k", maxKeyLen+1)
	cases := []struct {
		name    string
		fn      Func
		r       *http.Request
		want    string
		wantErr error
	}{
		{"header", Header("x-api-key"), withHeader("secret-1"), "secret-1", nil},
		{"header first value", Header("X-API-Key"), withHeader("a", "b"), "a", nil},
		{"header missing", Header("X-API-Key"), withHeader(), "", ErrNoKey},
		{"header empty", Header("X-API-Key"), withHeader(""), "", ErrNoKey},
		{"header at limit", Header("X-API-Key"), withHeader(long[1:]), long[1:], nil},
		{"header too long", Header("X-API-Key"), withHeader(long), "", core.ErrKeyTooLarge},
		{"route pattern", Route(), withPattern("GET /items/{id}", "/items/42"), "GET /items/{id}", nil},
		{"route falls back to path", Route(), withPattern("", "/items/42"), "/items/42", nil},
		{"route pattern too long", Route(), withPattern(long, "/"), "", core.ErrKeyTooLarge},
		{"unmatched route: the path", Route(), httptest.NewRequest(http.MethodGet, "/a%20b?x=1", nil), "/a b", nil},
		{"unmatched route, empty path", Route(), &http.Request{URL: &url.URL{}}, "", ErrNoKey},
		{"unmatched route, no url", Route(), &http.Request{}, "", ErrNoKey},
		{"unmatched route, path too long", Route(), &http.Request{URL: &url.URL{Path: "/" + long}}, "", core.ErrKeyTooLarge},
		{"method", Method(), httptest.NewRequest(http.MethodPost, "/", nil), "POST", nil},
		{"method empty is GET", Method(), &http.Request{}, "GET", nil},
		{"constant", Constant("global"), &http.Request{}, "global", nil},
		{"join", Join(Method(), Route()), httptest.NewRequest(http.MethodPut, "/x", nil), "3:PUT2:/x", nil},
		{"join one", Join(Route()), httptest.NewRequest(http.MethodPut, "/x", nil), "2:/x", nil},
		{"join error", Join(Method(), Header("X-API-Key")), withHeader(), "", ErrNoKey},
		{"join many", Join(Constant("a"), Constant("b"), Constant("c"), Constant("d"), Constant("e")), &http.Request{}, "1:a1:b1:c1:d1:e", nil},
		{"join nested", Join(Join(Constant("a"), Constant("b")), Constant("c")), &http.Request{}, "6:1:a1:b1:c", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.fn(tc.r)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || got != "" {
					t.Fatalf("got %q, %v; want error matching %v", got, err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "keyfunc: ") {
					t.Errorf("error %q does not start with \"keyfunc: \"", err)
				}
				if len(err.Error()) > 200 {
					t.Errorf("error is %d bytes long", len(err.Error()))
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestRouteFromServeMux checks Route against a real ServeMux, which is
// what sets http.Request.Pattern.
func TestRouteFromServeMux(t *testing.T) {
	t.Parallel()
	var got string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		var err error
		got, err = Route()(r)
		if err != nil {
			t.Error(err)
		}
	})
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items/7", nil))
	if got != "GET /items/{id}" {
		t.Errorf("Route() = %q, want the matched pattern", got)
	}
}

// TestJoinUnambiguous checks that no two different part lists give one
// key, including lists built to collide under naive separators.
func TestJoinUnambiguous(t *testing.T) {
	t.Parallel()
	lists := [][]string{
		{"a:b", "c"},
		{"a", "b:c"},
		{"a", "b", "c"},
		{"abc"},
		{"1:a", "b"},
		{"1:a1:b"},
		{"a|b", "c"},
		{"a", "b|c"},
		{"a\x00b", "c"},
		{"a", "b\x00c"},
		{"3:abc"},
		{"3", "abc"},
		{"12:aaaaaaaaaaaa"},
		{"1", "2:aaaaaaaaaaaa"},
	}
	seen := map[string][]string{}
	for _, parts := range lists {
		fns := make([]Func, len(parts))
		for i, p := range parts {
			fns[i] = Constant(p)
		}
		k, err := Join(fns...)(&http.Request{})
		if err != nil {
			t.Fatalf("%q: %v", parts, err)
		}
		if prev, ok := seen[k]; ok {
			t.Errorf("%q and %q both join to %q", prev, parts, k)
		}
		seen[k] = parts
	}
}

func TestJoinCopiesArgs(t *testing.T) {
	t.Parallel()
	fns := []Func{Constant("a"), Constant("b")}
	j := Join(fns...)
	fns[0] = Constant("zzz")
	if k, _ := j(&http.Request{}); k != "1:a1:b" {
		t.Errorf("Join saw a later change to its argument slice: %q", k)
	}
}

func TestJoinRejectsEmptyPart(t *testing.T) {
	t.Parallel()
	empty := Func(func(*http.Request) (string, error) { return "", nil })
	if k, err := Join(Constant("a"), empty)(&http.Request{}); !errors.Is(err, ErrNoKey) {
		t.Errorf("got %q, %v; want ErrNoKey from a part that broke the Func contract", k, err)
	}
}

func TestConstructorPanics(t *testing.T) {
	t.Parallel()
	cases := map[string]func(){
		"Header empty":   func() { Header("") },
		"Header invalid": func() { Header("X API") },
		"Constant empty": func() { Constant("") },
		"Join none":      func() { Join() },
		"Join nil":       func() { Join(Method(), nil) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "keyfunc: ") {
					t.Errorf("panic value %#v should be a string starting with \"keyfunc: \"", r)
				}
			}()
			f()
		})
	}
}

func TestJoinAllocations(t *testing.T) {
	j := Join(Constant("203.0.113.7"), Constant("GET /items/{id}"))
	r := &http.Request{}
	if n := testing.AllocsPerRun(100, func() { _, _ = j(r) }); n > 1 {
		t.Errorf("Join allocates %v times a call, want at most 1 (the key)", n)
	}
}
