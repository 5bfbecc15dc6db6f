package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/differential"
	"github.com/groupquake/groupquake/harness/run"
)

const findingsUsage = `Usage:
  groupquake findings [--json]
  groupquake findings rerun [ID...] [--kafka V] [--embedded] [--out DIR] [--json]
  groupquake findings triage [--json] DIR...

What groupquake's runs found in Kafka and its clients, one registry
(harness/check.Findings; written up in docs/findings.md):

  findings          lists each finding: id, where it lives, the releases it was
                    seen on, its kind (a behaviour is noted and the run holds; a
                    bug fails the run, labelled with the id, unless the registry
                    says why it is noted) and its reproducer.
  findings rerun    reruns the reproducers (of the IDs given, else of every
                    finding that has one) against Kafka V and says, for each,
                    reproduced or not reproduced: a conformance vector's step on
                    a 1-node cluster of V (with --embedded, the reference
                    coordinator as V: the model's prediction, not Kafka), or a
                    seeded run whose history must show the finding (its run
                    directory under --out, default ./runs/<time>-findings-V/).
                    After a Kafka upgrade it says which findings the release
                    fixed.
  findings triage   judges run directories again (a DIR without plan.json is
                    searched for runs below it) and prints per scenario the runs,
                    how many hold, the violations, each matched to a finding's id
                    or counted as unexplained, the members lost for good to a
                    known finding with the share of the workload judged without
                    them (member-seconds), and per finding the runs whose history
                    sighted it without a violation labelled with it; then those
                    runs per finding, and every violation, loss and such
                    sighting.

Exit status: 0 listed, ran (reproduced or not) or triaged; 2 bad input
(an unknown id or version, a reproducer that cannot run as asked, no run
directory); 3 a reproducer could not be carried out (no engine, a cluster
that did not start, a run that failed).
`

func cmdFindings(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "rerun":
			return cmdFindingsRerun(ctx, args[1:], stdout, stderr)
		case "triage":
			return cmdFindingsTriage(ctx, args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("findings", findingsUsage)
	asJSON := fs.Bool("json", false, "print the registry as JSON")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("findings: unknown subcommand %q: use rerun or triage, or no argument to list the findings (see 'groupquake findings -h')", pos[0])
	}
	fx := check.Findings()
	if *asJSON {
		return writeJSON(stdout, struct {
			SchemaVersion int             `json:"schema_version"`
			Findings      []check.Finding `json:"findings"`
		}{schemaVersion, fx})
	}
	for i, x := range fx {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s  %s, %s\n", x.ID, x.Kind, x.Disposition())
		fmt.Fprintf(stdout, "  %s\n", x.Title)
		fmt.Fprintf(stdout, "  where:      %s\n", x.Where)
		fmt.Fprintf(stdout, "  seen on:    %s\n", strings.Join(x.Seen, "; "))
		if x.Upstream != "" {
			fmt.Fprintf(stdout, "  upstream:   %s\n", x.Upstream)
		}
		fmt.Fprintf(stdout, "  reproducer: %s\n", describeReproducer(x))
	}
	fmt.Fprintf(stdout, "\n%d findings; write-ups in docs/findings.md; `groupquake findings rerun --kafka V` reruns the reproducers\n", len(fx))
	return nil
}

// describeReproducer says how x is reproduced, as a command where there is
// one.
func describeReproducer(x check.Finding) string {
	r := x.Reproducer
	switch {
	case r.Vector != nil:
		return fmt.Sprintf("vector step coordinator/testdata/%s answered %s on a 1-node cluster: groupquake findings rerun %s --kafka V",
			r.Vector.Step, r.Vector.Want, x.ID)
	case r.Plan != nil:
		s := fmt.Sprintf("seeded run `groupquake run %s --kafka %s` whose history shows it", strings.Join(r.Plan.Args, " "), r.Plan.Kafka)
		if r.Plan.Timing != "" {
			s += " (" + r.Plan.Timing + ")"
		}
		return s
	}
	return "none: " + r.None
}

