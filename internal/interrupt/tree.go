package interrupt

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// RemoveTree removes path and everything below it, like os.RemoveAll, but
// never into another file system mounted below it: a debootstrap that was
// interrupted may leave the host's /proc, /sys or /dev mounted in its root
// file system. Those mounts are detached first (deepest first); a mount
// that cannot be detached leaves the tree in place and is named in the
// error, since removing through it would remove the host's files.
func RemoveTree(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(abs); os.IsNotExist(err) {
		return nil
	}
	mounts, err := mountsBelow(abs)
	if err != nil {
		return fmt.Errorf("not removing %s: cannot read the mount table to make sure no file system is mounted in it: %v", path, err)
	}
	var stuck []string
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			stuck = append(stuck, fmt.Sprintf("%s (%v)", m, err))
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("not removing %s: file systems are mounted in it and could not be unmounted: %s; unmount them (umount -l) and remove it", path, strings.Join(stuck, ", "))
	}
	if again, err := mountsBelow(abs); err != nil || len(again) > 0 {
		return fmt.Errorf("not removing %s: still mounted in it: %s", path, strings.Join(again, ", "))
	}
	return os.RemoveAll(abs)
}

// mountsBelow returns the mount points at or below dir, deepest first.
func mountsBelow(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil // no procfs: not Linux, nothing debootstrap mounted
		}
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		// ID parentID major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var n int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &n); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
