package floodgate_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// snippetImports are the packages the snippets of README.md and docs/*.md
// may name without importing them, by the name they are used under.
var snippetImports = map[string]string{
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"log":        "log",
	"slog":       "log/slog",
	"http":       "net/http",
	"os":         "os",
	"time":       "time",
	"core":       "github.com/floodgate/floodgate/core",
	"debugpage":  "github.com/floodgate/floodgate/debugpage",
	"echomw":     "github.com/floodgate/floodgate/echomw",
	"ginmw":      "github.com/floodgate/floodgate/ginmw",
	"grpcclient": "github.com/floodgate/floodgate/grpcclient",
	"grpcmw":     "github.com/floodgate/floodgate/grpcmw",
	"httpclient": "github.com/floodgate/floodgate/httpclient",
	"httpmw":     "github.com/floodgate/floodgate/httpmw",
	"keyfunc":    "github.com/floodgate/floodgate/keyfunc",
	"promobs":    "github.com/floodgate/floodgate/promobs",
	"redisstore": "github.com/floodgate/floodgate/redisstore",
	"rules":      "github.com/floodgate/floodgate/rules",
	"slogobs":    "github.com/floodgate/floodgate/slogobs",
	"otelobs":    "github.com/floodgate/floodgate/otelobs",
	"overload":   "github.com/floodgate/floodgate/overload",
	"gin":        "github.com/gin-gonic/gin",
	"echo":       "github.com/labstack/echo/v4",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"redis":      "github.com/redis/go-redis/v9",
	"grpc":       "google.golang.org/grpc",
}

// snippetPrelude declares the only names snippets use without defining
// them: what a reader's program already has before it adds rate limits.
// Every limiter, middleware and observer a snippet uses, it builds.
const snippetPrelude = `
var (
	addr            string                          // where the server listens
	mux             *http.ServeMux                  // the application's routes
	rdb             redis.UniversalClient           // the application's Redis client, in the Redis pages
	requireOperator func(http.Handler) http.Handler // the application's own authentication, for admin pages
)
`

// TestReadmeSnippets type-checks every Go block of README.md and
// docs/*.md against the module as it is, so that no page shows an API that
// is gone or a name it never builds. A block that starts with "package" is
// a whole file; any other block is a function body (its top-level
// declarations aside), checked with only the prelude's names in scope.
// Unused variables and imports are not errors here: a snippet shows a
// step, not a program.
func TestReadmeSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the export data of the packages the snippets name")
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	imp := exportImporter(t)
	total := 0
	for _, page := range pages {
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlocks(string(md))
		total += len(blocks)
		checkSnippets(t, imp, page, blocks)
	}
	if total < 10 {
		t.Fatalf("found only %d Go blocks in %q", total, pages)
	}
}

// checkSnippets type-checks the Go blocks of one page.
func checkSnippets(t *testing.T, imp types.Importer, page string, blocks []block) {
	for i, b := range blocks {
		src := snippetFile(b.code)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s:%d: block %d does not parse: %v\n%s", page, b.line, i+1, err, b.code)
			continue
		}
		var errs []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			msg := err.(types.Error).Msg
			if strings.HasPrefix(msg, "declared and not used") || strings.Contains(msg, "imported and not used") {
				return
			}
			errs = append(errs, err.Error())
		}}
		conf.Check("snippet", fset, []*ast.File{f}, nil)
		if len(errs) > 0 {
			t.Errorf("%s:%d: block %d does not compile against the module:\n\t%s\n%s", page, b.line, i+1, strings.Join(errs, "\n\t"), b.code)
		}
	}
}

type block struct {
	line int
	code string
}

// goBlocks returns the ```go blocks of md with the line each starts on.
func goBlocks(md string) []block {
	var out []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		out = append(out, block{line: start + 1, code: strings.Join(lines[start:i], "\n")})
	}
	return out
}

var selector = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Z]`)

// snippetFile makes a Go file of a snippet: a whole file as it is, or the
// snippet's top-level declarations and its statements in a function, with
// the imports it names and the prelude.
func snippetFile(code string) string {
	if strings.HasPrefix(strings.TrimSpace(code), "package ") {
		return code
	}
	var decls, body []string
	inDecl := false
	for _, l := range strings.Split(code, "\n") {
		switch {
		case strings.HasPrefix(l, "func ") || strings.HasPrefix(l, "type "):
			inDecl = true
			decls = append(decls, l)
		case inDecl:
			decls = append(decls, l)
			if l == "}" || (strings.HasPrefix(l, "type ") && !strings.HasSuffix(l, "{")) {
				inDecl = false
			}
		default:
			body = append(body, l)
		}
	}
	var used []string
	for _, m := range selector.FindAllStringSubmatch(code+snippetPrelude, -1) {
		if path, ok := snippetImports[m[1]]; ok && !slices.Contains(used, path) {
			used = append(used, path)
		}
	}
	slices.Sort(used)
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	for _, p := range used {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n")
	b.WriteString(snippetPrelude)
	b.WriteString(strings.Join(decls, "\n"))
	b.WriteString("\n\nfunc _() {\n")
	b.WriteString(strings.Join(body, "\n"))
	b.WriteString("\n}\n")
	return b.String()
}

// exportImporter is a types.Importer reading the export data the go
// command builds for every package a snippet may import.
func exportImporter(t *testing.T) types.Importer {
	t.Helper()
	args := []string{"list", "-e", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}"}
	for _, p := range snippetImports {
		args = append(args, p)
	}
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	files := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(l, "="); ok && file != "" {
			files[path] = file
		}
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}
