package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/interrupt"
	"github.com/groupquake/groupquake/internal/machine"
)

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
	json        bool
	upgradeTo   string
	downgrade   string
	migration   string
	migrateFrom string
	migStatic   bool
	supervisor  bool
	clients     string
	javaJVMs    string
	plan        string
	procKinds   kindDefs
	clientLog   clientLogFlag
	// clientLevel is --client-log's level, once options read it.
	clientLevel kgo.LogLevel
}

// kindDefs collects --process-kind definitions.
type kindDefs []string

func (k *kindDefs) String() string     { return strings.Join(*k, " ") }
func (k *kindDefs) Set(s string) error { *k = append(*k, s); return nil }

func (f *runFlags) register(fs *flag.FlagSet, drawn []string) {
	fs.StringVar(&f.seed, "seed", "", "seed of the plan (default: a random one, printed)")
	fs.StringVar(&f.plan, "plan", "", "carry out the plan in this file (a run directory's plan.json, such as the reduced plan groupquake shrink writes) instead of planning one: its cluster, members, workload and faults are the file's, and the flags that would shape a plan are refused")
	fs.StringVar(&f.scenario, "scenario", "", "scenario of one run: "+strings.Join(run.Scenarios(), ", ")+" (default: the default campaign, or baseline when another flag pins the plan: --"+strings.Join(planFlags, ", --")+")")
	fs.StringVar(&f.out, "out", "", "run directory (default: ./runs/<time>-<seed>/)")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "length of the workload phase (of each run of a campaign)")
	fs.StringVar(&f.version, "kafka", cluster.DefaultKafkaVersion, "Kafka version of the container cluster (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	fs.IntVar(&f.nodes, "nodes", 1, "broker nodes: 1 or 3 (the default campaign runs on 3 unless --nodes says)")
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
	fs.StringVar(&f.kinds, "kinds", "", kindsUsage(drawn))
	fs.StringVar(&f.clients, "kafka-clients", "", "kafka-clients version of the Java member kinds (default: the cluster's --kafka version), resolved from Maven Central and cached")
	fs.StringVar(&f.javaJVMs, "java-jvms", kinds.JavaJVMsPerMember, "JVMs of the Java member kinds: "+kinds.JavaJVMsPerMember+" (one each; a crash kills it, a freeze stops it) or "+kinds.JavaJVMsShared+" (one JVM hosts them all: less memory and a faster start; a crash cuts the member's links and abandons its consumer, a freeze holds its links and stops its thread; README, Java members)")
	fs.Var(&f.procKinds, "process-kind", "define a member kind NAME=PROTOCOL:COMMAND, a process speaking the member protocol (docs/member-protocol.md), e.g. mine=consumer:python3 my_member.py; repeatable; name it in --kinds")
	fs.StringVar(&f.topic, "topic", "", "workload topic (default: gq-<seed>-records)")
	fs.StringVar(&f.group, "group", "", "consumer group (default: gq-<seed>)")
	fs.StringVar(&f.faults, "faults", "", "fault kinds the schedule may draw, comma-separated, or families (node, link, churn); default: the scenario's. Kinds: "+kindNames())
	fs.StringVar(&f.intensity, "intensity", "normal", "faults per minute of workload: low, normal, high, or a rate such as 12/min")
	fs.DurationVar(&f.bound, "bound", 30*time.Minute, "how long the whole run (each run of a campaign) may take before it is stopped (it is then judged as far as it got)")
	fs.StringVar(&f.upgradeTo, "upgrade-to", "", "roll the 3-node container cluster from --kafka to this newer release during the workload, then finalize its features (groupquake upgrade adds a baseline run)")
	fs.StringVar(&f.migration, "migration-policy", "", "group.consumer.migration.policy of the cluster the run starts: "+strings.Join(run.MigrationPolicies(), ", ")+" (default: Kafka's, bidirectional); --scenario migration moves the group classic → consumer → classic under it")
	fs.StringVar(&f.migrateFrom, "migration-from", "", "with --scenario migration, the protocol the group starts with and returns to: classic (classic → consumer → classic, the default) or consumer (consumer → classic → consumer)")
	fs.BoolVar(&f.migStatic, "migration-static", false, "with --scenario migration, static members: each replacement is a rolling bounce of one group.instance.id into the other protocol and back")
	fs.BoolVar(&f.supervisor, "supervisor", true, "restart a member that stops for good (its consumer threw a fatal error), as systemd or Kubernetes restarts a process: a new member, with its instance id if static, after a backoff of 1s doubling up to 8s, until the group takes it in (plan.json \"supervisor\"); --supervisor=false leaves it stopped")
	fs.StringVar(&f.downgrade, "downgrade", "", "with --upgrade-to, roll the binaries back to --kafka afterwards: before-finalize, or after-finalize (lowering metadata.version first, where Kafka allows it)")
	fs.BoolVar(&f.keep, "keep", false, "keep the container cluster running after the run (it prints the cluster's ID; remove it later with 'groupquake sweep --cluster ID')")
	fs.BoolVar(&f.json, "json", false, "print the verdicts as JSON on stdout (the run's progress stays on stderr)")
	f.clientLog.register(fs)
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

// newRunDir is the directory a command writes when --out is not given:
// under defaultRunsDir, named by the UTC time (which the reports read back
// as when the run began) and then what ran.
func newRunDir(what string) string {
	return freeName(filepath.Join(defaultRunsDir(), time.Now().UTC().Format("20060102T150405Z")+"-"+what))
}

// freeName is base, or when base exists (the same command, with the same
// seed, started in the same second) the first of base-2, base-3, ... that
// does not.
func freeName(base string) string {
	d := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			return d
		}
		d = fmt.Sprintf("%s-%d", base, i)
	}
}

