package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/differential"
	"github.com/groupquake/groupquake/harness/versiondiff"
)

const diffUsage = `Usage: groupquake diff --from OLD [--to NEW] [--embedded] [--all] [--json]

Compares what two Kafka releases do to consumer groups. The conformance
vectors (coordinator/testdata, as the differential mode replays them) are
sent to a 1-node cluster of OLD, then to one of NEW, each beside the
reference coordinator with that release's version profile; every answer
that differs between the two releases is listed, explained by the profile
behaviours (coordinator/version.Profile's fields) whose change alone
changes it in the reference, or as unexplained: a release that answered
otherwise than its profile predicts, or a difference no single behaviour
accounts for.

--embedded compares the two releases' profiles in the reference coordinator
alone (no Docker): every answer and the __consumer_offsets records written
for it.

Exit status: 0 every difference is explained (a release diffed with itself
has none), 1 an unexplained difference, 2 bad input (nothing is started),
3 the comparison could not be carried out.
`

// diffJSON is what `diff --json` prints.
type diffJSON struct {
	Mode string `json:"mode"` // "kafka" or "embedded"
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
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
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
	secs, err := differential.Vectors()
	if err != nil {
		return fmt.Errorf("loading the conformance vectors: %w", err)
	}
	pf, pt := f.Profile(), t.Profile()
	logf := logTo(stderr)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()

	var a, b versiondiff.Outcomes
	mode := "embedded"
	if *embedded {
		if a, err = versiondiff.ModelOutcomes(pf, secs); err != nil {
			return fmt.Errorf("reference coordinator as %s: %w", f, err)
		}
		if b, err = versiondiff.ModelOutcomes(pt, secs); err != nil {
			return fmt.Errorf("reference coordinator as %s: %w", t, err)
		}
	} else {
		mode = "kafka"
		if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
			return exitError{exitFailed, fmt.Sprintf("diff starts Kafka containers and needs a Docker engine: %v (run `groupquake engine up` as root, or use --embedded to compare the profiles alone)", err)}
		}
		cfg := versiondiff.RealConfig{Image: cluster.ImageOptions{Source: cluster.ImageSource(*imageSource), Logf: logf}, BasePort: *basePort, Logf: logf}
		for _, v := range []version.Version{f, t} {
			if _, err := cluster.EnsureImage(ctx, v.String(), cfg.Image); err != nil {
				return exitError{exitFailed, fmt.Sprintf("image of Kafka %s: %v", v, err)}
			}
		}
		for _, side := range []struct {
			v   version.Version
			out *versiondiff.Outcomes
		}{{f, &a}, {t, &b}} {
			logf("replaying %d vector sections against Kafka %s", len(secs), side.v)
			rep, err := versiondiff.RunVectors(ctx, side.v.String(), secs, cfg)
			if err != nil {
				return exitError{exitFailed, fmt.Sprintf("Kafka %s: %v", side.v, err)}
			}
			logf("Kafka %s: %d same as its profile predicts, %d different, %d skipped", side.v, rep.Count(differential.Same), rep.Count(differential.Different), rep.Count(differential.Skipped))
			*side.out = versiondiff.RealOutcomes(rep)
		}
	}
	attr, err := versiondiff.Attribute(pf, pt, secs)
	if err != nil {
		return fmt.Errorf("attributing the differences to profile behaviours: %w", err)
	}
	res := versiondiff.Compare(a, b, versiondiff.Behaviours(pf, pt), attr)
	ex, un := res.Count()
	logf("diff %s → %s (%s) took %v", f, t, mode, time.Since(start).Round(100*time.Millisecond))
	if *asJSON {
		if res.Differences == nil {
			res.Differences = []versiondiff.Difference{}
		}
		if err := writeJSON(stdout, diffJSON{Mode: mode, Result: res, Explained: ex, Unexplained: un}); err != nil {
			return err
		}
	} else {
		what := "real brokers, one after the other"
		if *embedded {
			what = "the reference coordinator's profiles (--embedded)"
		}
		fmt.Fprintf(stdout, "groupquake diff: %s\n%s", what, res.Summary(*all))
	}
	if un > 0 {
		return exitError{exitViolation, fmt.Sprintf("%d of %d differences between Kafka %s and %s are not explained by the version profiles", un, ex+un, f, t)}
	}
	return nil
}
