package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/differential"
	"github.com/groupquake/groupquake/harness/run"
)

const diffUsage = `Usage: groupquake diff --from OLD [--to NEW] [--embedded] [--scenarios all|none|NAMES] [--all] [--json]

Compares what two Kafka releases do to consumer groups, OLD first, then NEW,
each on a 1-node cluster started for it and removed after:

  - the conformance vectors (coordinator/testdata, as the differential mode
    replays them; share groups' too: on a release without production-ready
    share groups the reference refuses them, as such a broker does), each
    answer beside the reference coordinator's with the release's version
    profile;
  - the scripted scenarios (consumer-group, classic-group: a seeded 10 s
    baseline run of three members of groupquake's and kgo's), measured:
    first epoch, rebalances, longest partition stop, the checkers' tally,
    and per record type the __consumer_offsets records written.

Every point where the releases differ is listed, explained by the profile
behaviours (coordinator/version.Profile's fields) that change it (for a
vector answer, those whose flip alone changes it in the reference), or as
unexplained: a release that did otherwise than its profile predicts, or a
difference no behaviour accounts for. Rebalances and stops count as
different only beyond their slack (1 rebalance; 1 s or half the longer stop).

--embedded runs the same without Docker: the vectors through the reference
coordinator alone (every answer and the records written for it), the
scenarios on the embedded cluster as each release.

The scenarios' run directories, diff.txt (every difference in full) and
diff.json go to --out (default ./runs/<time>-diff-OLD-NEW/).

Exit status: 0 every difference is explained (a release diffed with itself
has none), 1 an unexplained difference, 2 bad input (nothing is started),
3 the comparison could not be carried out.
`

// diffJSON is what `diff --json` prints.
type diffJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Mode          string `json:"mode"` // "kafka" or "embedded"
	// Dir holds the scenarios' run directories, diff.txt and diff.json.
	Dir string `json:"dir,omitempty"`
	differential.ReleaseDiff
	Explained   int `json:"explained"`
	Unexplained int `json:"unexplained"`
}

// diffFlags are the flags of `groupquake diff`.
type diffFlags struct {
	from, to    string
	embedded    bool
	all         bool
	asJSON      bool
	timeout     time.Duration
	basePort    int
	imageSource string
	scenarios   string
	out         string
}

func (d *diffFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.from, "from", "", "the older Kafka release (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	fs.StringVar(&d.to, "to", version.Default.String(), "the newer Kafka release (may be --from itself)")
	fs.BoolVar(&d.embedded, "embedded", false, "compare the reference coordinator's profiles of the two releases, no Docker")
	fs.BoolVar(&d.all, "all", false, "print every difference in full, explained ones too")
	fs.BoolVar(&d.asJSON, "json", false, "print every difference as JSON on stdout")
	fs.DurationVar(&d.timeout, "timeout", 15*time.Minute, "how long the comparison may take")
	fs.IntVar(&d.basePort, "base-port", 0, "loopback port of each cluster's broker (0: a free port)")
	fs.StringVar(&d.imageSource, "image-source", "auto", "auto, build or official")
	fs.StringVar(&d.scenarios, "scenarios", "all", "scripted scenarios to run on both releases: all, none, or names ("+strings.Join(scenarioNames(), ", ")+")")
	fs.StringVar(&d.out, "out", "", "directory of the scenarios' run directories and diff.txt, diff.json (default ./runs/<time>-diff-OLD-NEW/)")
}

