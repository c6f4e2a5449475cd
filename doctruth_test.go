package floodgate_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/grpc"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/keyfunc"
)

// TestTransportsDocumented: core.Event.Transport's documentation and
// promobs's, whose transport label it becomes, name every transport an
// adapter or the Envoy service reports, quoted as it is reported.
func TestTransportsDocumented(t *testing.T) {
	var seen []string
	obs := core.ObserverFunc(func(_ context.Context, e core.Event) {
		if !slices.Contains(seen, e.Transport) {
			seen = append(seen, e.Transport)
		}
	})
	lim := core.MustNew(core.PerSecond(10))
	h := httpmw.MustNew(lim, keyfunc.MustClientIP(), httpmw.WithObserver(obs)).Handler(http.NotFoundHandler())
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	unary := grpcmw.MustNew(lim, grpcmw.KeyByMethod(), grpcmw.WithObserver(obs)).UnaryServerInterceptor()
	_, err := unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/shop.Orders/Create"},
		func(context.Context, any) (any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, rls.Transport) // the service reports through its own observer
	if len(seen) != 3 {
		t.Fatalf("transports seen: %q, want http's, grpc's and the service's", seen)
	}
	docs := map[string]string{
		"core.Event.Transport": fieldDoc(t, "core/observer.go", "Event", "Transport"),
		"promobs":              packageDoc(t, "promobs/doc.go"),
	}
	for where, text := range docs {
		for _, tr := range seen {
			if !strings.Contains(text, `"`+tr+`"`) {
				t.Errorf("%s's documentation does not name the transport %q", where, tr)
			}
		}
	}
}

// TestDocsImportNoInternalName: no package comment or exported
// declaration's doc comment of a library package (non-internal, not a
// command) sends a reader to an identifier of one of the module's internal
// packages (say coretest.Clock), which no program outside the module can
// import. Naming the directory (internal/coretest) as where something
// lives is fine.
func TestDocsImportNoInternalName(t *testing.T) {
	pkgs := listPackages(t, "./...")
	var internal []string
	for _, p := range pkgs {
		if isInternal(p.ImportPath) {
			internal = append(internal, regexp.QuoteMeta(p.Name))
		}
	}
	if len(internal) < 5 {
		t.Fatalf("found only %d internal packages", len(internal))
	}
	use := regexp.MustCompile(`(^|[^\w/.])(` + strings.Join(internal, "|") + `)\.[A-Z]\w*`)
	for _, p := range pkgs {
		if isInternal(p.ImportPath) || p.Name == "main" {
			continue
		}
		fset := token.NewFileSet()
		files, err := parseFiles(fset, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			for _, g := range exportedDocComments(f) {
				for _, c := range g.List {
					if m := use.FindString(c.Text); m != "" {
						p := fset.Position(c.Pos())
						t.Errorf("%s:%d: %q names an internal package's identifier, which a user cannot import", p.Filename, p.Line, strings.TrimLeft(m, " \t(\"'`"))
					}
				}
			}
		}
	}
}

// TestReadmeNetHTTPDeps: the modules the README says a net/http user
// compiles are those `go list -deps ./httpmw` lists beside the standard
// library and floodgate itself.
func TestReadmeNetHTTPDeps(t *testing.T) {
	claim := readmeParagraph(t, "net/http user compiles")
	said := backquotedPaths(claim)
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{with .Module}}{{.Path}}{{end}}{{end}}", "./httpmw").Output()
	if err != nil {
		t.Fatalf("go list -deps ./httpmw: %v", err)
	}
	var deps []string
	for _, m := range strings.Fields(string(out)) {
		if m != "github.com/floodgate/floodgate" && !slices.Contains(deps, m) {
			deps = append(deps, m)
		}
	}
	slices.Sort(deps)
	if !slices.Equal(said, deps) {
		t.Errorf("README says a net/http user compiles %q beside the standard library; go list -deps ./httpmw says %q\n%s", said, deps, claim)
	}
}

// TestReadmeRedisTestPackages: the packages the README says start their
// own redis-server in their tests are those whose tests depend on
// internal/redistest or internal/redisproc (the module's two ways of
// starting one), and those two.
func TestReadmeRedisTestPackages(t *testing.T) {
	claim := readmeParagraph(t, "start their own `redis-server`")
	list := regexp.MustCompile("\\(([^()]*)\\)\\s+start their own `redis-server`").FindStringSubmatch(claim)
	if list == nil {
		t.Fatalf("README.md does not list the packages, in parentheses, before \"start their own `redis-server`\":\n%s", claim)
	}
	var said []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(list[1], -1) {
		said = append(said, m[1])
	}
	slices.Sort(said)
	const mod = "github.com/floodgate/floodgate/"
	out, err := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list -test: %v", err)
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		pkg, isTest := strings.CutSuffix(f[0], ".test")
		if !isTest && f[0] != mod+"internal/redistest" && f[0] != mod+"internal/redisproc" {
			continue
		}
		if isTest && !slices.Contains(f[1:], mod+"internal/redistest") && !slices.Contains(f[1:], mod+"internal/redisproc") {
			continue
		}
		if dir := strings.TrimPrefix(pkg, mod); !slices.Contains(want, dir) {
			want = append(want, dir)
		}
	}
	slices.Sort(want)
	if len(want) < 3 {
		t.Fatalf("go list found only %q", want)
	}
	if !slices.Equal(said, want) {
		t.Errorf("README names %q as the packages whose tests start redis-server; go list says %q\n%s", said, want, claim)
	}
}

