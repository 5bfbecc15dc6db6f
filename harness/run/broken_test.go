package run_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// A seed never draws a broken kind: they are not in kinds.Default, and
// WithBroken adds only the ones named.
func TestBrokenKindsOnlyWhenNamed(t *testing.T) {
	t.Parallel()
	def := kinds.Default()
	for _, k := range kinds.BrokenKinds() {
		if _, ok := def[k.Name]; ok {
			t.Errorf("%s is in kinds.Default: a seed could draw it", k.Name)
		}
		if _, ok := def[k.Unbroken]; !ok {
			t.Errorf("%s breaks %q, which is not a default kind", k.Name, k.Unbroken)
		}
		if k.Catches == "" || k.Bug == "" {
			t.Errorf("%s does not say its bug and the checker that catches it", k.Name)
		}
	}
	for seed := range uint64(200) {
		p := mustPlan(t, seed, run.Options{Kafka: "4.4.0"})
		for _, m := range p.Members {
			if strings.HasPrefix(m.Kind, "broken-") {
				t.Fatalf("seed %d drew %s", seed, m.Kind)
			}
		}
	}
	name := kinds.BrokenKinds()[0].Name
	reg := def.WithBroken([]string{"classic", name})
	if got, want := reg.Names(), append(def.Names(), name); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("WithBroken(classic, %s) has %v, want the default kinds and %s", name, got, name)
	}
	if f := reg[name]; !strings.Contains(f.Doc, "BROKEN") || !strings.Contains(f.Doc, kinds.BrokenKinds()[0].Catches) {
		t.Errorf("%s's doc does not say it is broken and what catches it: %q", name, f.Doc)
	}
	if len(def.WithBroken(nil)) != len(def) {
		t.Error("WithBroken(nil) added kinds")
	}
}
