package differential

import (
	"context"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
)

// nextRelease is what adding a Kafka release that changes nothing in group
// coordination amounts to: 4.4's profile under a new number. No package may
// refuse it or treat it differently from 4.4 because of its number; a
// release that changes something adds a profile field, which the packages
// then ask.
func nextRelease() version.Profile {
	p := version.V4_4_0.Profile()
	p.Version = version.Version(4<<16 | 5<<8 | 0)
	return p
}

// TestNextReleaseIsOneProfile: the server-side assignors, the cluster's
// broker settings, the differential settings and the reference coordinator
// beside a target all take a 4.5.0 profile derived from 4.4.0 and behave
// as for 4.4.0.
func TestNextReleaseIsOneProfile(t *testing.T) {
	next, last := nextRelease(), version.V4_4_0.Profile()
	for _, name := range []string{assignor.UniformName, assignor.RangeName} {
		if _, err := assignor.New(name, assignor.Profile(next)); err != nil {
			t.Errorf("assignor %s refuses Kafka %s: %v", name, next.Version, err)
		}
	}
	if got, want := cluster.FastGroupSettings(next, 1), cluster.FastGroupSettings(last, 1); !maps.Equal(got, want) {
		t.Errorf("cluster settings for %s differ from 4.4.0's:\n%v\n%v", next.Version, got, want)
	}
	if got, want := SettingsFor(next), SettingsFor(last); !maps.Equal(got, want) || got["group.consumer.assignment.interval.ms"] != "0" {
		t.Errorf("differential settings for %s: %v, 4.4.0's: %v", next.Version, got, want)
	}
	if got, want := next.APIVersions(), last.APIVersions(); !maps.Equal(got, want) {
		t.Errorf("request versions for %s differ from 4.4.0's:\n%v\n%v", next.Version, got, want)
	}
	if _, err := consumergroup.New(next, consumergroup.Config{}); err != nil {
		t.Errorf("consumer-group engine refuses Kafka %s: %v", next.Version, err)
	}

	// The reference coordinator the runner builds serves the first member
	// of a new group as 4.4.0 does.
	topics := consumergroup.Topics{{Name: "t", ID: [16]byte{1}, Partitions: 3}}
	ref, err := coordinator.New(next, referenceConfig(next, topics, 0))
	if err != nil {
		t.Fatalf("reference coordinator for %s: %v", next.Version, err)
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "g", "m", 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{"t"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, _, err := ref.Handle(time.UnixMilli(0), req)
	if err != nil {
		t.Fatalf("ConsumerGroupHeartbeat v1 on %s: %v", next.Version, err)
	}
	hb := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if err := kerr.ErrorForCode(hb.ErrorCode); err != nil || hb.MemberEpoch != last.FirstMemberEpoch {
		t.Errorf("first member on %s: epoch %d, %v; want epoch %d as on 4.4.0", next.Version, hb.MemberEpoch, err, last.FirstMemberEpoch)
	}
}

// TestNextReleaseRunsDifferential runs the differential mode's own vectors
// and the coordinator's consumer-protocol vectors against the embedded cluster (4.4.0) twice, the reference as 4.4.0 and as
// the derived 4.5.0: the runner takes the new profile and every answer
// compares as it does for 4.4.0.
func TestNextReleaseRunsDifferential(t *testing.T) {
	secs, err := LoadDir(filepath.Join("testdata"), "kafkaapis")
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := LoadDir(filepath.Join("..", "..", "coordinator", "testdata"), "consumer")
	if err != nil {
		t.Fatal(err)
	}
	secs = append(secs, consumer...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: "4.4.0", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close(context.Background())
	addr := emb.Bootstrap()[0]
	last, err := Run(ctx, Target{Name: "embedded", Version: "4.4.0", Addr: addr}, secs, Options{Namespace: "a", Wait: 3 * time.Second})
	if err != nil {
		t.Fatalf("4.4.0: %v", err)
	}
	next, err := Run(ctx, Target{Name: "embedded", Profile: nextRelease(), Addr: addr}, secs, Options{Namespace: "b", Wait: 3 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", nextRelease().Version, err)
	}
	if next.Version != "4.5.0" {
		t.Errorf("report names version %q, want 4.5.0", next.Version)
	}
	if len(last.Results) == 0 || len(next.Results) != len(last.Results) {
		t.Fatalf("4.4.0 gave %d results, 4.5.0 %d", len(last.Results), len(next.Results))
	}
	for i := range last.Results {
		a, b := last.Results[i], next.Results[i]
		if a.Pos != b.Pos || a.Outcome != b.Outcome || a.Reference != b.Reference {
			t.Errorf("%s: 4.4.0 %s, 4.5.0 %s at %s (%s)", a.Pos, a.Outcome, b.Outcome, b.Pos, b.Reference)
		}
	}
	t.Logf("%d results, %d same, %d different, %d skipped on both", len(last.Results), last.Count(Same), last.Count(Different), last.Count(Skipped))
}
