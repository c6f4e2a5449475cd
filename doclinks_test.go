package floodgate_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDocLinks: every doc link in a doc comment of a non-internal package
// ([Name], [Type.Method], [pkg.Name], [pkg.Type.Method], package comments
// and declarations' doc comments, non-test files) names an exported
// identifier that exists in the non-test files of its package. go doc and
// the package site render a link they cannot resolve as plain text in
// brackets, and one to a name that lives only in a test file (say a
// method export_test.go adds) points a reader at nothing.
func TestDocLinks(t *testing.T) {
	r := newDocResolver(t, "./...")
	n := 0
	for _, p := range listPackages(t, "./...") {
		if isInternal(p.ImportPath) {
			continue
		}
		n++
		for _, e := range r.check(p) {
			t.Error(e)
		}
	}
	if n < 10 {
		t.Fatalf("checked only %d packages", n)
	}
}

// TestDocLinksCatches runs the check on testdata/doclinks, whose comments
// hold links that resolve and links that do not, so that TestDocLinks
// cannot pass by finding nothing.
func TestDocLinksCatches(t *testing.T) {
	dir := filepath.Join("testdata", "doclinks")
	p := listedPackage{ImportPath: "example.com/doclinks", Name: "doclinks", Dir: dir, GoFiles: []string{"doclinks.go"}}
	got := newDocResolver(t).check(p)
	want := []string{
		filepath.Join(dir, "doclinks.go") + ":7: [Gauge.Reset] names nothing exported in example.com/doclinks's non-test files",
		filepath.Join(dir, "doclinks.go") + ":8: [strings.NoSuchFunc] names nothing exported in strings's non-test files",
		filepath.Join(dir, "doclinks.go") + ":9: [redisstore.Stack]: this package does not import redisstore, so the link renders as text; write its import path or drop the brackets",
		filepath.Join(dir, "doclinks.go") + ":10: [Counter.Reset] names nothing exported in example.com/doclinks's non-test files",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("check found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// listedPackage is what the check needs of a package `go list` reports.
type listedPackage struct {
	ImportPath, Name, Dir string
	GoFiles               []string
}

func isInternal(path string) bool {
	return strings.Contains(path+"/", "/internal/")
}

// listPackages lists patterns with the go command, non-test files only.
func listPackages(t *testing.T, patterns ...string) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Name,Dir,GoFiles"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(patterns, " "), err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// docResolver holds the go/doc view of each package a link names, read
// from its non-test files.
type docResolver struct {
	t      *testing.T
	listed map[string]listedPackage // the module's packages and their dependencies
	docs   map[string]*doc.Package
}

// newDocResolver returns a resolver that knows the packages patterns
// match and their dependencies at once, and asks go list for any other.
func newDocResolver(t *testing.T, patterns ...string) *docResolver {
	r := &docResolver{t: t, listed: map[string]listedPackage{}, docs: map[string]*doc.Package{}}
	if len(patterns) > 0 {
		for _, p := range listPackages(t, append([]string{"-deps"}, patterns...)...) {
			r.listed[p.ImportPath] = p
		}
	}
	return r
}

// list returns what go list says of the package at path.
func (r *docResolver) list(path string) (listedPackage, bool) {
	if p, ok := r.listed[path]; ok {
		return p, p.Dir != ""
	}
	ps := listPackages(r.t, path)
	if len(ps) != 1 {
		r.listed[path] = listedPackage{}
		return listedPackage{}, false
	}
	r.listed[path] = ps[0]
	return ps[0], ps[0].Dir != ""
}

// docOf returns the documentation of the package at path, whose files are
// read from p (or found with go list when p is nil), or nil if there is
// no such package.
func (r *docResolver) docOf(path string, p *listedPackage) *doc.Package {
	if d, ok := r.docs[path]; ok {
		return d
	}
	if p == nil {
		l, ok := r.list(path)
		if !ok {
			r.docs[path] = nil
			return nil
		}
		p = &l
	}
	fset := token.NewFileSet()
	files, err := parseFiles(fset, *p)
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := doc.NewFromFiles(fset, files, path)
	if err != nil {
		r.t.Fatalf("go/doc %s: %v", path, err)
	}
	r.docs[path] = d
	return d
}

func parseFiles(fset *token.FileSet, p listedPackage) ([]*ast.File, error) {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// unknownPkg marks a link whose package name this package does not import.
const unknownPkg = "unknown package "

// check returns one error per doc link of p that does not resolve, as
// "file:line: [link] why".
func (r *docResolver) check(p listedPackage) []string {
	fset := token.NewFileSet()
	files, err := parseFiles(fset, p)
	if err != nil {
		r.t.Fatal(err)
	}
	var groups []*ast.CommentGroup
	imports := map[string]string{}
	for _, f := range files {
		groups = append(groups, docComments(f)...)
		for _, s := range f.Imports {
			path, _ := strconv.Unquote(s.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if s.Name != nil {
				name = s.Name.Name
			} else if l, ok := r.list(path); ok {
				name = l.Name // go-redis/v9 is package redis
			}
			if old, ok := imports[name]; ok && old != path {
				path = "" // ambiguous, as go/doc has it
			}
			imports[name] = path
		}
	}
	self := r.docOf(p.ImportPath, &p)
	parse := comment.Parser{
		LookupPackage: func(name string) (string, bool) {
			if path, ok := imports[name]; ok && path != "" {
				return path, true
			}
			if name == p.Name {
				return "", true
			}
			if path, ok := comment.DefaultLookupPackage(name); ok {
				return path, true
			}
			return unknownPkg + name, true
		},
		LookupSym: func(recv, name string) bool { return true }, // checked below
	}
	var errs []string
	for _, g := range groups {
		for _, l := range docLinks(parse.Parse(g.Text())) {
			text := linkText(l)
			var why string
			switch {
			case strings.HasPrefix(l.ImportPath, unknownPkg):
				if l.Name == "" {
					continue // a bracketed word, not a link
				}
				why = fmt.Sprintf(": this package does not import %s, so the link renders as text; write its import path or drop the brackets", strings.TrimPrefix(l.ImportPath, unknownPkg))
			case l.ImportPath == "":
				if !self.Parser().LookupSym(l.Recv, l.Name) {
					why = fmt.Sprintf(" names nothing exported in %s's non-test files", p.ImportPath)
				}
			default:
				d := r.docOf(l.ImportPath, nil)
				switch {
				case d == nil:
					why = fmt.Sprintf(": no package %s", l.ImportPath)
				case l.Name != "" && !d.Parser().LookupSym(l.Recv, l.Name):
					why = fmt.Sprintf(" names nothing exported in %s's non-test files", l.ImportPath)
				}
			}
			if why != "" {
				errs = append(errs, fmt.Sprintf("%s: [%s]%s", linePos(fset, g, text), text, why))
			}
		}
	}
	return errs
}

// docComments returns the package comment and the doc comments of every
// declaration of f, struct fields and interface methods included.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(g *ast.CommentGroup) {
		if g != nil {
			out = append(out, g)
		}
	}
	add(f.Doc)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			add(n.Doc)
			return false // a function body holds no doc comments
		case *ast.GenDecl:
			add(n.Doc)
		case *ast.TypeSpec:
			add(n.Doc)
		case *ast.ValueSpec:
			add(n.Doc)
		case *ast.Field:
			add(n.Doc)
		}
		return true
	})
	return out
}

