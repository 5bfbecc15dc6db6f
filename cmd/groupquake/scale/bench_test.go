package scale_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/groupquake/groupquake/cmd/groupquake/scale"
)

// BenchmarkScaleEmbedded runs a scale run per protocol and size on the
// embedded cluster (the reference coordinator in this process, so the
// harness's CPU includes the coordinator's): the time to a stable group
// after the join wave and after one leave, and the memory per member.
// The container-cluster numbers are `groupquake scale` (README, Scale).
// Run with -benchtime 1x.
func BenchmarkScaleEmbedded(b *testing.B) {
	for _, p := range []scale.Protocol{scale.Classic, scale.Consumer} {
		for _, n := range []int{100, 500} {
			b.Run(fmt.Sprintf("%s-%d", p, n), func(b *testing.B) {
				for range b.N {
					e := embedded(b)
					o := options(p, n, 200)
					o.Restart = false
					rep, err := scale.Run(context.Background(), e, o)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(rep.Phases[0].ToStable.Seconds()*1000, "ms-join-stable")
					b.ReportMetric(rep.Phases[1].ToStable.Seconds()*1000, "ms-leave-stable")
					b.ReportMetric(rep.RSSPerMember/1024, "KB-rss/member")
					b.ReportMetric(rep.HeapPerMember/1024, "KB-heap/member")
				}
			})
		}
	}
}
