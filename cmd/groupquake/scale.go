package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/cmd/groupquake/scale"
	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/machine"
)

const scaleUsage = `Usage: groupquake scale --members N[,N...] --protocol classic|consumer|share[,...] [flags]

Puts one consumer group of N lightweight members (membership, assignment and
commits; no record fetching) on a cluster, for each protocol and size in
turn (a fresh group and topic each), and measures: the time to a stable
group after a join wave of N, after one member leaves and after the
coordinator's node restarts; the rebalance pause per partition (p50, p99,
max); the requests per second the coordinator answered; and this process's
own CPU and memory per member, apart from the brokers' (container CPU and
memory, reported beside them).

Consumer-protocol members share connections, opened as their queue of
requests needs them (up to --conns to one broker); each classic member
needs one of its own (the broker parks JoinGroup and SyncGroup, and a broker
answers a connection's requests one at a time). A member does not send a
request again while the last one still waits in the queue, and one it gives
up there is dropped, never sent.

The cluster runs Kafka's default group timers for the consumer protocol
(heartbeat, session, assignment interval) and no initial rebalance delay;
the container cluster's nodes get a 1 GB heap.

--protocol share (Kafka 4.2+) puts one share group (KIP-932) of N lightweight
share members on the topic instead: they heartbeat on --conns shared
connections and each fetches on one of its own, accepting what it acquired.
It measures the time until every member holds an assignment and the
coordinator describes the group Stable with all of them at its epoch, how
many members share each partition, and how fast the group drains a backlog
of --share-records records produced before it joined (records per second,
deliveries, redeliveries), then the time to a stable group after one member
leaves. It runs on the embedded cluster too (--embedded: the reference
coordinator's share groups and its share-partition leader, the members
connected in process), with the container cluster's share timers, and there
also measures the time to a stable group after the coordinator restarts
(not on containers: the share members do not look for a moved coordinator
or leader).

Sizes run in increasing order, every protocol at one size before the next;
when one does not reach a stable group within --stable-timeout, the larger
sizes of that protocol are skipped (something
gave: the message says which phase and why) and the next protocol runs.

Exit status: 0 every run reached a stable group in every phase, 2 bad input
(nothing is started), 3 a run could not be carried out or a group did not
become stable within --stable-timeout.
`

type scaleFlags struct {
	members, protocols     string
	shareRecords           int
	shareMaxSize           int // the largest share group asked for (0 without --protocol share)
	partitions             int
	kafka                  string
	nodes                  int
	heapMB                 int
	embedded               bool
	bootstrap              string
	conns                  int
	session, rebalance, hb time.Duration
	consumerHB             time.Duration
	consumerSession        time.Duration
	assignInterval         time.Duration
	assignIntervalSet      bool
	commit                 time.Duration
	steady                 time.Duration
	noRestart              bool
	viaProxy               bool
	stableTimeout          time.Duration
	seed                   string
	json                   bool
	logs                   string
	cpuProfile             string
}

func cmdScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f scaleFlags
	fs := newFlagSet("scale", scaleUsage)
	f.register(fs)
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	sizes, protos, seed, err := f.check(given(fs))
	if err != nil {
		return err
	}
	if err := scale.CheckSize(scale.Sizes{
		Members: sizes[len(sizes)-1], Partitions: f.partitions, Protocols: protos, Conns: f.conns,
		Embedded: f.embedded, Container: !f.embedded && f.bootstrap == "",
	}, machine.This()); err != nil {
		return badInput("%v", err)
	}
	if f.logs != "" {
		if err := outputDir("scale --logs", f.logs); err != nil {
			return err
		}
		if old, _ := filepath.Glob(filepath.Join(f.logs, "node-*.log")); len(old) > 0 {
			return badInput("scale --logs %s already holds node logs (%s) of an earlier run: give a new directory", f.logs, filepath.Base(old[0]))
		}
	}
	logf := con.Logf
	con.Infof("scale: seed %d; rerun: groupquake scale %s", seed, f.rerun(fs, seed))
	stopWatch := con.watch(ctx)
	defer stopWatch()

	h, err := f.cluster(ctx, logf)
	if err != nil {
		return exitError{exitFailed, fmt.Sprintf("the cluster could not be started: %v", err)}
	}
	defer func() {
		if c, ok := h.(*cluster.Cluster); ok && f.logs != "" {
			saveNodeLogs(c, f.logs, logf)
		}
		if err := h.Close(context.Background()); err != nil {
			logf("close the cluster: %v", err)
		}
	}()
	runs := &scaleRuns{f: &f, con: con, logf: logf, seed: seed, failed: map[scale.Protocol]bool{}}
	step, steps := 0, len(sizes)*len(protos)
	// Size by size, both protocols at each size before the next, so that
	// a run cut short has the smaller sizes of every protocol.
	for _, n := range sizes {
		for _, p := range protos {
			step++
			if runs.failed[p] || ctx.Err() != nil {
				continue
			}
			con.Infof("scale run %d of %d: %s with %d members", step, steps, p, n)
			h = runs.one(ctx, h, p, n, step)
		}
	}
	reps, shareReps, gave := runs.reps, runs.shareReps, runs.gave
	if f.json {
		doc := scaleJSON{SchemaVersion: schemaVersion, Seed: seed, Reports: []scaleReportJSON{}, Gave: gave, Share: shareReps}
		for _, r := range reps {
			doc.Reports = append(doc.Reports, scaleReportOf(r))
		}
		if err := writeJSON(stdout, doc); err != nil {
			return err
		}
	} else {
		printScale(stdout, reps)
		printShareScale(stdout, shareReps)
	}
	con.Infof("peak resident set of this process: %d MB", scale.MaxRSS()>>20)
	if err := interrupted(ctx, fmt.Sprintf("(what was measured up to there is printed above); rerun with: groupquake scale %s", f.rerun(fs, seed))); err != nil {
		return err
	}
	if len(gave) > 0 {
		return exitError{exitFailed, fmt.Sprintf("%d run(s) did not reach a stable group: %s", len(gave), strings.Join(gave, "; "))}
	}
	return nil
}

// register defines scale's flags on fs.
func (f *scaleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.members, "members", "", "group sizes, comma-separated (each at least 2): 500,2000,5000")
	fs.StringVar(&f.protocols, "protocol", "", "classic, consumer, share, or several comma-separated")
	fs.IntVar(&f.partitions, "partitions", 500, "partitions of the group's topic")
	fs.StringVar(&f.kafka, "kafka", cluster.DefaultKafkaVersion, "Kafka version of the container cluster")
	fs.IntVar(&f.nodes, "nodes", 3, "broker nodes of the container cluster: 1 or 3")
	fs.IntVar(&f.heapMB, "heap", 1024, "JVM heap of each node in MB (0: the cluster's default, 384)")
	fs.BoolVar(&f.embedded, "embedded", false, "run against the reference coordinator served in this process instead of containers")
	fs.StringVar(&f.bootstrap, "bootstrap", "", "host:port[,host:port] of an external cluster (no node restart unless it is a container cluster)")
	fs.IntVar(&f.conns, "conns", 0, "most connections the consumer-protocol members share to one broker, opened as their queue needs them (0: "+strconv.Itoa(light.MaxShared)+"; share members: their heartbeat connections, 0: 8)")
	fs.IntVar(&f.shareRecords, "share-records", 20000, "--protocol share: the backlog produced before the members join, which the group drains")
	fs.DurationVar(&f.session, "session", 45*time.Second, "classic session timeout (JoinGroup)")
	fs.DurationVar(&f.rebalance, "rebalance-timeout", 60*time.Second, "rebalance timeout of both protocols")
	fs.DurationVar(&f.hb, "heartbeat", 3*time.Second, "classic heartbeat interval")
	fs.DurationVar(&f.consumerHB, "consumer-heartbeat", 5*time.Second, "group.consumer.heartbeat.interval.ms of the cluster scale starts (Kafka's default)")
	fs.DurationVar(&f.consumerSession, "consumer-session", 45*time.Second, "group.consumer.session.timeout.ms of the cluster scale starts (Kafka's default)")
	fs.DurationVar(&f.assignInterval, "consumer-assignment-interval", 0, "group.consumer.assignment.interval.ms of the cluster scale starts (KIP-1263, Kafka 4.3+; default Kafka's own)")
	fs.DurationVar(&f.commit, "commit-interval", 5*time.Second, "how often a member commits its partitions (0: only on revocation and once per assignment)")
	fs.DurationVar(&f.steady, "steady", 15*time.Second, "how long the stable group is left alone to measure steady load (0: skip)")
	fs.BoolVar(&f.viaProxy, "via-proxy", false, "container cluster: members dial the published loopback ports (Docker's userland proxy) instead of the containers' own addresses")
	fs.BoolVar(&f.noRestart, "no-restart", false, "skip the coordinator node restart")
	fs.DurationVar(&f.stableTimeout, "stable-timeout", 10*time.Minute, "how long each phase may take to reach a stable group")
	fs.StringVar(&f.seed, "seed", "", "seed of the member ids and heartbeat jitter (default: a random one, printed)")
	fs.BoolVar(&f.json, "json", false, "print the reports as JSON on stdout")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this process per run and phase in this directory (with --embedded the coordinator is in it)")
	fs.StringVar(&f.logs, "logs", "", "container cluster: save each node's whole log in this directory (node-ID.log) before the cluster is removed")
}

