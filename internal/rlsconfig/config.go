package rlsconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config is a directory's configuration: its domains. A Config does not
// change; it is safe for concurrent use.
type Config struct {
	domains map[string]*Domain
}

// Domain returns the domain called name, or nil.
func (c *Config) Domain(name string) *Domain { return c.domains[name] }

// Domains returns the configuration's domains, sorted by name.
func (c *Config) Domains() []*Domain {
	out := slices.Collect(maps.Values(c.domains))
	slices.SortFunc(out, func(a, b *Domain) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Option configures [Load], [Check] and [Watch].
type Option func(*options)

type options struct {
	merge    bool
	debounce time.Duration
}

func defaultOptions(opts []Option) options {
	o := options{debounce: 100 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// MergeDomains lets several files configure one domain, as
// envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG=true does: their top-level
// descriptors are put together, and a descriptor two files both define is
// an error of the later file. By default a domain is one file's.
func MergeDomains() Option { return func(o *options) { o.merge = true } }

// file is one file of a directory, read and parsed.
type file struct {
	path string
	dom  *Domain
	err  error
}

// Load reads the configuration files of dir: the files directly in it
// whose names end in ".yaml" or ".yml", in the order of their names, each
// one domain. Names starting with "." are skipped (Kubernetes mounts a
// ConfigMap's files through a "..data" directory beside them), and so are
// files with other endings; a subdirectory is reported as an error, since
// envoyproxy/ratelimit would read its files and Load does not.
//
// A file that cannot be read or parsed is left out and its error
// returned; the others still load. A domain that an earlier file (by
// name) already configures is an error naming both files, and the later
// file is left out, unless [MergeDomains] is given. No files at all is an
// error too. The Config is never nil.
func Load(dir string, opts ...Option) (*Config, []error) {
	o := defaultOptions(opts)
	files, errs := readDir(dir)
	c, more := assemble(files, o.merge)
	return c, noFiles(dir, files, append(errs, more...))
}

// Check loads dir as [Load] does and returns all its errors joined, or nil
// when every file is valid.
func Check(dir string, opts ...Option) error {
	_, errs := Load(dir, opts...)
	return errors.Join(errs...)
}

// readDir reads and parses dir's files; errors that are not a file's
// (dir unreadable, a subdirectory) come back on their own.
func readDir(dir string) ([]file, []error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, []error{&Error{File: dir, Err: err}}
	}
	var files []file
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		info, err := os.Stat(path) // follows links, as ConfigMaps' are
		if err != nil {
			if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
				errs = append(errs, &Error{File: path, Err: err})
			}
			continue
		}
		if info.IsDir() {
			errs = append(errs, &Error{File: path, Err: errors.New("a subdirectory, which is not read; move its files into the directory, or remove it")})
			continue
		}
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
			continue
		}
		f := file{path: path}
		data, err := readFile(path)
		if err == nil {
			f.dom, err = Parse(path, data)
		}
		f.err = err
		files = append(files, f)
	}
	return files, errs
}

func readFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	defer fh.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(fh, maxFileSize+1)); err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return b.Bytes(), nil
}

// assemble puts the parsed files' domains together, in order; files with
// an error only report it.
func assemble(files []file, merge bool) (*Config, []error) {
	c := &Config{domains: map[string]*Domain{}}
	var errs []error
	n := 0
	for _, f := range files {
		if f.err != nil {
			errs = append(errs, f.err)
			continue
		}
		n++
		d := f.dom
		prev, ok := c.domains[d.Name]
		switch {
		case !ok:
			c.domains[d.Name] = d
		case !merge:
			errs = append(errs, &Error{File: f.path, Line: d.Line, Field: "domain",
				Err: fmt.Errorf("domain %q is also configured by %s; give each file its own domain, or merge them (MERGE_DOMAIN_CONFIG)", d.Name, prev.File)})
		default:
			m, err := mergeDomains(prev, d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.domains[d.Name] = m
		}
	}
	return c, errs
}

// noFiles is the error of a directory without configuration files, unless
// errs already says why.
func noFiles(dir string, files []file, errs []error) []error {
	if len(files) == 0 && len(errs) == 0 {
		errs = append(errs, &Error{File: dir, Err: errors.New("no configuration files (*.yaml, *.yml)")})
	}
	return errs
}

// mergeDomains returns a's domain with b's top-level descriptors added,
// or an error of b's file if one of them is a's too. a and b do not change.
func mergeDomains(a, b *Domain) (*Domain, error) {
	for name, at := range b.root.names {
		if prev, ok := a.root.names[name]; ok {
			return nil, &Error{File: at.file, Line: at.line, Field: "descriptors",
				Err: fmt.Errorf("duplicate descriptor %s.%s (also at %s:%d); when files merge a domain, each top-level descriptor must be in one of them", a.Name, name, prev.file, prev.line)}
		}
	}
	r := &node{
		exact:    maps.Clone(a.root.exact),
		byKey:    maps.Clone(a.root.byKey),
		names:    maps.Clone(a.root.names),
		wild:     append(slices.Clip(a.root.wild), b.root.wild...),
		children: a.root.children + b.root.children,
	}
	maps.Copy(r.exact, b.root.exact)
	maps.Copy(r.byKey, b.root.byKey)
	maps.Copy(r.names, b.root.names)
	m := *a
	m.root = r
	m.rules = append(slices.Clip(a.rules), b.rules...)
	return &m, nil
}

// Of returns the configuration of domains already parsed (a configuration
// built into a program, say), as Load would put their files together: two
// domains of one name are an error, unless MergeDomains merges them.
func Of(domains []*Domain, opts ...Option) (*Config, error) {
	files := make([]file, len(domains))
	for i, d := range domains {
		files[i] = file{path: d.File, dom: d}
	}
	c, errs := assemble(files, defaultOptions(opts).merge)
	return c, errors.Join(errs...)
}
