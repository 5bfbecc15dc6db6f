package groupreq

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestOffsetCommit: topics and partitions in order, no leader epoch, the
// member's identity as given, topic ids only where named.
func TestOffsetCommit(t *testing.T) {
	id := "static-1"
	req := OffsetCommit("g", "m-1", &id, 7, map[string]map[int32]int64{"b": {1: 10, 0: 5}, "a": {2: 3}}, map[string][16]byte{"b": {9}})
	if req.Group != "g" || req.MemberID != "m-1" || req.InstanceID == nil || *req.InstanceID != id || req.Generation != 7 {
		t.Errorf("identity %q %q %v %d", req.Group, req.MemberID, req.InstanceID, req.Generation)
	}
	var got []string
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, fmt.Sprintf("%s%v-%d@%d/%d", rt.Topic, rt.TopicID[0], rp.Partition, rp.Offset, rp.LeaderEpoch))
		}
	}
	if want := "a0-2@3/-1 b9-0@5/-1 b9-1@10/-1"; strings.Join(got, " ") != want {
		t.Errorf("partitions %v, want %s", got, want)
	}
	if req := OffsetCommit("g", "", nil, -1, nil, nil); req.InstanceID != nil || len(req.Topics) != 0 {
		t.Errorf("empty commit %+v", req)
	}
}

func TestCheckNew(t *testing.T) {
	if err := CheckNew("share", "m1", "g", nil); err != nil {
		t.Errorf("a whole member refused: %v", err)
	}
	bad := errors.New("no topics")
	err := CheckNew("consumer", "", "", bad)
	if err == nil || !errors.Is(err, bad) || !strings.HasPrefix(err.Error(), `consumer member "": member name is empty`) || !strings.Contains(err.Error(), "INVALID_REQUEST") {
		t.Errorf("CheckNew said %v", err)
	}
}

func TestMemberIDsAreJavaUUIDs(t *testing.T) {
	a, b := NewMemberID(), NewMemberID()
	if len(a) != 22 || a == b {
		t.Fatalf("member ids %q %q", a, b)
	}
}
