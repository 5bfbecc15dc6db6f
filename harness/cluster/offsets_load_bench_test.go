package cluster_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/replay"
)

// brokerLoad is what a broker's group coordinator logs when it has loaded
// a __consumer_offsets partition (CoordinatorRuntime.scheduleLoadOperation).
type brokerLoad struct {
	Partition           string
	Millis, SchedulerMs int64
	Records, Bytes      int64
}

// Two forms of the line: "… in 812ms where 3ms was spent in the scheduler.
// Loaded 1000004 records which total to 98765432 bytes." (Kafka 4.0 to
// 4.4), and "… and LoadSummary=LoadSummary(startTimeMs=…, endTimeMs=…,
// schedulerQueueTimeMs=…, numRecords=…, numBytes=…)." (later trunk).
var (
	loadLine    = regexp.MustCompile(`Finished loading of metadata from (__consumer_offsets-\d+) with epoch \d+ in (\d+)ms where (\d+)ms was spent in the scheduler\. Loaded (\d+) records which total to (\d+) bytes`)
	loadSummary = regexp.MustCompile(`Finished loading of metadata from (__consumer_offsets-\d+) with epoch \d+ and LoadSummary=\S*\(startTimeMs=(\d+), endTimeMs=(\d+), schedulerQueueTimeMs=(\d+), numRecords=(\d+), numBytes=(\d+)\)`)
)

// brokerLoads returns every load of partition that log reports, in order.
func brokerLoads(log, partition string) []brokerLoad {
	var out []brokerLoad
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	for _, line := range strings.Split(log, "\n") {
		if m := loadLine.FindStringSubmatch(line); m != nil && m[1] == partition {
			out = append(out, brokerLoad{Partition: m[1], Millis: num(m[2]), SchedulerMs: num(m[3]), Records: num(m[4]), Bytes: num(m[5])})
		} else if m := loadSummary.FindStringSubmatch(line); m != nil && m[1] == partition {
			out = append(out, brokerLoad{Partition: m[1], Millis: num(m[3]) - num(m[2]), SchedulerMs: num(m[4]), Records: num(m[5]), Bytes: num(m[6])})
		}
	}
	return out
}

