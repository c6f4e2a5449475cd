package rlsconfig

import "time"

// Option configures [Load], [Check], [Watch] and [Of].
type Option func(*options)

type options struct {
	merge    bool
	dots     bool
	root     string
	check    func(*Rule) error
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

// CheckRules checks every rule of a file that parses with check: an error
// leaves the file out, as an invalid file is, and is reported as the
// file's, at the rule's rate_limit. The service passes what its store
// can enforce, so that a rule the store refuses (an algorithm that cannot
// keep a year on Redis, say) keeps its own file out rather than the whole
// configuration. check must be safe for concurrent use.
func CheckRules(check func(*Rule) error) Option { return func(o *options) { o.check = check } }

// ReadDotFiles reads configuration files whose names start with '.' too,
// as envoyproxy/ratelimit does unless RUNTIME_IGNOREDOTFILES=true. By
// default they are skipped. Directories whose names start with '.' are
// skipped either way: Kubernetes' "..data" and the directory it links to
// hold the very files the ConfigMap's links beside them name, and
// subdirectories are not read.
func ReadDotFiles() Option { return func(o *options) { o.dots = true } }

// WatchRoot makes [Watch] also reload when root, the directory or a
// directory above it, is replaced: envoyproxy/ratelimit's
// RUNTIME_WATCH_ROOT=true, for deployments that swap a link (such as
// RUNTIME_ROOT's "current") to a new version of the whole tree. A watch
// stays on the directory it began on, so without this a swap above the
// directory goes unseen, and so do later changes in the new tree. Load
// and Check ignore it.
func WatchRoot(root string) Option { return func(o *options) { o.root = root } }
