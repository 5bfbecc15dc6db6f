package assign

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoAssign runs franz-go's balancer the way a kgo leader does
// (groupConsumer.balanceGroup): members sorted by instance id, then member
// id, in Go byte order; each member's subscription encoded as it would
// arrive in JoinGroup.
func kgoAssign(t *testing.T, name string, members []Member, topics map[string]int32) Assignment {
	t.Helper()
	var b kgo.GroupBalancer
	switch name {
	case RangeName:
		b = kgo.RangeBalancer()
	case RoundRobinName:
		b = kgo.RoundRobinBalancer()
	case StickyName:
		b = kgo.StickyBalancer()
	case CooperativeStickyName:
		b = kgo.CooperativeStickyBalancer()
	}
	var join []kmsg.JoinGroupResponseMember
	for _, m := range members {
		var rack *string
		if m.Rack != "" {
			rack = &m.Rack
		}
		meta, err := EncodeSubscription(Subscription{Version: 3, Topics: m.Topics, UserData: m.UserData, Owned: m.Owned, Generation: m.Generation, Rack: rack})
		if err != nil {
			t.Fatal(err)
		}
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.ID, m.InstanceID, meta
		join = append(join, jm)
	}
	slices.SortStableFunc(join, func(l, r kmsg.JoinGroupResponseMember) int {
		switch {
		case l.InstanceID != nil && r.InstanceID != nil:
			return strings.Compare(*l.InstanceID, *r.InstanceID)
		case l.InstanceID != nil:
			return -1
		case r.InstanceID != nil:
			return 1
		}
		return strings.Compare(l.MemberID, r.MemberID)
	})
	mb, _, err := b.MemberBalancer(join)
	if err != nil {
		t.Fatal(err)
	}
	exist := map[string]int32{}
	for topic, n := range topics {
		if n > 0 {
			exist[topic] = n
		}
	}
	out := Assignment{}
	for _, m := range members {
		out[m.ID] = map[string][]int32{}
	}
	var into kgo.IntoSyncAssignment
	if be, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
		if into, err = be.BalanceOrError(exist); err != nil {
			t.Fatal(err)
		}
	} else {
		into = mb.Balance(exist)
	}
	for _, sa := range into.IntoSyncAssignment() {
		a, err := DecodeAssignment(sa.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		for topic, ps := range a.Partitions {
			if len(ps) > 0 {
				out[sa.MemberID][topic] = slices.Sorted(slices.Values(ps))
			}
		}
	}
	return out
}

// TestKgoAgainstJava replays the Java reference vectors through franz-go's
// balancers (v1.22.3, pkg/kgo/group_balancer.go and internal/sticky) to
// measure where a kgo leader and a Java (or our) leader disagree. It
// asserts what we rely on: range and roundrobin agree everywhere the ids
// are plain ASCII; the sticky ones are a different algorithm.
func TestKgoAgainstJava(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	vectors, err := readVectors(data)
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ same, differ int }
	counts := map[string]*tally{}
	for _, v := range vectors {
		if v.wantErr != "" || strings.HasPrefix(v.name, "java-quirk") {
			continue
		}
		got := kgoAssign(t, v.assignor, v.members, v.topics)
		c := counts[v.assignor]
		if c == nil {
			c = &tally{}
			counts[v.assignor] = c
		}
		if samePlan(got, v.want) {
			c.same++
			continue
		}
		c.differ++
		if (v.assignor == RangeName || v.assignor == RoundRobinName) && asciiIDs(v.members) {
			t.Errorf("%s: kgo %s differs from Java\nkgo:\n%sjava:\n%s", v.name, v.assignor, got, v.want)
		}
	}
	for _, name := range []string{RangeName, RoundRobinName, StickyName, CooperativeStickyName} {
		if c := counts[name]; c != nil {
			t.Logf("%-18s kgo = Java on %d vectors, differs on %d", name, c.same, c.differ)
		}
	}
}

func asciiIDs(members []Member) bool {
	for _, m := range members {
		for _, s := range []string{m.ID, deref(m.InstanceID)} {
			for i := 0; i < len(s); i++ {
				if s[i] >= 0x80 {
					return false
				}
			}
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