// nextBrokerLoad waits until node id's log reports a load of partition
// beyond the first before ones: a restarted broker serves before its group
// coordinator has loaded the partition (the load is scheduled once the
// partition's leadership is replayed, and runs on its own threads).
func nextBrokerLoad(ctx context.Context, c *cluster.Cluster, id cluster.NodeID, partition string, before int) (brokerLoad, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		log, err := c.Logs(ctx, id)
		if err != nil {
			return brokerLoad{}, err
		}
		if loads := brokerLoads(log, partition); len(loads) > before {
			return loads[before], nil
		}
		if time.Now().After(deadline) {
			return brokerLoad{}, fmt.Errorf("node %d has not logged \"Finished loading of metadata from %s …\" within 2 minutes of its restart; its lines about %s:\n%s", id, partition, partition, grepLines(log, partition))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func grepLines(log, sub string) string {
	var b strings.Builder
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, sub) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestBrokerLoads(t *testing.T) {
	log := `[2026-12-03 10:00:00,000] INFO [GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-0 with epoch 0 in 3ms where 1ms was spent in the scheduler. Loaded 0 records which total to 0 bytes. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)
[2026-12-03 10:00:01,000] INFO [GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-1 with epoch 0 in 9ms where 1ms was spent in the scheduler. Loaded 7 records which total to 70 bytes. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)
[2026-12-03 10:05:00,000] INFO [GroupCoordinator id=1] Scheduling loading of metadata from __consumer_offsets-0 with epoch 2 (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)
[2026-12-03 10:05:00,000] INFO [GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-0 with epoch 2 in 2417ms where 12ms was spent in the scheduler. Loaded 1000004 records which total to 98765432 bytes. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)`
	got := brokerLoads(log, "__consumer_offsets-0")
	want := []brokerLoad{
		{Partition: "__consumer_offsets-0", Millis: 3, SchedulerMs: 1},
		{Partition: "__consumer_offsets-0", Millis: 2417, SchedulerMs: 12, Records: 1000004, Bytes: 98765432},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("brokerLoads = %+v, want %+v", got, want)
	}
	summary := `INFO [GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-0 with epoch 1 and LoadSummary=LoadSummary(startTimeMs=1000, endTimeMs=1750, schedulerQueueTimeMs=4, numRecords=500, numBytes=6000).`
	got = brokerLoads(summary, "__consumer_offsets-0")
	if want := []brokerLoad{{Partition: "__consumer_offsets-0", Millis: 750, SchedulerMs: 4, Records: 500, Bytes: 6000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("brokerLoads(LoadSummary form) = %+v, want %+v", got, want)
	}
	if got := brokerLoads(log, "__consumer_offsets-2"); len(got) != 0 {
		t.Errorf("brokerLoads of a partition never loaded = %+v, want none", got)
	}
}

// BenchmarkOffsetsLoad1M writes a __consumer_offsets partition of about
// 1,000,000 records on a 1-node cluster (offsets.topic.num.partitions=1),
// restarts the node gracefully, reads how long the broker says it took to
// load the partition, then fetches the partition and replays it through the
// reference coordinator (replay.Load, the broker's whole load), timing the
// replay and the heap it allocates (what the loaded coordinator keeps is
// BenchmarkLoad's MB-live in harness/replay). The records: 4 groups (3
// classic, 1 consumer-protocol, each joined by one kgo member that then
// leaves, so group records exist) and 10,000 admin OffsetCommits of 100
// partitions each, 16 in flight. Run it alone, with -benchtime 1x (about
// a minute an iteration on 2 cores when they are not busy elsewhere):
//
//	go test -run '^$' -bench OffsetsLoad1M -benchtime 1x -timeout 20m ./harness/cluster/
func BenchmarkOffsetsLoad1M(b *testing.B) {
	clustertest.NeedEngine(b)
	const (
		topic      = "bench"
		partitions = 100
		commits    = 10_000
		inFlight   = 16
		partition  = "__consumer_offsets-0"
	)
	groups := []string{"bench-0", "bench-1", "bench-2", "bench-3"}
	ctx := context.Background()
	var sum struct{ records, brokerRecords, diskMB, brokerMs, replayMs, replayAllocMB, fetchMs float64 }
	for range b.N {
		c, err := cluster.Start(ctx, cluster.Config{Nodes: 1, HeapMB: 512, Settings: map[string]string{"offsets.topic.num.partitions": "1"}, Logf: b.Logf})
		if err != nil {
			b.Fatal(err)
		}
		// Each iteration's cluster goes before the next starts, so no idle
		// broker shares the machine with the one measured.
		closed := false
		closeCluster := func() {
			if !closed {
				closed = true
				if err := c.Close(ctx); err != nil {
					b.Error(err)
				}
			}
		}
		b.Cleanup(closeCluster)
		clustertest.CreateTopic(b, c, topic, partitions)
		for i, g := range groups {
			if err := joinAndLeave(ctx, c.Bootstrap(), g, topic, i == len(groups)-1); err != nil {
				b.Fatal(err)
			}
		}
		adm, err := c.Admin()
		if err != nil {
			b.Fatal(err)
		}
		wstart := time.Now()
		if err := commitMany(ctx, adm, groups, topic, partitions, commits, inFlight); err != nil {
			b.Fatal(err)
		}
		wrote := time.Since(wstart)
		end, size := partitionSize(ctx, b, adm, 0)
		adm.Close()
		b.Logf("wrote %d commits of %d partitions in %s (%.0f records/s); %s ends at offset %d, %d bytes on disk",
			commits, partitions, wrote.Round(time.Millisecond), float64(commits*partitions)/wrote.Seconds(), partition, end, size)

		log, err := c.Logs(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		loadsBefore := len(brokerLoads(log, partition))
		rstart := time.Now()
		if err := c.RestartNode(ctx, 1, false); err != nil {
			b.Fatal(err)
		}
		restarted := time.Since(rstart)
		load, err := nextBrokerLoad(ctx, c, 1, partition, loadsBefore)
		if err != nil {
			b.Fatal(err)
		}
		loaded := time.Since(rstart)
		if load.Records < commits*partitions/2 {
			b.Fatalf("after the restart the broker loaded %s with %d records, want about %d: the load line read is not the restart's", partition, load.Records, commits*partitions)
		}
		b.Logf("broker: graceful restart %s (serving again), its log shows the load %s after the restart began: loaded %s in %d ms (%d ms in the scheduler), %d records, %d bytes",
			restarted.Round(time.Millisecond), loaded.Round(time.Millisecond), partition, load.Millis, load.SchedulerMs, load.Records, load.Bytes)

		fstart := time.Now()
		recs, err := fetchPartition(ctx, c.Bootstrap(), 0)
		if err != nil {
			b.Fatal(err)
		}
		fetched := time.Since(fstart)

		p := version.MustParse(c.Version()).Profile()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rpstart := time.Now()
		co, err := replay.Load(p, recs)
		replayed := time.Since(rpstart)
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		st := co.State()
		if len(st.Offsets) < len(groups)*partitions {
			b.Fatalf("the replay holds %d committed offsets, want at least %d (%d groups × %d partitions)", len(st.Offsets), len(groups)*partitions, len(groups), partitions)
		}
		b.Logf("groupquake: fetched %d records of %s in %s (%.1f MB of Go heap with them); replayed them in %s (%.0f records/s), %.1f MB allocated; %d offsets, %d classic groups",
			len(recs), partition, fetched.Round(time.Millisecond), float64(before.HeapAlloc)/(1<<20), replayed.Round(time.Millisecond), float64(len(recs))/replayed.Seconds(),
			float64(allocated)/(1<<20), len(st.Offsets), len(st.Classic))

		closeCluster()
		sum.records += float64(len(recs))
		sum.brokerRecords += float64(load.Records)
		sum.diskMB += float64(size) / (1 << 20)
		sum.brokerMs += float64(load.Millis)
		sum.replayMs += float64(replayed.Milliseconds())
		sum.replayAllocMB += float64(allocated) / (1 << 20)
		sum.fetchMs += float64(fetched.Milliseconds())
	}
	n := float64(b.N)
	b.ReportMetric(sum.records/n, "records")
	b.ReportMetric(sum.brokerRecords/n, "broker-records")
	b.ReportMetric(sum.diskMB/n, "MB-on-disk")
	b.ReportMetric(sum.brokerMs/n, "broker-load-ms")
	b.ReportMetric(sum.brokerRecords/(sum.brokerMs/1000), "broker-records/s")
	b.ReportMetric(sum.replayMs/n, "replay-ms")
	b.ReportMetric(sum.records/(sum.replayMs/1000), "replay-records/s")
	b.ReportMetric(sum.replayAllocMB/n, "replay-MB-alloc")
	b.ReportMetric(sum.fetchMs/n, "fetch-ms")
}

// joinAndLeave has one kgo member join group on topic until it owns
// partitions, commit nothing, and leave: the group's records (GroupMetadata
// for classic, the consumer-group records with consumer) are in the log.
func joinAndLeave(ctx context.Context, seeds []string, group, topic string, consumerProtocol bool) error {
	assigned := make(chan struct{}, 1)
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	}
	if consumerProtocol {
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go func() {
		for jctx.Err() == nil {
			cl.PollFetches(jctx)
		}
	}()
	select {
	case <-assigned:
		return nil
	case <-jctx.Done():
		return fmt.Errorf("group %s: no partitions assigned within a minute", group)
	}
}

// commitMany sends n admin OffsetCommits (generation -1, no member) of
// partitions partitions each, spread over groups, inFlight at a time.
func commitMany(ctx context.Context, adm *kadm.Client, groups []string, topic string, partitions, n, inFlight int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, inFlight)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				offs := kadm.Offsets{}
				for p := range partitions {
					offs.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: i, LeaderEpoch: -1})
				}
				g := groups[int(i)%len(groups)]
				resp, err := adm.CommitOffsets(ctx, g, offs)
				if err == nil {
					err = resp.Error()
				}
				if err != nil {
					errs <- fmt.Errorf("commit %d of group %s: %w", i, g, err)
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(func() (out []error) {
		for err := range errs {
			out = append(out, err)
		}
		return out
	}()...)
}

// partitionSize returns the end offset of __consumer_offsets-part and its
// size on disk as the broker describes its log directory.
func partitionSize(ctx context.Context, b *testing.B, adm *kadm.Client, part int32) (int64, int64) {
	b.Helper()
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		b.Fatal(err)
	}
	end, ok := ends.Lookup("__consumer_offsets", part)
	if !ok || end.Err != nil {
		b.Fatalf("end offset of __consumer_offsets-%d: %v", part, end.Err)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "__consumer_offsets" && p.Partition == part {
				size += p.Size
			}
		})
	})
	return end.Offset, size
}

// fetchPartition reads every record of __consumer_offsets-part from its
// start to its high watermark with the broker's bytes, as harness/observe
// reads a group's partition (all groups kept here).
func fetchPartition(ctx context.Context, seeds []string, part int32) ([]history.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchMaxPartitionBytes(32<<20), kgo.FetchMaxBytes(64<<20),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": {part: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		return nil, err
	}
	end, _ := ends.Lookup("__consumer_offsets", part)
	var out []history.Record
	next, empty := int64(0), 0
	for next < end.Offset && empty < 3 {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("reading __consumer_offsets-%d at %d of %d: %w", part, next, end.Offset, err)
		}
		if fs.NumRecords() == 0 {
			empty++
			continue
		}
		empty = 0
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			kt := int16(-1)
			if len(r.Key) >= 2 {
				kt = int16(binary.BigEndian.Uint16(r.Key))
			}
			out = append(out, history.Record{Partition: r.Partition, Offset: r.Offset, KeyType: kt, RawKey: r.Key, RawValue: r.Value})
		})
	}
	if next < end.Offset {
		return out, fmt.Errorf("reading __consumer_offsets-%d: stopped at offset %d of %d", part, next, end.Offset)
	}
	return out, nil
}
