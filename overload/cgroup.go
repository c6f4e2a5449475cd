package overload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
)

// cgroup reads the CPU use and the CPU limit of the control group this
// process runs in, through a file system rooted at "/" (fs paths have no
// leading slash). It is found once, from /proc/self/cgroup and
// /proc/self/mountinfo; its files are read afresh at every sample, so a
// quota changed live is seen.
type cgroup struct {
	fsys    fs.FS
	version int // 1 or 2
	// usage is the counter of CPU time used: v2 cpu.stat (usage_usec),
	// v1 cpuacct.usage (nanoseconds).
	usage string
	// quotaDirs hold the CPU quota files, the process's own group first,
	// then its ancestors up to the mount point: the tightest quota on the
	// way up is the one that binds.
	quotaDirs []string
	// cpuset is the file listing the CPUs the group may run on, or "".
	cpuset string
}

// errNoCgroup: no cgroup with a readable CPU counter was found.
var errNoCgroup = errors.New("overload: no readable cgroup CPU counter")

// mount is one cgroup file system of /proc/self/mountinfo.
type mount struct {
	root, point string // fs paths: no leading slash ("" for "/")
	v2          bool
	controllers []string // a v1 mount's controllers (its super options)
}

// findCgroup finds this process's CPU cgroup. A v1 hierarchy with the
// cpuacct controller wins over v2 (on a hybrid system the CPU controllers
// are bound to v1, and the v2 tree counts nothing of its own).
func findCgroup(fsys fs.FS) (*cgroup, error) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoCgroup, err)
	}
	info, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoCgroup, err)
	}
	mounts := parseMountinfo(info)
	v1 := map[string]string{} // controller: the group's path
	v2, haveV2 := "", false
	for _, line := range strings.Split(string(self), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && ctrls == "" {
			v2, haveV2 = p, true
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			v1[c] = p
		}
	}
	if p, ok := v1["cpuacct"]; ok {
		if g := findV1(fsys, mounts, v1, p); g != nil {
			return g, nil
		}
	}
	if haveV2 {
		for _, m := range mounts {
			if !m.v2 {
				continue
			}
			dir := groupDir(m, v2)
			g := &cgroup{fsys: fsys, version: 2, usage: path.Join(dir, "cpu.stat"),
				quotaDirs: upTo(dir, m.point), cpuset: path.Join(dir, "cpuset.cpus.effective")}
			if _, err := g.readUsage(); err == nil {
				return g, nil
			}
		}
	}
	return nil, errNoCgroup
}

// findV1 is findCgroup's v1 case: cpuacct counts, cpu holds the quota,
// cpuset the CPUs; each may be mounted apart or together.
func findV1(fsys fs.FS, mounts []mount, v1 map[string]string, acct string) *cgroup {
	find := func(ctrl string) (mount, bool) {
		for _, m := range mounts {
			for _, c := range m.controllers {
				if c == ctrl {
					return m, true
				}
			}
		}
		return mount{}, false
	}
	m, ok := find("cpuacct")
	if !ok {
		return nil
	}
	g := &cgroup{fsys: fsys, version: 1, usage: path.Join(groupDir(m, acct), "cpuacct.usage")}
	if _, err := g.readUsage(); err != nil {
		return nil
	}
	if p, ok := v1["cpu"]; ok {
		if m, ok := find("cpu"); ok {
			g.quotaDirs = upTo(groupDir(m, p), m.point)
		}
	}
	if p, ok := v1["cpuset"]; ok {
		if m, ok := find("cpuset"); ok {
			dir := groupDir(m, p)
			g.cpuset = path.Join(dir, "cpuset.effective_cpus")
			if _, err := fs.Stat(fsys, g.cpuset); err != nil {
				g.cpuset = path.Join(dir, "cpuset.cpus")
			}
		}
	}
	return g
}

