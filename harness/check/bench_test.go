package check

import (
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// BenchmarkCheckAll1M runs every checker and the rebalance cost (Judge) over a generated history of at least 1,000,000 events
// (consumer protocol, 6 members, 12 partitions, faults included). Run it with
//
//	go test -run '^$' -bench CheckAll1M -benchtime 3x ./harness/check/
func BenchmarkCheckAll1M(b *testing.B) {
	events, obs, plan := genHistory(b, simConfig{seed: 1, protocol: history.ProtocolConsumer, members: 6, partitions: 12, steps: 640_000})
	if len(events) < 1_000_000 {
		b.Fatalf("generated %d events, want at least 1,000,000: raise steps", len(events))
	}
	b.ReportAllocs()
	for b.Loop() {
		rep := Judge(events, obs, plan, WithReplay(replayFor(history.ProtocolConsumer)))
		if !rep.Holds {
			for _, v := range rep.Verdicts {
				if !v.Holds {
					b.Fatalf("%s fails on a valid history: %+v", v.Name, first(v.Violations, 3))
				}
			}
		}
	}
	b.ReportMetric(float64(len(events)), "events")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}