// docLinks returns the doc links of a parsed comment.
func docLinks(d *comment.Doc) []*comment.DocLink {
	var out []*comment.DocLink
	var texts func([]comment.Text)
	texts = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				out = append(out, t)
			case *comment.Link:
				texts(t.Text)
			}
		}
	}
	var blocks func([]comment.Block)
	blocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				texts(b.Text)
			case *comment.Heading:
				texts(b.Text)
			case *comment.List:
				for _, it := range b.Items {
					blocks(it.Content)
				}
			}
		}
	}
	blocks(d.Content)
	return out
}

// linkText returns a link's text as written between the brackets.
func linkText(l *comment.DocLink) string {
	var b strings.Builder
	for _, t := range l.Text {
		if p, ok := t.(comment.Plain); ok {
			b.WriteString(string(p))
		}
	}
	return b.String()
}

// linePos returns file:line of the first line of g that holds [text].
func linePos(fset *token.FileSet, g *ast.CommentGroup, text string) string {
	for _, c := range g.List {
		if strings.Contains(c.Text, "["+text+"]") {
			p := fset.Position(c.Pos())
			return fmt.Sprintf("%s:%d", p.Filename, p.Line)
		}
	}
	p := fset.Position(g.Pos())
	return fmt.Sprintf("%s:%d", p.Filename, p.Line)
}
