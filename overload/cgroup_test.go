package overload

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
)

// memFS is a fake file system rooted at "/", loaded from a tree under
// testdata/cgroup, whose files a test rewrites while a sampler reads.
type memFS struct {
	mu sync.Mutex
	m  fstest.MapFS
}

func loadTree(t *testing.T, name string) *memFS {
	t.Helper()
	root := filepath.Join("testdata", "cgroup", name)
	m := fstest.MapFS{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		m[filepath.ToSlash(rel)] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &memFS{m: m}
}

func (f *memFS) Open(name string) (fs.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mf, ok := f.m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return fstest.MapFS{name: &fstest.MapFile{Data: append([]byte(nil), mf.Data...)}}.Open(name)
}

func (f *memFS) set(name, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[name] = &fstest.MapFile{Data: []byte(data)}
}

func (f *memFS) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, name)
}

// tree is a testdata tree and where its counter is.
type tree struct {
	name    string
	version int
	usage   string  // the counter's file
	used    int64   // what it holds, ns
	limit   float64 // CPUs, the truth the tree encodes
}

var trees = []tree{
	// 0.5 CPU of quota in a cpuset of 4, in the group's own namespace.
	{"v2-half", 2, "sys/fs/cgroup/cpu.stat", 7e9, 0.5},
	// 1.5 CPUs on the pod above the process's group, which has none.
	{"v2-nested", 2, "sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat", 0, 1.5},
	// v1 beside an empty v2 tree: 1.5 CPUs of quota in a cpuset of 2.
	{"v1-hybrid", 1, "sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", 123456789, 1.5},
	// v1 with no quota: the cpuset's 3 effective CPUs (of 8 listed).
	{"v1-cpuset", 1, "sys/fs/cgroup/cpu acct/cpuacct.usage", 5000, 3},
}

// counter writes a tree's counter as the kernel would: v2 in whole
// microseconds, v1 in nanoseconds.
func (tr tree) counter(ns int64) string {
	if tr.version == 2 {
		return "usage_usec " + strconv.FormatInt(ns/1000, 10) + "\nuser_usec 0\nsystem_usec 0\n"
	}
	return strconv.FormatInt(ns, 10) + "\n"
}

func TestFindCgroup(t *testing.T) {
	for _, tr := range trees {
		t.Run(tr.name, func(t *testing.T) {
			g, err := findCgroup(loadTree(t, tr.name))
			if err != nil {
				t.Fatal(err)
			}
			if g.version != tr.version || g.usage != tr.usage {
				t.Fatalf("found v%d %q, want v%d %q", g.version, g.usage, tr.version, tr.usage)
			}
			used, err := g.readUsage()
			if err != nil || used != tr.used {
				t.Fatalf("usage %d, %v; want %d", used, err, tr.used)
			}
			if got := g.limit(); got != tr.limit {
				t.Fatalf("limit %v CPUs, want %v", got, tr.limit)
			}
		})
	}
}

// Without its quota files a group is limited by its cpuset; without
// either, by nothing it can read (0: the machine's, in CPU).
func TestCgroupLimitFallbacks(t *testing.T) {
	f := loadTree(t, "v2-half")
	f.remove("sys/fs/cgroup/cpu.max")
	g, err := findCgroup(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.limit(); got != 4 {
		t.Fatalf("with no quota: %v CPUs, want the cpuset's 4", got)
	}
	f.set("sys/fs/cgroup/cpu.max", "max 100000\n")
	f.remove("sys/fs/cgroup/cpuset.cpus.effective")
	if got := g.limit(); got != 0 {
		t.Fatalf("with neither: %v, want 0", got)
	}
	f.remove("proc/self/cgroup")
	if _, err := findCgroup(f); err == nil {
		t.Fatal("found a cgroup with no /proc/self/cgroup")
	}
}

func TestCountCPUs(t *testing.T) {
	for list, want := range map[string]int{
		"0-3\n": 4, "0": 1, "0-3,8,10-11": 7, "": 0, "3-1": 0, "x": 0, "0-x": 0, "2-4,": 3,
	} {
		if got := countCPUs(list); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", list, got, want)
		}
	}
}

func TestMountinfoEscapes(t *testing.T) {
	if got := unescape(`/a\040b\134c\0`); got != `/a b\c\0` {
		t.Fatalf("unescape: %q", got)
	}
	// A group outside the mount's root reads the mount point; one below
	// it, its own directory.
	m := mount{root: "docker/abc", point: "sys/fs/cgroup/cpu"}
	for p, want := range map[string]string{
		"/docker/abc": "sys/fs/cgroup/cpu", "/docker/abc/x": "sys/fs/cgroup/cpu/x",
		"/other": "sys/fs/cgroup/cpu", "/docker/abcd": "sys/fs/cgroup/cpu",
	} {
		if got := groupDir(m, p); got != want {
			t.Errorf("groupDir(%q) = %q, want %q", p, got, want)
		}
	}
}