// scaleRuns carries the reports and the runs that gave of one scale
// command, run by run.
type scaleRuns struct {
	f         *scaleFlags
	con       *console
	logf      func(string, ...any)
	seed      uint64
	reps      []*scale.Report
	shareReps []*scale.ShareReport
	gave      []string
	failed    map[scale.Protocol]bool
}

// one carries out the run of protocol p with n members, the step-th of the
// command, on h, and returns the cluster the next run uses (a fresh one
// for an embedded cluster). A run that fails marks p failed: its larger
// sizes are skipped (something gave), the other protocols still run.
func (r *scaleRuns) one(ctx context.Context, h cluster.Handle, p scale.Protocol, n, step int) cluster.Handle {
	f, logf := r.f, r.logf
	group, topic := scale.Names(p, n, r.seed)
	o := scale.Options{
		Protocol: p, Members: n, Partitions: int32(f.partitions), Group: group, Topic: topic,
		Light: light.Config{
			SessionTimeout: f.session, RebalanceTimeout: f.rebalance, HeartbeatInterval: f.hb,
			CommitInterval: f.commit, Conns: f.conns, Seed: r.seed,
		},
		Direct: !f.viaProxy,
		Steady: f.steady, Restart: !f.noRestart && f.bootstrap == "", StableTimeout: f.stableTimeout, CPUProfile: f.cpuProfile, Logf: logf, OnPhase: onPhase,
	}
	if f.embedded && step > 1 {
		// A fresh embedded cluster for each run: its coordinator
		// replays the whole log on a restart, and the records of
		// the groups before (a collapsed consumer group of 10,000
		// writes millions) made a classic run's restart replay
		// for longer than its timeout.
		if err := h.Close(context.Background()); err != nil {
			logf("close the cluster: %v", err)
		}
		nh, err := f.cluster(ctx, logf)
		if err != nil {
			r.gave = append(r.gave, fmt.Sprintf("%s with %d members: the embedded cluster could not be started: %v", p, n, err))
			r.failed[p] = true
			return h
		}
		h = nh
	}
	if p == scale.Share {
		sr, err := scale.RunShare(ctx, h, scale.ShareOptions{
			Members: n, Partitions: int32(f.partitions), Records: f.shareRecords, Group: group, Topic: topic,
			Conns: f.conns, StableTimeout: f.stableTimeout, Logf: logf,
			// Only the embedded cluster serves again on the same
			// address, where the members still look for it.
			Restart: f.embedded && !f.noRestart,
		})
		if sr != nil {
			r.shareReps = append(r.shareReps, sr)
		}
		r.gaveIf(ctx, p, n, err)
		return h
	}
	rep, err := scale.Run(ctx, h, o)
	if rep != nil && len(rep.Phases) > 0 {
		r.reps = append(r.reps, rep)
		if b, err := json.Marshal(scaleReportOf(rep)); err == nil {
			r.con.Debugf("report: %s", b)
		}
	}
	r.gaveIf(ctx, p, n, err)
	return h
}

// gaveIf records err of the run of p with n members: unless the command
// was interrupted (said at its end), the larger sizes of p are skipped.
func (r *scaleRuns) gaveIf(ctx context.Context, p scale.Protocol, n int, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	r.failed[p] = true
	r.gave = append(r.gave, fmt.Sprintf("%s with %d members: %v", p, n, err))
	r.logf("gave: %s", r.gave[len(r.gave)-1])
}

