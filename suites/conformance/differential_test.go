package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/differential"
	"github.com/groupquake/groupquake/harness/differential/difftest"
)

// The differential mode of the reference coordinator's conformance vectors
// (issue "The reference group coordinator"): every vector step that needs
// no internal state is sent to a real broker of each version under test and
// to franz-go's kfake, beside the reference coordinator run with that
// version's profile; every answer is compared canonically
// (harness/differential explains the mapping). An unexplained difference
// against Kafka fails the test: either the reference or its version profile
// is wrong, and the report names the step; fix the reference (with a vector
// that shows the fix), or, if the difference is understood and not a bug of
// the reference, list it in explained. Against kfake the differences are the
// "how far is kfake from Kafka" report; every one must follow from a root
// listed in kfakeGaps, and every root listed must still show (see
// checkKfakeGaps), so a change of kfake or of the reference fails the test.
//
// Reports: -differential.report DIR or $GROUPQUAKE_RUNS_DIR gets
// differential-kafka-<version>.txt and differential-kfake.txt.

var differentialReport = flag.String("differential.report", "", "directory for the differential reports (default $GROUPQUAKE_RUNS_DIR, else only logged)")

// differentialDirs narrows a run to some of differential.VectorDirs
// (-differential.dirs share), so that the vectors of one part can be
// compared against brokers without the hour the whole set takes.
var differentialDirs = flag.String("differential.dirs", "", "comma-separated vector folders to replay (default: all of classic, offsets, consumer, share)")

func selectedDirs() []string {
	if *differentialDirs == "" {
		return differential.VectorDirs
	}
	return strings.Split(*differentialDirs, ",")
}

// explanation is a known difference against a target: the step (vector
// file:line, the Pos of differential.Result), or for a difference that
// shows in many sections a match on the result, and why it is not a bug of
// the reference. Versions empty means every version.
type explanation struct {
	target   string
	versions []string
	pos      string
	match    func(differential.Result) bool
	reason   string
	// timing: whether the target answers this way depends on how the
	// requests interleave with its own timers, so the root may not show in
	// a run (a root is still needed for the runs where it does).
	timing bool
}

// explained lists every difference against Kafka that is understood and is
// not a bug of the reference. A version difference belongs in
// coordinator/version (the reference runs with the target's profile), not
// here. (Empty since the reference models KIP-848's online migration:
// consumer/conversion.txt and the consumer/mixed_*.txt vectors agree with
// Kafka 4.1.2 and 4.4.0.)
var explained = []explanation{}

// kfakeHost is why every describe differs on kfake.
const kfakeHost = "kfake reports ClientHost as ip:port (client_conn remote address); Kafka reports \"/ip\""

// kfakeKIP559 is why every SyncGroup v5+ without a protocol type or name
// differs on kfake.
const kfakeKIP559 = "SyncGroup v5+ without ProtocolType/ProtocolName: kfake serves it as a group coordinator would; Kafka answers INCONSISTENT_GROUP_PROTOCOL first (KIP-559, KafkaApis.handleSyncGroupRequest)"

// kfakeNoOnlineUpgrade is why a consumer-protocol member cannot join a
// classic group on kfake.
const kfakeNoOnlineUpgrade = "ConsumerGroupHeartbeat to a classic group: kfake has no online upgrade (KIP-848 migration) and answers GROUP_ID_NOT_FOUND without a message; Kafka converts the group, or refuses with a message that says why"

// kfakeFirstEpoch matches the first join of a consumer group answered one
// epoch lower than Kafka 4.4 answers it, and nothing else.
func kfakeFirstEpoch(x differential.Result) bool {
	return strings.HasPrefix(x.Command, "consumer-group-heartbeat ") && strings.Contains(x.Command, " epoch=0") &&
		strings.Contains(x.Reference, " epoch=2 ") && strings.Replace(x.Reference, " epoch=2 ", " epoch=1 ", 1) == x.Target
}