// claimDir claims dir, the directory of a campaign or an upgrade, by
// creating its rerun.sh (the command that reruns it, what), which must not
// exist, before anything else is written there, as a run claims its
// directory with its history. Of two commands given the same directory at
// once, the second is refused (exit 2, nothing written) when out says the
// directory was given with --out; without it (the same command with the
// same seed started in the same second) it says so and takes the next
// free name, dir-2, dir-3, ...; it returns the directory claimed, and
// release, which undoes the claim (the rerun.sh, and the directory if the
// claim made it) for a command that wrote nothing else there: its cluster
// could not be started.
func claimDir(dir string, out bool, what, rerun string, con *console) (claimed string, release func(), err error) {
	base := dir
	for i := 2; ; i++ {
		_, serr := os.Lstat(dir)
		made := errors.Is(serr, fs.ErrNotExist)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, exitError{exitFailed, fmt.Sprintf("making the directory %s: %v", dir, err)}
		}
		if beforeDirClaim != nil {
			beforeDirClaim(dir)
		}
		script := filepath.Join(dir, run.RerunFile)
		err := run.ClaimFile(script, run.RerunScript(what, rerun), 0o755)
		if err == nil {
			d := dir
			return dir, func() {
				os.Remove(script)
				if made {
					os.Remove(d) // only if empty
				}
			}, nil
		}
		if out || !errors.Is(err, run.ErrDirTaken) {
			if errors.Is(err, run.ErrDirTaken) {
				return "", nil, badInput("--out: %v", err)
			}
			return "", nil, exitError{exitFailed, err.Error()}
		}
		next := freeName(fmt.Sprintf("%s-%d", base, i))
		con.Infof("directory %s was taken by another command started at the same moment: this one writes to %s", dir, next)
		dir = next
	}
}

// beforeDirClaim, when set (by the tests), is called before claimDir
// claims a directory: the moment another command may take it.
var beforeDirClaim func(dir string)

// runRun is run.Run; the tests script what another run does around it.
var runRun = run.Run

const runUsage = `Usage: groupquake run [flags]

Without --scenario, runs the default campaign: one cluster (3 container
nodes of the default Kafka version, or the embedded cluster when no Docker
engine can be had, which it says), and on it a short run of each of
member-links, broker-faults and combined, every group mixing groupquake's own
classic and KIP-848 members with kgo's, under faults from the nemesis. Each
run has its own seed, drawn from the campaign's --seed, and its own run
directory in the campaign directory (./runs/<time>-<seed>/ or --out), which
also gets trend.html over them and rerun.sh (the campaign's rerun command,
created first: it claims the directory). It ends with a table: scenario, members,
faults, verdicts and rebalance pauses per protocol, with each run's report
and rerun command and the command that reruns the whole campaign. --kafka,
--nodes, --controllers, --embedded, --bootstrap, --duration, --intensity,
--rate, --partitions and --records apply to every run of the campaign.

With --scenario (or a flag that pins one plan: --kinds, --members, --faults,
--topic, --group, --upgrade-to, --downgrade, --kafka-clients; the scenario is
then baseline unless --scenario says), plans one run from a seed (printed,
and saved in plan.json with the command that reruns it), carries it out
(setup, warm-up, workload with the scenario's faults, heal, quiesce, final
observations, teardown) and judges it. A run directory holds plan.json,
rerun.sh, history.jsonl, observations.json, verdicts.json and report.html;
a run that is killed leaves what it did, and 'groupquake check DIR' judges it.

Flags are checked before anything starts: a bad one starts no cluster and
writes no run directory.

Exit status: 0 every checker holds (in every run), 1 a violation (in any run),
2 bad input, 3 a run could not be carried out (its verdicts, if it got that
far, are still written; a campaign with a violation exits 1 all the same).
`

