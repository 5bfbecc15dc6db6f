package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/run"
)

// exitRunFailed is the status of a run that could not be carried out (no
// cluster, a broken history writer), as opposed to one whose verdicts found a
// violation (exitViolation).
const exitRunFailed = 3

// runFlags are the flags of `groupquake run`.
type runFlags struct {
	seed        string
	scenario    string
	out         string
	duration    time.Duration
	version     string
	nodes       int
	controllers int
	bootstrap   string
	embedded    bool
	nodeControl string
	toxiproxy   string
	basePort    int
	imageSource string
	records     int
	rate        int
	partitions  int
	members     int
	kinds       string
	topic       string
	group       string
	bound       time.Duration
	keep        bool
	faults      string
	intensity   string
	clients     string
}

func (f *runFlags) register(fs *flag.FlagSet, kinds []string) {
	fs.StringVar(&f.seed, "seed", "", "seed of the plan (default: a random one, printed)")
	fs.StringVar(&f.scenario, "scenario", run.ScenarioBaseline, "scenario: "+strings.Join(run.Scenarios(), ", "))
	fs.StringVar(&f.out, "out", "", "run directory (default: ./runs/<time>-<seed>/)")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "length of the workload phase")
	fs.StringVar(&f.version, "kafka", cluster.DefaultKafkaVersion, "Kafka version of the container cluster (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	fs.IntVar(&f.nodes, "nodes", 1, "broker nodes: 1 or 3")
	fs.IntVar(&f.controllers, "controllers", 0, "separate controller nodes: 0, 1 or 3")
	fs.StringVar(&f.bootstrap, "bootstrap", "", "host:port[,host:port] of an external cluster to use instead of containers")
	fs.BoolVar(&f.embedded, "embedded", false, "run against the reference coordinator served in this process (no Docker, no Java); the default when no Docker engine can be had")
	fs.StringVar(&f.nodeControl, "node-control", "", "external cluster: command template for node faults, e.g. 'ssh {{.Host}} sudo systemctl {{.Action}} kafka'")
	fs.StringVar(&f.toxiproxy, "toxiproxy", "", "API address of an external toxiproxy (default: embedded)")
	fs.IntVar(&f.basePort, "base-port", 0, "loopback port of the first broker (0: free ports)")
	fs.StringVar(&f.imageSource, "image-source", "auto", "auto, build or official")
	fs.IntVar(&f.records, "records", 0, "stop producing after this many records (0: produce for the whole --duration)")
	fs.IntVar(&f.rate, "rate", 0, "records per second over all partitions (0: the seed chooses 20–60)")
	fs.IntVar(&f.partitions, "partitions", 0, "partitions of the workload topic (0: the seed chooses 3–8)")
	fs.IntVar(&f.members, "members", 0, "consumer group members (0: as many as --kinds, or 2–4 chosen by the seed)")
	fs.StringVar(&f.kinds, "kinds", "", "member kinds, comma-separated, cycled over the members (default: the seed chooses among "+strings.Join(kinds, ", ")+"; deliberately broken kinds run only when named: "+strings.Join(run.BrokenRegistry().Names(), ", ")+"; so do the Java KafkaConsumer kinds, which need a JDK and Maven: "+strings.Join(javaKindNames(), ", ")+")")
	fs.StringVar(&f.clients, "kafka-clients", "", "kafka-clients version of the Java member kinds (default: the cluster's --kafka version), resolved from Maven Central and cached")
	fs.StringVar(&f.topic, "topic", "", "workload topic (default: gq-<seed>-records)")
	fs.StringVar(&f.group, "group", "", "consumer group (default: gq-<seed>)")
	fs.StringVar(&f.faults, "faults", "", "fault kinds the schedule may draw, comma-separated, or families (node, link, churn); default: the scenario's. Kinds: "+kindNames())
	fs.StringVar(&f.intensity, "intensity", "normal", "faults per minute of workload: low, normal, high, or a rate such as 12/min")
	fs.DurationVar(&f.bound, "bound", 30*time.Minute, "how long the whole run may take before it is stopped (it is then judged as far as it got)")
	fs.BoolVar(&f.keep, "keep", false, "keep the container cluster running after the run (remove it later with `groupquake sweep --all`)")
}

// newSeed draws a seed from the operating system: the plan's randomness is
// all derived from it, and the global math/rand is never used.
func newSeed() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]) >> 1, nil // keep it positive as an int64 too
}

// defaultRunsDir is ./runs, except in a Go package's folder (a test running
// the command from its package), where it is the module root's runs/:
// generated output never goes into source folders.
func defaultRunsDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "runs"
	}
	if gos, _ := filepath.Glob(filepath.Join(wd, "*.go")); len(gos) == 0 {
		return "runs"
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "runs")
		}
		if filepath.Dir(d) == d {
			return "runs"
		}
	}
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	reg := run.DefaultRegistry()
	var f runFlags
	f.register(fs, reg.Names())
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: groupquake run [flags]

Plans a run from a seed (printed, and saved in plan.json with the command that
reruns it), carries it out (setup, warm-up, workload with the scenario's faults,
heal, quiesce, final observations, teardown) and judges it. The run directory
holds plan.json, rerun.sh, history.jsonl, observations.json and verdicts.json;
a run that is killed leaves what it did, and 'groupquake check DIR' judges it.

