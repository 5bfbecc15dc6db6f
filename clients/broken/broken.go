// Package broken wraps a real groupquake member (clients/classic,
// clients/consumer) at the clients.Member/Hooks boundary and gives it one
// deliberate bug, so that suites/bite can prove the checker that names the
// bug catches it on a real cluster. Everything a wrapped member does
// happens: the records it consumes were really fetched from Kafka (through
// the member's own links, so link faults reach them), the commits it sends
// really reach the coordinator, and it reports them through the same Hooks.
// Only what it does with that is wrong.
//
// Bugs that can only live inside a member's state machine (acknowledging
// before revoking, skipping the commit before revoking) are options of the
// member itself: consumer.WithBug.
package broken

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/groupquake/groupquake/clients"
)

// Bug is the one defect a wrapped member carries.
type Bug string

const (
	// FetchAfterRevoke keeps fetching and handing out the records of a
	// partition after the member reported revoking it, until the partition
	// is assigned to it again: ConsumedOnlyOwned catches it.
	FetchAfterRevoke Bug = "fetch-after-revoke"
	// IgnoreFence carries on when the coordinator has fenced the member
	// (its session expired, a heartbeat or commit answered
	// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION): it does not give up the
	// partitions it held (it reports no "fenced", "session-expired" or
	// "lost") and keeps fetching and handing out their records with its
	// own client until the member is assigned them again. Meanwhile the
	// group has given them to others: NoDoubleOwnership catches it (an
	// overlap is excused only where one side was fenced and acted on it).
	IgnoreFence Bug = "ignore-fence"
	// StaleCommit commits with the first generation (classic) or member
	// epoch (consumer) the member was given, whatever it holds now, and
	// reports every answer as success: after the first rebalance the
	// coordinator rejects each of its commits (ILLEGAL_GENERATION,
	// STALE_MEMBER_EPOCH) while the member says they were acknowledged, so
	// the committed offsets the group ends with are not the ones it
	// acknowledged: DurableCommits catches it.
	StaleCommit Bug = "stale-commit"
)

// Bugs lists the bugs this package gives members.
func Bugs() []Bug { return []Bug{FetchAfterRevoke, IgnoreFence, StaleCommit} }

// Config is what Wrap needs besides the member.
type Config struct {
	Name  string
	Group string
	// KgoOpts are the member's own (its links): the wrapper's fetches and
	// commits go through them too.
	KgoOpts []kgo.Opt
	// Hooks receive the member's events, and the wrapper's.
	Hooks clients.Hooks
}

// Wrap builds a member with bug: build makes the real member, reporting to
// the hooks it is given (the wrapper's, which forward to cfg.Hooks).
func Wrap(bug Bug, cfg Config, build func(clients.Hooks) (clients.Member, error)) (clients.Member, error) {
	if !slices.Contains(Bugs(), bug) {
		return nil, fmt.Errorf("broken member %s: unknown bug %q (known: %v)", cfg.Name, bug, Bugs())
	}
	if cfg.Hooks == nil {
		cfg.Hooks = clients.HookFunc(func(clients.Event) {})
	}
	w := &member{bug: bug, cfg: cfg, next: map[string]map[int32]int64{}, zombie: clients.Partitions{}, firstEpoch: -1, epoch: -1}
	cl, err := newClient(cfg, bug)
	if err != nil {
		return nil, err
	}
	w.cl = cl
	inner, err := build(clients.HookFunc(w.onEvent))
	if err != nil {
		cl.Close()
		return nil, err
	}
	w.inner = inner
	return w, nil
}

// newClient is the wrapper's own client: a direct consumer with nothing to
// consume yet, over the member's links. OffsetCommit by topic name: capped
// at v9, as clients/classic does (v10 names topics by id, Kafka 4.2+).
func newClient(cfg Config, bug Bug) (*kgo.Client, error) {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	opts := append(slices.Clone(cfg.KgoOpts),
		kgo.ClientID("groupquake-"+cfg.Name+"-"+string(bug)),
		kgo.MaxVersions(vs),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("broken member %s: kgo client: %w", cfg.Name, err)
	}
	return cl, nil
}

