package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/interrupt"
)

// Ctrl-C (SIGINT) and SIGTERM, the same at any moment of any command
// (docs/interrupts.md):
//
//   - the first cancels the command's context, with the signal as its
//     cause: a run stops where it is, is judged up to there, writes its
//     verdicts and report, and removes its cluster, child processes and
//     temporary directories; the command exits 3 (1 when the verdicts up to
//     there found a violation);
//   - the second stops at once: child process groups are killed, this
//     process's containers, volumes and networks force-removed (bounded by
//     forceBound), temporary directories removed, and what could not be is
//     named with the command that removes it; exit 3;
//   - a third, while the second is at work, exits there and then.

// onPhase is passed to every run as run.Config.OnPhase; nil but in the
// tests, which hold a phase with it to interrupt the run there.
var onPhase func(ctx context.Context, phase string)

// interrupted is the error of a command whose context a signal (or its
// bound) ended, saying where (what): nil while ctx goes on.
func interrupted(ctx context.Context, what string) error {
	if ctx.Err() == nil {
		return nil
	}
	why := "stopped by its bound"
	if sig, ok := interrupt.Of(ctx); ok {
		why = "interrupted by " + interrupt.Name(sig)
	}
	return exitError{exitFailed, why + " " + what}
}

// signalled is interrupted for a signal alone: nil unless a signal ended
// ctx (a command's own timeout is its to report).
func signalled(ctx context.Context, what string) error {
	if _, ok := interrupt.Of(ctx); !ok {
		return nil
	}
	return interrupted(ctx, what)
}

// forceBound bounds the removal a second Ctrl-C does before exiting.
const forceBound = 15 * time.Second

// writingDirs are the run directories being written now, named by a second
// Ctrl-C (they hold what was recorded; `groupquake check` judges them).
var writingDirs struct {
	sync.Mutex
	m map[string]bool
}

// writing marks dir as being written until the returned func is called.
func writing(dir string) func() {
	writingDirs.Lock()
	if writingDirs.m == nil {
		writingDirs.m = map[string]bool{}
	}
	writingDirs.m[dir] = true
	writingDirs.Unlock()
	return func() {
		writingDirs.Lock()
		delete(writingDirs.m, dir)
		writingDirs.Unlock()
	}
}

// rerunLine is the command that reruns what the command is doing (a run,
// the campaign, an upgrade), said again by a second Ctrl-C.
var rerunLine struct {
	sync.Mutex
	cmd string
}

// setRerun records cmd as the command that reruns this one.
func setRerun(cmd string) {
	rerunLine.Lock()
	rerunLine.cmd = cmd
	rerunLine.Unlock()
}

// notifyInterrupt is main's context: cancelled by the first SIGINT or
// SIGTERM, the second stops at once (forceStop), a third exits.
func notifyInterrupt(stderr io.Writer) (context.Context, func()) {
	return interrupt.Notify(context.Background(),
		func(sig os.Signal) {
			fmt.Fprintf(stderr, "groupquake: %s: stopping; what ran is judged and reported, the cluster, child processes and temporary files removed (%s again stops at once)\n", interrupt.Name(sig), again(sig))
		},
		func(sig os.Signal) {
			os.Exit(forceStop(stderr, sig))
		},
		func(os.Signal) {
			fmt.Fprintln(stderr, "groupquake: stopped; remove what is left with: groupquake sweep")
			os.Exit(exitFailed)
		})
}

func again(sig os.Signal) string {
	if sig == os.Interrupt {
		return "Ctrl-C"
	}
	return interrupt.Name(sig)
}

// forceStop kills every child process group, removes this process's
// containers, volumes, networks and temporary directories within
// forceBound, says what is left, and returns the exit status.
func forceStop(stderr io.Writer, sig os.Signal) int {
	fmt.Fprintf(stderr, "groupquake: %s again: stopping at once\n", interrupt.Name(sig))
	var left []string
	for _, c := range interrupt.KillAll() {
		fmt.Fprintf(stderr, "groupquake: killed %s\n", c)
	}
	if cluster.Started() {
		ctx, cancel := context.WithTimeout(context.Background(), forceBound)
		n, cleft, err := cluster.RemoveOwn(ctx)
		cancel()
		if n > 0 {
			fmt.Fprintf(stderr, "groupquake: removed %d containers, volumes and networks\n", n)
		}
		left = append(left, cleft...)
		if err != nil {
			left = append(left, fmt.Sprintf("this process's containers, volumes and networks (%v)", err))
		}
	}
	left = append(left, interrupt.RemoveTemps()...)
	writingDirs.Lock()
	for d := range writingDirs.m {
		if _, err := os.Stat(filepath.Join(d, run.VerdictsFile)); err == nil {
			// Stopped after its verdicts were written, its report perhaps not.
			fmt.Fprintf(stderr, "groupquake: run directory %s holds what was recorded and its verdicts: see them with: groupquake check %s (--write also writes its report)\n", d, d)
			continue
		}
		fmt.Fprintf(stderr, "groupquake: run directory %s holds what was recorded, not judged: judge it with: groupquake check %s\n", d, d)
	}
	writingDirs.Unlock()
	rerunLine.Lock()
	if rerunLine.cmd != "" {
		fmt.Fprintf(stderr, "groupquake: rerun with: %s\n", rerunLine.cmd)
	}
	rerunLine.Unlock()
	if len(left) > 0 {
		fmt.Fprintf(stderr, "groupquake: left behind:\n  %s\ngroupquake: remove the containers, volumes and networks with: groupquake sweep\n", strings.Join(left, "\n  "))
	} else {
		fmt.Fprintln(stderr, "groupquake: stopped; nothing left behind")
	}
	return exitFailed
}
