package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// restartPlan is a group of two consumer-protocol members on the embedded
// cluster, m1 static, and one fault: m1 crashed (no leave) 2 s into the
// workload and started again 1.5 s later, well within its 6 s session. The
// coordinator still holds m1's instance id under the crashed member's id,
// so it refuses the new one UNRELEASED_INSTANCE_ID
// (GroupMetadataManager.throwIfInstanceIdIsUnreleased), which the member
// takes as fatal, as KafkaConsumer does.
func restartPlan(t *testing.T, supervised bool) run.Plan {
	t.Helper()
	p, err := run.NewPlan(31, run.Options{Embedded: true, Kinds: []string{"consumer", "consumer"}, Members: 2, Partitions: 4, Rate: 20, Duration: 10 * time.Second, NoSupervisor: !supervised}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	p.Members[0].InstanceID = p.Group + "-m1"
	p.Members[1].InstanceID = ""
	for i := range p.Members {
		p.Members[i].JoinAfter = time.Duration(i) * 300 * time.Millisecond
	}
	p.Faults = []faults.Fault{{Kind: faults.MemberRestart, Member: "m1", At: 2 * time.Second, For: 1500 * time.Millisecond}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// runDir is name under $GROUPQUAKE_RUNS_DIR when set (kept for reading),
// else in the test's temporary directory.
func runDir(t *testing.T, name string) string {
	t.Helper()
	if root := os.Getenv("GROUPQUAKE_RUNS_DIR"); root != "" {
		d := filepath.Join(root, t.Name())
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(d, time.Now().UTC().Format("20060102T150405")+"-"+name)
	}
	return filepath.Join(t.TempDir(), name)
}

func runPlan(t *testing.T, p run.Plan, dir string) (run.Result, []history.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Logf: t.Logf})
	if err != nil {
		t.Fatalf("run: %v (notes %v)", err, res.Notes)
	}
	l, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	return res, l.Events
}

func verdictOf(rep check.Report, name string) check.Verdict {
	for _, v := range rep.Verdicts {
		if v.Name == name {
			return v
		}
	}
	return check.Verdict{Name: name, Skipped: "absent"}
}

// TestSupervisorRestartsARefusedStaticMember scripts, on the embedded
// cluster, the order of events a crashed static consumer-protocol member
// goes through in production: crash → restart within its session →
// UNRELEASED_INSTANCE_ID → stopped for good → its supervisor restarts it
// after a backoff (again, with a longer one, while the crashed
// incarnation's session holds the instance id) → taken into the group.
// Every checker holds. The same plan with the supervisor off (as every run
// was before it) leaves m1 stopped, and EventuallyConverges fails on it.
func TestSupervisorRestartsARefusedStaticMember(t *testing.T) {
	t.Parallel()
	res, ev := runPlan(t, restartPlan(t, true), runDir(t, "supervised"))

	// The order of m1's events from the crash on.
	const (
		crash = iota
		refused
		stopped
		scheduled
		restarted
		joined
	)
	names := []string{"the crash", "UNRELEASED_INSTANCE_ID", "stopped", "restart scheduled", "restarted", "taken in after a restart"}
	at := []int64{-1, -1, -1, -1, -1, -1}
	var attempts []int
	var backoffs []time.Duration
	for _, e := range ev {
		v, err := history.TypedValue(e)
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case history.Fault:
			if e.F == history.FFaultStart && e.Type == history.OK && v.What == string(faults.MemberRestart) && at[crash] < 0 {
				at[crash] = e.Index
			}
		case history.Heartbeat:
			if v.Member != "m1" || at[crash] < 0 {
				continue
			}
			if e.Type == history.Fail && v.Error == "UNRELEASED_INSTANCE_ID" && at[refused] < 0 {
				at[refused] = e.Index
			}
			if e.Type == history.OK && v.ResultEpoch > 0 && at[restarted] >= 0 && at[joined] < 0 {
				at[joined] = e.Index
			}
		case history.Membership:
			if e.F == history.FStopped && v.Member == "m1" && at[stopped] < 0 {
				at[stopped] = e.Index
			}
		case history.Restart:
			if v.Member != "m1" {
				continue
			}
			switch v.Action {
			case history.RestartScheduled:
				if at[scheduled] < 0 {
					at[scheduled] = e.Index
				}
				attempts = append(attempts, v.Attempt)
				backoffs = append(backoffs, v.Backoff)
				if !strings.Contains(v.Reason, "UNRELEASED_INSTANCE_ID") {
					t.Errorf("event %d: the restart's reason %q does not name the fatal answer", e.Index, v.Reason)
				}
			case history.RestartStarted:
				if at[restarted] < 0 {
					at[restarted] = e.Index
				}
			case history.RestartCancelled:
				t.Errorf("event %d: m1's restart was cancelled: %+v", e.Index, v)
			}
		}
	}
	for i := range at {
		if at[i] < 0 {
			t.Fatalf("no %s of m1 in the history (found %v)", names[i], at)
		}
		if i > 0 && at[i] < at[i-1] {
			t.Errorf("%s (event %d) came before %s (event %d)", names[i], at[i], names[i-1], at[i-1])
		}
	}
	// Attempts count up from 1 while m1 stays out, each waiting twice as
	// long as the one before (1 s, 2 s, ...).
	for i, n := range attempts {
		if n != i+1 {
			t.Errorf("restart %d is attempt %d, want %d (attempts %v)", i+1, n, i+1, attempts)
		}
		if want := run.DefaultSupervisor().Backoff(i + 1); backoffs[i] != want {
			t.Errorf("attempt %d waits %s, want %s", i+1, backoffs[i], want)
		}
	}
	for _, v := range res.Report.Verdicts {
		if !v.Holds || v.Skipped != "" {
			t.Errorf("%s: holds %v, skipped %q, violations %+v", v.Name, v.Holds, v.Skipped, v.Violations)
		}
	}

	off, _ := runPlan(t, restartPlan(t, false), runDir(t, "unsupervised"))
	v := verdictOf(off.Report, "EventuallyConverges")
	if v.Holds || len(v.Violations) == 0 || !strings.Contains(v.Violations[0].Message, "member m1 stopped for good") {
		t.Errorf("without the supervisor, EventuallyConverges should fail on m1 stopped for good; got holds %v, skipped %q, violations %+v", v.Holds, v.Skipped, v.Violations)
	}
}

