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

func TestMessage(t *testing.T) {
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
		if got := yamlpos.Message("a.yaml", tc.line, tc.field, why); got != tc.want {
			t.Errorf("Message(line %d, field %q) = %q, want %q", tc.line, tc.field, got, tc.want)
		}
	}
}
