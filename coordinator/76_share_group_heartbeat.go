package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
)

// shareError is an ApiException of the share-group paths: its Kafka error
// and message.
type shareError struct {
	err *kerr.Error
	msg string
	// noMessage: answered by KafkaApis's getErrorResponse, which sends
	// no ErrorMessage.
	noMessage bool
}

func (e *shareError) Error() string { return e.msg }

func shareErr(err *kerr.Error, format string, args ...any) *shareError {
	return &shareError{err: err, msg: fmt.Sprintf(format, args...)}
}

// handleShareGroupHeartbeat serves ShareGroupHeartbeat (key 76):
// GroupCoordinatorService.shareGroupHeartbeat's request checks, then
// GMM.shareGroupHeartbeat (a member leaving with epoch -1, or joining and
// heartbeating).
func (c *Coordinator) handleShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	var recs []sharegroup.GroupRecord
	var after func()
	err := validateShareHeartbeat(req)
	if err == nil {
		if req.MemberEpoch == -1 {
			recs, err = c.shareLeave(req, resp)
		} else {
			recs, after, err = c.shareHeartbeat(req, resp)
		}
	}
	if err != nil {
		out := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		out.ErrorCode = err.err.Code
		if !err.noMessage {
			msg := err.msg
			out.ErrorMessage = &msg
		}
		return out, nil
	}
	c.writeShare(recs)
	if after != nil {
		after()
	}
	return resp, nil
}