// scenarioUsage lists the scenarios and what each does, for run -h.
func scenarioUsage() string {
	var b strings.Builder
	b.WriteString("\nScenarios (--scenario):\n")
	for _, sc := range run.ScenarioList() {
		fmt.Fprintf(&b, "  %-14s %s\n", sc.Name, sc.About)
	}
	return b.String()
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	reg := kinds.Default()
	var f runFlags
	fs := newFlagSet("run", runUsage+scenarioUsage())
	f.register(fs, reg.Names())
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	set := given(fs)
	seed, o, err := f.options(set)
	if err != nil {
		return err
	}
	if set["plan"] {
		return f.runPlanFile(ctx, set, reg, stdout, con)
	}
	if err := run.CheckOptions(o, machine.This()); err != nil {
		return badInput("%v", err)
	}
	if pinnedBy(set) == "" {
		return f.campaign(ctx, set, seed, o, reg, stdout, con)
	}
	logf := con.Logf
	if reg, err = f.memberKinds(ctx, set, &o, reg, logf); err != nil {
		return err
	}
	plan, err := run.NewPlan(seed, o, reg.Kinds())
	if err != nil {
		return badInput("%v", err)
	}
	if err := plan.CheckSize(machine.This()); err != nil {
		return badInput("%v", err)
	}
	dir := f.out
	if dir == "" {
		dir = newRunDir(strconv.FormatUint(seed, 10))
	}
	if err := checkOut(dir); err != nil {
		return badInput("--out: %v", err)
	}
	if fallback, err := f.needEngine(ctx, set, o, logf); err != nil {
		return err
	} else if fallback {
		o.Embedded, o.Nodes, o.Controllers = true, 1, 0
		if plan, err = run.NewPlan(seed, o, reg.Kinds()); err != nil {
			return err
		}
		if err := plan.CheckSize(machine.This()); err != nil {
			return badInput("%v", err)
		}
	}
	return f.carryOut(ctx, plan, reg, dir, stdout, con)
}

// carryOut runs plan into dir (the default directory, taken by another
// run started at the same moment, moves to the next free name), judges it
// and says the judgement.
func (f *runFlags) carryOut(ctx context.Context, plan run.Plan, reg kinds.Registry, dir string, stdout io.Writer, con *console) error {
	logf := con.Logf
	var err error
	con.Infof("seed %d; run directory %s", plan.Seed, dir)
	con.Infof("rerun with: %s", plan.Command())
	setRerun(plan.Command())
	con.expectWorkload(plan.Workload)
	stopWatch := con.watch(ctx)
	ctx, cancel := context.WithTimeout(ctx, f.bound)
	defer cancel()
	var res run.Result
	done := func() {}
	defer func() { done() }() // a second Ctrl-C names the directory until the command ends
	for {
		done = writing(dir)
		res, err = runRun(ctx, run.Config{
			Plan: plan, Dir: dir, Registry: reg, Keep: f.keep, Logf: logf, KgoLog: kgoLog(con), ClientLog: f.clientLevel, OnPhase: onPhase,
			ClusterConfig: cluster.Config{BasePort: f.basePort, Toxiproxy: f.toxiproxy, Image: cluster.ImageOptions{Source: cluster.ImageSource(f.imageSource)}},
			External:      cluster.ExternalConfig{NodeControl: f.nodeControl, Toxiproxy: f.toxiproxy},
		})
		if f.out != "" || !errors.Is(err, run.ErrDirTaken) {
			break
		}
		done()
		// The same command started at the same moment took the default
		// directory first; nothing of this run was written there.
		next := freeName(dir)
		con.Infof("run directory %s was taken by another run started at the same moment: this run writes to %s", dir, next)
		dir = next
	}
	stopWatch()
	if errors.Is(err, run.ErrDirTaken) {
		// Another run writes there: nothing of this one is, nothing to judge.
		return badInput("--out: %v", err)
	}
	return f.judgeAndSay(plan, dir, res, err, stdout, con)
}