// rerunResult is one finding's rerun.
type rerunResult struct {
	ID      string `json:"id"`
	Kafka   string `json:"kafka"`
	Mode    string `json:"mode"` // "kafka" or "embedded"
	Ran     bool   `json:"ran"`
	Outcome string `json:"outcome"` // "reproduced", "not reproduced", "not run"
	// Evidence is what showed it (the step's answer, the sightings), or
	// why it did not run.
	Evidence string `json:"evidence"`
	// Dir is a seeded run's run directory.
	Dir string `json:"dir,omitempty"`
}

func cmdFindingsRerun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("findings rerun", findingsUsage)
	kafka := fs.String("kafka", version.Default.String(), "the Kafka release to rerun against (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	embedded := fs.Bool("embedded", false, "rerun against the reference coordinator as --kafka (vectors) or the embedded cluster (seeded runs), no Docker")
	out := fs.String("out", "", "directory of the seeded runs' run directories (default ./runs/<time>-findings-V/)")
	imageSource := fs.String("image-source", "auto", "auto, build or official")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long the reruns may take")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout")
	var lv levelFlags
	lv.register(fs)
	ids, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	v, err := version.Parse(*kafka)
	if err != nil {
		return badInput("--kafka: %v", err)
	}
	switch cluster.ImageSource(*imageSource) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return badInput("--image-source %q: use auto, build or official", *imageSource)
	}
	picked, skipped, err := pickReproducers(ids, *embedded)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = newRunDir("findings-" + v.String())
	}
	for _, x := range picked {
		if x.Reproducer.Plan != nil {
			if err := checkOut(filepath.Join(dir, x.ID)); err != nil {
				return badInput("--out %s: %v", dir, err)
			}
		}
	}
	con, err := lv.console(stderr)
	if err != nil {
		return err
	}
	logf := con.Logf
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	mode := "kafka"
	if *embedded {
		mode = "embedded"
	} else if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
		return exitError{exitFailed, fmt.Sprintf("rerunning against Kafka needs a Docker engine: %v (run `groupquake engine up` as root, or use --embedded for the reference coordinator's prediction)", err)}
	}
	results := slices.Clone(skipped)
	for i := range results {
		results[i].Kafka, results[i].Mode = v.String(), mode
	}
	var failures []string
	vecs, err := rerunVectors(ctx, v, picked, *embedded, cluster.ImageOptions{Source: cluster.ImageSource(*imageSource), Logf: logf}, logf)
	if err != nil {
		failures = append(failures, err.Error())
	}
	results = append(results, vecs...)
	ran := map[string]planRun{} // findings with the same plan share its run
	for _, x := range picked {
		if x.Reproducer.Plan == nil {
			continue
		}
		key := strings.Join(x.Reproducer.Plan.Args, " ")
		pr, ok := ran[key]
		if !ok {
			pr = runPlan(ctx, x, v, *embedded, filepath.Join(dir, x.ID), stderr)
			ran[key] = pr
			if pr.err != nil {
				failures = append(failures, x.ID+": "+pr.err.Error())
			}
		}
		res := pr.result(x, v)
		res.Mode = mode
		results = append(results, res)
	}
	order := map[string]int{}
	for i, x := range check.Findings() {
		order[x.ID] = i
	}
	slices.SortStableFunc(results, func(a, b rerunResult) int { return order[a.ID] - order[b.ID] })
	if *asJSON {
		if err := writeJSON(stdout, struct {
			SchemaVersion int           `json:"schema_version"`
			Kafka         string        `json:"kafka"`
			Mode          string        `json:"mode"`
			Results       []rerunResult `json:"results"`
		}{schemaVersion, v.String(), mode, results}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "finding\tKafka %s (%s)\tevidence\n", v, mode)
		for _, r := range results {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Outcome, r.Evidence)
		}
		tw.Flush()
	}
	if len(failures) > 0 {
		return exitError{exitFailed, "could not carry out: " + strings.Join(failures, "; ")}
	}
	return nil
}