// validateShareHeartbeat is KafkaApis.handleShareGroupHeartbeat's member
// id check (isMemberIdValid: not empty, at most 36 UTF-16 code units;
// its INVALID_REQUEST goes through getErrorResponse, which drops the
// message) and then
// GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) *shareError {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case req.MemberID == "" || len(utf16.Encode([]rune(req.MemberID))) > 36:
		return &shareError{err: kerr.InvalidRequest, noMessage: true}
	case blank(req.MemberID):
		return shareErr(kerr.InvalidRequest, "MemberId can't be empty.")
	case blank(req.GroupID):
		return shareErr(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return shareErr(kerr.InvalidRequest, "RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return shareErr(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < -1:
		return shareErr(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	return nil
}

// shareGroupOf is GMM.shareGroup: the share group, or GROUP_ID_NOT_FOUND.
func (c *Coordinator) shareGroupOf(groupID string) (*shareGroup, *shareError) {
	if g := c.share[groupID]; g != nil {
		return g, nil
	}
	if c.shareOtherType(groupID) {
		return nil, shareErr(kerr.GroupIDNotFound, "Group %s is not a share group.", groupID)
	}
	return nil, shareErr(kerr.GroupIDNotFound, "Group %s not found.", groupID)
}

// shareLeave is GMM.shareGroupLeave.
func (c *Coordinator) shareLeave(req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) ([]sharegroup.GroupRecord, *shareError) {
	g, err := c.shareGroupOf(req.GroupID)
	if err != nil {
		return nil, err
	}
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	m := g.members[req.MemberID]
	if m == nil {
		return nil, shareErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
	}
	return c.shareFence(g, m), nil
}

// shareHeartbeat is GMM.shareGroupHeartbeat (the regular heartbeat). after
// runs once its records are written: the session timeout, and the
// share-partition initialization it asks for.
func (c *Coordinator) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) ([]sharegroup.GroupRecord, func(), *shareError) {
	groupID, memberID := req.GroupID, req.MemberID
	create := req.MemberEpoch == 0

	// getOrMaybeCreateShareGroup: a new group is not kept until its
	// records are replayed.
	g := c.share[groupID]
	if g == nil {
		if c.shareOtherType(groupID) {
			return nil, nil, shareErr(kerr.GroupIDNotFound, "Group %s is not a share group.", groupID)
		}
		if !create {
			return nil, nil, shareErr(kerr.GroupIDNotFound, "Share group %s not found.", groupID)
		}
		g = newShareGroup(groupID, c.profile.InitialGroupEpoch)
	}
	// throwIfShareGroupIsFull.
	if max := c.shareMaxSize(); len(g.members) >= max && (memberID == "" || g.members[memberID] == nil) {
		return nil, nil, shareErr(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", max)
	}
	// getOrMaybeSubscribeShareGroupMember.
	old := g.members[memberID]
	isNew := old == nil
	if isNew {
		if !create {
			return nil, nil, shareErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, groupID)
		}
		old = &shareMember{id: memberID, assigned: tpSet{}}
	}
	// throwIfShareGroupMemberEpochIsInvalid.
	if e := req.MemberEpoch; e != 0 {
		if e > old.epoch {
			return nil, nil, shareErr(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", e, old.epoch)
		}
		if e < old.epoch && e != old.prevEpoch {
			return nil, nil, shareErr(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", e, old.epoch, old.prevEpoch)
		}
	}

	var recs []sharegroup.GroupRecord
	// 1. The member, its subscription and the group epoch.
	updated := old.clone()
	if req.RackID != nil {
		updated.rack = cloneStr(req.RackID)
	}
	if req.SubscribedTopicNames != nil {
		updated.subscribed = slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))))
	}
	updated.clientID, updated.clientHost = c.client.ID, c.client.Host
	bump := false
	if isNew || !sameMemberMetadata(old, updated) {
		recs = append(recs, sharegroup.GroupRecord{Type: sharegroup.TypeMemberMetadata, GroupID: groupID, MemberID: memberID,
			Value: &sharegroup.MemberMetadataValue{RackID: cloneStr(updated.rack), ClientID: updated.clientID, ClientHost: updated.clientHost,
				SubscribedTopicNames: slices.Clone(updated.subscribed)}})
		bump = !slices.Equal(old.subscribed, updated.subscribed)
	}
	groupEpoch := g.epoch
	if !c.profile.ShareAssignmentInterval || g.assignEpoch >= groupEpoch {
		// 4.2 asks on every heartbeat; from 4.3 (KIP-1263's assignment
		// batching) only when no assignment is pending.
		bump = bump || c.initializedAssignmentPending(g)
	}
	subscribed := g.subscribedCounts(nil, nil)
	numMembers := len(g.members)
	if bump || g.refreshEpoch < g.epoch || g.refreshEpoch == -1 {
		subscribed = g.subscribedCounts(old, updated)
		if isNew {
			numMembers++
		}
		hash := c.shareMetadataHash(subscribed)
		if hash != g.hash {
			bump = true
		}
		if bump {
			groupEpoch++
			recs = append(recs, sharegroup.GroupRecord{Type: sharegroup.TypeGroupMetadata, GroupID: groupID,
				Value: &sharegroup.GroupMetadataValue{Epoch: groupEpoch, MetadataHash: hash}})
		}
		g.refreshEpoch = groupEpoch
	} else if isNew {
		numMembers++
	}
	_ = numMembers // the subscription type follows from the members' subscriptions (shareAssignor.assign)

	// 2. The target assignment.
	targetEpoch, target := g.assignEpoch, g.targets[memberID]
	if g.assignEpoch < groupEpoch && c.canAssignShare(g) {
		assignments, trecs := c.shareTargetAssignment(g, updated, groupEpoch)
		recs = append(recs, trecs...)
		targetEpoch, target = groupEpoch, assignments[memberID]
	}
	if target == nil {
		target = tpSet{}
	}

	// 3. Reconcile the member with the target.
	reconciled, rec := c.shareReconcile(groupID, updated, targetEpoch, target, bump)
	recs = append(recs, rec...)

	c.shareHeartbeatResponse(resp, req, old, reconciled)

	// maybeCreateInitializeShareGroupStateRequest.
	initRecs, toInit := c.shareInitialize(g, subscribed)
	recs = append(recs, initRecs...)
	after := func() {
		c.scheduleShareSession(groupID, memberID)
		if len(toInit) > 0 {
			c.scheduleShareInit(groupID, toInit)
		}
	}
	return recs, after, nil
}

