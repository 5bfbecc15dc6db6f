package run_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

func mustPlan(t *testing.T, seed uint64, o run.Options) run.Plan {
	t.Helper()
	p, err := run.NewPlan(seed, o, kinds.Default().Kinds())
	if err != nil {
		t.Fatalf("NewPlan(%d, %+v): %v", seed, o, err)
	}
	return p
}

func planJSON(t *testing.T, p run.Plan) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlanSameSeedSamePlan(t *testing.T) {
	t.Parallel()
	for _, sc := range run.Scenarios() {
		for _, seed := range []uint64{0, 1, 42, 1 << 62} {
			o := run.Options{Scenario: sc, Kafka: "4.4.0"}
			a, b := mustPlan(t, seed, o), mustPlan(t, seed, o)
			if planJSON(t, a) != planJSON(t, b) {
				t.Errorf("scenario %s seed %d: two plans differ:\n%s\n%s", sc, seed, planJSON(t, a), planJSON(t, b))
			}
		}
	}
}

func TestPlanDifferentSeedDifferentPlan(t *testing.T) {
	t.Parallel()
	for _, sc := range run.Scenarios() {
		seen := map[string]uint64{}
		for seed := uint64(1); seed <= 50; seed++ {
			p := mustPlan(t, seed, run.Options{Scenario: sc})
			// Names embed the seed; compare what the seed chose beyond them.
			p.Seed, p.Group, p.Topics[0].Name = 0, "", ""
			s := planJSON(t, p)
			if prev, dup := seen[s]; dup {
				t.Errorf("scenario %s: seeds %d and %d give the same choices: %s", sc, prev, seed, s)
			}
			seen[s] = seed
		}
	}
}

// TestPlanStreamsIndependent checks that the per-concern streams are
// independent: fixing the members (a different topology choice) does not
// change the fault schedule's randomness, only what it is applied to.
func TestPlanStreamsIndependent(t *testing.T) {
	t.Parallel()
	a := mustPlan(t, 7, run.Options{Scenario: run.ScenarioMemberLinks, Members: 3, Partitions: 4})
	b := mustPlan(t, 7, run.Options{Scenario: run.ScenarioMemberLinks, Members: 3, Partitions: 5})
	if !reflect.DeepEqual(a.Faults, b.Faults) {
		t.Errorf("changing the partition count changed the fault schedule:\n%v\n%v", a.Faults, b.Faults)
	}
	if !reflect.DeepEqual(a.Members, b.Members) {
		t.Errorf("changing the partition count changed the members:\n%v\n%v", a.Members, b.Members)
	}
}

func TestPlanOptions(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, 3, run.Options{Kinds: []string{"kgo-classic", "kgo-consumer"}, Members: 3, Partitions: 4, Duration: 5 * time.Second, Rate: 10})
	if got := len(p.Members); got != 3 {
		t.Fatalf("%d members, want 3", got)
	}
	for i, want := range []string{"kgo-classic", "kgo-consumer", "kgo-classic"} {
		if p.Members[i].Kind != want {
			t.Errorf("member %d is %s, want %s", i, p.Members[i].Kind, want)
		}
	}
	if p.Members[1].Protocol != "consumer" || p.Protocol() != "consumer" {
		t.Errorf("a group with a kgo-consumer member is a consumer group: member protocol %q, group %q", p.Members[1].Protocol, p.Protocol())
	}
	if p.Topics[0].Partitions != 4 || p.Workload != 5*time.Second || p.Producers[0].Rate != 10 {
		t.Errorf("options not applied: %+v", p)
	}
	if len(p.Faults) != 0 {
		t.Errorf("baseline has faults: %v", p.Faults)
	}
	// The rerun command rebuilds the same plan.
	args := p.Args()
	if !strings.Contains(strings.Join(args, " "), "--seed 3 ") {
		t.Errorf("args %v lack the seed", args)
	}
	for _, bad := range []run.Options{
		{Scenario: "earthquake"},
		{Kinds: []string{"kgo-classic", "java"}},
		{Nodes: 2},
		{Controllers: 2},
		{Embedded: true, Nodes: 3},
		{Embedded: true, Controllers: 1},
		{Duration: -time.Second},
	} {
		if _, err := run.NewPlan(1, bad, kinds.Default().Kinds()); err == nil {
			t.Errorf("NewPlan accepted %+v", bad)
		}
	}
}

