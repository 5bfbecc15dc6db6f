// Command groupquake runs chaos and conformance campaigns against Kafka
// consumer groups, builds the Kafka images it needs, and re-checks saved runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `groupquake: chaos and conformance for Kafka consumer groups

Usage:
  groupquake run [flags]            plan a run from a seed, carry it out on a cluster (or --bootstrap), judge it
  groupquake upgrade --from V [--to W]
                                    validate a rolling Kafka upgrade: a baseline run on V, then the same
                                    workload while every node is replaced by W and the features finalized
  groupquake check RUN_DIR          re-run every checker over a saved run (exit 0 hold, 1 violation, 2 unreadable)
  groupquake replay --bootstrap ADDR --group G [--kafka VERSION]
                                    replay a live group's __consumer_offsets through the reference
                                    coordinator and compare with what the broker describes (exit 0 agree, 1 differ, 2 bad input)
  groupquake image build [flags]    build (or find) the Kafka image for a version ahead of time
  groupquake image list             list served Kafka versions and which images are cached
  groupquake engine up              install and start a Docker engine if none answers (root)
  groupquake sweep                  remove containers and networks left by crashed runs
  groupquake stats DIR...           how hard the nemesis pushed: faults, churn, time under a fault or mid-rebalance

Run 'groupquake COMMAND -h' for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var ex exitError
	switch {
	case err == nil:
	case errors.As(err, &ex):
		if ex.msg != "" {
			fmt.Fprintln(os.Stderr, "groupquake:", ex.msg)
		}
		os.Exit(ex.code)
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "groupquake:", err)
		os.Exit(1)
	}
}

// exitError carries a specific exit status.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError{code: 2}
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
	case "image":
		if len(args) < 2 {
			return exitError{2, "image needs a subcommand: build or list"}
		}
		switch args[1] {
		case "build":
			return cmdImageBuild(ctx, args[2:], stdout, stderr)
		case "list":
			return cmdImageList(ctx, args[2:], stdout, stderr)
		}
		return exitError{2, fmt.Sprintf("unknown image subcommand %q: use build or list", args[1])}
	case "engine":
		if len(args) < 2 || args[1] != "up" {
			return exitError{2, "engine needs the subcommand up"}
		}
		return cmdEngineUp(ctx, args[2:], stdout, stderr)
	case "sweep":
		return cmdSweep(ctx, args[1:], stdout, stderr)
	case "stats":
		return cmdStats(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return exitError{2, fmt.Sprintf("unknown command %q", args[0])}
}

func logTo(w io.Writer) func(string, ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, "groupquake: "+format+"\n", args...) }
}