// cmdDiff is `groupquake diff`: the conformance vectors and the scripted
// scenarios on two Kafka releases, every difference explained by the
// version profiles or reported.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", diffUsage)
	var fl diffFlags
	fl.register(fs)
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	f, t, err := fl.validate(given(fs))
	if err != nil {
		return err
	}
	ss, err := pickScenarios(fl.scenarios)
	if err != nil {
		return err
	}
	dir, sideDir, err := fl.prepareOut(f, t, ss)
	if err != nil {
		return err
	}
	secs, err := differential.Vectors()
	if err != nil {
		return fmt.Errorf("loading the conformance vectors: %w", err)
	}
	logf := con.Logf
	secs, why := differential.ShareComparable(f.Profile(), t.Profile(), secs)
	if why != "" {
		logf("%s", why)
	}
	stopWatch := con.watch(ctx)
	defer stopWatch()
	ctx, cancel := context.WithTimeout(ctx, fl.timeout)
	defer cancel()
	start := time.Now()

	d := &differ{
		ctx: ctx, from: f, to: t, secs: secs, ss: ss, sideDir: sideDir, attr: map[string][]string{}, logf: logf,
		scfg: differential.ScenarioConfig{Embedded: fl.embedded, Logf: logf, OnPhase: onPhase},
	}
	var a, b differential.ReleaseOutcomes
	mode := "embedded"
	if fl.embedded {
		a, b, err = d.embedded()
	} else {
		mode = "kafka"
		a, b, err = d.real(fl.imageSource, fl.basePort)
	}
	if err != nil {
		return err
	}
	res, err := d.compare(a, b)
	if err != nil {
		return err
	}
	logf("diff %s → %s (%s) took %v", f, t, mode, time.Since(start).Round(100*time.Millisecond))
	return fl.report(stdout, logf, res, mode, dir, len(ss) > 0, f, t)
}

// validate refuses the flags of a diff that cannot run (exit 2, nothing
// started) and returns the two releases. set holds the flags the command
// line gave.
func (d *diffFlags) validate(set map[string]bool) (f, t version.Version, err error) {
	if d.embedded {
		for _, name := range []string{"image-source", "base-port"} {
			if set[name] {
				return f, t, badInput("--%s applies to the Kafka containers diff starts; --embedded starts none: leave --%s out, or --embedded", name, name)
			}
		}
	}
	if d.timeout <= 0 {
		return f, t, badInput("--timeout %s: give a positive time, such as 15m", d.timeout)
	}
	if d.basePort < 0 || d.basePort > 65535 {
		return f, t, badInput("--base-port %d: give a port from 1 to 65535, or 0 for a free port", d.basePort)
	}
	if d.from == "" {
		return f, t, badInput("--from is required: the older Kafka release (served: %s)", strings.Join(cluster.KafkaVersions, ", "))
	}
	f, t, err = version.CheckUpgrade(d.from, d.to)
	if err != nil && (f == 0 || f != t) {
		// A release diffed with itself is allowed: its diff is empty.
		return f, t, badInput("%v", err)
	}
	switch cluster.ImageSource(d.imageSource) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return f, t, badInput("--image-source %q: use auto, build or official", d.imageSource)
	}
	return f, t, nil
}

// prepareOut returns the diff's directory (--out or a new one under the runs
// directory) and each release's directory of scenario runs in it, refusing
// directories that already hold a run.
func (d *diffFlags) prepareOut(f, t version.Version, ss []differential.Scenario) (string, map[string]string, error) {
	dir := d.out
	if dir == "" {
		dir = newRunDir("diff-" + f.String() + "-" + t.String())
	}
	if len(ss) > 0 { // without scenarios nothing is written
		if err := outputDir("diff --out", dir, "diff.txt", "diff.json"); err != nil {
			return "", nil, err
		}
	}
	// Each release's scenario runs go to a directory of its own, also when
	// a release is diffed with itself.
	sideDir := map[string]string{"from": filepath.Join(dir, "from-"+f.String()), "to": filepath.Join(dir, "to-"+t.String())}
	if err := checkOut(dir); err != nil {
		return "", nil, badInput("--out %s: %v", dir, err)
	}
	for _, sd := range sideDir {
		for _, sc := range ss {
			if err := checkOut(filepath.Join(sd, sc.Name)); err != nil {
				return "", nil, badInput("--out %s: %v", dir, err)
			}
		}
	}
	return dir, sideDir, nil
}