func TestPlanFaultsInsideWorkload(t *testing.T) {
	t.Parallel()
	n := 0
	for seed := uint64(0); seed < 200; seed++ {
		p := mustPlan(t, seed, run.Options{Scenario: run.ScenarioMemberLinks})
		for _, f := range p.Faults {
			n++
			if f.At < 0 || f.For <= 0 || f.At+f.For > p.Workload {
				t.Errorf("seed %d: fault %s does not end inside the workload phase (%s)", seed, f, p.Workload)
			}
		}
	}
	if n == 0 {
		t.Error("200 seeds of member-links scheduled no fault")
	}
}

// A plan goes through plan.json unchanged: a scenario's, and one of every
// fault kind --faults may name, with the kind's parameters.
func TestLoadPlanRoundTrip(t *testing.T) {
	t.Parallel()
	plans := []run.Plan{mustPlan(t, 99, run.Options{Scenario: run.ScenarioMemberLinks})}
	for _, k := range faults.Kinds() {
		p := mustPlan(t, 99, run.Options{Scenario: run.ScenarioMemberLinks, Nodes: 3, Members: 3, Duration: 30 * time.Second, Faults: []faults.Kind{k}})
		if !slices.ContainsFunc(p.Faults, func(f faults.Fault) bool { return f.Kind == k }) {
			t.Errorf("--faults %s drew no fault of its kind: %v", k, p.Faults)
		}
		plans = append(plans, p)
	}
	for i, p := range plans {
		path := filepath.Join(t.TempDir(), run.PlanFile)
		b, _ := json.Marshal(p)
		if err := writeFile(path, b); err != nil {
			t.Fatal(err)
		}
		q, err := run.LoadPlan(path)
		if err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
		if planJSON(t, p) != planJSON(t, q) {
			t.Errorf("plan changed through plan.json:\n%s\n%s", planJSON(t, p), planJSON(t, q))
		}
	}
}

// The fault options: a user's list of kinds and an intensity shape the
// schedule, are saved in the rerun command, and bad values are refused
// with errors that say what was wrong.
func TestPlanFaultOptions(t *testing.T) {
	t.Parallel()
	protocols := kinds.Default().Kinds()
	count := map[string]int{}
	for seed := range uint64(40) {
		for _, in := range []string{"low", "high"} {
			p := mustPlan(t, seed, run.Options{Scenario: run.ScenarioCombined, Nodes: 3, Members: 3, Duration: 30 * time.Second, Intensity: in})
			count[in] += len(p.Faults)
		}
		p := mustPlan(t, seed, run.Options{Scenario: run.ScenarioMemberLinks, Members: 3, Faults: []faults.Kind{faults.MemberCrash, faults.LinkCut}})
		for _, f := range p.Faults {
			if f.Kind != faults.MemberCrash && f.Kind != faults.LinkCut {
				t.Errorf("seed %d: --faults member-crash,link-cut drew %s", seed, f)
			}
		}
		if !strings.Contains(p.Command(), "--faults link-cut,member-crash") && !strings.Contains(p.Command(), "--faults member-crash,link-cut") {
			t.Errorf("rerun command %q lacks --faults", p.Command())
		}
	}
	if count["high"] <= 2*count["low"] {
		t.Errorf("high intensity drew %d faults over 40 seeds, low %d: high should draw several times more", count["high"], count["low"])
	}
	for name, tc := range map[string]struct {
		o    run.Options
		want string
	}{
		"unknown fault kind":   {run.Options{Scenario: run.ScenarioChurn, Faults: []faults.Kind{"node-melt"}}, "node-melt"},
		"intensity not a rate": {run.Options{Scenario: run.ScenarioChurn, Intensity: "extreme"}, "extreme"},
		"churn on one member":  {run.Options{Scenario: run.ScenarioChurn, Members: 1}, "two members"},
		"node faults external": {run.Options{Scenario: run.ScenarioBrokerFaults, Bootstrap: []string{"127.0.0.1:9092"}}, "--bootstrap"},
	} {
		_, err := run.NewPlan(1, tc.o, protocols)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewPlan(%+v) = %v, want an error naming %q", name, tc.o, err, tc.want)
		}
	}
}

