package main

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// TestSideBySide pins the rows replay prints and --json holds: every fact
// both sides report is compared, a value the broker does not report is
// shown as "-" and not compared, and a difference is marked.
func TestSideBySide(t *testing.T) {
	st := check.GroupState{
		Protocol: history.ProtocolConsumer, GroupEpoch: 5, AssignmentEpoch: 5,
		Members: map[string]check.MemberState{
			"a": {MemberEpoch: 5, Assignment: history.TPs("t", 1, 0)},
			"b": {MemberEpoch: 5, Assignment: history.TPs("t", 2)},
		},
		Offsets: map[history.TP]int64{{Topic: "t", Partition: 0}: 7},
	}
	snap := history.Snapshot{Group: &history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Stable", GroupEpoch: 5, AssignmentEpoch: 5, Members: []history.MemberDescription{
		{MemberID: "a", MemberEpoch: 5, Assignment: history.TPs("t", 0, 1)},
		{MemberID: "b", MemberEpoch: 5, Assignment: history.TPs("t", 3)},
	}}, Committed: []history.OffsetAt{{Topic: "t", Partition: 0, Offset: 7}}}
	rows := sideBySide(st, snap)
	by := map[string]replayRow{}
	for _, r := range rows {
		by[r.What] = r
	}
	for what, want := range map[string]replayRow{
		"state":               {What: "state", Replayed: "-", Described: "Stable"},
		"group epoch":         {What: "group epoch", Replayed: "5", Described: "5", Compared: true},
		"member a assignment": {What: "member a assignment", Replayed: "[t-0 t-1]", Described: "[t-0 t-1]", Compared: true},
		"member b assignment": {What: "member b assignment", Replayed: "[t-2]", Described: "[t-3]", Compared: true, Differs: true},
		"offset t-0":          {What: "offset t-0", Replayed: "7", Described: "7", Compared: true},
		"member b epoch":      {What: "member b epoch", Replayed: "5", Described: "5", Compared: true},
		"assignment epoch":    {What: "assignment epoch", Replayed: "5", Described: "5", Compared: true},
		"protocol":            {What: "protocol", Replayed: "consumer", Described: "consumer", Compared: true},
		"member a epoch":      {What: "member a epoch", Replayed: "5", Described: "5", Compared: true},
	} {
		if by[what] != want {
			t.Errorf("row %q = %+v, want %+v", what, by[what], want)
		}
	}
	var b strings.Builder
	printRows(&b, rows)
	var marked []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "≠") {
			marked = append(marked, l)
		}
	}
	if len(marked) != 1 || !strings.Contains(marked[0], "member b assignment") {
		t.Errorf("marked rows %q, want only member b's assignment:\n%s", marked, b.String())
	}
}

// TestSideBySideMembersOnOneSide pins the member rows when a member is
// only replayed or only described: one "member <id>" row each, present
// beside absent, in member id order, with no epoch or assignment rows.
func TestSideBySideMembersOnOneSide(t *testing.T) {
	st := check.GroupState{
		Protocol: history.ProtocolConsumer, GroupEpoch: 5, AssignmentEpoch: 5,
		Members: map[string]check.MemberState{
			"c": {MemberEpoch: 5, Assignment: history.TPs("t", 0)},
			"a": {MemberEpoch: 4},
		},
	}
	snap := history.Snapshot{Group: &history.GroupDescription{Protocol: history.ProtocolConsumer, GroupEpoch: 5, AssignmentEpoch: 5, Members: []history.MemberDescription{
		{MemberID: "b", MemberEpoch: 5, Assignment: history.TPs("t", 1)},
		{MemberID: "a", MemberEpoch: 5},
	}}}
	var got []replayRow
	for _, r := range sideBySide(st, snap) {
		if strings.HasPrefix(r.What, "member ") {
			got = append(got, r)
		}
	}
	want := []replayRow{
		{What: "member a epoch", Replayed: "4", Described: "5", Compared: true, Differs: true},
		{What: "member a assignment", Replayed: "[]", Described: "[]", Compared: true},
		{What: "member b", Replayed: "absent", Described: "present", Compared: true, Differs: true},
		{What: "member c", Replayed: "present", Described: "absent", Compared: true, Differs: true},
	}
	if len(got) != len(want) {
		t.Fatalf("member rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