// kfakeRegexAtJoin matches a join with a regex subscription that kfake
// answers with the regex's partitions at once, where Kafka answers none:
// kfake resolves the regex inside the heartbeat; Kafka schedules the
// resolution (GMM.maybeUpdateRegularExpressions) and its result bumps the
// group epoch in a later write.
func kfakeRegexAtJoin(x differential.Result) bool {
	head, ok := strings.CutSuffix(x.Reference, " assignment=[]")
	return ok && strings.HasPrefix(x.Command, "consumer-group-heartbeat ") && strings.Contains(x.Command, " epoch=0") &&
		strings.Contains(x.Command, " regex=") && strings.HasPrefix(x.Target, head+" assignment=[") && x.Target != x.Reference
}

// kfakeShareNoMessage matches a share-group heartbeat error kfake answers
// with the reference's error and a null ErrorMessage.
func kfakeShareNoMessage(x differential.Result) bool {
	if !strings.HasPrefix(x.Command, "share-group-heartbeat ") || !strings.HasPrefix(x.Target, "share-heartbeat ") || !strings.HasSuffix(x.Target, " null") {
		return false
	}
	code := strings.TrimSuffix(strings.TrimPrefix(x.Target, "share-heartbeat "), " null")
	return strings.HasPrefix(x.Reference, "share-heartbeat "+code+" ")
}

// kfakeShareAssignsAtJoin matches a share group's join that kfake answers
// with partitions where Kafka answers none: Kafka assigns only
// share-partitions the share coordinator has initialized, which the join
// only asks for (GMM.maybeCreateInitializeShareGroupStateRequest), so the
// partitions come with a later heartbeat's epoch bump
// (initializedAssignmentPending); kfake assigns at once (and, on 4.3+,
// starts the group one epoch lower than Kafka).
func kfakeShareAssignsAtJoin(x differential.Result) bool {
	member := func(s string) string {
		f := strings.Fields(s)
		if len(f) < 2 || f[0] != "share-heartbeat" {
			return ""
		}
		return f[1]
	}
	return strings.HasPrefix(x.Command, "share-group-heartbeat ") && strings.Contains(x.Command, " epoch=0") &&
		strings.HasSuffix(x.Reference, " assignment=[]") && member(x.Reference) != "" && member(x.Reference) == member(x.Target) &&
		strings.Contains(x.Target, " assignment=[") && !strings.HasSuffix(x.Target, " assignment=[]")
}

