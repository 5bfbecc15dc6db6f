package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// ScorecardFile is the client scorecard `groupquake report` writes beside the trend page.
const ScorecardFile = "scorecard.html"

// scoreDirs reads the run directories dirs for the scorecard (run.Score); a directory that cannot
// be read is logged and counted as unreadable.
func scoreDirs(dirs []string, logf func(string, ...any)) []check.ScoredRun {
	var out []check.ScoredRun
	for _, d := range dirs {
		j, err := run.Saved(d)
		if err != nil {
			logf("%s: %v", d, err)
		}
		out = append(out, run.Score(d, j, err))
	}
	return out
}

// writeScorecardPage writes scorecard.html of scored to path, linking each run's report (those
// that exist) and the trend page trend ("" for none), both relative to the page.
func writeScorecardPage(path, trend string, scored []check.ScoredRun) error {
	base := filepath.Dir(path)
	reports := map[string]string{}
	for _, s := range scored {
		if _, err := os.Stat(filepath.Join(s.Dir, run.ReportFile)); err == nil {
			if rel, err := filepath.Rel(base, filepath.Join(s.Dir, run.ReportFile)); err == nil {
				reports[s.Dir] = filepath.ToSlash(rel)
			}
		}
	}
	var b bytes.Buffer
	page := results.ScorecardPage{
		Title:    fmt.Sprintf("groupquake: client scorecard of %d runs", len(scored)),
		ByClient: check.BuildScorecard(scored, check.ByClient), ByKind: check.BuildScorecard(scored, check.ByKind),
		Reports: reports, Trend: trend,
	}
	if err := results.WriteScorecard(&b, page); err != nil {
		return err
	}
	if err := run.WriteFileAtomic(path, b.Bytes(), 0o644); err != nil {
		return exitError{exitFailed, fmt.Sprintf("writing the scorecard: %v", err)}
	}
	return nil
}

// scorecardDoc is `groupquake report --json`: the scorecard (docs/schema/scorecard.json).
type scorecardDoc struct {
	SchemaVersion int             `json:"schema_version"`
	By            string          `json:"by"`
	Runs          int             `json:"runs"`
	Hold          int             `json:"hold"`
	Violated      int             `json:"violated"`
	CutShort      int             `json:"cut_short"`
	Unreadable    []string        `json:"unreadable"`
	Cells         []scoreCellJSON `json:"cells"`
}

type scoreCellJSON struct {
	Client       string             `json:"client"`
	Kind         string             `json:"kind,omitempty"`
	Kinds        []string           `json:"kinds"`
	Kafka        string             `json:"kafka"`
	Scenario     string             `json:"scenario"`
	Runs         int                `json:"runs"`
	RunsHold     int                `json:"runs_hold"`
	RunsViolated int                `json:"runs_violated"`
	RunsCutShort int                `json:"runs_cut_short"`
	Verdicts     verdictCountJSON   `json:"verdicts"`
	Charged      int                `json:"charged"`
	Shared       int                `json:"shared"`
	RunsCharged  int                `json:"runs_charged"`
	Checkers     map[string]int     `json:"checkers"`
	RunLevel     int                `json:"run_level"`
	MemberPauses statsJSON          `json:"member_pauses"`
	PartPauses   statsJSON          `json:"partition_pauses"`
	Findings     map[string]int     `json:"findings"`
	Sighted      map[string]int     `json:"sighted"`
	Sightings    []scoreSightedJSON `json:"sightings"`
	Violations   []scoreChargedJSON `json:"violations"`
	RunDirs      []string           `json:"run_dirs"`
}

type verdictCountJSON struct {
	Total    int `json:"total"`
	Hold     int `json:"hold"`
	Violated int `json:"violated"`
	Skipped  int `json:"skipped"`
}

type scoreChargedJSON struct {
	Dir          string   `json:"dir"`
	Checker      string   `json:"checker"`
	Message      string   `json:"message"`
	Finding      string   `json:"finding,omitempty"`
	EventIndexes []int64  `json:"event_indexes"`
	Members      []string `json:"members"`
	Clients      []string `json:"clients"`
}

// scoreSightedJSON is one sighting of a finding without a violation labelled with it.
type scoreSightedJSON struct {
	Dir          string   `json:"dir"`
	Finding      string   `json:"finding"`
	What         string   `json:"what"`
	EventIndexes []int64  `json:"event_indexes"`
	Members      []string `json:"members"`
	Clients      []string `json:"clients"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func scorecardJSON(sc check.Scorecard) scorecardDoc {
	doc := scorecardDoc{SchemaVersion: schemaVersion, By: sc.By, Runs: sc.Runs, Hold: sc.Hold, Violated: sc.Violated, CutShort: sc.CutShort,
		Unreadable: nonNil(sc.Unreadable), Cells: []scoreCellJSON{}}
	for _, c := range sc.Cells {
		cj := scoreCellJSON{Client: c.Client, Kind: c.Kind, Kinds: nonNil(c.Kinds), Kafka: c.Kafka, Scenario: c.Scenario,
			Runs: c.Runs, RunsHold: c.RunsHold, RunsViolated: c.RunsViolated, RunsCutShort: c.RunsCutShort,
			Verdicts: verdictCountJSON{Total: c.Hold + c.Violated + c.Skipped, Hold: c.Hold, Violated: c.Violated, Skipped: c.Skipped},
			Charged:  c.Charged, Shared: c.Shared, RunsCharged: c.RunsCharged, Checkers: maps.Clone(c.Checkers), RunLevel: c.RunLevel,
			MemberPauses: statsOf(c.MemberPauses), PartPauses: statsOf(c.PartitionPauses),
			Findings: maps.Clone(c.Findings), Sighted: maps.Clone(c.Sighted), Sightings: []scoreSightedJSON{},
			Violations: []scoreChargedJSON{}, RunDirs: nonNil(slices.Clone(c.RunDirs))}
		if cj.Checkers == nil {
			cj.Checkers = map[string]int{}
		}
		if cj.Findings == nil {
			cj.Findings = map[string]int{}
		}
		if cj.Sighted == nil {
			cj.Sighted = map[string]int{}
		}
		for _, x := range c.Sightings {
			cj.Sightings = append(cj.Sightings, scoreSightedJSON{Dir: x.Dir, Finding: x.Finding, What: x.Message,
				EventIndexes: nonNil(x.EventIndexes), Members: nonNil(x.Members), Clients: nonNil(x.Clients)})
		}
		for _, v := range c.Violations {
			cj.Violations = append(cj.Violations, scoreChargedJSON{Dir: v.Dir, Checker: v.Checker, Message: v.Message, Finding: v.Finding,
				EventIndexes: nonNil(v.EventIndexes), Members: nonNil(v.Members), Clients: nonNil(v.Clients)})
		}
		doc.Cells = append(doc.Cells, cj)
	}
	return doc
}

// printScorecard prints the scorecard of dirs by by: a text table, or with asJSON the document.
func printScorecard(stdout io.Writer, dirs []string, by string, asJSON bool, logf func(string, ...any)) error {
	sc := check.BuildScorecard(scoreDirs(dirs, logf), by)
	if sc.Runs == 0 && len(sc.Unreadable) > 0 {
		// As stats and findings triage: no scorecard of nothing.
		return badInput("none of the %d run directories could be read (see above): give directories that groupquake run wrote", len(sc.Unreadable))
	}
	if asJSON {
		return writeJSON(stdout, scorecardJSON(sc))
	}
	return results.WriteScorecardText(stdout, sc)
}
