package check

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// TestFindingsRegistry: every finding has an id used once, says where it
// lives, where it was seen, what a history must show and what a run does
// with a match, has one reproducer (or says why none), and is written up
// under its id in docs/findings.md.
func TestFindingsRegistry(t *testing.T) {
	doc, err := os.ReadFile("../../docs/findings.md")
	if err != nil {
		t.Fatalf("docs/findings.md: %v", err)
	}
	seen := map[string]bool{}
	for _, x := range Findings() {
		if x.ID == "" || seen[x.ID] {
			t.Errorf("finding %q: empty or repeated id", x.ID)
		}
		seen[x.ID] = true
		if x.Title == "" || x.Where == "" || len(x.Seen) == 0 || x.Evidence == "" {
			t.Errorf("%s: title, where, seen and evidence are required: %+v", x.ID, x)
		}
		if x.Kind != Bug && x.Kind != Behaviour {
			t.Errorf("%s: kind %q", x.ID, x.Kind)
		}
		if x.Kind == Behaviour && x.Noted != "" {
			t.Errorf("%s: a behaviour is always noted; Noted is for bugs", x.ID)
		}
		r := x.Reproducer
		n := 0
		for _, set := range []bool{r.Vector != nil, r.Plan != nil, r.None != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: one reproducer (vector, plan, or why none), got %+v", x.ID, r)
		}
		if x.stalls != nil && (!x.Fails() || len(x.explains) == 0) {
			t.Errorf("%s: a finding that stalls a group labels the violations of the checkers it explains, so it must name them and fail the run", x.ID)
		}
		if x.loss == nil && x.overlap == nil && x.pair == nil && x.seen == nil && r.None == "" {
			t.Errorf("%s: nothing in a history matches it, and it has a reproducer that could not say whether it reproduced", x.ID)
		}
		if !regexp.MustCompile(`(?m)^## .*` + regexp.QuoteMeta("`"+x.ID+"`")).Match(doc) {
			t.Errorf("%s: docs/findings.md has no section headed with `%s`", x.ID, x.ID)
		}
		if got, ok := FindingByID(x.ID); !ok || got.ID != x.ID {
			t.Errorf("FindingByID(%q) = %v, %v", x.ID, got.ID, ok)
		}
	}
	if _, ok := FindingByID("no-such-finding"); ok {
		t.Error("FindingByID found a finding that is not registered")
	}
}

// selfRejoin writes the history of the seed-268778 run, small: a owns both
// partitions; b, static with instance id ib, sends its joining heartbeat
// as member id b, which the coordinator applied but whose answer was lost
// (a node killed); b resends it, same member id, epoch 0, and is refused
// UNRELEASED_INSTANCE_ID (why: the answer's message as the member recorded
// it); b stops for good. before writes what comes before b's first join.
func selfRejoin(t *testing.T, before func(h *hist), firstJoin history.Type, why string) (h *hist, refused int64) {
	h = newHist(t)
	h.phase(history.PhaseWorkload)
	h.joinHb("a", 1)
	h.assigned("a", 1, 0, 1)
	if before != nil {
		before(h)
	}
	join := history.Heartbeat{Member: "b", MemberID: "b", InstanceID: "ib", Protocol: history.ProtocolConsumer}
	if firstJoin != "" {
		h.call("b/hb", history.FHeartbeat, join, firstJoin, join)
	}
	no := join
	no.Error = "UNRELEASED_INSTANCE_ID"
	h.add(history.Event{Type: history.Invoke, Process: "b/hb", F: history.FHeartbeat, Value: join})
	refused = h.add(history.Event{Type: history.Fail, Process: "b/hb", F: history.FHeartbeat, Value: no, Why: why})
	h.info("b", history.FStopped, history.Membership{Member: "b", Epoch: -1, Error: "fatal heartbeat error UNRELEASED_INSTANCE_ID"})
	return h, refused
}

