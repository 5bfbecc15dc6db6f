// Package bite proves that the checkers bite: for every deliberately broken
// member kind (harness/kinds.BrokenKinds) and every Kafka version under test,
// a fixed plan that makes the bug show runs against a real cluster, and the
// checker that names the bug must fail; the same plan with the unbroken
// kind must pass that checker, so the failure is the bug's and not the
// plan's.
package bite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

var embedded = flag.Bool("bite.embedded", false, "run against the embedded cluster (the reference coordinator in this process) instead of containers; also under -short")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(clustertest.Main(m))
}

// seed fixes every plan: topology, rate and names come from it, the
// schedule below from each kind's bug.
const seed = 4242

// schedule is what makes a bug show, deterministically: who joins when,
// which member is the broken one, how often the driver commits, which
// fault cuts the broken member off.
type schedule struct {
	duration    time.Duration
	joins       []time.Duration // per member, from the start of the warm-up
	broken      int             // the index of the broken member
	commitEvery time.Duration
	cut         *faults.Fault // on the broken member (Client is filled in)
}

// scheduleFor returns the schedule of a broken kind.
//
//   - A KIP-848 revocation bug needs the broken member to give partitions
//     up while records flow: it starts alone, so the broker assigns it
//     every partition at once, and the second member joins 4s later, during
//     the workload (or just before it: the partitions never come back), so
//     the broker takes half of its partitions away for good.
//   - The classic member cannot be counted on to own anything before a
//     second member joins: a leader that asks for the topic's metadata
//     right after the run created it may see no partitions and assign
//     nothing. So two members form the group (the broken one second), and
//     a third joins during the workload: the range assignor, over member
//     ids sorted by name, moves the broken member from partitions 2 and 3
//     to partition 2 only.
//   - Skipping the commit before revoking needs records consumed since the
//     member's last own commit (its auto-commit interval is 5s) and the
//     driver not committing for it: the second member joins after 7s and
//     the driver commits only at the end.
//   - A stale commit needs a generation after the broken member's first:
//     the classic schedule above, with the workload going on for 8s after
//     the third member joins, so that the broken member commits with its
//     first generation many times after the coordinator moved on.
//   - Giving up on a call without an answer needs a call without an
//     answer: the broken member's links are cut for 2s, well within its
//     session, so the unbroken member rejoins nothing and carries on, and
//     the broken one stops for good.
//   - Ignoring a fence needs a fence: the broken member's links are cut for
//     9s, longer than the 6s session, while records flow, so the group
//     gives its partitions to the other member; after the heal it learns
//     it was fenced and carries on as their owner.
func scheduleFor(k kinds.BrokenKind, protocol string) schedule {
	s := schedule{duration: 12 * time.Second, joins: []time.Duration{0, 4 * time.Second}, commitEvery: 500 * time.Millisecond}
	switch {
	case k.Fence:
		s.duration, s.joins = 15*time.Second, []time.Duration{0, 500 * time.Millisecond}
		s.cut = &faults.Fault{Kind: faults.LinkCut, Node: faults.AllNodes, At: 2 * time.Second, For: 9 * time.Second}
	case k.GiveUp:
		s.duration, s.joins = 12*time.Second, []time.Duration{0, 500 * time.Millisecond}
		s.cut = &faults.Fault{Kind: faults.LinkCut, Node: faults.AllNodes, At: 2 * time.Second, For: 2 * time.Second}
	case k.Catches == "CommittedBeforeRevoked":
		s.joins[1], s.commitEvery = 7*time.Second, time.Hour
	case protocol == "classic":
		s.joins, s.broken = []time.Duration{0, 1500 * time.Millisecond, 8 * time.Second}, 1
		if k.Catches == "DurableCommits" {
			// The stale commits are the ones after the third member's
			// rebalance: give them 8s of workload, not 4.
			s.duration = 16 * time.Second
		}
	}
	return s
}

