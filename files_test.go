package floodgate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the most lines a non-test Go file may have: past it a file
// holds more than one topic, and splitting it by topic makes it readable.
const maxLines = 300

// TestFileLength: no non-test Go file of the module, the benchmarks
// module included, is longer than maxLines.
func TestFileLength(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines; split it by topic to %d or fewer", path, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
