package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check/checktest"
	"github.com/groupquake/groupquake/harness/history"
)

func TestClientOf(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]string{
		"classic":                     ClientGroupquake,
		"classic-cooperative":         ClientGroupquake,
		"consumer":                    ClientGroupquake,
		"kgo-classic":                 "kgo",
		"kgo-consumer":                "kgo",
		"java-classic":                "java",
		"java-classic-cooperative":    "java",
		"java-consumer-range":         "java",
		"broken-classic-ignore-fence": "broken",
		"broken-consumer-give-up":     "broken",
		// Kinds of one protocol, named without it.
		"sarama-range":      "sarama",
		"sarama-roundrobin": "sarama",
		"kafkago":           "kafkago",
		// A client of one protocol whose name has a dash: its kinds are one client.
		"confluent-python":             "confluent-python",
		"confluent-python-cooperative": "confluent-python",
		"confluent-python-consumer":    "confluent-python",
		"kafka-clients":                "kafka-clients",
		"sarama-cooperative-sticky":    "sarama",
		// groupquake's share member, and a broken one.
		"share":                     ClientGroupquake,
		"broken-share-ack-not-sent": "broken",
		// A client whose name has a dash, before the protocol.
		"spring-kafka-classic": "spring-kafka",
	} {
		if got := ClientOf(kind); got != want {
			t.Errorf("ClientOf(%q) = %q, want %q", kind, got, want)
		}
	}
}

// scoredHistory is a run of two members: m1 (a broken classic kind) and m2 (groupquake's
// consumer), a producer and the observer. It returns the events and the indexes the tests cite.
type scoredHistory struct {
	events                              []history.Event
	m1Owns, m2Owns, m1Hb, m2Commit      int64
	produced, described, m1Left, m2Back int64
}

func newScoredHistory(t *testing.T) scoredHistory {
	h := newHist(t)
	var s scoredHistory
	h.proto = history.ProtocolClassic
	s.m1Owns = h.assigned("m1", 1, 0, 1)
	s.m1Hb, _ = h.call("m1/hb", history.FHeartbeat, history.Heartbeat{Protocol: history.ProtocolClassic, Epoch: 1}, history.OK, history.Heartbeat{Protocol: history.ProtocolClassic, Epoch: 1})
	h.proto = history.ProtocolConsumer
	s.m2Owns = h.assigned("m2", 2, 1)
	s.m2Commit, _ = h.call("m2/commit", history.FCommit, history.Commit{Member: "m2", Epoch: 2}, history.OK, history.Commit{Member: "m2", Epoch: 2})
	_, s.produced = h.call("p0", history.FProduce, history.Produce{Topic: "t", Partition: 0, Seq: 1, Offset: -1}, history.OK, history.Produce{Topic: "t", Partition: 0, Seq: 1, Offset: 0, Acked: true})
	s.described = h.describe(stable(2))
	h.proto = history.ProtocolClassic
	s.m1Left = h.revoked("m1", 1, 0)
	h.proto = history.ProtocolConsumer
	s.m2Back = h.assigned("m2", 3, 0)
	s.events = h.events()
	return s
}

var scoredMembers = []RunMember{
	{Name: "m1", Kind: "broken-classic-ignore-fence", Protocol: history.ProtocolClassic},
	{Name: "m2", Kind: "consumer", Protocol: history.ProtocolConsumer},
}

