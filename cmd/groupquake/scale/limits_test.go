package scale

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/internal/machine"
)

// TestCheckSize: classic members need a connection each, so the open-file
// limit bounds them on a cluster reached over TCP; on the embedded cluster
// they connect in process, and the open-file limit bounds its partitions
// only; consumer members share connections and are bounded by memory
// alone.
func TestCheckSize(t *testing.T) {
	m := machine.Machine{FDs: 10256, Memory: 2 << 30}
	for _, tc := range []struct {
		s    Sizes
		want string // "" holds
	}{
		{Sizes{Members: 10000, Partitions: 10, Protocols: []Protocol{Classic}, Conns: 8, Container: true}, ""},
		{Sizes{Members: 10001, Partitions: 10, Protocols: []Protocol{Classic}, Conns: 8, Container: true}, "--members 10001: at most 10000 classic members on this machine"},
		{Sizes{Members: 10000, Partitions: 10, Protocols: []Protocol{Classic}, Container: true}, ""},
		// A share member fetches on a connection of its own, as a classic member heartbeats on one.
		{Sizes{Members: 10001, Partitions: 10, Protocols: []Protocol{Share}, Conns: 8, Container: true}, "--members 10001: at most 10000 share members on this machine"},
		{Sizes{Members: 10001, Partitions: 10, Protocols: []Protocol{Classic, Share}, Conns: 8, Container: true}, "--members 10001: at most 10000 classic or share members on this machine"},
		{Sizes{Members: 10000, Partitions: 10, Protocols: []Protocol{Consumer, Classic}, Conns: 8, Embedded: true}, ""},
		{Sizes{Members: 16384, Partitions: 10, Protocols: []Protocol{Classic}, Embedded: true}, ""},
		{Sizes{Members: 10001, Partitions: 10, Protocols: []Protocol{Consumer}, Conns: 8, Container: true}, ""},
		{Sizes{Members: 100, Partitions: 10000, Protocols: []Protocol{Consumer}, Conns: 8, Embedded: true}, "--partitions 10000: at most 9997 on the embedded cluster"},
		{Sizes{Members: 100, Partitions: 4001, Protocols: []Protocol{Consumer}, Conns: 8, Container: true}, "--partitions 4001: at most 4000 on a container cluster"},
		{Sizes{Members: 20000, Partitions: 10, Protocols: []Protocol{Consumer}, Conns: 8, Container: true}, "--members 20000: at most 16384 on this machine"},
	} {
		err := CheckSize(tc.s, m)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v refused: %v", tc.s, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q…", tc.s, err, tc.want)
		}
	}
}