type member struct {
	bug   Bug
	cfg   Config
	inner clients.Member
	cl    *kgo.Client // the wrapper's own fetches and commits

	mu sync.Mutex
	// next is the next offset per partition after the last record handed
	// out, where a zombie fetch resumes.
	next map[string]map[int32]int64
	// zombie are the partitions the wrapper fetches although the member
	// gave them up.
	zombie clients.Partitions
	// firstEpoch is the first generation/member epoch the member was
	// given (StaleCommit); epoch the latest; memberID the latest id.
	firstEpoch, epoch int32
	memberID          string
	// calls numbers the wrapper's own requests, from wrapperCalls up, so
	// they never share a number with the member's.
	calls atomic.Uint64
}

// wrapperCalls is where the wrapper's call numbers start: far above any
// number the wrapped member reaches.
const wrapperCalls = 1 << 62

var _ clients.Member = (*member)(nil)

func (w *member) Name() string                    { return w.inner.Name() }
func (w *member) Protocol() clients.Protocol      { return w.inner.Protocol() }
func (w *member) Start(ctx context.Context) error { return w.inner.Start(ctx) }
func (w *member) Owned() clients.Partitions       { return w.inner.Owned() }
func (w *member) epochOf(e clients.Event) int32 {
	return pick(e.Protocol == clients.Consumer, e.MemberEpoch, e.Generation)
}
func pick(c bool, a, b int32) int32 {
	if c {
		return a
	}
	return b
}

// onEvent forwards the member's event first (so "revoked" is in the
// history before any record fetched after it), except the fence events
// IgnoreFence ignores, then acts on it. It runs on the
// member's goroutines, for clients/classic under the member's lock: it
// never calls back into the member.
func (w *member) onEvent(e clients.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ignored := w.bug == IgnoreFence && (e.Kind == clients.Lost || e.Kind == clients.Fenced || e.Kind == clients.SessionExpired)
	if !ignored {
		w.cfg.Hooks.OnEvent(e)
	}
	if e.Err == "" && e.MemberID != "" {
		w.memberID = e.MemberID
	}
	if ep := w.epochOf(e); ep > 0 && e.Err == "" && e.Kind != clients.Lost {
		w.epoch = ep
		if w.firstEpoch < 0 && (e.Kind == clients.Synced || e.Kind == clients.Assigned || (e.Protocol == clients.Consumer && e.Kind == clients.Joined)) {
			w.firstEpoch = ep
		}
	}
	switch {
	case e.Kind == clients.Assigned:
		w.stopZombie(e.Partitions)
	case e.Kind == clients.Revoked && w.bug == FetchAfterRevoke,
		e.Kind == clients.Lost && w.bug == IgnoreFence:
		w.startZombie(e.Partitions)
	}
}

// startZombie goes on fetching ps from where the member left them (from
// the end of the log when it handed nothing of one out). mu is held.
func (w *member) startZombie(ps clients.Partitions) {
	add := map[string]map[int32]kgo.Offset{}
	for t, parts := range ps {
		for _, p := range parts {
			if slices.Contains(w.zombie[t], p) {
				continue
			}
			w.zombie[t] = append(w.zombie[t], p)
			if add[t] == nil {
				add[t] = map[int32]kgo.Offset{}
			}
			if n, ok := w.next[t][p]; ok {
				add[t][p] = kgo.NewOffset().At(n)
			} else {
				add[t][p] = kgo.NewOffset().AtEnd()
			}
		}
	}
	if len(add) > 0 {
		w.cl.AddConsumePartitions(add)
	}
}

// stopZombie stops fetching ps: the member owns them again. mu is held.
func (w *member) stopZombie(ps clients.Partitions) {
	rm := map[string][]int32{}
	for t, parts := range ps {
		for _, p := range parts {
			if slices.Contains(w.zombie[t], p) {
				rm[t] = append(rm[t], p)
				w.zombie[t] = slices.DeleteFunc(w.zombie[t], func(x int32) bool { return x == p })
			}
		}
	}
	if len(rm) > 0 {
		w.cl.RemoveConsumePartitions(rm)
	}
}