Exit status: 0 every checker holds, 1 a violation, 2 bad flags, 3 the run could
not be carried out (its verdicts, if it got that far, are still written).

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitError{exitBadDir, fmt.Sprintf("run takes no arguments, got %q", fs.Args())}
	}
	var seed uint64
	if f.seed == "" {
		s, err := newSeed()
		if err != nil {
			return fmt.Errorf("drawing a seed: %w", err)
		}
		seed = s
	} else {
		s, err := strconv.ParseUint(f.seed, 10, 64)
		if err != nil {
			return exitError{exitBadDir, fmt.Sprintf("--seed %q is not an unsigned 64-bit integer", f.seed)}
		}
		seed = s
	}
	o := run.Options{
		Scenario: f.scenario, Duration: f.duration, Members: f.members, Partitions: int32(f.partitions),
		Rate: f.rate, Records: f.records, Topic: f.topic, Group: f.group,
	}
	if f.kinds != "" {
		o.Kinds = strings.Split(f.kinds, ",")
		reg = reg.WithBroken(o.Kinds) // broken-* kinds run only when named (harness/run.BrokenKinds)
		jreg, err := reg.WithJava(o.Kinds, &java.Toolchain{Logf: logTo(stderr)})
		if err != nil {
			return exitError{exitBadDir, "--kinds: " + err.Error()}
		}
		reg = jreg
	}
	if f.clients != "" {
		if !slices.ContainsFunc(o.Kinds, run.IsJavaKind) {
			return exitError{exitBadDir, fmt.Sprintf("--kafka-clients %s: no Java member kind in --kinds (%s) would use it", f.clients, strings.Join(javaKindNames(), ", "))}
		}
		if err := java.CheckVersion(f.clients); err != nil {
			return exitError{exitBadDir, "--kafka-clients: " + err.Error()}
		}
		o.KafkaClients = f.clients
	}
	if f.faults != "" {
		ks, err := faults.ParseKinds(f.faults)
		if err != nil {
			return exitError{exitBadDir, "--faults: " + err.Error()}
		}
		o.Faults = ks
	}
	if _, err := faults.ParseIntensity(f.intensity); err != nil {
		return exitError{exitBadDir, "--intensity: " + err.Error()}
	}
	if f.intensity != "normal" {
		o.Intensity = f.intensity
	}
	logf := logTo(stderr)
	kafkaGiven := false
	fs.Visit(func(fl *flag.Flag) { kafkaGiven = kafkaGiven || fl.Name == "kafka" })
	if f.bootstrap != "" {
		o.Bootstrap = strings.Split(f.bootstrap, ",")
		// The version an external cluster runs is the user's to say; with it
		// the plan can replay the group's records as that release would.
		if kafkaGiven {
			if err := cluster.CheckKafkaVersion(f.version); err != nil {
				return exitError{exitBadDir, err.Error()}
			}
			o.Kafka = f.version
		}
	} else {
		if err := cluster.CheckKafkaVersion(f.version); err != nil {
			return exitError{exitBadDir, err.Error()}
		}
		if !f.embedded {
			if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
				logf("NO DOCKER ENGINE: %v", err)
				logf("running against the EMBEDDED cluster instead: groupquake's reference coordinator as Kafka %s, in this process (--embedded)", f.version)
				f.embedded = true
			}
		}
		o.Kafka, o.Nodes, o.Controllers, o.Embedded = f.version, f.nodes, f.controllers, f.embedded
		if f.embedded {
			o.Nodes, o.Controllers = 1, 0
		}
	}
	plan, err := run.NewPlan(seed, o, reg.Kinds())
	if err != nil {
		return exitError{exitBadDir, err.Error()}
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join(defaultRunsDir(), time.Now().UTC().Format("20060102T150405Z")+"-"+strconv.FormatUint(seed, 10))
	}
	fmt.Fprintf(stderr, "groupquake: seed %d; run directory %s\ngroupquake: rerun with: %s\n", seed, dir, plan.Command())
	ctx, cancel := context.WithTimeout(ctx, f.bound)
	defer cancel()
	res, err := run.Run(ctx, run.Config{
		Plan: plan, Dir: dir, Registry: reg, Keep: f.keep, Logf: logf,
		ClusterConfig: cluster.Config{BasePort: f.basePort, Toxiproxy: f.toxiproxy, Image: cluster.ImageOptions{Source: cluster.ImageSource(f.imageSource)}},
		External:      cluster.ExternalConfig{NodeControl: f.nodeControl, Toxiproxy: f.toxiproxy},
	})
	for _, n := range res.Notes {
		logf("note: %s", n)
	}
	var jerr error
	if res.Report.Verdicts != nil {
		j, lerr := run.Judge(dir)
		if lerr == nil {
			jerr = reportJudgement(stdout, j)
		}
	}
	fmt.Fprintf(stderr, "groupquake: run directory %s; check it again with: groupquake check %s\ngroupquake: rerun with: %s\n", dir, dir, plan.Command())
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (the run hit --bound=%s)", err, f.bound)
		}
		return exitError{exitRunFailed, err.Error()}
	}
	return jerr
}

func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	all := fs.Bool("all", false, "remove every groupquake container and network, also those of runs still alive")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n, err := cluster.Sweep(ctx, *all)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d containers and networks\n", n)
	return nil
}

func kindNames() string {
	var s []string
	for _, k := range faults.Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func javaKindNames() []string {
	var out []string
	for _, k := range run.JavaKinds() {
		out = append(out, k.Name)
	}
	return out
}