// TestAttribute: a violation is charged to the members whose events it cites (a member's own
// processes count as the member's), to none when it cites only the producer's or the observer's
// events; a finding's match to the member it names; a partition stop to the member that resumed
// the partition, a member stop to its member.
func TestAttribute(t *testing.T) {
	t.Parallel()
	s := newScoredHistory(t)
	rep := Report{Verdicts: []Verdict{
		{Name: NameHistoryWellFormed, Holds: true},
		{Name: NameNoDoubleOwnership, Violations: []Violation{
			{Message: "both", EventIndexes: []int64{s.m1Owns, s.m2Owns}},
			{Message: "m1 alone, through its heartbeat process", EventIndexes: []int64{s.m1Hb}},
		}},
		{Name: NameNoLostRecords, Violations: []Violation{{Message: "lost", EventIndexes: []int64{s.produced}}}},
		{Name: NameEventuallyConverges, Violations: []Violation{{Message: "known bug x: m2", EventIndexes: []int64{s.described, s.m2Commit}, Finding: "x"}},
			Known: []Known{{Finding: "x", Member: "m2", Failed: true}, {Finding: "y", Events: []int64{s.m1Left}}, {Finding: "z", Events: []int64{s.described}}}},
		{Name: "RecoveredStateMatchesLog", Holds: true, Skipped: "no snapshot"},
	}, RebalanceCost: &Cost{Protocols: map[string]*ProtocolCost{
		history.ProtocolConsumer: {Stops: []Stop{
			{Partition: "t-0", Duration: 2 * time.Second, EventIndexes: []int64{s.m1Left, s.m2Back}},
			{Partition: "t-1", Duration: time.Second, EventIndexes: []int64{s.m1Left, s.produced}}, // resumed by no member
		}},
		history.ProtocolClassic: {Stops: []Stop{{Member: "m1", Duration: 3 * time.Second}, {Member: "gone", Duration: time.Hour}}},
	}}}
	a := Attribute(s.events, scoredMembers, rep)
	got := func(cs []Charge) string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s:%s%v", c.Checker, c.Finding, c.Members))
		}
		return strings.Join(out, " ")
	}
	if want := "NoDoubleOwnership:[m1 m2] NoDoubleOwnership:[m1] NoLostRecords:[] EventuallyConverges:x[m2]"; got(a.Violations) != want {
		t.Errorf("violations charged as\n %s\nwant\n %s", got(a.Violations), want)
	}
	if want := "EventuallyConverges:x[m2] EventuallyConverges:y[m1] EventuallyConverges:z[]"; got(a.Known) != want {
		t.Errorf("findings charged as\n %s\nwant\n %s", got(a.Known), want)
	}
	if a.Hold != 1 || a.Violated != 3 || a.Skipped != 1 {
		t.Errorf("tally %d hold, %d violated, %d skipped; want 1, 3, 1", a.Hold, a.Violated, a.Skipped)
	}
	var pauses []string
	for _, p := range a.Pauses {
		pauses = append(pauses, fmt.Sprintf("%s/%s/%s", p.Member, p.Partition, p.Duration))
	}
	if want := "m1//3s m2/t-0/2s"; strings.Join(pauses, " ") != want {
		t.Errorf("pauses %v, want %s (classic's member stop of m1, the partition stop m2 ended; none of a member not in the plan nor one no member ended)", pauses, want)
	}
}