// kindsUsage is --kinds' help: the kinds a seed draws from (drawn), then
// every family of kinds that runs only when named (harness/kinds.Families).
func kindsUsage(drawn []string) string {
	var fams []string
	for _, fam := range kinds.Families() {
		fams = append(fams, fam.Help+": "+strings.Join(fam.Names, ", "))
	}
	return "member kinds, comma-separated, cycled over the members (default: the seed chooses among " + strings.Join(drawn, ", ") +
		"; these run only when named: " + strings.Join(fams, "; ") + ")"
}

// memberKinds adds to reg the member kinds --kinds names that run only when
// named (every family of harness/kinds, and the user's --process-kind
// kinds), and sets the Java members' options in o.
func (f *runFlags) memberKinds(ctx context.Context, set map[string]bool, o *run.Options, reg kinds.Registry, logf func(string, ...any)) (kinds.Registry, error) {
	if f.clients != "" {
		if !slices.ContainsFunc(o.Kinds, func(k string) bool { return kinds.IsJavaKind(k) || kinds.IsSpringKind(k) || k == "java-share" }) {
			return reg, badInput("--kafka-clients %s: no Java member kind in --kinds (%s, java-share) would use it", f.clients, strings.Join(kinds.JavaKindNames(), ", "))
		}
		if err := java.CheckVersion(f.clients); err != nil {
			return reg, badInput("--kafka-clients: %v", err)
		}
		o.KafkaClients = f.clients
	}
	if len(o.Kinds) > 0 {
		// The Spring kinds run on the plan's kafka-clients (docs/spring-kafka.md).
		env := kinds.Env{Toolchain: &java.Toolchain{Logf: logf}, KafkaClients: run.Plan{Options: *o}.KafkaClients()}
		var err error
		if reg, err = reg.WithNamed(ctx, o.Kinds, env); err != nil {
			return reg, prepareFailed("--kinds", err)
		}
		reg = reg.WithUserKinds(o.ProcessKinds) // --process-kind (docs/member-protocol.md)
	}
	if set["java-jvms"] {
		o.JavaJVMs = f.javaJVMs // NewPlan checks it
	}
	return reg, nil
}

// judgeAndSay judges the run in dir once run.Run returned res and err,
// prints the judgement and the rerun command, and returns the command's
// exit status.
func (f *runFlags) judgeAndSay(plan run.Plan, dir string, res run.Result, err error, stdout io.Writer, con *console) error {
	logf := con.Logf
	seed := plan.Seed
	for _, n := range res.Notes {
		logf("note: %s", n)
	}
	var runErr error
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (the run hit --bound=%s)", err, f.bound)
		}
		runErr = err
	}
	judged, runErr := judgeRun(dir, res, runErr)
	out := judgement(plan, dir, judged, runErr)
	if f.json {
		if err := writeJSON(stdout, runDoc{schemaVersion, out}); err != nil {
			return err
		}
	} else if judged != nil {
		printJudgement(stdout, *judged)
	}
	stepSummary(logf, "groupquake run --seed "+strconv.FormatUint(seed, 10), dir, plan, judged, runErr)
	con.Infof("run directory %s; check it again with: groupquake check %s", dir, dir)
	con.Infof("rerun with: %s", plan.Command())
	if out.Report != "" {
		con.Infof("report: %s", out.Report)
	}
	if runErr != nil {
		if interrupt.Is(runErr) && judged != nil {
			if verr := verdictStatus(judged.Report); verr != nil {
				return exitError{exitViolation, runErr.Error() + "; up to there, " + verr.Error()}
			}
		}
		return exitError{exitFailed, runErr.Error()}
	}
	return verdictStatus(judged.Report)
}

// judgeRun judges the run in dir once run.Run returned res and runErr: it
// returns the judgement, or nil when there is none to print: the run
// never got past its setup (then the error says the run never happened,
// and no tally is printed for it, whatever its checkers say of a history
// without members) or was not judged at all.
func judgeRun(dir string, res run.Result, runErr error) (*run.Judged, error) {
	if res.Report.Verdicts == nil {
		if runErr == nil {
			runErr = errors.New("the run ended without verdicts")
		}
		return nil, runErr
	}
	j, err := run.Judge(dir)
	if err != nil {
		return nil, errors.Join(runErr, fmt.Errorf("judging the run: %w", err))
	}
	if !pastSetup(j.Events) {
		if runErr == nil {
			runErr = errors.New("it stopped in its setup")
		}
		return nil, fmt.Errorf("the run never happened (it stopped in its setup, before any member started; nothing was judged): %w", runErr)
	}
	return &j, runErr
}

