package scale

import (
	"fmt"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/internal/machine"
)

// The sizes a scale run may have on a machine: `groupquake scale` refuses
// larger ones before it starts anything (docs/interrupts.md, Limits).
const (
	// MaxContainerPartitions: Kafka's guidance is at most 4,000 partitions
	// a broker, and every broker holds a replica of every partition here.
	MaxContainerPartitions = 4000
	// fdsReserve is what this process opens besides the members'
	// connections (listeners, the admin client, the Docker client).
	fdsReserve = 256
	// memberBytes is a lightweight member's memory in this process, with
	// headroom over what was measured (docs/measurements/scale.md: 7 KB a
	// consumer member, 15 KB a classic one, resident).
	memberBytes = 64 << 10
)

// Sizes is what a scale command asks for.
type Sizes struct {
	Members    int // the largest group
	Partitions int
	Protocols  []Protocol
	Conns      int  // the most shared connections of the consumer members to one broker (0: light.MaxShared)
	Embedded   bool // every partition's log is in this process (and the broker's side of every connection, in process)
	Container  bool
}

// CheckSize refuses sizes the machine m cannot take; the error says the
// limit, why and what to do, and starts with the flag.
func CheckSize(s Sizes, m machine.Machine) error {
	if s.Container && s.Partitions > MaxContainerPartitions {
		return fmt.Errorf("--partitions %d: at most %d on a container cluster (every broker holds a replica of every partition, and Kafka's guidance is at most 4,000 partitions a broker); give at most %d", s.Partitions, MaxContainerPartitions, MaxContainerPartitions)
	}
	// A member's connection takes a file descriptor on a cluster reached
	// over TCP; on the embedded cluster the members connect in process
	// (cluster.Embedded.DialContext), without one.
	parts := uint64(0)
	if s.Embedded {
		parts = uint64(s.Partitions) + 3
		if need := fdsReserve + parts; need > m.FDs {
			most := m.FDs - fdsReserve - 3
			return fmt.Errorf("--partitions %d: at most %d on the embedded cluster on this machine (it keeps every partition's log open, and this process may open %d files (ulimit -n)); give at most %d, or raise the limit (ulimit -n)", s.Partitions, most, m.FDs, most)
		}
	} else {
		conns := uint64(s.Conns)
		if conns == 0 {
			conns = light.MaxShared
		}
		// A classic member has a connection of its own; so has a share
		// member, for its fetches.
		var own []string
		for _, p := range []Protocol{Classic, Share} {
			if slices.Contains(s.Protocols, p) {
				own = append(own, string(p))
			}
		}
		if len(own) > 0 {
			conns = max(conns, uint64(s.Members)) // one connection each
		}
		if need := fdsReserve + conns; need > m.FDs {
			most := m.FDs - fdsReserve
			return fmt.Errorf("--members %d: at most %d %s members on this machine (each has a connection of its own, and this process may open %d files (ulimit -n)); give at most %d, use --protocol consumer (its members share connections), or raise the limit (ulimit -n)", s.Members, most, strings.Join(own, " or "), m.FDs, most)
		}
	}
	if half := m.Memory / 2; uint64(s.Members)*memberBytes > half {
		most := half / memberBytes
		return fmt.Errorf("--members %d: at most %d on this machine (a member takes up to %d KB of this process, and half this machine's memory is %s); give at most %d", s.Members, most, memberBytes>>10, machine.GiB(half), most)
	}
	return nil
}