// pickReproducers returns the findings to rerun: those named, or every one
// whose reproducer fits the target; and, when none were named, a "not run"
// result for each that does not. A named finding that cannot be rerun as
// asked is bad input.
func pickReproducers(ids []string, embedded bool) ([]check.Finding, []rerunResult, error) {
	cannot := func(x check.Finding) string {
		r := x.Reproducer
		switch {
		case r.Vector == nil && r.Plan == nil:
			return "no reproducer: " + r.None
		case r.Plan != nil && embedded && !r.Plan.Embedded:
			return "its seeded run needs a container cluster (" + strings.Join(r.Plan.Args, " ") + "); the embedded cluster has one node and no Java"
		}
		return ""
	}
	if len(ids) == 0 {
		var picked []check.Finding
		var skipped []rerunResult
		for _, x := range check.Findings() {
			if why := cannot(x); why != "" {
				skipped = append(skipped, rerunResult{ID: x.ID, Outcome: "not run", Evidence: why})
				continue
			}
			picked = append(picked, x)
		}
		return picked, skipped, nil
	}
	var picked []check.Finding
	for _, id := range ids {
		x, ok := check.FindingByID(id)
		if !ok {
			var known []string
			for _, y := range check.Findings() {
				known = append(known, y.ID)
			}
			return nil, nil, badInput("findings rerun: no finding %q: the registry has %s (groupquake findings lists them)", id, strings.Join(known, ", "))
		}
		if why := cannot(x); why != "" {
			return nil, nil, badInput("findings rerun: %s cannot be rerun as asked: %s", id, why)
		}
		if !slices.ContainsFunc(picked, func(y check.Finding) bool { return y.ID == id }) {
			picked = append(picked, x)
		}
	}
	return picked, nil, nil
}

