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
	"syscall"
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

// file is one file of a directory, read and parsed: its domain, or its
// errors.
type file struct {
	path string
	dom  *Domain
	errs []error
}

// Load reads the configuration files of dir: the files directly in it
// whose names end in ".yaml" or ".yml", in the order of their names, each
// one domain. Links are followed (a Kubernetes ConfigMap's files are
// links). Names starting with "." are skipped, unless [ReadDotFiles] is
// given (Kubernetes mounts a ConfigMap's files through a "..data"
// directory beside them), and so are files with other endings; a
// subdirectory is reported as an error, since envoyproxy/ratelimit would
// read its files and Load does not, and so is a configuration file that
// is not a regular file (a named pipe would block the read), which is not
// read.
//
// A file that cannot be read or parsed, or has a rule [CheckRules] refuses,
// is left out and its errors returned, every one of them (up to 100 a
// file), each naming the file and, but for an error of the whole file,
// the line; the others still load. A domain that an earlier file (by
// name) already configures is an error naming both files, and the later
// file is left out, unless [MergeDomains] is given. No files at all is an
// error too. The Config is never nil.
func Load(dir string, opts ...Option) (*Config, []error) {
	o := defaultOptions(opts)
	files, errs := readDir(dir, &o)
	c, more := assemble(files, o.merge)
	return c, noFiles(dir, files, append(errs, more...))
}

// Check loads dir as [Load] does and returns all its errors joined, or nil
// when every file is valid.
func Check(dir string, opts ...Option) error {
	_, errs := Load(dir, opts...)
	return errors.Join(errs...)
}

// readDir reads and parses dir's files, and checks their rules; errors
// that are not a file's (dir unreadable, a subdirectory) come back on
// their own.
func readDir(dir string, o *options) ([]file, []error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, []error{&Error{File: dir, Err: err}}
	}
	var files []file
	var errs []error
	for _, e := range ents {
		name := e.Name()
		hidden := strings.HasPrefix(name, ".")
		if hidden && !o.dots {
			continue
		}
		ext := filepath.Ext(name)
		yamlName := ext == ".yaml" || ext == ".yml"
		path := filepath.Join(dir, name)
		info, err := os.Stat(path) // follows links, as ConfigMaps' are
		switch {
		case err != nil:
			if yamlName {
				errs = append(errs, &Error{File: path, Err: err})
			}
			continue
		case info.IsDir() && !hidden:
			errs = append(errs, &Error{File: path, Err: errors.New("a subdirectory, which is not read; move its files into the directory, or remove it")})
			continue
		case !yamlName || info.IsDir():
			continue
		case !info.Mode().IsRegular():
			// A named pipe would block the read until a writer came.
			errs = append(errs, &Error{File: path, Err: fmt.Errorf("not a regular file (%v), so not read; replace it with a file, or a link to one", info.Mode().Type())})
			continue
		}
		f := file{path: path}
		data, err := readFile(path)
		if err != nil {
			f.errs = []error{err}
		} else {
			f.dom, f.errs = parse(path, data)
		}
		if f.dom != nil && o.check != nil {
			if f.errs = checkRules(f.dom, o.check); f.errs != nil {
				f.dom = nil
			}
		}
		files = append(files, f)
	}
	return files, errs
}

// checkRules returns what check finds wrong with d's rules, each an
// *Error at its rule's rate_limit.
func checkRules(d *Domain, check func(*Rule) error) []error {
	var errs []error
	for _, r := range d.rules {
		if err := check(r); err != nil {
			errs = append(errs, &Error{File: r.File, Line: r.limitLine, Field: r.limitField, Err: err})
		}
	}
	return errs
}

// readFile reads a regular file, refusing anything else: it opens
// without blocking, so that a named pipe put in place of the file after
// readDir looked cannot stop a reload.
func readFile(path string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	if !info.Mode().IsRegular() {
		return nil, &Error{File: path, Err: fmt.Errorf("not a regular file (%v), so not read; replace it with a file, or a link to one", info.Mode().Type())}
	}
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
		if f.dom == nil {
			errs = append(errs, f.errs...)
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
// domains of one name are an error, unless MergeDomains merges them, and a
// domain with a rule CheckRules' check refuses is left out. The Config
// holds the domains without errors.
func Of(domains []*Domain, opts ...Option) (*Config, error) {
	o := defaultOptions(opts)
	files := make([]file, len(domains))
	for i, d := range domains {
		files[i] = file{path: d.File, dom: d}
		if o.check != nil {
			if files[i].errs = checkRules(d, o.check); files[i].errs != nil {
				files[i].dom = nil
			}
		}
	}
	c, errs := assemble(files, o.merge)
	return c, errors.Join(errs...)
}