// endRun writes the heal, the quiesce's description and the final marker
// naming a and b, with the final group's members.
func endRun(h *hist, members ...string) *history.Observations {
	h.phase(history.PhaseHeal)
	g := stableGroup(2, members...)
	h.describe(g)
	h.info("harness", history.FPhase, history.Phase{Name: history.PhaseFinal, Members: []string{"a", "b"}})
	return &history.Observations{Final: history.Snapshot{Group: g, Time: h.now}}
}

func TestStaticRejoinOwnInstanceFails(t *testing.T) {
	t.Parallel()
	mustBeFinding := func(t *testing.T, v Verdict, refused int64) {
		t.Helper()
		x := mustCite(t, v, refused)
		if x.Finding != FindingStaticRejoinOwnInstance || !strings.Contains(x.Message, "known bug "+FindingStaticRejoinOwnInstance) {
			t.Fatalf("violation not labelled %s: %+v", FindingStaticRejoinOwnInstance, x)
		}
		if !hasKnown(v, FindingStaticRejoinOwnInstance, true) {
			t.Fatalf("known: %+v", v.Known)
		}
		if len(v.Violations) != 1 {
			t.Fatalf("one violation for one refusal, got %+v", v.Violations)
		}
		// Each refusal names its own answer, so two refusals of one
		// member read as two violations, not one line twice.
		if want := fmt.Sprintf("refused UNRELEASED_INSTANCE_ID (event %d)", refused); !strings.Contains(x.Message, want) {
			t.Fatalf("message does not name the refused answer (%q): %s", want, x.Message)
		}
	}
	t.Run("the retry of a join whose answer was lost", func(t *testing.T) {
		h, refused := selfRejoin(t, nil, history.Info, "")
		obs := endRun(h, "a")
		mustBeFinding(t, EventuallyConverges(h.events(), obs, convergePlan()), refused)
	})
	t.Run("a join never answered at all", func(t *testing.T) {
		h := newHist(t)
		h.joinHb("a", 1)
		h.assigned("a", 1, 0, 1)
		join := history.Heartbeat{Member: "b", MemberID: "b", InstanceID: "ib", Protocol: history.ProtocolConsumer}
		h.add(history.Event{Type: history.Invoke, Process: "b/hb2", F: history.FHeartbeat, Value: join}) // never completed
		no := join
		no.Error = "UNRELEASED_INSTANCE_ID"
		_, refused := h.call("b/hb", history.FHeartbeat, join, history.Fail, no)
		obs := endRun(h, "a")
		mustBeFinding(t, EventuallyConverges(h.events(), obs, convergePlan()), refused)
	})
	t.Run("the rejoin after FENCED_MEMBER_EPOCH", func(t *testing.T) {
		h, refused := selfRejoin(t, func(h *hist) {
			hb := history.Heartbeat{Member: "b", MemberID: "b", InstanceID: "ib", Protocol: history.ProtocolConsumer}
			ok := hb
			ok.ResultEpoch = 2
			h.call("b/hb", history.FHeartbeat, hb, history.OK, ok)
			hb.Epoch = 2
			fenced := hb
			fenced.Error = "FENCED_MEMBER_EPOCH"
			h.call("b/hb", history.FHeartbeat, hb, history.Fail, fenced)
		}, "", "")
		obs := endRun(h, "a")
		mustBeFinding(t, EventuallyConverges(h.events(), obs, convergePlan()), refused)
	})
	t.Run("the member back later under a new member id still fails the run", func(t *testing.T) {
		h, refused := selfRejoin(t, nil, history.Info, "")
		// A supervisor restarts b; its old self expired, so b2 takes ib.
		h.wait(time.Minute)
		join := history.Heartbeat{Member: "b", MemberID: "b2", InstanceID: "ib", Protocol: history.ProtocolConsumer}
		ok := join
		ok.ResultEpoch = 3
		h.call("b/hb", history.FHeartbeat, join, history.OK, ok)
		obs := endRun(h, "a", "b2")
		mustBeFinding(t, EventuallyConverges(h.events(), obs, convergePlan()), refused)
	})
	t.Run("the message naming the member itself is enough", func(t *testing.T) {
		h, refused := selfRejoin(t, nil, "", "fatal heartbeat error UNRELEASED_INSTANCE_ID: Static member b with instance id ib cannot join the group because the instance id is owned by b member.; the member stops")
		obs := endRun(h, "a")
		mustBeFinding(t, EventuallyConverges(h.events(), obs, convergePlan()), refused)
	})
}

