// Package machine reads what this machine gives groupquake, for the sizes a
// command refuses before it starts anything (docs/interrupts.md, Limits):
// how many files this process may open and how much memory it may use.
package machine

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Machine is what this process may use.
type Machine struct {
	// FDs is this process's open-file limit (ulimit -n). Go raises the
	// soft limit to the hard one when the process starts, so this is the
	// hard limit unless the soft one could not be raised.
	FDs uint64
	// Memory is the memory this process may use, in bytes: the machine's
	// (MemTotal), or its cgroup's limit (memory.max) when that is lower.
	Memory uint64
}

// This reads the machine this process runs on. What cannot be read is
// left at a generous value, so that nothing is refused for want of it.
func This() Machine {
	m := Machine{FDs: 1 << 20, Memory: 1 << 40}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 {
		m.FDs = rl.Cur
	}
	if total := memTotal(); total > 0 {
		m.Memory = total
	}
	if lim := cgroupMemory(); lim > 0 && lim < m.Memory {
		m.Memory = lim
	}
	return m
}

func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupMemory is the memory limit of this process's cgroup (v2's
// memory.max, or v1's memory.limit_in_bytes), 0 when there is none.
func cgroupMemory() uint64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var file string
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			file = "/sys/fs/cgroup" + path + "/memory.max"
		} else if _, rest, ok := strings.Cut(line, ":memory:"); ok {
			file = "/sys/fs/cgroup/memory" + rest + "/memory.limit_in_bytes"
		} else {
			continue
		}
		v, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(v)), 10, 64)
		if err != nil || n >= 1<<62 {
			continue // "max", or v1's "no limit"
		}
		return n
	}
	return 0
}

// GiB formats bytes in GiB, one decimal.
func GiB(b uint64) string {
	return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
}

// ResidentSet is this process's resident set size now, in bytes
// (/proc/self/statm), or 0 where it cannot be read.
func ResidentSet() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// HeapInUse is the bytes of this process's Go heap in use now.
func HeapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
