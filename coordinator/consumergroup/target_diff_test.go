package consumergroup

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// refBuildTarget is the target assignment as maybeUpdateTarget built it
// before buildTarget (a spec map, every subscription resolved and every
// previous target ordered anew, every member's output copied into a map):
// the reference TestBuildTargetSameAsReference holds buildTarget to.
func refBuildTarget(m *Manager, g *group, topics TopicMetadata, groupEpoch int32, old, updated *member, subType assignor.SubscriptionType, nowMs int64) (map[TopicID][]int32, []records.Record, error) {
	name := m.preferredAssignor(g, old, updated)
	type spec struct {
		mb     *member
		target map[TopicID][]int32
	}
	specs := map[string]spec{}
	ids := g.memberIDs()
	for _, id := range ids {
		specs[id] = spec{g.members[id], g.target[id]}
	}
	prevTarget := g.target[updated.id]
	if updated.instanceID != "" {
		if prev, ok := g.staticMembers[updated.instanceID]; ok && prev != updated.id {
			prevTarget = g.target[prev]
			delete(specs, prev)
			ids = slices.DeleteFunc(ids, func(s string) bool { return s == prev })
		}
	}
	if _, ok := specs[updated.id]; !ok {
		ids = append(ids, updated.id)
	}
	specs[updated.id] = spec{updated, prevTarget}
	ids = assignor.JavaHashMapOrder(ids)
	gs := assignor.GroupSpec{Subscription: subType}
	counts := assignor.PartitionCounts{}
	for _, id := range ids {
		s := specs[id]
		ms := assignor.MemberSpec{ID: id, InstanceID: s.mb.instanceID, RackID: s.mb.rackID}
		for _, n := range g.memberTopics(s.mb) {
			if tid, parts, ok := topics.TopicByName(n); ok {
				ms.Topics = append(ms.Topics, tid)
				counts[tid] = parts
			}
		}
		ms.Assignment = m.javaOrder(s.target)
		gs.Members = append(gs.Members, ms)
	}
	for _, id := range ids {
		for t := range specs[id].target {
			if _, ok := counts[t]; !ok {
				if _, parts, ok := topics.TopicByID(t); ok {
					counts[t] = parts
				}
			}
		}
	}
	a, ok := m.assignors[name]
	if !ok {
		return nil, nil, errorf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: assignor %q is not configured", groupEpoch, name)
	}
	res, err := a.Assign(gs, counts)
	if err != nil {
		return nil, nil, errorf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v", groupEpoch, err)
	}
	var mine map[TopicID][]int32
	var recs []records.Record
	for _, id := range ids {
		next := make(map[TopicID][]int32, len(res.Members[id]))
		for _, tp := range res.Members[id] {
			next[tp.Topic] = slices.Clone(tp.Partitions)
		}
		if id == updated.id {
			mine = next
		}
		prev, had := g.target[id]
		if !had || !maps.EqualFunc(prev, next, slices.Equal[[]int32]) {
			recs = append(recs, m.targetRecord(g.id, id, next))
		}
	}
	recs = append(recs, m.targetMetadataRecord(g.id, groupEpoch, nowMs))
	return mine, recs, nil
}

// randomGroup draws a group as the coordinator keeps it: members (some
// static, some asking for an assignor, some with a regex), subscriptions
// shared, equal or different, naming topics that exist or not, and targets
// that the assignors gave or that overlap, are stale or list a topic with
// no partitions.
func randomGroup(rng *rand.Rand, topics Topics) *group {
	g := newGroup("g", 5)
	var names []string
	for _, t := range topics {
		names = append(names, t.Name)
	}
	names = append(names, "missing")
	subset := func() []string {
		var out []string
		for _, n := range names {
			if rng.IntN(2) == 0 {
				out = append(out, n)
			}
		}
		return sortedSet(out)
	}
	if rng.IntN(3) == 0 {
		g.resolved["re.*"] = resolvedRegex{topics: subset()}
	}
	shared := subset()
	for i := range rng.IntN(25) {
		mb := newMember(fmt.Sprintf("m%d-%x", i, rng.IntN(1<<12)))
		switch rng.IntN(3) {
		case 0:
			mb.setSubscribed(shared)
		case 1:
			mb.setSubscribed(slices.Clone(shared))
		default:
			mb.setSubscribed(subset())
		}
		if rng.IntN(5) == 0 {
			mb.instanceID = fmt.Sprintf("i%d", i)
			g.staticMembers[mb.instanceID] = mb.id
		}
		if rng.IntN(8) == 0 {
			mb.regex = "re.*"
		}
		if rng.IntN(6) == 0 {
			mb.serverAssignor = []string{assignor.UniformName, assignor.RangeName}[rng.IntN(2)]
		}
		g.members[mb.id] = mb
		g.order = append(g.order, mb.id)
		if rng.IntN(6) == 0 {
			continue // no target yet
		}
		a := map[TopicID][]int32{}
		for _, t := range topics {
			var ps []int32
			for p := range int32(t.Partitions + 1) {
				if rng.IntN(4) == 0 {
					ps = append(ps, p)
				}
			}
			if len(ps) > 0 || rng.IntN(10) == 0 {
				a[t.ID] = ps
			}
		}
		g.target[mb.id] = a
	}
	return g
}