func TestStaticRejoinOwnInstanceNotMatched(t *testing.T) {
	t.Parallel()
	// Each of these is Kafka's static membership as designed: another
	// member id holds the instance id (a restart that sent no leave), or
	// may. The loss then fails as an unexplained one, without the label.
	//
	// b0Joins: member id b0 joins with b's instance id.
	b0Joins := func(h *hist) {
		hb := history.Heartbeat{Member: "b", MemberID: "b0", InstanceID: "ib", Protocol: history.ProtocolConsumer}
		ok := hb
		ok.ResultEpoch = 2
		h.call("b/hb", history.FHeartbeat, hb, history.OK, ok)
	}
	for _, tc := range []struct {
		name   string
		before func(h *hist)
		first  history.Type
		why    string
	}{
		{"another member id holds the instance id", b0Joins, "", ""},
		{"another member id may still hold it: the member's lost join may have been refused", b0Joins, history.Info, ""},
		{"the message names another owner", nil, history.Info,
			"fatal heartbeat error UNRELEASED_INSTANCE_ID: Static member b with instance id ib cannot join the group because the instance id is owned by b0 member."},
		{"no call could have registered the member", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, refused := selfRejoin(t, tc.before, tc.first, tc.why)
			obs := endRun(h, "a")
			v := EventuallyConverges(h.events(), obs, convergePlan())
			x := mustCite(t, v, refused)
			if x.Finding != "" || len(v.Known) != 0 {
				t.Fatalf("matched a finding it is not: %+v, known %+v", x, v.Known)
			}
			mustSay(t, x, "member b stopped for good")
			if s := Sightings(h.events(), obs, convergePlan()); len(s) != 0 {
				t.Fatalf("sightings: %+v", s)
			}
		})
	}
}

func TestKnownLossShare(t *testing.T) {
	t.Parallel()
	h, _, obs := membershipHist(t, "GROUP_ID_NOT_FOUND", 40*time.Second)
	ev := h.events()
	v := EventuallyConverges(ev, obs, convergePlan())
	mustHold(t, v)
	if len(v.Known) != 1 {
		t.Fatalf("known: %+v", v.Known)
	}
	k := v.Known[0]
	var lossT time.Duration
	for _, e := range ev {
		if hb, ok := e.Value.(history.Heartbeat); ok && hb.Error == "GROUP_ID_NOT_FOUND" && e.Type == history.Fail {
			lossT = e.Time
		}
	}
	// No workload marker: the run's span starts at its first event.
	span := obs.Final.Time - ev[0].Time
	if k.Member != "b" || k.Without != obs.Final.Time-lossT || k.Share != float64(k.Without)/float64(2*span) || k.Failed {
		t.Fatalf("known %+v; want b without it for %v over 2 × %v", k, obs.Final.Time-lossT, span)
	}
	mustNote(t, v, "of the run's member-seconds")
}

// kgoOverlap: m1 owns t-0 at epoch 1; its heartbeat is answered as hbType;
// after stall, m2 is given t-0 at epoch 2; m1 revokes it later.
func kgoOverlap(t *testing.T, hbType history.Type, stall time.Duration) []history.Event {
	h := newHist(t)
	h.assigned("m1", 1, 0)
	hb := history.Heartbeat{Member: "m1", MemberID: "m1", Protocol: history.ProtocolConsumer, Epoch: 1}
	done := hb
	if hbType == history.OK {
		done.ResultEpoch = 1
	}
	h.call("m1/hb", history.FHeartbeat, hb, hbType, done)
	h.wait(stall)
	h.assigned("m2", 2, 0)
	h.revoked("m1", 1, 0)
	return h.events()
}