// kfakeGaps are the root differences of kfake from Kafka 4.4.0 seen by the
// differential run (kfake v0.0.0-20260918054303-01f206a7e32c); the rest of
// kfake's differences follow from these within the same section.
// checkKfakeGaps holds the table to that.
var kfakeGaps = []explanation{
	{target: "kfake", match: kfakeFirstEpoch, reason: "consumer group's first join: kfake gives member epoch 1; Kafka 4.4 (group.consumer.assignment.interval.ms=0) gives 2"},
	{target: "kfake", match: kfakeShareNoMessage, reason: "ShareGroupHeartbeat errors: kfake sends a null ErrorMessage; Kafka says what was wrong"},
	{target: "kfake", match: kfakeShareAssignsAtJoin, reason: "share group's first join: kfake assigns partitions at once; Kafka assigns only initialized share-partitions, after the share coordinator initialized them, with a later heartbeat's epoch bump"},
	{target: "kfake", match: kfakeRegexAtJoin, reason: "regex subscription: kfake resolves the regex in the joining heartbeat and assigns its partitions at once; Kafka resolves it asynchronously and assigns them after the resolution's epoch bump"},
	{target: "kfake", pos: "classic/new_members.txt:29", reason: "JoinGroup while another member holds a pending member id (MEMBER_ID_REQUIRED answered, not joined yet): Kafka parks it until the pending member joins or expires; kfake completes the rebalance at once"},
	{target: "kfake", pos: "consumer/mixed_upgrade.txt:45", reason: kfakeNoOnlineUpgrade},
	{target: "kfake", pos: "consumer/mixed_upgrade_refused.txt:32", reason: kfakeNoOnlineUpgrade},
	{target: "kfake", pos: "consumer/mixed_static_bounce.txt:42", reason: kfakeNoOnlineUpgrade + " (a static member's bounce into the consumer protocol)"},
	{target: "kfake", pos: "consumer/mixed_upgrade_refused.txt:53", reason: kfakeNoOnlineUpgrade},
	{target: "kfake", pos: "consumer/mixed_upgrade_refused.txt:73", reason: kfakeNoOnlineUpgrade + " (the parked classic JoinGroup stays parked where Kafka's conversion answers it)"},
	{target: "kfake", pos: "consumer/mixed_upgrade_refused.txt:118", reason: kfakeNoOnlineUpgrade + " (the parked classic JoinGroup stays parked where Kafka's conversion answers it)"},
	{target: "kfake", pos: "classic/join_new_group.txt:19", reason: "JoinGroup UNKNOWN_MEMBER_ID: kfake answers an empty member id; Kafka echoes the request's"},
	{target: "kfake", pos: "classic/protocols.txt:87", reason: "JoinGroup UNKNOWN_MEMBER_ID: kfake answers an empty member id; Kafka echoes the request's"},
	{target: "kfake", pos: "classic/join_new_group.txt:48", reason: kfakeHost},
	{target: "kfake", pos: "classic/list_delete.txt:49", reason: kfakeHost},
	{target: "kfake", pos: "classic/protocols.txt:52", reason: kfakeHost},
	{target: "kfake", pos: "classic/protocols.txt:68", reason: kfakeHost},
	{target: "kfake", pos: "classic/sync_v5_mandatory_protocol_kip559.txt:15", reason: kfakeKIP559},
	{target: "kfake", pos: "kafkaapis/sync_v5_mandatory_protocol.txt:26", reason: kfakeKIP559},
	{target: "kfake", pos: "classic/leave_group.txt:11", reason: "LeaveGroup of an unknown group: kfake answers GROUP_ID_NOT_FOUND; Kafka UNKNOWN_MEMBER_ID per member"},
	{target: "kfake", pos: "classic/leave_group.txt:15", reason: "LeaveGroup of an unknown group: kfake answers GROUP_ID_NOT_FOUND; Kafka UNKNOWN_MEMBER_ID per member"},
	{target: "kfake", pos: "classic/list_delete.txt:39", reason: "ListGroups StatesFilter: kfake matches states case-sensitively (STABLE, empty match nothing); Kafka ignores case"},
	{target: "kfake", pos: "classic/static_members.txt:75", reason: "static member replaced during Stable: kfake rebalances and makes the new member leader; Kafka keeps the leader and generation"},
	{target: "kfake", pos: "classic/static_rebalance.txt:39", timing: true, reason: "static member rejoining during a rebalance: kfake keeps the join parked; Kafka completes the join phase (not in every run: in about one of three kfake completes the join phase too, seen in a CI gate)"},
	{target: "kfake", pos: "classic/static_rebalance.txt:85", reason: "kfake answers a fenced static member's JoinGroup FENCED_INSTANCE_ID without its member id; Kafka names it"},
	{target: "kfake", pos: "offsets/simple_group.txt:13", reason: "OffsetCommit with a generation to an unknown group: kfake answers ILLEGAL_GENERATION; Kafka GROUP_ID_NOT_FOUND"},
	{target: "kfake", pos: "offsets/commit_edges.txt:15", reason: "OffsetCommit with a generation to an unknown group: kfake answers ILLEGAL_GENERATION; Kafka GROUP_ID_NOT_FOUND"},
	{target: "kfake", pos: "offsets/commit_edges.txt:23", reason: "OffsetCommit metadata longer than offset.metadata.max.bytes: kfake takes it; Kafka answers OFFSET_METADATA_TOO_LARGE"},
	{target: "kfake", pos: "offsets/commit_edges.txt:62", reason: "Heartbeat with an empty group id: kfake answers GROUP_ID_NOT_FOUND; Kafka INVALID_GROUP_ID"},
	{target: "kfake", pos: "offsets/commit_edges.txt:66", reason: "SyncGroup with an empty group id: kfake answers GROUP_ID_NOT_FOUND; Kafka INVALID_GROUP_ID"},
	{target: "kfake", pos: "offsets/simple_group.txt:21", reason: "OffsetFetch of an unknown group: kfake answers GROUP_ID_NOT_FOUND; Kafka offset -1 without error"},
	{target: "kfake", pos: "offsets/delete.txt:72", reason: "OffsetFetch of a deleted group: kfake answers GROUP_ID_NOT_FOUND; Kafka an empty list"},
	{target: "kfake", pos: "offsets/topic_ids.txt:32", reason: "OffsetFetch v10 of an unknown topic id: kfake answers -1 without error; Kafka UNKNOWN_TOPIC_ID"},
	{target: "kfake", pos: "consumer/conversion.txt:25", reason: "ConsumerGroupHeartbeat errors: kfake sends a null ErrorMessage"},
	{target: "kfake", pos: "consumer/conversion.txt:58", reason: "DescribeGroups of a consumer group: kfake describes it as a classic group; Kafka answers GROUP_ID_NOT_FOUND"},
	{target: "kfake", pos: "consumer/conversion.txt:79", reason: "ConsumerGroupHeartbeat leave (epoch -1): kfake answers the heartbeat interval; Kafka 0"},
	{target: "kfake", pos: "consumer/delete_and_list.txt:42", reason: "ListGroups: kfake gives consumer groups an empty ProtocolType; Kafka \"consumer\""},
	{target: "kfake", pos: "consumer/classic_group_ids.txt:44", reason: "ConsumerGroupHeartbeat with a member epoch other than 0 to a classic group: kfake answers UNKNOWN_MEMBER_ID without a message; Kafka GROUP_ID_NOT_FOUND (\"Group c1 is not a consumer group.\")"},
	{target: "kfake", pos: "consumer/heartbeat_validation.txt:14", reason: "ConsumerGroupHeartbeat request validation (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid): kfake takes a v1 join with an empty MemberId in (and answers a null member id), and an empty InstanceId or RackId, a join without RebalanceTimeoutMs or subscription, epoch -3; Kafka answers INVALID_REQUEST"},
	{target: "kfake", pos: "consumer/offset_commit_fencing.txt:318", reason: "OffsetCommit with a generation to an unknown group: kfake answers ILLEGAL_GENERATION; Kafka GROUP_ID_NOT_FOUND"},
	{target: "kfake", pos: "consumer/delete_and_list.txt:85", reason: "OffsetDelete on a consumer group with members: kfake answers NON_EMPTY_GROUP; Kafka GROUP_SUBSCRIBED_TO_TOPIC per subscribed partition"},
}