// needEngine makes sure a Docker engine answers when the plan needs a
// container cluster. When none can be had it says so and reports fallback:
// the run goes to the embedded cluster instead, unless a flag given needs
// containers, which is an exitFailed error.
func (f *runFlags) needEngine(ctx context.Context, set map[string]bool, o run.Options, logf func(string, ...any)) (fallback bool, err error) {
	if o.Embedded || len(o.Bootstrap) > 0 {
		return false, nil
	}
	if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
		if ctx.Err() != nil {
			return false, exitError{exitFailed, "interrupted while looking for a Docker engine"}
		}
		name := f.containerOnly(set)
		if name == "" && set["toxiproxy"] {
			name = "toxiproxy"
		}
		if name != "" {
			return false, exitError{exitFailed, fmt.Sprintf("no Docker engine (%v), and --%s needs a container cluster: start an engine (groupquake engine up, as root) or leave --%s out to run on the embedded cluster", err, name, name)}
		}
		logf("NO DOCKER ENGINE: %v", err)
		logf("running against the EMBEDDED cluster instead: groupquake's reference coordinator as Kafka %s, in this process (--embedded)", o.Kafka)
		return true, nil
	}
	return false, nil
}

// options checks the flags and turns them into the plan's options: every
// bad flag is refused here, before anything starts. set holds the flags the
// command line gave.
func (f *runFlags) options(set map[string]bool) (uint64, run.Options, error) {
	var o run.Options
	seed, err := f.seedOf()
	if err != nil {
		return 0, o, err
	}
	if f.clientLevel, err = f.clientLog.level(); err != nil {
		return 0, o, err
	}
	if err := f.checkSizes(); err != nil {
		return 0, o, err
	}
	if err := f.clusterOptions(set, &o); err != nil {
		return 0, o, err
	}
	if err := f.workloadOptions(set, &o); err != nil {
		return 0, o, err
	}
	return seed, o, nil
}

// seedOf is --seed, or a random seed when it is not given.
func (f *runFlags) seedOf() (uint64, error) {
	return seedFlag(f.seed, ": give a number such as 42, or leave --seed out for a random one")
}

// seedFlag is the seed a --seed flag gives, or a random one when it is
// empty; hint follows the message that refuses a seed that is no number.
func seedFlag(seed, hint string) (uint64, error) {
	if seed == "" {
		s, err := newSeed()
		if err != nil {
			return 0, fmt.Errorf("drawing a seed: %w", err)
		}
		return s, nil
	}
	s, err := strconv.ParseUint(seed, 10, 64)
	if err != nil {
		return 0, badInput("--seed %q is not an unsigned 64-bit integer%s", seed, hint)
	}
	return s, nil
}

// checkSizes refuses the counts, lengths, ports and node numbers no run
// can have.
func (f *runFlags) checkSizes() error {
	for _, c := range []struct {
		name string
		n    int
	}{{"records", f.records}, {"rate", f.rate}, {"partitions", f.partitions}, {"members", f.members}} {
		if c.n < 0 {
			return badInput("--%s %d: give 0 (the default: %s) or more", c.name, c.n, map[string]string{
				"records": "produce for the whole --duration", "rate": "the seed chooses", "partitions": "the seed chooses", "members": "the seed chooses"}[c.name])
		}
	}
	if f.partitions > math.MaxInt32 {
		return badInput("--partitions %d: a Kafka topic has at most %d partitions", f.partitions, math.MaxInt32)
	}
	switch {
	case f.duration <= 0:
		return badInput("--duration %s: the workload needs a positive length, such as 20s", f.duration)
	case f.bound <= 0:
		return badInput("--bound %s: the run needs a positive bound, such as 30m", f.bound)
	case f.bound <= f.duration && f.plan == "": // with --plan, runPlanFile compares it with the plan's workload
		return badInput("--bound %s is not longer than --duration %s: the run would be stopped in its workload; raise --bound (it also covers setup, heal and final observations)", f.bound, f.duration)
	}
	switch cluster.ImageSource(f.imageSource) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return badInput("--image-source %q: use auto, build or official", f.imageSource)
	}
	if top := 65535 - f.nodes - f.controllers; f.basePort < 0 || f.basePort > top {
		return badInput("--base-port %d: give a port from 1 to %d, or 0 for free ports", f.basePort, top)
	}
	if f.nodes != 1 && f.nodes != 3 {
		return badInput("--nodes %d: a container cluster has 1 or 3 broker nodes", f.nodes)
	}
	if f.controllers != 0 && f.controllers != 1 && f.controllers != 3 {
		return badInput("--controllers %d: separate controller nodes number 0 (the brokers are the controllers), 1 or 3", f.controllers)
	}
	return nil
}

