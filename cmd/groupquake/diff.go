package main

import (
	"context"
	"errors"
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
	"github.com/groupquake/groupquake/harness/versiondiff"
)

const diffUsage = `Usage: groupquake diff --from OLD [--to NEW] [--embedded] [--scenarios all|none|NAMES] [--all] [--json]

Compares what two Kafka releases do to consumer groups, OLD first, then NEW,
each on a 1-node cluster started for it and removed after:

  - the conformance vectors (coordinator/testdata, as the differential mode
    replays them), each answer beside the reference coordinator's with the
    release's version profile;
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
	versiondiff.Result
	Explained   int `json:"explained"`
	Unexplained int `json:"unexplained"`
}

func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", diffUsage)
	from := fs.String("from", "", "the older Kafka release (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	to := fs.String("to", version.Default.String(), "the newer Kafka release (may be --from itself)")
	embedded := fs.Bool("embedded", false, "compare the reference coordinator's profiles of the two releases, no Docker")
	all := fs.Bool("all", false, "print every difference in full, explained ones too")
	asJSON := fs.Bool("json", false, "print every difference as JSON on stdout")
	timeout := fs.Duration("timeout", 15*time.Minute, "how long the comparison may take")
	basePort := fs.Int("base-port", 0, "loopback port of each cluster's broker (0: a free port)")
	imageSource := fs.String("image-source", "auto", "auto, build or official")
	scenarios := fs.String("scenarios", "all", "scripted scenarios to run on both releases: all, none, or names ("+strings.Join(scenarioNames(), ", ")+")")
	outDir := fs.String("out", "", "directory of the scenarios' run directories and diff.txt, diff.json (default ./runs/<time>-diff-OLD-NEW/)")
	var lv levelFlags
	lv.register(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
	}
	con, err := lv.console(stderr)
	if err != nil {
		return err
	}
	set := given(fs)
	if *embedded {
		for _, name := range []string{"image-source", "base-port"} {
			if set[name] {
				return badInput("--%s applies to the Kafka containers diff starts; --embedded starts none: leave --%s out, or --embedded", name, name)
			}
		}
	}
	if *timeout <= 0 {
		return badInput("--timeout %s: give a positive time, such as 15m", *timeout)
	}
	if *basePort < 0 || *basePort > 65535 {
		return badInput("--base-port %d: give a port from 1 to 65535, or 0 for a free port", *basePort)
	}
	if *from == "" {
		return badInput("--from is required: the older Kafka release (served: %s)", strings.Join(cluster.KafkaVersions, ", "))
	}
	f, t, err := version.CheckUpgrade(*from, *to)
	if err != nil && (f == 0 || f != t) {
		// A release diffed with itself is allowed: its diff is empty.
		return badInput("%v", err)
	}
	switch cluster.ImageSource(*imageSource) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return badInput("--image-source %q: use auto, build or official", *imageSource)
	}
	ss, err := pickScenarios(*scenarios)
	if err != nil {
		return err
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join(defaultRunsDir(), time.Now().UTC().Format("20060102T150405Z")+"-diff-"+f.String()+"-"+t.String())
	}
	if len(ss) > 0 { // without scenarios nothing is written
		if err := outputDir("diff --out", dir, "diff.txt", "diff.json"); err != nil {
			return err
		}
	}
	// Each release's scenario runs go to a directory of its own, also when
	// a release is diffed with itself.
	sideDir := map[string]string{"from": filepath.Join(dir, "from-"+f.String()), "to": filepath.Join(dir, "to-"+t.String())}
	if err := checkOut(dir); err != nil {
		return badInput("--out %s: %v", dir, err)
	}
	for _, d := range sideDir {
		for _, sc := range ss {
			if err := checkOut(filepath.Join(d, sc.Name)); err != nil {
				return badInput("--out %s: %v", dir, err)
			}
		}
	}
	secs, err := differential.Vectors()
	if err != nil {
		return fmt.Errorf("loading the conformance vectors: %w", err)
	}
	pf, pt := f.Profile(), t.Profile()
	logf := con.Logf
	stopWatch := con.watch(ctx)
	defer stopWatch()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()

	var a, b versiondiff.Outcomes
	attr := map[string][]string{}
	mode := "embedded"
	scfg := versiondiff.ScenarioConfig{Embedded: *embedded, Logf: logf, OnPhase: onPhase}
	onSide := func(side string) versiondiff.ScenarioConfig { c := scfg; c.Dir = sideDir[side]; return c }
	if *embedded {
		if a, err = versiondiff.ModelOutcomes(pf, secs); err != nil {
			return fmt.Errorf("reference coordinator as %s: %w", f, err)
		}
		if b, err = versiondiff.ModelOutcomes(pt, secs); err != nil {
			return fmt.Errorf("reference coordinator as %s: %w", t, err)
		}
		if len(ss) > 0 {
			// The embedded clusters need no Docker: both releases at once.
			var ma, mb versiondiff.Measured
			var ea, eb error
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				ma, ea = versiondiff.RunScenarios(ctx, f, ss, onSide("from"))
			}()
			mb, eb = versiondiff.RunScenarios(ctx, t, ss, onSide("to"))
			wg.Wait()
			if err := errors.Join(ea, eb); err != nil {
				return exitError{exitFailed, err.Error()}
			}
			a.Items, b.Items = append(a.Items, ma.Outcomes...), append(b.Items, mb.Outcomes...)
			maps.Copy(attr, ma.Attribution)
			maps.Copy(attr, mb.Attribution)
		}
	} else {
		mode = "kafka"
		if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
			return exitError{exitFailed, fmt.Sprintf("diff starts Kafka containers and needs a Docker engine: %v (run `groupquake engine up` as root, or use --embedded to compare the profiles alone)", err)}
		}
		cfg := versiondiff.RealConfig{Image: cluster.ImageOptions{Source: cluster.ImageSource(*imageSource), Logf: logf}, BasePort: *basePort, Logf: logf}
		scfg.Image, scfg.BasePort = cfg.Image, cfg.BasePort
		for _, v := range []version.Version{f, t} {
			if _, err := cluster.EnsureImage(ctx, v.String(), cfg.Image); err != nil {
				return exitError{exitFailed, fmt.Sprintf("image of Kafka %s: %v", v, err)}
			}
		}
		for _, side := range []struct {
			name string
			v    version.Version
			out  *versiondiff.Outcomes
		}{{"from", f, &a}, {"to", t, &b}} {
			logf("replaying %d vector sections against Kafka %s", len(secs), side.v)
			rep, err := versiondiff.RunVectors(ctx, side.v.String(), secs, cfg)
			if err != nil {
				return exitError{exitFailed, fmt.Sprintf("Kafka %s: %v", side.v, err)}
			}
			logf("Kafka %s: %d answers as its profile predicts, %d different, %d skipped", side.v, rep.Count(differential.Same), rep.Count(differential.Different), rep.Count(differential.Skipped))
			*side.out = versiondiff.RealOutcomes(rep)
			if len(ss) > 0 {
				m, err := versiondiff.RunScenarios(ctx, side.v, ss, onSide(side.name))
				if err != nil {
					return exitError{exitFailed, err.Error()}
				}
				side.out.Items = append(side.out.Items, m.Outcomes...)
				maps.Copy(attr, m.Attribution)
			}
		}
	}
	vattr, err := versiondiff.Attribute(pf, pt, secs)
	if err != nil {
		return fmt.Errorf("attributing the differences to profile behaviours: %w", err)
	}
	maps.Copy(attr, vattr)
	res := versiondiff.Compare(a, b, versiondiff.Behaviours(pf, pt), attr)
	ex, un := res.Count()
	logf("diff %s → %s (%s) took %v", f, t, mode, time.Since(start).Round(100*time.Millisecond))
	if res.Differences == nil {
		res.Differences = []versiondiff.Difference{}
	}
	if res.Behaviours == nil {
		res.Behaviours = []versiondiff.Behaviour{}
	}
	doc := diffJSON{SchemaVersion: schemaVersion, Mode: mode, Result: res, Explained: ex, Unexplained: un}
	if len(ss) > 0 {
		doc.Dir = dir
		werr := os.MkdirAll(dir, 0o755)
		if werr == nil {
			werr = errors.Join(run.WriteFileAtomic(filepath.Join(dir, "diff.txt"), []byte(res.String()), 0o644), writeJSONFile(filepath.Join(dir, "diff.json"), doc))
		}
		if werr != nil {
			logf("writing the diff: %v", werr)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, doc); err != nil {
			return err
		}
	} else {
		what := "real brokers, one after the other"
		if *embedded {
			what = "the reference coordinator's profiles and the embedded cluster (--embedded)"
		}
		fmt.Fprintf(stdout, "groupquake diff: %s\n%s", what, res.Summary(*all))
		if len(ss) > 0 {
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
	for _, s := range versiondiff.Scenarios {
		out = append(out, s.Name)
	}
	return out
}

// pickScenarios reads --scenarios: all, none, or a comma-separated list of
// names.
func pickScenarios(spec string) ([]versiondiff.Scenario, error) {
	switch spec {
	case "all":
		return versiondiff.Scenarios, nil
	case "none", "":
		return nil, nil
	}
	var out []versiondiff.Scenario
	for _, name := range strings.Split(spec, ",") {
		i := slices.IndexFunc(versiondiff.Scenarios, func(s versiondiff.Scenario) bool { return s.Name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, badInput("--scenarios: unknown scenario %q: use all, none, or some of %s", name, strings.Join(scenarioNames(), ", "))
		}
		out = append(out, versiondiff.Scenarios[i])
	}
	return out, nil
}
