package main

import (
	"context"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/machine"
)

// planFileFlags are the flags `groupquake run --plan FILE` takes beside
// it: where and how the plan is carried out, never what it is.
var planFileFlags = []string{"plan", "out", "bound", "json", "keep", "image-source", "base-port", "toxiproxy", "node-control", "client-log", "q", "v"}

// planFileFlagList names the flags --plan takes beside it as they are
// typed: -q and -v with one dash, the others with two.
func planFileFlagList() string {
	var l []string
	for _, n := range planFileFlags[1:] {
		if len(n) == 1 {
			l = append(l, "-"+n)
		} else {
			l = append(l, "--"+n)
		}
	}
	return strings.Join(l, ", ")
}

// runPlanFile carries out the plan saved in --plan (a plan.json): the
// cluster is the plan's (embedded, containers of its version and size, or
// its --bootstrap), with no fallback to the embedded cluster.
func (f *runFlags) runPlanFile(ctx context.Context, set map[string]bool, reg kinds.Registry, stdout io.Writer, con *console) error {
	for _, n := range slices.Sorted(maps.Keys(set)) {
		if !slices.Contains(planFileFlags, n) {
			return badInput("--%s shapes a plan, and with --plan the plan is the file's: leave --%s out (the flags --plan takes: %s)", n, n, planFileFlagList())
		}
	}
	plan, err := run.LoadPlan(f.plan)
	if err != nil {
		return badInput("--plan: %v: give the plan.json of a run directory", err)
	}
	if err := plan.CheckSize(machine.This()); err != nil {
		return badInput("--plan %s: %v", f.plan, err)
	}
	if f.bound <= plan.Workload {
		return badInput("--bound %s is not longer than the workload of --plan %s (%s): the run would be stopped in its workload; raise --bound (it also covers setup, heal and final observations)", f.bound, f.plan, plan.Workload)
	}
	var named []string
	for _, m := range plan.Members {
		if !slices.Contains(named, m.Kind) {
			named = append(named, m.Kind)
		}
	}
	if err := checkKinds("--plan "+f.plan+": its members' kinds", strings.Join(named, ","), named, plan.Options.ProcessKinds); err != nil {
		return err
	}
	dir := f.out
	if dir == "" {
		dir = newRunDir("plan-" + strconv.FormatUint(plan.Seed, 10))
	}
	if err := checkOut(dir); err != nil {
		return badInput("--out: %v", err)
	}
	// Preparing the kinds may build (Maven): after every refusal.
	env := kinds.Env{Toolchain: &java.Toolchain{Logf: con.Logf}, KafkaClients: plan.KafkaClients()}
	if reg, err = reg.WithNamed(ctx, named, env); err != nil {
		return prepareFailed("--plan "+f.plan, err)
	}
	reg = reg.WithUserKinds(plan.Options.ProcessKinds)
	if fallback, err := f.needEngine(ctx, set, plan.Options, con.Logf); err != nil {
		return err
	} else if fallback {
		return exitError{exitFailed, "no Docker engine, and the plan " + f.plan + " runs on a container cluster: start an engine (groupquake engine up, as root)"}
	}
	// The rerun command is the new run's plan file: the seed's flags would
	// draw the seed's faults, which the file's may not be. Where a shrink
	// trial's plan came from (ShrunkFrom, Kept) is left out: it marks
	// shrink's trials, which the commands that read a folder of runs
	// leave out (runDirsBelow), and a rerun of one is a run like any.
	saved := run.SavedPlan{}
	if saved.File, err = filepath.Abs(filepath.Join(dir, run.PlanFile)); err != nil {
		return badInput("--out %s: %v", dir, err)
	}
	plan.Saved = &saved
	return f.carryOut(ctx, plan, reg, dir, stdout, con)
}
