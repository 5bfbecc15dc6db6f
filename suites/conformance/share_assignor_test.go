package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/differential"
)

// TestShareAssignorMatchesKafka: which member keeps which partition when the
// share assignor splits one topic (SimpleHomogeneousAssignmentBuilder)
// follows Java's hash order of TopicIdPartition, so it depends on the topic
// id, which the differential run cannot pin (the broker makes its own).
// Here the reference gets the broker's topic id, and every answer of a
// sequence of joins and heartbeats must be the broker's, partitions
// included, for several partition and member counts.
func TestShareAssignorMatchesKafka(t *testing.T) {
	vs := shareVersions()
	if len(vs) == 0 {
		t.Skipf("none of the tested releases (%v) has production-ready share groups", clustertest.Versions())
	}
	for _, v := range vs {
		t.Run(v.String(), func(t *testing.T) {
			c := clustertest.Start(t, cluster.Config{Version: v.String(), Nodes: 1, Settings: differential.Settings(v.String())})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			for _, tc := range []struct{ partitions, members int }{{3, 2}, {5, 3}, {7, 3}, {4, 3}, {2, 3}} {
				topic := fmt.Sprintf("sa-%d-%d", tc.partitions, tc.members)
				if _, err := adm.CreateTopic(ctx, int32(tc.partitions), 1, nil, topic); err != nil {
					t.Fatal(err)
				}
				var img consumergroup.Topic
				for i := 0; ; i++ {
					tds, err := adm.ListTopics(ctx, topic)
					if err == nil && tds.Has(topic) && len(tds[topic].Partitions) == tc.partitions {
						img = consumergroup.Topic{Name: topic, ID: tds[topic].ID, Partitions: tc.partitions}
						break
					}
					if i > 100 {
						t.Fatalf("topic %s not in the metadata: %v", topic, err)
					}
					time.Sleep(100 * time.Millisecond)
				}
				compareShareSplit(ctx, t, cl, v.Profile(), img, "g-"+topic, tc.members)
			}
		})
	}
}

func compareShareSplit(ctx context.Context, t *testing.T, cl *kgo.Client, p version.Profile, img consumergroup.Topic, group string, members int) {
	t.Helper()
	cfg := coordinator.Config{Topics: consumergroup.Topics{img}, Share: coordinator.ShareConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second}}
	if p.ShareAssignmentInterval {
		zero := time.Duration(0)
		cfg.Share.AssignmentInterval = &zero
	}
	ref, err := coordinator.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(0)
	render := func(r *kmsg.ShareGroupHeartbeatResponse) string {
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode).Error()
		}
		s := fmt.Sprintf("epoch=%d", r.MemberEpoch)
		if r.Assignment != nil {
			var ps []int32
			for _, tp := range r.Assignment.TopicPartitions {
				ps = append(ps, tp.Partitions...)
			}
			slices.Sort(ps)
			s += fmt.Sprintf(" assignment=%v", ps)
		}
		return s
	}
	epochs := map[string]int32{}
	step := func(member string, join bool) {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epochs[member]
		if join {
			req.MemberEpoch, req.SubscribedTopicNames = 0, []string{img.Name}
		}
		o, err := ref.Submit(now, coordinator.Client{ID: "c", Host: "/127.0.0.1"}, req)
		if err != nil {
			t.Fatal(err)
		}
		ref.Tick(now)
		want := render(o.Response.(*kmsg.ShareGroupHeartbeatResponse))
		got, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if g := render(got); g != want {
			t.Errorf("%s %d partitions: %s (epoch %d): Kafka %s, reference %s", group, img.Partitions, member, req.MemberEpoch, g, want)
		}
		epochs[member] = got.MemberEpoch
	}
	// The group coordinator reads topics from its own metadata image, which
	// can lag the topic's creation: a probe group's member joins until the
	// broker has initialized the topic for it, then leaves.
	probe := "probe-" + group
	for i := 0; ; i++ {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = probe, "p", 0, []string{img.Name}
		if _, err := req.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		if shareInitialized(ctx, cl, probe, img) {
			req.MemberEpoch, req.SubscribedTopicNames = -1, nil
			if _, err := req.RequestWith(ctx, cl); err != nil {
				t.Fatal(err)
			}
			break
		}
		if i > 100 {
			t.Fatalf("the broker never initialized %s for a probe group", img.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	step("m-0", true)
	awaitShareInit(ctx, t, cl, group, img)
	step("m-0", false)
	for i := 1; i < members; i++ {
		step(fmt.Sprintf("m-%d", i), true)
	}
	for i := range members {
		step(fmt.Sprintf("m-%d", i), false)
	}
	// One leaves; the others take its partitions.
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.Version = 1
	leave.GroupID, leave.MemberID, leave.MemberEpoch = group, "m-0", -1
	if _, err := ref.Submit(now, coordinator.Client{ID: "c", Host: "/127.0.0.1"}, leave); err != nil {
		t.Fatal(err)
	}
	if _, err := leave.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < members; i++ {
		step(fmt.Sprintf("m-%d", i), false)
	}
}

// awaitShareInit polls DescribeShareGroupOffsets until the broker has
// initialized every partition of the group's topic.
func awaitShareInit(ctx context.Context, t *testing.T, cl *kgo.Client, group string, img consumergroup.Topic) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if shareInitialized(ctx, cl, group, img) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s: the broker did not initialize %s's share-partitions", group, img.Name)
}

func shareInitialized(ctx context.Context, cl *kgo.Client, group string, img consumergroup.Topic) bool {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false
	}
	n := 0
	for _, g := range resp.Groups {
		for _, tp := range g.Topics {
			if strings.EqualFold(tp.Topic, img.Name) {
				n += len(tp.Partitions)
			}
		}
	}
	return n == img.Partitions
}
