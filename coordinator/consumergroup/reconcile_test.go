package consumergroup

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestReconcile runs testdata/reconcile/*.txt: the CurrentAssignmentBuilder
// on its own, one member and a target at a time, as
// CurrentAssignmentBuilderTest drives it. Usage:
//
//	reconcile v=4.3.0 target-epoch=11 target=(t1-2,t2-5) [owned=(t1-2)]
//	    [owners=(t1-4@10)] [subscription-changed]
//	state=STABLE epoch=10 prev=10 subscribed=(t1,t2) assigned=(t1-1@10) [revoking=(…)]
//	----
//	<the member after build(), or the error>
//
// owned missing means the request did not say (null); owners are the
// epochs of partitions other members hold. Topics t1, t2 exist (10
// partitions each); t3 does not.
func TestReconcile(t *testing.T) {
	files, _ := filepath.Glob("testdata/reconcile/*.txt")
	if len(files) == 0 {
		t.Fatal("no vectors in testdata/reconcile")
	}
	for _, path := range files {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "reconcile" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return runReconcile(t, d)
		})
	}
}

func cabTopic(name string) TopicID {
	var id TopicID
	copy(id[:], name)
	return id
}

func cabName(id TopicID) string {
	i := slices.Index(id[:], 0)
	if i < 0 {
		i = len(id)
	}
	return string(id[:i])
}

func listArg(d *datadriven.TestData, args []datadriven.CmdArg, key string) ([]string, bool) {
	for _, a := range args {
		if a.Key == key {
			if len(a.Vals) == 1 && a.Vals[0] == "" {
				return []string{}, true
			}
			return a.Vals, true
		}
	}
	return nil, false
}

// parsePartitions reads t1-3 or t1-3@10 items.
func parsePartitions(t *testing.T, d *datadriven.TestData, items []string) assignment {
	out := assignment{}
	for _, it := range items {
		epoch := int64(0)
		if i := strings.IndexByte(it, '@'); i >= 0 {
			var err error
			if epoch, err = strconv.ParseInt(it[i+1:], 10, 32); err != nil {
				d.Fatalf(t, "%q: %v", it, err)
			}
			it = it[:i]
		}
		i := strings.LastIndexByte(it, '-')
		p, err := strconv.Atoi(it[i+1:])
		if i < 0 || err != nil {
			d.Fatalf(t, "partition %q: want topic-N[@epoch]", it)
		}
		id := cabTopic(it[:i])
		if out[id] == nil {
			out[id] = map[int32]int32{}
		}
		out[id][int32(p)] = int32(epoch)
	}
	return out
}

func formatAssignment(a assignment, withEpochs bool) string {
	var out []string
	for t, ps := range a {
		for p, e := range ps {
			s := fmt.Sprintf("%s-%d", cabName(t), p)
			if withEpochs {
				s += fmt.Sprintf("@%d", e)
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

func runReconcile(t *testing.T, d *datadriven.TestData) string {
	var vs string
	d.ScanArgs(t, "v", &vs)
	v, err := version.Parse(vs)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	p := v.Profile()
	var targetEpoch int
	d.ScanArgs(t, "target-epoch", &targetEpoch)
	targetItems, _ := listArg(d, d.CmdArgs, "target")
	target := partitionsOf(parsePartitions(t, d, targetItems))
	owners := assignment{}
	if items, ok := listArg(d, d.CmdArgs, "owners"); ok {
		owners = parsePartitions(t, d, items)
	}

	_, margs, err := datadriven.ParseLine("member " + strings.TrimSpace(d.Input))
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	m := newMember("member")
	for _, a := range margs {
		switch a.Key {
		case "state":
			for _, s := range []records.MemberState{records.MemberStable, records.MemberUnrevokedPartitions, records.MemberUnreleasedPartitions, records.MemberUnknown} {
				if s.String() == a.Vals[0] {
					m.state = s
				}
			}
		case "epoch", "prev":
			x, err := strconv.Atoi(a.Vals[0])
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			if a.Key == "epoch" {
				m.epoch = int32(x)
			} else {
				m.prevEpoch = int32(x)
			}
		}
	}
	subs, _ := listArg(d, margs, "subscribed")
	m.setSubscribed(sortedSet(subs))
	if items, ok := listArg(d, margs, "assigned"); ok {
		m.assigned = parsePartitions(t, d, items)
	}
	if items, ok := listArg(d, margs, "revoking"); ok {
		m.pending = parsePartitions(t, d, items)
	}

	// The member's own partitions are in the partition-epoch index too
	// (ConsumerGroup.addPartitionEpochs), at its epoch.
	index := func(tp TopicID, part int32) int32 {
		if m.assigned.has(tp, part) || m.pending.has(tp, part) {
			return m.epoch
		}
		if e, ok := owners[tp][part]; ok {
			return e
		}
		return -1
	}
	topics := Topics{{Name: "t1", ID: cabTopic("t1"), Partitions: 10}, {Name: "t2", ID: cabTopic("t2"), Partitions: 10}}
	rc := &reconciler{
		profile:                p,
		member:                 m,
		targetEpoch:            int32(targetEpoch),
		target:                 target,
		sub:                    subscription{topics: topics, member: m},
		hasSubscriptionChanged: d.HasArg("subscription-changed"),
		partitionEpoch:         index,
	}
	if items, ok := listArg(d, d.CmdArgs, "owned"); ok {
		rc.owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for tp, ps := range partitionsOf(parsePartitions(t, d, items)) {
			rc.owned = append(rc.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp, Partitions: ps})
		}
	}
	out, err := rc.build()
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	if out == m || out.equal(m) {
		return "unchanged\n"
	}
	s := fmt.Sprintf("%s epoch=%d prev=%d assigned=%s", out.state, out.epoch, out.prevEpoch, formatAssignment(out.assigned, p.AssignmentEpochs))
	if len(out.pending) > 0 {
		s += " revoking=" + formatAssignment(out.pending, p.AssignmentEpochs)
	}
	return s + "\n"
}
