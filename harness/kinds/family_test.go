package kinds_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/groupquake/groupquake/harness/kinds"
)

// TestFamilies: every kind a command line can name is Default's or one
// family's, never two's (a name in two places would be added twice, or
// drawn by a seed and needed a machine's tools); each family says what it
// is and names exactly the kinds its registry holds.
func TestFamilies(t *testing.T) {
	owner := map[string]string{}
	for _, k := range kinds.Default().Names() {
		owner[k] = "Default"
	}
	fams := kinds.Families()
	if len(fams) < 6 {
		t.Fatalf("%d families registered, want the broken, Go client, Java, Python, share and Spring ones at least", len(fams))
	}
	for _, f := range fams {
		if f.Help == "" || len(f.Names) == 0 {
			t.Errorf("family %v: no help or no kinds", f.Names)
		}
		if got, want := slices.Sorted(maps.Keys(f.Registry())), slices.Sorted(slices.Values(f.Names)); !slices.Equal(got, want) {
			t.Errorf("family %q: registry holds %v, Names says %v", f.Help, got, want)
		}
		for _, k := range f.Names {
			if o, ok := owner[k]; ok {
				t.Errorf("kind %s is both %s's and %q's", k, o, f.Help)
			}
			owner[k] = f.Help
		}
	}
	if got := kinds.Known(); !slices.Equal(got, slices.Sorted(maps.Keys(owner))) {
		t.Errorf("Known() = %v, want the kinds of Default and of every family", got)
	}
}

// TestWithNamed: naming no family's kind changes nothing; naming kinds of
// families that need nothing of the machine adds exactly those.
func TestWithNamed(t *testing.T) {
	def := kinds.Default()
	same, err := def.WithNamed(context.Background(), []string{"classic", "mine"}, kinds.Env{})
	if err != nil || !slices.Equal(same.Names(), def.Names()) {
		t.Fatalf("WithNamed(classic, mine) = %v, %v; want the default kinds", same.Names(), err)
	}
	named := []string{"classic", "sarama-range", "broken-classic-stale-commit", "share", "sarama-range"}
	got, err := def.WithNamed(context.Background(), named, kinds.Env{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(append(def.Names(), "sarama-range", "broken-classic-stale-commit", "share")))
	if !slices.Equal(got.Names(), want) {
		t.Errorf("WithNamed(%v) = %v, want %v", named, got.Names(), want)
	}
	if len(def) != len(kinds.Default()) {
		t.Error("WithNamed changed the registry it was called on")
	}
}

// TestNoInstanceID: kafka-go, which has no group.instance.id, is the one
// kind a plan never makes static; the kinds whose client has one can be.
func TestNoInstanceID(t *testing.T) {
	for _, k := range kinds.Known() {
		why := kinds.NoInstanceID(k)
		if (k == "kafkago") != (why != "") {
			t.Errorf("NoInstanceID(%s) = %q", k, why)
		}
	}
	if kinds.NoInstanceID("mine") != "" {
		t.Error("a kind no registry knows has a reason not to be static")
	}
}