// shareReconcile is GMM.maybeReconcile with ShareGroupAssignmentBuilder:
// no revocation, the member takes its target at once (filtered to the
// topics it subscribes to); a changed member is written (record 14).
func (c *Coordinator) shareReconcile(groupID string, updated *shareMember, targetEpoch int32, target tpSet, subscriptionChanged bool) (*shareMember, []sharegroup.GroupRecord) {
	if !subscriptionChanged && updated.state == 0 && updated.epoch == targetEpoch {
		return updated, nil // isReconciledTo
	}
	next := updated.clone()
	switch {
	case targetEpoch != updated.epoch:
		next.state = 0 // STABLE
		next.assigned = c.filterShareAssignment(target, updated.subscribed)
		next.prevEpoch, next.epoch = updated.epoch, targetEpoch
	case subscriptionChanged:
		next.assigned = c.filterShareAssignment(target, updated.subscribed)
	}
	if next.epoch == updated.epoch && next.prevEpoch == updated.prevEpoch && next.state == updated.state && next.assigned.equal(updated.assigned) {
		return next, nil
	}
	return next, []sharegroup.GroupRecord{{Type: sharegroup.TypeCurrentMemberAssignment, GroupID: groupID, MemberID: updated.id,
		Value: &sharegroup.CurrentMemberAssignmentValue{MemberEpoch: next.epoch, PreviousMemberEpoch: next.prevEpoch, State: next.state,
			AssignedPartitions: toTPs(next.assigned)}}}
}

// shareHeartbeatResponse fills the answer: the member, its epoch, the
// heartbeat interval, and its assignment when the request was a full one
// (a join, or SubscribedTopicNames set) or the assignment changed.
func (c *Coordinator) shareHeartbeatResponse(resp *kmsg.ShareGroupHeartbeatResponse, req *kmsg.ShareGroupHeartbeatRequest, old, reconciled *shareMember) {
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = reconciled.epoch
	resp.HeartbeatIntervalMillis = c.shareHeartbeatMs()
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || !reconciled.assigned.equal(old.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, t := range toTPs(reconciled.assigned) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = t.TopicID, t.Partitions
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
}

func sameMemberMetadata(a, b *shareMember) bool {
	return nullable(a.rack) == nullable(b.rack) && (a.rack == nil) == (b.rack == nil) && a.clientID == b.clientID && a.clientHost == b.clientHost &&
		slices.Equal(a.subscribed, b.subscribed)
}

// canAssignShare is GMM.canComputeNextTargetAssignment with the group's
// group.share.assignment.interval.ms (4.3+; 4.2 always assigns at once).
func (c *Coordinator) canAssignShare(g *shareGroup) bool {
	interval := c.shareAssignmentIntervalMs()
	return g.assignTS == 0 || interval == 0 || c.now >= g.assignTS+interval
}

// filterShareAssignment is ShareGroupAssignmentBuilder's
// filterAssignedPartitions: only topics the member subscribes to.
func (c *Coordinator) filterShareAssignment(target tpSet, subscribed []string) tpSet {
	out := tpSet{}
	for id, ps := range target {
		name, _, ok := c.topicByID(id)
		if ok && slices.Contains(subscribed, name) {
			out[id] = slices.Clone(ps)
		}
	}
	return out
}

func (c *Coordinator) topicByID(id [16]byte) (string, int, bool) {
	if c.cfg.Topics == nil {
		return "", 0, false
	}
	return c.cfg.Topics.TopicByID(id)
}

// initializedAssignmentPending is GMM.initializedAssignmentPending: some
// initialized partition of a subscribed topic is in no target assignment.
func (c *Coordinator) initializedAssignmentPending(g *shareGroup) bool {
	if len(g.members) == 0 || !g.stateMeta || len(g.initialized) == 0 {
		return false
	}
	subscribed := g.subscribedCounts(nil, nil)
	if len(subscribed) == 0 {
		return false
	}
	assigned := map[[16]byte]map[int32]bool{}
	for _, t := range g.targets {
		for id, ps := range t {
			if assigned[id] == nil {
				assigned[id] = map[int32]bool{}
			}
			for _, p := range ps {
				assigned[id][p] = true
			}
		}
	}
	for id, it := range g.initialized {
		if subscribed[it.name] == 0 {
			continue
		}
		have := assigned[id]
		if have == nil || len(have) != len(it.parts) {
			return true
		}
		for _, p := range it.parts {
			if !have[p] {
				return true
			}
		}
	}
	return false
}

// shareTargetAssignment is GMM.maybeUpdateTargetAssignment for a share
// group (TargetAssignmentBuilder.ShareTargetAssignmentBuilder with the
// SimpleAssignor): the new target of every member, with the records of
// those whose target changed and the assignment epoch.
func (c *Coordinator) shareTargetAssignment(g *shareGroup, updated *shareMember, epoch int32) (map[string]tpSet, []sharegroup.GroupRecord) {
	members := map[string]*shareMember{}
	for id, m := range g.members {
		members[id] = m
	}
	members[updated.id] = updated
	joined := slices.Clone(g.joined)
	if !slices.Contains(joined, updated.id) {
		joined = append(joined, updated.id)
	}
	a := &shareAssignor{
		memberIDs:  assignorMemberOrder(joined),
		subscribed: map[string][][16]byte{},
		partitions: map[[16]byte]int{},
		assignable: map[[16]byte][]int32{},
		old:        map[string]tpSet{},
	}
	for id, m := range members {
		var ids [][16]byte
		for _, name := range m.subscribed {
			if c.cfg.Topics == nil {
				continue
			}
			if tid, n, ok := c.cfg.Topics.TopicByName(name); ok {
				ids = append(ids, tid)
				a.partitions[tid] = n
			}
		}
		a.subscribed[id] = ids
		a.old[id] = g.targets[id]
	}
	for id, it := range g.initialized {
		a.assignable[id] = it.parts
	}
	out := a.assign()
	var recs []sharegroup.GroupRecord
	for _, id := range slices.Sorted(maps.Keys(members)) {
		nt := out[id]
		if nt == nil {
			nt = tpSet{}
			out[id] = nt
		}
		if prev, ok := g.targets[id]; !ok || !prev.equal(nt) {
			recs = append(recs, sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMember, GroupID: g.id, MemberID: id,
				Value: &sharegroup.TargetAssignmentMemberValue{TopicPartitions: toTPs(nt)}})
		}
	}
	var ts int64
	if c.profile.ShareAssignmentInterval {
		ts = c.now
	}
	recs = append(recs, sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMetadata, GroupID: g.id,
		Value: &sharegroup.TargetAssignmentMetadataValue{AssignmentEpoch: epoch, AssignmentTimestamp: ts}})
	return out, recs
}

