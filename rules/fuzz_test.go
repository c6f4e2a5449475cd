package rules

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse: parse never panics, and every error it returns is an *Error
// naming the file; what it accepts compiles unless a limit is beyond what
// core admits, and that error names the file too.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/rules.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := parse("f.yaml", data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error %T %q does not name the file", err, err)
			}
			return
		}
		for _, r := range rs {
			if r.Name == "" || len(r.Limits) == 0 || (r.Paths == nil && r.GRPC == nil) || len(r.Key) == 0 {
				t.Fatalf("accepted an incomplete rule %+v", r)
			}
		}
		if _, err := New("f.yaml", data, quietly); err != nil && !strings.HasPrefix(err.Error(), "f.yaml:") {
			t.Fatalf("compile error %q does not name the file and line", err)
		}
	})
}
