package check

import (
	"slices"
	"strings"
	"testing"
)

// TestRegistryOrder: Checkers are in the order of their places, the
// history's own checker first, every consumer-group checker before every
// share-group one, and For picks by group.
func TestRegistryOrder(t *testing.T) {
	if len(Checkers) == 0 || Checkers[0].Name != NameHistoryWellFormed {
		t.Fatalf("the first checker must be %s: %v", NameHistoryWellFormed, names(Checkers))
	}
	for i := 1; i < len(Checkers); i++ {
		if Checkers[i-1].Place >= Checkers[i].Place {
			t.Errorf("%s (place %d) before %s (place %d)", Checkers[i-1].Name, Checkers[i-1].Place, Checkers[i].Name, Checkers[i].Place)
		}
		if Checkers[i-1].Groups == ShareGroups && Checkers[i].Groups&ConsumerGroups != 0 {
			t.Errorf("share checker %s before consumer checker %s", Checkers[i-1].Name, Checkers[i].Name)
		}
	}
	for _, g := range []Groups{ConsumerGroups, ShareGroups} {
		got := For(g)
		if len(got) < 2 || got[0].Name != NameHistoryWellFormed {
			t.Errorf("For(%d) = %v: want the history's checker first and the group's own after it", g, names(got))
		}
		for _, c := range got {
			if c.Groups&g == 0 {
				t.Errorf("For(%d) holds %s, which judges %d", g, c.Name, c.Groups)
			}
		}
	}
	if n := len(For(ConsumerGroups)) + len(For(ShareGroups)) - 1; n != len(Checkers) {
		t.Errorf("every checker judges consumer or share groups, and only the history's both: %d ≠ %d", n, len(Checkers))
	}
}

// TestRegisterRefuses: a second checker of one name or one place, or one
// without its sentence or judgement, stops the program at its start.
func TestRegisterRefuses(t *testing.T) {
	saved := Checkers
	defer func() { Checkers = saved }()
	judge := func(*judging) Verdict { return Verdict{} }
	for name, c := range map[string]Checker{
		"name taken":   {Name: NameNoDoubleOwnership, Place: 9999, Groups: ConsumerGroups, Asserts: "x", judge: judge},
		"place taken":  {Name: "Fresh", Place: Checkers[1].Place, Groups: ConsumerGroups, Asserts: "x", judge: judge},
		"no sentence":  {Name: "Fresh", Place: 9999, Groups: ConsumerGroups, judge: judge},
		"no judgement": {Name: "Fresh", Place: 9999, Groups: ConsumerGroups, Asserts: "x"},
		"no groups":    {Name: "Fresh", Place: 9999, Asserts: "x", judge: judge},
	} {
		Checkers = slices.Clone(saved)
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: registered", name)
				}
			}()
			register(c)
		}()
	}
	Checkers = slices.Clone(saved)
	register(Checker{Name: "Between", Place: Checkers[1].Place + 1, Groups: ConsumerGroups, Asserts: "x", judge: judge})
	if Checkers[2].Name != "Between" {
		t.Errorf("a checker registered between two places lands between them: %v", names(Checkers))
	}
}

func names(cs []Checker) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

// TestCheckerFile: each checker names the file it registers itself in.
func TestCheckerFile(t *testing.T) {
	for name, want := range map[string]string{NameHistoryWellFormed: "all.go", NameNoDoubleOwnership: "ownership.go", NameShareStateMatchesLog: "share_state.go"} {
		c, ok := Named(name)
		if !ok || c.File() != want {
			t.Errorf("%s: file %q, want %q", name, c.File(), want)
		}
	}
}
