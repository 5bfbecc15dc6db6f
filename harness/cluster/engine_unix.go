//go:build unix

package cluster

import (
	"os"
	"strconv"
	"syscall"
)

// detached puts a started daemon in its own session so that Ctrl-C on the
// harness does not stop the engine other runs share.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// keepInheritedFiles marks the files this process inherited (descriptors 3
// and up that are not close-on-exec) close-on-exec, so that a daemon it
// starts does not hold them. Go opens its own files close-on-exec; an
// inherited one is not, and dockerd started by `flock LOCK make test` held
// LOCK for as long as it ran, so every later `flock LOCK` waited for ever.
func keepInheritedFiles() {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				syscall.CloseOnExec(fd)
			}
		}
		return
	}
}
