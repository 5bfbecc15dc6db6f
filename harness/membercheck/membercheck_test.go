package membercheck_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/harness/membercheck"
)

// kgomember builds the franz-go implementation of the member protocol,
// whose -bug switches are the broken fixtures.
func kgomember(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kgomember")
	if out, err := exec.Command("go", "build", "-o", bin, "../../clients/process/kgomember").CombinedOutput(); err != nil {
		t.Fatalf("building kgomember: %v\n%s", err, out)
	}
	return bin
}

// TestBrokenImplementationsFail runs member-check (the scripted scenario,
// classic protocol, no contract run) on the conforming kgomember, which
// must keep every rule, and on each broken fixture, which must fail the
// rule its bug breaks with a message that names the message at fault.
func TestBrokenImplementationsFail(t *testing.T) {
	bin := kgomember(t)
	for _, tc := range []struct {
		bug  string
		args []string
		rule process.Rule
		says string
	}{
		{bug: ""},
		{bug: "records-before-assigned", rule: process.RuleAssignedFirst, says: "hands out records of partitions the client does not own"},
		{bug: "no-ack-wait", rule: process.RuleAckWait, says: "before the harness acknowledged its ownership event"},
		{bug: "missing-answer", rule: process.RuleAnswers, says: "(harness commit id"},
		{bug: "silent-unknown", rule: process.RuleUnknown, says: "gq-unknown-probe"},
		{bug: "wrong-version", rule: process.RuleVersion, says: "ready names protocol version 2, which hello did not offer"},
		{bug: "late-revoke", rule: process.RuleRevokeFirst, says: "while the implementation (m1) had not reported revoking or losing it"},
		{bug: "unanswered-call", args: []string{"-calls", "client"}, rule: process.RuleCalls, says: "(commit)"},
	} {
		name := tc.bug
		if name == "" {
			name = "conforming"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.bug != "" {
				args = append(args, "-bug", tc.bug)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := membercheck.Check(ctx, membercheck.Config{
				Command: process.Command{Path: bin, Args: args}, Protocols: []clients.Protocol{clients.Classic}, Logf: t.Logf,
			})
			if err != nil {
				t.Fatal(err)
			}
			var broken []string
			found := false
			for _, f := range rep.Findings {
				if f.OK {
					continue
				}
				broken = append(broken, f.String())
				if f.Rule == tc.rule && strings.Contains(f.String(), tc.says) {
					found = true
				}
			}
			switch {
			case tc.bug == "" && len(broken) > 0:
				t.Fatalf("the conforming implementation broke rules:\n%s", strings.Join(broken, "\n"))
			case tc.bug != "" && !found:
				t.Fatalf("bug %s: want %s broken with a message saying %q; broken:\n%s", tc.bug, tc.rule, tc.says, strings.Join(broken, "\n"))
			}
			for _, b := range broken {
				t.Log(b)
			}
		})
	}
}