// clusterOptions checks the flags that say which cluster the run uses (an
// external one, the embedded one or containers) and sets them in o.
func (f *runFlags) clusterOptions(set map[string]bool, o *run.Options) error {
	if f.bootstrap != "" {
		if f.embedded {
			return badInput("--embedded and --bootstrap exclude each other: the embedded cluster runs in this process, --bootstrap names a cluster elsewhere; give one")
		}
		if name := f.containerOnly(set); name != "" {
			return badInput("--%s applies to the container cluster groupquake starts; with --bootstrap the cluster is yours: leave --%s out", name, name)
		}
		for _, a := range strings.Split(f.bootstrap, ",") {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				return badInput("--bootstrap %q: %q is not host:port; give host:port[,host:port]", f.bootstrap, a)
			}
			o.Bootstrap = append(o.Bootstrap, a)
		}
		// The version an external cluster runs is the user's to say; with it
		// the plan can replay the group's records as that release would.
		if set["kafka"] {
			if err := cluster.CheckKafkaVersion(f.version); err != nil {
				return badInput("--kafka: %v (groupquake version lists them)", err)
			}
			o.Kafka = f.version
		}
	} else {
		if set["node-control"] {
			return badInput("--node-control drives the nodes of an external cluster: it needs --bootstrap")
		}
		if err := cluster.CheckKafkaVersion(f.version); err != nil {
			return badInput("--kafka: %v (groupquake version lists them)", err)
		}
		if f.embedded {
			if name := f.containerOnly(set); name != "" {
				return badInput("--%s applies to a container cluster; the embedded cluster is one node in this process: leave --%s out, or --embedded", name, name)
			}
			if set["toxiproxy"] {
				return badInput("--toxiproxy is not used by the embedded cluster, which embeds its own: leave --toxiproxy out, or --embedded")
			}
		}
		o.Kafka, o.Nodes, o.Controllers, o.Embedded = f.version, f.nodes, f.controllers, f.embedded
	}
	if f.toxiproxy != "" {
		if _, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(f.toxiproxy, "http://"), "https://")); err != nil || port == "" {
			return badInput("--toxiproxy %q is not the host:port of a toxiproxy API (e.g. 127.0.0.1:8474)", f.toxiproxy)
		}
	}
	if f.nodeControl != "" {
		if err := checkNodeControl(f.nodeControl); err != nil {
			return err
		}
	}
	return nil
}

// workloadOptions checks the flags that shape the workload (member kinds,
// topic, faults, scenario, sizes) and sets them in o.
func (f *runFlags) workloadOptions(set map[string]bool, o *run.Options) error {
	for _, d := range f.procKinds {
		name, k, err := kinds.ParseUserKind(d)
		if err != nil {
			return badInput("%v", err)
		}
		if slices.Contains(kinds.Known(), name) {
			return badInput("--process-kind %q: %s is already a member kind: give yours another name", d, name)
		}
		if o.ProcessKinds == nil {
			o.ProcessKinds = map[string]kinds.UserKind{}
		}
		o.ProcessKinds[name] = k
	}
	if f.kinds != "" {
		o.Kinds = strings.Split(f.kinds, ",")
		if err := checkKinds("--kinds", f.kinds, o.Kinds, o.ProcessKinds); err != nil {
			return err
		}
	}
	if f.topic != "" {
		if err := checkTopic(f.topic); err != nil {
			return err
		}
	}
	if f.faults != "" {
		ks, err := faults.ParseKinds(f.faults)
		if err != nil {
			return badInput("--faults: %v", err)
		}
		o.Faults = ks
	}
	if _, err := faults.ParseIntensity(f.intensity); err != nil {
		return badInput("--intensity: %v", err)
	}
	if f.intensity != "normal" {
		o.Intensity = f.intensity
	}
	if f.out != "" {
		if err := checkOut(f.out); err != nil {
			return badInput("--out: %v", err)
		}
	}
	o.UpgradeTo, o.Downgrade, o.MigrationPolicy, o.MigrationFrom, o.MigrationStatic = f.upgradeTo, f.downgrade, f.migration, f.migrateFrom, f.migStatic
	o.NoSupervisor = !f.supervisor
	if f.migration != "" && len(o.Bootstrap) > 0 {
		return badInput("--migration-policy %s is a broker setting of the cluster a run starts: set group.consumer.migration.policy on the external cluster itself, and leave the flag out with --bootstrap", f.migration)
	}
	o.Scenario, o.Duration, o.Members, o.Partitions = f.scenario, f.duration, f.members, int32(f.partitions)
	if f.scenario == run.ScenarioMigration && !set["duration"] {
		o.Duration = 0 // the migration's steps decide it
	}
	if len(o.Kinds) > 0 && kinds.IsShareKind(o.Kinds[0]) && !set["duration"] {
		o.Duration = 0 // a share run's scenario decides it (run.NewPlan)
	}
	o.Rate, o.Records, o.Topic, o.Group = f.rate, f.records, f.topic, f.group
	return nil
}

