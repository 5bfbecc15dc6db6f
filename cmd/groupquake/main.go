// Command groupquake runs chaos and conformance campaigns against Kafka
// consumer groups, builds the Kafka images it needs, and re-checks saved runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

const usage = `groupquake: chaos and conformance for Kafka consumer groups

Usage:
  groupquake run [flags]            the default campaign: three fault families on one cluster, groups of
                                    groupquake's and kgo's members of both protocols, judged, in a table;
                                    with --scenario, one run planned from a seed
  groupquake upgrade --from V [--to W]
                                    validate a rolling Kafka upgrade: a baseline run on V, then the same
                                    workload while every node is replaced by W and the features finalized
  groupquake diff --from V [--to W] [--embedded]
                                    what two Kafka releases do differently to groups: the
                                    conformance vectors on both, each difference explained by
                                    the version profiles or listed as unexplained
  groupquake check RUN_DIR          re-run every checker over a saved run
  groupquake shrink RUN_DIR         for a failed run, the smallest set of its faults under which the
                                    same checker is still violated (trials of the plan on a like cluster)
  groupquake replay --bootstrap ADDR --group G [--kafka VERSION]
                                    replay a live group's __consumer_offsets through the reference
                                    coordinator and compare with what the broker describes
  groupquake image build [flags]    build (or find) the Kafka image for a version ahead of time
  groupquake image list             list served Kafka versions and which images are cached
  groupquake engine up              install and start a Docker engine if none answers (root)
  groupquake sweep                  remove containers and networks left by crashed runs
  groupquake stats DIR...           how hard the nemesis pushed: faults, churn, time under a fault or mid-rebalance
  groupquake scale --members N --protocol classic|consumer --partitions P
                                    thousands of lightweight members in one group: time to a stable
                                    group after a join wave, a leave and a node restart, pauses,
                                    coordinator load, the harness's own CPU and memory per member
  groupquake findings [rerun|triage]
                                    what runs found in Kafka and its clients: list the registry, rerun
                                    its reproducers against a release, or triage run directories
  groupquake member-check -- COMMAND  check an implementation of the member protocol (docs/member-protocol.md)
  groupquake version                the module version and the Kafka versions served (also --version)
  groupquake report [-o FILE] DIR...  render a run's report.html, or over many runs a trend page

Exit status: 0 success (every checker holds), 1 a violation (replay: the states
differ), 2 bad input, refused before anything starts (flags, arguments, an
unreadable run directory), 3 the command could not be carried out (no cluster,
no engine, a failed build, a run that never got past its setup).

Run 'groupquake COMMAND -h' (or 'groupquake help COMMAND') for the flags of a
command. Results go to stdout, progress to stderr: -q prints only the result,
-v also the detail underneath (the wire, kgo's log). run, check, replay, diff,
scale, shrink and version take --json to print their result as one JSON document
(docs/json-schema.md).
`

func main() {
	ctx, stop := notifyInterrupt(os.Stderr) // interrupt.go: Ctrl-C and SIGTERM
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses, the same for every command.
const (
	exitOK        = 0 // success: every checker holds, the replay agrees
	exitViolation = 1 // a checker found a violation; replay: the states differ
	exitBadInput  = 2 // bad flags or arguments, an unreadable run directory: nothing was started
	exitFailed    = 3 // the command could not be carried out (no cluster, no engine, a failed build, a run that never got past its setup)
)

// runMain runs the command line args and returns the exit status; every
// message goes to stderr, results to stdout. Tests call it in-process.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	var ex exitError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ex):
		if ex.msg != "" {
			fmt.Fprintln(stderr, "groupquake:", ex.msg)
		}
		return ex.code
	default:
		fmt.Fprintln(stderr, "groupquake:", err)
		return exitFailed
	}
}

// exitError carries a specific exit status.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// badInput is an exitBadInput error: what was wrong and what to do.
func badInput(format string, args ...any) error {
	return exitError{exitBadInput, fmt.Sprintf(format, args...)}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError{code: exitBadInput}
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "check":
		return cmdCheck(ctx, args[1:], stdout, stderr)
	case "upgrade":
		return cmdUpgrade(ctx, args[1:], stdout, stderr)
	case "replay":
		return cmdReplay(ctx, args[1:], stdout, stderr)
	case "diff":
		return cmdDiff(ctx, args[1:], stdout, stderr)
	case "image":
		return cmdImage(ctx, args[1:], stdout, stderr)
	case "engine":
		return cmdEngine(ctx, args[1:], stdout, stderr)
	case "sweep":
		return cmdSweep(ctx, args[1:], stdout, stderr)
	case "member-check":
		return cmdMemberCheck(ctx, args[1:], stdout, stderr)
	case "stats":
		return cmdStats(ctx, args[1:], stdout, stderr)
	case "findings":
		return cmdFindings(ctx, args[1:], stdout, stderr)
	case "shrink":
		return cmdShrink(ctx, args[1:], stdout, stderr)
	case "report":
		return cmdReport(ctx, args[1:], stdout, stderr)
	case "scale":
		return cmdScale(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return cmdVersion(ctx, args[1:], stdout, stderr)
	case "help":
		if len(args) > 1 {
			// groupquake help COMMAND is groupquake COMMAND -h.
			return dispatch(ctx, append(args[1:len(args):len(args)], "-h"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return badInput("unknown command %q: run 'groupquake -h' for the commands", args[0])
}
