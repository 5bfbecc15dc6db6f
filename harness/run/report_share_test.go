package run

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// TestReportOfShareRun: the report of a share run carries the plan's share settings (the share
// lanes count archives at its delivery count limit) and names the share protocol.
func TestReportOfShareRun(t *testing.T) {
	p := Plan{Seed: 3, Group: "g", Topics: []history.TopicPlan{{Name: "t", Partitions: 1}},
		Members: []MemberPlan{{Name: "m1", Kind: "share", Protocol: history.ProtocolShare}},
		Share:   &history.SharePlan{DeliveryCountLimit: 3, RecordLockMs: 5000}}
	r := ReportOf(t.TempDir(), Judged{Plan: p})
	if r.Share == nil || r.Share.DeliveryCountLimit != 3 {
		t.Errorf("the report's share settings: %+v, want the plan's (limit 3)", r.Share)
	}
	if r.Run.Protocol != history.ProtocolShare || !strings.Contains(r.Title, "share protocol") {
		t.Errorf("protocol %q, title %q: want the share protocol named", r.Run.Protocol, r.Title)
	}
}