// exportedDocComments returns the package comment of f and the doc
// comments of its exported declarations: what go doc shows a user.
func exportedDocComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(g *ast.CommentGroup) {
		if g != nil {
			out = append(out, g)
		}
	}
	add(f.Doc)
	fields := func(t ast.Expr) {
		var list *ast.FieldList
		switch t := t.(type) {
		case *ast.StructType:
			list = t.Fields
		case *ast.InterfaceType:
			list = t.Methods
		}
		if list == nil {
			return
		}
		for _, fl := range list.List {
			if len(fl.Names) > 0 && fl.Names[0].IsExported() {
				add(fl.Doc)
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv.List[0].Type)) {
				add(d.Doc)
			}
		case *ast.GenDecl:
			exported := false
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						exported = true
						add(s.Doc)
						fields(s.Type)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							exported = true
							add(s.Doc)
							break
						}
					}
				}
			}
			if exported {
				add(d.Doc)
			}
		}
	}
	return out
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(t ast.Expr) bool {
	for {
		switch e := t.(type) {
		case *ast.StarExpr:
			t = e.X
		case *ast.IndexExpr:
			t = e.X
		case *ast.IndexListExpr:
			t = e.X
		case *ast.Ident:
			return e.IsExported()
		default:
			return false
		}
	}
}

// TestEnvoyFlagsDocumented: docs/envoy.md's Flags table has one row per
// flag of floodgate-ratelimit, and each row's second cell names the
// variables of floodgate's own that set the flag (read in main.go's parse
// as the flag's default), or says none.
func TestEnvoyFlagsDocumented(t *testing.T) {
	const src = "cmd/floodgate-ratelimit/main.go"
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string][]string{} // flag: the variables read for its default
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || len(call.Args) < 3 {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fs" {
			return true
		}
		args := call.Args
		if strings.HasSuffix(sel.Sel.Name, "Var") {
			args = args[1:]
		}
		name, ok := args[0].(*ast.BasicLit)
		if !ok || name.Kind != token.STRING {
			return true
		}
		vars := []string{}
		ast.Inspect(args[1], func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "get" {
					vars = append(vars, strings.Trim(c.Args[0].(*ast.BasicLit).Value, `"`))
				}
			}
			return true
		})
		flags["-"+strings.Trim(name.Value, `"`)] = vars
		return true
	})
	if len(flags) < 8 {
		t.Fatalf("%s: found only %d flags: %v", src, len(flags), flags)
	}
	md, err := os.ReadFile("docs/envoy.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(md), "\n") {
		cells := strings.Split(l, "|")
		if len(cells) > 3 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`-") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.TrimSpace(cells[2])
		}
	}
	names := slices.Sorted(maps.Keys(flags))
	for _, flag := range names {
		vars := flags[flag]
		cell, ok := rows[flag]
		switch {
		case !ok:
			t.Errorf("docs/envoy.md's Flags table has no row for %s", flag)
		case len(vars) == 0 && cell != "none":
			t.Errorf("docs/envoy.md: %s has no variable of floodgate's own, but its row says %q", flag, cell)
		case len(vars) > 0:
			var said []string
			for _, m := range regexp.MustCompile("`([A-Z_]+)`").FindAllStringSubmatch(cell, -1) {
				said = append(said, m[1])
			}
			if !slices.Equal(said, vars) {
				t.Errorf("docs/envoy.md: %s is set by %q, but its row says %q", flag, vars, cell)
			}
		}
	}
	for _, flag := range slices.Sorted(maps.Keys(rows)) {
		if _, ok := flags[flag]; !ok {
			t.Errorf("docs/envoy.md's Flags table has a row for %s, which %s does not define", flag, src)
		}
	}
}

// readmeParagraph returns the paragraph of README.md that holds phrase.
func readmeParagraph(t *testing.T, phrase string) string {
	t.Helper()
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range strings.Split(string(md), "\n\n") {
		if strings.Contains(p, phrase) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md has %d paragraphs saying %q, want 1", len(found), phrase)
	}
	return found[0]
}

// backquotedPaths returns the module paths a text quotes, sorted.
func backquotedPaths(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([a-z0-9.-]+\\.[a-z]+/[^` ]+)`").FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// packageDoc returns the package comment of a file.
func packageDoc(t *testing.T, file string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	return f.Doc.Text()
}

// fieldDoc returns the doc comment of a struct field declared in file.
func fieldDoc(t *testing.T, file, typ, field string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range fl.Names {
				if name.Name == field {
					doc = fl.Doc.Text()
				}
			}
		}
		return false
	})
	if doc == "" {
		t.Fatalf("%s: no documented field %s.%s", file, typ, field)
	}
	return doc
}

// TestMarkdownLinks: every relative link of README.md and docs/*.md names
// a file of the repository, and a #fragment names a heading of its page
// (as GitHub makes heading anchors), so that moving text between pages
// breaks no link.
func TestMarkdownLinks(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, page := range pages {
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(md), "\n") {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %s: no file %s", page, i+1, target, path)
					continue
				}
				if frag != "" && !slices.Contains(headingAnchors(t, path), frag) {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", page, i+1, target, path, frag)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d relative links", n)
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, spaces to hyphens, punctuation dropped.
func headingAnchors(t *testing.T, path string) []string {
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inCode := false
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