// saveNodeLogs writes each node's log to dir/node-ID.log.
func saveNodeLogs(c *cluster.Cluster, dir string, logf func(string, ...any)) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("node logs: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range c.NodeIDs() {
		out, err := c.Logs(ctx, id)
		if err != nil {
			logf("node %d's log: %v", id, err)
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("node-%d.log", id))
		if err := run.WriteFileAtomic(p, []byte(out), 0o644); err != nil {
			logf("node %d's log: %v", id, err)
			continue
		}
		logf("node %d's log: %s", id, p)
	}
}

func (f *scaleFlags) check(set map[string]bool) ([]int, []scale.Protocol, uint64, error) {
	if f.members == "" || f.protocols == "" {
		return nil, nil, 0, badInput("scale needs --members and --protocol (see 'groupquake scale -h')")
	}
	var sizes []int
	for _, s := range strings.Split(f.members, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			return nil, nil, 0, badInput("--members %q: each size is a whole number of at least 2 (one member leaves)", s)
		}
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	var protos []scale.Protocol
	for _, s := range strings.Split(f.protocols, ",") {
		p, err := scale.ParseProtocol(strings.TrimSpace(s))
		if err != nil {
			return nil, nil, 0, badInput("--protocol: %v", err)
		}
		if !slices.Contains(protos, p) {
			protos = append(protos, p)
		}
	}
	if f.partitions < 1 {
		return nil, nil, 0, badInput("--partitions %d: the topic needs at least one partition", f.partitions)
	}
	if slices.Contains(protos, scale.Share) {
		if n := sizes[len(sizes)-1]; n > version.ShareGroupMaxSizeCap {
			return nil, nil, 0, badInput("--members %d with --protocol share: Kafka caps a share group at %d members (group.share.max.size may be set from 1 to %d); give --members %d or fewer", n, version.ShareGroupMaxSizeCap, version.ShareGroupMaxSizeCap, version.ShareGroupMaxSizeCap)
		}
		f.shareMaxSize = sizes[len(sizes)-1]
		if v, err := version.Parse(f.kafka); err == nil && f.bootstrap == "" {
			if err := version.CheckShareGroups(v); err != nil {
				return nil, nil, 0, badInput("--protocol share on --kafka %s: %v", f.kafka, err)
			}
		}
	}
	if err := f.checkCluster(set); err != nil {
		return nil, nil, 0, err
	}
	if err := cluster.CheckKafkaVersion(f.kafka); err != nil {
		return nil, nil, 0, badInput("--kafka: %v (groupquake version lists them)", err)
	}
	if f.nodes != 1 && f.nodes != 3 {
		return nil, nil, 0, badInput("--nodes %d: a container cluster has 1 or 3 nodes", f.nodes)
	}
	if f.heapMB < 0 {
		return nil, nil, 0, badInput("--heap %d: give each node's JVM heap in MB, such as 1024, or 0 for the cluster's default", f.heapMB)
	}
	if f.conns < 0 {
		return nil, nil, 0, badInput("--conns %d: give the most connections the consumer members share, or 0 for %d", f.conns, light.MaxShared)
	}
	f.assignIntervalSet = set["consumer-assignment-interval"]
	if f.assignIntervalSet {
		v, _ := version.Parse(f.kafka)
		if !v.Profile().AssignmentInterval {
			return nil, nil, 0, badInput("--consumer-assignment-interval: Kafka %s has no group.consumer.assignment.interval.ms (KIP-1263 is 4.3+); leave it out", f.kafka)
		}
		if f.assignInterval < 0 {
			return nil, nil, 0, badInput("--consumer-assignment-interval %s: give 0 (an assignment per group epoch) or a positive time", f.assignInterval)
		}
	}
	if err := f.checkDurations(); err != nil {
		return nil, nil, 0, err
	}
	if f.cpuProfile != "" {
		if err := os.MkdirAll(f.cpuProfile, 0o755); err != nil {
			return nil, nil, 0, badInput("--cpuprofile %s: %v; give a directory for the profiles", f.cpuProfile, err)
		}
	}
	if f.logs != "" {
		if st, err := os.Stat(f.logs); err == nil && !st.IsDir() {
			return nil, nil, 0, badInput("--logs %s is a file: give a directory for the nodes' logs", f.logs)
		}
	}
	seed := rand.Uint64()
	if f.seed != "" {
		s, err := strconv.ParseUint(f.seed, 10, 64)
		if err != nil {
			return nil, nil, 0, badInput("--seed %q: a seed is an unsigned whole number", f.seed)
		}
		seed = s
	}
	return sizes, protos, seed, nil
}