// TestBuildScorecard: a run counts in the cell of each client it ran; a violation that concerns two
// clients is charged to each and counted as shared; one that concerns only the other client is not
// in this client's cell; one of no member is every cell's run-level violation; by kind, the rows are
// kinds.
func TestBuildScorecard(t *testing.T) {
	t.Parallel()
	s := newScoredHistory(t)
	broken := Report{Verdicts: []Verdict{
		{Name: NameNoDoubleOwnership, Violations: []Violation{{Message: "both", EventIndexes: []int64{s.m1Owns, s.m2Owns}}}},
		{Name: NameEventuallyConverges, Violations: []Violation{{Message: "m1 only", EventIndexes: []int64{s.m1Hb, s.described}}}},
		{Name: NameNoLostRecords, Violations: []Violation{{Message: "lost", EventIndexes: []int64{s.produced}}}},
		{Name: NameDurableCommits, Holds: true},
	}, RebalanceCost: &Cost{Protocols: map[string]*ProtocolCost{history.ProtocolClassic: {Stops: []Stop{
		{Member: "m1", Duration: 3 * time.Second}, {Member: "m2", Duration: time.Second}, {Member: "m2", Duration: 5 * time.Second}, {Member: "m2", Duration: 2 * time.Second},
	}}}}}
	clean := Report{Holds: true, Verdicts: []Verdict{{Name: NameNoDoubleOwnership, Holds: true}, {Name: NameDurableCommits, Holds: true, Skipped: "why"}}}
	runs := []ScoredRun{
		{Dir: "r1", Kafka: "4.4.0", Scenario: "member-links", Attribution: Attribute(s.events, scoredMembers, broken)},
		{Dir: "r2", Kafka: "4.4.0", Scenario: "member-links", Attribution: Attribute(s.events, scoredMembers[1:], clean)},
		{Dir: "r3", Kafka: "4.10.0", Scenario: "member-links", Attribution: Attribute(s.events, scoredMembers[1:], clean)},
		{Dir: "r4", Err: "missing plan.json"},
	}
	sc := BuildScorecard(runs, ByClient)
	if sc.Runs != 3 || sc.Hold != 2 || sc.Violated != 1 || !slices.Equal(sc.Unreadable, []string{"r4"}) {
		t.Fatalf("totals: %d runs, %d hold, %d violated, unreadable %v", sc.Runs, sc.Hold, sc.Violated, sc.Unreadable)
	}
	var keys []string
	for _, c := range sc.Cells {
		keys = append(keys, c.Client+"/"+c.Kafka)
	}
	if want := "broken/4.4.0 groupquake/4.10.0 groupquake/4.4.0"; strings.Join(keys, " ") != want {
		t.Fatalf("cells %v, want %s (by client, the newest Kafka first)", keys, want)
	}
	b, g := sc.Cells[0], sc.Cells[2]
	if b.Runs != 1 || b.RunsViolated != 1 || b.Charged != 2 || b.Shared != 1 || b.RunLevel != 1 || b.RunsCharged != 1 ||
		b.Checkers[NameNoDoubleOwnership] != 1 || b.Checkers[NameEventuallyConverges] != 1 || b.Hold != 1 || b.Violated != 3 {
		t.Errorf("the broken client's cell: %+v", b)
	}
	if g.Runs != 2 || g.RunsHold != 1 || g.RunsViolated != 1 || g.Charged != 1 || g.Shared != 1 || g.RunLevel != 1 || g.RunsCharged != 1 ||
		g.Checkers[NameEventuallyConverges] != 0 || g.Hold != 2 || g.Violated != 3 || g.Skipped != 1 {
		t.Errorf("groupquake's cell (m2, innocent of m1's convergence): %+v", g)
	}
	var gv []string
	for _, v := range g.Violations {
		gv = append(gv, fmt.Sprintf("%s:%s%v", v.Dir, v.Checker, v.Clients))
	}
	if want := "r1:NoDoubleOwnership[broken groupquake] r1:NoLostRecords[]"; strings.Join(gv, " ") != want {
		t.Errorf("groupquake's violations %v, want %s", gv, want)
	}
	if g.MemberPauses.Count != 3 || g.MemberPauses.P50 != 2*time.Second || g.MemberPauses.Max != 5*time.Second || b.MemberPauses.Max != 3*time.Second {
		t.Errorf("member pauses: groupquake %+v, broken %+v", g.MemberPauses, b.MemberPauses)
	}
	if !slices.Equal(g.Kinds, []string{"consumer"}) || !slices.Equal(b.Kinds, []string{"broken-classic-ignore-fence"}) {
		t.Errorf("kinds: %v, %v", g.Kinds, b.Kinds)
	}

	byKind := BuildScorecard(runs, ByKind)
	keys = nil
	for _, c := range byKind.Cells {
		keys = append(keys, c.Client+":"+c.Kind+"/"+c.Kafka)
	}
	if want := "broken:broken-classic-ignore-fence/4.4.0 groupquake:consumer/4.10.0 groupquake:consumer/4.4.0"; strings.Join(keys, " ") != want {
		t.Errorf("cells by kind %v, want %s", keys, want)
	}
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	vs := []string{"embedded 4.4.0", "4.1.2", "4.10.0", "", "4.4.0", "external"}
	slices.SortFunc(vs, compareVersions)
	if want := []string{"4.10.0", "4.4.0", "4.1.2", "", "embedded 4.4.0", "external"}; !slices.Equal(vs, want) {
		t.Errorf("sorted %q, want %q", vs, want)
	}
}

// TestEventMember: a pause is charged to the member its event's payload names, for every payload
// that names one, and else to the event's process.
func TestEventMember(t *testing.T) {
	for _, v := range []any{
		history.Consume{Member: "named"}, history.Assignment{Member: "named"}, history.Membership{Member: "named"},
		history.Join{Member: "named"}, history.Sync{Member: "named"}, history.Heartbeat{Member: "named"},
		history.Leave{Member: "named"}, history.Commit{Member: "named"},
	} {
		if got := eventMember(history.Event{Process: "proc/join", Value: v}); got != "named" {
			t.Errorf("%T: charged to %q, want the member it names", v, got)
		}
	}
	if got := eventMember(history.Event{Process: "proc/fault", Value: history.Fault{}}); got != "proc" {
		t.Errorf("a fault: charged to %q, want its process proc", got)
	}
}

// scoredTestdata judges the recorded run dir (harness/check's testdata) and attributes it to the
// members of its plan, as the scorecard reads a run directory.
func scoredTestdata(t *testing.T, dir, kafka, scenario string) ScoredRun {
	t.Helper()
	events, obs, plan := loadRun(t, dir)
	var members []RunMember
	for _, m := range checktest.ReadPlan(t, dir).Members {
		members = append(members, RunMember{Name: m.Name, Kind: m.Kind, Protocol: m.Protocol})
	}
	return ScoredRun{Dir: dir, Kafka: kafka, Scenario: scenario, Attribution: Attribute(events, members, Judge(events, obs, plan))}
}