func (e explanation) covers(target, v string, x differential.Result) bool {
	if e.target != target {
		return false
	}
	if e.match != nil {
		if !e.match(x) {
			return false
		}
	} else if e.pos != x.Pos {
		return false
	}
	if len(e.versions) == 0 {
		return true
	}
	return slices.Contains(e.versions, v)
}

func explain(target, v string, x differential.Result) (string, bool) {
	for _, e := range explained {
		if e.covers(target, v, x) {
			return e.reason, true
		}
	}
	return "", false
}

// loadVectors are the sections a differential run replays: the
// coordinator's vectors (of the folders selectedDirs names), then the
// differential mode's own (harness/differential/testdata/kafkaapis): rules
// a broker checks in KafkaApis before its group coordinator sees a
// request, kept beside the coordinator's vectors so that the differential
// run checks them against every target.
func loadVectors(t *testing.T) []differential.Section {
	t.Helper()
	secs, err := differential.LoadDir(filepath.Join("..", "..", "coordinator", "testdata"), selectedDirs()...)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := differential.LoadDir(filepath.Join("..", "..", "harness", "differential", "testdata"), "kafkaapis")
	if err != nil {
		t.Fatal(err)
	}
	return append(secs, raw...)
}

// runAll runs the coordinator's vectors, then the raw vectors, on one
// target. Every section gets its own namespace by its index, so one run
// serves both.
func runAll(ctx context.Context, t *testing.T, tgt differential.Target, opt differential.Options) (differential.Report, error) {
	return differential.Run(ctx, tgt, loadVectors(t), opt)
}