// containerOnly returns the first flag that only a container cluster can
// honour and that the command line set to other than its default, or "".
func (f *runFlags) containerOnly(set map[string]bool) string {
	for _, c := range []struct {
		name  string
		other bool
	}{
		{"nodes", f.nodes != 1},
		{"controllers", f.controllers != 0},
		{"image-source", f.imageSource != string(cluster.SourceAuto)},
		{"base-port", f.basePort != 0},
		{"keep", f.keep},
	} {
		if set[c.name] && c.other {
			return c.name
		}
	}
	return ""
}

const sweepUsage = `Usage: groupquake sweep [--cluster ID | --all]

Removes the containers, volumes and networks that groupquake runs of this host
left behind when they crashed (their process is gone); a cluster kept with
--keep is left. With --cluster ID it removes that one cluster (the ID a run
prints, "cluster ID: starting", and --keep's hint names), alive or kept, and
nothing else. With --all it removes every groupquake container on the engine,
also those of runs still alive, other users' included.
`

func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep", sweepUsage)
	all := fs.Bool("all", false, "remove every groupquake container and network on the engine, also those of runs still alive, other users' included")
	id := fs.String("cluster", "", "remove the containers, volumes and network of this one cluster (its ID: \"cluster ID: starting\"), alive or kept, and nothing else")
	if err := parseNone(fs, args, stdout); err != nil {
		return err
	}
	if *id != "" && *all {
		return badInput("--cluster names the one cluster to remove (its ID, as a run prints it), --all removes every one: give one ID, or --all alone")
	}
	var n int
	var err error
	if *id != "" {
		n, err = sweepCluster(ctx, *id)
	} else {
		n, err = sweepAll(ctx, *all)
	}
	if err != nil {
		return err
	}
	if *id != "" && n == 0 {
		return unknownCluster(ctx, *id)
	}
	fmt.Fprintf(stdout, "removed %d containers, volumes and networks\n", n)
	return nil
}

// The engine calls of sweep; a test replaces them.
var (
	sweepCluster = cluster.SweepCluster
	sweepAll     = cluster.Sweep
	clusterIDs   = cluster.ClusterIDs
)

// unknownCluster is the bad input of `sweep --cluster ID` for an ID with
// nothing on the engine (a typo, or a cluster already removed): it names
// the ID and the clusters there are.
func unknownCluster(ctx context.Context, id string) error {
	const list = "list them with: docker ps -a --filter label=" + cluster.LabelRun + " --format '{{.Label \"" + cluster.LabelRun + "\"}}'"
	ids, err := clusterIDs(ctx)
	switch {
	case err != nil:
		return badInput("--cluster %s: no container, volume or network of that cluster on the engine, nothing removed; %s", id, list)
	case len(ids) == 0:
		return badInput("--cluster %s: no container, volume or network of that cluster on the engine, nothing removed; the engine holds no groupquake cluster at all", id)
	}
	return badInput("--cluster %s: no container, volume or network of that cluster on the engine, nothing removed; the groupquake clusters on it are: %s (%s)", id, strings.Join(ids, ", "), list)
}

func kindNames() string {
	return strings.Join(namesOf(faults.Kinds(), func(k faults.Kind) string { return string(k) }), ", ")
}

