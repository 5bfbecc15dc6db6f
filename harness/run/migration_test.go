package run_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// A migration plan starts a classic group, keeps the newcomers out of the
// warm-up, and replaces each classic member by a consumer-protocol member,
// then each of those by a classic member, one at a time within the
// workload; every default kind of both protocols takes part.
func TestMigrationPlan(t *testing.T) {
	p := mustPlan(t, 5, run.Options{Scenario: run.ScenarioMigration, Embedded: true, Members: 2, MigrationPolicy: "upgrade"})
	var named, protos []string
	for _, m := range p.Members {
		named = append(named, m.Kind)
		protos = append(protos, m.Protocol)
		if m.InstanceID != "" {
			t.Errorf("member %s is static; a migration's members are dynamic", m.Name)
		}
	}
	if want := []string{"classic", "classic", "consumer", "consumer", "classic", "classic"}; !slices.Equal(protos, want) {
		t.Errorf("protocols %v, want %v", protos, want)
	}
	for _, k := range []string{"classic", "kgo-classic", "classic-cooperative", "consumer", "kgo-consumer"} {
		if !slices.Contains(named, k) {
			t.Errorf("kind %s takes no part in the migration (kinds %v)", k, named)
		}
	}
	var steps []string
	for _, f := range p.Faults {
		steps = append(steps, f.Member+">"+f.With)
		if f.Kind != faults.MemberReplace || f.At+f.For > p.Workload {
			t.Errorf("step %s: not a replacement, or it ends after the workload (%s)", f, p.Workload)
		}
	}
	if want := []string{"m1>m3", "m2>m4", "m3>m5", "m4>m6"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
	if cmd := p.Command(); !strings.Contains(cmd, "--scenario migration") || !strings.Contains(cmd, "--migration-policy upgrade") {
		t.Errorf("rerun command %q does not ask for the migration", cmd)
	}
	// The other way round: consumer → classic → consumer.
	back := mustPlan(t, 5, run.Options{Scenario: run.ScenarioMigration, Embedded: true, Members: 2, MigrationFrom: "consumer"})
	protos = nil
	for _, m := range back.Members {
		protos = append(protos, m.Protocol)
	}
	if want := []string{"consumer", "consumer", "classic", "classic", "consumer", "consumer"}; !slices.Equal(protos, want) {
		t.Errorf("from consumer: protocols %v, want %v", protos, want)
	}
	if cmd := back.Command(); !strings.Contains(cmd, "--migration-from consumer") {
		t.Errorf("rerun command %q does not say where the migration starts", cmd)
	}
	for _, bad := range []struct {
		o    run.Options
		says string
	}{
		{run.Options{Scenario: run.ScenarioMigration, MigrationPolicy: "sideways"}, `unknown migration policy "sideways"`},
		{run.Options{Scenario: run.ScenarioMigration, Kinds: []string{"classic", "kgo-classic"}}, "needs a classic kind and a consumer kind"},
		{run.Options{Scenario: run.ScenarioMigration, Members: 1}, "2 members or more"},
		{run.Options{Scenario: run.ScenarioMigration, Members: 2, Duration: 5e9}, "too short"},
		{run.Options{Scenario: run.ScenarioMigration, Kafka: "4.1.2", UpgradeTo: "4.4.0", Nodes: 3}, "separate runs"},
		{run.Options{Scenario: run.ScenarioMigration, MigrationFrom: "both"}, `unknown protocol "both" to migrate from`},
		{run.Options{Scenario: run.ScenarioChurn, MigrationFrom: "consumer"}, "needs --scenario migration"},
		{run.Options{Scenario: run.ScenarioChurn, MigrationStatic: true}, "needs --scenario migration"},
	} {
		if _, err := run.NewPlan(1, bad.o, kinds.Default().Kinds()); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("NewPlan(%+v) = %v, want an error saying %q", bad.o, err, bad.says)
		}
	}
}

// A static migration bounces each member into the other protocol and back
// under one group.instance.id: the members that take each other's place
// share it, the others do not.
func TestStaticMigrationPlan(t *testing.T) {
	p := mustPlan(t, 5, run.Options{Scenario: run.ScenarioMigration, Embedded: true, Members: 2, MigrationStatic: true})
	var ids []string
	for _, m := range p.Members {
		ids = append(ids, m.InstanceID)
	}
	i1, i2 := p.Group+"-i1", p.Group+"-i2"
	if want := []string{i1, i2, i1, i2, i1, i2}; !slices.Equal(ids, want) {
		t.Errorf("instance ids %v, want %v", ids, want)
	}
	for _, f := range p.Faults {
		if f.Kind != faults.MemberReplace {
			t.Errorf("step %s: a static migration without -faults has only replacements", f)
		}
	}
	if cmd := p.Command(); !strings.Contains(cmd, "--migration-static") {
		t.Errorf("rerun command %q does not ask for static members", cmd)
	}
	// Faults beside the steps: the nemesis's node faults are drawn on the
	// same workload, the steps stay.
	bf := mustPlan(t, 5, run.Options{Scenario: run.ScenarioMigration, Embedded: true, Members: 2, Faults: []faults.Kind{faults.NodeStop, faults.NodeKill, faults.NodePause}})
	var replace, node int
	for _, f := range bf.Faults {
		switch f.Family() {
		case faults.FamilyMigration:
			replace++
		case faults.FamilyNode:
			node++
		}
	}
	if replace != 4 || node == 0 {
		t.Errorf("a migration with node faults plans %d replacements and %d node faults, want 4 and some: %v", replace, node, bf.Faults)
	}
}

