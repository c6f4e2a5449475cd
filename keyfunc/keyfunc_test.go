package keyfunc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
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
	long := strings.Repeat("k", MaxKeyLen+1)
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
		{"header too long", Header("X-API-Key"), withHeader(long), "", ErrTooLarge},
		{"route pattern", Route(), withPattern("GET /items/{id}", "/items/42"), "GET /items/{id}", nil},
		{"route falls back to path", Route(), withPattern("", "/items/42"), "/items/42", nil},
		{"route pattern too long", Route(), withPattern(long, "/"), "", ErrTooLarge},
		{"path", Path(), withPattern("GET /items/{id}", "/items/42?x=1"), "/items/42", nil},
		{"path decoded", Path(), httptest.NewRequest(http.MethodGet, "/a%20b", nil), "/a b", nil},
		{"path empty", Path(), &http.Request{URL: &url.URL{}}, "", ErrNoKey},
		{"path no url", Path(), &http.Request{}, "", ErrNoKey},
		{"path too long", Path(), &http.Request{URL: &url.URL{Path: "/" + long}}, "", ErrTooLarge},
		{"method", Method(), httptest.NewRequest(http.MethodPost, "/", nil), "POST", nil},
		{"method empty is GET", Method(), &http.Request{}, "GET", nil},
		{"constant", Constant("global"), &http.Request{}, "global", nil},
		{"join", Join(Method(), Path()), httptest.NewRequest(http.MethodPut, "/x", nil), "3:PUT2:/x", nil},
		{"join one", Join(Path()), httptest.NewRequest(http.MethodPut, "/x", nil), "2:/x", nil},
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

// call is a request of a transport whose key functions take two arguments
// (like gRPC's context and method), gathered for JoinFuncs.
type call struct {
	ctx    context.Context
	method string
}

type callFunc func(call) (string, error)

func TestJoinFuncs(t *testing.T) {
	t.Parallel()
	byMethod := callFunc(func(c call) (string, error) { return c.method, nil })
	constant := func(k string) callFunc { return func(call) (string, error) { return k, nil } }
	errBoom := errors.New("boom")
	failing := callFunc(func(call) (string, error) { return "", errBoom })
	empty := callFunc(func(call) (string, error) { return "", nil })
	req := call{context.Background(), "/pkg.S/M"}
	tests := []struct {
		name    string
		fn      callFunc
		want    string
		wantErr error
		wantMsg string // the whole error text, when it matters
	}{
		{"one", JoinFuncs("grpcmw.JoinKeys", byMethod), "8:/pkg.S/M", nil, ""},
		{"encoding as JoinParts", JoinFuncs("grpcmw.JoinKeys", constant("a:b"), byMethod), JoinParts("a:b", "/pkg.S/M"), nil, ""},
		{"many", JoinFuncs("", constant("a"), constant("b"), constant("c"), constant("d"), constant("e:f")), "1:a1:b1:c1:d3:e:f", nil, ""},
		{"first error as is", JoinFuncs("grpcmw.JoinKeys", byMethod, failing, empty), "", errBoom, "boom"},
		{"empty part", JoinFuncs("grpcmw.JoinKeys", byMethod, empty), "", ErrNoKey,
			"keyfunc: no key in request: JoinKeys: key function 1 returned an empty key"},
		{"empty part, default caller", JoinFuncs("", empty), "", ErrNoKey,
			"keyfunc: no key in request: JoinFuncs: key function 0 returned an empty key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.fn(req)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || got != "" {
					t.Fatalf("got %q, %v; want error matching %v", got, err, tc.wantErr)
				}
				if err.Error() != tc.wantMsg {
					t.Errorf("error %q, want %q", err, tc.wantMsg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	// An unnamed function type and a non-struct request work too.
	plain := JoinFuncs("", func(s string) (string, error) { return s, nil }, func(string) (string, error) { return "x", nil })
	if k, err := plain("ab"); err != nil || k != "2:ab1:x" {
		t.Errorf("plain = %q, %v; want \"2:ab1:x\"", k, err)
	}

	// The arguments are copied, as Join's are.
	fns := []callFunc{constant("a"), constant("b")}
	j := JoinFuncs("grpcmw.JoinKeys", fns...)
	fns[0] = constant("zzz")
	if k, _ := j(req); k != "1:a1:b" {
		t.Errorf("JoinFuncs saw a later change to its argument slice: %q", k)
	}
}

// TestJoinFuncsPanics checks the panic texts, which name the function the
// user called; Join's are the same as before JoinFuncs existed.
func TestJoinFuncsPanics(t *testing.T) {
	t.Parallel()
	byMethod := callFunc(func(c call) (string, error) { return c.method, nil })
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"Join none", func() { Join() }, "keyfunc: Join needs at least one key function"},
		{"Join nil", func() { Join(Method(), nil) }, "keyfunc: Join: key function 1 is nil"},
		{"caller none", func() { JoinFuncs[callFunc]("grpcmw.JoinKeys") }, "grpcmw: JoinKeys needs at least one key function"},
		{"caller nil", func() { JoinFuncs("grpcmw.JoinKeys", byMethod, nil, byMethod) }, "grpcmw: JoinKeys: key function 1 is nil"},
		{"default caller", func() { JoinFuncs[callFunc]("") }, "keyfunc: JoinFuncs needs at least one key function"},
		{"unqualified caller", func() { JoinFuncs("joinAll", byMethod, nil) }, "keyfunc: joinAll: key function 1 is nil"},
		{"nested package path", func() { JoinFuncs[callFunc]("example.com/x.Join") }, "example.com/x: Join needs at least one key function"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("panic %#v, want %q", r, tc.want)
				}
			}()
			tc.f()
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
