package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/clients/process/python"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/membercheck"
)

const memberCheckUsage = `Usage: groupquake member-check [flags] -- COMMAND [ARGS...]
       groupquake member-check [flags] --impl java|spring-kafka|confluent-python

Checks an implementation of groupquake's member protocol (docs/member-protocol.md):
COMMAND, started once per member, speaks the protocol on its standard input and
output. On the embedded cluster (no Docker), or with --real on a one-node Kafka
cluster in containers, member-check drives it, in each group protocol, through a
scripted scenario: hello offering only a version no client speaks (it must refuse
and end), join and consume alone, a message of unknown type, a commit (the group's
committed offsets must be the ones asked for), a rebalance with one of groupquake's
members, a close, then a new process and its crash. Every message either way is
judged by the protocol's rules (message order, every command and call answered,
ownership events acknowledged before the client goes on, assignment before
consumption, revocation before reassignment, nothing after close or crash); then,
with --run-duration, a churn run of the implementation beside groupquake's members
is judged by every checker (the member contract).

Each rule is printed ok or FAIL with the step, the rule's name and the message
that broke it. --impl checks an implementation groupquake ships instead of a
command (java: the Java KafkaConsumer's driver of --kafka-clients; spring-kafka:
a Spring Kafka listener container on --kafka-clients, docs/spring-kafka.md;
confluent-python: clients/process/python's member.py on confluent-kafka, needing
python3 with confluent_kafka).

Exit status: 0 every rule holds, 1 a rule was broken, 2 bad input, 3 the check
could not be carried out.
`

// cmdMemberCheck is groupquake member-check.
func cmdMemberCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("member-check", memberCheckUsage)
	var lv levelFlags
	lv.register(fs)
	protocols := fs.String("protocol", "both", "the group protocols to check: classic, consumer or both")
	kafka := fs.String("kafka", "", "the Kafka release the embedded cluster behaves as, or --real's (default: groupquake's default)")
	real := fs.Bool("real", false, "check on a one-node Kafka cluster in containers (Docker; image groupquake/kafka:VERSION) instead of the embedded one")
	runDur := fs.Duration("run-duration", 15*time.Second, "the workload of the contract run per protocol (0: no contract run)")
	seed := fs.Uint64("seed", 1, "the seed of the contract runs")
	out := fs.String("out", "", "the directory for the contract runs (default: a new temporary directory, kept)")
	impl := fs.String("impl", "", "check an implementation groupquake ships: java (the Java KafkaConsumer), spring-kafka (a Spring Kafka listener container), confluent-python (confluent-kafka, librdkafka)")
	clientsV := fs.String("kafka-clients", "", "with --impl java or spring-kafka: the kafka-clients version (default: the Kafka release's)")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	con, err := lv.console(stderr)
	if err != nil {
		return err
	}
	cfg := membercheck.Config{Kafka: *kafka, Real: *real, RunDuration: *runDur, Seed: *seed, Logf: con.Logf}
	switch *protocols {
	case "both":
	case "classic", "consumer":
		cfg.Protocols = []clients.Protocol{clients.Protocol(*protocols)}
	default:
		return badInput("--protocol %q: want classic, consumer or both", *protocols)
	}
	if *kafka != "" {
		if err := cluster.CheckKafkaVersion(*kafka); err != nil {
			return badInput("--kafka: %v (groupquake version lists them)", err)
		}
	}
	switch {
	case *impl != "" && len(pos) > 0:
		return badInput("member-check takes --impl or a command after --, not both")
	case *impl != "":
		c, err := shippedImpl(ctx, *impl, *kafka, *clientsV, con.Logf)
		if err != nil {
			return err
		}
		cfg.Command = c
	case len(pos) == 0:
		return badInput("member-check needs the implementation's command after --, e.g. groupquake member-check -- python3 my_member.py (see 'groupquake member-check -h')")
	default:
		// A command that cannot be started would be judged as breaking every rule.
		if _, err := exec.LookPath(pos[0]); err != nil {
			return badInput("member-check: the command %s cannot be started (%v): give the command that starts one member after --, e.g. groupquake member-check -- python3 my_member.py", pos[0], err)
		}
		cfg.Command = process.Command{Path: pos[0], Args: pos[1:]}
	}
	if *runDur < 0 {
		return badInput("--run-duration %s is negative", *runDur)
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "groupquake-member-check-"); err != nil {
			return err
		}
	} else if err := checkOut(dir); err != nil {
		return badInput("--out: %v", err)
	}
	cfg.Dir = dir
	con.Infof("member-check of %s", cfg.Command)
	rep, err := membercheck.Check(ctx, cfg)
	if err != nil {
		return exitError{exitFailed, err.Error()}
	}
	failed := 0
	for _, f := range rep.Findings {
		if !f.OK {
			failed++
		}
		if !f.OK || !lv.quiet {
			fmt.Fprintln(stdout, f.String())
		}
	}
	fmt.Fprintf(stdout, "%d rules judged: %d hold, %d broken\n", len(rep.Findings), len(rep.Findings)-failed, failed)
	if cfg.RunDuration > 0 {
		fmt.Fprintf(stdout, "contract runs in %s\n", filepath.Clean(dir))
	}
	if failed > 0 {
		return exitError{exitViolation, fmt.Sprintf("%s breaks %d rules of the member protocol or the member contract", cfg.Command, failed)}
	}
	return nil
}

// shippedImpl is the command of an implementation groupquake ships.
func shippedImpl(ctx context.Context, name, kafka, clientsV string, logf func(string, ...any)) (process.Command, error) {
	version := clientsV
	if version == "" {
		version = kafka
	}
	c, err := shippedCommand(ctx, name, version, logf)
	if err != nil {
		if strings.HasPrefix(err.Error(), "unknown") {
			return process.Command{}, badInput("--impl %q: %v", name, err)
		}
		return process.Command{}, exitError{exitFailed, err.Error()}
	}
	return c, nil
}

// shippedCommand resolves an implementation groupquake ships to the
// command of one member process.
func shippedCommand(ctx context.Context, name, version string, logf func(string, ...any)) (process.Command, error) {
	if version == "" {
		version = cluster.DefaultKafkaVersion
	}
	switch name {
	case "java":
		if err := java.CheckJava(); err != nil {
			return process.Command{}, err
		}
		rt, err := (&java.Toolchain{Logf: logf}).Prepare(ctx, version)
		if err != nil {
			return process.Command{}, err
		}
		return rt.Command(java.JVMFlags), nil
	case "spring-kafka":
		rt, err := (&java.Toolchain{Logf: logf}).PrepareSpring(ctx, version, "")
		if err != nil {
			return process.Command{}, err
		}
		logf("spring-kafka: spring-kafka %s on kafka-clients %s", rt.SpringKafka, rt.KafkaClients)
		return rt.Command(java.JVMFlags), nil
	case "confluent-python":
		c, rt, err := python.Command(ctx)
		if err != nil {
			return process.Command{}, err
		}
		logf("confluent-python: confluent-kafka %s, librdkafka %s", rt.ConfluentKafka, rt.Librdkafka)
		return c, nil
	}
	return process.Command{}, fmt.Errorf("unknown implementation: want java, spring-kafka or confluent-python")
}
