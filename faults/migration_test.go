package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// replacer is a recorder whose members can be replaced.
type replacer struct{ recorder }

func (r *replacer) Replace(_ context.Context, out, in string) (string, error) {
	return "replaced", r.add("replace %s by %s", out, in)
}

func TestRollingReplace(t *testing.T) {
	sched, err := RollingReplace([]string{"m1", "m2"}, []string{"m3", "m4"}, 3*time.Second, 4*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range sched {
		got = append(got, f.String())
		if !f.Planned() || f.HoldsNode() || f.Family() != FamilyMigration {
			t.Errorf("%s: family %s, planned %t, holds a node %t", f, f.Family(), f.Planned(), f.HoldsNode())
		}
	}
	want := []string{"member-replace m1 by m3 at 3s for 1s", "member-replace m2 by m4 at 7s for 1s"}
	if !slices.Equal(got, want) {
		t.Errorf("schedule %q, want %q", got, want)
	}
	if in := Replacements(sched); !slices.Equal(in, []string{"m3", "m4"}) {
		t.Errorf("Replacements = %v", in)
	}

	r := &replacer{}
	e := env(&r.recorder, map[string]*recorder{})
	e.Members = r
	if _, err := Apply(context.Background(), sched[0], e); err != nil {
		t.Fatal(err)
	}
	if saw, err := Heal(context.Background(), sched[0], e); err != nil || saw != "" {
		t.Errorf("a replacement's heal undoes nothing: %q, %v", saw, err)
	}
	if !slices.Equal(r.calls, []string{"replace m1 by m3"}) {
		t.Errorf("calls %v", r.calls)
	}
	// Members that cannot be replaced: the step says what it lacks.
	if _, err := Apply(context.Background(), sched[0], env(&recorder{}, map[string]*recorder{})); err == nil || !strings.Contains(err.Error(), "members that can be replaced") {
		t.Errorf("Apply without a Replacer = %v", err)
	}

	for _, bad := range []struct {
		out, in []string
		says    string
	}{
		{[]string{"m1"}, []string{"m2", "m3"}, "as many newcomers"},
		{nil, nil, "as many newcomers"},
		{[]string{"m1"}, []string{"m1"}, "cannot replace itself"},
		{[]string{"m1"}, []string{""}, "needs the member that leaves and the one that replaces it"},
	} {
		if _, err := RollingReplace(bad.out, bad.in, 0, time.Second, time.Second); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("RollingReplace(%v, %v) = %v, want an error saying %q", bad.out, bad.in, err, bad.says)
		}
	}
}

// A migration step is placed by a plan: never drawn, never named in --faults.
func TestMigrationKindsNotDrawn(t *testing.T) {
	if slices.Contains(Kinds(), MemberReplace) {
		t.Errorf("Kinds() offers %s to the schedule", MemberReplace)
	}
	if _, err := ParseKinds(string(MemberReplace)); err == nil || !strings.Contains(err.Error(), "--scenario migration") {
		t.Errorf("ParseKinds(%s) = %v, want a pointer to the migration scenario", MemberReplace, err)
	}
}
