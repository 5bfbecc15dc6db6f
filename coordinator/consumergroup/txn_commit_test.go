package consumergroup_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestTxnOffsetCommitFencing checks the fencing of TxnOffsetCommit in a
// consumer group (OffsetMetadataManager.validateTransactionalOffsetCommit):
// STALE_MEMBER_EPOCH becomes ILLEGAL_GENERATION, and a transactional
// producer without group metadata may commit. The coordinator does not
// serve TxnOffsetCommit (a transaction coordinator's request), so no vector
// can send one; the other fencing rules are in
// coordinator/testdata/consumer/offset_commit_fencing.txt. Derived from
// OffsetMetadataManagerTest's transactional consumer-group cases
// (Apache-2.0).
func TestTxnOffsetCommitFencing(t *testing.T) {
	foo := consumergroup.Topic{Name: "foo", ID: topicID("foo"), Partitions: 2}
	join := func(t *testing.T, m *consumergroup.Manager, member string, epoch int32, owned ...int32) {
		t.Helper()
		req := javaHeartbeat(member, epoch, "foo")
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: foo.ID, Partitions: owned})
		}
		if resp := heartbeatAt0(m, req, consumergroup.Topics{foo}); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at epoch %d: error %d", member, epoch, resp.ErrorCode)
		}
	}
	check := func(t *testing.T, m *consumergroup.Manager, c consumergroup.OffsetCommitCheck, want string) {
		t.Helper()
		c.GroupID, c.Transactional = "g", true
		err := m.ValidateOffsetCommit(c)
		got := "ok"
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("TxnOffsetCommit member=%q epoch=%d: got %q, want %q", c.MemberID, c.MemberEpoch, got, want)
		}
	}
	part := func(p int32) []consumergroup.CommitPartition {
		return []consumergroup.CommitPartition{{Topic: "foo", TopicID: foo.ID, Partition: p}}
	}

	t.Run("4.2.0", func(t *testing.T) {
		m, err := consumergroup.New(version.MustParse("4.2.0").Profile(), consumergroup.Config{})
		if err != nil {
			t.Fatal(err)
		}
		join(t, m, "A", 0) // A: epoch 1, foo-0 and foo-1
		check(t, m, consumergroup.OffsetCommitCheck{MemberID: "A", MemberEpoch: 2, Partitions: part(0)},
			"ILLEGAL_GENERATION: The received member epoch 2 does not match the expected member epoch 1.")
		check(t, m, consumergroup.OffsetCommitCheck{MemberID: "", MemberEpoch: -1, Partitions: part(0)}, "ok")
		// A non-transactional commit of the same kind is STALE_MEMBER_EPOCH.
		c := consumergroup.OffsetCommitCheck{GroupID: "g", MemberID: "A", MemberEpoch: 2, APIVersion: 9, Partitions: part(0)}
		if err := m.ValidateOffsetCommit(c); err == nil || err.Error() != "STALE_MEMBER_EPOCH: The received member epoch 2 does not match the expected member epoch 1." {
			t.Errorf("OffsetCommit member=A epoch=2: %v", err)
		}
	})
	t.Run("4.3.0", func(t *testing.T) {
		zero := time.Duration(0)
		m, err := consumergroup.New(version.MustParse("4.3.0").Profile(), consumergroup.Config{AssignmentInterval: &zero})
		if err != nil {
			t.Fatal(err)
		}
		join(t, m, "A", 0)       // A: epoch 2, foo-0 and foo-1
		join(t, m, "B", 0)       // B: epoch 3; target A foo-0, B foo-1
		join(t, m, "A", 2, 0, 1) // A revokes foo-1
		join(t, m, "A", 2, 0)    // A: epoch 3, foo-0 since epoch 2
		// KIP-1251: foo-1 moved away from A; the error is ILLEGAL_GENERATION.
		check(t, m, consumergroup.OffsetCommitCheck{MemberID: "A", MemberEpoch: 2, Partitions: part(1)},
			"ILLEGAL_GENERATION: Partition foo-1 is not assigned or pending revocation for member.")
	})
}