// assignorMemberOrder is GroupSpec.memberIds(): a HashMap of the member
// ids.
func assignorMemberOrder(joined []string) []string { return assignor.JavaHashMapOrder(joined) }

// shareInitialize is GMM.maybeCreateInitializeShareGroupStateRequest with
// subscribedTopicsChangeMap and addInitializingTopicsRecords: the
// subscribed partitions neither initialized nor initializing (or
// initializing for longer than group.share.initialize.retry.interval.ms)
// are written as initializing, and returned to be initialized.
func (c *Coordinator) shareInitialize(g *shareGroup, subscribed map[string]int) ([]sharegroup.GroupRecord, map[[16]byte]initTopic) {
	if len(subscribed) == 0 || c.cfg.Topics == nil {
		return nil, nil
	}
	known := map[[16]byte]map[int32]bool{}
	note := func(id [16]byte, ps []int32) {
		if known[id] == nil {
			known[id] = map[int32]bool{}
		}
		for _, p := range ps {
			known[id][p] = true
		}
	}
	for id, t := range g.initialized {
		note(id, t.parts)
	}
	for id, t := range g.initializing {
		if c.now-t.ts < c.shareInitRetryMs() {
			note(id, t.parts)
		}
	}
	change := map[[16]byte]initTopic{}
	for name := range subscribed {
		id, n, ok := c.cfg.Topics.TopicByName(name)
		if !ok {
			continue
		}
		have := known[id]
		if len(have) > 0 && len(have) >= n {
			continue
		}
		var parts []int32
		for p := range int32(n) {
			if !have[p] {
				parts = append(parts, p)
			}
		}
		change[id] = initTopic{name: name, parts: parts, ts: c.now}
	}
	if len(change) == 0 {
		return nil, nil
	}
	initializing := change
	initialized := g.initialized
	deleting := g.deleting
	if g.stateMeta {
		initializing = combineInit(g.initializing, change)
		deleting = map[[16]byte]string{}
		for id, name := range g.deleting {
			if _, ok := initializing[id]; !ok {
				deleting[id] = name
			}
		}
	} else {
		initialized, deleting = map[[16]byte]initTopic{}, map[[16]byte]string{}
	}
	rec := sharegroup.GroupRecord{Type: sharegroup.TypeStatePartitionMetadata, GroupID: g.id,
		Value: statePartitionValue(initializing, initialized, deleting)}
	return []sharegroup.GroupRecord{rec}, change
}