// checkCluster checks the flags that pick the cluster: one of --embedded
// and --bootstrap at most, and neither with the flags that shape the
// container cluster scale starts.
func (f *scaleFlags) checkCluster(set map[string]bool) error {
	if f.embedded && f.bootstrap != "" {
		return badInput("--embedded and --bootstrap both given: pick one cluster")
	}
	if f.embedded || f.bootstrap != "" {
		// These shape the container cluster scale starts.
		names := []string{"kafka", "nodes", "heap", "via-proxy", "logs"}
		if f.bootstrap != "" {
			names = append(names, "consumer-heartbeat", "consumer-session", "consumer-assignment-interval")
		}
		for _, name := range names {
			if set[name] {
				which := "--embedded runs in this process"
				if f.bootstrap != "" {
					which = "with --bootstrap the cluster is yours"
				}
				return badInput("--%s applies to the container cluster scale starts; %s: leave --%s out", name, which, name)
			}
		}
	}
	if f.bootstrap != "" {
		for _, a := range strings.Split(f.bootstrap, ",") {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				return badInput("--bootstrap %q: %q is not host:port; give host:port[,host:port]", f.bootstrap, a)
			}
		}
	}
	return nil
}

// checkDurations checks that the timeouts and intervals are positive and
// that the ones that may be off are not negative.
func (f *scaleFlags) checkDurations() error {
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"session", f.session}, {"rebalance-timeout", f.rebalance}, {"heartbeat", f.hb}, {"consumer-heartbeat", f.consumerHB}, {"consumer-session", f.consumerSession}, {"stable-timeout", f.stableTimeout}} {
		if d.d <= 0 {
			return badInput("--%s %s: must be positive", d.name, d.d)
		}
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"commit-interval", f.commit}, {"steady", f.steady}} {
		if d.d < 0 {
			return badInput("--%s %s: give 0 (none) or a positive time", d.name, d.d)
		}
	}
	return nil
}

// rerun is the command line that repeats this run with its seed.
func (f *scaleFlags) rerun(fs *flag.FlagSet, seed uint64) string {
	args := []string{"--members", f.members, "--protocol", f.protocols, "--partitions", strconv.Itoa(f.partitions), "--seed", strconv.FormatUint(seed, 10)}
	switch {
	case f.embedded:
		args = append(args, "--embedded")
	case f.bootstrap != "":
		args = append(args, "--bootstrap", f.bootstrap)
	default:
		args = append(args, "--kafka", f.kafka, "--nodes", strconv.Itoa(f.nodes))
	}
	// Every other flag the user set changes what is measured.
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "members", "protocol", "partitions", "seed", "embedded", "bootstrap", "kafka", "nodes", "json", "logs", "cpuprofile":
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	return strings.Join(args, " ")
}

// assignmentInterval is group.consumer.assignment.interval.ms of the
// cluster scale starts: the flag's, or Kafka's own default; ok is false for
// a release without it.
func (f *scaleFlags) assignmentInterval() (d time.Duration, ok bool) {
	p := version.MustParse(f.kafka).Profile()
	if !p.AssignmentInterval {
		return 0, false
	}
	if f.assignIntervalSet {
		return f.assignInterval, true
	}
	return time.Duration(p.DefaultAssignmentIntervalMs) * time.Millisecond, true
}

func (f *scaleFlags) cluster(ctx context.Context, logf func(string, ...any)) (cluster.Handle, error) {
	interval, hasInterval := f.assignmentInterval()
	switch {
	case f.embedded:
		// Kafka's consumer-protocol timers instead of the embedded
		// cluster's fast test ones, as on the container cluster.
		return cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Logf: logf, Coordinator: func(c *coordinator.Config) {
			c.Consumer.HeartbeatInterval, c.Consumer.SessionTimeout = f.consumerHB, f.consumerSession
			if hasInterval {
				c.Consumer.AssignmentInterval = &interval
			}
			if f.shareMaxSize > version.ShareGroupMaxSizeDefault {
				c.Share.MaxSize = f.shareMaxSize // as brokerSettings sets group.share.max.size
			}
		}})
	case f.bootstrap != "":
		if f.shareMaxSize > version.ShareGroupMaxSizeDefault {
			logf("--protocol share with %d members: the cluster's group.share.max.size must be at least %d (Kafka's default is %d), or the members past it are answered GROUP_MAX_SIZE_REACHED", f.shareMaxSize, f.shareMaxSize, version.ShareGroupMaxSizeDefault)
		}
		return cluster.Connect(ctx, cluster.ExternalConfig{Bootstrap: strings.Split(f.bootstrap, ","), Logf: logf})
	}
	return cluster.Start(ctx, cluster.Config{Version: f.kafka, Nodes: f.nodes, HeapMB: f.heapMB, Logf: logf, Settings: f.brokerSettings()})
}