// vectorSections returns the conformance sections that hold the steps of
// the picked vector reproducers, each once, in the vectors' order.
func vectorSections(picked []check.Finding) ([]differential.Section, error) {
	want := map[string]bool{}
	for _, x := range picked {
		if x.Reproducer.Vector != nil {
			want[x.Reproducer.Vector.Step] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	all, err := differential.Vectors()
	if err != nil {
		return nil, fmt.Errorf("loading the conformance vectors: %w", err)
	}
	var out []differential.Section
	found := map[string]bool{}
	for _, s := range all {
		has := false
		for _, st := range s.Steps {
			if want[st.Pos] {
				has, found[st.Pos] = true, true
			}
		}
		if has {
			out = append(out, s)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if !found[p] {
			return nil, fmt.Errorf("no conformance vector step at %s: the registry and coordinator/testdata disagree", p)
		}
	}
	return out, nil
}

// rerunVectors replays the picked vector reproducers' sections on one
// 1-node cluster of v (or the reference coordinator as v) and reads each
// step's answer.
func rerunVectors(ctx context.Context, v version.Version, picked []check.Finding, embedded bool, img cluster.ImageOptions, logf func(string, ...any)) ([]rerunResult, error) {
	secs, err := vectorSections(picked)
	if err != nil || len(secs) == 0 {
		return nil, err
	}
	mode := "kafka"
	var rs []differential.Result
	if embedded {
		mode = "embedded"
		if rs, err = differential.Model(v.Profile(), secs, 0); err != nil {
			return nil, fmt.Errorf("reference coordinator as %s: %w", v, err)
		}
		for i := range rs {
			rs[i].Target = rs[i].Reference
		}
	} else {
		if _, err := cluster.EnsureImage(ctx, v.String(), img); err != nil {
			return nil, fmt.Errorf("image of Kafka %s: %w", v, err)
		}
		logf("replaying %d vector section(s) against a 1-node Kafka %s cluster", len(secs), v)
		rep, err := differential.RunVectors(ctx, v.String(), secs, differential.RealConfig{Image: img, Logf: logf})
		if err != nil {
			return nil, fmt.Errorf("Kafka %s: %w", v, err)
		}
		rs = rep.Results
	}
	var out []rerunResult
	for _, x := range picked {
		vr := x.Reproducer.Vector
		if vr == nil {
			continue
		}
		res := rerunResult{ID: x.ID, Kafka: v.String(), Mode: mode}
		res.Ran, res.Outcome, res.Evidence = vectorOutcome(vr, rs)
		out = append(out, res)
	}
	return out, nil
}

// vectorOutcome judges a vector reproducer on a replay's results: "not
// run" when a step it reads was not sent, "not reproduced" when a Given
// step's answer lacks its Want (the state the finding needs was not
// reached) or the step's answer lacks Want, else "reproduced"; evidence
// quotes the answers read.
func vectorOutcome(vr *check.VectorReproducer, rs []differential.Result) (ran bool, outcome, evidence string) {
	var read []string
	for _, g := range vr.Given {
		answer, why, sent := stepAnswer(rs, g.Step)
		if !sent {
			return false, "not run", "the step " + g.Step + " was not sent" + why
		}
		if !strings.Contains(answer, g.Want) {
			return true, "not reproduced", fmt.Sprintf("%s answered: %s, not %s: the state the finding needs was not reached", g.Step, firstLine(answer), g.Want)
		}
		read = append(read, g.Step+" answered: "+firstLine(answer))
	}
	answer, why, sent := stepAnswer(rs, vr.Step)
	if !sent {
		return false, "not run", "the step " + vr.Step + " was not sent" + why
	}
	outcome = "not reproduced"
	if strings.Contains(answer, vr.Want) {
		outcome = "reproduced"
	}
	return true, outcome, strings.Join(append(read, vr.Step+" answered: "+firstLine(answer)), "; ")
}

// stepAnswer is the answer to the step at pos: the newest ticket at its
// position (a parked request it completes is answered at the same
// position); when it was not sent, why (": ..." or "").
func stepAnswer(rs []differential.Result, pos string) (answer, why string, sent bool) {
	i := -1
	for j, r := range rs {
		if r.Pos == pos && r.Outcome != differential.Skipped && (i < 0 || r.Ticket > rs[i].Ticket) {
			i = j
		}
	}
	if i >= 0 {
		return rs[i].Target, "", true
	}
	if j := slices.IndexFunc(rs, func(r differential.Result) bool { return r.Pos == pos }); j >= 0 {
		return "", ": " + rs[j].Why, false
	}
	return "", "", false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// planRun is one seeded run of a rerun.
type planRun struct {
	dir       string
	err       error
	notRun    string
	sightings []check.Sighting
}

// runPlan runs x's seeded plan against v into dir and judges it.
func runPlan(ctx context.Context, x check.Finding, v version.Version, embedded bool, dir string, stderr io.Writer) planRun {
	pr := planRun{dir: dir}
	args := append([]string{"run"}, x.Reproducer.Plan.Args...)
	args = append(args, "--kafka", v.String(), "--out", dir, "--json")
	if embedded {
		args = append(args, "--embedded")
	}
	fmt.Fprintf(stderr, "groupquake: %s: groupquake %s\n", x.ID, strings.Join(args, " "))
	var runOut bytes.Buffer
	if code := runMain(ctx, args, &runOut, stderr); code == exitBadInput || code == exitFailed {
		pr.notRun = fmt.Sprintf("the run exited %d (see above)", code)
		pr.err = fmt.Errorf("the seeded run exited %d", code)
		return pr
	}
	j, err := run.Judge(dir)
	if err != nil {
		pr.notRun, pr.err = err.Error(), err
		return pr
	}
	pr.sightings = j.Report.Findings
	return pr
}

// result says whether the run's history shows x.
func (pr planRun) result(x check.Finding, v version.Version) rerunResult {
	res := rerunResult{ID: x.ID, Kafka: v.String(), Dir: pr.dir}
	if pr.notRun != "" {
		res.Outcome, res.Evidence = "not run", pr.notRun
		return res
	}
	res.Ran, res.Outcome = true, "not reproduced"
	var what []string
	for _, s := range pr.sightings {
		if s.Finding == x.ID {
			what = append(what, s.What)
		}
	}
	if len(what) > 0 {
		res.Outcome = "reproduced"
		res.Evidence = strings.Join(what, "; ") + " (" + pr.dir + ")"
		return res
	}
	res.Evidence = "the history does not show it (" + pr.dir + ")"
	if x.Reproducer.Plan.Timing != "" {
		res.Evidence += "; timing-dependent: " + x.Reproducer.Plan.Timing
	}
	return res
}

// triageRun is one run directory as triage reads it.
type triageRun struct {
	Dir      string `json:"dir"`
	Scenario string `json:"scenario"`
	Kafka    string `json:"kafka,omitempty"`
	Holds    bool   `json:"holds"`
	// Stopped says where a run that did not reach its end stopped (its
	// verdicts' stopped): such a run never holds, even with no violation up
	// to there; it is counted as cut short.
	Stopped string `json:"stopped,omitempty"`
	// Violations are every violation, with the finding it matches ("" when
	// unexplained).
	Violations []triageViolation `json:"violations,omitempty"`
	// Lost are the members lost for good to a known finding.
	Lost []triageLoss `json:"lost,omitempty"`
	// Sighted are the run's sightings (check.Report.Findings) of the
	// findings that none of its violations is labelled with: a finding the
	// history shows without a violation to match (a behaviour noted, a bug
	// whose window passed without harm).
	Sighted []triageSighting `json:"sighted,omitempty"`
	// Share is the share of the run's member-seconds judged without them.
	Share float64 `json:"share"`
}

type triageViolation struct {
	Checker string `json:"checker"`
	Finding string `json:"finding,omitempty"`
	Message string `json:"message"`
}

type triageSighting struct {
	Finding string `json:"finding"`
	Member  string `json:"member,omitempty"`
	What    string `json:"what"`
}

// triageSighted is one finding and the runs that sighted it without a
// violation labelled with it.
type triageSighted struct {
	Finding string   `json:"finding"`
	Runs    []string `json:"runs"`
}

type triageLoss struct {
	Member   string        `json:"member"`
	Finding  string        `json:"finding"`
	Failed   bool          `json:"failed"`
	Without  time.Duration `json:"-"`
	WithoutS float64       `json:"without_s"`
	Share    float64       `json:"share"`
}

// triageRow is one scenario's sums.
type triageRow struct {
	Scenario string `json:"scenario"`
	Runs     int    `json:"runs"`
	Hold     int    `json:"hold"`
	// CutShort counts the runs that did not reach their end (interrupted,
	// killed, stopped by their bound): none of them is counted as holding.
	CutShort    int            `json:"cut_short"`
	Violations  int            `json:"violations"`
	Known       map[string]int `json:"known,omitempty"`
	Unexplained int            `json:"unexplained"`
	Lost        int            `json:"lost"`
	// Sighted counts, per finding, the scenario's runs that sighted it
	// without a violation labelled with it.
	Sighted map[string]int `json:"sighted,omitempty"`
	// Share is the mean, over the scenario's runs, of each run's share of
	// member-seconds judged without a member lost to a known finding.
	Share float64 `json:"share"`
}

// runDirs finds the run directories under roots (a root with plan.json is
// one).
func runDirs(roots []string) ([]string, error) {
	var dirs []string
	for _, root := range roots {
		if _, err := os.Stat(root); err != nil {
			return nil, badInput("%s: %v", root, err)
		}
		dirs = append(dirs, runDirsBelow(root)...)
	}
	if len(dirs) == 0 {
		return nil, badInput("no run directory (one with a %s) under %s: give directories that groupquake run wrote, or a folder above them", run.PlanFile, strings.Join(roots, " "))
	}
	return dirs, nil
}

// runDirsBelow lists root and the directories below it that hold a run
// (a plan.json), in lexical order; groupquake shrink's trials (a run's
// shrink folder, or trials placed elsewhere with --out, whose plans record
// the run they were shrunk from) only when root is their folder or the
// trial itself.
func runDirsBelow(root string) []string {
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != root && d.Name() == run.ShrinkDir && run.IsRunDir(filepath.Dir(p)) {
			return filepath.SkipDir // groupquake shrink's trials of that run (given as the root, they are read)
		}
		if err == nil && !d.IsDir() && d.Name() == run.PlanFile {
			dir := filepath.Dir(p)
			if dir != root && filepath.Dir(dir) != root && isShrinkTrial(p) {
				return nil
			}
			dirs = append(dirs, dir)
		}
		return nil
	})
	return dirs
}

// isShrinkTrial says whether the plan file plan is a shrink trial's: its
// plan records the run it was shrunk from (run --plan leaves that out of
// the plans it writes).
func isShrinkTrial(plan string) bool {
	b, err := os.ReadFile(plan)
	if err != nil {
		return false
	}
	var p struct {
		Saved *struct {
			ShrunkFrom string `json:"shrunk_from"`
		} `json:"saved"`
	}
	return json.Unmarshal(b, &p) == nil && p.Saved != nil && p.Saved.ShrunkFrom != ""
}

func cmdFindingsTriage(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("findings triage", findingsUsage)
	asJSON := fs.Bool("json", false, "print the runs and the table as JSON")
	roots, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		return badInput("findings triage needs at least one run directory (see 'groupquake findings -h')")
	}
	dirs, err := runDirs(roots)
	if err != nil {
		return err
	}
	var runs []triageRun
	for _, d := range dirs {
		j, err := run.Judge(d)
		var inc *run.IncompleteError
		if errors.As(err, &inc) || err != nil {
			fmt.Fprintf(stderr, "groupquake: skipping %s: %v\n", d, err)
			continue
		}
		runs = append(runs, triage(d, j))
	}
	if len(runs) == 0 {
		return badInput("none of the %d run directories under %s could be judged (see above)", len(dirs), strings.Join(roots, " "))
	}
	rows, sighted := triageTable(runs), triageSightedRuns(runs)
	if *asJSON {
		return writeJSON(stdout, struct {
			SchemaVersion int             `json:"schema_version"`
			Scenarios     []triageRow     `json:"scenarios"`
			Sighted       []triageSighted `json:"sighted"`
			Runs          []triageRun     `json:"runs"`
		}{schemaVersion, rows, sighted, runs})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\truns\thold\tcut short\tviolations\tknown\tunexplained\tmembers lost to a known finding\tmember-seconds judged without them\truns that sighted a finding without a violation")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%.1f%%\t%s\n", r.Scenario, r.Runs, r.Hold, r.CutShort, r.Violations, countsByID(r.Known), r.Unexplained, r.Lost, 100*r.Share, countsByID(r.Sighted))
	}
	tw.Flush()
	if len(sighted) > 0 {
		fmt.Fprintln(stdout, "\nsighted without a matching violation:")
		for _, x := range sighted {
			fmt.Fprintf(stdout, "  %s: %d run(s): %s\n", x.Finding, len(x.Runs), strings.Join(x.Runs, ", "))
		}
	}
	for _, r := range runs {
		if len(r.Violations) == 0 && len(r.Lost) == 0 && len(r.Sighted) == 0 && r.Stopped == "" {
			continue
		}
		fmt.Fprintf(stdout, "\n%s (%s, Kafka %s):\n", r.Dir, r.Scenario, r.Kafka)
		if r.Stopped != "" {
			fmt.Fprintf(stdout, "  cut short: the run %s; judged up to there, not counted as holding\n", r.Stopped)
		}
		for _, x := range r.Violations {
			label, msg := "unexplained", x.Message
			if x.Finding != "" {
				// The message already says "known bug <id>: " when the
				// checker labelled it; say the label once.
				label, msg = "known "+x.Finding, strings.TrimPrefix(msg, "known bug "+x.Finding+": ")
			}
			fmt.Fprintf(stdout, "  %s: %s: %s\n", x.Checker, label, msg)
		}
		for _, l := range r.Lost {
			how := "noted"
			if l.Failed {
				how = "failed"
			}
			fmt.Fprintf(stdout, "  member %s lost for good to %s (%s): the workload went on without it for %s, %.1f%% of the run's member-seconds\n", l.Member, l.Finding, how, l.Without.Round(100*time.Millisecond), 100*l.Share)
		}
		for _, x := range r.Sighted {
			who := ""
			if x.Member != "" {
				who = " (" + x.Member + ")"
			}
			fmt.Fprintf(stdout, "  sighted %s%s, no violation labelled with it: %s\n", x.Finding, who, x.What)
		}
	}
	return nil
}

