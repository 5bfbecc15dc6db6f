package consumergroup

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// randomAssignment draws partitions of the topics (and of a topic that is
// not in the metadata) with epochs.
func randomAssignment(rng *rand.Rand, ids []TopicID, parts int) assignment {
	out := assignment{}
	for _, t := range ids {
		if rng.IntN(3) == 0 {
			continue
		}
		ps := map[int32]int32{}
		for p := range int32(parts) {
			if rng.IntN(3) == 0 {
				ps[p] = int32(8 + rng.IntN(4))
			}
		}
		if len(ps) > 0 || rng.IntN(10) == 0 {
			out[t] = ps
		}
	}
	return out
}

func deepCopyAssignment(a assignment) assignment {
	if a == nil {
		return nil
	}
	return a.clone()
}

// TestReconcilerSameAsReference: the reconciler gives the member that the
// earlier, map-copying one (reconcile_reference_test.go) gives, on random
// members in every state, under every served profile, with and without a
// subscription change, owned partitions reported or not, subscriptions
// naming topics that exist, that do not, or none, regex topics, and
// targets in any order; and it leaves the member it was given alone.
func TestReconcilerSameAsReference(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 4000
	}
	profiles := []version.Profile{version.V4_0_0.Profile(), version.V4_2_0.Profile(), version.V4_3_0.Profile(), version.V4_4_0.Profile()}
	states := []records.MemberState{records.MemberStable, records.MemberUnrevokedPartitions, records.MemberUnreleasedPartitions, records.MemberUnknown}
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 0xcab))
		const parts = 6
		var topics Topics
		var ids []TopicID
		for i := range 1 + rng.IntN(5) {
			name := fmt.Sprintf("t%d", i)
			id := cabTopic(name)
			ids = append(ids, id)
			if rng.IntN(6) > 0 { // else: not (or no longer) in the metadata
				topics = append(topics, Topic{Name: name, ID: id, Partitions: parts})
			}
		}
		var names []string
		for i := range len(ids) + 1 {
			if rng.IntN(2) == 0 {
				names = append(names, fmt.Sprintf("t%d", i)) // t<len> never exists
			}
		}
		if rng.IntN(4) == 0 {
			// Many names: the member answers from a set of them.
			for i := range 20 {
				names = append(names, fmt.Sprintf("zz-%d", i))
			}
		}
		var regex []string
		if rng.IntN(4) == 0 {
			for i := range len(ids) {
				if rng.IntN(2) == 0 {
					regex = append(regex, fmt.Sprintf("t%d", i))
				}
			}
		}
		m := newMember("m")
		m.state = states[rng.IntN(len(states))]
		m.epoch = int32(9 + rng.IntN(3))
		m.prevEpoch = m.epoch - int32(rng.IntN(2))
		m.setSubscribed(sortedSet(names))
		m.assigned = randomAssignment(rng, ids, parts)
		m.pending = randomAssignment(rng, ids, parts)
		target := map[TopicID][]int32{}
		for t, ps := range randomAssignment(rng, ids, parts) {
			target[t] = slices.Sorted(maps.Keys(ps))
			if rng.IntN(8) == 0 { // any order, and a partition twice
				rng.Shuffle(len(target[t]), func(a, b int) { target[t][a], target[t][b] = target[t][b], target[t][a] })
				if len(target[t]) > 0 {
					target[t] = append(target[t], target[t][0])
				}
			}
		}
		owners := randomAssignment(rng, ids, parts)
		epochOf := func(t TopicID, p int32) int32 {
			if e, ok := owners[t][p]; ok {
				return e
			}
			return -1
		}
		var owned []kmsg.ConsumerGroupHeartbeatRequestTopic
		switch rng.IntN(3) {
		case 1:
			owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		case 2:
			for t, ps := range randomAssignment(rng, ids, parts) {
				owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t, Partitions: slices.Sorted(maps.Keys(ps))})
			}
			if owned == nil {
				owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			}
		}
		p := profiles[rng.IntN(len(profiles))]
		targetEpoch := int32(9 + rng.IntN(4))
		changed := rng.IntN(2) == 0

		resolved := map[TopicID]bool{}
		for _, n := range append(slices.Clone(m.subscribed), regex...) {
			if id, _, ok := topics.TopicByName(n); ok {
				resolved[id] = true
			}
		}
		ref := &refReconciler{profile: p, member: m, targetEpoch: targetEpoch, target: target,
			subscribedIDs: resolved, namesEmpty: len(m.subscribed) == 0 && len(regex) == 0,
			hasSubscriptionChanged: changed, partitionEpoch: epochOf, owned: owned}
		rc := &reconciler{profile: p, member: m, targetEpoch: targetEpoch, target: target,
			sub:                    subscription{topics: topics, member: m, regex: regex},
			hasSubscriptionChanged: changed, partitionEpoch: epochOf, owned: owned}

		before := m.clone()
		want, werr := ref.build()
		got, gerr := rc.build()
		what := fmt.Sprintf("seed %d (%s, %v epoch %d, target epoch %d, changed %t, subscribed %v regex %v, assigned %v pending %v, target %v, owned %v)",
			seed, p.Version, m.state, m.epoch, targetEpoch, changed, m.subscribed, regex, m.assigned, m.pending, target, owned)
		if !before.equal(m) {
			t.Fatalf("%s: the member was changed", what)
		}
		switch {
		case (werr == nil) != (gerr == nil):
			t.Fatalf("%s: reference error %v, error %v", what, werr, gerr)
		case werr != nil:
			if werr.Error() != gerr.Error() {
				t.Fatalf("%s: reference error %v, error %v", what, werr, gerr)
			}
		case !want.equal(got):
			t.Fatalf("%s:\nreference %v epoch %d prev %d assigned %v pending %v\ngot       %v epoch %d prev %d assigned %v pending %v",
				what, want.state, want.epoch, want.prevEpoch, want.assigned, want.pending, got.state, got.epoch, got.prevEpoch, got.assigned, got.pending)
		}
	}
}