// TestBuildTargetSameAsReference: buildTarget gives the target, records and
// updated member's target that refBuildTarget gives, on random groups and
// updates (a member changing its subscription, a new member, a static
// member rejoining under a new id), under both subscription types and
// every served profile; twice in a row (the kept Java orders of the targets
// are then in use) and after a target record changed a target.
func TestBuildTargetSameAsReference(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 600
	}
	profiles := []version.Profile{version.V4_0_0.Profile(), version.V4_3_0.Profile(), version.V4_4_0.Profile()}
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 0x7ab))
		var topics Topics
		for i := range 1 + rng.IntN(5) {
			name := fmt.Sprintf("t%d", i)
			topics = append(topics, Topic{Name: name, ID: cabTopic(name), Partitions: rng.IntN(9)})
		}
		p := profiles[rng.IntN(len(profiles))]
		cfg := Config{JavaVersion: []int{0, 17, 21}[rng.IntN(3)]}
		m, err := New(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		g := randomGroup(rng, topics)
		var old, updated *member
		switch k := rng.IntN(3); {
		case k == 0 && len(g.order) > 0: // a member changes its subscription
			old = g.members[g.order[rng.IntN(len(g.order))]]
			updated = old.clone()
			updated.setSubscribed(sortedSet(append(slices.Clone(updated.subscribed), topics[rng.IntN(len(topics))].Name)))
		case k == 1 && len(g.staticMembers) > 0: // a static member rejoins under a new id
			inst := slices.Sorted(maps.Keys(g.staticMembers))[0]
			updated = g.members[g.staticMembers[inst]].clone()
			updated.id = "rejoined"
		default: // a new member
			updated = newMember("joiner")
			updated.setSubscribed(sortedSet([]string{topics[0].Name, "missing"}))
		}
		subType := assignor.SubscriptionType(rng.IntN(2))
		what := fmt.Sprintf("seed %d (%s, %s, %d members, updated %s)", seed, p.Version, subType, len(g.order), updated.id)
		check := func(when string) {
			t.Helper()
			wantMine, wantRecs, wantErr := refBuildTarget(m, g, topics, 6, old, updated, subType, 1234)
			mine, recs, err := m.buildTarget(g, topics, 6, old, updated, subType, 1234)
			switch {
			case (wantErr == nil) != (err == nil) || (err != nil && err.Error() != wantErr.Error()):
				t.Fatalf("%s %s: error %v, reference %v", what, when, err, wantErr)
			case !reflect.DeepEqual(mine, wantMine):
				t.Fatalf("%s %s: updated member's target %v, reference %v", what, when, mine, wantMine)
			case !reflect.DeepEqual(recs, wantRecs):
				t.Fatalf("%s %s: records\n%v\nreference\n%v", what, when, recs, wantRecs)
			}
		}
		check("first")
		check("again")
		if len(g.order) > 0 {
			// A target record changes one member's target: the list kept
			// with the old one must go.
			id := g.order[rng.IntN(len(g.order))]
			rec := m.targetRecord(g.id, id, map[TopicID][]int32{topics[0].ID: {0, 1, 2, 3, 4, 5, 6, 7}})
			m.rp.groups[g.id] = g
			if err := m.rp.apply(rec); err != nil {
				t.Fatal(err)
			}
			check("after a target record")
		}
	}
}
