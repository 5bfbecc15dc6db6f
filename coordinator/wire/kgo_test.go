package wire

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// testWait bounds every wait in these tests: generous for two shared
// cores, and only a bound, never an assertion on speed.
const testWait = 60 * time.Second

func startStandIn(t *testing.T, dir string, v version.Version) *Server {
	t.Helper()
	s, err := Start(Config{DataDir: dir, Version: v, NewCoordinator: newStandIn, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

func newClient(t *testing.T, s *Server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.Addr())}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceN produces n records "0".."n-1" idempotently with acks=all (kgo's
// default is idempotent; the options say so anyway).
func produceN(ctx context.Context, t *testing.T, s *Server, topic string, n int) {
	t.Helper()
	cl := newClient(t, s, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(n), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d produces failed; first: %v", len(errs), n, errs[0])
	}
	cl.Close()
}

// consumeAll consumes until n records arrived and checks each value
// 0..n-1 came exactly once and offsets are contiguous per partition.
func consumeAll(ctx context.Context, t *testing.T, cl *kgo.Client, n int) map[int32]int64 {
	t.Helper()
	seen := make([]bool, n)
	next := map[int32]int64{}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", got, n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			v, err := strconv.Atoi(string(r.Value))
			if err != nil || v < 0 || v >= n {
				t.Fatalf("record %s/%d@%d has value %q", r.Topic, r.Partition, r.Offset, r.Value)
			}
			if seen[v] {
				t.Fatalf("value %d consumed twice (second at %s/%d@%d)", v, r.Topic, r.Partition, r.Offset)
			}
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			seen[v] = true
			next[r.Partition] = r.Offset + 1
			got++
		})
	}
	return next
}

func TestProduceConsumeCommitRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*testWait)
	defer cancel()
	dir := t.TempDir()
	const (
		topic = "events"
		n     = 10000
		group = "g1"
	)
	s := startStandIn(t, dir, version.V4_1_2)
	adm := kadm.NewClient(newClient(t, s))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	produceN(ctx, t, s, topic, n)

	direct := newClient(t, s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart(),
	}}))
	ends := consumeAll(ctx, t, direct, n)
	direct.Close()

	commit := kadm.Offsets{}
	for p, end := range ends {
		commit.Add(kadm.Offset{Topic: topic, Partition: p, At: end, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, group, commit); err != nil {
		t.Fatalf("CommitOffsets: %v", err)
	}
	checkCommitted(ctx, t, adm, group, topic, ends)

	// Restart on the same directory: records and commits come back.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = startStandIn(t, dir, version.V4_1_2)
	defer s.Close()
	adm = kadm.NewClient(newClient(t, s))
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets after restart: %v", err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != ends[o.Partition] {
			t.Errorf("after restart partition %d ends at %d (err %v), want %d", o.Partition, o.Offset, o.Err, ends[o.Partition])
		}
	})
	checkCommitted(ctx, t, adm, group, topic, ends)
	if got := s.coord.(*standIn).replayed; got != len(ends) {
		t.Errorf("stand-in replayed %d records, want %d (one commit per partition)", got, len(ends))
	}
	again := newClient(t, s, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumeAll(ctx, t, again, n)

	// Producing after the restart continues the log where it ended.
	produceN(ctx, t, s, topic, 10)
	listed, err = adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	total := int64(0)
	listed.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n+10 {
		t.Errorf("end offsets sum to %d after 10 more records, want %d", total, n+10)
	}

	// The commits are records in the group's __consumer_offsets partition,
	// fetchable like any other partition.
	part := int32(records.PartitionFor(group, 4))
	oc := newClient(t, s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		offsetsTopic: {part: kgo.NewOffset().AtStart()},
	}))
	var decoded []records.Record
	for len(decoded) < len(ends) {
		fs := oc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s-%d", len(decoded), len(ends), offsetsTopic, part)
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec, err := records.DecodeRecord(r.Key, r.Value)
			if err != nil {
				t.Fatalf("decode %s-%d@%d: %v", offsetsTopic, part, r.Offset, err)
			}
			decoded = append(decoded, rec)
		})
	}
	for _, r := range decoded {
		k := r.Key.(records.OffsetCommitKey)
		if k.Group != group || r.Value.(*records.OffsetCommitValue).Offset != ends[k.Partition] {
			t.Errorf("record %+v %+v does not match the commit", k, r.Value)
		}
	}
}

