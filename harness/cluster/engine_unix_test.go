//go:build unix

package cluster

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestKeepInheritedFiles: a descriptor opened without close-on-exec (as a
// file inherited from `flock` is) reaches a child until keepInheritedFiles
// marks it; after, the child does not see it.
func TestKeepInheritedFiles(t *testing.T) {
	fd, err := syscall.Open(t.TempDir(), syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	childSees := func() bool {
		out, err := exec.Command("sh", "-c", "ls /proc/self/fd 2>/dev/null || ls /dev/fd").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Fields(string(out)) {
			if f == strconv.Itoa(fd) {
				return true
			}
		}
		return false
	}
	if !childSees() {
		t.Fatalf("a child did not inherit descriptor %d opened without close-on-exec: the test cannot tell", fd)
	}
	keepInheritedFiles()
	if childSees() {
		t.Errorf("descriptor %d still reaches a child after keepInheritedFiles", fd)
	}
}
