package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// parseRun reads a `groupquake run` command line as cmdRun does: the seed,
// the options, and which flags were given.
func parseRun(t *testing.T, args []string) (uint64, run.Options, map[string]bool) {
	t.Helper()
	var f runFlags
	fs := newFlagSet("run", runUsage)
	f.register(fs, kinds.Default().Names())
	pos, err := parseArgs(fs, args, io.Discard)
	if err != nil || len(pos) > 0 {
		t.Fatalf("%q: %v, arguments %q", args, err, pos)
	}
	set := given(fs)
	seed, o, err := f.options(set)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return seed, o, set
}

// groupquakeKinds are the member kinds that are groupquake's own (the
// others of the default registry are kgo's).
var groupquakeKinds = []string{"classic", "classic-cooperative", "consumer"}

// TestCampaignPlan: the default campaign covers the fault families with
// groups of both protocols, groupquake's members beside kgo's, every run
// with faults, its own seed, group and topic; the seed reproduces it, and
// the campaign's rerun command and each run's plan it again.
func TestCampaignPlan(t *testing.T) {
	protocols := kinds.Default().Kinds()
	for _, args := range [][]string{
		{"--seed", "42"},
		{"--seed", "42", "--embedded", "--duration", "7s"},
		{"--seed", "9", "--kafka", "4.1.2", "--nodes", "1", "--intensity", "high", "--rate", "30"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			seed, o, set := parseRun(t, args)
			if by := pinnedBy(set); by != "" {
				t.Fatalf("%q pins one plan (--%s): it must run the campaign", args, by)
			}
			o = campaignOptions(set, o)
			cp, err := planCampaign(seed, o, protocols)
			if err != nil {
				t.Fatal(err)
			}
			var scenarios []string
			seeds, groups, topics := map[uint64]bool{}, map[string]bool{}, map[string]bool{}
			for _, r := range cp.Runs {
				p := r.Plan
				scenarios = append(scenarios, p.Options.Scenario)
				seeds[p.Seed], groups[p.Group], topics[p.Topics[0].Name] = true, true, true
				if !strings.HasSuffix(r.Name, p.Options.Scenario) {
					t.Errorf("run %s holds scenario %s", r.Name, p.Options.Scenario)
				}
				seen, ours, kgos := map[string]bool{}, 0, 0
				for _, m := range p.Members {
					seen[m.Protocol] = true
					switch {
					case slices.Contains(groupquakeKinds, m.Kind):
						ours++
					case strings.HasPrefix(m.Kind, "kgo-"):
						kgos++
					default:
						t.Errorf("%s: member %s of kind %s is neither groupquake's nor kgo's", r.Name, m.Name, m.Kind)
					}
				}
				if !seen[history.ProtocolClassic] || !seen[history.ProtocolConsumer] || ours < 2 || kgos < 1 {
					t.Errorf("%s: members %+v: want both protocols, groupquake's classic and consumer members and kgo's", r.Name, p.Members)
				}
				if len(p.Faults) == 0 {
					t.Errorf("%s: no fault planned", r.Name)
				}
				if p.Options.Duration != o.Duration || p.Options.Kafka != o.Kafka || p.Options.Nodes != o.Nodes || p.Options.Embedded != o.Embedded || p.Options.Intensity != o.Intensity || p.Options.Rate != o.Rate {
					t.Errorf("%s: options %+v do not carry the campaign's %+v", r.Name, p.Options, o)
				}
				// The run's own rerun command plans the same run, alone.
				rseed, ro, rset := parseRun(t, r.Plan.Args())
				if pinnedBy(rset) == "" {
					t.Errorf("%s: its rerun command %q would run a campaign", r.Name, r.Plan.Command())
				}
				again, err := run.NewPlan(rseed, ro, protocols)
				if err != nil || !reflect.DeepEqual(again, p) {
					t.Errorf("%s: its rerun command %q plans another run (%v)", r.Name, p.Command(), err)
				}
			}
			if want := []string{run.ScenarioMemberLinks, run.ScenarioBrokerFaults, run.ScenarioCombined}; !slices.Equal(scenarios, want) {
				t.Errorf("scenarios %v, want %v", scenarios, want)
			}
			if len(seeds) != len(cp.Runs) || len(groups) != len(cp.Runs) || len(topics) != len(cp.Runs) || seeds[seed] {
				t.Errorf("runs share seeds, groups or topics, or use the campaign's seed: %v %v %v", seeds, groups, topics)
			}
			if !o.Embedded && !set["nodes"] && o.Nodes != campaignNodes {
				t.Errorf("a container campaign without --nodes runs %d nodes, want %d", o.Nodes, campaignNodes)
			}
			// The campaign's rerun command plans the same campaign.
			if !strings.HasPrefix(cp.Command(), "groupquake run --seed "+args[1]+" ") {
				t.Errorf("campaign rerun %q does not start with its seed", cp.Command())
			}
			aseed, ao, aset := parseRun(t, cp.Args())
			if by := pinnedBy(aset); by != "" {
				t.Fatalf("the campaign's rerun command %q pins one plan (--%s)", cp.Command(), by)
			}
			again, err := planCampaign(aseed, campaignOptions(aset, ao), protocols)
			if err != nil || !reflect.DeepEqual(again, cp) {
				t.Errorf("the campaign's rerun command %q plans another campaign (%v)", cp.Command(), err)
			}
		})
	}

	// On an external cluster broker-faults is left out, saying so, and the
	// other runs keep their seeds.
	_, o, _ := parseRun(t, []string{"--seed", "42"})
	full, err := planCampaign(42, campaignOptions(map[string]bool{}, o), protocols)
	if err != nil {
		t.Fatal(err)
	}
	_, o, _ = parseRun(t, []string{"--seed", "42", "--bootstrap", "127.0.0.1:9092"})
	ext, err := planCampaign(42, o, protocols)
	if err != nil {
		t.Fatal(err)
	}
	if len(ext.Runs) != 2 || len(ext.Notes) != 1 || !strings.Contains(ext.Notes[0], "broker-faults left out") ||
		ext.Runs[0].Plan.Seed != full.Runs[0].Plan.Seed || ext.Runs[1].Plan.Seed != full.Runs[2].Plan.Seed {
		t.Errorf("external campaign: %d runs, notes %q", len(ext.Runs), ext.Notes)
	}
}

