package replay

import (
	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
)

// LoadGroup replays group's records of recs as State does and returns the
// coordinator it replayed them into.
func LoadGroup(p version.Profile, group string, recs []history.Record) (*coordinator.Coordinator, error) {
	c, _, _, err := load(p, recs, group, false)
	return c, err
}
