package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/groupquake/groupquake/harness/run"
)

// otherClaim is what another campaign (or upgrade) left when it claimed
// its directory: its rerun.sh.
var otherClaim = []byte("#!/bin/sh\nexec groupquake run --seed 77 --embedded\n")

func claimAsOther(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, run.RerunFile), otherClaim, 0o755); err != nil {
		t.Fatal(err)
	}
}

// sameAsOther fails unless dir holds only the other command's claim.
func sameAsOther(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, run.RerunFile))
	if len(entries) != 1 || err != nil || !bytes.Equal(b, otherClaim) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v, rerun.sh %q (%v): want only the other command's rerun.sh", dir, names, b, err)
	}
}

// TestClaimDir: a campaign's or an upgrade's directory is claimed by
// creating its rerun.sh, which must not exist. Without --out, a directory
// the same command started in the same second took goes to dir-2; with
// --out it is refused with exit 2 and nothing written; of many claiming
// the same directory at once, each gets its own.
func TestClaimDir(t *testing.T) {
	base := filepath.Join(t.TempDir(), "runs", "20261206T020409Z-77")
	claimAsOther(t, base)
	var log bytes.Buffer
	con := newConsole(&log, levelNormal)
	got, _, err := claimDir(base, false, "the campaign", "groupquake run --seed 77", con)
	if err != nil || got != base+"-2" {
		t.Fatalf("claimDir of a taken default directory = %s, %v; want %s-2", got, err, base)
	}
	if b, err := os.ReadFile(filepath.Join(got, run.RerunFile)); err != nil || !strings.Contains(string(b), "exec groupquake run --seed 77 \"$@\"") {
		t.Errorf("%s/rerun.sh = %q (%v)", got, b, err)
	}
	if !strings.Contains(log.String(), "directory "+base+" was taken by another command started at the same moment: this one writes to "+base+"-2") {
		t.Errorf("claimDir does not say where it went:\n%s", log.String())
	}
	sameAsOther(t, base)

	_, _, err = claimDir(base, true, "the campaign", "groupquake run --seed 77 --out "+base, con)
	if exitCode(err) != exitBadInput || !strings.Contains(err.Error(), "--out: another run took the run directory: "+base+" already holds a rerun.sh") {
		t.Errorf("claimDir of a taken --out: %v (exit %d), want exit %d", err, exitCode(err), exitBadInput)
	}
	sameAsOther(t, base)

	// Released (its cluster could not be started): the directory it made
	// is gone, an --out that existed before stays.
	fresh := filepath.Join(filepath.Dir(base), "fresh")
	_, release, err := claimDir(fresh, true, "the upgrade", "groupquake upgrade", con)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Lstat(fresh); !os.IsNotExist(err) {
		t.Errorf("released, %s is still there (%v)", fresh, err)
	}
	given := t.TempDir()
	if _, release, err = claimDir(given, true, "the upgrade", "groupquake upgrade", con); err != nil {
		t.Fatal(err)
	}
	release()
	if entries, err := os.ReadDir(given); err != nil || len(entries) != 0 {
		t.Errorf("released, the --out %s that existed before holds %v (%v), want it empty and there", given, entries, err)
	}

	// Eight at once, with the same default directory.
	same := filepath.Join(filepath.Dir(base), "20261206T020410Z-78")
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, _, err := claimDir(same, false, "the campaign", fmt.Sprintf("groupquake run --seed %d", i), newConsole(&bytes.Buffer{}, levelQuiet))
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i, d := range dirs {
		if j, ok := seen[d]; ok {
			t.Errorf("claims %d and %d both got %s", j, i, d)
		}
		seen[d] = i
		b, _ := os.ReadFile(filepath.Join(d, run.RerunFile))
		if !strings.Contains(string(b), fmt.Sprintf("--seed %d \"$@\"", i)) {
			t.Errorf("%s/rerun.sh is not claim %d's: %q", d, i, b)
		}
	}
}

// TestCampaignAndUpgradeOutTaken: a campaign or an upgrade given an --out
// another one claimed is refused with exit 2 and writes nothing there (the
// campaign's runs were refused one by one and its trend.html was written
// into the other's directory).
func TestCampaignAndUpgradeOutTaken(t *testing.T) {
	tmp := t.TempDir()
	for _, args := range [][]string{
		{"run", "--embedded", "--duration", "1s", "--seed", "77"},
		{"upgrade", "--from", "4.1.2", "--seed", "77"},
	} {
		dir := filepath.Join(tmp, args[0])
		claimAsOther(t, dir)
		code, _, stderr := call(t, append(args, "--out", dir)...)
		if code != exitBadInput || !strings.Contains(stderr, "--out: another run took the run directory: "+dir+" already holds a rerun.sh") {
			t.Errorf("%s --out %s (taken): exit %d, want %d:\n%s", args[0], dir, code, exitBadInput, stderr)
		}
		sameAsOther(t, dir)
	}
}

// TestCampaignSameSecond scripts the campaign's rerun command started
// twice at the same moment: both chose ./runs/<time>-<seed>/, the other
// claimed it first. This one goes to <time>-<seed>-2 and leaves the other's
// directory as it was (its runs were refused there, and it wrote its
// trend.html and scorecard.html into the other's directory); the upgrade
// does the same with ./runs/<time>-upgrade-<seed>/.
func TestCampaignSameSecond(t *testing.T) {
	t.Chdir(t.TempDir())
	var taken string
	beforeDirClaim = func(dir string) {
		if taken == "" {
			taken = dir
			claimAsOther(t, dir)
		}
	}
	defer func() { beforeDirClaim = nil }()
	for _, args := range [][]string{
		{"run", "--embedded", "--duration", "1s", "--seed", "77"},
		{"upgrade", "--from", "4.1.2", "--seed", "77"},
	} {
		taken = ""
		code, _, stderr := call(t, args...) // interrupted before anything starts
		if code == exitBadInput || taken == "" {
			t.Fatalf("%v: exit %d, directory %q:\n%s", args, code, taken, stderr)
		}
		if !strings.Contains(stderr, "directory "+taken+" was taken by another command started at the same moment: this one writes to "+taken+"-2") {
			t.Errorf("%v does not say it went to %s-2:\n%s", args, taken, stderr)
		}
		sameAsOther(t, taken)
	}
}
