package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/harness/scale"
	"github.com/groupquake/groupquake/internal/machine"
)

const scaleUsage = `Usage: groupquake scale --members N[,N...] --protocol classic|consumer[,...] --partitions P [flags]

Puts one consumer group of N lightweight members (membership, assignment and
commits; no record fetching) on a cluster, for each protocol and size in
turn (a fresh group and topic each), and measures: the time to a stable
group after a join wave of N, after one member leaves and after the
coordinator's node restarts; the rebalance pause per partition (p50, p99,
max); the requests per second the coordinator answered; and this process's
own CPU and memory per member, apart from the brokers' (container CPU and
memory, reported beside them).

Consumer-protocol members share --conns connections; each classic member
needs one of its own (the broker parks JoinGroup and SyncGroup, and a broker
answers a connection's requests one at a time).

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
	commit                 time.Duration
	steady                 time.Duration
	noRestart              bool
	viaProxy               bool
	stableTimeout          time.Duration
	seed                   string
	json                   bool
	logs                   string
}

func cmdScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f scaleFlags
	fs := newFlagSet("scale", scaleUsage)
	fs.StringVar(&f.members, "members", "", "group sizes, comma-separated (each at least 2): 500,2000,5000")
	fs.StringVar(&f.protocols, "protocol", "", "classic, consumer, or both comma-separated")
	fs.IntVar(&f.partitions, "partitions", 0, "partitions of the group's topic")
	fs.StringVar(&f.kafka, "kafka", cluster.DefaultKafkaVersion, "Kafka version of the container cluster")
	fs.IntVar(&f.nodes, "nodes", 3, "broker nodes of the container cluster: 1 or 3")
	fs.IntVar(&f.heapMB, "heap", 0, "JVM heap of each node in MB (0: the cluster's default, 384)")
	fs.BoolVar(&f.embedded, "embedded", false, "run against the reference coordinator served in this process instead of containers")
	fs.StringVar(&f.bootstrap, "bootstrap", "", "host:port[,host:port] of an external cluster (no node restart unless it is a container cluster)")
	fs.IntVar(&f.conns, "conns", 8, "connections the consumer-protocol members share")
	fs.DurationVar(&f.session, "session", 45*time.Second, "classic session timeout (JoinGroup)")
	fs.DurationVar(&f.rebalance, "rebalance-timeout", 60*time.Second, "rebalance timeout of both protocols")
	fs.DurationVar(&f.hb, "heartbeat", 3*time.Second, "classic heartbeat interval")
	fs.DurationVar(&f.consumerHB, "consumer-heartbeat", 5*time.Second, "container cluster: group.consumer.heartbeat.interval.ms (Kafka's default)")
	fs.DurationVar(&f.consumerSession, "consumer-session", 45*time.Second, "container cluster: group.consumer.session.timeout.ms (Kafka's default)")
	fs.DurationVar(&f.commit, "commit-interval", 5*time.Second, "how often a member commits its partitions (0: only on revocation and once per assignment)")
	fs.DurationVar(&f.steady, "steady", 15*time.Second, "how long the stable group is left alone to measure steady load (0: skip)")
	fs.BoolVar(&f.viaProxy, "via-proxy", false, "container cluster: members dial the published loopback ports (Docker's userland proxy) instead of the containers' own addresses")
	fs.BoolVar(&f.noRestart, "no-restart", false, "skip the coordinator node restart")
	fs.DurationVar(&f.stableTimeout, "stable-timeout", 10*time.Minute, "how long each phase may take to reach a stable group")
	fs.StringVar(&f.seed, "seed", "", "seed of the member ids and heartbeat jitter (default: a random one, printed)")
	fs.BoolVar(&f.json, "json", false, "print the reports as JSON on stdout")
	fs.StringVar(&f.logs, "logs", "", "container cluster: save each node's whole log in this directory (node-ID.log) before the cluster is removed")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
	}
	sizes, protos, seed, err := f.check()
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
	logf := logTo(stderr)
	logf("scale: seed %d; rerun: groupquake scale %s", seed, f.rerun(fs, seed))

	h, err := f.cluster(ctx, logf)
	if err != nil {
		return err
	}
	defer func() {
		if c, ok := h.(*cluster.Cluster); ok && f.logs != "" {
			saveNodeLogs(c, f.logs, logf)
		}
		if err := h.Close(context.Background()); err != nil {
			logf("close the cluster: %v", err)
		}
	}()
	var reps []*scale.Report
	var gave []string
	failed := map[scale.Protocol]bool{}
	// Size by size, both protocols at each size before the next, so that
	// a run cut short has the smaller sizes of every protocol.
	for _, n := range sizes {
		for _, p := range protos {
			if failed[p] || ctx.Err() != nil {
				continue
			}
			// Short names: the classic group's metadata record repeats the
			// topic name twice per member.
			name := fmt.Sprintf("gq%s%d-%d", p[:2], n, seed%100000)
			o := scale.Options{
				Protocol: p, Members: n, Partitions: int32(f.partitions), Group: name, Topic: name,
				Light: light.Config{
					SessionTimeout: f.session, RebalanceTimeout: f.rebalance, HeartbeatInterval: f.hb,
					CommitInterval: f.commit, Conns: f.conns, Seed: seed,
				},
				Direct: !f.viaProxy,
				Steady: f.steady, Restart: !f.noRestart && f.bootstrap == "", StableTimeout: f.stableTimeout, Logf: logf, OnPhase: onPhase,
			}
			rep, err := scale.Run(ctx, h, o)
			if rep != nil && len(rep.Phases) > 0 {
				reps = append(reps, rep)
				if b, err := json.Marshal(rep); err == nil {
					logf("report: %s", b)
				}
			}
			if err != nil && ctx.Err() != nil {
				break // interrupted: said below
			}
			if err != nil {
				// Push until something gives: the larger sizes of this
				// protocol are skipped, the other protocol still runs.
				failed[p] = true
				gave = append(gave, fmt.Sprintf("%s with %d members: %v", p, n, err))
				logf("gave: %s", gave[len(gave)-1])
			}
		}
	}
	printScale(stdout, reps, f.json)
	logf("peak resident set of this process: %d MB", scale.MaxRSS()>>20)
	if err := interrupted(ctx, fmt.Sprintf("(what was measured up to there is printed above); rerun with: groupquake scale %s", f.rerun(fs, seed))); err != nil {
		return err
	}
	if len(gave) > 0 {
		return fmt.Errorf("%d run(s) did not reach a stable group:\n  %s", len(gave), strings.Join(gave, "\n  "))
	}
	return nil
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

func (f *scaleFlags) check() ([]int, []scale.Protocol, uint64, error) {
	if f.members == "" || f.protocols == "" || f.partitions == 0 {
		return nil, nil, 0, badInput("scale needs --members, --protocol and --partitions (see 'groupquake scale -h')")
	}
	var sizes []int
	for _, s := range strings.Split(f.members, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			return nil, nil, 0, badInput("--members %q: each size is a whole number of at least 2 (one member leaves)", s)
		}
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	var protos []scale.Protocol
	for _, s := range strings.Split(f.protocols, ",") {
		p, err := scale.ParseProtocol(strings.TrimSpace(s))
		if err != nil {
			return nil, nil, 0, badInput("--protocol: %v", err)
		}
		protos = append(protos, p)
	}
	if f.partitions < 1 {
		return nil, nil, 0, badInput("--partitions %d: the topic needs at least one partition", f.partitions)
	}
	if f.embedded && f.bootstrap != "" {
		return nil, nil, 0, badInput("--embedded and --bootstrap both given: pick one cluster")
	}
	if f.nodes != 1 && f.nodes != 3 {
		return nil, nil, 0, badInput("--nodes %d: a container cluster has 1 or 3 nodes", f.nodes)
	}
	if f.conns < 1 {
		return nil, nil, 0, badInput("--conns %d: the consumer members need at least one connection", f.conns)
	}
	for name, d := range map[string]time.Duration{"session": f.session, "rebalance-timeout": f.rebalance, "heartbeat": f.hb, "consumer-heartbeat": f.consumerHB, "consumer-session": f.consumerSession, "stable-timeout": f.stableTimeout} {
		if d <= 0 {
			return nil, nil, 0, badInput("--%s %s: must be positive", name, d)
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
		case "members", "protocol", "partitions", "seed", "embedded", "bootstrap", "kafka", "nodes", "json", "logs":
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	return strings.Join(args, " ")
}

func (f *scaleFlags) cluster(ctx context.Context, logf func(string, ...any)) (cluster.Handle, error) {
	switch {
	case f.embedded:
		return cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Logf: logf})
	case f.bootstrap != "":
		return cluster.Connect(ctx, cluster.ExternalConfig{Bootstrap: strings.Split(f.bootstrap, ","), Logf: logf})
	}
	if err := cluster.CheckKafkaVersion(f.kafka); err != nil {
		return nil, badInput("--kafka: %v", err)
	}
	return cluster.Start(ctx, cluster.Config{
		Version: f.kafka, Nodes: f.nodes, HeapMB: f.heapMB, Logf: logf,
		Settings: map[string]string{
			"group.consumer.heartbeat.interval.ms": strconv.FormatInt(f.consumerHB.Milliseconds(), 10),
			"group.consumer.session.timeout.ms":    strconv.FormatInt(f.consumerSession.Milliseconds(), 10),
		},
	})
}

func printScale(w io.Writer, reps []*scale.Report, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(reps)
		return
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64)
	}
	msf := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tmembers\tphase\tto stable ms\tepoch\tpaused\tpause p50 ms\tp99 ms\tmax ms\tcoord req/s\thb p50 ms\thb p99 ms\tharness CPU s\tbroker CPU s\t")
	for _, r := range reps {
		for _, ph := range r.Phases {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%.0f\t%s\t%s\t%.2f\t%.2f\t\n", r.Protocol, ph.Members, ph.Name, ms(ph.ToStable), ph.Epoch,
				ph.Paused, ms(ph.PauseP50), ms(ph.PauseP99), ms(ph.PauseMax), ph.RPS, msf(ph.HeartbeatP50), msf(ph.HeartbeatP99), ph.HarnessCPU.Seconds(), ph.BrokerCPU.Seconds())
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
			if len(ph.Errors) > 0 {
				fmt.Fprintf(w, "%s %d, %s: errors the members got: %v (latest of each: %v)\n", r.Protocol, r.Members, ph.Name, ph.Errors, ph.ErrorSamples)
			}
		}
	}
}