// brokerSettings are the broker properties of the container cluster scale
// starts: Kafka's consumer-protocol timers (or the flags'), and a share
// group size that admits the largest share group asked for.
func (f *scaleFlags) brokerSettings() map[string]string {
	settings := map[string]string{
		"group.consumer.heartbeat.interval.ms": strconv.FormatInt(f.consumerHB.Milliseconds(), 10),
		"group.consumer.session.timeout.ms":    strconv.FormatInt(f.consumerSession.Milliseconds(), 10),
	}
	if interval, ok := f.assignmentInterval(); ok {
		settings["group.consumer.assignment.interval.ms"] = strconv.FormatInt(interval.Milliseconds(), 10)
	}
	if f.shareMaxSize > version.ShareGroupMaxSizeDefault {
		settings["group.share.max.size"] = strconv.Itoa(f.shareMaxSize)
	}
	return settings
}

// scaleJSON is what `scale --json` prints: every run's report, and the
// runs that did not reach a stable group.
type scaleJSON struct {
	SchemaVersion int               `json:"schema_version"`
	Seed          uint64            `json:"seed"`
	Reports       []scaleReportJSON `json:"reports"`
	// Gave says which runs did not reach a stable group, and why.
	Gave []string `json:"gave,omitempty"`
	// Share are the share groups' runs (--protocol share).
	Share []*scale.ShareReport `json:"share,omitempty"`
}

// printShareScale prints the share groups' runs: time to stable, the
// sharing, the drain rate and the redeliveries.
func printShareScale(w io.Writer, reps []*scale.ShareReport) {
	if len(reps) == 0 {
		return
	}
	fmt.Fprintf(w, "\nshare groups (KIP-932)\n%-8s %-10s %-10s %-12s %-10s %-12s %-12s %-12s %-11s %-10s\n", "members", "partitions", "to stable", "per partition", "backlog", "records/s", "deliveries", "redelivered", "one leaves", "restart")
	for _, r := range reps {
		restart := "-"
		if r.RestartToStable > 0 {
			restart = r.RestartToStable.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%-8d %-10d %-10s %-13s %-10d %-12.0f %-12d %-12d %-11s %-10s\n", r.Members, r.Partitions, r.ToStable.Round(10*time.Millisecond),
			fmt.Sprintf("%d–%d", r.MinSharing, r.MaxSharing), r.Backlog, r.RecordsPerSecond, r.Deliveries, r.Redeliveries, r.LeaveToStable.Round(10*time.Millisecond), restart)
	}
}

// scaleReportJSON is scale.Report with every duration in seconds.
type scaleReportJSON struct {
	Protocol   scale.Protocol   `json:"protocol"`
	Members    int              `json:"members"`
	Partitions int32            `json:"partitions"`
	Conns      int64            `json:"connections"`
	MaxShared  int              `json:"max_shared_connections"`
	Phases     []scalePhaseJSON `json:"phases"`
	scale.Footprint
}

type scalePhaseJSON struct {
	Name          string           `json:"name"`
	Members       int              `json:"members"`
	ToStableS     float64          `json:"to_stable_s"`
	Paused        int              `json:"paused_partitions"`
	PauseP50S     float64          `json:"pause_p50_s"`
	PauseP99S     float64          `json:"pause_p99_s"`
	PauseMaxS     float64          `json:"pause_max_s"`
	Answered      int64            `json:"answered"`
	RPS           float64          `json:"rps"`
	ByAPI         map[string]int64 `json:"by_api"`
	HeartbeatP50S float64          `json:"heartbeat_p50_s"`
	HeartbeatP99S float64          `json:"heartbeat_p99_s"`
	HBWaitP50S    float64          `json:"heartbeat_wait_p50_s"`
	HBWaitP99S    float64          `json:"heartbeat_wait_p99_s"`
	scale.PhaseTraffic
	HarnessCPUS float64 `json:"harness_cpu_s"`
	BrokerCPUS  float64 `json:"broker_cpu_s,omitempty"`
	Epoch       int32   `json:"epoch"`
	Note        string  `json:"note,omitempty"`
}