// groupDir is where the group at cgroup path p has its files under mount
// m: p is relative to the mount's root. A group outside the root (a
// namespace showing a path the mount cannot reach) reads the mount point.
func groupDir(m mount, p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	switch {
	case m.root == "":
		return path.Join(m.point, p)
	case p == m.root:
		return m.point
	case strings.HasPrefix(p, m.root+"/"):
		return path.Join(m.point, p[len(m.root)+1:])
	}
	return m.point
}

// upTo lists dir and its parents up to the mount point top.
func upTo(dir, top string) []string {
	dirs := []string{dir}
	for dir != top && strings.HasPrefix(dir, top+"/") {
		dir = path.Dir(dir)
		dirs = append(dirs, dir)
	}
	return dirs
}

// parseMountinfo lists the cgroup mounts of a /proc/self/mountinfo:
// "ID parent major:minor root point options [optional...] - fstype source super".
func parseMountinfo(b []byte) []mount {
	var ms []mount
	for _, line := range strings.Split(string(b), "\n") {
		before, after, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, tail := strings.Fields(before), strings.Fields(after)
		if len(f) < 5 || len(tail) < 1 {
			continue
		}
		m := mount{root: strings.TrimPrefix(unescape(f[3]), "/"), point: strings.TrimPrefix(unescape(f[4]), "/")}
		switch tail[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			if len(tail) >= 3 {
				m.controllers = strings.Split(tail[2], ",")
			}
		default:
			continue
		}
		ms = append(ms, m)
	}
	return ms
}

// unescape undoes mountinfo's octal escapes (a space is \040).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readUsage returns the group's CPU time used, in nanoseconds.
func (g *cgroup) readUsage() (int64, error) {
	b, err := fs.ReadFile(g.fsys, g.usage)
	if err != nil {
		return 0, err
	}
	if g.version == 1 {
		return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || us > math.MaxInt64/1000 {
				return 0, fmt.Errorf("overload: %s: bad usage_usec %q", g.usage, v)
			}
			return us * 1000, nil
		}
	}
	return 0, fmt.Errorf("overload: %s has no usage_usec", g.usage)
}

// limit returns how many CPUs' worth of time the group may use: the
// tightest CFS quota on the way up (quota over period, fractional), and
// the number of CPUs in its cpuset, whichever is less; 0 when neither is
// set or readable.
func (g *cgroup) limit() float64 {
	best := 0.0
	for _, dir := range g.quotaDirs {
		if q := g.quota(dir); q > 0 && (best == 0 || q < best) {
			best = q
		}
	}
	if g.cpuset != "" {
		if b, err := fs.ReadFile(g.fsys, g.cpuset); err == nil {
			if n := countCPUs(string(b)); n > 0 && (best == 0 || float64(n) < best) {
				best = float64(n)
			}
		}
	}
	return best
}

// quota reads one group's CFS quota in CPUs, or 0 for none.
func (g *cgroup) quota(dir string) float64 {
	var q, p string
	if g.version == 2 {
		b, err := fs.ReadFile(g.fsys, path.Join(dir, "cpu.max"))
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			return 0
		}
		q, p = f[0], f[1] // "max 100000" when unlimited
	} else {
		bq, err1 := fs.ReadFile(g.fsys, path.Join(dir, "cpu.cfs_quota_us"))
		bp, err2 := fs.ReadFile(g.fsys, path.Join(dir, "cpu.cfs_period_us"))
		if err1 != nil || err2 != nil {
			return 0
		}
		q, p = string(bytes.TrimSpace(bq)), string(bytes.TrimSpace(bp)) // quota -1 when unlimited
	}
	quota, err1 := strconv.ParseInt(q, 10, 64)
	period, err2 := strconv.ParseInt(p, 10, 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0
	}
	return float64(quota) / float64(period)
}

// countCPUs counts the CPUs of a cpuset list such as "0-3,8,10-11"; 0 if
// it cannot be read.
func countCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a || a < 0 {
			return 0
		}
		n += b - a + 1
	}
	return n
}