// countsByID is "0", or "N id, M id" in id order.
func countsByID(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[id], id))
	}
	return strings.Join(parts, ", ")
}

// triage reads one judged run.
func triage(dir string, j run.Judged) triageRun {
	r := triageRun{Dir: dir, Scenario: j.Plan.Options.Scenario, Kafka: j.Plan.Options.Kafka, Holds: j.Report.Holds && j.Report.Stopped == "", Stopped: j.Report.Stopped}
	if r.Scenario == "" {
		r.Scenario = "(none)"
	}
	for _, v := range j.Report.Verdicts {
		for _, x := range v.Violations {
			r.Violations = append(r.Violations, triageViolation{Checker: v.Name, Finding: x.Finding, Message: firstLine(x.Message)})
		}
		for _, k := range v.Known {
			if k.Without > 0 {
				r.Lost = append(r.Lost, triageLoss{Member: k.Member, Finding: k.Finding, Failed: k.Failed, Without: k.Without, WithoutS: k.Without.Seconds(), Share: k.Share})
				r.Share += k.Share
			}
		}
	}
	for _, s := range j.Report.SightedWithoutViolation() {
		r.Sighted = append(r.Sighted, triageSighting{Finding: s.Finding, Member: s.Member, What: firstLine(s.What)})
	}
	return r
}

