package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Bad input to `groupquake diff` is refused with exit 2 and a message that
// says what was wrong, before any engine, image or cluster is asked for.
func TestDiffBadInput(t *testing.T) {
	for _, tc := range append(releasePairBadInput(), []badInputCase{
		{[]string{"--from", "4.1.2", "--to", "5.0.0"}, `--to: unknown Kafka version "5.0.0"`},
		{[]string{"--from", "4.1.2", "--frm", "4.0.0"}, "flag provided but not defined: -frm"},
		{[]string{"--from", "4.1.2", "extra"}, `diff takes no arguments, got "extra"`},
		{[]string{"--from", "4.1.2", "--image-source", "nowhere"}, `--image-source "nowhere"`},
		{[]string{"--from", "4.1.2", "--scenarios", "consumer-group,chaos"}, `--scenarios: unknown scenario "chaos"`},
	}...) {
		if stdout := wantBadInput(t, append([]string{"diff"}, tc.args...), tc.says); stdout != "" {
			t.Errorf("diff %q printed %q", tc.args, stdout)
		}
	}
}

// `diff --embedded` of a release with itself prints no difference and
// exits 0; of 4.1.2 and 4.4.0 it explains every difference by named
// profile behaviours (exit 0), as text and as JSON. The vectors only
// (--scenarios none): harness/differential's TestScenariosEmbedded runs a
// scenario on both releases.
func TestDiffEmbedded(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"diff", "--embedded", "--scenarios", "none", "--from", "4.4.0", "--to", "4.4.0"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("4.4.0 with itself: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "Kafka 4.4.0 → 4.4.0: ") || !strings.Contains(stdout.String(), " 0 differences (0 explained, 0 unexplained)") {
		t.Errorf("4.4.0 with itself:\n%s", stdout.String())
	}

	stdout.Reset()
	if code := runMain(context.Background(), []string{"diff", "--embedded", "--scenarios", "none", "--from", "4.1.2", "--to", "4.4.0"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("4.1.2 → 4.4.0: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"× InitialGroupEpoch (0 → 1)", "RejoinWithEpochZero (false → true)", "RevocationAckKeepsEpoch (false → true)", ", 0 unexplained)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("4.1.2 → 4.4.0 lacks %q:\n%s", want, stdout.String())
		}
	}

	stdout.Reset()
	if code := runMain(context.Background(), []string{"diff", "--from", "4.1.2", "--embedded", "--json", "--scenarios=none"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("--json: exit %d\n%s", code, stderr.String())
	}
	var got struct {
		Mode        string `json:"mode"`
		From, To    string
		Explained   int `json:"explained"`
		Unexplained int `json:"unexplained"`
		Differences []struct {
			Key        string   `json:"key"`
			Explained  bool     `json:"explained"`
			Behaviours []string `json:"behaviours"`
		} `json:"differences"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("--json printed no JSON document: %v\n%s", err, stdout.String())
	}
	if got.Mode != "embedded" || got.From != "4.1.2" || got.To != "4.4.0" || got.Unexplained != 0 || got.Explained != len(got.Differences) || got.Explained == 0 {
		t.Errorf("--json: mode %q, %s → %s, %d explained, %d unexplained, %d differences", got.Mode, got.From, got.To, got.Explained, got.Unexplained, len(got.Differences))
	}
	for _, d := range got.Differences {
		if !d.Explained || len(d.Behaviours) == 0 {
			t.Errorf("difference %s: explained %v by %v", d.Key, d.Explained, d.Behaviours)
		}
	}
}

// badInputCase is a command line (after the command's name) that is
// refused with exit 2 and a message that says says.
type badInputCase struct {
	args []string
	says string
}

// releasePairBadInput are the refusals of --from and --to that diff and
// upgrade share (version.CheckUpgrade and the required --from).
func releasePairBadInput() []badInputCase {
	return []badInputCase{
		{[]string{"--to", "4.4.0"}, "--from is required"},
		{[]string{"--from", "4.9.1"}, `--from: unknown Kafka version "4.9.1": served versions are 4.0.0–`},
		{[]string{"--from", "4.4.0", "--to", "4.1.2"}, "--to 4.1.2 is older than --from 4.4.0"},
		{[]string{"--from", "3.9.0", "--to", "4.4.0"}, "Kafka 3.9.0 is not served: groupquake runs KRaft clusters of 4.0.0 and later"},
	}
}

// wantBadInput runs the command line args and checks that it is refused
// with exit 2 and a message that says says; it returns what the command
// printed on stdout.
func wantBadInput(t *testing.T, args []string, says string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := dispatch(context.Background(), args, &stdout, &stderr)
	var ex exitError
	if !errors.As(err, &ex) || ex.code != exitBadInput {
		t.Errorf("%q: %v, want exit 2", args, err)
	} else if !strings.Contains(ex.msg, says) {
		t.Errorf("%q: %q, want it to say %q", args, ex.msg, says)
	}
	return stdout.String()
}
