package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

// BenchmarkImageBuildCold builds the JRE base and the Kafka image from
// nothing but the Maven local repository (a fresh jar cache): what a new
// machine pays once. Run with -benchtime 1x.
func BenchmarkImageBuildCold(b *testing.B) {
	clustertest.NeedEngine(b)
	for range b.N {
		b.Setenv("GROUPQUAKE_CACHE", b.TempDir())
		img, err := cluster.EnsureImage(context.Background(), cluster.DefaultKafkaVersion, cluster.ImageOptions{Source: cluster.SourceBuild, Rebuild: true, RebuildBase: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(img.BuildTime.Seconds(), "s/build")
	}
}

// BenchmarkClusterStartWarm starts a cluster with the image cached, until
// it is ready (metadata lists every broker and a commit reads back), then
// records each node's memory.
func BenchmarkClusterStartWarm(b *testing.B) {
	clustertest.NeedEngine(b)
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes-%d", nodes), func(b *testing.B) {
			var total time.Duration
			var mem uint64
			for range b.N {
				start := time.Now()
				c, err := cluster.Start(context.Background(), cluster.Config{Nodes: nodes})
				if err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				for _, id := range c.NodeIDs() {
					m, err := c.NodeMemory(context.Background(), id)
					if err != nil {
						b.Fatal(err)
					}
					mem += m
				}
				if err := c.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/ready")
			b.ReportMetric(float64(mem)/float64(b.N*nodes)/(1<<20), "MB/node")
		})
	}
}
