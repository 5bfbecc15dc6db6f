package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// judgementJSON is what `run --json` and `check --json` print: the run, the
// verdicts as verdicts.json holds them, and the tally.
type judgementJSON struct {
	Dir      string `json:"dir"`
	Seed     uint64 `json:"seed"`
	Scenario string `json:"scenario"`
	Group    string `json:"group"`
	Kafka    string `json:"kafka,omitempty"`
	Rerun    string `json:"rerun"`
	// Report is the run's report.html, when it was written.
	Report string `json:"report,omitempty"`
	// Error says why the run could not be carried out (run only); the
	// verdicts are there when it got as far as judging.
	Error  string `json:"error,omitempty"`
	Events int    `json:"events"`
	// Holds is true when no checker found a violation; Counts says how many
	// were skipped.
	Holds         bool            `json:"holds"`
	Counts        results.Tally   `json:"counts"`
	Verdicts      []check.Verdict `json:"verdicts"`
	RebalanceCost *check.Cost     `json:"rebalance_cost,omitempty"`
	// Notes say how the judgement was limited and what else to know (faults
	// with no observed effect).
	Notes []string `json:"notes,omitempty"`
	// Findings lists every place the history shows a registered finding
	// (groupquake findings).
	Findings []check.Sighting `json:"findings,omitempty"`
}

func judgement(p run.Plan, dir string, j *run.Judged, runErr error) judgementJSON {
	out := judgementJSON{
		Dir: dir, Seed: p.Seed, Scenario: p.Options.Scenario, Group: p.Group, Kafka: p.Options.Kafka, Rerun: p.Command(),
		Verdicts: []check.Verdict{}, Counts: results.Count(nil),
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err == nil {
		out.Report = filepath.Join(dir, run.ReportFile)
	}
	if j != nil {
		out.Events = len(j.Events)
		out.Holds = j.Report.Holds
		out.Counts = results.Count(j.Report.Verdicts)
		out.Verdicts = j.Report.Verdicts
		out.RebalanceCost = j.Report.RebalanceCost
		out.Findings = j.Report.Findings
		out.Notes = append(append(out.Notes, j.Notes...), j.Report.Notes...)
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