// refusedRetry is the first incarnation of a static consumer-protocol
// member scripted as m4 of the real run of seed 268778 (Kafka 4.4.0,
// broker-faults, a node killed): its joining heartbeat (epoch 0) gets no
// answer, it resends the join with the same member id and epoch 0, and the
// coordinator answers UNRELEASED_INSTANCE_ID naming the member itself as
// the owner; the member stops for good. It talks to no broker: it only
// reports what m4 reported.
type refusedRetry struct {
	name, instance string
	hooks          clients.Hooks
	once           sync.Once
}

const refusedRetryID = "H0_vxV37db_OycugW-wEVQ"

var errRefusedRetry = fmt.Errorf("%w: heartbeat failed fatally: UNRELEASED_INSTANCE_ID: Static member %s with instance id gq-268778-m4 cannot join the group because the instance id is owned by %s member.", clients.ErrStopped, refusedRetryID, refusedRetryID)

func (m *refusedRetry) Name() string                { return m.name }
func (m *refusedRetry) Protocol() clients.Protocol  { return clients.Consumer }
func (m *refusedRetry) Start(context.Context) error { return nil }
func (m *refusedRetry) Owned() clients.Partitions   { return clients.Partitions{} }
func (m *refusedRetry) Close(context.Context) error { return nil }
func (m *refusedRetry) Commit(context.Context, map[string]map[int32]int64) (map[string]map[int32]string, error) {
	return nil, nil
}

func (m *refusedRetry) Poll(context.Context) ([]clients.Record, error) {
	m.once.Do(func() {
		ev := func(k clients.Kind, call uint64, why string) clients.Event {
			return clients.Event{Kind: k, Protocol: clients.Consumer, Member: m.name, MemberID: refusedRetryID, InstanceID: m.instance,
				Generation: -1, MemberEpoch: 0, GroupEpoch: -1, Call: call, Op: clients.OpHeartbeat, Why: why, At: time.Now()}
		}
		m.hooks.OnEvent(ev(clients.Sent, 1, "ConsumerGroupHeartbeat with member epoch 0"))
		lost := ev(clients.Heartbeat, 1, "no answer; heartbeat got no answer; the next one is a full request")
		lost.Err = "context deadline exceeded"
		m.hooks.OnEvent(lost)
		m.hooks.OnEvent(ev(clients.Sent, 2, "ConsumerGroupHeartbeat with member epoch 0"))
		refused := ev(clients.Heartbeat, 2, "answered UNRELEASED_INSTANCE_ID")
		refused.ErrCode, refused.Err = kerr.UnreleasedInstanceID.Code, "UNRELEASED_INSTANCE_ID"
		m.hooks.OnEvent(refused)
	})
	return nil, errRefusedRetry
}