// triageSightedRuns lists, per finding in id order, the runs (their
// directories, in the order given) that sighted it without a violation
// labelled with it; [] when none did.
func triageSightedRuns(runs []triageRun) []triageSighted {
	by := map[string][]string{}
	for _, r := range runs {
		for _, x := range r.Sighted {
			if !slices.Contains(by[x.Finding], r.Dir) {
				by[x.Finding] = append(by[x.Finding], r.Dir)
			}
		}
	}
	out := []triageSighted{}
	for _, id := range slices.Sorted(maps.Keys(by)) {
		out = append(out, triageSighted{Finding: id, Runs: by[id]})
	}
	return out
}

// triageTable sums the runs per scenario, in name order.
func triageTable(runs []triageRun) []triageRow {
	by := map[string]*triageRow{}
	for _, r := range runs {
		row := by[r.Scenario]
		if row == nil {
			row = &triageRow{Scenario: r.Scenario}
			by[r.Scenario] = row
		}
		row.Runs++
		if r.Holds {
			row.Hold++
		}
		if r.Stopped != "" {
			row.CutShort++
		}
		for _, x := range r.Violations {
			row.Violations++
			if x.Finding == "" {
				row.Unexplained++
				continue
			}
			if row.Known == nil {
				row.Known = map[string]int{}
			}
			row.Known[x.Finding]++
		}
		row.Lost += len(r.Lost)
		row.Share += r.Share
		counted := map[string]bool{}
		for _, x := range r.Sighted {
			if counted[x.Finding] {
				continue
			}
			counted[x.Finding] = true
			if row.Sighted == nil {
				row.Sighted = map[string]int{}
			}
			row.Sighted[x.Finding]++
		}
	}
	var out []triageRow
	for _, s := range slices.Sorted(maps.Keys(by)) {
		row := by[s]
		row.Share /= float64(row.Runs)
		out = append(out, *row)
	}
	return out
}