// combineInit is GMM.combineInitMaps: the union of both, by topic.
func combineInit(a, b map[[16]byte]initTopic) map[[16]byte]initTopic {
	out := map[[16]byte]initTopic{}
	for id, t := range a {
		out[id] = initTopic{name: t.name, parts: slices.Clone(t.parts), ts: t.ts}
	}
	for id, t := range b {
		cur := out[id]
		cur.name = t.name
		cur.parts = slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(append(cur.parts, t.parts...))))))
		cur.ts = t.ts
		out[id] = cur
	}
	return out
}

func statePartitionValue(initializing, initialized map[[16]byte]initTopic, deleting map[[16]byte]string) *sharegroup.StatePartitionMetadataValue {
	infos := func(m map[[16]byte]initTopic) []sharegroup.TopicInfo {
		out := []sharegroup.TopicInfo{}
		for _, id := range javaUUIDOrder(tpSetOfInit(m)) {
			out = append(out, sharegroup.TopicInfo{TopicID: id, TopicName: m[id].name, Partitions: slices.Clone(m[id].parts)})
		}
		return out
	}
	v := &sharegroup.StatePartitionMetadataValue{InitializingTopics: infos(initializing), InitializedTopics: infos(initialized), DeletingTopics: []sharegroup.TopicInfo{}}
	ids := map[[16]byte]bool{}
	for id := range deleting {
		ids[id] = true
	}
	for _, id := range javaUUIDOrder(tpSetOf(ids)) {
		v.DeletingTopics = append(v.DeletingTopics, sharegroup.TopicInfo{TopicID: id, TopicName: deleting[id]})
	}
	return v
}

func tpSetOfInit(m map[[16]byte]initTopic) tpSet {
	out := tpSet{}
	for id := range m {
		out[id] = nil
	}
	return out
}

// scheduleShareInit runs the share-partition initialization the heartbeat
// asked for on a timer of delay 0 (GroupCoordinatorService adds a
// TimerTask(0L) that calls persisterInitialize); its success is
// GMM.initializeShareGroupState.
func (c *Coordinator) scheduleShareInit(groupID string, change map[[16]byte]initTopic) {
	c.shareInitSeq++
	c.timers.schedule(shareInitKey(groupID, c.shareInitSeq), c.now, func() {
		g := c.share[groupID]
		if g == nil {
			return
		}
		var initializing, initialized map[[16]byte]initTopic
		deleting := map[[16]byte]string{}
		if !g.stateMeta {
			initializing, initialized = map[[16]byte]initTopic{}, change
		} else {
			initialized = combineInit(g.initialized, change)
			initializing = map[[16]byte]initTopic{}
			for id, t := range g.initializing {
				rest := slices.DeleteFunc(slices.Clone(t.parts), func(p int32) bool {
					ch, ok := change[id]
					return ok && slices.Contains(ch.parts, p)
				})
				if len(rest) > 0 {
					initializing[id] = initTopic{name: t.name, parts: rest, ts: t.ts}
				}
			}
			maps.Copy(deleting, g.deleting)
		}
		c.writeShare([]sharegroup.GroupRecord{{Type: sharegroup.TypeStatePartitionMetadata, GroupID: groupID,
			Value: statePartitionValue(initializing, initialized, deleting)}})
	})
}