func TestKgoRevokeAfterLostIsLabelled(t *testing.T) {
	t.Parallel()
	verdict := func(ev []history.Event, kind string) Verdict {
		p := convergePlan()
		p.Kinds = map[string]string{"m1": kind, "m2": "consumer"}
		for _, v := range Judge(ev, nil, p).Verdicts {
			if v.Name == "NoDoubleOwnership" {
				return v
			}
		}
		t.Fatal("no NoDoubleOwnership verdict")
		return Verdict{}
	}
	// Its last heartbeat unanswered, or answered longer than the session
	// (10 s) before: seed 233280483793606687's m3 sent none for 20 s.
	for _, hb := range []history.Type{history.Info, history.OK} {
		v := verdict(kgoOverlap(t, hb, 20*time.Second), "kgo-consumer")
		if v.Holds || len(v.Violations) != 1 || v.Violations[0].Finding != FindingKgoRevokeAfterLost || !hasKnown(v, FindingKgoRevokeAfterLost, true) {
			t.Fatalf("heartbeat %s: want one violation labelled %s: %+v", hb, FindingKgoRevokeAfterLost, v)
		}
	}
	// The same overlap by another client, or with a heartbeat answered
	// within the session, is not kgo's finding: unexplained.
	for _, tc := range []struct {
		kind  string
		hb    history.Type
		stall time.Duration
	}{{"consumer", history.Info, 20 * time.Second}, {"kgo-consumer", history.OK, 2 * time.Second}} {
		v := verdict(kgoOverlap(t, tc.hb, tc.stall), tc.kind)
		if v.Holds || v.Violations[0].Finding != "" || len(v.Known) != 0 {
			t.Fatalf("%s, heartbeat %s: want an unlabelled violation: %+v", tc.kind, tc.hb, v)
		}
	}
}

func TestKgoStaticLeaveSighted(t *testing.T) {
	t.Parallel()
	h := newHist(t)
	leave := history.Leave{Member: "m1", MemberID: "x", Protocol: history.ProtocolConsumer, Epoch: -2}
	refused := leave
	refused.Error = "INVALID_REQUEST"
	_, at := h.call("m1/hb", history.FLeave, leave, history.Info, refused)
	for _, tc := range []struct {
		kind string
		want bool
	}{{"kgo-consumer", true}, {"consumer", false}} {
		p := convergePlan()
		p.Kinds = map[string]string{"m1": tc.kind}
		s := Judge(h.events(), nil, p).Findings
		got := slices.ContainsFunc(s, func(s Sighting) bool {
			return s.Finding == FindingKgoStaticLeave && slices.Contains(s.Events, at)
		})
		if got != tc.want {
			t.Fatalf("%s: sighted %v, want %v: %+v", tc.kind, got, tc.want, s)
		}
	}
}

