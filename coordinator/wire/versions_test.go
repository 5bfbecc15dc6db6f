package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestGroupVersionsMatchReference checks that for every release the
// versions this server advertises for a group-coordinator API are exactly
// the ones the reference coordinator serves (coordinator/versions.go): the
// two tables are kept apart (this one also covers the non-group APIs), and
// when they drift a client is told a version is served that the reference
// then refuses, or the other way round.
func TestGroupVersionsMatchReference(t *testing.T) {
	groupKeys := []kmsg.Key{
		kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.JoinGroup, kmsg.Heartbeat,
		kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups,
		kmsg.DeleteGroups, kmsg.OffsetDelete, kmsg.ConsumerGroupHeartbeat,
		kmsg.ConsumerGroupDescribe, kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe,
	}
	for _, v := range version.Served() {
		ref, err := coordinator.New(v.Profile(), coordinator.Config{})
		if err != nil {
			t.Fatal(err)
		}
		served := func(key kmsg.Key, ver int16) bool {
			req := kmsg.RequestForKey(int16(key))
			req.SetVersion(ver)
			_, err := ref.Submit(time.UnixMilli(0), coordinator.Client{ID: "c", Host: "/h"}, req)
			return err == nil || !strings.Contains(err.Error(), "is not served by Kafka")
		}
		adv := versionsFor(v, true, false)
		for _, key := range groupKeys {
			r, ok := adv[key]
			if share := key == kmsg.ShareGroupHeartbeat || key == kmsg.ShareGroupDescribe; share && v.Profile().ShareGroups != version.ShareProduction {
				// Share groups before 4.2: neither advertised nor served.
				if ok || served(key, 1) {
					t.Errorf("Kafka %s: %s advertised %v, served %v; want neither", v, kmsg.NameForKey(int16(key)), ok, served(key, 1))
				}
				continue
			}
			if !ok {
				t.Errorf("Kafka %s: %s not advertised", v, kmsg.NameForKey(int16(key)))
				continue
			}
			max := kmsg.RequestForKey(int16(key)).MaxVersion()
			for ver := int16(0); ver <= max; ver++ {
				want := ver >= r.lo && ver <= r.hi
				if got := served(key, ver); got != want {
					t.Errorf("Kafka %s: %s v%d: advertised %v (versions %d–%d), the reference serves it: %v",
						v, kmsg.NameForKey(int16(key)), ver, want, r.lo, r.hi, got)
				}
			}
		}
	}
}
