package floodgate_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite the api/*.txt snapshots from the code")

// apiPackages returns the public packages whose exported surface api/
// records, by directory from the module root ("." is the root package):
// every directory holding non-test Go files, except internal/, examples/,
// cmd/, testdata/ and the benchmarks module.
func apiPackages(t *testing.T) []string {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "internal", "examples", "cmd", "testdata", "benchmarks", "api", "docs":
				return filepath.SkipDir
			}
			if path != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			if dir := filepath.Dir(path); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	return dirs
}

// TestAPI checks each public package's exported surface against its
// snapshot in api/, as Go's own api/ files do: any change to the surface
// shows in review, as a change to those files. After a change made on
// purpose, run
//
//	go test -run TestAPI -update-api .
//
// and commit api/ with it. A line is one exported name: a constant, a
// variable, a type, a field or method of an exported struct or interface,
// a function, or a method of an exported type, with its type or signature.
func TestAPI(t *testing.T) {
	total, options := 0, 0
	pkgs := apiPackages(t)
	for _, dir := range pkgs {
		lines, err := apiOf(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		total += len(lines)
		for _, l := range lines {
			if strings.HasPrefix(l, "func With") || strings.Contains(l, ") With") && strings.HasPrefix(l, "method ") {
				options++
			}
		}
		file := filepath.Join("api", apiFileName(dir))
		got := ""
		if len(lines) > 0 {
			got = strings.Join(lines, "\n") + "\n"
		}
		if *updateAPI {
			if err := os.MkdirAll("api", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: no snapshot (%v); run go test -run TestAPI -update-api . and commit api/", dir, err)
			continue
		}
		var wantLines []string
		if w := strings.TrimSuffix(string(want), "\n"); w != "" {
			wantLines = strings.Split(w, "\n")
		}
		if added, removed := lineDiff(wantLines, lines); len(added)+len(removed) > 0 {
			t.Errorf("%s: the exported surface changed from %s:\nadded:\n\t%s\nremoved:\n\t%s\nif on purpose, run go test -run TestAPI -update-api . and commit api/",
				dir, file, strings.Join(added, "\n\t"), strings.Join(removed, "\n\t"))
		}
	}
	stale, _ := filepath.Glob(filepath.Join("api", "*.txt"))
	for _, f := range stale {
		if slices.ContainsFunc(pkgs, func(dir string) bool { return filepath.Join("api", apiFileName(dir)) == f }) {
			continue
		}
		if *updateAPI {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s names no public package; run go test -run TestAPI -update-api . and commit api/", f)
	}
	// Issue 19's budget: at most two thirds of the 695 names and at most
	// 70 of the 110 With* functions and methods counted the same way
	// before it. A surface that grows past it is a decision to make in
	// review, not by accident. Issue 30 added the otelobs package and its
	// two options, WithMeterProvider (OpenTelemetry's convention for
	// where instruments are made) and WithHealth (promobs's, meaning the
	// same): 72. Issue 31 added redisstore.WithClientClockWindows, the
	// lead's decision (a Multi's semantics change: the client's clock): 73.
	// Issue 33 adds overload protection, a feature area of its own: the
	// overload package (priorities, Protect, BBR and its CPU reader, each
	// configured by a Config struct rather than With* options), Decision's
	// Shed, the Ending of a Lease, grpcmw's ReasonOverloaded and echomw's
	// ErrShed; the client-side Throttle and WithThrottle in httpclient and
	// grpcclient (the same option, meaning the same, in both); the
	// Adaptive limit with its Token and Stats; the guards' Reading and
	// WithGuard in promobs, otelobs and debugpage (WithHealth's
	// counterpart for overload guards, meaning the same in all three):
	// 535 names, 78 With*. Adaptive.AcquireKey is Acquire with the
	// tenant shares, which Allow has and an allocation-free caller had no
	// way to get (one Acquire taking a key would cost every key-less
	// admission the tenant lookup): 536. core.Lease became a value over
	// a recycled record, so that no admission allocates: core.Holder (and
	// its EndLease) and core.LeaseOf let any limiter hand Leases out so,
	// IsZero replaces the nil check, and NewLease (with an Ending) replaces
	// NewLease and NewEndingLease; Released went (nothing needed it): 538.
	if total > 538 || options > 78 {
		t.Errorf("%d exported names (budget 538) and %d With* functions or methods (budget 78): cut before adding", total, options)
	}
	t.Logf("%d exported names in %d public packages, %d of them With* functions or methods", total, len(pkgs), options)
}

// apiFileName names dir's snapshot: the package path below the module,
// with '/' as '_'; floodgate.txt for the root.
func apiFileName(dir string) string {
	if dir == "." {
		return "floodgate.txt"
	}
	return strings.ReplaceAll(dir, "/", "_") + ".txt"
}

// lineDiff returns the lines of b missing from a (added) and those of a
// missing from b (removed); both are sorted.
func lineDiff(a, b []string) (added, removed []string) {
	for _, l := range b {
		if !slices.Contains(a, l) {
			added = append(added, l)
		}
	}
	for _, l := range a {
		if !slices.Contains(b, l) {
			removed = append(removed, l)
		}
	}
	return added, removed
}

// apiOf returns the sorted surface of the package in dir, from its
// non-test files.
func apiOf(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var lines []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			lines = append(lines, declAPI(d)...)
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, spec := range g.Specs {
					more, err := aliasAPI(f, spec.(*ast.TypeSpec))
					if err != nil {
						return nil, err
					}
					lines = append(lines, more...)
				}
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}

// aliasAPI returns what an exported alias to a type of one of this
// module's internal packages gives its users besides the alias: the
// type's exported fields and methods, under the alias's name, so that the
// snapshot watches them as it watches a type declared in the package.
func aliasAPI(f *ast.File, s *ast.TypeSpec) ([]string, error) {
	sel, ok := s.Type.(*ast.SelectorExpr)
	if !s.Assign.IsValid() || !s.Name.IsExported() || !ok {
		return nil, nil
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return nil, nil
	}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		dir, ok := strings.CutPrefix(p, "github.com/floodgate/floodgate/")
		if name != x.Name || !ok || !strings.HasPrefix(dir, "internal/") {
			continue
		}
		target, err := apiOf(filepath.FromSlash(dir))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, l := range target {
			for _, form := range []string{"type %s, ", "method (%s) ", "method (*%s) "} {
				if rest, ok := strings.CutPrefix(l, fmt.Sprintf(form, sel.Sel.Name)); ok {
					out = append(out, fmt.Sprintf(form, s.Name.Name)+rest)
				}
			}
		}
		return out, nil
	}
	return nil, nil
}

// declAPI returns the surface lines of one declaration.
func declAPI(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		sig := strings.TrimPrefix(types.ExprString(d.Type), "func")
		if d.Recv == nil {
			return []string{"func " + d.Name.Name + sig}
		}
		recv := types.ExprString(d.Recv.List[0].Type)
		base := strings.TrimPrefix(recv, "*")
		if i := strings.IndexByte(base, '['); i >= 0 {
			base = base[:i]
		}
		if !ast.IsExported(base) {
			return nil
		}
		return []string{"method (" + recv + ") " + d.Name.Name + sig}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				kind := "var "
				if d.Tok == token.CONST {
					kind = "const "
				}
				for _, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					l := kind + n.Name
					if s.Type != nil {
						l += " " + types.ExprString(s.Type)
					}
					out = append(out, l)
				}
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				out = append(out, typeAPI(s)...)
			}
		}
	}
	return out
}

// typeAPI returns the lines of an exported type: the type, and the
// exported fields of a struct or the methods of an interface.
func typeAPI(s *ast.TypeSpec) []string {
	name := "type " + s.Name.Name
	if s.Assign.IsValid() {
		return []string{name + " = " + types.ExprString(s.Type)}
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		out := []string{name + " struct"}
		for _, f := range t.Fields.List {
			ft := types.ExprString(f.Type)
			if len(f.Names) == 0 {
				if ast.IsExported(strings.TrimPrefix(ft, "*")) || strings.Contains(ft, ".") {
					out = append(out, name+", embedded "+ft)
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, name+", "+n.Name+" "+ft)
				}
			}
		}
		return out
	case *ast.InterfaceType:
		out := []string{name + " interface"}
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				out = append(out, name+", embedded "+types.ExprString(m.Type))
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					out = append(out, name+", "+n.Name+strings.TrimPrefix(types.ExprString(m.Type), "func"))
				}
			}
		}
		return out
	}
	return []string{name + " " + types.ExprString(s.Type)}
}

// TestAPINoInternalType: no exported function, method, field or variable
// shows a type of an internal package, which a user cannot import and so
// cannot name. Such a type gets an exported alias (keyfunc.Option,
// grpcmw.IPOption), and the signatures use the alias.
func TestAPINoInternalType(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range apiPackages(t) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			var internal []*regexp.Regexp
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil || !strings.Contains(p+"/", "/internal/") {
					continue
				}
				name := path.Base(p)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				internal = append(internal, regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\.`))
			}
			for _, d := range f.Decls {
				for _, l := range declAPI(d) {
					if strings.HasPrefix(l, "type ") && strings.Contains(l, " = ") {
						continue // the alias is the name users have
					}
					for _, re := range internal {
						if re.MatchString(l) {
							t.Errorf("%s: %q shows an internal package's type, which users cannot name; give it an exported alias and use that", file, l)
						}
					}
				}
			}
		}
	}
}
