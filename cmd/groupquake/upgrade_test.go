package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Bad input to `groupquake upgrade` is refused with exit 2 and a message
// that says what was wrong, before anything is started or written: these
// cases need no Docker engine, because none is asked for.
func TestUpgradeBadInput(t *testing.T) {
	for _, tc := range append(releasePairBadInput(), []badInputCase{
		{[]string{"--from", "4.1.2", "--to", "4.4.99"}, `--to: unknown Kafka version "4.4.99"`},
		{[]string{"--from", "4.1.2", "--to", "4.1.2"}, "both 4.1.2"},
		{[]string{"--from", "4.1.2", "--duration", "10s"}, "too short for the 4 steps of this rolling upgrade of 3 nodes"},
		{[]string{"--from", "4.1.2", "--kinds", "classic,bogus"}, `unknown member kind "bogus"`},
		{[]string{"--from", "4.1.2", "--scenario", "meltdown"}, `unknown scenario "meltdown"`},
		{[]string{"--from", "4.1.2", "--seed", "-1"}, `--seed "-1"`},
		{[]string{"--from", "4.1.2", "--to", "4.4.0", "--downgrade", "after-finalize"}, "Kafka refuses to downgrade from 4.4.0 to 4.1.2 once metadata.version is finalized at 4.4-IV2 (33)"},
		{[]string{"--from", "4.1.2", "--downgrade", "sideways"}, `unknown downgrade "sideways"`},
	}...) {
		out := filepath.Join(t.TempDir(), "runs")
		wantBadInput(t, append([]string{"upgrade", "--out", out}, tc.args...), tc.says)
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("upgrade %q left %s behind (%v)", tc.args, out, err)
		}
	}
}