func checkCommitted(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	got, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	for p, end := range want {
		o, ok := got.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != end {
			t.Errorf("committed offset of %s/%d is %+v (found %v), want %d", topic, p, o, ok, end)
		}
	}
}

func TestTopicIDsAndErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	s := startStandIn(t, "", version.V4_4_0)
	defer s.Close()
	adm := kadm.NewClient(newClient(t, s))
	resp, err := adm.CreateTopic(ctx, 2, 1, nil, "a")
	if err != nil || resp.ID == [16]byte{} {
		t.Fatalf("CreateTopic: %+v, %v", resp, err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "a"); err == nil {
		t.Errorf("creating topic a twice succeeded")
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "b"); err == nil {
		t.Errorf("replication factor 3 on one broker succeeded")
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if d, ok := md.Topics["a"]; !ok || d.ID != resp.ID || len(d.Partitions) != 2 {
		t.Errorf("metadata of a: %+v, want id %x and 2 partitions", d, resp.ID)
	}
	if d := md.Topics[offsetsTopic]; !d.IsInternal || len(d.Partitions) != 4 {
		t.Errorf("metadata of %s: %+v, want internal with 4 partitions", offsetsTopic, d)
	}
	if _, err := adm.DeleteTopic(ctx, "a"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if _, err := adm.DeleteTopic(ctx, offsetsTopic); err == nil {
		t.Errorf("deleting %s succeeded", offsetsTopic)
	}
	// Producing to an internal topic is refused.
	cl := newClient(t, s, kgo.RecordRetries(1))
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: offsetsTopic, Value: []byte("x")}).FirstErr()
	if err == nil {
		t.Errorf("producing to %s succeeded", offsetsTopic)
	}
	coords := adm.FindGroupCoordinators(ctx, "x", "y", "z")
	coords.Each(func(c kadm.FindCoordinatorResponse) {
		if c.Err != nil || c.NodeID != 1 {
			t.Errorf("coordinator of %s: node %d, err %v", c.Name, c.NodeID, c.Err)
		}
	})
	if len(coords) != 3 {
		t.Errorf("%d coordinators found for 3 groups", len(coords))
	}
	starts, err := adm.ListStartOffsets(ctx, offsetsTopic)
	if err != nil || len(starts[offsetsTopic]) != 4 {
		t.Errorf("ListStartOffsets(%s): %v, %v", offsetsTopic, starts, err)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil || len(groups) != 0 {
		t.Errorf("ListGroups: %v, %v", groups, err)
	}
}

func TestStartRejectsChangedOffsetsPartitions(t *testing.T) {
	dir := t.TempDir()
	s := startStandIn(t, dir, version.V4_4_0)
	s.Close()
	_, err := Start(Config{DataDir: dir, OffsetsPartitions: 7, NewCoordinator: newStandIn})
	if err == nil {
		t.Fatal("Start with 7 offsets partitions on a directory made with 4 succeeded")
	}
	t.Log(err)
}

func ExampleStart() {
	s, err := Start(Config{NewCoordinator: newStandIn})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println(s.Addr() != "")
	// Output: true
}

// TestFailedAppendReloadsCoordinator: when the records of a request cannot
// be appended, the request's connection is closed, the coordinator is
// rebuilt from the log, and what was committed before is still served.
func TestFailedAppendReloadsCoordinator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	s := startStandIn(t, t.TempDir(), version.V4_4_0)
	defer s.Close()
	adm := kadm.NewClient(newClient(t, s))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "t", Partition: 0, At: 7, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "g", commit); err != nil {
		t.Fatalf("CommitOffsets: %v", err)
	}
	var before Coordinator
	s.WithCoordinator(func(c Coordinator) { before = c })

	c := dialRaw(t, s)
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.SetVersion(2)
	req.Groups = []string{"g"}
	c.send(req, 1)
	c.expectClosed()

	var after Coordinator
	s.WithCoordinator(func(c Coordinator) { after = c })
	if after == nil || after == before {
		t.Fatalf("coordinator was not rebuilt after the failed append (before %p, after %p)", before, after)
	}
	checkCommitted(ctx, t, adm, "g", "t", map[int32]int64{0: 7})
}
