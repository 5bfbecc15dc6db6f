package conformance

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/share"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

// shareVersions are the releases the share-member test runs on: of the
// tested releases (GROUPQUAKE_KAFKA_VERSIONS, the pinned pair by
// default), those with production-ready share groups: CI's pinned pair gives
// the default; the weekly versions workflow, which tests one release at a
// time, covers every other, the oldest with share groups among them.
func shareVersions() []version.Version {
	var out []version.Version
	for _, s := range clustertest.Versions() {
		v, err := version.Parse(s)
		if err != nil {
			continue
		}
		for _, sv := range version.ShareServed() {
			if sv == v {
				out = append(out, v)
			}
		}
	}
	return out
}

// shareLedger keeps, from the members' events, what every record went
// through: acquisitions (member, delivery count) and accepts the broker
// answered without an error.
type shareLedger struct {
	mu       sync.Mutex
	acquired map[string][]string // "t-p@o" → "member/count" per acquisition
	accepted map[string]int
	refused  []string
	locks    map[int32]int // AcquisitionLockTimeoutMs of the answers that acquired records
}

func (l *shareLedger) hooks(member string) clients.Hooks {
	return clients.HookFunc(func(e clients.Event) {
		if e.Share == nil || e.Kind == clients.Sent || e.Err != "" {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(e.Share.Acquired) > 0 {
			l.locks[e.Share.LockTimeoutMs]++
		}
		for _, a := range e.Share.Acquired {
			for o := a.First; o <= a.Last; o++ {
				k := fmt.Sprintf("%s-%d@%d", a.Topic, a.Partition, o)
				l.acquired[k] = append(l.acquired[k], fmt.Sprintf("%s/%d", member, a.DeliveryCount))
			}
		}
		for _, a := range e.Share.Acks {
			if err := e.Share.AckErrs[a.Topic][a.Partition]; err != "" {
				l.refused = append(l.refused, fmt.Sprintf("%s %s %s-%d %d-%d: %s", member, clients.AckName(a.Type), a.Topic, a.Partition, a.First, a.Last, err))
				continue
			}
			if a.Type != clients.AckAccept {
				continue
			}
			for o := a.First; o <= a.Last; o++ {
				l.accepted[fmt.Sprintf("%s-%d@%d", a.Topic, a.Partition, o)]++
			}
		}
	})
}

// TestShareMembersAcceptEverything: on a 1-node cluster of the default
// release and of the oldest with production-ready share groups, three of
// groupquake's share members share a topic of two partitions; every
// record produced before they join (the group starts from the earliest
// offset) is acquired once, at delivery count 1, and accepted once, with
// no acknowledgement refused, every lock the cluster's
// group.share.record.lock.duration.ms, and more than one member gets
// records.
func TestShareMembersAcceptEverything(t *testing.T) {
	vs := shareVersions()
	if len(vs) == 0 {
		t.Skipf("none of the tested releases (%v) has production-ready share groups (%v)", clustertest.Versions(), version.ShareServed())
	}
	for _, v := range vs {
		t.Run(v.String(), func(t *testing.T) {
			c := sharedCluster(t, v.String())
			const topic, group, n = "share-t", "share-g", 300
			clustertest.CreateTopic(t, c, topic, 2)
			links, err := testLinks(t, c, "producer")
			if err != nil {
				t.Fatal(err)
			}
			pr, err := kgo.NewClient(append(links.KgoOpts(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))...)
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := share.StartFromEarliest(ctx, pr, group); err != nil {
				t.Fatal(err)
			}
			produced := map[string]bool{}
			for i := range n {
				r := &kgo.Record{Value: []byte(fmt.Sprintf("seq=%d", i)), Partition: int32(i % 2)}
				res := pr.ProduceSync(ctx, r)
				if err := res.FirstErr(); err != nil {
					t.Fatal(err)
				}
				got := res[0].Record
				produced[fmt.Sprintf("%s-%d@%d", got.Topic, got.Partition, got.Offset)] = true
			}

			led := &shareLedger{acquired: map[string][]string{}, accepted: map[string]int{}, locks: map[int32]int{}}
			var wg sync.WaitGroup
			pollCtx, stop := context.WithCancel(ctx)
			for i := range 3 {
				name := fmt.Sprintf("s%d", i+1)
				l, err := testLinks(t, c, name)
				if err != nil {
					t.Fatal(err)
				}
				m, err := share.New(name, group, share.KgoOpts(l.KgoOpts()...), share.Topics(topic),
					share.WithHooks(led.hooks(name)), share.MaxRecords(20), share.Renew(v.Profile().ShareFetchV2))
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Start(ctx); err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for pollCtx.Err() == nil {
						m.Poll(pollCtx)
					}
					cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer ccancel()
					m.Close(cctx)
				}()
			}
			done := func() bool {
				led.mu.Lock()
				defer led.mu.Unlock()
				for k := range produced {
					if led.accepted[k] == 0 {
						return false
					}
				}
				return true
			}
			for !done() && ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond)
			}
			stop()
			wg.Wait()

			led.mu.Lock()
			defer led.mu.Unlock()
			var missing []string
			members := map[string]bool{}
			for k := range produced {
				if led.accepted[k] != 1 {
					missing = append(missing, fmt.Sprintf("%s accepted %d times", k, led.accepted[k]))
				}
				acq := led.acquired[k]
				if len(acq) != 1 || acq[0][len(acq[0])-2:] != "/1" {
					missing = append(missing, fmt.Sprintf("%s acquired as %v, want once at delivery count 1", k, acq))
				}
				for _, a := range acq {
					members[a[:2]] = true
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("%d of %d records not accepted exactly once: %v", len(missing), n, missing[:min(len(missing), 20)])
			}
			if len(led.refused) > 0 {
				t.Errorf("acknowledgements refused in a run without faults: %v", led.refused)
			}
			if len(led.locks) != 1 || led.locks[cluster.FastShareRecordLockMs] == 0 {
				t.Errorf("acquisition locks %v ms, want the cluster's %d ms only", led.locks, cluster.FastShareRecordLockMs)
			}
			if len(members) < 2 {
				t.Errorf("records went to %v only: want the members to share the partitions", members)
			}
			t.Logf("%d records accepted, acquired by members %v", n, members)
		})
	}
}
