package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/groupquake/groupquake/cmd/groupquake/scale"
)

// TestScaleReportJSON pins one report of scale.json (docs/schema/scale.json):
// every key, in order, with durations in seconds.
func TestScaleReportJSON(t *testing.T) {
	rep := &scale.Report{
		Protocol: scale.Consumer, Members: 3, Partitions: 6, Conns: 4, MaxShared: 2,
		Phases: []scale.Phase{{Name: "join", Members: 3, ToStable: 1500 * time.Millisecond, Epoch: 7}},
	}
	ph := &rep.Phases[0]
	ph.Dropped, ph.Void, ph.Conns, ph.PeakConns, ph.Dialed = map[string]int64{"Heartbeat": 1}, map[string]int64{"JoinGroup": 2}, 3, 4, 5
	ph.Errors, ph.ErrorSamples = map[string]int64{"transport": 6}, map[string]string{"transport": "EOF"}
	rep.RSSPerMember, rep.HeapPerMember, rep.RSS, rep.MaxRSS, rep.Goroutines = 1.5, 2.5, 10, 20, 30
	rep.SteadyCPUPerMember, rep.BrokerMemory, rep.Overlaps = 3.5, map[int32]uint64{1: 40}, 1
	b, err := json.Marshal(scaleReportOf(rep))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocol":"consumer","members":3,"partitions":6,"connections":4,"max_shared_connections":2,` +
		`"phases":[{"name":"join","members":3,"to_stable_s":1.5,"paused_partitions":0,"pause_p50_s":0,"pause_p99_s":0,"pause_max_s":0,` +
		`"answered":0,"rps":0,"by_api":{},"heartbeat_p50_s":0,"heartbeat_p99_s":0,"heartbeat_wait_p50_s":0,"heartbeat_wait_p99_s":0,` +
		`"dropped":{"Heartbeat":1},"void":{"JoinGroup":2},"connections":3,"peak_connections":4,"dialed":5,` +
		`"errors":{"transport":6},"error_samples":{"transport":"EOF"},"harness_cpu_s":0,"epoch":7}],` +
		`"rss_bytes_per_member":1.5,"heap_bytes_per_member":2.5,"rss_bytes":10,"max_rss_bytes":20,"goroutines":30,` +
		`"steady_cpu_us_per_member_s":3.5,"broker_memory_bytes":{"1":40},"overlaps":1}`
	if string(b) != want {
		t.Errorf("scale report JSON\n got %s\nwant %s", b, want)
	}
}