func scaleReportOf(r *scale.Report) scaleReportJSON {
	out := scaleReportJSON{
		Protocol: r.Protocol, Members: r.Members, Partitions: r.Partitions, Conns: r.Conns, MaxShared: r.MaxShared, Phases: []scalePhaseJSON{},
		Footprint: r.Footprint,
	}
	for _, p := range r.Phases {
		byAPI := p.ByAPI
		if byAPI == nil {
			byAPI = map[string]int64{}
		}
		out.Phases = append(out.Phases, scalePhaseJSON{
			Name: p.Name, Members: p.Members, ToStableS: seconds(p.ToStable), Paused: p.Paused,
			PauseP50S: seconds(p.PauseP50), PauseP99S: seconds(p.PauseP99), PauseMaxS: seconds(p.PauseMax),
			Answered: p.Answered, RPS: p.RPS, ByAPI: byAPI, HeartbeatP50S: seconds(p.HeartbeatP50), HeartbeatP99S: seconds(p.HeartbeatP99),
			HBWaitP50S: seconds(p.HeartbeatWaitP50), HBWaitP99S: seconds(p.HeartbeatWaitP99), PhaseTraffic: p.PhaseTraffic,
			HarnessCPUS: seconds(p.HarnessCPU), BrokerCPUS: seconds(p.BrokerCPU),
			Epoch: p.Epoch, Note: p.Note,
		})
	}
	return out
}

func printScale(w io.Writer, reps []*scale.Report) {
	if len(reps) == 0 {
		return // share runs only: printShareScale has them
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64)
	}
	msf := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tmembers\tphase\tto stable ms\tepoch\tpaused\tpause p50 ms\tp99 ms\tmax ms\tcoord req/s\thb p50 ms\thb p99 ms\tqueued p99 ms\tconns\tharness CPU s\tbroker CPU s\t")
	for _, r := range reps {
		for _, ph := range r.Phases {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%d\t%.2f\t%.2f\t\n", r.Protocol, ph.Members, ph.Name, ms(ph.ToStable), ph.Epoch,
				ph.Paused, ms(ph.PauseP50), ms(ph.PauseP99), ms(ph.PauseMax), ph.RPS, msf(ph.HeartbeatP50), msf(ph.HeartbeatP99), msf(ph.HeartbeatWaitP99), ph.PeakConns,
				ph.HarnessCPU.Seconds(), ph.BrokerCPU.Seconds())
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tmembers\tconnections\tRSS KB/member\theap KB/member\tRSS MB\tgoroutines\tsteady CPU µs/member/s\tbroker MB\toverlaps\t")
	for _, r := range reps {
		var broker uint64
		for _, m := range r.BrokerMemory {
			broker += m
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%d\t%d\t%.1f\t%d\t%d\t\n", r.Protocol, r.Members, r.Conns, r.RSSPerMember/1024, r.HeapPerMember/1024,
			r.RSS>>20, r.Goroutines, r.SteadyCPUPerMember, broker>>20, r.Overlaps)
	}
	tw.Flush()
	for _, r := range reps {
		for _, ph := range r.Phases {
			if ph.Note != "" {
				fmt.Fprintf(w, "%s %d, %s: %s\n", r.Protocol, r.Members, ph.Name, ph.Note)
			}
			if len(ph.Dropped) > 0 || len(ph.Void) > 0 {
				fmt.Fprintf(w, "%s %d, %s: requests given up while queued (dropped, never sent) %v, after they were sent %v\n", r.Protocol, r.Members, ph.Name, ph.Dropped, ph.Void)
			}
			if len(ph.Errors) > 0 {
				fmt.Fprintf(w, "%s %d, %s: errors the members got: %v (latest of each: %v)\n", r.Protocol, r.Members, ph.Name, ph.Errors, ph.ErrorSamples)
			}
		}
	}
}