// Late joiners stay out of the warm-up; members the nemesis churns are
// members of the plan; some members are static under faults, none in the
// baseline.
func TestPlanChurn(t *testing.T) {
	t.Parallel()
	var late, static, churn int
	for seed := range uint64(100) {
		p := mustPlan(t, seed, run.Options{Scenario: run.ScenarioChurn, Duration: 30 * time.Second})
		late += len(faults.LateJoiners(p.Faults))
		for _, f := range p.Faults {
			if f.Family() == faults.FamilyChurn {
				churn++
			}
		}
		for _, m := range p.Members {
			if m.InstanceID != "" {
				static++
			}
		}
		for _, m := range mustPlan(t, seed, run.Options{}).Members {
			if m.InstanceID != "" {
				t.Errorf("seed %d: baseline member %s is static", seed, m.Name)
			}
		}
	}
	if late == 0 || static == 0 || churn == 0 {
		t.Errorf("100 churn seeds drew %d late joiners, %d static members, %d churn faults: want some of each", late, static, churn)
	}
}

// TestPlanJavaJVMs: the shared layout of the Java members' JVMs is kept in
// the plan and its rerun command; the default is left out of both; a
// layout without Java members or of an unknown name is refused.
func TestPlanJavaJVMs(t *testing.T) {
	t.Parallel()
	protocols := kinds.Default().Kinds()
	protocols["java-consumer"] = "consumer"
	o := run.Options{Embedded: true, Kinds: []string{"java-consumer", "consumer"}, JavaJVMs: kinds.JavaJVMsShared}
	p, err := run.NewPlan(5, o, protocols)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"java_jvms":"shared"`) || !strings.Contains(p.Command(), " --java-jvms shared ") {
		t.Errorf("the shared layout is not kept: plan %s; rerun %s", b, p.Command())
	}
	o.JavaJVMs = kinds.JavaJVMsPerMember
	if p, err = run.NewPlan(5, o, protocols); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(p); strings.Contains(string(b), "java_jvms") || strings.Contains(p.Command(), "--java-jvms") {
		t.Errorf("the default layout is written out: plan %s; rerun %s", b, p.Command())
	}
	for _, bad := range []run.Options{
		{Embedded: true, Kinds: []string{"consumer"}, JavaJVMs: kinds.JavaJVMsShared},
		{Embedded: true, Kinds: []string{"java-consumer"}, JavaJVMs: "pooled"},
	} {
		if _, err := run.NewPlan(1, bad, protocols); err == nil || !strings.Contains(err.Error(), "--java-jvms") {
			t.Errorf("NewPlan(%+v) = %v, want an error naming --java-jvms", bad, err)
		}
	}
}

// A plan is written in format 1 unless it is saved: a saved plan (Saved,
// added in format 2) is format 2, which a groupquake that reads format 1
// refuses instead of carrying it out as its seed's plan. Both read back.
func TestPlanFormatOfSavedPlans(t *testing.T) {
	p, err := run.NewPlan(7, run.Options{Embedded: true}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	saved := p
	saved.Saved = &run.SavedPlan{File: "/x/plan.json", ShrunkFrom: "/r", Kept: []int{0}}
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		p      run.Plan
		format int
	}{{"ordinary", p, 1}, {"saved", saved, 2}} {
		b, err := json.Marshal(c.p)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Format int `json:"format"`
		}
		if err := json.Unmarshal(b, &head); err != nil || head.Format != c.format {
			t.Errorf("%s plan written with format %d (%v), want %d", c.name, head.Format, err, c.format)
		}
		f := filepath.Join(dir, c.name+".json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := run.LoadPlan(f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Format != c.format || (c.p.Saved != nil) != (got.Saved != nil) || got.Command() != c.p.Command() {
			t.Errorf("%s plan read back as format %d, saved %+v, command %q", c.name, got.Format, got.Saved, got.Command())
		}
	}
	newer := filepath.Join(dir, "newer.json")
	b, _ := json.Marshal(saved)
	os.WriteFile(newer, bytes.Replace(b, []byte(`"format":2`), []byte(`"format":3`), 1), 0o644)
	if _, err := run.LoadPlan(newer); err == nil || !strings.Contains(err.Error(), "plan format 3 is newer") {
		t.Errorf("a format 3 plan: %v, want it refused", err)
	}
}
