package run

import (
	"fmt"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/replay"
)

// recoveredStateMatchesLog is the name of the checker the replay feeds.
const recoveredStateMatchesLog = check.NameRecoveredStateMatchesLog

// replayFor builds the replay that RecoveredStateMatchesLog compares the
// broker's description with, from the plan's Kafka version (the replay
// behaves as that release) and the topic ids the observer read. When it
// cannot, it says why instead: the checker is then skipped with that reason.
func replayFor(p Plan, obs *history.Observations) (check.ReplayFunc, string) {
	if obs == nil {
		return nil, ObservationsFile + " is absent (the run stopped before its final observations): no __consumer_offsets records were read, so there is nothing to replay; rerun the plan (rerun.sh) to judge recovery"
	}
	if p.Options.Kafka == "" {
		return nil, "the plan names no Kafka version (an external cluster, --bootstrap): the records cannot be replayed as a particular release; set Options.Kafka in the plan to the cluster's version to judge it"
	}
	if obs.TopicIDs == nil && namesTopicsByID(obs) {
		return nil, "observations.json holds consumer-group records but no topic ids (written before the observer recorded them): assignments cannot be named; rerun the plan to judge it"
	}
	names, err := replay.TopicNames(obs.TopicIDs)
	if err != nil {
		return nil, fmt.Sprintf("observations.json: %v", err)
	}
	// The final observations come from the release the cluster ends on
	// (an upgrade's new one), which loaded the older release's records.
	fn, err := replay.Func(p.FinalKafka(), p.Group, names)
	if err != nil {
		return nil, err.Error()
	}
	return fn, ""
}

// namesTopicsByID reports whether some snapshot holds consumer-group
// records, the ones that name topics by id.
func namesTopicsByID(obs *history.Observations) bool {
	for _, s := range obs.All() {
		for _, r := range s.Records {
			if r.KeyType >= history.RecordConsumerGroupMetadata && r.KeyType <= history.RecordConsumerGroupCurrentMemberAssignment {
				return true
			}
		}
	}
	return false
}

// explainSkip replaces the checker's generic "no replay function" with why
// this run has none.
func explainSkip(rep *check.Report, why string) {
	for i, v := range rep.Verdicts {
		if v.Name == recoveredStateMatchesLog && v.Skipped != "" {
			rep.Verdicts[i].Skipped = why
		}
	}
}