// writeReport writes rep where -differential.report or
// $GROUPQUAKE_RUNS_DIR says, with the explanations of its differences
// (table), and logs its summary either way.
func writeReport(t *testing.T, file string, rep differential.Report, table []explanation) {
	t.Helper()
	text := rep.String()
	var ex []string
	for _, x := range rep.Results {
		for _, e := range table {
			if x.Outcome == differential.Different && e.covers(rep.Target, rep.Version, x) {
				ex = append(ex, fmt.Sprintf("explained %s: %s", x.Pos, e.reason))
			}
		}
	}
	if len(ex) > 0 {
		text += "\n" + strings.Join(ex, "\n") + "\n"
	}
	t.Logf("%d of the differences are explained root causes", len(ex))
	t.Log(strings.SplitN(text, "\n", 2)[0])
	dir := *differentialReport
	if dir == "" {
		dir = os.Getenv("GROUPQUAKE_RUNS_DIR")
	}
	if dir == "" {
		t.Logf("no -differential.report or $GROUPQUAKE_RUNS_DIR: the full report is not written")
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("full report: %s", path)
}

// TestDifferentialKafka runs the vectors against a one-node cluster of
// every version under test, with the group settings the reference is
// configured with (differential.Settings over cluster.FastGroupSettings).
func TestDifferentialKafka(t *testing.T) {
	reports := map[string]differential.Report{}
	for _, v := range clustertest.Versions() {
		t.Run(v, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 1, Settings: differential.Settings(v)})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			rep, err := runAll(ctx, t, differential.Target{Name: "kafka", Version: v, Addr: c.Bootstrap()[0]}, differential.Options{Logf: t.Logf, SameHost: true})
			writeReport(t, "differential-kafka-"+v+".txt", rep, explained)
			if err != nil {
				t.Fatal(err)
			}
			reports[v] = rep
			var unexplained, known int
			seen := map[string]bool{}
			for _, x := range rep.Results {
				if x.Outcome != differential.Different {
					continue
				}
				if why, ok := explain("kafka", v, x); ok {
					known++
					seen[x.Pos] = true
					t.Logf("explained difference at %s (%s): %s", x.Pos, x.Command, why)
					continue
				}
				unexplained++
				t.Errorf("%s %s (#%d): Kafka %s answers differently from the reference\nreference: %s\nkafka:     %s", x.Pos, x.Command, x.Ticket, v, x.Reference, x.Target)
			}
			// An explanation whose difference is gone is stale: the vector
			// moved, or the reference now models it.
			for _, e := range explained {
				if e.target == "kafka" && (len(e.versions) == 0 || slices.Contains(e.versions, v)) && !seen[e.pos] {
					t.Errorf("explained difference at %s no longer shows against Kafka %s: remove or move its entry in explained (%s)", e.pos, v, e.reason)
				}
			}
			t.Logf("Kafka %s: %d same, %d different (%d explained), %d skipped", v, rep.Count(differential.Same), unexplained+known, known, rep.Count(differential.Skipped))
		})
	}
	t.Run("diff", func(t *testing.T) { diffReports(t, reports) })
}

