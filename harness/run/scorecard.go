package run

import "github.com/groupquake/groupquake/harness/check"

// Score is the run directory dir as the client scorecard reads it (check.BuildScorecard): its Kafka
// version and scenario as the trend page names them (Info), and its violations, findings' matches
// and pauses charged to the members of its plan (check.Attribute). A directory that cannot be read
// is a ScoredRun with Err set.
func Score(dir string, j Judged, err error) check.ScoredRun {
	if err != nil {
		return check.ScoredRun{Dir: dir, Err: err.Error()}
	}
	info := Info(dir, j.Plan)
	members := make([]check.RunMember, 0, len(j.Plan.Members))
	for _, m := range j.Plan.Members {
		members = append(members, check.RunMember{Name: m.Name, Kind: m.Kind, Protocol: m.Protocol})
	}
	s := check.ScoredRun{Dir: dir, Seed: j.Plan.Seed, Kafka: info.Kafka, Scenario: info.Scenario,
		Attribution: check.Attribute(j.Events, members, j.Report)}
	if s.Kafka == "" {
		s.Kafka = "unknown"
	}
	if s.Scenario == "" {
		s.Scenario = "unknown"
	}
	return s
}