// differ gathers the outcomes of two releases, from and to, and the profile
// behaviours each outcome's difference is attributed to.
type differ struct {
	ctx      context.Context
	from, to version.Version
	secs     []differential.Section
	ss       []differential.Scenario
	scfg     differential.ScenarioConfig
	sideDir  map[string]string
	attr     map[string][]string
	logf     func(string, ...any)
}

// onSide is the scenario configuration of one side, "from" or "to".
func (d *differ) onSide(side string) differential.ScenarioConfig {
	c := d.scfg
	c.Dir = d.sideDir[side]
	return c
}

// embedded gathers both releases' outcomes without Docker: the vectors
// through the reference coordinator with each release's profile, and the
// scenarios on the embedded cluster, both releases at once.
func (d *differ) embedded() (a, b differential.ReleaseOutcomes, err error) {
	f, t := d.from, d.to
	if a, err = differential.ModelOutcomes(f.Profile(), d.secs); err != nil {
		return a, b, fmt.Errorf("reference coordinator as %s: %w", f, err)
	}
	if b, err = differential.ModelOutcomes(t.Profile(), d.secs); err != nil {
		return a, b, fmt.Errorf("reference coordinator as %s: %w", t, err)
	}
	if len(d.ss) == 0 {
		return a, b, nil
	}
	// The embedded clusters need no Docker: both releases at once.
	var ma, mb differential.Measured
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ma, ea = differential.RunScenarios(d.ctx, f, d.ss, d.onSide("from"))
	}()
	mb, eb = differential.RunScenarios(d.ctx, t, d.ss, d.onSide("to"))
	wg.Wait()
	if err := errors.Join(ea, eb); err != nil {
		return a, b, exitError{exitFailed, err.Error()}
	}
	a.Items, b.Items = append(a.Items, ma.Outcomes...), append(b.Items, mb.Outcomes...)
	maps.Copy(d.attr, ma.Attribution)
	maps.Copy(d.attr, mb.Attribution)
	return a, b, nil
}

// real gathers both releases' outcomes on Kafka containers, one release
// after the other: the vectors replayed against a real broker, then the
// scenarios.
func (d *differ) real(imageSource string, basePort int) (a, b differential.ReleaseOutcomes, err error) {
	ctx, logf := d.ctx, d.logf
	if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
		return a, b, exitError{exitFailed, fmt.Sprintf("diff starts Kafka containers and needs a Docker engine: %v (run `groupquake engine up` as root, or use --embedded to compare the profiles alone)", err)}
	}
	cfg := differential.RealConfig{Image: cluster.ImageOptions{Source: cluster.ImageSource(imageSource), Logf: logf}, BasePort: basePort, Logf: logf}
	d.scfg.Image, d.scfg.BasePort = cfg.Image, cfg.BasePort
	for _, v := range []version.Version{d.from, d.to} {
		if _, err := cluster.EnsureImage(ctx, v.String(), cfg.Image); err != nil {
			return a, b, exitError{exitFailed, fmt.Sprintf("image of Kafka %s: %v", v, err)}
		}
	}
	for _, side := range []struct {
		name string
		v    version.Version
		out  *differential.ReleaseOutcomes
	}{{"from", d.from, &a}, {"to", d.to, &b}} {
		if err := d.realSide(side.name, side.v, cfg, side.out); err != nil {
			return a, b, err
		}
	}
	return a, b, nil
}