// TestSupervisorKeepsTheRefusedRetry: the supervisor restarts a member
// that Kafka refused UNRELEASED_INSTANCE_ID for its own retried join, and
// the history keeps every answer that shows the refusal: the lost join, the
// retry with the same member id at epoch 0 and its UNRELEASED_INSTANCE_ID,
// in that order, before the stop and the restart (the new incarnation, a
// real consumer member, then joins). A checker that flags a member refused
// for its own instance id finds what it needs whether or not the member
// came back: EventuallyConverges fails on it (finding
// kafka-static-rejoin-own-instance) though m2 is back in the group.
func TestSupervisorKeepsTheRefusedRetry(t *testing.T) {
	t.Parallel()
	reg := kinds.Default()
	real := reg["consumer"]
	var builds atomic.Int32
	reg["scripted-static-consumer"] = kinds.Factory{Protocol: clients.Consumer, Doc: "m4 of seed 268778, then a consumer member", New: func(s kinds.MemberSpec) (clients.Member, error) {
		if builds.Add(1) == 1 {
			return &refusedRetry{name: s.Name, instance: s.InstanceID, hooks: s.Hooks}, nil
		}
		return real.New(s)
	}}
	p, err := run.NewPlan(41, run.Options{Embedded: true, Kinds: []string{"consumer", "scripted-static-consumer"}, Members: 2, Partitions: 2, Rate: 20, Duration: 6 * time.Second}, reg.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	p.Members[1].InstanceID = p.Group + "-m2"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := runDir(t, "refused-retry")
	res, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Registry: reg, Logf: t.Logf})
	if err != nil {
		t.Fatalf("run: %v (notes %v)", err, res.Notes)
	}
	l, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"invoke heartbeat " + refusedRetryID + " epoch 0", "info heartbeat " + refusedRetryID + " context deadline exceeded",
		"invoke heartbeat " + refusedRetryID + " epoch 0", "fail heartbeat " + refusedRetryID + " UNRELEASED_INSTANCE_ID",
		"stopped", "restart scheduled 1", "restart restarted 1", "taken in"}
	var got []string
	for _, e := range l.Events {
		v, err := history.TypedValue(e)
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case history.Heartbeat:
			switch {
			case v.Member != "m2":
			case v.MemberID == refusedRetryID && e.Type == history.Invoke:
				got = append(got, fmt.Sprintf("invoke heartbeat %s epoch %d", v.MemberID, v.Epoch))
			case v.MemberID == refusedRetryID:
				got = append(got, fmt.Sprintf("%s heartbeat %s %s", e.Type, v.MemberID, v.Error))
			case e.Type == history.OK && v.ResultEpoch > 0 && !slices.Contains(got, "taken in"):
				got = append(got, "taken in")
			}
		case history.Membership:
			if e.F == history.FStopped && v.Member == "m2" {
				got = append(got, "stopped")
			}
		case history.Restart:
			if v.Member == "m2" {
				got = append(got, fmt.Sprintf("restart %s %d", v.Action, v.Attempt))
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("m2's history:\n got %q\nwant %q", got, want)
	}
	// The refusal is a Kafka bug (finding kafka-static-rejoin-own-instance):
	// the run fails on it although the supervisor brought m2 back, and on
	// nothing else.
	v := verdictOf(res.Report, "EventuallyConverges")
	if v.Holds || len(v.Violations) == 0 {
		t.Fatalf("EventuallyConverges holds: the refusal of m2's own instance id must fail it, supervisor or not (notes %v)", v.Notes)
	}
	for _, x := range v.Violations {
		if x.Finding != check.FindingStaticRejoinOwnInstance {
			t.Errorf("EventuallyConverges: a violation other than %s: %+v", check.FindingStaticRejoinOwnInstance, x)
		}
	}
}