// prepareFailed is the error of member kinds that could not be prepared
// (no Java, a failed Maven build): what checkKinds refuses was refused
// before, so it is exit 3, the command could not be carried out.
func prepareFailed(what string, err error) error {
	return exitError{exitFailed, fmt.Sprintf("%s: preparing the member kinds failed: %v", what, err)}
}

// checkKinds refuses a --kinds list (flag, as typed) with an empty or
// unknown kind, naming every known kind.
func checkKinds(flag, typed string, named []string, user ...map[string]kinds.UserKind) error {
	for _, k := range named {
		if len(user) > 0 {
			if _, ok := user[0][k]; ok {
				continue
			}
		}
		switch {
		case strings.TrimSpace(k) == "":
			return badInput("%s %q names an empty kind: give kinds separated by single commas, e.g. classic,consumer", flag, typed)
		case !slices.Contains(kinds.Known(), k):
			return badInput("%s: unknown member kind %q: known kinds are %s", flag, k, strings.Join(kinds.Known(), ", "))
		}
	}
	if err := kinds.CheckClassicMix(named); err != nil {
		return badInput("%s %s: %v", flag, typed, err)
	}
	return nil
}

// checkTopic refuses a topic name Kafka refuses: Kafka's
// org.apache.kafka.common.internals.Topic.validate allows at most 249
// characters of ASCII letters and digits, '.', '_' and '-', and neither
// "." nor "..".
func checkTopic(name string) error {
	const maxTopicName = 249
	switch {
	case name == "." || name == "..":
		return badInput("--topic %q: Kafka refuses \".\" and \"..\" as topic names: give another name, or leave --topic out", name)
	case len(name) > maxTopicName:
		return badInput("--topic: a Kafka topic name has at most %d characters, this one %d: give a shorter one", maxTopicName, len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return badInput("--topic %q: Kafka topic names hold only ASCII letters, digits, '.', '_' and '-', not %q: give another name", name, r)
		}
	}
	return nil
}

// checkNodeControl refuses a --node-control template that does not parse,
// or that fails on a node fault's fields (a field it does not have): a
// node fault would otherwise fail in the middle of the run.
func checkNodeControl(text string) error {
	t, err := template.New("node-control").Option("missingkey=error").Parse(text)
	if err != nil {
		return badInput("--node-control: %v; write a command template such as 'ssh {{.Host}} sudo systemctl {{.Action}} kafka'", err)
	}
	if err := t.Execute(io.Discard, map[string]any{"Action": "stop", "Node": 1, "Host": "broker-1", "Port": "9092"}); err != nil {
		return badInput("--node-control: %v; its fields are .Action, .Node, .Host and .Port", err)
	}
	return nil
}

// checkOut says whether dir can become a run directory (run.CheckDir), and
// whether it can be made and written: it must not be a symbolic link to
// nothing, and dir, or the nearest folder above it that exists, must be a
// folder this process may write (a read-only file system or a folder
// without write permission is refused here, before anything starts, not
// when the run writes its plan). It makes a folder there and removes it:
// the modes alone let root write /proc.
func checkOut(dir string) error {
	if err := run.CheckDir(dir); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if _, err := os.Stat(dir); err != nil {
			target, _ := os.Readlink(dir)
			return fmt.Errorf("%s is a symbolic link to %s, which does not exist: create %s first, or choose another directory", dir, target, target)
		}
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s cannot be made: %s is a file, not a folder", dir, d)
			}
			if err := syscall.Access(d, unixWrite|unixSearch); err != nil {
				return fmt.Errorf("%s cannot be written: %s is not writable (%v): choose a directory you can write (--out)", dir, d, err)
			}
			// access(2) says yes to root everywhere, and a file system
			// may refuse what the modes allow (/proc, /sys): make a
			// folder there, and remove it.
			probe, err := os.MkdirTemp(d, ".groupquake-probe-")
			if err != nil {
				return fmt.Errorf("%s cannot be written: no folder can be made in %s (%v): choose a directory you can write (--out)", dir, d, errors.Unwrap(err))
			}
			if err := os.Remove(probe); err != nil {
				return fmt.Errorf("%s cannot be written: a folder made in %s to try it cannot be removed (%v): choose a directory you can write (--out)", dir, d, err)
			}
			return nil
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// The modes of access(2): write, and search (enter a folder).
const (
	unixWrite  = 0x2
	unixSearch = 0x1
)

// namesOf lists the names of kinds (fault kinds).
func namesOf[K any](kinds []K, name func(K) string) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, name(k))
	}
	return out
}