// TestScorecardSightedWithoutViolation: the freeze seed's run holds and sights
// kafka-deposed-coordinator-group-id-not-found: the cell of the client whose member the sighting
// names counts it as sighted without a violation (EventuallyConverges noted it too: a match, not a
// violation), the other client's cell does not. The static-rejoin run's finding is labelled on its violation: a match of
// the client it is charged to, never sighted without a violation.
func TestScorecardSightedWithoutViolation(t *testing.T) {
	t.Parallel()
	freeze := scoredTestdata(t, freezeSeed, "4.4.0", "combined")
	rejoin := scoredTestdata(t, staticRejoin, "4.4.0", "broker-faults")
	if len(freeze.Sighted) == 0 || len(rejoin.Sighted) != 0 {
		t.Fatalf("sighted without a violation: freeze %+v, static rejoin %+v; want the freeze run's only", freeze.Sighted, rejoin.Sighted)
	}
	id := FindingDeposedGroupIDNotFound
	sightedBy := map[string]bool{}
	for _, s := range freeze.Sighted {
		if s.Finding != id || len(s.Members) != 1 || s.Message == "" {
			t.Fatalf("freeze run's sighting %+v, want %s charged to the member it names", s, id)
		}
		sightedBy[ClientOf(kindOf(freeze.Members, s.Members[0]))] = true
	}
	sc := BuildScorecard([]ScoredRun{freeze, rejoin}, ByClient)
	seen := 0
	for _, c := range sc.Cells {
		where := c.Row() + "/" + c.Scenario
		switch {
		case c.Scenario == "combined" && sightedBy[c.Client]:
			seen++
			if c.Sighted[id] != 1 || len(c.Sighted) != 1 || len(c.Sightings) == 0 || c.Sightings[0].Dir != freezeSeed || c.Sightings[0].Finding != id ||
				len(c.Sightings[0].Clients) != 1 || c.Sightings[0].Clients[0] != c.Client {
				t.Errorf("%s: sighted %v, sightings %+v; want %s once, from %s", where, c.Sighted, c.Sightings, id, freezeSeed)
			}
		case len(c.Sighted) != 0 || len(c.Sightings) != 0:
			t.Errorf("%s: sighted %v, sightings %+v; want none (the finding is not its client's, or is labelled on a violation)", where, c.Sighted, c.Sightings)
		}
		if c.Scenario == "broker-faults" && c.Client == ClientGroupquake && c.Findings[FindingStaticRejoinOwnInstance] == 0 {
			t.Errorf("%s: the static rejoin's match is not counted: %v", where, c.Findings)
		}
	}
	if seen != 1 {
		t.Errorf("%d cells show the sighting, want 1 (clients %v)", seen, sightedBy)
	}
}

func kindOf(members []RunMember, name string) string {
	for _, m := range members {
		if m.Name == name {
			return m.Kind
		}
	}
	return ""
}

// TestScorecardCutShort: a run that stopped before its end (killed, interrupted) with no violation
// up to there is counted cut short, in the totals and in its cells, never as holding (it was:
// its report holds); one with a violation up to there is violated.
func TestScorecardCutShort(t *testing.T) {
	t.Parallel()
	s := newScoredHistory(t)
	killed := Report{Holds: true, Stopped: "was killed, or ended by an error, in its workload phase (begun at 1s; last event 9, at 2s)",
		Verdicts: []Verdict{{Name: NameNoDoubleOwnership, Holds: true}}}
	red := Report{Stopped: "was interrupted by SIGINT in its workload phase at 3s (event 20)",
		Verdicts: []Verdict{{Name: NameNoLostRecords, Violations: []Violation{{Message: "lost", EventIndexes: []int64{s.produced}}}}}}
	whole := Report{Holds: true, Verdicts: []Verdict{{Name: NameNoDoubleOwnership, Holds: true}}}
	a := Attribute(s.events, scoredMembers[1:], killed)
	if a.Holds || !a.CutShort {
		t.Fatalf("a killed run with no violation: holds %v, cut short %v; want cut short, not holding", a.Holds, a.CutShort)
	}
	runs := []ScoredRun{
		{Dir: "k", Kafka: "4.4.0", Scenario: "member-links", Attribution: a},
		{Dir: "v", Kafka: "4.4.0", Scenario: "member-links", Attribution: Attribute(s.events, scoredMembers[1:], red)},
		{Dir: "w", Kafka: "4.4.0", Scenario: "member-links", Attribution: Attribute(s.events, scoredMembers[1:], whole)},
	}
	sc := BuildScorecard(runs, ByClient)
	if sc.Runs != 3 || sc.Hold != 1 || sc.CutShort != 1 || sc.Violated != 1 {
		t.Fatalf("totals: %d runs, %d hold, %d cut short, %d violated; want 3, 1, 1, 1", sc.Runs, sc.Hold, sc.CutShort, sc.Violated)
	}
	if c := sc.Cells[0]; len(sc.Cells) != 1 || c.RunsHold != 1 || c.RunsCutShort != 1 || c.RunsViolated != 1 {
		t.Errorf("cells: %+v", sc.Cells)
	}
}