// TestKnownJSONInSeconds: a match's time without its member is written in
// seconds, as every duration groupquake writes, and read back the same.
func TestKnownJSONInSeconds(t *testing.T) {
	k := Known{Finding: "f", Member: "m1", Failed: true, Without: 1500 * time.Millisecond, Share: 0.25}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"without_s":1.5`) {
		t.Fatalf("marshalled %s: want without_s 1.5", b)
	}
	var back Known
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Without != k.Without || back.Member != k.Member || !back.Failed || back.Share != k.Share {
		t.Fatalf("read back %+v, want %+v", back, k)
	}
}

// orphanHist writes the seed-3402275953908376783 run (Kafka 4.1.2), small:
// a owns both partitions; m3 (classic) is told MEMBER_ID_REQUIRED and
// rejoins as x, a JoinGroup the coordinator applies (x gets partition 1 as
// its target) but cannot commit within offsets.commit.timeout.ms (a
// replica of __consumer_offsets killed); m3 crashes before the answer
// (EOF) and starts again as a new member, y; the faults heal. answered
// makes x's JoinGroup answered before the crash, comeback makes m3 come
// back as x, and quiet is how long after the heal the group is described.
func orphanHist(t *testing.T, answered, comeback bool, quiet time.Duration, listsX bool, work ...func(h *hist)) (h *hist, obs *history.Observations, joinX, lostX int64) {
	h = newHist(t)
	h.phase(history.PhaseWorkload)
	h.joinHb("a", 1)
	h.assigned("a", 1, 0, 1)
	for _, w := range work {
		w(h)
	}
	h.call("m3/join", history.FJoin, history.Join{Member: "m3", Generation: -1}, history.Fail, history.Join{Member: "m3", Generation: -1, Error: "MEMBER_ID_REQUIRED"})
	asX := history.Join{Member: "m3", MemberID: "x", Generation: -1}
	if answered {
		joinX, lostX = h.call("m3/join", history.FJoin, asX, history.OK, history.Join{Member: "m3", MemberID: "x", Generation: 4})
	} else {
		eof := asX
		eof.Error = "EOF"
		joinX, lostX = h.call("m3/join", history.FJoin, asX, history.Info, eof)
	}
	if comeback {
		h.call("m3/join", history.FJoin, asX, history.OK, history.Join{Member: "m3", MemberID: "x", Generation: 5})
	} else {
		h.call("m3/join", history.FJoin, history.Join{Member: "m3", Generation: -1}, history.Fail, history.Join{Member: "m3", Generation: -1, Error: "MEMBER_ID_REQUIRED"})
		h.call("m3/join", history.FJoin, history.Join{Member: "m3", MemberID: "y", Generation: -1}, history.OK, history.Join{Member: "m3", MemberID: "y", Generation: 5})
	}
	h.phase(history.PhaseHeal)
	h.wait(quiet)
	g := &history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Reconciling", GroupEpoch: 9, AssignmentEpoch: 9, Members: []history.MemberDescription{
		{MemberID: "a", MemberType: "consumer", MemberEpoch: 9, Assignment: []history.TP{{Topic: "t", Partition: 0}}},
		{MemberID: "y", MemberType: "classic", MemberEpoch: 9},
	}}
	if listsX {
		g.Members = append(g.Members, history.MemberDescription{MemberID: "x", MemberType: "classic", MemberEpoch: 4, TargetAssignment: []history.TP{{Topic: "t", Partition: 1}}})
	}
	h.describe(g)
	h.phase(history.PhaseFinal)
	obs = &history.Observations{Final: history.Snapshot{Label: "final", Time: h.now, Group: g}}
	return h, obs, joinX, lostX
}

// TestClassicJoinOrphanSighted: the orphan is sighted, from the final
// observation and from the last describe alike, with the JoinGroup and its
// lost answer; not when the group no longer lists it, when its JoinGroup
// was answered (its timers run), when m3 came back as x, or when the group
// was described within a session and a rebalance timeout of the heal.
func TestClassicJoinOrphanSighted(t *testing.T) {
	t.Parallel()
	plan := convergePlan() // session 10 s, rebalance 20 s
	for _, tc := range []struct {
		name                       string
		answered, comeback, listsX bool
		quiet                      time.Duration
		want                       bool
	}{
		{name: "the run: no answer, never back, listed long after", listsX: true, quiet: 60 * time.Second, want: true},
		{name: "expired: no longer listed", quiet: 60 * time.Second},
		{name: "answered: its timers run", answered: true, listsX: true, quiet: 60 * time.Second},
		{name: "came back as x", comeback: true, listsX: true, quiet: 60 * time.Second},
		{name: "described within session and rebalance of the heal", listsX: true, quiet: 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, obs, joinX, lostX := orphanHist(t, tc.answered, tc.comeback, tc.quiet, tc.listsX)
			for _, o := range []*history.Observations{obs, nil} {
				s := Sightings(h.events(), o, plan)
				got := slices.ContainsFunc(s, func(s Sighting) bool {
					return s.Finding == FindingClassicJoinOrphan && s.Member == "m3" && slices.Equal(s.Events, []int64{joinX, lostX})
				})
				if got != tc.want {
					t.Fatalf("final observation %v: sighted %v, want %v: %+v", o != nil, got, tc.want, s)
				}
				if len(s) != 0 && !tc.want {
					t.Fatalf("sightings: %+v", s)
				}
			}
			// A sighting labels; it decides no verdict.
			if v := EventuallyConverges(h.events(), obs, plan); tc.want && v.Holds {
				t.Fatalf("EventuallyConverges holds over a group Reconciling at the end: %+v", v)
			}
		})
	}
}

// TestClassicJoinOrphanLabelsLostRecords: NoLostRecords labels with the
// orphan finding the records of the orphan's target partition past the
// last one consumed (nobody consumes them), and nothing else: a record of
// another partition, or one below what was consumed of the orphan's, stays
// unexplained; without the orphan every loss is unexplained.
func TestClassicJoinOrphanLabelsLostRecords(t *testing.T) {
	t.Parallel()
	plan := convergePlan()
	var tail, below, other []int64
	work := func(h *hist) {
		below = []int64{h.produce(1, 0)} // lost, though offset 1 was consumed
		h.produce(1, 1)
		h.consume("a", 1, 1, 1)
		tail = []int64{h.produce(1, 2), h.produce(1, 3)}
		other = []int64{h.produce(0, 0)}
	}
	for _, listsX := range []bool{true, false} {
		h, obs, _, _ := orphanHist(t, false, false, 60*time.Second, listsX, work)
		rep := Judge(h.events(), obs, plan)
		var v Verdict
		for _, x := range rep.Verdicts {
			if x.Name == NameNoLostRecords {
				v = x
			}
		}
		labelled := map[int64]string{}
		for _, x := range v.Violations {
			labelled[x.EventIndexes[0]] = x.Finding
		}
		if len(labelled) != 4 {
			t.Fatalf("orphan listed %v: %d lost records, want 4: %+v", listsX, len(labelled), v.Violations)
		}
		for _, i := range tail {
			if want := map[bool]string{true: FindingClassicJoinOrphan}[listsX]; labelled[i] != want {
				t.Errorf("orphan listed %v: tail record at event %d labelled %q, want %q", listsX, i, labelled[i], want)
			}
		}
		for _, i := range append(below, other...) {
			if labelled[i] != "" {
				t.Errorf("orphan listed %v: record at event %d labelled %q, want unexplained", listsX, i, labelled[i])
			}
		}
	}
}

// TestClassicJoinOrphanLabelsConvergence: EventuallyConverges labels with
// the orphan finding a partition with no owner that the coordinator holds
// as the orphan's target, and a group unstable only because of orphans
// behind; a partition with no owner of another's target, or another
// member behind, stays unexplained.
func TestClassicJoinOrphanLabelsConvergence(t *testing.T) {
	t.Parallel()
	plan := convergePlan()
	verdictOf := func(h *hist, obs *history.Observations) Verdict {
		for _, x := range Judge(h.events(), obs, plan).Verdicts {
			if x.Name == NameEventuallyConverges {
				return x
			}
		}
		t.Fatal("no EventuallyConverges verdict")
		return Verdict{}
	}
	labels := func(v Verdict) (known, unexplained int) {
		for _, x := range v.Violations {
			if x.Finding == FindingClassicJoinOrphan {
				known++
			} else {
				unexplained++
			}
		}
		return known, unexplained
	}
	// a gives t-1 up; the coordinator holds it for the orphan x.
	revokeT1 := func(h *hist) { h.revoked("a", 1, 1) }
	h, obs, _, _ := orphanHist(t, false, false, 60*time.Second, true, revokeT1)
	if k, u := labels(verdictOf(h, obs)); k != 2 || u != 0 {
		t.Fatalf("orphan holds t-1 and is behind: %d known, %d unexplained, want 2 and 0: %+v", k, u, verdictOf(h, obs))
	}
	// Without the orphan in the group, the same history is unexplained.
	h, obs, _, _ = orphanHist(t, false, false, 60*time.Second, false, revokeT1)
	if k, u := labels(verdictOf(h, obs)); k != 0 || u == 0 {
		t.Fatalf("no orphan: %d known, %d unexplained, want 0 and some", k, u)
	}
	// Another member behind beside the orphan: the instability is not the
	// orphan's alone.
	h, obs, _, _ = orphanHist(t, false, false, 60*time.Second, true)
	obs.Final.Group.Members[1].MemberEpoch = 8
	v := verdictOf(h, obs)
	if k, u := labels(v); u != 1 || k != 0 {
		t.Fatalf("y behind too: %d known, %d unexplained, want 0 and 1: %+v", k, u, v)
	}
}

// TestKafkagoSubscriptionStall: in a group mixing kafka-go with another
// client, members' errors about a subscription they could not read sight
// the kafka-go finding; only when one comes after the heal does the finding
// label the violations of the checkers it explains, never another
// checker's and never one already labelled. A kafka-go group of its own, or
// another error after the heal, labels nothing.
func TestKafkagoSubscriptionStall(t *testing.T) {
	t.Parallel()
	malformed := map[string]any{"member": "m3", "error": "member groupquake-m1-1: malformed consumer protocol subscription (26 bytes, version 1): response did not contain enough data to be valid"}
	unreadable := map[string]any{"member": "m1", "error": "unable to read metadata for member, groupquake-m3-1: %!w(<nil>)"}
	other := map[string]any{"member": "m1", "error": "read tcp: i/o timeout"}
	mixed := map[string]string{"m1": "kafkago", "m2": "kafkago", "m3": "classic"}
	alone := map[string]string{"m1": "kafkago", "m2": "kafkago", "m3": "kafkago"}
	for _, tc := range []struct {
		name      string
		kinds     map[string]string
		afterHeal map[string]any
		sighted   int
		labelled  bool
	}{
		{"mixed, still refused after the heal", mixed, unreadable, 2, true},
		{"mixed, refused only before the heal", mixed, nil, 1, false},
		{"mixed, another error after the heal", mixed, other, 1, false},
		{"kafka-go alone", alone, unreadable, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(t)
			h.info("harness", history.FPhase, history.Phase{Name: history.PhaseWorkload})
			h.info("m3", "error", malformed)
			h.info("m3", "error", malformed)
			h.info("harness", history.FPhase, history.Phase{Name: history.PhaseHeal})
			if tc.afterHeal != nil {
				h.info(memberName("", tc.afterHeal["member"].(string)), "error", tc.afterHeal)
			}
			f := build(h.events(), nil)
			f.kinds = tc.kinds
			if got := kafkagoSubscriptionRefusals(f); len(got) != tc.sighted {
				t.Fatalf("%d sightings, want %d: %+v", len(got), tc.sighted, got)
			}
			vs := []Verdict{
				{Name: NameEventuallyConverges, Violations: []Violation{{Message: "never converged"}}},
				{Name: NameNoLostRecords, Violations: []Violation{{Message: "lost a"}, {Message: "lost b", Finding: FindingClassicJoinOrphan}}},
				{Name: NameNoDoubleOwnership, Violations: []Violation{{Message: "two owners"}}},
			}
			labelStalls(f, vs)
			want := map[bool]string{true: FindingKafkagoSubscription}[tc.labelled]
			for _, y := range []Violation{vs[0].Violations[0], vs[1].Violations[0]} {
				if y.Finding != want || strings.HasPrefix(y.Message, "known bug ") != tc.labelled {
					t.Errorf("%q labelled %q, want %q", y.Message, y.Finding, want)
				}
			}
			if y := vs[1].Violations[1]; y.Finding != FindingClassicJoinOrphan || y.Message != "lost b" {
				t.Errorf("an already labelled violation was relabelled: %+v", y)
			}
			if y := vs[2].Violations[0]; y.Finding != "" {
				t.Errorf("NoDoubleOwnership is not the finding's, labelled %q", y.Finding)
			}
			if got := len(vs[0].Known) + len(vs[1].Known); tc.labelled != (got == 2) || !tc.labelled && got != 0 {
				t.Errorf("%d matches listed, labelled %v", got, tc.labelled)
			}
		})
	}
}