// realSide replays the vectors against Kafka v and runs the scenarios on it,
// into out.
func (d *differ) realSide(name string, v version.Version, cfg differential.RealConfig, out *differential.ReleaseOutcomes) error {
	d.logf("replaying %d vector sections against Kafka %s", len(d.secs), v)
	rep, err := differential.RunVectors(d.ctx, v.String(), d.secs, cfg)
	if err != nil {
		return exitError{exitFailed, fmt.Sprintf("Kafka %s: %v", v, err)}
	}
	d.logf("Kafka %s: %d answers as its profile predicts, %d different, %d skipped", v, rep.Count(differential.Same), rep.Count(differential.Different), rep.Count(differential.Skipped))
	*out = differential.RealOutcomes(rep)
	if len(d.ss) > 0 {
		m, err := differential.RunScenarios(d.ctx, v, d.ss, d.onSide(name))
		if err != nil {
			return exitError{exitFailed, err.Error()}
		}
		out.Items = append(out.Items, m.Outcomes...)
		maps.Copy(d.attr, m.Attribution)
	}
	return nil
}

// compare attributes the vectors' differences to the profile behaviours and
// compares the two releases' outcomes.
func (d *differ) compare(a, b differential.ReleaseOutcomes) (differential.ReleaseDiff, error) {
	pf, pt := d.from.Profile(), d.to.Profile()
	vattr, err := differential.Attribute(pf, pt, d.secs)
	if err != nil {
		return differential.ReleaseDiff{}, fmt.Errorf("attributing the differences to profile behaviours: %w", err)
	}
	maps.Copy(d.attr, vattr)
	return differential.CompareReleases(a, b, differential.Behaviours(pf, pt), d.attr), nil
}

// report writes diff.txt and diff.json when scenarios ran, prints the diff
// (as JSON with --json), and fails the command when a difference is not
// explained.
func (d *diffFlags) report(stdout io.Writer, logf func(string, ...any), res differential.ReleaseDiff, mode, dir string, scenarios bool, f, t version.Version) error {
	ex, un := res.Count()
	if res.Differences == nil {
		res.Differences = []differential.Difference{}
	}
	if res.Behaviours == nil {
		res.Behaviours = []differential.Behaviour{}
	}
	doc := diffJSON{SchemaVersion: schemaVersion, Mode: mode, ReleaseDiff: res, Explained: ex, Unexplained: un}
	if scenarios {
		doc.Dir = dir
		werr := os.MkdirAll(dir, 0o755)
		if werr == nil {
			werr = errors.Join(run.WriteFileAtomic(filepath.Join(dir, "diff.txt"), []byte(res.String()), 0o644), writeJSONFile(filepath.Join(dir, "diff.json"), doc))
		}
		if werr != nil {
			logf("writing the diff: %v", werr)
		}
	}
	if d.asJSON {
		if err := writeJSON(stdout, doc); err != nil {
			return err
		}
	} else {
		what := "real brokers, one after the other"
		if d.embedded {
			what = "the reference coordinator's profiles and the embedded cluster (--embedded)"
		}
		fmt.Fprintf(stdout, "groupquake diff: %s\n%s", what, res.Summary(d.all))
		if scenarios {
			fmt.Fprintf(stdout, "scenario run directories and diff.txt: %s\n", dir)
		}
	}
	if un > 0 {
		return exitError{exitViolation, fmt.Sprintf("%d of %d differences between Kafka %s and %s are not explained by the version profiles", un, ex+un, f, t)}
	}
	return nil
}

func scenarioNames() []string {
	var out []string
	for _, s := range differential.Scenarios {
		out = append(out, s.Name)
	}
	return out
}

// pickScenarios reads --scenarios: all, none, or a comma-separated list of
// names.
func pickScenarios(spec string) ([]differential.Scenario, error) {
	switch spec {
	case "all":
		return differential.Scenarios, nil
	case "none", "":
		return nil, nil
	}
	var out []differential.Scenario
	for _, name := range strings.Split(spec, ",") {
		i := slices.IndexFunc(differential.Scenarios, func(s differential.Scenario) bool { return s.Name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, badInput("--scenarios: unknown scenario %q: use all, none, or some of %s", name, strings.Join(scenarioNames(), ", "))
		}
		out = append(out, differential.Scenarios[i])
	}
	return out, nil
}