// diffReports is `groupquake diff` over the vectors of the oldest and the
// newest tested release, from the reports the runs above made (no cluster
// of its own): every answer that differs between the two releases must be
// explained by the version profiles' behaviours.
func diffReports(t *testing.T, reports map[string]differential.Report) {
	var vs []version.Version
	for v := range reports {
		vs = append(vs, version.MustParse(v))
	}
	slices.Sort(vs)
	if len(vs) < 2 {
		t.Skipf("the diff needs two tested releases, %d ran (GROUPQUAKE_KAFKA_VERSIONS)", len(vs))
	}
	from, to := vs[0], vs[len(vs)-1]
	secs, why := differential.ShareComparable(from.Profile(), to.Profile(), loadVectors(t))
	if why != "" {
		t.Log(why)
	}
	attr, err := differential.Attribute(from.Profile(), to.Profile(), secs)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, s := range secs {
		kept[s.Name()] = true
	}
	only := func(rep differential.Report) differential.Report {
		rs := rep.Results[:0:0]
		for _, x := range rep.Results {
			if kept[x.Section] {
				rs = append(rs, x)
			}
		}
		rep.Results = rs
		return rep
	}
	res := differential.CompareReleases(differential.RealOutcomes(only(reports[from.String()])), differential.RealOutcomes(only(reports[to.String()])),
		differential.Behaviours(from.Profile(), to.Profile()), attr)
	ex, un := res.Count()
	t.Logf("%s", res.Summary(false))
	if ex == 0 && from.Profile() != to.Profile() {
		t.Errorf("Kafka %s and %s answer every vector alike, though their profiles differ", from, to)
	}
	for _, d := range res.Differences {
		if !d.Explained {
			t.Errorf("%s %s: Kafka %s and %s differ unexplained (%s)\n%s: %s\n%s: %s", d.Key, d.What, from, to, d.Why, from, d.From, to, d.To)
		}
	}
	if un == 0 {
		t.Logf("Kafka %s → %s: %d differences, every one explained by the version profiles", from, to, ex)
	}
}