// What Kafka refuses and converts under each policy, step by step, both
// ways round.
func TestExpectMigration(t *testing.T) {
	const (
		gone = "GROUP_ID_NOT_FOUND"
		out  = "INCONSISTENT_GROUP_PROTOCOL"
	)
	for _, c := range []struct {
		policy, kafka, from string
		steps               []string
		final               string
	}{
		{"bidirectional", "4.4.0", "classic", []string{"", "", "", ""}, "classic"},
		{"", "4.1.2", "", []string{"", "", "", ""}, "classic"},
		{"upgrade", "4.4.0", "classic", []string{"", "", "", ""}, "consumer"},
		{"downgrade", "4.4.0", "classic", []string{gone, gone, "", ""}, "classic"},
		{"disabled", "4.1.2", "classic", []string{gone, gone, "", ""}, "classic"},
		{"disabled", "4.4.0", "classic", []string{gone, gone, "", ""}, "classic"},
		{"bidirectional", "4.1.2", "consumer", []string{"", "", "", ""}, "consumer"},
		{"upgrade", "4.4.0", "consumer", []string{"", "", "", ""}, "consumer"},
		{"downgrade", "4.1.2", "consumer", []string{"", "", gone, gone}, "classic"},
		{"disabled", "4.1.2", "consumer", []string{"", "", "", ""}, "consumer"},
		{"disabled", "4.4.0", "consumer", []string{out, out, "", ""}, "consumer"},
	} {
		w, err := run.ExpectMigration(c.policy, c.kafka, c.from, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w.Steps, c.steps) || w.Final != c.final || w.Why == "" {
			t.Errorf("ExpectMigration(%q, %s, from %q) = %q, final %s (%s); want %q, final %s", c.policy, c.kafka, c.from, w.Steps, w.Final, w.Why, c.steps, c.final)
		}
	}
	for _, bad := range [][2]string{{"sideways", "classic"}, {"upgrade", "both"}} {
		if _, err := run.ExpectMigration(bad[0], "4.4.0", bad[1], 2); err == nil {
			t.Errorf("ExpectMigration(%q, from %q) has an expectation", bad[0], bad[1])
		}
	}
	if _, err := run.ExpectMigration("upgrade", "4.9.9", "", 2); err == nil {
		t.Errorf("an unknown release has no expectation")
	}
}

// The steps are read back from the history, and every difference from the
// expectation is named: a refusal Kafka should not have made, a join it
// should have refused, a step that never completed, the wrong group type.
func TestCheckMigration(t *testing.T) {
	ev := func(typ history.Type, proc, out, in, effect string) history.Event {
		return history.Event{Type: typ, Process: proc, F: history.FFaultStart,
			Value: history.Fault{What: string(faults.MemberReplace), Target: []string{out}, Params: map[string]string{"with": in}, Effect: effect}}
	}
	events := []history.Event{
		ev(history.Invoke, "nemesis/0", "m1", "m3", ""),
		ev(history.OK, "nemesis/0", "m1", "m3", run.RefusedMark+"GROUP_ID_NOT_FOUND: m3 (consumer) refused"),
		ev(history.Invoke, "nemesis/1", "m2", "m4", ""),
		ev(history.OK, "nemesis/1", "m2", "m4", run.AdmittedMark+": m4 (kgo-consumer) joined"),
		ev(history.Invoke, "nemesis/2", "m3", "m5", ""),
		ev(history.OK, "nemesis/2", "m3", "m5", run.AdmittedMark+": m5 joined"),
		ev(history.Invoke, "nemesis/3", "m4", "m6", ""),
		ev(history.Info, "nemesis/3", "m4", "m6", "neither taken in nor refused"),
	}
	steps := run.MigrationSteps(events)
	if len(steps) != 4 || steps[0].Refused != "GROUP_ID_NOT_FOUND" || steps[1].Refused != "" || !steps[2].Done || steps[3].Done || steps[1].In != "m4" || steps[1].Out != "m2" {
		t.Fatalf("steps %+v", steps)
	}
	refused, _ := run.ExpectMigration("disabled", "4.4.0", "classic", 2)
	got := run.CheckMigration(steps, refused, &history.GroupDescription{Protocol: history.ProtocolConsumer})
	for _, says := range []string{
		"step 2: m4 was taken in", "step 4 (m4 by m6) did not complete", "a consumer group at the end, want a classic group",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, says) }) {
			t.Errorf("CheckMigration says %q, not %q", got, says)
		}
	}
	if len(got) != 3 {
		t.Errorf("CheckMigration = %q, want 3 differences", got)
	}
	both, _ := run.ExpectMigration("bidirectional", "4.4.0", "classic", 2)
	if got := run.CheckMigration(steps[:2], both, nil); len(got) != 3 || !strings.Contains(got[1], "step 1: m3 was refused with GROUP_ID_NOT_FOUND") {
		t.Errorf("CheckMigration = %q, want a missing step count, the refusal of m3, and no final description", got)
	}
	one, _ := run.ExpectMigration("bidirectional", "4.4.0", "classic", 1)
	ok := []run.MigrationStep{{Out: "m1", In: "m2", Done: true}, {Out: "m2", In: "m3", Done: true}}
	if got := run.CheckMigration(ok, one, &history.GroupDescription{Protocol: history.ProtocolClassic}); len(got) != 0 {
		t.Errorf("a migration as expected: %q", got)
	}
}
