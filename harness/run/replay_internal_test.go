package run

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// TestReplayFor pins when judging replays the records and, when it cannot,
// that the skipped verdict says why.
func TestReplayFor(t *testing.T) {
	consumerRec := history.Record{KeyType: history.RecordConsumerGroupMetadata}
	obs := func(ids map[string]string, recs ...history.Record) *history.Observations {
		return &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", Records: recs, HasRecords: true}, TopicIDs: ids}
	}
	container := Plan{Group: "g", Options: Options{Kafka: "4.1.2"}}
	external := Plan{Group: "g", Options: Options{Bootstrap: []string{"kafka:9092"}}}
	for _, tc := range []struct {
		name string
		p    Plan
		o    *history.Observations
		why  string // "" means a replay is built
	}{
		{"no observations", container, nil, "observations.json is absent"},
		{"container cluster", container, obs(map[string]string{"t": "AQIDBAUGBwgJCgsMDQ4PEA"}, consumerRec), ""},
		{"classic records need no topic ids", container, obs(nil, history.Record{KeyType: history.RecordGroupMetadata}), ""},
		{"external cluster", external, obs(nil), "the plan names no Kafka version"},
		{"consumer records without topic ids", container, obs(nil, consumerRec), "no topic ids"},
		{"bad topic id", container, obs(map[string]string{"t": "nope"}), "is not a Kafka Uuid"},
		{"unknown version", Plan{Group: "g", Options: Options{Kafka: "4.9.1"}}, obs(nil), `unknown Kafka version "4.9.1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn, why := replayFor(tc.p, tc.o)
			switch {
			case tc.why == "" && (fn == nil || why != ""):
				t.Errorf("no replay built: %q", why)
			case tc.why != "" && (fn != nil || !strings.Contains(why, tc.why)):
				t.Errorf("fn %v, why %q; want the reason to say %q", fn != nil, why, tc.why)
			}
		})
	}
	rep := check.NewReport([]check.Verdict{{Name: recoveredStateMatchesLog, Holds: true, Skipped: "no replay function"}}, nil)
	explainSkip(&rep, "because")
	if rep.Verdicts[0].Skipped != "because" {
		t.Errorf("explainSkip left %q", rep.Verdicts[0].Skipped)
	}
}