// TestRunCampaignEmbedded runs the default campaign on the embedded cluster
// with short workloads and --json: stdout is one JSON document with every
// run, each run directory in the campaign directory holds its plan (both
// protocols, groupquake's members), a history with faults, and report.html;
// the campaign writes trend.html, and stderr ends with the summary table,
// each run's report and rerun command, and the campaign's rerun command.
func TestRunCampaignEmbedded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "campaign")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"run", "--embedded", "--seed", "3", "--duration", "2s", "--out", dir, "--json"}, &stdout, &stderr)
	var c campaignJSON
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		t.Fatalf("run --json (exit %d) printed no JSON document (%v):\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	validateJSON(t, "campaign", stdout.Bytes())
	want := exitOK
	for _, r := range c.Runs {
		if r.Error != "" && want == exitOK {
			want = exitFailed
		}
	}
	for _, r := range c.Runs {
		if r.Tally != nil && len(r.Tally.Violated) > 0 {
			want = exitViolation
		}
	}
	if code != want || c.Holds != (want == exitOK) || c.Seed != 3 || c.Dir != dir || len(c.Runs) != len(defaultCampaign) ||
		c.Rerun != "groupquake run --seed 3 --embedded --kafka 4.4.0 --duration 2s" || !strings.Contains(c.Cluster, "embedded") {
		t.Errorf("exit %d (runs say %d): %+v\nstderr:\n%s", code, want, c, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, TrendFile)); err != nil || c.Trend != filepath.Join(dir, TrendFile) {
		t.Errorf("trend page %q: %v", c.Trend, err)
	}
	errText := stderr.String()
	for i, r := range c.Runs {
		e := defaultCampaign[i]
		if filepath.Dir(r.Dir) != dir || r.Scenario != e.Scenario || len(r.Verdicts) == 0 || r.Events == 0 ||
			r.Report != filepath.Join(r.Dir, run.ReportFile) || !strings.Contains(r.Rerun, "--scenario "+e.Scenario) {
			t.Errorf("run %d: %+v", i, r)
			continue
		}
		p, err := run.LoadPlan(filepath.Join(r.Dir, run.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, m := range p.Members {
			kinds = append(kinds, m.Kind)
		}
		if !slices.Equal(kinds, e.Kinds) || p.Protocol() != history.ProtocolConsumer {
			t.Errorf("run %s: members of kinds %v in a %s group, want %v", r.Dir, kinds, p.Protocol(), e.Kinds)
		}
		loaded, err := history.Load(filepath.Join(r.Dir, run.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		faults := 0
		for _, ev := range loaded.Events {
			if ev.F == history.FFaultStart {
				faults++
			}
		}
		if faults == 0 {
			t.Errorf("run %s: no fault in its history", r.Dir)
		}
		if _, err := os.Stat(r.Report); err != nil {
			t.Errorf("run %s: %v", r.Dir, err)
		}
		for _, s := range []string{"report " + r.Report, "rerun: " + r.Rerun} {
			if !strings.Contains(errText, s) {
				t.Errorf("the summary does not say %q", s)
			}
		}
	}
	table := errText[strings.LastIndex(errText, "campaign of seed 3 on"):]
	for _, s := range []string{"RUN", "SCENARIO", "PROTOCOL", "VERDICTS", "PAUSES consumer", "1-member-links", "2-broker-faults", "3-combined", "mixed", "trend page: " + c.Trend, "rerun the campaign: " + c.Rerun} {
		if !strings.Contains(table, s) {
			t.Errorf("the summary table does not say %q:\n%s", s, table)
		}
	}
}

// TestCampaignRefusesUsedRunDir: a campaign whose run directory would land
// on a run already there is refused before anything starts.
func TestCampaignRefusesUsedRunDir(t *testing.T) {
	dir := t.TempDir()
	used := filepath.Join(dir, "2-broker-faults")
	if err := os.MkdirAll(used, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, run.PlanFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := call(t, "run", "--embedded", "--out", dir)
	if code != exitBadInput || !strings.Contains(stderr, "already holds a run") {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitBadInput, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refused campaign wrote into %s: %v", dir, entries)
	}
}
