package clientip

import (
	"context"
	"errors"
	"testing"
)

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
// user called.
func TestJoinFuncsPanics(t *testing.T) {
	t.Parallel()
	byMethod := callFunc(func(c call) (string, error) { return c.method, nil })
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"Join none", func() { JoinFuncs[callFunc]("keyfunc.Join") }, "keyfunc: Join needs at least one key function"},
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