// TestDifferentialKfake runs the vectors against franz-go's kfake with the
// same group settings, as Kafka 4.4.0. It fails only if the run cannot be
// made; the differences are the report.
func TestDifferentialKfake(t *testing.T) {
	addr := difftest.Kfake(t, differential.Settings(version.Default.String()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := runAll(ctx, t, differential.Target{Name: "kfake", Version: version.Default.String(), Addr: addr}, differential.Options{Wait: 3 * time.Second, Logf: t.Logf, ReadsSeeWrites: true})
	writeReport(t, "differential-kfake.txt", rep, kfakeGaps)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range checkKfakeGaps(rep, kfakeGaps) {
		t.Error(e)
	}
	t.Logf("kfake %s: %d same, %d different (from %d listed roots), %d skipped", rep.Version, rep.Count(differential.Same), rep.Count(differential.Different), len(kfakeGaps), rep.Count(differential.Skipped))
}

// checkKfakeGaps holds the kfake report to its table of roots: every
// difference is a root the table lists or follows one earlier in its
// section (a fresh group per section, so a difference cannot carry over
// from another), every root the table lists by position still shows, and
// every matching root matches at least once. Some answers must agree, or
// the run compared nothing.
func checkKfakeGaps(rep differential.Report, table []explanation) []string {
	var errs []string
	rooted := map[string]string{} // section → the first root's position
	shown := map[int]bool{}       // index in table → covered a difference
	for _, x := range rep.Results {
		if x.Outcome != differential.Different {
			continue
		}
		root := false
		for i, e := range table {
			if e.covers(rep.Target, rep.Version, x) {
				shown[i], root = true, true
			}
		}
		switch _, ok := rooted[x.Section]; {
		case root && !ok:
			rooted[x.Section] = x.Pos
		case !root && !ok:
			errs = append(errs, fmt.Sprintf("%s %s (%s): kfake answers differently from the reference and no root in kfakeGaps explains it or comes before it in the section\nreference: %s\nkfake:     %s", x.Pos, x.Command, x.Section, x.Reference, x.Target))
		}
	}
	for i, e := range table {
		if !shown[i] && !e.timing {
			where := e.pos
			if e.match != nil {
				where = "its match"
			}
			errs = append(errs, fmt.Sprintf("kfakeGaps root at %s no longer shows (%s): remove or move the entry", where, e.reason))
		}
	}
	if rep.Count(differential.Same) == 0 {
		errs = append(errs, "no answer of kfake agrees with the reference: the run compared nothing")
	}
	return errs
}

// checkKfakeGaps fails a difference that no listed root explains or
// precedes in its section, a listed root that no longer shows, and a run
// where nothing agreed; a difference after a root in its section passes.
func TestCheckKfakeGaps(t *testing.T) {
	firstJoin := differential.Result{Section: "consumer/a.txt", Pos: "consumer/a.txt:3", Command: "consumer-group-heartbeat member=A epoch=0 subscribe=foo", Outcome: differential.Different,
		Reference: "consumer-heartbeat member=A epoch=2 interval=5000ms assignment=[foo/0]", Target: "consumer-heartbeat member=A epoch=1 interval=5000ms assignment=[foo/0]"}
	after := differential.Result{Section: "consumer/a.txt", Pos: "consumer/a.txt:9", Command: "commit member=A gen=2", Outcome: differential.Different, Reference: "commit foo/0", Target: "commit foo/0 STALE_MEMBER_EPOCH"}
	same := differential.Result{Section: "classic/b.txt", Pos: "classic/b.txt:5", Command: "join client=a", Outcome: differential.Same}
	listed := differential.Result{Section: "classic/b.txt", Pos: "classic/b.txt:9", Command: "describe groups=g", Outcome: differential.Different, Reference: "x", Target: "y"}
	table := []explanation{
		{target: "kfake", match: kfakeFirstEpoch, reason: "first epoch"},
		{target: "kfake", pos: "classic/b.txt:9", reason: "host"},
	}
	rep := func(rs ...differential.Result) differential.Report {
		return differential.Report{Target: "kfake", Version: "4.4.0", Results: rs}
	}
	if errs := checkKfakeGaps(rep(same, firstJoin, after, listed), table); len(errs) != 0 {
		t.Errorf("every difference is rooted, yet: %v", errs)
	}
	// The same commit difference in a section without a root.
	orphan := after
	orphan.Section, orphan.Pos = "consumer/c.txt", "consumer/c.txt:9"
	if errs := checkKfakeGaps(rep(same, firstJoin, after, listed, orphan), table); len(errs) != 1 || !strings.Contains(errs[0], "consumer/c.txt:9") {
		t.Errorf("an unrooted difference: %v", errs)
	}
	// A difference before its section's root is not explained by it.
	if errs := checkKfakeGaps(rep(same, after, firstJoin, listed), table); len(errs) != 1 || !strings.Contains(errs[0], "consumer/a.txt:9") {
		t.Errorf("a difference before the root: %v", errs)
	}
	// A first join that differs in more than the epoch is not the root.
	other := firstJoin
	other.Target = "consumer-heartbeat member=A epoch=1 interval=5000ms assignment=[]"
	if errs := checkKfakeGaps(rep(same, other, listed), table); len(errs) != 2 {
		t.Errorf("a first join differing in its assignment: %v", errs)
	}
	// A listed root that no longer differs is stale.
	if errs := checkKfakeGaps(rep(same, firstJoin), table); len(errs) != 1 || !strings.Contains(errs[0], "classic/b.txt:9 no longer shows") {
		t.Errorf("a stale root: %v", errs)
	}
	// A root whose showing depends on timing may not show.
	timed := append(slices.Clone(table), explanation{target: "kfake", pos: "classic/b.txt:20", timing: true, reason: "timer"})
	if errs := checkKfakeGaps(rep(same, firstJoin, listed), timed); len(errs) != 0 {
		t.Errorf("a timing root that did not show: %v", errs)
	}
	// Nothing agreed.
	if errs := checkKfakeGaps(rep(firstJoin, listed), table); len(errs) != 1 || !strings.Contains(errs[0], "compared nothing") {
		t.Errorf("a run without an agreeing answer: %v", errs)
	}
}