// plan builds the plan of kind (broken or not) for broken kind k: members
// prefix+"m1", prefix+"m2", … of the unbroken kind except the schedule's
// broken one, its own topic and group, so that the runs sharing one
// cluster do not meet (links are per client name: a cut of one run's
// member must not reach another's).
func plan(t *testing.T, k kinds.BrokenKind, kind, prefix, version string) run.Plan {
	t.Helper()
	reg := kinds.Default().WithBroken([]string{kind})
	s := scheduleFor(k, string(reg[k.Unbroken].Protocol))
	kinds := make([]string, len(s.joins))
	for i := range kinds {
		kinds[i] = k.Unbroken
	}
	kinds[s.broken] = kind
	o := run.Options{
		Kafka: version, Nodes: 1, Embedded: *embedded,
		Kinds: kinds, Members: len(kinds), Partitions: 4, Rate: 40, Duration: s.duration,
		Topic: fmt.Sprintf("bite-%s-%s-records", prefix, k.Name), Group: fmt.Sprintf("bite-%s-%s", prefix, k.Name),
		// Giving up is a client that stops for good where Java retries. A
		// supervisor would restart its process, and the group would get it
		// back after a backoff: that bug bites in the world without one,
		// where the member stays out (EventuallyConverges).
		NoSupervisor: k.GiveUp,
	}
	p, err := run.NewPlan(seed, o, reg.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Members {
		p.Members[i].Name = fmt.Sprintf("%sm%d", prefix, i+1)
		p.Members[i].CommitEvery = s.commitEvery
		p.Members[i].JoinAfter = s.joins[i]
	}
	p.Faults = nil
	if s.cut != nil {
		f := *s.cut
		f.Client = p.Members[s.broken].Name
		p.Faults = []faults.Fault{f}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// runDir is under $GROUPQUAKE_RUNS_DIR when set (kept for reading
// failures), else temporary.
func runDir(t *testing.T, name string) string {
	if root := os.Getenv("GROUPQUAKE_RUNS_DIR"); root != "" {
		d := filepath.Join(root, unsafeName.ReplaceAllString(t.Name(), "_"))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(d, time.Now().UTC().Format("20060102T150405")+"-"+name)
	}
	return filepath.Join(t.TempDir(), name)
}

// verdict runs p on h and returns the verdict of checker name, and every
// checker's.
func verdict(t *testing.T, h cluster.Handle, p run.Plan, reg kinds.Registry, name, label string) (check.Verdict, []check.Verdict, string, error) {
	d := runDir(t, label)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := run.Run(ctx, run.Config{Plan: p, Dir: d, Registry: reg, Cluster: h, Logf: func(format string, args ...any) {
		t.Logf(label+": "+format, args...)
	}})
	if err != nil {
		return check.Verdict{}, nil, d, fmt.Errorf("%s run could not be carried out: %v (notes %v; run directory %s)", label, err, res.Notes, d)
	}
	for _, v := range res.Report.Verdicts {
		if v.Name == name {
			return v, res.Report.Verdicts, d, nil
		}
	}
	return check.Verdict{}, nil, d, fmt.Errorf("%s run has no verdict %s (run directory %s)", label, name, d)
}

// brokenAndUnbroken runs the broken plan bp and the unbroken plan gp at
// once on h and returns the verdicts of the checker catches on each, every
// verdict of the unbroken run, and the two run directories.
func brokenAndUnbroken(t *testing.T, h cluster.Handle, reg kinds.Registry, bp, gp run.Plan, catches string) (bad, good check.Verdict, all []check.Verdict, badDir, goodDir string) {
	t.Helper()
	var (
		wg              sync.WaitGroup
		badErr, goodErr error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		bad, _, badDir, badErr = verdict(t, h, bp, reg, catches, "broken")
	}()
	go func() {
		defer wg.Done()
		good, all, goodDir, goodErr = verdict(t, h, gp, reg, catches, "unbroken")
	}()
	wg.Wait()
	if badErr != nil || goodErr != nil {
		t.Fatalf("%v %v", badErr, goodErr)
	}
	return bad, good, all, badDir, goodDir
}

// requireCaught fails t unless the verdict bad of checker catches, on the
// broken kind name's run in badDir, was judged and violated. bug says what
// is wrong with the kind, heldFor names it when the checker held.
func requireCaught(t *testing.T, bad check.Verdict, badDir, catches, name, bug, heldFor string) {
	t.Helper()
	switch {
	case bad.Skipped != "":
		t.Errorf("%s (%s) was not judged: %s (run directory %s)", catches, bug, bad.Skipped, badDir)
	case bad.Holds:
		t.Errorf("%s holds for %s: the checker did not catch the bug (notes %v; run directory %s)", catches, heldFor, bad.Notes, badDir)
	default:
		t.Logf("%s caught %s with %d violations, the first: %s", catches, name, len(bad.Violations), bad.Violations[0].Message)
	}
}

// startCluster returns the cluster of version the package's tests share
// (clustertest.Shared: TestBrokenShareMembersAreCaught runs on the default
// version's after TestBrokenMembersAreCaught, instead of starting another);
// every run names its group and topic after its kind's prefix.
func startCluster(t *testing.T, version string) cluster.Handle {
	t.Helper()
	if !*embedded {
		return clustertest.Shared(t, cluster.Config{Version: version, Nodes: 1})
	}
	return clustertest.Embedded(t, cluster.EmbeddedConfig{Version: version})
}

// TestBrokenMembersAreCaught runs every broken kind and its unbroken kind
// on one cluster per version.
func TestBrokenMembersAreCaught(t *testing.T) {
	if testing.Short() && !*embedded {
		t.Skip("-short: real-cluster test not run (-bite.embedded runs it against the embedded cluster)")
	}
	for _, version := range clustertest.Versions() {
		t.Run("kafka-"+version, func(t *testing.T) {
			h := startCluster(t, version)
			for i, k := range kinds.BrokenKinds() {
				t.Run(k.Name, func(t *testing.T) {
					t.Parallel()
					reg := kinds.Default().WithBroken([]string{k.Name})
					bp, gp := plan(t, k, k.Name, fmt.Sprint("b", i), version), plan(t, k, k.Unbroken, fmt.Sprint("u", i), version)
					bad, good, all, badDir, goodDir := brokenAndUnbroken(t, h, reg, bp, gp, k.Catches)
					requireCaught(t, bad, badDir, k.Catches, k.Name, k.Bug, k.Name+", which "+k.Bug)
					if !good.Holds || good.Skipped != "" {
						t.Errorf("%s must hold for the unbroken kind %s on the same plan, so that the failure is the bug's: %+v %s (run directory %s)", k.Catches, k.Unbroken, good.Violations, good.Skipped, goodDir)
					}
					// The unbroken plan is a run like any other: every
					// checker judges it and holds.
					for _, v := range all {
						switch {
						case v.Name == k.Catches:
						case v.Skipped != "":
							t.Errorf("unbroken %s: %s was not judged: %s (run directory %s)", k.Unbroken, v.Name, v.Skipped, goodDir)
						case !v.Holds:
							t.Errorf("unbroken %s: %s does not hold: %s (run directory %s)", k.Unbroken, v.Name, v.Violations[0].Message, goodDir)
						}
					}
				})
			}
		})
	}
}
