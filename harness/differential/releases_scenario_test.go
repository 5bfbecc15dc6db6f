package differential

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

func rec(t records.Type, v int16, value map[string]any) history.Record {
	return history.Record{KeyType: int16(t), ValueVersion: v, Key: map[string]any{"group": "g"}, Value: value}
}

// RecordShapes names each record type and value version with the fields
// set in some record of it: a topic id of zeros is not set, one with a
// byte is; nested fields are named by their path; a tombstone is its own
// line.
func TestRecordShapes(t *testing.T) {
	zeros := []any{json.Number("0"), json.Number("0")}
	id := []any{json.Number("84"), json.Number("0")}
	old := []history.Record{
		rec(records.TypeOffsetCommit, 4, map[string]any{"Offset": json.Number("5"), "Metadata": "", "TopicID": zeros}),
		rec(records.TypeOffsetCommit, 4, map[string]any{"Offset": json.Number("0"), "Metadata": "", "TopicID": zeros}),
		rec(records.TypeConsumerGroupCurrentMemberAssignment, 0, map[string]any{"MemberEpoch": json.Number("1"),
			"AssignedPartitions": []any{map[string]any{"TopicID": id, "Partitions": []any{json.Number("0")}, "AssignmentEpochs": []any{}}}}),
		{KeyType: int16(records.TypeConsumerGroupMemberMetadata), Key: map[string]any{"GroupID": "g"}},
	}
	got := RecordShapes(old)
	want := "ConsumerGroupCurrentMemberAssignment v0 {AssignedPartitions AssignedPartitions.TopicID MemberEpoch}\n" +
		"ConsumerGroupMemberMetadata tombstone\n" +
		"OffsetCommit v4 {Offset}"
	if got != want {
		t.Errorf("shapes:\n%s\nwant:\n%s", got, want)
	}
	newer := append([]history.Record{}, old...)
	newer[1] = rec(records.TypeOffsetCommit, 4, map[string]any{"Offset": json.Number("0"), "TopicID": id})
	newer[2].Value["AssignedPartitions"].([]any)[0].(map[string]any)["AssignmentEpochs"] = []any{json.Number("2")}
	got = RecordShapes(newer)
	for _, w := range []string{"AssignedPartitions.AssignmentEpochs", "OffsetCommit v4 {Offset TopicID}"} {
		if !strings.Contains(got, w) {
			t.Errorf("shapes lack %q:\n%s", w, got)
		}
	}
	if RecordShapes(nil) != "(none)" {
		t.Errorf("no records: %q", RecordShapes(nil))
	}
}

// MeasureRun predicts a consumer group's first epoch from the profile and
// says so when the run shows another; it measures rebalances and stops
// with their slack and attributes each record type to its behaviours.
func TestMeasureRun(t *testing.T) {
	hb := func(i int64, epoch int32) history.Event {
		return history.Event{Index: i, Time: time.Duration(i) * time.Second, Type: history.OK, Process: "m1", F: history.FHeartbeat,
			Value: history.Heartbeat{Member: "m1", Protocol: history.ProtocolConsumer, ResultEpoch: epoch}}
	}
	j := run.Judged{
		Events: []history.Event{hb(1, 2), hb(2, 3), hb(3, 3), hb(4, 4)},
		Report: check.Report{Verdicts: []check.Verdict{{Name: "NoDoubleOwnership", Holds: true}}, RebalanceCost: &check.Cost{Protocols: map[string]*check.ProtocolCost{
			"consumer": {PartitionStops: check.Stats{Count: 2, Max: 1500 * time.Millisecond}},
		}}},
		Observations: &history.Observations{Final: history.Snapshot{Records: []history.Record{
			rec(records.TypeConsumerGroupMetadata, 0, map[string]any{"Epoch": json.Number("4")}),
		}}},
	}
	s := Scenarios[0]
	m := MeasureRun(s, version.V4_4_0.Profile(), j)
	by := map[string]ReleaseOutcome{}
	for _, o := range m.Outcomes {
		by[strings.TrimPrefix(o.Key, s.Name+": ")] = o
	}
	if o := by["first epoch"]; o.Value != "2" || o.Model != "2" || !o.Agrees {
		t.Errorf("first epoch on 4.4.0: %+v", o)
	}
	if o := by["rebalances"]; o.Value != "2" || !o.Numeric || o.Slack != 1 {
		t.Errorf("rebalances: %+v", o)
	}
	if o := by["longest partition stop"]; o.Value != "1.5s" || o.Num != 1500 || o.Slack != 1000 {
		t.Errorf("longest stop: %+v", o)
	}
	if o := by["checkers"]; o.Value != "1 of 1 hold" {
		t.Errorf("checkers: %+v", o)
	}
	if o := by["records written: ConsumerGroupMetadata"]; o.Value != "ConsumerGroupMetadata v0 {Epoch}" || !strings.Contains(strings.Join(m.Attribution[o.Key], ","), "MetadataHash") {
		t.Errorf("records: %+v, attributed to %v", o, m.Attribution[o.Key])
	}
	// The same run judged as 4.1.2's: the first epoch is not what 4.1.2's
	// profile predicts.
	m = MeasureRun(s, version.V4_1_2.Profile(), j)
	if o := m.Outcomes[0]; o.Agrees || o.Model != "1" {
		t.Errorf("first epoch 2 on 4.1.2: %+v, want a disagreement with the predicted 1", o)
	}
}

// The consumer-group scenario on the embedded cluster as 4.1.2 and as
// 4.4.0 differs in its first epoch and in the records it writes, each
// explained by the profile; two runs as 4.4.0 do not differ. (Three 10 s
// runs at once, no Docker: about 20 s.)
func TestScenariosEmbedded(t *testing.T) {
	dir := t.TempDir()
	ss := Scenarios[:1]
	vs := []version.Version{version.V4_1_2, version.V4_4_0, version.V4_4_0}
	ms := make([]Measured, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = RunScenarios(context.Background(), v, ss, ScenarioConfig{Embedded: true, Dir: dir + "/" + string(rune('a'+i))})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	res := CompareReleases(ReleaseOutcomes{Version: "4.1.2", Items: ms[0].Outcomes}, ReleaseOutcomes{Version: "4.4.0", Items: ms[1].Outcomes},
		Behaviours(version.V4_1_2.Profile(), version.V4_4_0.Profile()), ms[0].Attribution)
	by := map[string]Difference{}
	for _, d := range res.Differences {
		by[d.Key] = d
		if !d.Explained {
			t.Errorf("unexplained: %s: %s → %s (%s)", d.Key, d.From, d.To, d.Why)
		}
	}
	if d := by["consumer-group: first epoch"]; d.From != "1" || d.To != "2" || !strings.Contains(strings.Join(d.Behaviours, ","), "FirstMemberEpoch") {
		t.Errorf("first epoch: %+v", d)
	}
	if d := by["consumer-group: records written: ConsumerGroupTargetAssignmentMetadata"]; !strings.Contains(d.To, "AssignmentTimestamp") || strings.Contains(d.From, "AssignmentTimestamp") || !d.Explained {
		t.Errorf("target assignment metadata records: %+v", d)
	}
	self := CompareReleases(ReleaseOutcomes{Version: "4.4.0", Items: ms[1].Outcomes}, ReleaseOutcomes{Version: "4.4.0", Items: ms[2].Outcomes}, nil, ms[1].Attribution)
	if len(self.Differences) != 0 {
		t.Errorf("4.4.0 with itself:\n%s", self)
	}
}
