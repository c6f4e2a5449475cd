package yamlpos_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/yamlpos"
)

func TestOne(t *testing.T) {
	if _, _, err := yamlpos.One(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("no document: %v, want io.EOF", err)
	}
	doc, second, err := yamlpos.One([]byte("a: 1\n---\nb: 2\n"))
	if err != nil || doc == nil || second != 2 {
		t.Fatalf("two documents: %v, second at %d, %v; want the first, the second at line 2 (its ---)", doc, second, err)
	}
	if _, second, err := yamlpos.One([]byte("a: 1\nb: [2\n")); err == nil || second != 0 {
		t.Fatalf("a broken document: second %d, %v; want the decoder's error", second, err)
	}
}

func decode(b []byte) error {
	_, _, err := yamlpos.One(b)
	return err
}

func TestLine(t *testing.T) {
	data := []byte("a: 1\nb:\n  - 2\n  - [3\nc: 4\n")
	_, _, err := yamlpos.One(data)
	if err == nil {
		t.Fatal("a broken document decoded")
	}
	line, msg := yamlpos.Line(data, err, decode)
	if line < 4 || msg == "" {
		t.Fatalf("line %d, %q; want the unclosed list's line (4) or after", line, msg)
	}
}

// The line of the problem, where the decoder names the line its mapping
// starts on.
func ExampleLine() {
	data := []byte("rules:\n  - name: a\n    limit: 5/s\n  - name: b\n   limit: 10/s\n")
	var v yaml.Node
	err := yaml.Unmarshal(data, &v)
	line, msg := yamlpos.Line(data, err, decode)
	fmt.Println(line, msg)
	// Output: 5 yaml: did not find expected '-' indicator
}

// TestError: the form compilers use, the line and the field left out
// when they are not known, and the cause open to errors.Is.
func TestError(t *testing.T) {
	why := errors.New("must be positive")
	for _, tc := range []struct {
		line  int
		field string
		want  string
	}{
		{3, "rules[0].limit", "a.yaml:3: rules[0].limit: must be positive"},
		{0, "rules[0].limit", "a.yaml: rules[0].limit: must be positive"},
		{7, "", "a.yaml:7: must be positive"},
		{0, "", "a.yaml: must be positive"},
	} {
		e := &yamlpos.Error{File: "a.yaml", Line: tc.line, Field: tc.field, Err: why}
		if got := e.Error(); got != tc.want || !errors.Is(e, why) {
			t.Errorf("line %d, field %q: %q, want %q and the cause", tc.line, tc.field, got, tc.want)
		}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: "x", Line: 4}
	if got := yamlpos.At("b.yaml", n, "k", "want %d", 2).Error(); got != "b.yaml:4: k: want 2" {
		t.Errorf("At: %q", got)
	}
	if got := yamlpos.At("b.yaml", nil, "k", "no node").Error(); got != "b.yaml: k: no node" {
		t.Errorf("At(nil): %q", got)
	}
}

// TestRead: the preamble rules and rlsconfig share, each refusal an
// *Error at its line.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		max        int
		want       string // the error, or the top node's kind and the second document's line
	}{
		{"one", "a: 1\n", 100, "mapping, second 0"},
		{"two", "a: 1\n---\nb: 2\n", 100, "mapping, second 2"},
		{"too long", "a: 1\n", 4, "f.yaml: the file is 5 bytes, more than 4"},
		{"empty", "", 100, "f.yaml: the file is empty; it needs a list"},
		{"comments only", "# nothing\n", 100, "f.yaml: the file is empty; it needs a list"},
		{"broken", "a: 1\nb:\n  - 2\n  - [3\nc: 4\n", 100, "f.yaml:4: yaml: did not find expected ',' or ']'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, second, err := yamlpos.Read("f.yaml", []byte(tc.data), tc.max, "a list")
			got := ""
			if err != nil {
				var e *yamlpos.Error
				if !errors.As(err, &e) {
					t.Fatalf("%v is no *Error", err)
				}
				got = err.Error()
			} else if top.Kind == yaml.MappingNode {
				got = fmt.Sprintf("mapping, second %d", second)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestKindName: what an error says a node was.
func TestKindName(t *testing.T) {
	for _, tc := range []struct {
		n    *yaml.Node
		want string
	}{
		{nil, "nothing"},
		{&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "~"}, "nothing"},
		{&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "3"}, `"3"`},
		{&yaml.Node{Kind: yaml.MappingNode}, "a mapping"},
		{&yaml.Node{Kind: yaml.SequenceNode}, "a list"},
		{&yaml.Node{Kind: yaml.DocumentNode}, "something else"},
	} {
		if got := yamlpos.KindName(tc.n); got != tc.want {
			t.Errorf("KindName(%+v) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := yamlpos.Join("", "rules"); got != "rules" {
		t.Errorf("Join at the top: %q", got)
	}
	if got := yamlpos.Join("rules[0]", "limit"); got != "rules[0].limit" {
		t.Errorf("Join: %q", got)
	}
}
