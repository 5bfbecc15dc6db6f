package clustertest

import (
	"testing"

	"github.com/groupquake/groupquake/harness/cluster"
)

// TestSharedKey: configurations that start the same cluster share one
// (the logger aside, settings in any order); any other difference starts
// another.
func TestSharedKey(t *testing.T) {
	base := cluster.Config{Version: "4.4.0", Nodes: 1, Settings: map[string]string{"a": "1", "b": "2"}}
	same := base
	same.Settings = map[string]string{"b": "2", "a": "1"}
	same.Logf = t.Logf
	if sharedKey(base) != sharedKey(same) {
		t.Errorf("equal configurations have different keys:\n%s\n%s", sharedKey(base), sharedKey(same))
	}
	for name, c := range map[string]cluster.Config{
		"version":  {Version: "4.1.2", Nodes: 1, Settings: base.Settings},
		"nodes":    {Version: "4.4.0", Nodes: 3, Settings: base.Settings},
		"setting":  {Version: "4.4.0", Nodes: 1, Settings: map[string]string{"a": "1", "b": "3"}},
		"settings": {Version: "4.4.0", Nodes: 1},
		"heap":     {Version: "4.4.0", Nodes: 1, Settings: base.Settings, HeapMB: 512},
	} {
		if sharedKey(c) == sharedKey(base) {
			t.Errorf("a different %s shares the key %s", name, sharedKey(base))
		}
	}
}
