package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestJavaMapOrderMatchesAssignor cross-checks javaMap against the
// assignor package's independent HashMap emulation for maps built by puts
// only, at sizes that cross resizes.
func TestJavaMapOrderMatchesAssignor(t *testing.T) {
	for n := 1; n <= 100; n += 7 {
		m := newJavaMap[int]()
		var ids []string
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("consumer-%d-%08x", i, i*2654435761)
			ids = append(ids, id)
			m.put(id, i)
		}
		if got, want := m.ordered(), assignor.JavaHashMapOrder(ids); !slices.Equal(got, want) {
			t.Fatalf("n=%d: javaMap order %v, assignor.JavaHashMapOrder %v", n, got, want)
		}
	}
}

// TestJavaMapRemoveKeepsTable: a HashMap does not shrink, so removals keep
// the order of the remaining keys.
func TestJavaMapRemoveKeepsTable(t *testing.T) {
	m := newJavaMap[int]()
	for i := 0; i < 20; i++ {
		m.put(fmt.Sprint(i), i)
	}
	before := m.ordered()
	for i := 0; i < 20; i += 2 {
		m.remove(fmt.Sprint(i))
	}
	want := slices.DeleteFunc(before, func(k string) bool { return !m.has(k) })
	if got := m.ordered(); !slices.Equal(got, want) {
		t.Fatalf("after removals: %v, want %v", got, want)
	}
}

func TestConfigValidation(t *testing.T) {
	p := version.V4_4_0.Profile()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{InitialRebalanceDelay: -time.Second}, "InitialRebalanceDelay is -1s"},
		{Config{MinSessionTimeout: 1500 * time.Microsecond}, "whole milliseconds"},
		{Config{MaxGroupSize: -1}, "MaxGroupSize is -1"},
		{Config{Share: ShareConfig{HeartbeatInterval: -time.Second}}, "Share.HeartbeatInterval is -1s"},
		{Config{Share: ShareConfig{AssignmentInterval: func() *time.Duration { d := 1500 * time.Microsecond; return &d }()}}, "Share.AssignmentInterval is 1.5ms"},
		{Config{MinSessionTimeout: time.Hour, MaxSessionTimeout: time.Minute}, "exceeds MaxSessionTimeout"},
	} {
		_, err := New(p, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(p, DefaultConfig()); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
}

func TestSequentialIDs(t *testing.T) {
	var s SequentialIDs
	if a, b := s.NewID(), s.NewID(); a != "00000000-0000-0000-0000-000000000001" || b != "00000000-0000-0000-0000-000000000002" {
		t.Fatalf("ids %s, %s", a, b)
	}
}
