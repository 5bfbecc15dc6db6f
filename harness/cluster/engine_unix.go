//go:build unix

package cluster

import "syscall"

// detached puts a started daemon in its own session so that Ctrl-C on the
// harness does not stop the engine other runs share.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
