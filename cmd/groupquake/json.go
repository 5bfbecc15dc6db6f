package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// schemaVersion is the version of every --json document's shape
// (docs/json-schema.md, docs/schema/*.json): it goes up when a field is
// renamed, removed or changes its meaning, not when one is added. Every
// duration is in seconds, a number whose name ends in _s.
const schemaVersion = 1

// seconds is a duration as --json prints it: seconds, with the fraction.
func seconds(d time.Duration) float64 { return d.Seconds() }

// judgementJSON is one run as `run --json` and `check --json` print it
// (and each of a campaign's runs): the run, the verdicts as verdicts.json
// holds them, and the tally.
type judgementJSON struct {
	Dir      string `json:"dir"`
	Seed     uint64 `json:"seed"`
	Scenario string `json:"scenario"`
	Group    string `json:"group"`
	Kafka    string `json:"kafka,omitempty"`
	Rerun    string `json:"rerun"`
	// Report is the run's report.html, when it was written.
	Report string `json:"report,omitempty"`
	// Judged is false for a run that never happened (it stopped in its
	// setup, before any member started): it has no tally and no verdicts,
	// and Error says why.
	Judged bool `json:"judged"`
	// Error says why the run could not be carried out (run only); the
	// verdicts are there when it got past its setup.
	Error  string `json:"error,omitempty"`
	Events int    `json:"events"`
	// Holds is true when the run was judged, reached its end and no checker
	// found a violation; the tally says how many were skipped. A run cut
	// short (Stopped) never holds: no violation up to where it stopped is
	// not a hold of the run.
	Holds         bool            `json:"holds"`
	Tally         *results.Tally  `json:"tally,omitempty"`
	Verdicts      []check.Verdict `json:"verdicts"`
	RebalanceCost *costJSON       `json:"rebalance_cost,omitempty"`
	// Notes say how the judgement was limited and what else to know (faults
	// with no observed effect).
	Notes []string `json:"notes,omitempty"`
	// Findings lists every place the history shows a registered finding
	// (groupquake findings).
	Findings []check.Sighting `json:"findings,omitempty"`
	// Stopped says where a run that did not reach its end stopped, and why
	// (an interrupt): it was judged up to there.
	Stopped string `json:"stopped,omitempty"`
}

// runDoc is the document `run --json` (one run) and `check --json` print.
type runDoc struct {
	SchemaVersion int `json:"schema_version"`
	judgementJSON
}

// costJSON is check.Cost with every duration in seconds.
type costJSON struct {
	Protocols map[string]protocolCostJSON `json:"protocols"`
}

type protocolCostJSON struct {
	PartitionStops statsJSON            `json:"partition_stops"`
	MemberStops    statsJSON            `json:"member_stops"`
	Partitions     map[string]statsJSON `json:"partitions"`
	Members        map[string]statsJSON `json:"members"`
	Stops          []stopJSON           `json:"stops"`
}

type statsJSON struct {
	Count  int     `json:"count"`
	TotalS float64 `json:"total_s"`
	MeanS  float64 `json:"mean_s"`
	P50S   float64 `json:"p50_s"`
	P99S   float64 `json:"p99_s"`
	MaxS   float64 `json:"max_s"`
}

type stopJSON struct {
	Partition    string  `json:"partition,omitempty"`
	Member       string  `json:"member,omitempty"`
	FromS        float64 `json:"from_s"`
	ToS          float64 `json:"to_s"`
	DurationS    float64 `json:"duration_s"`
	Epoch        int32   `json:"epoch"`
	EventIndexes []int64 `json:"event_indexes"`
}

func statsOf(s check.Stats) statsJSON {
	return statsJSON{Count: s.Count, TotalS: seconds(s.Total), MeanS: seconds(s.Mean), P50S: seconds(s.P50), P99S: seconds(s.P99), MaxS: seconds(s.Max)}
}

func statsMap(m map[string]check.Stats) map[string]statsJSON {
	out := make(map[string]statsJSON, len(m))
	for k, s := range m {
		out[k] = statsOf(s)
	}
	return out
}

func costOf(c *check.Cost) *costJSON {
	if c == nil {
		return nil
	}
	out := &costJSON{Protocols: map[string]protocolCostJSON{}}
	for p, pc := range c.Protocols {
		if pc == nil {
			continue
		}
		stops := make([]stopJSON, 0, len(pc.Stops))
		for _, s := range pc.Stops {
			idx := s.EventIndexes
			if idx == nil {
				idx = []int64{}
			}
			stops = append(stops, stopJSON{Partition: s.Partition, Member: s.Member, FromS: seconds(s.From), ToS: seconds(s.To), DurationS: seconds(s.Duration), Epoch: s.Epoch, EventIndexes: idx})
		}
		out.Protocols[p] = protocolCostJSON{
			PartitionStops: statsOf(pc.PartitionStops), MemberStops: statsOf(pc.MemberStops),
			Partitions: statsMap(pc.Partitions), Members: statsMap(pc.Members), Stops: stops,
		}
	}
	return out
}

// pastSetup says whether the run's history got past its setup phase (to
// its warm-up, where members start; a run whose setup failed or was
// interrupted records its teardown right after): a run that did not never happened,
// whatever its checkers say of a history with no member in it.
func pastSetup(events []history.Event) bool {
	return slices.ContainsFunc(check.Phases(events), func(m check.PhaseMark) bool {
		return m.Name != history.PhaseSetup && m.Name != history.PhaseTeardown
	})
}

// judgement is the run of plan p in dir as --json prints it; j is its
// judgement, nil when the run never got past its setup.
func judgement(p run.Plan, dir string, j *run.Judged, runErr error) judgementJSON {
	out := judgementJSON{
		Dir: dir, Seed: p.Seed, Scenario: p.Options.Scenario, Group: p.Group, Kafka: p.Options.Kafka, Rerun: p.Command(),
		Verdicts: []check.Verdict{},
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err == nil {
		out.Report = filepath.Join(dir, run.ReportFile)
	}
	if j != nil {
		t := results.Count(j.Report.Verdicts)
		out.Judged = true
		out.Events = len(j.Events)
		out.Holds = j.Report.Holds && j.Report.Stopped == ""
		out.Tally = &t
		out.Verdicts = j.Report.Verdicts
		out.RebalanceCost = costOf(j.Report.RebalanceCost)
		out.Findings = j.Report.Findings
		out.Stopped = j.Report.Stopped
		out.Notes = append(append(out.Notes, j.Notes...), j.Report.Notes...)
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