// Poll returns the member's records and, with a fetching bug, the records
// the wrapper fetched of partitions the member gave up.
func (w *member) Poll(ctx context.Context) ([]clients.Record, error) {
	recs, err := w.inner.Poll(ctx)
	w.mu.Lock()
	zombies := w.zombie.Count() > 0
	w.mu.Unlock()
	if zombies && ctx.Err() == nil {
		zctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond) // what is buffered, or a fetch in flight
		fs := w.cl.PollFetches(zctx)
		cancel()
		w.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if !slices.Contains(w.zombie[r.Topic], r.Partition) {
				return
			}
			if n, ok := w.next[r.Topic][r.Partition]; ok && r.Offset < n {
				return
			}
			recs = append(recs, clients.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
				Generation: pick(w.inner.Protocol() == clients.Classic, w.epoch, -1), MemberEpoch: pick(w.inner.Protocol() == clients.Consumer, w.epoch, -1)})
			w.setNext(r.Topic, r.Partition, r.Offset+1)
		})
		w.mu.Unlock()
	}
	w.mu.Lock()
	for _, r := range recs {
		w.setNext(r.Topic, r.Partition, r.Offset+1)
	}
	w.mu.Unlock()
	return recs, err
}

func (w *member) setNext(t string, p int32, n int64) {
	if w.next[t] == nil {
		w.next[t] = map[int32]int64{}
	}
	if n > w.next[t][p] {
		w.next[t][p] = n
	}
}

// Commit commits through the member, or with StaleCommit sends the commit
// itself with the first epoch and reports it acknowledged whatever the
// coordinator answered.
func (w *member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	if w.bug != StaleCommit {
		return w.inner.Commit(ctx, offsets)
	}
	w.mu.Lock()
	epoch, id := w.firstEpoch, w.memberID
	w.mu.Unlock()
	if epoch < 0 || id == "" {
		return w.inner.Commit(ctx, offsets) // not in a generation yet: nothing stale to send
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = w.cfg.Group
	req.Generation = epoch
	req.MemberID = id
	for _, t := range slices.Sorted(maps.Keys(offsets)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = t
		for _, p := range slices.Sorted(maps.Keys(offsets[t])) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, offsets[t][p], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	// The request is a call like the member's own (clients' contract):
	// Sent before it leaves, then its answer with the same number, so the
	// history holds it as an acknowledged commit on the application's
	// process, which is what the bug claims it is.
	ev := clients.Event{Kind: clients.Sent, Op: clients.OpCommit, App: true, Call: wrapperCalls + w.calls.Add(1),
		Protocol: w.inner.Protocol(), Member: w.cfg.Name, MemberID: id, GroupEpoch: -1, Offsets: offsets,
		Why: fmt.Sprintf("deliberate bug %s: OffsetCommit with the first epoch/generation %d the member was given", w.bug, epoch), At: time.Now()}
	ev.Generation, ev.MemberEpoch = w.inner.Protocol().Epochs(epoch)
	w.onEvent(ev)
	resp, err := req.RequestWith(ctx, w.cl)
	ev.At = time.Now()
	if err != nil {
		ev.Kind, ev.Err, ev.Why = clients.CommitFailed, err.Error(), "OffsetCommit got no answer"
		w.onEvent(ev)
		return nil, err
	}
	ev.Kind = clients.Committed
	var ignored []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if ke := kerr.ErrorForCode(rp.ErrorCode); ke != nil {
				ignored = append(ignored, fmt.Sprintf("%s[%d] %s", rt.Topic, rp.Partition, kerrName(ke)))
			}
		}
	}
	ev.Why = fmt.Sprintf("OffsetCommit with epoch/generation %d answered", epoch)
	if len(ignored) > 0 {
		ev.Why += fmt.Sprintf(" (deliberate bug %s: taken as success despite %v)", w.bug, ignored)
	}
	w.onEvent(ev)
	return nil, nil
}

func kerrName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

// Close closes the member, then the wrapper's client.
func (w *member) Close(ctx context.Context) error {
	err := w.inner.Close(ctx)
	w.cl.Close()
	return err
}
